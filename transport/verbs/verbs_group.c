/* SPDX-License-Identifier: MIT */
/*
 * What a group's verbs links share, so that a rank's verbs resources follow
 * the links it has, not the group's size P:
 * - one completion queue, grown (ibv_resize_cq, doubling) as QPs come:
 *   room for every receive the SRQ can complete plus every QP's send queue;
 * - one shared receive queue (SRQ) of OXR_VERBS_SRQ_BUFS buffers, every
 *   one posted, a buffer going back as soon as its link has read it;
 * - one staging pool of OXR_VERBS_STAGE_SLOTS slots for what the links
 *   copy before they send it, a slot going back with its WR's completion;
 * - the stream QPs by QP number (a receive from the SRQ names no link), a
 *   hash table: O(1) a completion, where a scan was O(P);
 * - the device's async events (a QP, port or device that fails fails the
 *   links it carries).
 * Invariant: every SRQ buffer is posted, waiting in `repost`, or held by
 * exactly one link (read pending, or a completion held before its link
 * attached); every staging slot is free or in exactly one link's stq.
 * Per rank and group: (srq_bufs + stage_slots) x slot_bytes pinned, a CQ
 * of srq_bufs + L x per_qp entries for L QPs, 16 B a QP in the table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "oxr_internal.h"
#include "verbs_dev.h"
#include "verbs_group.h"

/* ---- the stream QPs by number ---- */

static uint32_t qslot(uint32_t qpn, uint32_t cap) { return (qpn * 2654435761u) & (cap - 1); }

void *oxr_vqtab_find(const struct vgroup *vg, uint32_t qpn)
{
	uint32_t i;

	if (!vg || !vg->qcap || !qpn)
		return NULL;
	for (i = qslot(qpn, vg->qcap); vg->qk[i]; i = (i + 1) & (vg->qcap - 1))
		if (vg->qk[i] == qpn)
			return vg->qv[i];
	return NULL;
}

static void qput(uint32_t *qk, void **qv, uint32_t cap, uint32_t qpn, void *v)
{
	uint32_t i = qslot(qpn, cap);

	while (qk[i])
		i = (i + 1) & (cap - 1);
	qk[i] = qpn;
	qv[i] = v;
}

int oxr_vqtab_add(struct vgroup *vg, uint32_t qpn, void *v)
{
	if (2 * (vg->qn + 1) > vg->qcap) { /* at most half full: short probes */
		uint32_t cap = vg->qcap ? 2 * vg->qcap : 16, i;
		uint32_t *qk = calloc(cap, sizeof(*qk));
		void **qv = calloc(cap, sizeof(*qv));
		if (!qk || !qv) {
			free(qk);
			free(qv);
			return -1;
		}
		for (i = 0; i < vg->qcap; i++)
			if (vg->qk[i])
				qput(qk, qv, cap, vg->qk[i], vg->qv[i]);
		free(vg->qk);
		free(vg->qv);
		vg->qk = qk;
		vg->qv = qv;
		vg->qcap = cap;
	}
	qput(vg->qk, vg->qv, vg->qcap, qpn, v);
	vg->qn++;
	return 0;
}

/* Linear probing's delete: the entries after the hole that would no longer
 * be found move back into it. */
void oxr_vqtab_del(struct vgroup *vg, uint32_t qpn)
{
	uint32_t m, i, j, k;

	if (!vg || !vg->qcap || !qpn)
		return;
	m = vg->qcap - 1;
	for (i = qslot(qpn, vg->qcap); vg->qk[i] && vg->qk[i] != qpn; i = (i + 1) & m)
		;
	if (!vg->qk[i])
		return;
	vg->qk[i] = 0;
	vg->qn--;
	for (j = (i + 1) & m; vg->qk[j]; j = (j + 1) & m) {
		k = qslot(vg->qk[j], vg->qcap);
		/* j stays if its home k lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		vg->qk[i] = vg->qk[j];
		vg->qv[i] = vg->qv[j];
		vg->qk[j] = 0;
		i = j;
	}
}

/* ---- the shared receive queue and the staging pool ---- */

uint8_t *oxr_vsrq_at(const struct vgroup *vg, uint32_t b, uint32_t slot)
{
	return vg->srq_buf + (size_t)b * slot;
}

/* Buffer b goes back to the SRQ, RECV_BATCH at a time (one provider call,
 * one lock, not one per message; nbufs >= 16 covers what waits here). */
void oxr_vsrq_give(oxr_group *g, uint32_t b)
{
	struct vgroup *vg = vgr(g);
	struct ibv_recv_wr wr[RECV_BATCH], *bad;
	struct ibv_sge sge[RECV_BATCH];
	uint32_t i, slot = oxr_vctx(g)->slot_bytes;

	if (!vg || b >= vg->nbufs)
		return;
	vg->repost[vg->nrepost++] = b;
	if (vg->nrepost < RECV_BATCH)
		return;
	for (i = 0; i < vg->nrepost; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)oxr_vsrq_at(vg, vg->repost[i], slot),
					   .length = slot, .lkey = vg->srq_mr->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = WR_ID(vg->repost[i], WR_RECV),
					      .sg_list = &sge[i], .num_sge = 1,
					      .next = i + 1 < vg->nrepost ? &wr[i + 1] : NULL };
	}
	if (ibv_post_srq_recv(vg->srq, wr, &bad))
		oxr_log(g->ctx, OXR_LOG_WARN, "verbs: posting %u receive buffers to the shared "
			"receive queue: %s (it has fewer from now on)", vg->nrepost, strerror(errno));
	vg->nrepost = 0;
}

int oxr_vstage_get(struct vgroup *vg)
{
	if (!vg->st_nfree) {
		vg->st_starved = 1;
		return -1;
	}
	return (int)vg->st_free[--vg->st_nfree];
}

void oxr_vstage_put(struct vgroup *vg, uint32_t i)
{
	if (vg->st_starved) { /* links wait for this slot: oxr_vgroup_poll wakes them */
		vg->st_starved = 0;
		vg->st_wake = 1;
	}
	vg->st_free[vg->st_nfree++] = i;
}

uint8_t *oxr_vstage_at(oxr_group *g, uint32_t i)
{
	return vgr(g)->st_buf + (size_t)i * oxr_vctx(g)->slot_bytes;
}

/* Memory the HCA touches, registered, on the device's NUMA node; a failed
 * one leaves both NULL. */
oxr_status_t oxr_vpool_make(oxr_group *g, size_t len, int access, uint8_t **buf,
			      struct ibv_mr **mr, const char *what)
{
	if (!(*buf = oxr_vdev_alloc(dev(g), len)))
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory for the %s (%zu bytes)", what, len);
	if (!(*mr = oxr_vreg_mr(dev(g)->pd, *buf, len, access))) {
		int e = errno;
		oxr_vdev_free(dev(g), *buf, len);
		*buf = NULL;
		return oxr_err(OXR_ERR_IO, "verbs: registering the %s (%zu bytes) on %s: %s "
			       "(memlock limit? ulimit -l)", what, len, dev(g)->name, strerror(e));
	}
	return OXR_OK;
}

void oxr_vpool_free(oxr_group *g, size_t len, uint8_t *buf, struct ibv_mr *mr)
{
	if (mr)
		oxr_vdereg_mr(mr);
	if (buf)
		oxr_vdev_free(dev(g), buf, len);
}

static void vgroup_free(oxr_group *g, struct vgroup *vg)
{
	size_t slot = oxr_vctx(g)->slot_bytes;

	if (vg->srq && ibv_destroy_srq(vg->srq))
		oxr_log(g->ctx, OXR_LOG_DEBUG, "verbs: ibv_destroy_srq: %s", strerror(errno));
	oxr_vpool_free(g, vg->nbufs * slot, vg->srq_buf, vg->srq_mr);
	oxr_vpool_free(g, vg->nstage * slot, vg->st_buf, vg->st_mr);
	if (vg->cq)
		ibv_destroy_cq(vg->cq);
	if (vg->ch)
		ibv_destroy_comp_channel(vg->ch);
	free(vg->st_free);
	free(vg->qk);
	free(vg->qv);
	free(vg);
}

/* The SRQ with every buffer posted, and the staging pool. */
static oxr_status_t vgroup_pools(oxr_group *g, struct vgroup *vg)
{
	struct oxr_vctx *x = oxr_vctx(g);
	struct ibv_srq_init_attr sa = { 0 };
	uint32_t i;
	oxr_status_t st;

	vg->nbufs = x->srq_bufs;
	if (dev(g)->attr.max_srq_wr > 0 && vg->nbufs > (uint32_t)dev(g)->attr.max_srq_wr) {
		oxr_log(g->ctx, OXR_LOG_WARN, "verbs: %s takes at most %d receive WRs a shared "
			"queue: OXR_VERBS_SRQ_BUFS=%u lowered to that", dev(g)->name,
			dev(g)->attr.max_srq_wr, vg->nbufs);
		vg->nbufs = (uint32_t)dev(g)->attr.max_srq_wr;
	}
	vg->nstage = x->stage_slots;
	if ((st = oxr_vpool_make(g, (size_t)vg->nbufs * x->slot_bytes, IBV_ACCESS_LOCAL_WRITE,
			    &vg->srq_buf, &vg->srq_mr, "shared receive buffers")) ||
	    (st = oxr_vpool_make(g, (size_t)vg->nstage * x->slot_bytes, IBV_ACCESS_LOCAL_WRITE,
			    &vg->st_buf, &vg->st_mr, "staging slots")))
		return st;
	if (!(vg->st_free = malloc(vg->nstage * sizeof(*vg->st_free))))
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	for (i = 0; i < vg->nstage; i++)
		vg->st_free[i] = vg->nstage - 1 - i;
	vg->st_nfree = vg->nstage;
	sa.attr.max_wr = vg->nbufs;
	sa.attr.max_sge = 1;
	if (!(vg->srq = ibv_create_srq(dev(g)->pd, &sa)))
		return oxr_err(OXR_ERR_IO, "verbs: a shared receive queue of %u WRs on %s: %s "
			       "(OXR_VERBS_SRQ_BUFS lower?)", vg->nbufs, dev(g)->name, strerror(errno));
	for (i = 0; i < vg->nbufs; i++)
		oxr_vsrq_give(g, i);
	return OXR_OK;
}

oxr_status_t oxr_vgroup_get(oxr_group *g, struct vgroup **out)
{
	struct vgroup *vg = g->pgroup;
	struct oxr_vctx *x = oxr_vctx(g);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = EPOLL_CQ };
	uint32_t sq = oxr_vstream_sq_depth(x);
	oxr_status_t st;

	if (vg) {
		*out = vg;
		return OXR_OK;
	}
	vg = calloc(1, sizeof(*vg));
	if (!vg)
		return oxr_err(OXR_ERR_NOMEM, "verbs: out of memory");
	/* a stream QP completes its sends; its receives are the SRQ's */
	vg->per_qp = (int)(sq > OXR_VWQP_WRS ? sq : OXR_VWQP_WRS);
	vg->cqe = (int)x->srq_bufs + 4 * vg->per_qp;
	if (dev(g)->attr.max_cqe > 0 && vg->cqe > dev(g)->attr.max_cqe)
		vg->cqe = dev(g)->attr.max_cqe;
	vg->ch = ibv_create_comp_channel(dev(g)->verbs);
	vg->cq = vg->ch ? ibv_create_cq(dev(g)->verbs, vg->cqe, NULL, vg->ch, 0) : NULL;
	if (!vg->cq || ibv_req_notify_cq(vg->cq, 0)) {
		int e = errno;
		vgroup_free(g, vg);
		return oxr_err(OXR_ERR_IO, "verbs: completion queue of %d entries on %s: %s "
			       "(memlock limit? see ulimit -l)", vg->cqe, dev(g)->name, strerror(e));
	}
	vg->cqe = vg->cq->cqe;
	g->pgroup = vg; /* srq_give finds it there */
	if ((st = vgroup_pools(g, vg))) {
		g->pgroup = NULL;
		vgroup_free(g, vg);
		return st;
	}
	fcntl(vg->ch->fd, F_SETFL, fcntl(vg->ch->fd, F_GETFL) | O_NONBLOCK);
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, vg->ch->fd, &ev)) {
		int e = errno;
		g->pgroup = NULL;
		vgroup_free(g, vg);
		return oxr_err(OXR_ERR_IO, "verbs: epoll_ctl: %s", strerror(e));
	}
	/* QP fatal, port down, device fatal: the device says so on its async
	 * fd, and the links fail at once instead of after the QP's retries */
	fcntl(dev(g)->verbs->async_fd, F_SETFL, fcntl(dev(g)->verbs->async_fd, F_GETFL) | O_NONBLOCK);
	ev.data.u32 = EPOLL_ASYNC;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, dev(g)->verbs->async_fd, &ev) && errno != EEXIST)
		oxr_log(g->ctx, OXR_LOG_WARN, "verbs: watching %s's async events: %s (a port that "
			"goes down is then noticed by the QP's retries)", dev(g)->name, strerror(errno));
	*out = vg;
	return OXR_OK;
}

/* Room on the CQ for one more QP, grown (doubled) when it has none. */
static oxr_status_t cq_reserve(oxr_group *g, struct vgroup *vg)
{
	int need = (int)vg->nbufs + (vg->nqp + 1) * vg->per_qp, want = need;

	if (need <= vg->cqe)
		return OXR_OK;
	if (want < 2 * vg->cqe)
		want = 2 * vg->cqe;
	if (dev(g)->attr.max_cqe > 0 && want > dev(g)->attr.max_cqe)
		want = dev(g)->attr.max_cqe;
	if (want < need || ibv_resize_cq(vg->cq, want))
		return oxr_err(OXR_ERR_IO, "verbs: growing the completion queue to %d entries for "
			       "QP %d on %s: %s (the device allows %d; fewer links, or "
			       "OXR_VERBS_SRQ_BUFS lower)", want, vg->nqp + 1, dev(g)->name,
			       want < need ? "too many" : strerror(errno), dev(g)->attr.max_cqe);
	vg->cqe = vg->cq->cqe;
	return OXR_OK;
}

/* Every verbs link of g fails with why (the port or the device went). */
static void fail_all(oxr_group *g, const char *why)
{
	int i;

	for (i = 0; i < oxr_links_used(g); i++) {
		struct link *l = oxr_link_used(g, i);
		if (vl(l) && oxr_link_up(l))
			oxr_link_fail(g, l, OXR_ERR_PEER, "verbs link to rank %d (%s): %s",
				      oxr_link_peer(l), oxr_link_addr(l), why);
	}
}

/* The attached link whose stream QP has number qpn, or NULL. */
static struct link *link_of_qpn(oxr_group *g, uint32_t qpn)
{
	return oxr_vlink_owner(g, oxr_vqtab_find(vgr(g), qpn));
}

void oxr_vgroup_async(oxr_group *g)
{
	struct ibv_async_event ev;
	struct link *l;
	char why[160];

	while (ibv_get_async_event(dev(g)->verbs, &ev) == 0) {
		const char *what = ibv_event_type_str(ev.event_type);
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			if ((l = link_of_qpn(g, ev.element.qp->qp_num)) && oxr_link_up(l))
				oxr_link_fail(g, l, OXR_ERR_PEER, "verbs link to rank %d (%s): its QP "
					      "failed (%s)", oxr_link_peer(l), oxr_link_addr(l), what);
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
		case IBV_EVENT_SRQ_ERR:
			if (vgr(g) && ev.element.srq == vgr(g)->srq) {
				snprintf(why, sizeof(why), "the shared receive queue failed (%s)", what);
				fail_all(g, why);
			}
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
	/* links still pending go with their handshakes later: unpend finds
	 * no group then */
	vg->pending = NULL;
	if (vg->unacked)
		ibv_ack_cq_events(vg->cq, vg->unacked);
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, vg->ch->fd, NULL);
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, dev(g)->verbs->async_fd, NULL);
	g->pgroup = NULL;
	vgroup_free(g, vg);
}

void oxr_vqp_destroy(oxr_group *g, struct ibv_qp *qp)
{
	if (!qp)
		return;
	oxr_vdestroy_qp(qp);
	if (vgr(g) && vgr(g)->nqp > 0)
		vgr(g)->nqp--;
}

/* An RC QP on the group's CQ (grown for it), taking its receives from the
 * SRQ (srq) or from a queue of recv_wr of its own. */
oxr_status_t oxr_vqp_create_on(oxr_group *g, uint32_t send_wr, uint32_t recv_wr, int srq,
			      int access, struct ibv_qp **out, uint32_t *max_inline)
{
	struct oxr_vdev *d = dev(g);
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct vgroup *vg = NULL;
	struct ibv_qp *qp;
	oxr_status_t st;

	*out = NULL;
	if ((st = oxr_vgroup_get(g, &vg)) || (st = cq_reserve(g, vg)))
		return st;
	qa.send_cq = qa.recv_cq = vg->cq;
	qa.srq = srq ? vg->srq : NULL;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = srq ? 0 : recv_wr;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = d->max_inline;
	qp = oxr_vcreate_qp(d->pd, &qa);
	if (!qp)
		return oxr_err(OXR_ERR_IO, "verbs: ibv_create_qp on %s: %s", d->name, strerror(errno));
	vg->nqp++;
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = d->port;
	a.qp_access_flags = (unsigned)access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS)) {
		int e = errno;
		oxr_vqp_destroy(g, qp);
		return oxr_err(OXR_ERR_IO, "verbs: QP to INIT: %s", strerror(e));
	}
	*max_inline = qa.cap.max_inline_data;
	*out = qp;
	return OXR_OK;
}

oxr_status_t oxr_vqp_create(oxr_group *g, uint32_t send_wr, uint32_t recv_wr, int access,
			    struct ibv_qp **out, uint32_t *max_inline)
{
	return oxr_vqp_create_on(g, send_wr, recv_wr, 0, access, out, max_inline);
}

/* A staging slot came free while links waited for one: they try again. */
void oxr_vgroup_wake_starved(oxr_group *g)
{
	int i;

	vgr(g)->st_wake = 0;
	for (i = 0; i < oxr_links_used(g); i++) {
		struct link *l = oxr_link_used(g, i);
		if (vl(l) && oxr_link_up(l) && oxr_link_sending(l))
			oxr_link_ready(g, l, 0, 1);
	}
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
