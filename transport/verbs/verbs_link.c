/* SPDX-License-Identifier: MIT */
/*
 * Links over RDMA verbs: one reliable-connected QP per peer carrying the
 * same OX byte stream a TCP link carries.
 *
 * A side with a ring owns `rx_slots` slots of `slot` bytes, registered for
 * remote write by that one peer only.  The sender copies up to a slot of
 * the stream into a staging slot and RDMA-WRITEs it WITH IMMEDIATE into the
 * peer's next ring slot; the completion tells the receiver the length
 * (byte_len) and carries, as the immediate, the number of the receiver's
 * own slots the sender has freed since its last write (credits travel back
 * piggybacked).  When there is nothing to carry them, a zero-byte SEND with
 * immediate carries them alone: it uses a receive WR but no slot, and it is
 * sent only once a quarter of the slots (`thresh`) has been freed.
 *
 * Invariants: a data write needs a credit, so the sender never has more
 * writes on the peer than the peer has free slots; a credits-only message
 * needs none, so two sides that wait on each other's credits can always
 * return them, and it frees no slot, so it never causes another (no
 * ping-pong).  Unseen credits-only messages at a peer return >= thresh
 * slots each out of at most rx_slots, so a link has at most
 * rx_slots / thresh + 2 controls unseen.  Slots are read in arrival order
 * (RC completes in order), so the stream is ordered.
 *
 * Resources independent of P.  A ring is the fast path, and pinned memory
 * per peer: only OXR_VERBS_RINGS links of a group get one (the collective
 * partners first, as their links open; wants_ring).  Every other link
 * receives into the group's shared receive queue (SRQ): the sender SENDs
 * WITH IMMEDIATE, the SRQ hands out the next free buffer, and the link
 * keeps that buffer until its reader is done with it (rx_buf maps the
 * link's `rx_slots` virtual slots onto SRQ buffers); the credits are the
 * same, OXR_VERBS_SRQ_CREDITS of them, so one link holds at most that many
 * buffers.  Each side chooses for what it receives, and says so in its
 * offer.  All stream QPs take their receive WRs from the SRQ, also for
 * writes into a ring (the WR's buffer is posted again at once) and for the
 * zero-byte controls (credits, FIN: SENDs, so a link without a ring needs
 * no address at its peer).  Staging slots come from one pool per group, a
 * slot going back with its WR's completion; a send that finds the pool
 * empty waits, and the completion that refills it wakes the links that
 * wait (st_starved).  The CQ grows (ibv_resize_cq) with the QPs open.
 * Per rank and group: min(L, rings) x slots x slot + (srq_bufs +
 * stage_slots) x slot pinned bytes, whatever P and the number L of verbs
 * links; per link, a QP and O(rx_slots) bytes of bookkeeping.  Since the
 * SRQ is shared, a buffer shortage is an RNR NAK and a retry (rnr_retry
 * 7: forever), never a lost message; the credits make it rare.
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
#include "verbs_group.h"
#include "verbs_link.h"
#include "verbs_rcache.h"

/* The immediate: credits returned, and what the write is. */
#define IMM_RNDV 0x80000000u  /* the slot holds a rendezvous descriptor */
#define IMM_FIN 0x40000000u   /* zero bytes: the peer has read our rendezvous piece */
#define IMM_CREDITS 0x0000ffffu
#define OFFER_CM 1u       /* offer's flags: QPs connected by rdma_cm */
#define OFFER_SHARED 2u   /* the offerer receives into its SRQ: SEND, no ring */
#define RNDV_DESC 16          /* u64 address, u32 rkey, u32 length (little-endian) */
#define RNDV_MAX (1u << 30)   /* one descriptor covers at most this much */
#define RNDV_DIRECT 16384     /* smaller reads land in the slot, then are copied */

#define OFFER_MAGIC 0x5652584fu /* "OXRV" little-endian */
#define SIG_EVERY 16            /* unsignaled stream WRs in a row, at most */

/* Slots freed before they are returned without data to carry them. */
static uint32_t thresh(uint32_t nslots) { return nslots / 4 ? nslots / 4 : 1; }
/* Controls a peer may send unseen: credits-only writes and the one FIN
 * (see the invariants above); what a link not attached yet may hold. */
static uint32_t ctl_wrs(uint32_t nslots) { return nslots / thresh(nslots) + 3; }
/* The slot after i.  Not % n: a division on every message's path is a
 * helper call under qemu's TCG, where the soft-RoCE tests run. */
#define NEXT_RX(v, i) ((i) + 1 == (v)->rx_slots ? 0 : (i) + 1)
#define NEXT_TX(v, i) ((i) + 1 == (v)->tx_slots ? 0 : (i) + 1)

enum rd_state { RD_IDLE, RD_DIRECT, RD_BOUNCE, RD_BOUNCED };

struct vlink {
	struct ibv_qp *qp;
	int peer;
	uint32_t slot;         /* bytes of every slot and buffer (checked equal) */
	/* receiving: the peer writes into rx (a ring), or SENDs into the SRQ */
	uint32_t rx_slots;     /* the ring's slots, or the peer's credits into the SRQ */
	uint8_t *rx;           /* the ring; NULL: the SRQ */
	struct ibv_mr *rx_mr;
	uint32_t *rx_buf;      /* without a ring: the SRQ buffer of each slot */
	uint32_t *rx_len;      /* byte_len of each arrived slot */
	uint32_t rx_next;      /* where the next arriving write landed */
	uint32_t rx_head;      /* first slot not yet read */
	uint32_t rx_ready;     /* arrived, not read */
	uint32_t rx_off;       /* bytes of the head slot already read */
	uint32_t owed;         /* slots freed here, not yet announced to the peer */
	uint32_t thresh;       /* thresh(rx_slots) */
	int ring_other;        /* its ring went to a peer that is no collective partner */
	/* sending: into the peer's ring (raddr) or its SRQ (tx_srq) */
	uint32_t tx_slots;     /* the peer's rx_slots: our credits at most */
	int tx_srq;
	uint32_t *stq;         /* staging slots of WRs in flight, in posting order */
	uint32_t stq_head, stq_n; /* of sq_depth entries */
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

/* The QP goes first: after it, no DMA touches what v holds, and v's SRQ
 * buffers and staging slots go back to their pools. */
static void vlink_free(oxr_group *g, struct vlink *v)
{
	struct vgroup *vg = vgr(g);
	uint32_t i, k;

	unpend(g, v);
	oxr_vwqp_free(g, v->w);
	if (vg && v->qp)
		oxr_vqtab_del(vg, v->qp->qp_num);
	oxr_vqp_destroy(g, v->qp);
	for (i = 0; i < v->nheld; i++)
		if (WR_KIND(v->held[i].wr_id) == WR_RECV)
			oxr_vsrq_give(g, (uint32_t)WR_PEER(v->held[i].wr_id));
	free(v->held);
	if (!v->rx && v->rx_buf)
		for (k = 0, i = v->rx_head; k < v->rx_ready; k++, i = NEXT_RX(v, i))
			oxr_vsrq_give(g, v->rx_buf[i]);
	for (k = 0; vg && k < v->stq_n; k++)
		oxr_vstage_put(vg, v->stq[(v->stq_head + k) % v->sq_depth]);
	free(v->stq);
	/* the QP is gone, so no READ is still writing into rd_mr's memory */
	oxr_rcache_put(oxr_vctx(g)->rcache, v->rd_mr);
	if (v->sd_mr)
		oxr_vdereg_mr(v->sd_mr);
	free(v->rx_rndv);
	free(v->rx_buf);
	oxr_vpool_free(g, (size_t)v->rx_slots * v->slot, v->rx, v->rx_mr);
	if (v->rx && vg) {
		vg->rings--;
		vg->other_rings -= (uint32_t)v->ring_other;
	}
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

/* Whether the link to peer receives through a ring of its own: up to
 * OXR_VERBS_RINGS links, the collective partners first, other peers in
 * the order their links open, at most half. */
static int wants_ring(oxr_group *g, const struct vgroup *vg, int peer)
{
	uint32_t max = oxr_vctx(g)->rings;

	if (vg->rings >= max)
		return 0;
	return oxr_rank_is_partner(g->rank, peer, g->size) || vg->other_rings < max / 2;
}

/* v's receive side: a ring registered for remote write by its one peer
 * (least privilege: its rkey goes to that peer only), or the SRQ. */
static oxr_status_t rx_make(oxr_group *g, struct vgroup *vg, struct vlink *v)
{
	struct oxr_vctx *x = oxr_vctx(g);
	oxr_status_t st;

	if (wants_ring(g, vg, v->peer)) {
		v->rx_slots = x->slots;
		if ((st = oxr_vpool_make(g, (size_t)v->rx_slots * v->slot,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &v->rx, &v->rx_mr,
				    "receive ring")))
			return st;
		vg->rings++;
		v->ring_other = !oxr_rank_is_partner(g->rank, v->peer, g->size);
		vg->other_rings += (uint32_t)v->ring_other;
	} else {
		v->rx_slots = x->srq_credits;
		if (!(v->rx_buf = calloc(v->rx_slots, sizeof(*v->rx_buf))))
			return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	}
	v->rx_len = calloc(v->rx_slots, sizeof(*v->rx_len));
	v->rx_rndv = calloc(v->rx_slots, 1);
	if (!v->rx_len || !v->rx_rndv)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	v->thresh = thresh(v->rx_slots);
	oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: verbs link to rank %d receives %s", g->rank,
		v->peer, v->rx ? "into a ring of its own" : "through the shared receive queue");
	return OXR_OK;
}

oxr_status_t oxr_vlink_create(oxr_group *g, int peer, struct vlink **out,
			      uint8_t offer[OXR_VOFFER_BYTES])
{
	struct oxr_vdev *d = dev(g);
	struct oxr_vctx *x = oxr_vctx(g);
	struct vgroup *vg = NULL;
	struct vlink *v;
	uint32_t psn;
	oxr_status_t st;

	if ((st = oxr_vgroup_get(g, &vg)))
		return st;
	v = calloc(1, sizeof(*v));
	if (!v)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	v->peer = peer;
	v->slot = x->slot_bytes;
	v->sq_depth = oxr_vstream_sq_depth(x);
	if ((st = rx_make(g, vg, v)) ||
	    (!(v->stq = calloc(v->sq_depth, sizeof(*v->stq))) &&
	     (st = oxr_err(OXR_ERR_NOMEM, "verbs: out of memory")))) {
		vlink_free(g, v);
		return st;
	}
	v->dsge.lkey = vg->st_mr->lkey;
	v->dwr.sg_list = &v->dsge;
	v->dwr.num_sge = 1;
	v->sig_every = SIG_EVERY < v->sq_depth / 2 ? SIG_EVERY : v->sq_depth / 2;
	/* what a peer may do on this QP; its MRs still decide where: a ring
	 * takes writes, a rendezvous piece (one message) takes reads */
	if ((st = oxr_vqp_create_on(g, v->sq_depth, 0, 1,
			    IBV_ACCESS_REMOTE_READ | (v->rx ? IBV_ACCESS_REMOTE_WRITE : 0), &v->qp,
			    &v->max_inline))) {
		vlink_free(g, v);
		return st;
	}
	if (oxr_vqtab_add(vg, v->qp->qp_num, v)) {
		vlink_free(g, v);
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	}
	v->pending = 1;
	v->pend_next = vg->pending;
	vg->pending = v;
	v->psn = psn = oxr_vpsn();
	memset(offer, 0, OXR_VOFFER_BYTES);
	put_u32(offer, OFFER_MAGIC);
	put_u32(offer + 4, v->qp->qp_num);
	put_u32(offer + 8, psn);
	put_u32(offer + 12, d->lid);
	memcpy(offer + 16, d->gid.raw, 16);
	put_u64(offer + 32, (uintptr_t)v->rx);
	put_u32(offer + 40, v->rx ? v->rx_mr->rkey : 0);
	put_u32(offer + 44, v->rx_slots);
	put_u32(offer + 48, v->slot);
	put_u32(offer + 52, (uint32_t)d->mtu);
	put_u32(offer + 56, (uint32_t)d->link_layer);
	put_u32(offer + 60, (x->cm ? OFFER_CM : 0) | (v->rx ? 0 : OFFER_SHARED));
	*out = v;
	return OXR_OK;
}

oxr_status_t oxr_vlink_take_offer(oxr_group *g, struct vlink *v,
				  const uint8_t offer[OXR_VOFFER_BYTES])
{
	struct oxr_vdev *d = dev(g);
	uint32_t qpn = get_u32(offer + 4), psn = get_u32(offer + 8), mtu = get_u32(offer + 52);
	uint32_t n = get_u32(offer + 44), flags = get_u32(offer + 60);
	int cm = !!(flags & OFFER_CM);

	if (get_u32(offer) != OFFER_MAGIC)
		return oxr_err(OXR_ERR_PROTO, "verbs: rank %d sent a malformed QP offer", v->peer);
	if (get_u32(offer + 48) != v->slot)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d uses slots of %u bytes, this rank %u: "
			       "set OXR_VERBS_SLOT_BYTES alike on every rank", v->peer,
			       get_u32(offer + 48), v->slot);
	/* our send queue holds the peer's credits and SQ_EXTRA more */
	if (n == 0 || n > v->sq_depth - SQ_EXTRA)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d gives %u credits, this rank takes "
			       "1..%u: set OXR_VERBS_SLOTS and OXR_VERBS_SRQ_CREDITS alike on every "
			       "rank", v->peer, n, v->sq_depth - SQ_EXTRA);
	if (get_u32(offer + 56) != (uint32_t)d->link_layer)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d is on another link layer (%u, this "
			       "rank %d)", v->peer, get_u32(offer + 56), d->link_layer);
	if (qpn > 0xffffff || psn > 0xffffff || mtu < IBV_MTU_256 || mtu > IBV_MTU_4096 ||
	    (flags & ~(OFFER_CM | OFFER_SHARED)))
		return oxr_err(OXR_ERR_PROTO, "verbs: rank %d sent an offer out of range "
			       "(qpn %u, psn %u, mtu %u, flags 0x%x)", v->peer, qpn, psn, mtu, flags);
	if (cm != oxr_vctx(g)->cm)
		return oxr_err(OXR_ERR_INVAL, "verbs: rank %d sets up QPs %s, this rank %s: set "
			       "OXR_VERBS_CM alike on every rank", v->peer,
			       cm ? "by rdma_cm" : "over tcp", oxr_vctx(g)->cm ? "by rdma_cm" : "over tcp");
	v->addr.lid = get_u32(offer + 12) & 0xffff;
	memcpy(v->addr.gid, offer + 16, 16);
	v->addr.mtu = mtu;
	v->tx_srq = !!(flags & OFFER_SHARED);
	v->raddr = v->tx_srq ? 0 : get_u64(offer + 32);
	v->rkey = v->tx_srq ? 0 : get_u32(offer + 40);
	v->dwr.opcode = v->tx_srq ? IBV_WR_SEND_WITH_IMM : IBV_WR_RDMA_WRITE_WITH_IMM;
	v->tx_slots = v->credits = n;
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
	a.min_rnr_timer = 12; /* 0.64 ms until a retry: the SRQ was out of buffers */
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
	/* the SRQ is shared: a shortage is a wait (7: retry for ever), the
	 * credits keep it rare; a dead peer still fails by timeout x retry */
	a.rnr_retry = 7;
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

/* Posts len > 0 bytes at src into the peer's next ring slot, or its SRQ.
 * src is staging slot st, or, for a WR that goes inline (st may be -1),
 * any memory: the provider copies inline bytes into the WR as it is
 * posted, so they need no registration and no staging copy, and nothing
 * waits for this WR's completion (the staging slot, if used, is free again
 * at once).  A staging slot that goes out is the link's until its WR
 * completes (stq: completions come in posting order). */
/* RC completes in posting order: the FIFO's head is the oldest WR's slot */
static void stq_push(struct vlink *v, uint32_t slot)
{
	uint32_t at = v->stq_head + v->stq_n++;

	v->stq[at >= v->sq_depth ? at - v->sq_depth : at] = slot;
}

static int post_data(oxr_group *g, struct vlink *v, const uint8_t *src, uint32_t len,
		     uint32_t flags, int st)
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
	if (post_send(v, wr, !inl)) {
		if (st >= 0)
			oxr_vstage_put(vgr(g), (uint32_t)st);
		return -1;
	}
	v->owed = 0;
	v->credits--;
	v->tx_next = NEXT_TX(v, v->tx_next);
	if (st >= 0 && inl)
		oxr_vstage_put(vgr(g), (uint32_t)st);
	else if (st >= 0)
		stq_push(v, (uint32_t)st);
	return 0;
}

/* A zero-byte SEND with immediate: credits alone (or with a FIN), no slot,
 * no credit.  Signaled (must), it is also a flush: its completion says
 * every unsignaled WR before it is done. */
static int post_credits(struct vlink *v, uint32_t flags, int must)
{
	struct ibv_send_wr wr = { 0 };

	wr.wr_id = WR_ID(v->peer, WR_CTL);
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = IBV_SEND_INLINE;
	wr.imm_data = htonl(v->owed | flags);
	if (post_send(v, &wr, must))
		return -1;
	v->owed = 0;
	return 0;
}

static int can_post(const struct vlink *v, uint32_t need_credits)
{
	return v->credits >= need_credits && v->sq_posted < v->sq_depth;
}

/* Returns freed slots on their own when no data is about to carry them. */
static void return_credits(oxr_group *g, struct link *l)
{
	struct vlink *v = vl(l);

	if (v->owed >= v->thresh && (!oxr_link_sending(l) || !v->credits) &&
	    v->sq_posted < v->sq_depth && post_credits(v, 0, 0))
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
	if (post_credits(v, IMM_FIN, 0))
		oxr_link_fail(g, l, OXR_ERR_IO, "verbs link to rank %d: posting a FIN: %s",
			      oxr_link_peer(l), strerror(errno));
}

/* Where slot i of v's receive side is: in its ring, or the SRQ buffer the
 * write landed in; and the key a READ into it takes. */
static uint8_t *rx_at(oxr_group *g, const struct vlink *v, uint32_t i)
{
	return v->rx ? v->rx + (size_t)i * v->slot : oxr_vsrq_at(vgr(g), v->rx_buf[i], v->slot);
}

static uint32_t rx_lkey(oxr_group *g, const struct vlink *v)
{
	return v->rx ? v->rx_mr->lkey : vgr(g)->srq_mr->lkey;
}

/* The head slot is read: it is free (an SRQ buffer goes back at once), and
 * the peer hears of it with the next credits. */
static void rx_pop(oxr_group *g, struct vlink *v)
{
	if (!v->rx)
		oxr_vsrq_give(g, v->rx_buf[v->rx_head]);
	v->rx_rndv[v->rx_head] = 0;
	v->rx_head = NEXT_RX(v, v->rx_head);
	v->rx_ready--;
	v->rx_off = 0;
	v->owed++;
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
	uint8_t *slot = rx_at(g, v, v->rx_head);
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
								     : rx_lkey(g, v), v->rd_k)) {
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
		rx_pop(g, v);
		v->rd_have = 0;
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
		memcpy((uint8_t *)buf + got, rx_at(g, v, v->rx_head) + v->rx_off, k);
		got += k;
		v->rx_off += (uint32_t)k;
		if (v->rx_off == len)
			rx_pop(g, v);
	}
	return_credits(g, l);
	if (!got && n) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)got;
}

/* Offers iov's piece at p (len bytes) by rendezvous, its descriptor
 * written in staging slot st: 1 posted, 0 not (copy it instead: memory
 * that cannot be registered is still sent; st is still the caller's), -1
 * error. */
static int rndv_send(oxr_group *g, struct vlink *v, int st, const uint8_t *p, size_t len)
{
	uint8_t *desc = oxr_vstage_at(g, (uint32_t)st);

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
	if (post_data(g, v, desc, RNDV_DESC, IMM_RNDV, st))
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
		uint8_t *dst;
		uint32_t len = 0;
		int st;
		if (i == niov - 1 && iov[i].iov_len > ioff && iov[i].iov_len - ioff <= v->max_inline) {
			/* the last piece, small: inline from where it is (a small
			 * message is one such piece) */
			len = (uint32_t)(iov[i].iov_len - ioff);
			if (post_data(g, v, (const uint8_t *)iov[i].iov_base + ioff, len, 0, -1)) {
				errno = EIO;
				return -1;
			}
			total += len;
			break;
		}
		if ((st = oxr_vstage_get(vgr(g))) < 0)
			break; /* the pool's next free slot wakes this link */
		dst = oxr_vstage_at(g, (uint32_t)st);
		if (rndv && iov[i].iov_len - ioff >= rndv) {
			int r = rndv_send(g, v, st, (const uint8_t *)iov[i].iov_base + ioff,
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
		if (!len) {
			oxr_vstage_put(vgr(g), (uint32_t)st);
			break;
		}
		if (post_data(g, v, dst, len, 0, st)) {
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

struct link *oxr_vlink_owner(oxr_group *g, struct vlink *v)
{
	struct link *l;

	if (!v || v->pending || v->peer < 0 || v->peer >= g->size)
		return NULL;
	l = oxr_link_at(g, v->peer);
	return vl(l) == v ? l : NULL;
}

int oxr_vlink_rx_shared(const struct link *l)
{
	return vl(l) && !vl(l)->rx;
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
 * empty send behind them (once the queue has room) says when they did. */
static int drained(void *arg)
{
	struct link *l = arg;
	struct vlink *v = vl(l);

	if (!oxr_link_up(l))
		return 1;
	if (v->unsig && v->sq_posted < v->sq_depth && post_credits(v, 0, 1))
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

/* A receive completion of v (from the SRQ: buffer b): data in the next
 * slot, or credits and a FIN alone.  Checked: the peer wrote it.  A ring's
 * data comes as an RDMA write with immediate (b stays unused and goes back
 * at once), the SRQ's as a SEND (b holds it until it is read), controls as
 * zero-byte SENDs. */
static void took_recv(oxr_group *g, struct link *l, struct vlink *v, const struct ibv_wc *wc,
		     int *rd, int *wr)
{
	uint32_t imm = ntohl(wc->imm_data), back = imm & IMM_CREDITS;
	uint32_t b = (uint32_t)WR_PEER(wc->wr_id);
	int rndv = !!(imm & IMM_RNDV), fin = !!(imm & IMM_FIN), data = wc->byte_len > 0;
	int how = wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM ? 1 : wc->opcode == IBV_WC_RECV ? 2 : 0;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || !how || (how == 1 && (!v->rx || !data)) ||
	    (how == 2 && data && v->rx) || wc->byte_len > v->slot ||
	    back > v->tx_slots - v->credits || (data && v->rx_ready >= v->rx_slots) ||
	    (imm & ~(IMM_CREDITS | IMM_RNDV | IMM_FIN)) || (rndv && fin) ||
	    (rndv && wc->byte_len != RNDV_DESC) ||
	    (fin && (data || !v->sd_wait || v->sd_fin))) {
		oxr_vsrq_give(g, b);
		oxr_link_fail(g, l, OXR_ERR_PROTO, "verbs link to rank %d: the peer broke the "
			      "ring protocol (opcode %d, %u bytes, immediate 0x%x, %s)",
			      oxr_link_peer(l), (int)wc->opcode, wc->byte_len, imm,
			      v->rx ? "this side has a ring" : "this side receives through its SRQ");
		return;
	}
	v->credits += back;
	if (data && !v->rx)
		v->rx_buf[v->rx_next] = b;
	else
		oxr_vsrq_give(g, b);
	if (data) {
		v->rx_len[v->rx_next] = wc->byte_len;
		v->rx_rndv[v->rx_next] = (uint8_t)rndv;
		v->rx_next = NEXT_RX(v, v->rx_next);
		v->rx_ready++;
		*rd = 1;
	}
	if (fin)
		v->sd_fin = 1;
	*wr = back > 0 || fin;
}

static void completion(oxr_group *g, const struct ibv_wc *wc, struct link *l, int *rd, int *wr)
{
	struct vlink *v = vl(l);

	*rd = *wr = 0;
	if (wc->status != IBV_WC_SUCCESS) {
		if (WR_KIND(wc->wr_id) == WR_RECV)
			oxr_vsrq_give(g, (uint32_t)WR_PEER(wc->wr_id));
		if (wc->status != IBV_WC_WR_FLUSH_ERR || oxr_link_up(l))
			oxr_link_fail(g, l, OXR_ERR_PEER, "verbs link to rank %d (%s) failed: %s "
				      "(peer gone, or a write outside its memory)", oxr_link_peer(l),
				      oxr_link_addr(l), ibv_wc_status_str(wc->status));
		return;
	}
	switch (WR_KIND(wc->wr_id)) {
	case WR_RECV:
		took_recv(g, l, v, wc, rd, wr);
		return;
	case WR_READ:
		v->rd_done = 1;
		*rd = 1;
		break;
	case WR_DATA: /* its staging slot is free */
		if (v->stq_n) {
			oxr_vstage_put(vgr(g), v->stq[v->stq_head]);
			v->stq_head = v->stq_head + 1 == v->sq_depth ? 0 : v->stq_head + 1;
			v->stq_n--;
		}
		break;
	}
	{ /* this WR, and the unsignaled ones before it */
		uint32_t n = WR_COVERS(wc->wr_id);
		v->sq_posted -= n < v->sq_posted ? n : v->sq_posted;
		*wr = 1;
	}
}

/* A completion of a link not attached yet, kept for oxr_vlink_attached:
 * dropping it would lose the slot it says arrived (and its credits), and
 * the ring's next completion would name the wrong slot. */
static void hold_wc(struct vlink *v, const struct ibv_wc *wc)
{
	if (!v->held) {
		/* no more than the peer may send: this side wrote nothing yet,
		 * so the peer got no credits back beyond its first ones */
		v->held_cap = v->rx_slots + ctl_wrs(v->rx_slots) + RECV_BATCH;
		v->held = calloc(v->held_cap, sizeof(*v->held));
	}
	if (!v->held || v->nheld == v->held_cap)
		v->held_over = 1;
	else
		v->held[v->nheld++] = *wc;
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
		return; /* vlink_free gives the held buffers back */
	}
	for (i = 0; i < v->nheld; i++) {
		if (oxr_link_up(l))
			completion(g, &v->held[i], l, &rd, &wr);
		else if (WR_KIND(v->held[i].wr_id) == WR_RECV)
			oxr_vsrq_give(g, (uint32_t)WR_PEER(v->held[i].wr_id));
	}
	free(v->held);
	v->held = NULL;
	v->nheld = v->held_cap = 0;
	/* the slots they say arrived are read once the link is announced
	 * (oxr_link_attach reads a link with bytes buffered) */
}

/* The stream completion wc's link (-1: none now: its buffer went back),
 * or held for a link not attached yet (-2). */
static int wc_route(oxr_group *g, const struct ibv_wc *wc)
{
	struct vlink *v = oxr_vqtab_find(vgr(g), wc->qp_num);

	if (v && v->pending) {
		hold_wc(v, wc);
		return -2;
	}
	if (v && v->peer >= 0 && v->peer < g->size && vl(oxr_link_at(g, v->peer)) == v)
		return v->peer;
	if (WR_KIND(wc->wr_id) == WR_RECV) /* of a QP already gone */
		oxr_vsrq_give(g, (uint32_t)WR_PEER(wc->wr_id));
	return -1;
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
		want[i] = 0;
		if (WR_KIND(wc[i].wr_id) == WR_WIN || WR_KIND(wc[i].wr_id) == WR_WINRECV) {
			/* the window QP's: not the stream's */
			oxr_vwqp_completion(g, &wc[i]);
			peers[i] = -1;
			continue;
		}
		if ((peers[i] = wc_route(g, &wc[i])) < 0)
			continue;
		completion(g, &wc[i], oxr_link_at(g, peers[i]), &rd, &wr);
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
				peers[j] = -1;
			}
		l = oxr_link_at(g, peers[i]);
		if (oxr_link_up(l) && vl(l) && vl(l)->fin_owed)
			post_fin(g, l);
		if (w)
			oxr_link_ready(g, l, w & 1, w & 2);
	}
	if (g->pgroup && vgr(g)->st_wake)
		oxr_vgroup_wake_starved(g);
	*progress = n;
	return OXR_OK;
}
