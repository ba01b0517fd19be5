/* SPDX-License-Identifier: MIT */
/*
 * Links over RDMA verbs: one reliable-connected QP per peer carrying the
 * same OX byte stream a TCP link carries.
 *
 * Each side owns a receive ring of `nslots` slots of `slot` bytes,
 * registered for remote write by that one peer only.  The sender copies up
 * to a slot of the stream into a local staging slot and RDMA-WRITEs it WITH
 * IMMEDIATE into the peer's next ring slot; the completion tells the
 * receiver the length (byte_len) and carries, as the immediate, the number
 * of the receiver's own slots the sender has freed since its last write
 * (credits travel back piggybacked).  When there is nothing to carry them,
 * a zero-byte write with immediate carries them alone: it uses a receive
 * WR of a small control pool but no slot, and it is sent only once a
 * quarter of the ring (`thresh`) has been freed.
 *
 * Invariants: a data write needs a credit, so the sender never has more
 * writes on the peer than the peer has free slots; a credits-only write
 * needs none, so two sides that wait on each other's credits can always
 * return them, and it frees no slot, so it never causes another (no
 * ping-pong).  Unseen credits-only writes at a peer return >= thresh slots
 * each out of at most nslots, so nslots / thresh + 2 control WRs keep the
 * receive queue from ever running dry (no RNR).  Slots are read in arrival
 * order (RC writes complete in order), so the stream is ordered.
 *
 * One-sided puts are RDMA WRITEs (without immediate) into the peer's window
 * MR, on a QP of their own (verbs_wqp.c), so that a revoked window's
 * refusal breaks that QP and never this one.
 *
 * Rendezvous: a piece of the stream of at least OXR_VERBS_RNDV bytes that
 * starts a slot (a large payload the encoder left in the caller's memory)
 * is not copied.  The sender registers it for remote read, for this message
 * only, and writes a 16-byte descriptor (address, rkey, length) into the
 * next slot, flagged in the immediate (IMM_RNDV); the receiver, when its
 * reader reaches that slot, RDMA-READs the bytes straight into the reader's
 * buffer (the decoder's place for the payload, registered through the
 * registration cache), or into the descriptor's own slot for small reads,
 * and when all are read frees the slot and tells the sender with a
 * zero-byte write flagged IMM_FIN.  Only then does the sender count those
 * bytes as sent, so the caller's memory stays put until the peer has it.
 * One rendezvous at a time per direction: the stream is ordered, and the
 * sender waits for the FIN before it writes past the piece, so at most one
 * FIN is unseen at a time (one more control WR).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "oxr_internal.h"
#include "verbs_dev.h"
#include "verbs_link.h"
#include "verbs_rcache.h"

/* The immediate: credits returned, and what the write is. */
#define IMM_RNDV 0x80000000u  /* the slot holds a rendezvous descriptor */
#define IMM_FIN 0x40000000u   /* zero bytes: the peer has read our rendezvous piece */
#define IMM_CREDITS 0x0000ffffu
#define RNDV_DESC 16          /* u64 address, u32 rkey, u32 length (little-endian) */
#define RNDV_MAX (1u << 30)   /* one descriptor covers at most this much */
#define RNDV_DIRECT 16384     /* smaller reads land in the slot, then are copied */

#define OFFER_MAGIC 0x5652584fu /* "OXRV" little-endian */
#define SQ_EXTRA 16             /* SQ entries beyond the staging slots: credits, READs */
#define SIG_EVERY 16            /* unsignaled stream WRs in a row, at most */
/* Receive WRs go back RECV_BATCH at a time (one provider call, one lock,
 * not one per message); the queue holds that many more than the ring's
 * invariant needs, so it still never runs dry. */
#define RECV_BATCH 8

/* Slots freed before they are returned without data to carry them. */
static uint32_t thresh(uint32_t nslots) { return nslots / 4 ? nslots / 4 : 1; }
/* Receive WRs for credits-only writes and the one FIN (see the invariants above). */
static uint32_t ctl_wrs(uint32_t nslots) { return nslots / thresh(nslots) + 3; }
/* The slot after i.  Not % nslots: a division on every message's path is a
 * helper call under qemu's TCG, where the soft-RoCE tests run. */
#define NEXT_SLOT(v, i) ((i) + 1 == (v)->nslots ? 0 : (i) + 1)

enum rd_state { RD_IDLE, RD_DIRECT, RD_BOUNCE, RD_BOUNCED };

struct vgroup {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int cqe;
	unsigned unacked;  /* CQ events taken, not yet acknowledged */
	/* Links whose handshake has not attached them yet.  Each side attaches
	 * once it has the peer's ready, so the side that gets it first writes
	 * while the other's link is still OPENING; those completions are
	 * held for the link (hold_wc), not dropped as a gone QP's. */
	struct vlink *pending;
};

struct vlink {
	struct ibv_qp *qp;
	int peer;
	uint32_t nslots, slot; /* geometry of both rings (checked equal) */
	/* receiving: the peer writes into rx */
	uint8_t *rx;
	struct ibv_mr *rx_mr;
	uint32_t *rx_len;      /* byte_len of each arrived slot */
	uint32_t rx_next;      /* where the next arriving write landed */
	uint32_t rx_head;      /* first slot not yet read */
	uint32_t rx_ready;     /* arrived, not read */
	uint32_t rx_off;       /* bytes of the head slot already read */
	uint32_t owed;         /* slots freed here, not yet announced to the peer */
	uint32_t thresh;       /* thresh(nslots) */
	uint32_t rq_used;      /* receive WRs consumed, not yet posted again */
	/* sending: staging slots, posted in order, completed in order */
	uint8_t *tx;
	struct ibv_mr *tx_mr;
	uint32_t st_next, st_busy;
	uint32_t tx_next;      /* the peer slot of our next write */
	uint32_t credits;
	uint32_t sq_posted, sq_depth; /* posted and not yet released by a completion */
	uint32_t unsig, sig_every;    /* unsignaled WRs since the last signaled one */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t max_inline;
	struct ibv_send_wr dwr; /* post_data's WR, kept: zeroing one each time showed */
	struct ibv_sge dsge;
	uint32_t psn;          /* our first send PSN, as our offer said */
	struct oxr_vpeer addr; /* where the peer's QPs are (its offer) */
	struct vwqp *w;        /* the window QP of this epoch (verbs_wqp.c) */
	/* rendezvous, receiving: the head slot's descriptor and the READ of it */
	uint8_t *rx_rndv;      /* per slot: it holds a descriptor */
	int rd_have, rd_state, rd_done;
	uint64_t rd_addr, rd_len, rd_off;
	uint32_t rd_key, rd_k, rd_boff;
	void *rd_dst;
	struct ibv_mr *rd_mr;  /* from the registration cache, held while reading */
	int fin_owed;          /* the FIN could not be posted yet (send queue full) */
	/* rendezvous, sending: the piece the peer is reading */
	const uint8_t *sd_ptr;
	size_t sd_len;
	struct ibv_mr *sd_mr;  /* remote read, this piece only */
	int sd_wait, sd_fin;
	/* before the link is attached (struct vgroup's pending) */
	struct vlink *pend_next;
	int pending, held_over;
	struct ibv_wc *held;   /* its completions so far, in order */
	uint32_t nheld, held_cap;
};

struct oxr_prov_mr {
	struct ibv_mr *mr;
};

static struct oxr_vdev *dev(oxr_group *g) { return &oxr_vctx(g)->dev; }
static struct vgroup *vgr(oxr_group *g) { return g->pgroup; }

static oxr_status_t vgroup_get(oxr_group *g, struct vgroup **out)
{
	struct vgroup *vg = g->pgroup;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = EPOLL_CQ };
	int per_link = (int)(2 * oxr_vctx(g)->slots + ctl_wrs(oxr_vctx(g)->slots) + SQ_EXTRA +
			     OXR_VWQP_WRS);

	if (vg) {
		*out = vg;
		return OXR_OK;
	}
	vg = calloc(1, sizeof(*vg));
	if (!vg)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	vg->cqe = per_link * (g->size > 1 ? g->size - 1 : 1);
	vg->ch = ibv_create_comp_channel(dev(g)->verbs);
	vg->cq = vg->ch ? ibv_create_cq(dev(g)->verbs, vg->cqe, NULL, vg->ch, 0) : NULL;
	if (!vg->cq || ibv_req_notify_cq(vg->cq, 0)) {
		int e = errno;
		if (vg->cq)
			ibv_destroy_cq(vg->cq);
		if (vg->ch)
			ibv_destroy_comp_channel(vg->ch);
		free(vg);
		return oxr_err(OXR_ERR_IO, "verbs: completion queue of %d entries on %s: %s "
			       "(memlock limit? see ulimit -l)", per_link, dev(g)->name, strerror(e));
	}
	fcntl(vg->ch->fd, F_SETFL, fcntl(vg->ch->fd, F_GETFL) | O_NONBLOCK);
	ev.data.u32 = EPOLL_CQ;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, vg->ch->fd, &ev)) {
		int e = errno;
		ibv_destroy_cq(vg->cq);
		ibv_destroy_comp_channel(vg->ch);
		free(vg);
		return oxr_err(OXR_ERR_IO, "verbs: epoll_ctl: %s", strerror(e));
	}
	/* QP fatal, port down, device fatal: the device says so on its async
	 * fd, and the links fail at once instead of after the QP's retries */
	fcntl(dev(g)->verbs->async_fd, F_SETFL, fcntl(dev(g)->verbs->async_fd, F_GETFL) | O_NONBLOCK);
	ev.data.u32 = EPOLL_ASYNC;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, dev(g)->verbs->async_fd, &ev) && errno != EEXIST)
		oxr_log(g->ctx, OXR_LOG_WARN, "verbs: watching %s's async events: %s (a port that "
			"goes down is then noticed by the QP's retries)", dev(g)->name, strerror(errno));
	g->pgroup = vg;
	*out = vg;
	return OXR_OK;
}

/* Every verbs link of g fails with why (the port or the device went). */
static void fail_all(oxr_group *g, const char *why)
{
	int p;

	for (p = 0; p < g->size; p++)
		if (vl(oxr_link_at(g, p)) && oxr_link_up(oxr_link_at(g, p)))
			oxr_link_fail(g, oxr_link_at(g, p), OXR_ERR_PEER, "verbs link to rank %d (%s): %s",
				      p, oxr_link_addr(oxr_link_at(g, p)), why);
}

void oxr_vgroup_async(oxr_group *g)
{
	struct ibv_async_event ev;
	char why[160];
	int p;

	while (ibv_get_async_event(dev(g)->verbs, &ev) == 0) {
		const char *what = ibv_event_type_str(ev.event_type);
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			for (p = 0; p < g->size; p++)
				if (vl(oxr_link_at(g, p)) && vl(oxr_link_at(g, p))->qp == ev.element.qp &&
				    oxr_link_up(oxr_link_at(g, p)))
					oxr_link_fail(g, oxr_link_at(g, p), OXR_ERR_PEER, "verbs link to rank "
						      "%d (%s): its QP failed (%s)", p, oxr_link_addr(oxr_link_at(g, p)),
						      what);
			break;
		case IBV_EVENT_PORT_ERR:
			if (ev.element.port_num != dev(g)->port)
				break;
			snprintf(why, sizeof(why), "port %u of %s went down (%s)", dev(g)->port,
				 dev(g)->name, what);
			fail_all(g, why);
			break;
		case IBV_EVENT_DEVICE_FATAL:
			snprintf(why, sizeof(why), "device %s failed (%s)", dev(g)->name, what);
			fail_all(g, why);
			break;
		default:
			oxr_log(g->ctx, OXR_LOG_DEBUG, "verbs: %s on %s", what, dev(g)->name);
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

void oxr_vgroup_destroy(oxr_group *g)
{
	struct vgroup *vg = g->pgroup;

	if (!vg)
		return;
	while (vg->pending) {
		struct vlink *v = vg->pending;
		vg->pending = v->pend_next;
		v->pend_next = NULL;
		v->pending = 0;
	}
	if (vg->unacked)
		ibv_ack_cq_events(vg->cq, vg->unacked);
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, vg->ch->fd, NULL);
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, dev(g)->verbs->async_fd, NULL);
	ibv_destroy_cq(vg->cq);
	ibv_destroy_comp_channel(vg->ch);
	free(vg);
	g->pgroup = NULL;
}

/* Posts n receive WRs in one call (n <= RECV_BATCH). */
static oxr_status_t post_recvs(struct vlink *v, uint32_t n)
{
	struct ibv_recv_wr wr[RECV_BATCH], *bad;
	uint32_t i;

	/* no scatter list: a write with immediate consumes the WR, not its memory */
	for (i = 0; i < n; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = WR_ID(v->peer, WR_RECV),
					      .next = i + 1 < n ? &wr[i + 1] : NULL };
	return ibv_post_recv(v->qp, wr, &bad) ? oxr_err(OXR_ERR_IO, "verbs: ibv_post_recv: %s",
							strerror(errno))
					      : OXR_OK;
}

/* v leaves the group's pending links (attached, or gone with its handshake). */
static void unpend(oxr_group *g, struct vlink *v)
{
	struct vlink **pp;

	if (!v->pending)
		return;
	v->pending = 0;
	for (pp = vgr(g) ? &vgr(g)->pending : NULL; pp && *pp; pp = &(*pp)->pend_next)
		if (*pp == v) {
			*pp = v->pend_next;
			break;
		}
	v->pend_next = NULL;
}

static void vlink_free(oxr_group *g, struct vlink *v)
{
	size_t ring = (size_t)v->nslots * v->slot;

	unpend(g, v);
	free(v->held);
	oxr_vwqp_free(g, v->w);
	if (v->qp)
		oxr_vdestroy_qp(v->qp);
	/* the QP is gone, so no READ is still writing into rd_mr's memory */
	oxr_rcache_put(oxr_vctx(g)->rcache, v->rd_mr);
	if (v->sd_mr)
		oxr_vdereg_mr(v->sd_mr);
	free(v->rx_rndv);
	if (v->rx_mr)
		oxr_vdereg_mr(v->rx_mr);
	if (v->tx_mr)
		oxr_vdereg_mr(v->tx_mr);
	if (v->rx)
		oxr_vdev_free(dev(g), v->rx, ring);
	if (v->tx)
		oxr_vdev_free(dev(g), v->tx, ring);
	free(v->rx_len);
	free(v);
}

static void put_u32(uint8_t *p, uint32_t x) { oxr_store32(p, x, OXR_ORDER_LITTLE); }
static void put_u64(uint8_t *p, uint64_t x) { oxr_store64(p, x, OXR_ORDER_LITTLE); }
static uint32_t get_u32(const uint8_t *p) { return oxr_load32(p, OXR_ORDER_LITTLE); }
static uint64_t get_u64(const uint8_t *p) { return oxr_load64(p, OXR_ORDER_LITTLE); }

uint32_t oxr_vpsn(void)
{
	uint32_t psn;

	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)time(NULL);
	return psn & 0xffffff;
}

oxr_status_t oxr_vqp_create(oxr_group *g, uint32_t send_wr, uint32_t recv_wr, int access,
			    struct ibv_qp **out, uint32_t *max_inline)
{
	struct oxr_vdev *d = dev(g);
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct vgroup *vg = NULL;
	struct ibv_qp *qp;
	oxr_status_t st;

	*out = NULL;
	if ((st = vgroup_get(g, &vg)))
		return st;
	qa.send_cq = qa.recv_cq = vg->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = recv_wr;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = d->max_inline;
	qp = oxr_vcreate_qp(d->pd, &qa);
	if (!qp)
		return oxr_err(OXR_ERR_IO, "verbs: ibv_create_qp on %s: %s", d->name, strerror(errno));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = d->port;
	a.qp_access_flags = (unsigned)access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS)) {
		int e = errno;
		oxr_vdestroy_qp(qp);
		return oxr_err(OXR_ERR_IO, "verbs: QP to INIT: %s", strerror(e));
	}
	*max_inline = qa.cap.max_inline_data;
	*out = qp;
	return OXR_OK;
}

oxr_status_t oxr_vlink_create(oxr_group *g, int peer, struct vlink **out,
			      uint8_t offer[OXR_VOFFER_BYTES])
{
	struct oxr_vdev *d = dev(g);
	struct vlink *v;
	size_t ring;
	uint32_t psn, i, n;
	oxr_status_t st;

	v = calloc(1, sizeof(*v));
	if (!v)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	v->peer = peer;
	v->nslots = oxr_vctx(g)->slots;
	v->slot = oxr_vctx(g)->slot_bytes;
	ring = (size_t)v->nslots * v->slot;
	/* on the device's NUMA node: the HCA reads and writes them, not only the CPU */
	v->rx = oxr_vdev_alloc(d, ring);
	v->tx = oxr_vdev_alloc(d, ring);
	v->rx_len = calloc(v->nslots, sizeof(*v->rx_len));
	v->rx_rndv = calloc(v->nslots, 1);
	if (!v->rx || !v->tx || !v->rx_len || !v->rx_rndv) {
		vlink_free(g, v);
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory for %zu-byte rings", ring);
	}
	/* least privilege: only the ring takes remote writes, and its rkey goes to one peer */
	v->rx_mr = oxr_vreg_mr(d->pd, v->rx, ring, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	v->tx_mr = v->rx_mr ? oxr_vreg_mr(d->pd, v->tx, ring, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!v->tx_mr) {
		int e = errno;
		vlink_free(g, v);
		return oxr_err(OXR_ERR_IO, "verbs: registering %zu bytes on %s: %s (memlock limit? "
			       "ulimit -l)", 2 * ring, d->name, strerror(e));
	}
	v->dsge.lkey = v->tx_mr->lkey;
	v->dwr.sg_list = &v->dsge;
	v->dwr.num_sge = 1;
	v->dwr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	v->sq_depth = v->nslots + SQ_EXTRA;
	v->thresh = thresh(v->nslots);
	v->sig_every = SIG_EVERY < v->sq_depth / 2 ? SIG_EVERY : v->sq_depth / 2;
	/* what a peer may do on this QP; its MRs still decide where: the ring
	 * takes writes, a rendezvous piece (one message) takes reads */
	if ((st = oxr_vqp_create(g, v->sq_depth, v->nslots + ctl_wrs(v->nslots) + RECV_BATCH,
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &v->qp,
				 &v->max_inline))) {
		vlink_free(g, v);
		return st;
	}
	v->pending = 1; /* the QP made the group's CQ (vgroup_get) */
	v->pend_next = vgr(g)->pending;
	vgr(g)->pending = v;
	/* receives go up before the offer leaves, so the peer's first write finds one */
	for (i = 0, n = v->nslots + ctl_wrs(v->nslots) + RECV_BATCH; i < n; i += RECV_BATCH)
		if ((st = post_recvs(v, n - i < RECV_BATCH ? n - i : RECV_BATCH))) {
			vlink_free(g, v);
			return st;
		}
	v->psn = psn = oxr_vpsn();
	memset(offer, 0, OXR_VOFFER_BYTES);
	put_u32(offer, OFFER_MAGIC);
	put_u32(offer + 4, v->qp->qp_num);
	put_u32(offer + 8, psn);
	put_u32(offer + 12, d->lid);
	memcpy(offer + 16, d->gid.raw, 16);
	put_u64(offer + 32, (uintptr_t)v->rx);
	put_u32(offer + 40, v->rx_mr->rkey);
	put_u32(offer + 44, v->nslots);
	put_u32(offer + 48, v->slot);
	put_u32(offer + 52, (uint32_t)d->mtu);
	put_u32(offer + 56, (uint32_t)d->link_layer);
	put_u32(offer + 60, (uint32_t)oxr_vctx(g)->cm);
	*out = v;
	return OXR_OK;
}

oxr_status_t oxr_vlink_take_offer(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES])
{
	struct oxr_vdev *d = dev(g);
	uint32_t qpn = get_u32(offer + 4), psn = get_u32(offer + 8), mtu = get_u32(offer + 52);

	if (get_u32(offer) != OFFER_MAGIC)
		return oxr_err(OXR_ERR_PROTO, "verbs: rank %d sent a malformed QP offer", v->peer);
	if (get_u32(offer + 44) != v->nslots || get_u32(offer + 48) != v->slot)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d uses rings of %u x %u bytes, this rank "
			       "%u x %u: set OXR_VERBS_SLOTS and OXR_VERBS_SLOT_BYTES alike on "
			       "every rank", v->peer, get_u32(offer + 44), get_u32(offer + 48),
			       v->nslots, v->slot);
	if (get_u32(offer + 56) != (uint32_t)d->link_layer)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d is on another link layer (%u, this "
			       "rank %d)", v->peer, get_u32(offer + 56), d->link_layer);
	if (qpn > 0xffffff || psn > 0xffffff || mtu < IBV_MTU_256 || mtu > IBV_MTU_4096)
		return oxr_err(OXR_ERR_PROTO, "verbs: rank %d sent an offer out of range "
			       "(qpn %u, psn %u, mtu %u)", v->peer, qpn, psn, mtu);
	if (get_u32(offer + 60) != (uint32_t)oxr_vctx(g)->cm)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d sets up QPs %s, this rank %s: set "
			       "OXR_VERBS_CM alike on every rank", v->peer,
			       get_u32(offer + 60) ? "by rdma_cm" : "over tcp",
			       oxr_vctx(g)->cm ? "by rdma_cm" : "over tcp");
	v->addr.lid = get_u32(offer + 12) & 0xffff;
	memcpy(v->addr.gid, offer + 16, 16);
	v->addr.mtu = mtu;
	v->raddr = get_u64(offer + 32);
	v->rkey = get_u32(offer + 40);
	v->credits = v->nslots;
	return OXR_OK;
}

void oxr_vlink_renumber(struct vlink *v, int peer)
{
	v->peer = peer; /* new WRs say so; those posted before are found by QP number */
}

struct ibv_qp *oxr_vlink_qp(struct vlink *v) { return v->qp; }
struct vwqp **oxr_vlink_wslot(struct vlink *v) { return &v->w; }
const struct oxr_vpeer *oxr_vlink_peer(const struct vlink *v) { return &v->addr; }

oxr_status_t oxr_vqp_connect(oxr_group *g, struct ibv_qp *qp, int peer, const struct oxr_vpeer *pa,
			     uint32_t qpn, uint32_t psn, uint32_t my_psn)
{
	struct oxr_vdev *d = dev(g);
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_RTR;
	/* the smaller of both ports' MTUs: a path is only as wide as its narrowest end */
	a.path_mtu = pa->mtu < (uint32_t)d->mtu ? (enum ibv_mtu)pa->mtu : d->mtu;
	a.dest_qp_num = qpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12; /* 0.64 ms; credits make RNR a bug, not a state */
	a.ah_attr.port_num = d->port;
	a.ah_attr.dlid = (uint16_t)pa->lid;
	if (d->link_layer == IBV_LINK_LAYER_ETHERNET || d->gid_index > 0 ||
	    memcmp(pa->gid, (uint8_t[16]){ 0 }, 16)) {
		/* RoCE routes by GID (global routing header); IB uses it only across subnets */
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, pa->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return oxr_err(OXR_ERR_IO, "verbs: QP to RTR (peer rank %d, qpn %u): %s", peer,
			       qpn, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	/* timeout 4.096 us * 2^t, retried retry_cnt times: a dead peer's QP fails
	 * the link within about retry * 2^t * 4 us (defaults 7 * 67 ms) */
	a.timeout = (uint8_t)oxr_vctx(g)->timeout;
	a.retry_cnt = (uint8_t)oxr_vctx(g)->retry;
	a.rnr_retry = 6;
	a.sq_psn = my_psn; /* the one our offer announced */
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return oxr_err(OXR_ERR_IO, "verbs: QP to RTS (peer rank %d): %s", peer,
			       strerror(errno));
	return OXR_OK;
}

oxr_status_t oxr_vlink_connect(oxr_group *g, struct vlink *v, const uint8_t offer[OXR_VOFFER_BYTES])
{
	oxr_status_t st = oxr_vlink_take_offer(g, v, offer);

	return st ? st : oxr_vqp_connect(g, v->qp, v->peer, &v->addr, get_u32(offer + 4),
					 get_u32(offer + 8), v->psn);
}

/*
 * Posts a stream WR.  Most go unsignaled: an RC QP completes its WRs in
 * order, so one signaled completion releases every WR before it, and a
 * completion for each small message (a CQE for the provider to write, one
 * for the progress loop to poll and handle) was a tenth of a ping-pong's
 * cost on rxe.  Signaled are the WRs whose completion frees something (a
 * staging slot, a READ's wait: must) and every sig_every-th, so the send
 * queue never fills with WRs no completion would release; the signaled
 * one's wr_id says how many it releases.  A WR that fails completes
 * signaled or not, and fails the link.
 */
static int post_send(struct vlink *v, struct ibv_send_wr *wr, int must)
{
	struct ibv_send_wr *bad;
	uint32_t n = v->unsig + 1;
	int sig = must || n >= v->sig_every;

	if (sig) {
		wr->send_flags |= IBV_SEND_SIGNALED;
		wr->wr_id |= (uint64_t)n << 40;
	}
	if (ibv_post_send(v->qp, wr, &bad))
		return -1;
	v->sq_posted++;
	v->unsig = sig ? 0 : n;
	return 0;
}

/* Posts len > 0 bytes at src into the peer's next ring slot.  src is the
 * staging slot st_next, or, for a WR that goes inline, any memory: the
 * provider copies inline bytes into the WR as it is posted, so they need
 * no registration and no staging copy, and nothing waits for this WR's
 * completion (the staging slot, if used, is free again at once). */
static int post_data(struct vlink *v, const uint8_t *src, uint32_t len, uint32_t flags)
{
	struct ibv_send_wr *wr = &v->dwr; /* its constant fields are set (oxr_vlink_create) */
	int inl = len <= v->max_inline;

	v->dsge.addr = (uintptr_t)src;
	v->dsge.length = len;
	wr->wr_id = WR_ID(v->peer, inl ? WR_CTL : WR_DATA);
	wr->send_flags = inl ? IBV_SEND_INLINE : 0;
	wr->imm_data = htonl(v->owed | flags);
	wr->wr.rdma.remote_addr = v->raddr + (uint64_t)v->tx_next * v->slot;
	wr->wr.rdma.rkey = v->rkey;
	if (post_send(v, wr, !inl))
		return -1;
	v->owed = 0;
	v->credits--;
	v->tx_next = NEXT_SLOT(v, v->tx_next);
	if (!inl) {
		v->st_next = NEXT_SLOT(v, v->st_next);
		v->st_busy++;
	}
	return 0;
}

/* A zero-byte write with immediate: credits alone (or with a FIN), no slot, no credit. */
static int post_credits(struct vlink *v, uint32_t flags)
{
	struct ibv_send_wr wr = { 0 };

	wr.wr_id = WR_ID(v->peer, WR_CTL);
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_INLINE;
	wr.imm_data = htonl(v->owed | flags);
	wr.wr.rdma.remote_addr = v->raddr;
	wr.wr.rdma.rkey = v->rkey;
	if (post_send(v, &wr, 0))
		return -1;
	v->owed = 0;
	return 0;
}

/* A signaled zero-byte RDMA WRITE (no immediate: the peer sees nothing):
 * its completion says every unsignaled WR before it is done. */
static int post_flush(struct vlink *v)
{
	struct ibv_send_wr wr = { 0 };

	wr.wr_id = WR_ID(v->peer, WR_CTL);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = v->raddr;
	wr.wr.rdma.rkey = v->rkey;
	return post_send(v, &wr, 1);
}

static int can_post(const struct vlink *v, uint32_t need_credits)
{
	return v->credits >= need_credits && v->st_busy < v->nslots && v->sq_posted < v->sq_depth;
}

/* Returns freed slots on their own when no data is about to carry them. */
static void return_credits(oxr_group *g, struct link *l)
{
	struct vlink *v = vl(l);

	if (v->owed >= v->thresh && (!oxr_link_sending(l) || !v->credits) &&
	    v->sq_posted < v->sq_depth && post_credits(v, 0))
		oxr_link_fail(g, l, OXR_ERR_IO, "verbs link to rank %d: posting credits: %s",
			      oxr_link_peer(l), strerror(errno));
}

/* The FIN of a rendezvous piece, with the slot it freed; retried from the
 * completions while the send queue is full. */
static void post_fin(oxr_group *g, struct link *l)
{
	struct vlink *v = vl(l);

	if (v->sq_posted >= v->sq_depth) {
		v->fin_owed = 1;
		return;
	}
	v->fin_owed = 0;
	if (post_credits(v, IMM_FIN))
		oxr_link_fail(g, l, OXR_ERR_IO, "verbs link to rank %d: posting a FIN: %s",
			      oxr_link_peer(l), strerror(errno));
}

static int post_read(struct vlink *v, void *dst, uint32_t lkey, uint32_t k)
{
	struct ibv_sge sge = { .addr = (uintptr_t)dst, .length = k, .lkey = lkey };
	struct ibv_send_wr wr = { 0 };

	wr.wr_id = WR_ID(v->peer, WR_READ);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = v->rd_addr + v->rd_off;
	wr.wr.rdma.rkey = v->rd_key;
	if (post_send(v, &wr, 1))
		return -1;
	v->rd_done = 0;
	return 0;
}

/*
 * Reads from the rendezvous piece of the head slot into buf: starts a READ
 * and says EAGAIN, then, once it completed, gives its bytes.  The reader
 * asks again with the same buf (the decoder's place, or the link's read
 * buffer, both stay where they are until bytes come).  Only arena memory
 * (the decoder's place) is read into directly: the registration cache may
 * keep only memory whose release it hears about.
 */
static ssize_t rndv_recv(oxr_group *g, struct link *l, void *buf, size_t n, int arena)
{
	struct vlink *v = vl(l);
	uint8_t *slot = v->rx + (size_t)v->rx_head * v->slot;
	size_t k = 0;

	if (!v->rd_have) { /* the descriptor came from the network: check it */
		v->rd_addr = get_u64(slot);
		v->rd_key = get_u32(slot + 8);
		v->rd_len = get_u32(slot + 12);
		v->rd_off = 0;
		if (v->rd_len == 0 || v->rd_len > RNDV_MAX) {
			oxr_link_fail(g, l, OXR_ERR_PROTO, "verbs link to rank %d: rendezvous "
				      "descriptor of %llu bytes (1..%u allowed)", oxr_link_peer(l),
				      (unsigned long long)v->rd_len, RNDV_MAX);
			goto io;
		}
		v->rd_have = 1;
		v->rd_state = RD_IDLE;
	}
	switch (v->rd_state) {
	case RD_IDLE:
		if (v->sq_posted >= v->sq_depth)
			goto again;
		k = v->rd_len - v->rd_off < n ? v->rd_len - v->rd_off : n;
		if (arena && k >= RNDV_DIRECT) {
			v->rd_mr = oxr_rcache_get(oxr_vctx(g)->rcache, buf, k);
			if (!v->rd_mr) {
				oxr_link_fail(g, l, OXR_ERR_IO, "%s", oxr_errmsg());
				goto io;
			}
			v->rd_dst = buf;
			v->rd_state = RD_DIRECT;
		} else {
			if (k > v->slot)
				k = v->slot;
			v->rd_dst = slot; /* the descriptor is read: its slot is free to land in */
			v->rd_state = RD_BOUNCE;
		}
		v->rd_k = (uint32_t)k;
		if (post_read(v, v->rd_dst, v->rd_state == RD_DIRECT ? v->rd_mr->lkey
								     : v->rx_mr->lkey, v->rd_k)) {
			oxr_link_fail(g, l, OXR_ERR_IO, "verbs link to rank %d: posting a READ: %s",
				      oxr_link_peer(l), strerror(errno));
			goto io;
		}
		goto again;
	case RD_DIRECT:
		if (!v->rd_done)
			goto again;
		if (buf != v->rd_dst) {
			oxr_link_fail(g, l, OXR_ERR_PROTO, "verbs link to rank %d: the reader moved "
				      "its buffer during a rendezvous read (an oxr bug)", oxr_link_peer(l));
			goto io;
		}
		oxr_rcache_put(oxr_vctx(g)->rcache, v->rd_mr);
		v->rd_mr = NULL;
		k = v->rd_k;
		v->rd_off += k;
		v->rd_state = RD_IDLE;
		break;
	case RD_BOUNCE:
		if (!v->rd_done)
			goto again;
		v->rd_state = RD_BOUNCED;
		v->rd_boff = 0;
		/* fall through */
	case RD_BOUNCED:
		k = v->rd_k - v->rd_boff < n ? v->rd_k - v->rd_boff : n;
		memcpy(buf, slot + v->rd_boff, k);
		v->rd_boff += (uint32_t)k;
		if (v->rd_boff == v->rd_k) {
			v->rd_off += v->rd_k;
			v->rd_state = RD_IDLE;
		}
		break;
	}
	if (v->rd_off == v->rd_len && v->rd_state == RD_IDLE) {
		v->rx_rndv[v->rx_head] = 0;
		v->rx_head = NEXT_SLOT(v, v->rx_head);
		v->rx_ready--;
		v->rd_have = 0;
		v->owed++;
		post_fin(g, l);
	}
	return (ssize_t)k;
again:
	errno = EAGAIN;
	return -1;
io:
	errno = EIO;
	return -1;
}

ssize_t oxr_vlink_recv(oxr_group *g, struct link *l, void *buf, size_t n, int arena)
{
	struct vlink *v = vl(l);
	size_t got = 0;

	while (v->rx_ready && got < n) {
		uint32_t len = v->rx_len[v->rx_head];
		size_t k = len - v->rx_off;
		if (v->rx_rndv[v->rx_head]) {
			ssize_t r;
			if (got)
				break; /* a rendezvous piece is read by a call of its own */
			r = rndv_recv(g, l, buf, n, arena);
			return_credits(g, l);
			return r;
		}
		if (k > n - got)
			k = n - got;
		memcpy((uint8_t *)buf + got, v->rx + (size_t)v->rx_head * v->slot + v->rx_off, k);
		got += k;
		v->rx_off += (uint32_t)k;
		if (v->rx_off == len) {
			v->rx_head = NEXT_SLOT(v, v->rx_head);
			v->rx_ready--;
			v->rx_off = 0;
			v->owed++;
		}
	}
	return_credits(g, l);
	if (!got && n) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)got;
}

/* Offers iov's piece at p (len bytes) by rendezvous: 1 posted, 0 not (copy
 * it instead: memory that cannot be registered is still sent), -1 error. */
static int rndv_send(oxr_group *g, struct vlink *v, const uint8_t *p, size_t len)
{
	uint8_t *desc = v->tx + (size_t)v->st_next * v->slot;

	if (len > RNDV_MAX)
		len = RNDV_MAX;
	v->sd_mr = oxr_vreg_mr(dev(g)->pd, (void *)(uintptr_t)p, len, IBV_ACCESS_REMOTE_READ);
	if (!v->sd_mr) {
		oxr_log(g->ctx, OXR_LOG_DEBUG, "verbs: %zu bytes to rank %d copied, not offered: "
			"registering them failed: %s", len, v->peer, strerror(errno));
		return 0;
	}
	put_u64(desc, (uintptr_t)p);
	put_u32(desc + 8, v->sd_mr->rkey);
	put_u32(desc + 12, (uint32_t)len);
	if (post_data(v, desc, RNDV_DESC, IMM_RNDV))
		return -1;
	v->sd_ptr = p;
	v->sd_len = len;
	v->sd_wait = 1;
	v->sd_fin = 0;
	return 1;
}

ssize_t oxr_vlink_sendv(oxr_group *g, struct link *l, const struct iovec *iov, int niov)
{
	struct vlink *v = vl(l);
	size_t total = 0, ioff = 0, rndv = oxr_vctx(g)->rndv;
	int i = 0;

	if (v->sd_wait) { /* the caller comes back at the piece the peer is reading */
		if (!niov || iov[0].iov_base != v->sd_ptr || iov[0].iov_len < v->sd_len) {
			errno = EPROTO;
			return -1;
		}
		if (!v->sd_fin) {
			errno = EAGAIN;
			return -1;
		}
		oxr_vdereg_mr(v->sd_mr);
		v->sd_mr = NULL;
		v->sd_wait = 0;
		total = ioff = v->sd_len;
		if (ioff == iov[0].iov_len) {
			i++;
			ioff = 0;
		}
	}
	while (i < niov && can_post(v, 1)) {
		uint8_t *dst = v->tx + (size_t)v->st_next * v->slot;
		uint32_t len = 0;
		if (i == niov - 1 && iov[i].iov_len > ioff && iov[i].iov_len - ioff <= v->max_inline) {
			/* the last piece, small: inline from where it is (a small
			 * message is one such piece) */
			len = (uint32_t)(iov[i].iov_len - ioff);
			if (post_data(v, (const uint8_t *)iov[i].iov_base + ioff, len, 0)) {
				errno = EIO;
				return -1;
			}
			total += len;
			break;
		}
		if (rndv && iov[i].iov_len - ioff >= rndv) {
			int r = rndv_send(g, v, (const uint8_t *)iov[i].iov_base + ioff,
					  iov[i].iov_len - ioff);
			if (r < 0) {
				errno = EIO;
				return -1;
			}
			if (r > 0)
				break; /* the rest waits for the FIN */
			rndv = 0; /* this call copies */
		}
		while (len < v->slot && i < niov) {
			size_t k = iov[i].iov_len - ioff;
			if (rndv && len && k >= rndv)
				break; /* it goes by rendezvous, from the next slot */
			if (k > v->slot - len)
				k = v->slot - len;
			memcpy(dst + len, (const uint8_t *)iov[i].iov_base + ioff, k);
			len += (uint32_t)k;
			ioff += k;
			if (ioff == iov[i].iov_len) {
				i++;
				ioff = 0;
			}
		}
		if (!len)
			break;
		if (post_data(v, dst, len, 0)) {
			errno = EIO;
			return -1;
		}
		total += len;
	}
	if (!total) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)total;
}

int oxr_vlink_buffered(const struct vlink *v)
{
	return v && v->rx_ready > 0;
}

oxr_status_t oxr_vmr_reg(oxr_group *g, void *base, size_t len, int remote_write,
			 struct oxr_prov_mr **out, uint64_t *addr, uint32_t *rkey)
{
	struct oxr_prov_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	*addr = (uintptr_t)base;
	*rkey = 0;
	if (len) {
		m->mr = oxr_vreg_mr(dev(g)->pd, base, len, IBV_ACCESS_LOCAL_WRITE |
				   (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0));
		if (!m->mr) {
			int e = errno;
			free(m);
			return oxr_err(OXR_ERR_IO, "verbs: registering a %zu-byte window: %s "
				       "(memlock limit? ulimit -l)", len, strerror(e));
		}
		*rkey = m->mr->rkey;
	}
	*out = m;
	return OXR_OK;
}

void oxr_vmr_revoke(struct oxr_prov_mr *m)
{
	if (m && m->mr) {
		oxr_vdereg_mr(m->mr);
		m->mr = NULL;
	}
}

void oxr_vmr_dereg(struct oxr_prov_mr *m)
{
	if (!m)
		return;
	if (m->mr)
		oxr_vdereg_mr(m->mr);
	free(m);
}

/* Every WR posted is done.  Unsignaled ones finish unseen: a signaled
 * empty write behind them (once the queue has room) says when they did. */
static int drained(void *arg)
{
	struct link *l = arg;
	struct vlink *v = vl(l);

	if (!oxr_link_up(l))
		return 1;
	if (v->unsig && v->sq_posted < v->sq_depth && post_flush(v))
		return 1; /* the QP broke: nothing more will complete */
	return v->sq_posted == 0 && !v->sd_wait && !oxr_vwqp_busy(v);
}

void oxr_vlink_destroy(oxr_group *g, struct vlink *v)
{
	if (!v)
		return;
	vlink_free(g, v);
}

/* Writes still in flight finish before the QP goes (an isend followed by exit). */
void oxr_vlink_drain(oxr_group *g, struct link *l, int timeout_ms)
{
	if (vl(l) && oxr_link_up(l))
		(void)oxr_progress_until(g, drained, l, timeout_ms);
}

/* The link a completion is for: the rank in its wr_id names it, unless the
 * group was renumbered since the WR was posted (a shrink: receives posted
 * before it still carry the old rank), so the QP number decides. */
static int wc_peer(oxr_group *g, const struct ibv_wc *wc)
{
	int peer = WR_PEER(wc->wr_id), p;

	if (peer >= 0 && peer < g->size && vl(oxr_link_at(g, peer)) &&
	    vl(oxr_link_at(g, peer))->qp->qp_num == wc->qp_num)
		return peer;
	for (p = 0; p < g->size; p++)
		if (vl(oxr_link_at(g, p)) && vl(oxr_link_at(g, p))->qp->qp_num == wc->qp_num)
			return p;
	return -1; /* of a QP already gone */
}

static void completion(oxr_group *g, const struct ibv_wc *wc, int peer, int *rd, int *wr)
{
	struct link *l;
	struct vlink *v;

	*rd = *wr = 0;
	if (peer < 0)
		return;
	l = oxr_link_at(g, peer);
	v = vl(l);
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR || oxr_link_up(l))
			oxr_link_fail(g, l, OXR_ERR_PEER, "verbs link to rank %d (%s) failed: %s "
				      "(peer gone, or a write outside its memory)", peer, oxr_link_addr(l),
				      ibv_wc_status_str(wc->status));
		return;
	}
	switch (WR_KIND(wc->wr_id)) {
	case WR_RECV: {
		uint32_t imm = ntohl(wc->imm_data), back = imm & IMM_CREDITS;
		int rndv = !!(imm & IMM_RNDV), fin = !!(imm & IMM_FIN);
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc->byte_len > v->slot ||
		    back > v->nslots - v->credits || (wc->byte_len && v->rx_ready >= v->nslots) ||
		    (imm & ~(IMM_CREDITS | IMM_RNDV | IMM_FIN)) || (rndv && fin) ||
		    (rndv && wc->byte_len != RNDV_DESC) || (fin && (wc->byte_len || !v->sd_wait ||
								    v->sd_fin))) {
			oxr_link_fail(g, l, OXR_ERR_PROTO, "verbs link to rank %d: the peer broke "
				      "the ring protocol (opcode %d, %u bytes, immediate 0x%x)",
				      peer, (int)wc->opcode, wc->byte_len, imm);
			return;
		}
		v->credits += back;
		if (wc->byte_len) { /* data in the next slot; zero bytes: credits alone */
			v->rx_len[v->rx_next] = wc->byte_len;
			v->rx_rndv[v->rx_next] = (uint8_t)rndv;
			v->rx_next = NEXT_SLOT(v, v->rx_next);
			v->rx_ready++;
			*rd = 1;
		}
		if (fin)
			v->sd_fin = 1;
		if (++v->rq_used == RECV_BATCH) {
			v->rq_used = 0;
			if (post_recvs(v, RECV_BATCH)) {
				oxr_link_fail(g, l, OXR_ERR_IO, "%s", oxr_errmsg());
				return;
			}
		}
		*wr = back > 0 || fin;
		break;
	}
	case WR_READ:
		v->rd_done = 1;
		*rd = 1;
		break;
	case WR_DATA:
		v->st_busy--;
		break;
	}
	if (WR_KIND(wc->wr_id) != WR_RECV) { /* this WR, and the unsignaled ones before it */
		uint32_t n = WR_COVERS(wc->wr_id);
		v->sq_posted -= n < v->sq_posted ? n : v->sq_posted;
		*wr = 1;
	}
}

/* A completion of a link not attached yet, kept for oxr_vlink_attached:
 * dropping it would lose the slot it says arrived (and its credits), and
 * the ring's next completion would name the wrong slot.  1: held. */
static int hold_wc(oxr_group *g, const struct ibv_wc *wc)
{
	struct vlink *v;

	for (v = vgr(g)->pending; v; v = v->pend_next)
		if (v->qp && v->qp->qp_num == wc->qp_num)
			break;
	if (!v)
		return 0;
	if (!v->held) {
		/* no more than the receive WRs posted: this side wrote nothing
		 * yet, so the peer got no credits back beyond the ring's */
		v->held_cap = v->nslots + ctl_wrs(v->nslots) + RECV_BATCH;
		v->held = calloc(v->held_cap, sizeof(*v->held));
	}
	if (!v->held || v->nheld == v->held_cap)
		v->held_over = 1;
	else
		v->held[v->nheld++] = *wc;
	return 1;
}

void oxr_vlink_attached(oxr_group *g, struct link *l)
{
	struct vlink *v = vl(l);
	uint32_t i;
	int rd, wr;

	if (!v)
		return;
	unpend(g, v);
	if (v->nheld)
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: %u completions of the link to rank %d came "
			"before it was attached", g->rank, v->nheld, oxr_link_peer(l));
	if (v->held_over) {
		oxr_link_fail(g, l, OXR_ERR_PROTO, "verbs link to rank %d: more completions before "
			      "the link was attached than it had receives posted", oxr_link_peer(l));
		return;
	}
	for (i = 0; i < v->nheld && oxr_link_up(l); i++)
		completion(g, &v->held[i], oxr_link_peer(l), &rd, &wr);
	free(v->held);
	v->held = NULL;
	v->nheld = v->held_cap = 0;
	/* the slots they say arrived are read once the link is announced
	 * (oxr_link_attach reads a link with bytes buffered) */
}

oxr_status_t oxr_vgroup_poll(oxr_group *g, int *progress)
{
	struct ibv_wc wc[32];
	int n, i, j, rd, wr, peers[32];
	uint8_t want[32];

	*progress = 0;
	if (!g->pgroup)
		return OXR_OK;
	n = ibv_poll_cq(vgr(g)->cq, 32, wc);
	if (n < 0)
		return oxr_err(OXR_ERR_IO, "verbs: ibv_poll_cq failed");
	for (i = 0; i < n; i++) {
		if (WR_KIND(wc[i].wr_id) == WR_WIN || WR_KIND(wc[i].wr_id) == WR_WINRECV) {
			/* the window QP's: not the stream's */
			oxr_vwqp_completion(g, &wc[i]);
			peers[i] = -1;
			want[i] = 0;
			continue;
		}
		peers[i] = wc_peer(g, &wc[i]);
		if (peers[i] < 0 && hold_wc(g, &wc[i])) {
			want[i] = 0;
			continue;
		}
		completion(g, &wc[i], peers[i], &rd, &wr);
		want[i] = (uint8_t)(rd | wr << 1);
	}
	/* then move each link once, however many of its completions came */
	for (i = 0; i < n; i++) {
		struct link *l;
		uint8_t w = want[i];
		if (peers[i] < 0)
			continue;
		for (j = i + 1; j < n; j++)
			if (peers[j] == peers[i]) {
				w |= want[j];
				want[j] = 0;
			}
		l = oxr_link_at(g, peers[i]);
		if (oxr_link_up(l) && vl(l) && vl(l)->fin_owed)
			post_fin(g, l);
		if (w)
			oxr_link_ready(g, l, w & 1, w & 2);
	}
	*progress = n;
	return OXR_OK;
}

int oxr_vgroup_arm(oxr_group *g)
{
	int n = 0;

	if (!g->pgroup)
		return 0;
	if (ibv_req_notify_cq(vgr(g)->cq, 0))
		return 0;
	/* a completion that came between the last poll and the arming raises no event */
	if (oxr_vgroup_poll(g, &n))
		return 1;
	return n > 0;
}

void oxr_vgroup_event(oxr_group *g)
{
	struct ibv_cq *cq;
	void *cqctx;

	while (g->pgroup && ibv_get_cq_event(vgr(g)->ch, &cq, &cqctx) == 0)
		if (++vgr(g)->unacked >= 64) {
			ibv_ack_cq_events(vgr(g)->cq, vgr(g)->unacked);
			vgr(g)->unacked = 0;
		}
}
