/* SPDX-License-Identifier: MIT */
/*
 * What the verbs links of a group share (verbs_group.c): the completion
 * queue and its channel, the shared receive queue (SRQ) with its buffers,
 * the staging pool, the stream QPs by QP number, the device's async
 * events.  Private to transport/verbs/.
 */
#ifndef OXR_VERBS_GROUP_H
#define OXR_VERBS_GROUP_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "verbs_link.h"

#define SQ_EXTRA 16 /* a stream QP's SQ entries beyond its credits: controls, READs */
/* Receive WRs go back to the SRQ RECV_BATCH at a time (one provider call,
 * one lock, not one per message). */
#define RECV_BATCH 8

struct vgroup {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int cqe;           /* entries the CQ has */
	int nqp, per_qp;   /* QPs on it; WRs one of them may complete at most */
	unsigned unacked;  /* CQ events taken, not yet acknowledged */
	/* Links whose handshake has not attached them yet.  Each side attaches
	 * once it has the peer's ready, so the side that gets it first writes
	 * while the other's link is still OPENING; those completions are
	 * held for the link (hold_wc), not dropped as a gone QP's. */
	struct vlink *pending;
	/* the stream QPs by QP number (open addressing, 0 = empty): a
	 * receive from the SRQ names no link */
	uint32_t *qk;
	void **qv;
	uint32_t qcap, qn;
	/* the shared receive queue: nbufs buffers of a slot each */
	struct ibv_srq *srq;
	uint8_t *srq_buf;
	struct ibv_mr *srq_mr;
	uint32_t nbufs, repost[RECV_BATCH], nrepost;
	/* the shared staging pool: a stack of free slots */
	uint8_t *st_buf;
	struct ibv_mr *st_mr;
	uint32_t nstage, *st_free, st_nfree;
	int st_starved, st_wake;
	uint32_t rings, other_rings; /* links with a receive ring (of them, not partners) */
};

static inline struct vgroup *vgr(oxr_group *g) { return g->pgroup; }

/* A stream QP's send queue: the peer picks ring or SRQ for what it
 * receives, so room for the larger of their credits, and SQ_EXTRA. */
static inline uint32_t oxr_vstream_sq_depth(const struct oxr_vctx *x)
{
	return (x->slots > x->srq_credits ? x->slots : x->srq_credits) + SQ_EXTRA;
}
static inline struct oxr_vdev *dev(oxr_group *g) { return &oxr_vctx(g)->dev; }

/* The group's shared state, made with its first QP. */
oxr_status_t oxr_vgroup_get(oxr_group *g, struct vgroup **out);
/* An RC QP on the group's CQ (grown for it), its receives from the SRQ
 * (srq) or from a queue of recv_wr of its own. */
oxr_status_t oxr_vqp_create_on(oxr_group *g, uint32_t send_wr, uint32_t recv_wr, int srq,
			       int access, struct ibv_qp **out, uint32_t *max_inline);

/* Stream QP number -> its struct vlink. */
void *oxr_vqtab_find(const struct vgroup *vg, uint32_t qpn);
int oxr_vqtab_add(struct vgroup *vg, uint32_t qpn, void *v); /* -1: out of memory */
void oxr_vqtab_del(struct vgroup *vg, uint32_t qpn);

/* SRQ buffer b (slot bytes each), and b back to the SRQ. */
uint8_t *oxr_vsrq_at(const struct vgroup *vg, uint32_t b, uint32_t slot);
void oxr_vsrq_give(oxr_group *g, uint32_t b);
/* A free staging slot (-1: none; the slot's return wakes the waiting
 * links), one back, and where it is. */
int oxr_vstage_get(struct vgroup *vg);
void oxr_vstage_put(struct vgroup *vg, uint32_t i);
uint8_t *oxr_vstage_at(oxr_group *g, uint32_t i);
/* After a poll: a staging slot came free while links waited for one. */
void oxr_vgroup_wake_starved(oxr_group *g);

/* Registered memory on the device's NUMA node; a failed one leaves both NULL. */
oxr_status_t oxr_vpool_make(oxr_group *g, size_t len, int access, uint8_t **buf,
			    struct ibv_mr **mr, const char *what);
void oxr_vpool_free(oxr_group *g, size_t len, uint8_t *buf, struct ibv_mr *mr);

/* verbs_link.c: v's link once attached (NULL before, or gone). */
struct link *oxr_vlink_owner(oxr_group *g, struct vlink *v);

#endif
