/* SPDX-License-Identifier: MIT */
/*
 * The verbs provider: its ops tables over verbs_dev.c (device choice),
 * verbs_link.c (a link's stream on an RC QP), verbs_group.c (what a group's
 * links share: CQ, SRQ, staging pool), verbs_wqp.c (one-sided puts
 * on a window QP per link and epoch), verbs_cm.c (QPs connected by
 * librdmacm) and verbs_rcache.c (registrations of receive memory).
 *
 * A verbs link keeps its TCP socket open beside the QP, quiet: the only
 * thing that can make it readable is the peer's end (v_fd_event), which
 * shows at once where a QP would only notice after its retries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "oxr_internal.h"
#include "verbs_link.h"
#include "verbs_rcache.h"

static oxr_status_t v_ctx_open(oxr_ctx *c, const oxr_ctx_params *p, int required, void **pctx)
{
	struct oxr_vctx *x = calloc(1, sizeof(*x));
	oxr_status_t st;

	if (!x)
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	x->cm = p->verbs_cm;
	x->rndv = (size_t)p->verbs_rndv;
	x->slots = (uint32_t)p->verbs_slots;
	x->slot_bytes = (uint32_t)p->verbs_slot_bytes;
	x->rings = (uint32_t)p->verbs_rings;
	x->srq_bufs = (uint32_t)p->verbs_srq_bufs;
	x->srq_credits = (uint32_t)p->verbs_srq_credits;
	x->stage_slots = (uint32_t)p->verbs_stage_slots;
	x->timeout = (int)p->verbs_timeout;
	x->retry = (int)p->verbs_retry;
	x->required = required;
	st = oxr_vdev_open(p->device, (int)p->gid_index, &x->dev);
	if (st == OXR_OK &&
	    (st = oxr_rcache_create(x->dev.pd, (size_t)p->verbs_rcache_mb << 20, &x->rcache)))
		oxr_vdev_close(&x->dev);
	if (st) {
		free(x);
		return st;
	}
	oxr_log(c, OXR_LOG_INFO, "transport verbs on %s port %u (%s)", x->dev.name, x->dev.port,
		x->dev.why);
	*pctx = x;
	return OXR_OK;
}

static void v_ctx_close(void *pctx)
{
	struct oxr_vctx *x = pctx;

	if (!x)
		return;
	oxr_rcache_destroy(x->rcache);
	oxr_vdev_close(&x->dev);
	free(x);
}

static oxr_status_t v_offer(oxr_group *g, int peer, void **priv, uint8_t *offer)
{
	struct vlink *v = NULL;
	oxr_status_t st = oxr_vlink_create(g, peer, &v, offer);

	*priv = v;
	return st;
}

static oxr_status_t v_connect(oxr_group *g, void *priv, const uint8_t *theirs, int acceptor,
			      int fd, const char *addr, int64_t deadline_ms)
{
	return oxr_vctx(g)->cm ? oxr_vlink_connect_cm(g, priv, theirs, acceptor, fd, addr, deadline_ms)
			       : oxr_vlink_connect(g, priv, theirs);
}

static int v_buffered(const struct link *l)
{
	return oxr_vlink_buffered(vl(l));
}

/* The socket of a verbs link carries nothing after the upgrade, so a read
 * there is the peer's end (EOF) or a protocol error (bytes).  What its QP
 * delivered before comes first. */
static void v_fd_event(oxr_group *g, struct link *l)
{
	int n;

	(void)oxr_vgroup_poll(g, &n);
	if (!oxr_link_up(l))
		return;
	if (v_buffered(l))
		oxr_link_ready(g, l, 1, 0);
	oxr_link_quiet_socket(g, l);
}

static void v_destroy(oxr_group *g, void *priv)
{
	oxr_vlink_destroy(g, priv);
}

static void v_renumber(void *priv, int peer)
{
	oxr_vlink_renumber(priv, peer);
}

const struct oxr_link_ops oxr_verbs_link_ops = {
	.name = "verbs",
	.caps = OXR_LINK_CAP_PUT,
	.recv = oxr_vlink_recv,
	.sendv = oxr_vlink_sendv,
	.buffered = v_buffered,
	.fd_event = v_fd_event,
	.drain = oxr_vlink_drain,
	.destroy = v_destroy,
	.renumber = v_renumber,
	.attached = oxr_vlink_attached,
	.rx_shared = oxr_vlink_rx_shared,
	.put = oxr_vlink_write,
	.put_note = oxr_vlink_put_note,
};

static void v_event(oxr_group *g, uint32_t key)
{
	int got;

	if (key == EPOLL_ASYNC) {
		oxr_vgroup_async(g);
	} else if (key == EPOLL_CQ) {
		oxr_vgroup_event(g);
		(void)oxr_vgroup_poll(g, &got);
	}
}

static void *v_mem_alloc(oxr_ctx *c, size_t len)
{
	return oxr_vdev_alloc(&((struct oxr_vctx *)c->pctx)->dev, len);
}

static void v_mem_free(oxr_ctx *c, void *p, size_t len)
{
	oxr_vdev_free(&((struct oxr_vctx *)c->pctx)->dev, p, len);
}

static oxr_status_t v_win_reg(oxr_group *g, void *base, size_t len, struct oxr_prov_mr **mr,
			      uint64_t *addr, uint32_t *rkey)
{
	return oxr_vmr_reg(g, base, len, 1, mr, addr, rkey);
}

/* A window QP frame: LIST of 8 INT32 (verbs_wqp.c). */
static oxr_status_t v_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	uint32_t v[8];

	if (!oxr_link_is_auth(l))
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a window QP frame on an OpenXM link",
			       oxr_link_peer(l));
	if (!oxr_frame_ints(m->cmo, 8, 8, v))
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed window QP frame",
			       oxr_link_peer(l));
	return oxr_vwqp_frame(g, l, v);
}

static oxr_status_t v_query(oxr_device_info *out)
{
	struct oxr_vdev d;
	const char *want;
	int gid_index;
	oxr_status_t st;

	if ((st = oxr_vdev_env(&want, &gid_index)) || (st = oxr_vdev_open(want, gid_index, &d)))
		return st;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", d.name);
	snprintf(out->kind, sizeof(out->kind), "%s", d.kind);
	snprintf(out->link_layer, sizeof(out->link_layer), "%s",
		 d.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "Ethernet");
	snprintf(out->why, sizeof(out->why), "%s", d.why);
	oxr_vdev_gid_str(&d.gid, out->gid, sizeof(out->gid));
	out->port = d.port;
	out->mtu = oxr_vdev_mtu_bytes(d.mtu);
	out->max_inline = d.max_inline;
	out->lid = d.lid;
	out->numa_node = d.numa_node;
	out->gid_index = d.gid_index;
	oxr_vdev_close(&d);
	return OXR_OK;
}

const struct oxr_provider oxr_verbs_provider = {
	.name = "verbs",
	.ctx_open = v_ctx_open,
	.ctx_close = v_ctx_close,
	.offer_bytes = OXR_VOFFER_BYTES,
	.offer = v_offer,
	.connect = v_connect,
	.link_ops = &oxr_verbs_link_ops,
	.poll = oxr_vgroup_poll,
	.arm = oxr_vgroup_arm,
	.event = v_event,
	.group_free = oxr_vgroup_destroy,
	.mem_alloc = v_mem_alloc,
	.mem_free = v_mem_free,
	.win_reg = v_win_reg,
	.win_revoke = oxr_vmr_revoke,
	.win_dereg = oxr_vmr_dereg,
	.win_open = oxr_vwqp_open_all,
	.win_ready = oxr_vwqp_all_ready,
	.new_epoch = oxr_vwqp_new_epoch,
	.frame_tag = OXR_OX_PRIVATE_WQP,
	.frame = v_frame,
	.describe_all = oxr_vdev_describe_all,
	.query = v_query,
	.objects = oxr_vdev_counts,
};
