/* SPDX-License-Identifier: MIT */
/*
 * The verbs half of a link: an RC queue pair, a receive ring the peer writes
 * into, credits, and one-sided writes into the peer's windows.  The link's
 * TCP socket stays open beside it, quiet, so a dead peer shows up as EOF at
 * once; every byte of the OX stream goes over the QP.
 */
#ifndef OXR_VERBS_LINK_H
#define OXR_VERBS_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "provider.h"
#include "verbs_dev.h"

struct vlink;
struct vwqp;
struct ibv_qp;
struct ibv_wc;

/* The verbs provider's context: the device and the knobs of its links. */
struct oxr_vctx {
	struct oxr_vdev dev;
	struct oxr_rcache *rcache; /* registrations of receive memory (verbs_rcache.h) */
	uint32_t slots, slot_bytes; /* a ring's geometry; slot_bytes: every buffer's */
	uint32_t rings;             /* links of a group with a receive ring of their own */
	uint32_t srq_bufs, srq_credits; /* the shared receive queue of the others */
	uint32_t stage_slots;       /* the group's shared send staging */
	int timeout, retry;         /* QP local ACK timeout exponent and retry count */
	size_t rndv;                /* stream pieces this big go by rendezvous (0: never) */
	int cm;                     /* OXR_VERBS_CM=rdmacm: QPs connected by librdmacm */
	int required;               /* OXR_TRANSPORT=verbs: no silent fall back to tcp */
};

static inline struct oxr_vctx *oxr_vctx(const oxr_group *g)
{
	return g->ctx->pctx;
}

extern const struct oxr_link_ops oxr_verbs_link_ops;

/* The verbs half of link l (NULL: another provider carries it: in a group
 * that mixes providers, a shm link's half is the shm provider's). */
static inline struct vlink *vl(const struct link *l)
{
	return oxr_link_ops_of(l) == &oxr_verbs_link_ops ? oxr_link_priv(l) : NULL;
}

/* The epoll keys of the group's completion channel and of the device's
 * async events. */
#define EPOLL_CQ (OXR_EPOLL_PROVIDER + 0)
#define EPOLL_ASYNC (OXR_EPOLL_PROVIDER + 1)

/* Every QP of the group goes through here: the CQ's count of what may
 * complete on it shrinks. */
void oxr_vqp_destroy(oxr_group *g, struct ibv_qp *qp);

/* The wire size of an offer (what a side tells its peer about its QP). */
#define OXR_VOFFER_BYTES 64

/* What a work request is, in the low byte of its wr_id; the peer's rank in
 * the 32 bits above; a signaled stream WR's count of the WRs it releases
 * (verbs_link.c) in the 16 above those. */
enum wr_kind { WR_DATA = 1, WR_RECV = 4, WR_CTL = 5, WR_READ = 6, WR_WIN = 7, WR_WINRECV = 8 };
#define WR_ID(peer, kind) ((uint64_t)(uint32_t)(peer) << 8 | (kind))
#define WR_KIND(id) ((int)((id)&0xff))
#define WR_PEER(id) ((int)(uint32_t)((id) >> 8))
#define WR_COVERS(id) ((uint32_t)((id) >> 40) & 0xffffu)

/* Where a peer's QPs are: from its offer. */
struct oxr_vpeer {
	uint32_t lid, mtu;
	uint8_t gid[16];
};

/* Creates the QP (INIT) and the ring, posts the receives, writes the offer. */
oxr_status_t oxr_vlink_create(oxr_group *g, int peer, struct vlink **out,
			      uint8_t offer[OXR_VOFFER_BYTES]);
/* Moves the QP to RTS with the peer's offer (checked: it came from the network). */
oxr_status_t oxr_vlink_connect(oxr_group *g, struct vlink *v, const uint8_t offer[OXR_VOFFER_BYTES]);
/* Checks the peer's offer (it came from the network) and takes its ring;
 * leaves the QP alone (oxr_vlink_connect_cm moves it). */
oxr_status_t oxr_vlink_take_offer(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES]);
struct ibv_qp *oxr_vlink_qp(struct vlink *v);
/* An RC QP on the group's CQ, moved to INIT with the given remote access;
 * then to RTS towards the peer's QP qpn (its first PSN psn, ours my_psn). */
oxr_status_t oxr_vqp_create(oxr_group *g, uint32_t send_wr, uint32_t recv_wr, int access,
			    struct ibv_qp **out, uint32_t *max_inline);
oxr_status_t oxr_vqp_connect(oxr_group *g, struct ibv_qp *qp, int peer, const struct oxr_vpeer *pa,
			     uint32_t qpn, uint32_t psn, uint32_t my_psn);
uint32_t oxr_vpsn(void); /* a random first PSN */
/* The link's window QP slot, and where the peer is (verbs_wqp.c uses them). */
struct vwqp **oxr_vlink_wslot(struct vlink *v);
const struct oxr_vpeer *oxr_vlink_peer(const struct vlink *v);
/* The link's peer has a new rank (a shrink renumbered the group). */
void oxr_vlink_renumber(struct vlink *v, int peer);
/* verbs_cm.c: the same, with the QP connected by librdmacm on IP addresses
 * instead of by the offer's QPN/GID (OXR_VERBS_CM=rdmacm).  The acceptor of
 * the TCP link listens and tells the connector where, over fd. */
oxr_status_t oxr_vlink_connect_cm(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES], int acceptor, int fd,
				  const char *addr, int64_t deadline_ms);

/* Waits (bounded) until the writes posted on l have completed (an isend
 * followed by exit must not lose its bytes). */
void oxr_vlink_drain(oxr_group *g, struct link *l, int timeout_ms);
void oxr_vlink_destroy(oxr_group *g, struct vlink *v);
/* l is attached: the completions its QP had before are taken now. */
void oxr_vlink_attached(oxr_group *g, struct link *l);

/* The OX stream, with recv(2)/sendmsg(2) conventions: -1 with errno EAGAIN
 * when nothing can move now. */
/* arena: buf is arena memory (the decoder's place for a payload), which a
 * rendezvous may READ into directly through the registration cache. */
ssize_t oxr_vlink_recv(oxr_group *g, struct link *l, void *buf, size_t n, int arena);
ssize_t oxr_vlink_sendv(oxr_group *g, struct link *l, const struct iovec *iov, int niov);
/* 1: l receives through the group's SRQ, 0: through a ring of its own. */
int oxr_vlink_rx_shared(const struct link *l);
/* Bytes received and not yet read (the engine must read them). */
int oxr_vlink_buffered(const struct vlink *v);

/* The window memory a peer may write: registered with remote write. */
struct oxr_prov_mr;
oxr_status_t oxr_vmr_reg(oxr_group *g, void *base, size_t len, int remote_write,
			 struct oxr_prov_mr **out, uint64_t *addr, uint32_t *rkey);
/* A revoke: the registration goes at once, so its rkey is dead at the HCA
 * (the reset registers anew); the handle stays. */
void oxr_vmr_revoke(struct oxr_prov_mr *m);
void oxr_vmr_dereg(struct oxr_prov_mr *m);

/* verbs_wqp.c: one-sided writes go on a window QP of the link's own, one
 * per epoch.  oxr_vlink_write writes src[0..len) to raddr/rkey on the peer
 * of l and returns once the peer's HCA has it (so whatever l sends after it
 * comes later); a refusal fails the write and the window QP, never l. */
oxr_status_t oxr_vlink_write(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			     const void *src, size_t len);
/* A window QP frame (LIST of 8 INT32, see verbs_wqp.c) from l's peer. */
oxr_status_t oxr_vwqp_frame(oxr_group *g, struct link *l, const uint32_t v[8]);
/* A put with its note (verbs_wqp.c: into the peer's inbox, or straight
 * into its window with the record behind it). */
oxr_status_t oxr_vlink_put_note(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
				const void *src, size_t len, const struct oxr_put_note *n);
/* 1 while writes posted on v's window QP have not completed (a drain
 * waits for them). */
int oxr_vwqp_busy(const struct vlink *v);
/* Completion queue entries a link's window QP may take: its send queue
 * and the receives of its inbox. */
#define OXR_VWQP_WRS (24 + 16 + 4)
/* The group's epoch went up: every window QP of the old one goes, and an
 * offer of the new one that came early is taken now. */
void oxr_vwqp_new_epoch(oxr_group *g);
/* Offers this epoch's window QP on every verbs link that has none yet; the
 * window calls that every rank makes wait for oxr_vwqp_all_ready. */
oxr_status_t oxr_vwqp_open_all(oxr_group *g);
int oxr_vwqp_all_ready(oxr_group *g);
void oxr_vwqp_completion(oxr_group *g, const struct ibv_wc *wc);
void oxr_vwqp_free(oxr_group *g, struct vwqp *w);

/* The group's completion queue: created with the first verbs link. */
void oxr_vgroup_destroy(oxr_group *g);
/* Polls the CQ and acts on what completed; *progress = completions seen. */
oxr_status_t oxr_vgroup_poll(oxr_group *g, int *progress);
/* Before a sleep: arms the completion channel; 1 if something is already
 * there (then do not sleep). */
int oxr_vgroup_arm(oxr_group *g);
/* The device's async fd is readable: QP fatal, port down and device fatal
 * events fail the links they concern. */
void oxr_vgroup_async(oxr_group *g);
/* The channel fired (epoll said so): takes the event. */
void oxr_vgroup_event(oxr_group *g);

#endif
