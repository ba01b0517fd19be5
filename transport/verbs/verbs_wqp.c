/* SPDX-License-Identifier: MIT */
/*
 * The window QP: one-sided puts go on an RC QP of their own, one per link
 * and per epoch, beside the QP that carries the link's stream.
 *
 * Why a second QP: a revoke deregisters this rank's windows at once, so a
 * late write of the revoked epoch is refused by this rank's HCA and never
 * lands.  An RC QP that takes such a refusal is dead (both ends go to the
 * error state).  On the stream's QP that would kill the link, and with it
 * the revoke's flood, the reset's balls and the shrink's agreement; here it
 * kills only a window QP of the revoked epoch, which the reset replaces
 * anyway.
 *
 * Puts with a note (libfabric's fi_writedata): each side of the QP owns an
 * inbox, registered for remote write by that one peer and epoch:
 *   [u64 taken][pad to 64][BOX_SLOTS slots of 24 + OXR_VERBS_PUT_INLINE bytes]
 * A put of at most the inline size is ONE RDMA WRITE WITH IMMEDIATE of a
 * 16-byte record and the bytes into the peer's next slot;
 * the peer's completion queue hands it over, and its engine checks the
 * record (window, epoch, bounds: oxr_put_landed) before it copies the bytes
 * in and queues the note.  A larger put is an RDMA WRITE straight into the
 * window and, posted with it, the record alone into the next slot: RC
 * order lands the bytes before the record's completion.  No frame in the
 * stream, no round trip.  Record (little-endian): u32 window id, u32
 * notify, u64 offset, and for bytes in the window a u64 length; bytes that
 * follow it are the length.  The immediate says the rest (it costs no byte
 * on the wire): slot | kind << 4 | taken << 8, kind 1 bytes follow, 2 bytes
 * in the window, 3 a fence.  The epoch is the QP's: each epoch has its own
 * QP and inbox, and a record of an older QP never reaches took_record.
 * Every byte a record costs is copied, and checksummed by soft-RoCE, twice.
 *
 * Credits: the origin writes into slot (sent % slots) only while
 * sent - taken < slots.  The peer says what it took in the immediate of
 * each record it sends back (the low 24 bits of the count: the origin
 * knows the rest, taken being within `slots` of what it sent), so a ping-pong or any two-way traffic returns credits
 * with no packet of their own; a peer that only receives writes its count
 * into the origin's inbox word with an RDMA WRITE once it took half the
 * slots.  Either way its receive WRs for those slots are posted first:
 * never an RNR.
 *
 * Handshake, in the link's stream (OXR_OX_PRIVATE_WQP, LIST of 8 INT32
 * [epoch, kind, qpn, psn, inbox_hi, inbox_lo, rkey, slots << 24 | slot
 * bytes], kind 0 an offer, 1 ready): the first put of an epoch to a peer
 * creates the QP and offers it; a rank that gets an offer creates its own
 * if it has none (and offers it), connects it to the peer's and says ready.
 * A rank writes only after the peer's ready: the peer's QP is at RTR by
 * then.  An offer of the next epoch (the peer finished the reset first) is
 * held until this rank gets there; older ones are dropped.  Window creation
 * and the reset's re-keying, which every rank takes part in, open the QPs
 * (oxr_vwqp_open_all), so puts are one-sided from the first; a put that
 * finds none opens it itself and waits one round trip through the peer's
 * progress engine.
 *
 * Order: the puts of a link go on one QP, so they land in order.  A put
 * returns once its write completed (the peer's HCA acknowledged it, after
 * it placed the bytes and queued the record's completion), so what the
 * origin sends later cannot overtake it.  In a ping-pong that wait costs
 * nothing: the acknowledgement is back before the peer's answer.
 *
 * Waits on what the peer writes into this side's memory (the taken count:
 * no completion says it changed) poll, and sleep 1 ms at a time at most
 * (poll_until).
 *
 * Invariant: a byte lands in a window only through the window QP of the
 * current epoch and a registration of the window's current, unrevoked
 * epoch, or as a record's bytes that oxr_put_landed checked; a refused
 * write revokes the writer's group (the QP is dead until the reset), never
 * its link.  Per rank: 2 x (64 + BOX_SLOTS x (24 + inline)) bytes
 * registered per peer with a window QP, about 18 KiB at the defaults.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "verbs_dev.h"
#include "verbs_link.h"

enum { WQP_OFFER = 0, WQP_READY = 1 };
enum { REC_BYTES = 1, REC_DIRECT = 2, REC_FENCE = 3 };

#define BOX_SLOTS 16u      /* slots of an inbox (the credits a peer has) */
#define BOX_HEAD 64u       /* the taken word, alone on its cache line */
#define REC_HEAD 16u      /* id, notify, offset */
#define REC_DIRECT_LEN 24u /* and the length of bytes in the window */
#define WQP_SQ (BOX_SLOTS + 8u) /* records, credit writes, a direct put's bytes */
_Static_assert(WQP_SQ + BOX_SLOTS + 4 == OXR_VWQP_WRS, "the CQ counts the window QP's WRs");
#define MAX_PEER_BOX (16u << 20)
#define IMM_SHIFT 8u /* a record's immediate: slot | kind << IMM_KIND | taken << IMM_SHIFT */
#define IMM_KIND 4u
#define IMM_SLOT 0xfu
_Static_assert(BOX_SLOTS <= IMM_SLOT + 1, "a slot fits the immediate's low bits");

struct vwqp {
	struct ibv_qp *qp;          /* of epoch `epoch`; NULL between epochs */
	uint32_t epoch, psn, max_inline;
	int rts;                    /* ours is connected to the peer's */
	int peer_ready;             /* the peer's is connected to ours: writes may go */
	int dead;                   /* a write failed: the QP is in error until the epoch ends */
	enum ibv_wc_status failed;  /* how the last failed write ended */
	uint64_t posted, completed; /* send WRs, in order (RC completes them in order) */
	uint8_t *stage;             /* a direct put's bytes up to a slot are copied here */
	struct ibv_mr *stage_mr;
	uint32_t stage_len;
	/* my inbox, which the peer writes: [taken][slots] */
	uint8_t *box;
	struct ibv_mr *box_mr;
	uint32_t box_slot;          /* bytes of a slot: a record and the inline size */
	uint64_t box_taken, box_told; /* records taken here; what the peer was told */
	uint32_t rq_owed;           /* receive WRs to post again */
	int tell_owed;              /* a fence asked for the count: it goes when the SQ has room */
	/* the peer's inbox, which I write */
	uint64_t pbox;
	uint32_t pbox_rkey, pbox_slots, pbox_slot;
	uint64_t pbox_sent;
	uint64_t pbox_taken;        /* the peer's count, from its records' immediates */
	uint64_t last_bytes;        /* pbox_sent after the last record with bytes the peer copies */
	uint64_t fence_at;          /* pbox_sent after the last fence record */
	uint8_t *pstage;            /* records staged for pbox, a slot each */
	struct ibv_mr *pstage_mr;
	int held;                   /* an offer of the next epoch came early */
	uint32_t held_v[8];
};

struct wait {
	oxr_group *g;
	struct link *l;
	struct vwqp *w;
	uint64_t until;             /* completed must reach this */
};

/* [taken][slots][the source of my credit writes, 8 bytes on a line of its own] */
static size_t box_bytes(uint32_t slot) { return BOX_HEAD + (size_t)BOX_SLOTS * slot + 64; }

static uint32_t inline_size(oxr_group *g)
{
	return (uint32_t)g->ctx->params.verbs_put_inline;
}

/* A buffer of len registered with access, on the device's NUMA node. */
static oxr_status_t reg_buf(oxr_group *g, size_t len, int access, uint8_t **p, struct ibv_mr **mr)
{
	*p = oxr_vdev_alloc(&oxr_vctx(g)->dev, len);
	*mr = *p ? oxr_vreg_mr(oxr_vctx(g)->dev.pd, *p, len, access) : NULL;
	if (*mr) {
		memset(*p, 0, len);
		return OXR_OK;
	}
	if (*p)
		oxr_vdev_free(&oxr_vctx(g)->dev, *p, len);
	*p = NULL;
	return oxr_err(OXR_ERR_NOMEM, "verbs: %zu bytes for a window QP: %s (memlock limit? see "
		       "ulimit -l)", len, strerror(errno));
}

static void free_buf(oxr_group *g, size_t len, uint8_t **p, struct ibv_mr **mr)
{
	if (*mr)
		oxr_vdereg_mr(*mr);
	if (*p)
		oxr_vdev_free(&oxr_vctx(g)->dev, *p, len);
	*p = NULL;
	*mr = NULL;
}

static struct vwqp *get(oxr_group *g, struct link *l)
{
	struct vwqp **slot = oxr_vlink_wslot(vl(l)), *w = *slot;

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->stage_len = oxr_vctx(g)->slot_bytes;
	if (reg_buf(g, w->stage_len, IBV_ACCESS_LOCAL_WRITE, &w->stage, &w->stage_mr)) {
		free(w);
		return NULL;
	}
	*slot = w;
	return w;
}

/* The QP and both inboxes of the epoch go (a write in flight with them:
 * nothing reads the buffers now). */
static void close_qp(oxr_group *g, struct vwqp *w)
{
	if (w->qp)
		oxr_vqp_destroy(g, w->qp);
	w->qp = NULL;
	w->rts = w->peer_ready = w->dead = 0;
	w->posted = w->completed = 0;
	free_buf(g, box_bytes(w->box_slot), &w->box, &w->box_mr);
	free_buf(g, (size_t)w->pbox_slots * w->pbox_slot, &w->pstage, &w->pstage_mr);
	w->box_taken = w->box_told = 0;
	w->rq_owed = 0;
	w->pbox = 0;
	w->pbox_rkey = w->pbox_slots = w->pbox_slot = 0;
	w->pbox_sent = w->pbox_taken = w->last_bytes = w->fence_at = 0;
	w->tell_owed = 0;
}

void oxr_vwqp_free(oxr_group *g, struct vwqp *w)
{
	if (!w)
		return;
	close_qp(g, w);
	free_buf(g, w->stage_len, &w->stage, &w->stage_mr);
	free(w);
}

static oxr_status_t say(oxr_group *g, struct link *l, struct vwqp *w, uint32_t kind)
{
	uint64_t a = (uintptr_t)w->box;
	uint32_t v[8] = { w->epoch, kind, w->qp->qp_num, w->psn, (uint32_t)(a >> 32), (uint32_t)a,
			  w->box_mr->rkey, BOX_SLOTS << 24 | w->box_slot };

	return oxr_send_ints(g, oxr_link_peer(l), OXR_OX_PRIVATE_WQP, 8, v);
}

/* Receive WRs for the peer's records: their buffers are the inbox, so the
 * WRs carry none. */
static int post_recvs(struct link *l, struct vwqp *w, uint32_t n)
{
	struct ibv_recv_wr wr[BOX_SLOTS], *bad;
	uint32_t i;

	for (i = 0; i < n; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = WR_ID(oxr_link_peer(l), WR_WINRECV),
					      .next = i + 1 < n ? &wr[i + 1] : NULL };
	return n ? ibv_post_recv(w->qp, wr, &bad) : 0;
}

/* The receive WRs owed for slots taken since the last batch, posted. */
static oxr_status_t give_back_recvs(struct link *l, struct vwqp *w)
{
	if (w->rq_owed && post_recvs(l, w, w->rq_owed))
		return oxr_err(OXR_ERR_IO, "verbs: receive WRs of a window QP: %s", strerror(errno));
	w->rq_owed = 0;
	return OXR_OK;
}

/* This epoch's QP and inbox, created (INIT) and offered to the peer. */
static oxr_status_t open_qp(oxr_group *g, struct link *l, struct vwqp *w)
{
	oxr_status_t st;

	close_qp(g, w);
	w->box_slot = (REC_DIRECT_LEN + inline_size(g) + 7u) & ~7u;
	if ((st = reg_buf(g, box_bytes(w->box_slot), IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE, &w->box, &w->box_mr)))
		return st;
	/* remote write only: it is the windows' and the inbox's way in, and
	 * nothing else's */
	if ((st = oxr_vqp_create(g, WQP_SQ, BOX_SLOTS, IBV_ACCESS_REMOTE_WRITE, &w->qp,
				 &w->max_inline)))
		return st;
	if (post_recvs(l, w, BOX_SLOTS)) {
		st = oxr_err(OXR_ERR_IO, "verbs: receive WRs of a window QP: %s", strerror(errno));
		close_qp(g, w);
		return st;
	}
	w->epoch = g->epoch;
	w->psn = oxr_vpsn();
	return say(g, l, w, WQP_OFFER);
}

/* The peer's inbox, from its offer (checked: it came from the network). */
static oxr_status_t take_box(oxr_group *g, struct link *l, struct vwqp *w, const uint32_t v[8])
{
	uint32_t slots = v[7] >> 24, slot = v[7] & 0xffffffu;

	/* the slot a record goes to is its count modulo the slots: both sides
	 * must count alike */
	if (slots != BOX_SLOTS || slot < REC_DIRECT_LEN || slot % 8 || (size_t)slots * slot > MAX_PEER_BOX)
		return oxr_err(OXR_ERR_PROTO, "rank %d offered a window QP inbox of %u slots of %u "
			       "bytes (this oxr takes %u slots of at most %u)", oxr_link_peer(l),
			       slots, slot, BOX_SLOTS, MAX_PEER_BOX / BOX_SLOTS);
	free_buf(g, (size_t)w->pbox_slots * w->pbox_slot, &w->pstage, &w->pstage_mr);
	w->pbox = (uint64_t)v[4] << 32 | v[5];
	w->pbox_rkey = v[6];
	w->pbox_slots = slots;
	w->pbox_slot = slot;
	w->pbox_sent = w->pbox_taken = w->last_bytes = w->fence_at = 0;
	return reg_buf(g, (size_t)slots * slot, IBV_ACCESS_LOCAL_WRITE, &w->pstage, &w->pstage_mr);
}

oxr_status_t oxr_vwqp_frame(oxr_group *g, struct link *l, const uint32_t v[8])
{
	uint32_t epoch = v[0], kind = v[1], qpn = v[2], psn = v[3];
	struct vwqp *w;
	oxr_status_t st;

	if (!vl(l))
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a window QP frame on a link verbs "
			       "does not carry", oxr_link_peer(l));
	if (kind > WQP_READY || qpn > 0xffffff || psn > 0xffffff)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed window QP frame (kind %u, "
			       "qpn %u, psn %u)", oxr_link_peer(l), kind, qpn, psn);
	if (!(w = get(g, l)))
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory for a window QP");
	if (kind == WQP_OFFER && epoch == g->epoch + 1) {
		w->held = 1;
		memcpy(w->held_v, v, sizeof(w->held_v));
		return OXR_OK;
	}
	if (epoch != g->epoch) {
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: a window QP frame of epoch %u from rank %d "
			"dropped (this rank is at %u)", g->rank, epoch, oxr_link_peer(l), g->epoch);
		return OXR_OK;
	}
	if (kind == WQP_READY) {
		if (!w->qp || w->epoch != epoch || !w->rts)
			return oxr_err(OXR_ERR_PROTO, "rank %d said its window QP was ready before "
				       "it was offered one", oxr_link_peer(l));
		w->peer_ready = 1;
		return OXR_OK;
	}
	if (w->qp && w->epoch == epoch && w->rts)
		return oxr_err(OXR_ERR_PROTO, "rank %d offered a second window QP in epoch %u",
			       oxr_link_peer(l), epoch);
	if ((!w->qp || w->epoch != epoch) && (st = open_qp(g, l, w)))
		return st;
	if ((st = take_box(g, l, w, v)) ||
	    (st = oxr_vqp_connect(g, w->qp, oxr_link_peer(l), oxr_vlink_peer(vl(l)), qpn, psn,
				  w->psn)))
		return st;
	w->rts = 1;
	return say(g, l, w, WQP_READY);
}

/* The i-th used rank's link, if puts to it go by RDMA: the loops below
 * walk the links there are, not all P ranks. */
static struct link *rdma_link(oxr_group *g, int i)
{
	struct link *l = oxr_link_used(g, i);

	return oxr_link_peer(l) != g->rank && oxr_link_up(l) && oxr_link_is_auth(l) && vl(l) ? l
													 : NULL;
}

oxr_status_t oxr_vwqp_open_all(oxr_group *g)
{
	oxr_status_t st = OXR_OK;
	struct link *l;
	struct vwqp *w;
	int i;

	for (i = 0; i < oxr_links_used(g) && st == OXR_OK; i++) {
		if (!(l = rdma_link(g, i)))
			continue;
		if (!(w = get(g, l)))
			return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory for a window QP");
		if (!w->qp || w->epoch != g->epoch)
			st = open_qp(g, l, w);
	}
	return st;
}

int oxr_vwqp_all_ready(oxr_group *g)
{
	struct link *l;
	struct vwqp *w;
	int i;

	for (i = 0; i < oxr_links_used(g); i++) {
		if (!(l = rdma_link(g, i)))
			continue;
		/* none on a link that never carried a put (new_epoch) */
		if (!(w = *oxr_vlink_wslot(vl(l))))
			continue;
		if (!w->qp || w->epoch != g->epoch || !(w->rts && w->peer_ready))
			return 0;
	}
	return 1;
}

/* A window QP is made again only where one was: a link that never carried
 * a put gets none (its first put makes it, ready()). */
void oxr_vwqp_new_epoch(oxr_group *g)
{
	int i;

	for (i = 0; i < oxr_links_used(g); i++) {
		struct link *l = oxr_link_used(g, i);
		struct vwqp *w = vl(l) ? *oxr_vlink_wslot(vl(l)) : NULL;
		oxr_status_t st = OXR_OK;
		if (!w)
			continue;
		close_qp(g, w);
		if (w->held && w->held_v[0] == g->epoch && oxr_link_up(l))
			st = oxr_vwqp_frame(g, l, w->held_v);
		else if (oxr_link_up(l) && oxr_link_is_auth(l))
			st = open_qp(g, l, w);
		w->held = 0;
		if (st)
			oxr_link_fail(g, l, OXR_ERR_IO, "verbs link to rank %d: its window QP: %s",
				      oxr_link_peer(l), oxr_errmsg());
	}
}

int oxr_vwqp_busy(const struct vlink *v)
{
	const struct vwqp *w = *oxr_vlink_wslot((struct vlink *)v);

	return w && w->qp && w->posted != w->completed;
}

/* The window QP a completion is for: the rank in its wr_id first, the
 * used links only if a shrink renumbered the group since it was posted. */
static struct vwqp *wqp_of(oxr_group *g, const struct ibv_wc *wc, int *peer)
{
	int hint = WR_PEER(wc->wr_id), i;

	for (i = -1; i < oxr_links_used(g); i++) {
		struct link *l = i < 0 ? (hint >= 0 && hint < g->size ? oxr_link_at(g, hint) : NULL)
				       : oxr_link_used(g, i);
		struct vwqp *w;
		if (!l || !vl(l))
			continue;
		w = *oxr_vlink_wslot(vl(l));
		if (w && w->qp && w->qp->qp_num == wc->qp_num) {
			*peer = oxr_link_peer(l);
			return w;
		}
	}
	return NULL; /* of a QP already gone */
}

static uint32_t ld32(const uint8_t *p) { return oxr_load32(p, OXR_ORDER_LITTLE); }
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p + 4) << 32 | ld32(p); }

static void st64(uint8_t *p, uint64_t v)
{
	oxr_store32(p, (uint32_t)v, OXR_ORDER_LITTLE);
	oxr_store32(p + 4, (uint32_t)(v >> 32), OXR_ORDER_LITTLE);
}

/* Tells the peer how many of its records this side took (an RDMA WRITE
 * into its inbox's first word), once half the slots are free again, or at
 * once when it asked (force: a fence). */
static oxr_status_t tell_taken(struct link *l, struct vwqp *w, int force)
{
	uint8_t *src = w->box + box_bytes(w->box_slot) - 64;
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = 8, .lkey = w->box_mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	if (force)
		w->tell_owed = 1;
	if ((!w->tell_owed && w->box_taken - w->box_told < BOX_SLOTS / 2) ||
	    w->posted - w->completed >= WQP_SQ)
		return OXR_OK; /* an owed one goes with the next completion */
	/* every slot it may fill again has its receive WR first: never an RNR */
	if (give_back_recvs(l, w))
		return OXR_ERR_IO;
	/* counts only grow: a later one read in its place says no less */
	st64(src, w->box_taken);
	wr.wr_id = WR_ID(oxr_link_peer(l), WR_WIN);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED | (w->max_inline >= 8 ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr = w->pbox;
	wr.wr.rdma.rkey = w->pbox_rkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_send(w->qp, &wr, &bad))
		return oxr_err(OXR_ERR_IO, "verbs: returning put credits to rank %d: %s",
			       oxr_link_peer(l), strerror(errno));
	w->posted++;
	w->box_told = w->box_taken;
	w->tell_owed = 0;
	return OXR_OK;
}

/* A record arrived in my inbox: checked, landed, its slot freed. */
static void took_record(oxr_group *g, struct link *l, struct vwqp *w, const struct ibv_wc *wc)
{
	uint32_t imm = ntohl(wc->imm_data), k = imm & IMM_SLOT, kind = imm >> IMM_KIND & 3u;
	const uint8_t *r;
	struct oxr_put_note n;
	uint64_t t;

	if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || k != w->box_taken % BOX_SLOTS ||
	    wc->byte_len < REC_HEAD || wc->byte_len > w->box_slot) {
		oxr_link_fail(g, l, OXR_ERR_PROTO, "verbs link to rank %d: the peer broke the put "
			      "inbox protocol (opcode %d, slot %u, %u bytes)", oxr_link_peer(l),
			      (int)wc->opcode, k, wc->byte_len);
		return;
	}
	/* what the peer took of mine: the one count within `slots` below what
	 * I sent whose low bits these are (a lie hurts only the liar's inbox) */
	t = (w->pbox_sent - (imm >> IMM_SHIFT)) & (UINT32_MAX >> IMM_SHIFT);
	if (t <= w->pbox_sent && w->pbox_sent - t > w->pbox_taken)
		w->pbox_taken = w->pbox_sent - t;
	r = w->box + BOX_HEAD + (size_t)k * w->box_slot;
	n = (struct oxr_put_note){ .id = ld32(r), .epoch = w->epoch, .value = ld32(r + 4),
				   .offset = ld64(r + 8) };
	if (kind == REC_BYTES)
		oxr_put_landed(g, l, &n, wc->byte_len - REC_HEAD, r + REC_HEAD, 1);
	else if (kind == REC_DIRECT && wc->byte_len == REC_DIRECT_LEN)
		oxr_put_landed(g, l, &n, ld64(r + REC_HEAD), NULL, 1);
	else if (kind != REC_FENCE || wc->byte_len != REC_HEAD)
		oxr_put_refused(g, l, n.id, "malformed put record");
	w->box_taken++;
	/* receive WRs go back a batch at a time, and all before the peer hears
	 * of the free slots (tell_taken) */
	if (++w->rq_owed >= BOX_SLOTS / 4 && give_back_recvs(l, w)) {
		oxr_link_fail(g, l, OXR_ERR_IO, "%s", oxr_errmsg());
		return;
	}
	if (tell_taken(l, w, kind == REC_FENCE))
		oxr_link_fail(g, l, OXR_ERR_IO, "%s", oxr_errmsg());
}

void oxr_vwqp_completion(oxr_group *g, const struct ibv_wc *wc)
{
	int p;
	struct vwqp *w = wqp_of(g, wc, &p);
	struct link *l;

	if (!w)
		return;
	l = oxr_link_at(g, p);
	if (WR_KIND(wc->wr_id) == WR_WINRECV) {
		if (wc->status == IBV_WC_SUCCESS)
			took_record(g, l, w, wc);
		return; /* a flushed receive: the QP is going, the send side says why */
	}
	w->completed++;
	if (w->tell_owed && wc->status == IBV_WC_SUCCESS && tell_taken(l, w, 0))
		oxr_link_fail(g, l, OXR_ERR_IO, "%s", oxr_errmsg());
	if (wc->status != IBV_WC_SUCCESS) {
		w->dead = 1;
		w->failed = wc->status;
		/* a refusal: the peer revoked this epoch (its windows are deregistered),
		 * or the write missed the window.  Either way no put to it can go until
		 * a new QP, which takes a reset: the group is revoked here, and the
		 * link goes on.  Other errors (a dead peer) the link's socket tells. */
		if (wc->status == IBV_WC_REM_ACCESS_ERR && !oxr_group_revoked(g, NULL))
			oxr_revoke_local(g, -1, g->rank, "rank %d's HCA refused a one-sided write "
					 "into its window (%s): it revoked epoch %u, or the write "
					 "missed the window; oxr_group_reset makes puts work again", p,
					 ibv_wc_status_str(wc->status), g->epoch);
	}
}

static int usable(void *arg)
{
	struct wait *x = arg;

	return !oxr_link_up(x->l) || oxr_group_revoked(x->g, NULL) || x->w->dead || !x->w->qp ||
	       (x->w->rts && x->w->peer_ready);
}

static int written(void *arg)
{
	struct wait *x = arg;

	return !oxr_link_up(x->l) || oxr_group_revoked(x->g, NULL) || x->w->dead ||
	       x->w->completed >= x->until;
}

/* How many of my records the peer took: what it last wrote into my inbox,
 * or said in a record's immediate, whichever is more. */
static uint64_t peer_taken(const struct vwqp *w)
{
	uint8_t t[8];
	uint64_t v;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	memcpy(t, w->box, 8);
	v = ld64(t);
	return v > w->pbox_taken ? v : w->pbox_taken;
}

static int stopped(const struct wait *x)
{
	return !oxr_link_up(x->l) || oxr_group_revoked(x->g, NULL) || x->w->dead;
}

/* A slot of the peer's inbox is free, and the send queue has room. */
static int have_slot(void *arg)
{
	struct wait *x = arg;

	return stopped(x) || (x->w->pbox_sent - peer_taken(x->w) < x->w->pbox_slots &&
			      x->w->posted - x->w->completed < WQP_SQ - 2);
}

/* The peer took every record up to x->until. */
static int taken(void *arg)
{
	struct wait *x = arg;

	return stopped(x) || peer_taken(x->w) >= x->until;
}

/* Why the wait ended, if not with success. */
static oxr_status_t wait_err(struct wait *x, const char *what)
{
	if (!oxr_link_up(x->l)) {
		oxr_err_keep(oxr_link_error(x->l));
		return oxr_link_err(x->l) ? oxr_link_err(x->l) : OXR_ERR_PEER;
	}
	if (oxr_group_revoked(x->g, NULL))
		return oxr_revoked_err(x->g, what);
	return oxr_err(OXR_ERR_IO, "%s to rank %d: %s", what, oxr_link_peer(x->l),
		       x->w->qp ? ibv_wc_status_str(x->w->failed) : "the window QP went");
}

/* The window QP of this epoch, connected both ways, or why not. */
static oxr_status_t ready(oxr_group *g, struct link *l, struct vwqp *w)
{
	struct wait x = { g, l, w, 0 };
	oxr_status_t st;

	if (!w)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory for a window QP");
	if ((!w->qp || w->epoch != g->epoch) && (st = open_qp(g, l, w)))
		return st;
	if (!(w->rts && w->peer_ready) && (st = oxr_progress_until(g, usable, &x, -1)))
		return st;
	if (!w->qp || w->dead || !(w->rts && w->peer_ready))
		return w->dead && !oxr_group_revoked(g, NULL) && oxr_link_up(l)
			       ? oxr_err(OXR_ERR_IO, "put to rank %d: its window QP failed in this "
					 "epoch (%s); oxr_group_reset makes a new one", oxr_link_peer(l),
					 ibv_wc_status_str(w->failed))
			       : wait_err(&x, "put");
	return OXR_OK;
}

/* Posts wr (a chain); every WR of it counts as posted. */
static oxr_status_t post(struct link *l, struct vwqp *w, struct ibv_send_wr *wr, int n)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(w->qp, wr, &bad))
		return oxr_err(OXR_ERR_IO, "verbs put to rank %d: %s", oxr_link_peer(l),
			       strerror(errno));
	w->posted += (uint64_t)n;
	return OXR_OK;
}

/* The WR that writes src[0..len) to raddr/rkey: inline, through the
 * stage, or from src registered for it (*mr, to deregister after). */
static oxr_status_t data_wr(oxr_group *g, struct vwqp *w, struct ibv_send_wr *wr,
			    struct ibv_sge *sge, uint64_t raddr, uint32_t rkey, const void *src,
			    size_t len, struct ibv_mr **mr)
{
	*sge = (struct ibv_sge){ .addr = (uintptr_t)src, .length = (uint32_t)len };
	*wr = (struct ibv_send_wr){ .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				    .sg_list = sge, .num_sge = len ? 1 : 0 };
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
	*mr = NULL;
	if (len <= w->max_inline) {
		wr->send_flags |= IBV_SEND_INLINE;
	} else if (len <= w->stage_len) { /* a copy costs less than a registration */
		memcpy(w->stage, src, len);
		sge->addr = (uintptr_t)w->stage;
		sge->lkey = w->stage_mr->lkey;
	} else { /* straight from the caller's memory, registered for this write */
		*mr = oxr_vreg_mr(oxr_vctx(g)->dev.pd, (void *)(uintptr_t)src, len, 0);
		if (!*mr)
			return oxr_err(OXR_ERR_IO, "verbs put: registering %zu bytes: %s", len,
				       strerror(errno));
		sge->lkey = (*mr)->lkey;
	}
	return OXR_OK;
}

/* Waits until every WR up to `until` completed; the bytes are then the peer's. */
static oxr_status_t wait_written(oxr_group *g, struct link *l, struct vwqp *w, uint64_t until)
{
	struct wait x = { g, l, w, until };
	oxr_status_t st = oxr_progress_until(g, written, &x, -1);

	/* a revoke cancels the write: it may still go, but not land */
	if (st == OXR_OK && (w->completed < until || w->dead))
		st = wait_err(&x, "put");
	return st;
}

static oxr_status_t fence_inbox(oxr_group *g, struct link *l, struct vwqp *w);

oxr_status_t oxr_vlink_write(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			     const void *src, size_t len)
{
	struct vwqp *w = get(g, l);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	oxr_status_t st;

	if (len > 1u << 31)
		return oxr_err(OXR_ERR_INVAL, "verbs put of %zu bytes: more than 2 GiB in one put",
			       len);
	if ((st = ready(g, l, w)) || (st = fence_inbox(g, l, w)))
		return st;
	/* the stage holds one write: the one before must be done with it */
	if (w->posted != w->completed && (st = wait_written(g, l, w, w->posted)))
		return st;
	if ((st = data_wr(g, w, &wr, &sge, raddr, rkey, src, len, &mr)))
		return st;
	wr.wr_id = WR_ID(oxr_link_peer(l), WR_WIN);
	if ((st = post(l, w, &wr, 1)) == OXR_OK)
		st = wait_written(g, l, w, w->posted);
	/* done with src, or the write is cancelled: the HCA may no longer read it */
	if (mr)
		oxr_vdereg_mr(mr);
	return st;
}

/* A record into the peer's next inbox slot (a slot is free), behind
 * `first` when that is a direct put's data WR: one post. */
static oxr_status_t post_record(struct link *l, struct vwqp *w, uint32_t kind,
				const struct oxr_put_note *n, uint64_t len, const void *bytes,
				struct ibv_send_wr *first)
{
	uint32_t k = (uint32_t)(w->pbox_sent % w->pbox_slots);
	uint8_t *r = w->pstage + (size_t)k * w->pbox_slot;
	uint32_t carry = kind == REC_BYTES ? (uint32_t)len : 0;
	struct ibv_sge sge = { .addr = (uintptr_t)r, .lkey = w->pstage_mr->lkey,
			       .length = (kind == REC_DIRECT ? REC_DIRECT_LEN : REC_HEAD) + carry };
	struct ibv_send_wr rec = { .wr_id = WR_ID(oxr_link_peer(l), WR_WIN),
				   .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED, .sg_list = &sge, .num_sge = 1 };
	oxr_status_t st;

	/* the record carries what this side took of the peer's: the receive
	 * WRs of those slots go first */
	if ((st = give_back_recvs(l, w)))
		return st;
	rec.imm_data = htonl(k | kind << IMM_KIND | (uint32_t)(w->box_taken << IMM_SHIFT));
	oxr_store32(r, n->id, OXR_ORDER_LITTLE);
	oxr_store32(r + 4, n->value, OXR_ORDER_LITTLE);
	st64(r + 8, n->offset);
	if (kind == REC_DIRECT)
		st64(r + REC_HEAD, len);
	if (carry)
		memcpy(r + REC_HEAD, bytes, carry);
	if (sge.length <= w->max_inline)
		rec.send_flags |= IBV_SEND_INLINE;
	rec.wr.rdma.remote_addr = w->pbox + BOX_HEAD + (uint64_t)k * w->pbox_slot;
	rec.wr.rdma.rkey = w->pbox_rkey;
	if (first)
		first->next = &rec;
	if ((st = post(l, w, first ? first : &rec, first ? 2 : 1)))
		return st;
	w->box_told = w->box_taken;
	w->tell_owed = 0;
	w->pbox_sent++;
	if (kind == REC_BYTES)
		w->last_bytes = w->pbox_sent;
	return OXR_OK;
}

/* Waits for what the peer writes into my memory: no completion and no
 * event says it came, so this polls (a while, then 1 ms sleeps). */
static oxr_status_t poll_until(oxr_group *g, int (*done)(void *), struct wait *x)
{
	unsigned n;
	oxr_status_t st;

	for (n = 0; !done(x); n++) {
		if (g->ctx->intr && *g->ctx->intr)
			return oxr_err(OXR_ERR_INTR, "rank %d: wait interrupted", g->rank);
		if ((st = oxr_progress_once(g, n < 2000 ? 0 : 1)))
			return st;
	}
	return OXR_OK;
}

/* Waits for a free slot of the peer's inbox. */
static oxr_status_t wait_slot(oxr_group *g, struct link *l, struct vwqp *w)
{
	struct wait x = { g, l, w, 0 };
	oxr_status_t st;

	if ((st = poll_until(g, have_slot, &x)))
		return st;
	return stopped(&x) ? wait_err(&x, "put") : OXR_OK;
}

/*
 * Before a write the peer's device lands at once (a put without a note, a
 * direct put): every record whose bytes the peer copies in must be in
 * first, or that copy would land over the later write.  A fence record
 * makes the peer say what it took at once: one round trip, only when a
 * peer's puts switch from the inbox to direct writes.
 */
static oxr_status_t fence_inbox(oxr_group *g, struct link *l, struct vwqp *w)
{
	static const struct oxr_put_note none;
	struct wait x = { g, l, w, w->last_bytes };
	oxr_status_t st;

	if (peer_taken(w) >= w->last_bytes)
		return OXR_OK;
	if (w->fence_at < w->last_bytes) {
		if ((st = wait_slot(g, l, w)) || (st = post_record(l, w, REC_FENCE, &none, 0, NULL, NULL)))
			return st;
		w->fence_at = w->pbox_sent;
	}
	if ((st = poll_until(g, taken, &x)))
		return st;
	return stopped(&x) ? wait_err(&x, "put") : OXR_OK;
}

oxr_status_t oxr_vlink_put_note(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
				const void *src, size_t len, const struct oxr_put_note *n)
{
	struct vwqp *w = get(g, l);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr = NULL;
	oxr_status_t st;

	if (len > 1u << 31)
		return oxr_err(OXR_ERR_INVAL, "verbs put of %zu bytes: more than 2 GiB in one put",
			       len);
	if ((st = ready(g, l, w)))
		return st;
	if (REC_HEAD + len <= w->pbox_slot) { /* one write: the record and the bytes */
		if ((st = wait_slot(g, l, w)) || (st = post_record(l, w, REC_BYTES, n, len, src, NULL)))
			return st;
		return wait_written(g, l, w, w->posted);
	}
	/* the bytes straight into the window, the record behind them; the one
	 * stage must be free of the last direct write */
	if ((st = fence_inbox(g, l, w)) ||
	    (w->posted != w->completed && (st = wait_written(g, l, w, w->posted))) ||
	    (st = wait_slot(g, l, w)) ||
	    (st = data_wr(g, w, &wr, &sge, raddr, rkey, src, len, &mr)))
		return st;
	wr.wr_id = WR_ID(oxr_link_peer(l), WR_WIN);
	st = post_record(l, w, REC_DIRECT, n, len, NULL, &wr);
	/* the caller's bytes are read by the HCA: it waits for that */
	if (st == OXR_OK)
		st = wait_written(g, l, w, w->posted);
	if (mr)
		oxr_vdereg_mr(mr);
	return st;
}
