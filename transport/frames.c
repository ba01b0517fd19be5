/* SPDX-License-Identifier: MIT */
/*
 * The library's own frames in a link's stream (OX tags of the private
 * range, one CMO body each, only on authenticated links): one table from
 * tag to handler.  The reader (progress.c) hands every private frame here
 * and never queues it; the group's provider may own one tag of its own
 * (a verbs window QP's offer).  A tag nobody handles is a protocol error
 * on that link, never a crash.
 */
#include "oxr_internal.h"
#include "link.h"
#include "provider.h"

typedef oxr_status_t (*frame_fn)(oxr_group *g, struct link *l, const oxr_ox_msg *m);

/* A beat says "still here" by coming at all (the reader set last_rx); a
 * ping (INT32 1) asks for one, unless something queued will say it. */
static oxr_status_t beat(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	if (!m->cmo || (m->cmo->tag != OXR_CMO_NULL &&
			(m->cmo->tag != OXR_CMO_INT32 || m->cmo->v.i32 != 1)))
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed heartbeat", l->peer);
	if (m->cmo->tag == OXR_CMO_INT32 && !l->sq_head && oxr_beat(g, l->peer, 0))
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: answering rank %d's ping: %s", g->rank,
			l->peer, oxr_errmsg());
	return OXR_OK;
}

static const struct {
	int32_t tag;
	frame_fn fn;
} frames[] = {
	{ OXR_OX_PRIVATE_WIN, oxr_window_frame },   /* a window's descriptor */
	{ OXR_OX_PRIVATE_PUT, oxr_window_frame },   /* a put in the stream */
	{ OXR_OX_PRIVATE_REVOKE, oxr_revoke_frame },
	{ OXR_OX_PRIVATE_BYE, oxr_revoke_frame },
	{ OXR_OX_PRIVATE_RESET, oxr_reset_frame },
	{ OXR_OX_PRIVATE_SHRINK, oxr_shrink_frame },
	{ OXR_OX_PRIVATE_BEAT, beat },
};

oxr_status_t oxr_frame_dispatch(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	const struct oxr_provider *p = g->ctx->prov;
	size_t i;

	for (i = 0; i < sizeof(frames) / sizeof(frames[0]); i++)
		if (frames[i].tag == m->tag)
			return frames[i].fn(g, l, m);
	if (p->frame_tag && m->tag == p->frame_tag)
		return p->frame(g, l, m);
	return oxr_err(OXR_ERR_PROTO, "rank %d sent a private frame (tag 0x%x) this rank does "
		       "not know (a %s link; another oxr version?)", l->peer, (unsigned)m->tag,
		       l->ops->name);
}

int oxr_frame_ints(const oxr_cmo *o, uint32_t want, uint32_t n, uint32_t *v)
{
	uint32_t i;

	if (!o || o->tag != OXR_CMO_LIST || o->nkids != want || n > want)
		return 0;
	for (i = 0; i < n; i++) {
		if (!o->kids[i] || o->kids[i]->tag != OXR_CMO_INT32)
			return 0;
		v[i] = (uint32_t)o->kids[i]->v.i32;
	}
	return 1;
}
