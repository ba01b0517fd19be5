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
 * Handshake, in the link's stream (OXR_OX_PRIVATE_WQP, LIST of INT32
 * [epoch, kind, qpn, psn], kind 0 an offer, 1 ready): the first put of an
 * epoch to a peer creates the QP and offers it; a rank that gets an offer
 * creates its own if it has none (and offers it), connects it to the
 * peer's and says ready.  A rank writes only after the peer's ready: the
 * peer's QP is at RTR by then.  An offer of the next epoch (the peer
 * finished the reset first) is held until this rank gets there; older
 * ones are dropped.  Window creation and the reset's re-keying, which every
 * rank takes part in, open the QPs (oxr_vwqp_open_all), so puts are
 * one-sided from the first; a put that finds none opens it itself and
 * waits one round trip through the peer's progress engine.
 *
 * Order: a write returns only once it completed (the peer's HCA
 * acknowledged it), so the note sent after it in the stream, and anything
 * else the origin sends later, cannot overtake it.
 *
 * Invariant: a byte lands in a window only through the window QP of the
 * current epoch and a registration of the window's current, unrevoked
 * epoch; a refused write revokes the writer's group (the QP is dead until
 * the reset), never its link.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "verbs_dev.h"
#include "verbs_link.h"

enum { WQP_OFFER = 0, WQP_READY = 1 };

struct vwqp {
	struct ibv_qp *qp;          /* of epoch `epoch`; NULL between epochs */
	uint32_t epoch, psn, max_inline;
	int rts;                    /* ours is connected to the peer's */
	int peer_ready;             /* the peer's is connected to ours: writes may go */
	int posted;                 /* the write in flight (one at a time) */
	int dead;                   /* a write failed: the QP is in error until the epoch ends */
	enum ibv_wc_status failed;  /* how the last write ended */
	uint8_t *stage;             /* writes up to a slot are copied here first */
	struct ibv_mr *stage_mr;
	uint32_t stage_len;
	int held;                   /* an offer of the next epoch came early */
	uint32_t held_v[4];
};

struct wait {
	oxr_group *g;
	struct link *l;
	struct vwqp *w;
};

static struct vwqp *get(oxr_group *g, struct link *l)
{
	struct vwqp **slot = oxr_vlink_wslot(vl(l)), *w = *slot;

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->stage_len = oxr_vctx(g)->slot_bytes;
	w->stage = oxr_vdev_alloc((&oxr_vctx(g)->dev), w->stage_len);
	w->stage_mr = w->stage ? oxr_vreg_mr(oxr_vctx(g)->dev.pd, w->stage, w->stage_len,
					     IBV_ACCESS_LOCAL_WRITE)
			       : NULL;
	if (!w->stage_mr) {
		oxr_vwqp_free(g, w);
		return NULL;
	}
	*slot = w;
	return w;
}

static void close_qp(struct vwqp *w)
{
	if (w->qp)
		oxr_vdestroy_qp(w->qp); /* a write in flight goes with it: nothing reads stage now */
	w->qp = NULL;
	w->rts = w->peer_ready = w->posted = w->dead = 0;
}

void oxr_vwqp_free(oxr_group *g, struct vwqp *w)
{
	if (!w)
		return;
	close_qp(w);
	if (w->stage_mr)
		oxr_vdereg_mr(w->stage_mr);
	if (w->stage)
		oxr_vdev_free((&oxr_vctx(g)->dev), w->stage, w->stage_len);
	free(w);
}

static oxr_status_t say(oxr_group *g, struct link *l, struct vwqp *w, uint32_t kind)
{
	uint32_t v[4] = { w->epoch, kind, w->qp->qp_num, w->psn };

	return oxr_send_ints(g, oxr_link_peer(l), OXR_OX_PRIVATE_WQP, 4, v);
}

/* This epoch's QP, created (INIT) and offered to the peer. */
static oxr_status_t open_qp(oxr_group *g, struct link *l, struct vwqp *w)
{
	oxr_status_t st;

	close_qp(w);
	/* remote write only: it is the windows' way in, and nothing else's */
	if ((st = oxr_vqp_create(g, 4, 1, IBV_ACCESS_REMOTE_WRITE, &w->qp, &w->max_inline)))
		return st;
	w->epoch = g->epoch;
	w->psn = oxr_vpsn();
	return say(g, l, w, WQP_OFFER);
}

oxr_status_t oxr_vwqp_frame(oxr_group *g, struct link *l, const uint32_t v[4])
{
	uint32_t epoch = v[0], kind = v[1], qpn = v[2], psn = v[3];
	struct vwqp *w;
	oxr_status_t st;

	if (!vl(l))
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a window QP frame on a tcp link", oxr_link_peer(l));
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
	if ((st = oxr_vqp_connect(g, w->qp, oxr_link_peer(l), oxr_vlink_peer(vl(l)), qpn, psn, w->psn)))
		return st;
	w->rts = 1;
	return say(g, l, w, WQP_READY);
}

/* Rank p's link, if puts to it go by RDMA. */
static struct link *rdma_link(oxr_group *g, int p)
{
	struct link *l = oxr_link_at(g, p);

	return p != g->rank && oxr_link_up(l) && oxr_link_is_auth(l) && vl(l) ? l : NULL;
}

oxr_status_t oxr_vwqp_open_all(oxr_group *g)
{
	oxr_status_t st = OXR_OK;
	struct link *l;
	struct vwqp *w;
	int p;

	for (p = 0; p < g->size && st == OXR_OK; p++) {
		if (!(l = rdma_link(g, p)))
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
	int p;

	for (p = 0; p < g->size; p++) {
		if (!(l = rdma_link(g, p)))
			continue;
		w = *oxr_vlink_wslot(vl(l));
		if (!w || !w->qp || w->epoch != g->epoch || !(w->rts && w->peer_ready))
			return 0;
	}
	return 1;
}

void oxr_vwqp_new_epoch(oxr_group *g)
{
	int p;

	for (p = 0; p < g->size; p++) {
		struct link *l = oxr_link_at(g, p);
		struct vwqp *w = vl(l) ? *oxr_vlink_wslot(vl(l)) : NULL;
		if (!w)
			continue;
		close_qp(w);
		if (w->held && w->held_v[0] == g->epoch && oxr_link_up(l)) {
			w->held = 0;
			if (oxr_vwqp_frame(g, l, w->held_v))
				oxr_link_fail(g, l, OXR_ERR_IO, "verbs link to rank %d: its window QP: %s",
					      p, oxr_errmsg());
		}
		w->held = 0;
	}
}

/* The window QP a completion is for: the rank in its wr_id first, every
 * link only if a shrink renumbered the group since it was posted. */
static struct vwqp *wqp_of(oxr_group *g, const struct ibv_wc *wc, int *peer)
{
	int hint = WR_PEER(wc->wr_id), i;

	for (i = -1; i < g->size; i++) {
		int p = i < 0 ? hint : i;
		struct vwqp *w;
		if (p < 0 || p >= g->size || !vl(oxr_link_at(g, p)))
			continue;
		w = *oxr_vlink_wslot(vl(oxr_link_at(g, p)));
		if (w && w->qp && w->qp->qp_num == wc->qp_num) {
			*peer = p;
			return w;
		}
	}
	return NULL; /* of a QP already gone */
}

void oxr_vwqp_completion(oxr_group *g, const struct ibv_wc *wc)
{
	int p;
	struct vwqp *w = wqp_of(g, wc, &p);

	if (!w)
		return;
	w->posted = 0;
	w->failed = wc->status;
	if (wc->status == IBV_WC_SUCCESS)
		return;
	w->dead = 1;
	/* a refusal: the peer revoked this epoch (its windows are deregistered),
	 * or the write missed the window.  Either way no put to it can go until
	 * a new QP, which takes a reset: the group is revoked here, and the
	 * link goes on.  Other errors (a dead peer) the link's socket tells. */
	if (wc->status == IBV_WC_REM_ACCESS_ERR && !oxr_group_revoked(g, NULL))
		oxr_revoke_local(g, -1, g->rank, "rank %d's HCA refused a one-sided write into "
				 "its window (%s): it revoked epoch %u, or the write missed the "
				 "window; oxr_group_reset makes puts work again", p,
				 ibv_wc_status_str(wc->status), g->epoch);
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

	return !oxr_link_up(x->l) || oxr_group_revoked(x->g, NULL) || !x->w->posted;
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

oxr_status_t oxr_vlink_write(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			     const void *src, size_t len)
{
	struct vwqp *w = get(g, l);
	struct wait x = { g, l, w };
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = (uint32_t)len };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_mr *mr = NULL;
	oxr_status_t st;

	if (!w)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory for a window QP");
	if (len > 1u << 31)
		return oxr_err(OXR_ERR_INVAL, "verbs put of %zu bytes: more than 2 GiB in one put",
			       len);
	if ((!w->qp || w->epoch != g->epoch) && (st = open_qp(g, l, w)))
		return st;
	if (!(w->rts && w->peer_ready) &&
	    (st = oxr_progress_until(g, usable, &x, -1)))
		return st;
	if (!w->qp || w->dead || !(w->rts && w->peer_ready))
		return w->dead && !oxr_group_revoked(g, NULL) && oxr_link_up(l)
			       ? oxr_err(OXR_ERR_IO, "put to rank %d: its window QP failed in this "
					 "epoch (%s); oxr_group_reset makes a new one", oxr_link_peer(l),
					 ibv_wc_status_str(w->failed))
			       : wait_err(&x, "put");
	wr.wr_id = WR_ID(oxr_link_peer(l), WR_WIN);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	if (len <= w->max_inline) {
		wr.send_flags |= IBV_SEND_INLINE;
	} else if (len <= w->stage_len) { /* a copy costs less than a registration */
		memcpy(w->stage, src, len);
		sge.addr = (uintptr_t)w->stage;
		sge.lkey = w->stage_mr->lkey;
	} else { /* straight from the caller's memory, registered for this write */
		mr = oxr_vreg_mr(oxr_vctx(g)->dev.pd, (void *)(uintptr_t)src, len, 0);
		if (!mr)
			return oxr_err(OXR_ERR_IO, "verbs put: registering %zu bytes: %s", len,
				       strerror(errno));
		sge.lkey = mr->lkey;
	}
	if (ibv_post_send(w->qp, &wr, &bad)) {
		st = oxr_err(OXR_ERR_IO, "verbs put to rank %d: %s", oxr_link_peer(l), strerror(errno));
	} else {
		w->posted = 1;
		w->failed = IBV_WC_SUCCESS;
		st = oxr_progress_until(g, written, &x, -1);
		/* a revoke cancels the write: it may still go, but not land */
		if (st == OXR_OK && (w->posted || w->failed != IBV_WC_SUCCESS))
			st = wait_err(&x, "put");
	}
	/* done with src, or the write is cancelled: the HCA may no longer read it */
	if (mr)
		oxr_vdereg_mr(mr);
	return st;
}
