/* SPDX-License-Identifier: MIT */
/*
 * One-sided windows.  Over TCP a put is a private OX frame whose CMO is
 *   LIST [INT32 id, INT32 epoch, INT32 offset_hi, INT32 offset_lo, INT32 notify, DATUM bytes]
 * and a descriptor one with LIST [INT32 id, INT32 epoch, INT32 len_hi, INT32 len_lo].
 * The bytes go out by reference (gather send), so a put copies nothing on
 * the origin; on the target they land with one copy out of the receive path.
 *
 * Over verbs the window is a memory region registered for remote write, and
 * its descriptor adds INT32 addr_hi, addr_lo, rkey; the bytes go by RDMA
 * WRITE straight into it (the HCA refuses anything outside the region), on
 * the link's window QP (verbs_wqp.c), and once the write completed the
 * frame that follows in the stream says they landed:
 *   LIST [INT32 id, INT32 epoch, INT32 offset_hi, INT32 offset_lo, INT32 notify,
 *         INT32 len_hi, INT32 len_lo]
 * which the target accepts only from a verbs link.  Puts of at most
 * OXR_VERBS_PUT_INLINE bytes (default 256) take the first form on verbs too:
 * one write instead of two, which is most of a small put's latency.
 *
 * Order: the target sees every put land in the order they were made.  A
 * stream put is copied in when the target reads the frame, an RDMA put is
 * written by the HCA when it arrives, possibly before the target has read
 * an earlier stream put to the same bytes, which would then land second.
 * So an RDMA put that follows stream puts to the same peer first sends a
 * fence, LIST [INT32 epoch, INT32 seq, INT32 0], in the stream, and waits
 * for the target's answer, LIST [epoch, seq, 1], which the target sends
 * when it reads the fence, after every frame before it.  One round trip,
 * only when a peer's puts switch from the stream to RDMA.
 *
 * A revoke deregisters every window at once: an RDMA write of the revoked
 * epoch that comes late is refused by the HCA, and the reset registers the
 * window anew (a new rkey) for the next epoch.
 *
 * Invariant: a byte lands in a window only if the frame came over an
 * authenticated link, names a live window of this rank, carries the
 * group's current epoch, and fits inside the window; everything else is
 * refused, counted and logged, and the link goes on.  An RDMA write lands
 * only while the window's registration of the current epoch lives, which
 * ends with the first revoke this rank sees.
 */
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "link.h"
#include "provider.h"

struct oxr_win {
	oxr_win *next;
	oxr_group *g;
	uint32_t id, epoch;
	uint8_t *base;
	size_t len;
	oxr_win_note *notes; /* ring */
	size_t head, count, cap;
	uint64_t landed;
	struct oxr_prov_mr *mr; /* registered for remote write (a provider with puts) */
	uint64_t addr;
	uint32_t rkey;
};

struct rwin {
	struct rwin *next;
	int peer;
	uint32_t id, epoch;
	uint64_t len;
	int rdma;            /* the peer gave address and rkey */
	uint64_t addr;
	uint32_t rkey;
};

static oxr_win *find_win(oxr_group *g, uint32_t id)
{
	oxr_win *w;

	for (w = g->wins; w; w = w->next)
		if (w->id == id)
			return w;
	return NULL;
}

static struct rwin *find_rwin(oxr_group *g, int peer, uint32_t id)
{
	struct rwin *r;

	for (r = g->rwins; r; r = r->next)
		if (r->peer == peer && r->id == id)
			return r;
	return NULL;
}

static oxr_cmo *ints(oxr_arena *a, int n, const uint32_t *v, int extra)
{
	oxr_cmo *l = oxr_cmo_new_list(a, (uint32_t)(n + extra));
	int i;

	if (!l)
		return NULL;
	for (i = 0; i < n; i++)
		if (!(l->kids[i] = oxr_cmo_new_int32(a, (int32_t)v[i])))
			return NULL;
	return l;
}

static oxr_status_t send_private(oxr_group *g, int peer, int32_t tag, oxr_cmo *body)
{
	oxr_ox_msg m = { .tag = tag, .cmo = body };

	return body ? oxr_send(g, peer, &m) : oxr_err(OXR_ERR_NOMEM, "window: out of memory");
}

/* Built on the stack, not in g->scratch: it is also sent from inside the
 * engine, under a caller whose frame may still be in the scratch arena. */
oxr_status_t oxr_send_ints(oxr_group *g, int peer, int32_t tag, int n, const uint32_t *v)
{
	oxr_cmo k[8], *kp[8], list = { .tag = OXR_CMO_LIST, .nkids = (uint32_t)n, .kids = kp };
	oxr_ox_msg m = { .tag = tag, .cmo = &list };
	int i;

	if (n < 0 || n > 8)
		return oxr_err(OXR_ERR_INVAL, "send_ints: %d integers", n);
	for (i = 0; i < n; i++) {
		k[i] = (oxr_cmo){ .tag = OXR_CMO_INT32, .v.i32 = (int32_t)v[i] };
		kp[i] = &k[i];
	}
	return oxr_queue_internal(g, peer, &m);
}

struct all_descs {
	oxr_group *g;
	uint32_t id;
};

static int have_all_descs(void *arg)
{
	struct all_descs *x = arg;
	int p;

	for (p = 0; p < x->g->size; p++)
		if (p != x->g->rank && link_up(&x->g->links[p]) &&
		    x->g->links[p].mode == OXR_LINK_AUTH) {
			struct rwin *r = find_rwin(x->g, p, x->id);
			if (!r || r->epoch != x->g->epoch)
				return 0;
		}
	return !x->g->ctx->prov->win_ready || x->g->ctx->prov->win_ready(x->g);
}

/* The window's descriptor to every authenticated peer; the rkey goes only
 * to those whose link can put. */
static int can_put(const struct link *l)
{
	return (l->ops->caps & OXR_LINK_CAP_PUT) != 0;
}

static oxr_status_t announce(oxr_group *g, const oxr_win *w)
{
	oxr_status_t st = OXR_OK;
	int p;

	for (p = 0; p < g->size && st == OXR_OK; p++) {
		uint32_t v[7] = { w->id, g->epoch, (uint32_t)((uint64_t)w->len >> 32),
				  (uint32_t)w->len, (uint32_t)(w->addr >> 32), (uint32_t)w->addr,
				  w->rkey };
		if (p == g->rank || !link_up(&g->links[p]) || g->links[p].mode != OXR_LINK_AUTH)
			continue;
		oxr_arena_reset(g->scratch);
		st = send_private(g, p, OXR_OX_PRIVATE_WIN,
				  ints(g->scratch, can_put(&g->links[p]) && w->mr ? 7 : 4, v, 0));
	}
	return st;
}

oxr_status_t oxr_win_alloc(oxr_group *g, size_t len, void **out)
{
	void *p = NULL;

	if (!g || !out)
		return oxr_err(OXR_ERR_INVAL, "win_alloc: NULL argument");
	if (g->ctx->prov->mem_alloc) {
		p = g->ctx->prov->mem_alloc(g->ctx, len);
		if (p && len)
			memset(p, 0, len); /* hwloc's mmap is zeroed; its fallbacks need not be */
	} else if (!posix_memalign(&p, 4096, len ? len : 1))
		memset(p, 0, len);
	if (!p)
		return oxr_err(OXR_ERR_NOMEM, "win_alloc: no memory for a %zu-byte window", len);
	*out = p;
	return OXR_OK;
}

void oxr_win_free(oxr_group *g, void *p, size_t len)
{
	if (!g || !p)
		return;
	if (g->ctx->prov->mem_free)
		g->ctx->prov->mem_free(g->ctx, p, len);
	else
		free(p);
}

oxr_status_t oxr_win_create(oxr_group *g, uint32_t id, void *base, size_t len, int timeout_ms,
			    oxr_win **out)
{
	struct all_descs x = { g, id };
	oxr_win *w;
	oxr_status_t st = OXR_OK;

	if (!base && len)
		return oxr_err(OXR_ERR_INVAL, "window %u: NULL base", id);
	if (find_win(g, id))
		return oxr_err(OXR_ERR_INVAL, "window %u exists already on rank %d", id, g->rank);
	w = calloc(1, sizeof(*w));
	if (!w)
		return oxr_err(OXR_ERR_NOMEM, "window: out of memory");
	*w = (oxr_win){ .next = g->wins, .g = g, .id = id, .epoch = g->epoch, .base = base,
			.len = len };
	g->wins = w;
	if (g->ctx->prov->win_reg)
		st = g->ctx->prov->win_reg(g, base, len, &w->mr, &w->addr, &w->rkey);
	if (st == OXR_OK && g->ctx->prov->win_open)
		st = g->ctx->prov->win_open(g);
	if (st == OXR_OK)
		st = announce(g, w);
	if (st == OXR_OK)
		st = oxr_progress_until(g, have_all_descs, &x, timeout_ms);
	if (st) {
		oxr_win_destroy(w);
		return st;
	}
	*out = w;
	return OXR_OK;
}

void oxr_win_destroy(oxr_win *w)
{
	oxr_win **pp;

	if (!w)
		return;
	for (pp = &w->g->wins; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (w->mr)
		w->g->ctx->prov->win_dereg(w->mr);
	free(w->notes);
	free(w);
}

int oxr_win_remote(oxr_group *g, int peer, uint32_t id, uint64_t *addr, uint32_t *rkey)
{
	struct rwin *r = find_rwin(g, peer, id);

	if (!r || !r->rdma)
		return 0;
	*addr = r->addr;
	*rkey = r->rkey;
	return 1;
}

uint64_t oxr_win_landed(const oxr_win *w) { return w->landed; }
uint64_t oxr_group_puts_refused(const oxr_group *g) { return g->puts_refused; }

static int fence_answered(void *arg)
{
	const struct link *l = arg;

	return !link_up(l) || (int32_t)(l->fence_acked - l->fence_sent) >= 0;
}

/* Every stream put sent to peer has landed once this returns OXR_OK. */
static oxr_status_t fence(oxr_group *g, int peer)
{
	struct link *l = &g->links[peer];
	uint32_t v[3] = { g->epoch, ++l->fence_sent, 0 };
	oxr_status_t st;

	oxr_arena_reset(g->scratch);
	if ((st = send_private(g, peer, OXR_OX_PRIVATE_FENCE, ints(g->scratch, 3, v, 0))) ||
	    (st = oxr_progress_until(g, fence_answered, l, -1)))
		return st;
	if (!link_up(l)) {
		oxr_err_keep(l->errmsg);
		return l->err ? l->err : OXR_ERR_PEER;
	}
	l->puts_unfenced = 0;
	return OXR_OK;
}

/* A fence is answered when read: every frame before it is in. */
static void fence_frame(oxr_group *g, struct link *l, const oxr_cmo *c)
{
	uint32_t v[3];

	if (!oxr_frame_ints(c, 3, 3, v) || v[0] != g->epoch || v[2] > 1) {
		g->puts_refused++; /* a stale epoch's fence has nobody waiting */
		return;
	}
	if (v[2]) {
		l->fence_acked = v[1];
		return;
	}
	v[2] = 1;
	if (oxr_send_ints(g, l->peer, OXR_OX_PRIVATE_FENCE, 3, v))
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: answering rank %d's fence: %s", g->rank,
			l->peer, oxr_errmsg());
}

/* The target's window a put may go to, or an error that says why not. */
static oxr_status_t put_target(oxr_group *g, int peer, uint32_t id, uint64_t offset, size_t len,
			       struct rwin **out)
{
	struct rwin *r = peer >= 0 && peer < g->size ? find_rwin(g, peer, id) : NULL;

	if (oxr_group_stopped(g))
		return oxr_revoked_err(g, "put");
	if (!r)
		return oxr_err(OXR_ERR_INVAL, "put: rank %d has no window %u known to rank %d "
			       "(create it on both sides first)", peer, id, g->rank);
	if (r->epoch != g->epoch)
		return oxr_err(OXR_ERR_REVOKED, "put: window %u of rank %d is from epoch %u, the "
			       "group is at %u", id, peer, r->epoch, g->epoch);
	if (offset > r->len || len > r->len - offset || len > INT32_MAX)
		return oxr_err(OXR_ERR_INVAL, "put: %zu bytes at offset %llu do not fit window %u "
			       "of rank %d (%llu bytes)", len, (unsigned long long)offset, id, peer,
			       (unsigned long long)r->len);
	*out = r;
	return OXR_OK;
}

/* A one-sided write into the peer's window (an RDMA WRITE), returned once
 * the peer's side has it.  An earlier put copied in at the target (one that
 * went in the stream) must not land over it later: a fence first (see Order). */
static oxr_status_t rdma_put(oxr_group *g, int peer, const struct rwin *r, uint64_t offset,
			     const void *src, size_t len)
{
	struct link *l = &g->links[peer];
	oxr_status_t st = l->puts_unfenced ? fence(g, peer) : OXR_OK;

	return st ? st : l->ops->put(g, l, r->addr + offset, r->rkey, src, len);
}

/* A put frame in the stream: LIST [id, epoch, offset, (notify,) DATUM],
 * the DATUM over the caller's bytes (they are written from where they are). */
static oxr_status_t stream_put(oxr_group *g, int peer, const struct rwin *r, const uint32_t *v,
			       uint32_t nv, const void *src, size_t len)
{
	oxr_cmo *body, *bytes;

	oxr_arena_reset(g->scratch);
	body = ints(g->scratch, (int)nv, v, 1);
	bytes = body ? oxr_arena_alloc(g->scratch, sizeof(*bytes)) : NULL;
	if (!bytes)
		return oxr_err(OXR_ERR_NOMEM, "put: out of memory");
	*bytes = (oxr_cmo){ .tag = OXR_CMO_DATUM, .order = OXR_ORDER_HOST, .data = src, .len = len };
	body->kids[nv] = bytes;
	/* a later one-sided put must not overtake this one (see Order) */
	if (r->rdma && len)
		g->links[peer].puts_unfenced = 1;
	return send_private(g, peer, OXR_OX_PRIVATE_PUT, body);
}

oxr_status_t oxr_put(oxr_group *g, int peer, uint32_t id, uint64_t offset, const void *src,
		     size_t len, uint32_t notify)
{
	uint32_t v[5] = { id, g->epoch, (uint32_t)(offset >> 32), (uint32_t)offset, notify };
	struct rwin *r = NULL;
	oxr_status_t st = put_target(g, peer, id, offset, len, &r);

	if (st)
		return st;
	/* up to OXR_VERBS_PUT_INLINE bytes go in the stream: one write with
	 * immediate instead of a write and its notification, checked at the
	 * target before they land (what a round trip costs is the writes) */
	if (r->rdma && can_put(&g->links[peer]) && len > g->ctx->put_inline) {
		uint32_t n[7] = { id, g->epoch, (uint32_t)(offset >> 32), (uint32_t)offset, notify,
				  (uint32_t)((uint64_t)len >> 32), (uint32_t)len };

		if ((st = rdma_put(g, peer, r, offset, src, len)))
			return st;
		oxr_arena_reset(g->scratch);
		return send_private(g, peer, OXR_OX_PRIVATE_PUT, ints(g->scratch, 7, n, 0));
	}
	return stream_put(g, peer, r, v, 5, src, len);
}

oxr_status_t oxr_put_nonotify(oxr_group *g, int peer, uint32_t id, uint64_t offset, const void *src,
			   size_t len)
{
	uint32_t v[4] = { id, g->epoch, (uint32_t)(offset >> 32), (uint32_t)offset };
	struct rwin *r = NULL;
	oxr_status_t st = put_target(g, peer, id, offset, len, &r);

	if (st)
		return st;
	/* no note to carry, so never the stream: the device lands every size */
	if (r->rdma && can_put(&g->links[peer]))
		return rdma_put(g, peer, r, offset, src, len);
	return stream_put(g, peer, r, v, 4, src, len);
}

static int note_ready(void *arg)
{
	oxr_win *w = arg;

	return w->count > 0;
}

oxr_status_t oxr_win_wait(oxr_win *w, int timeout_ms, oxr_win_note *note)
{
	oxr_status_t st = oxr_progress_until(w->g, note_ready, w, timeout_ms);

	if (st)
		return st;
	*note = w->notes[w->head];
	w->head = (w->head + 1) % w->cap;
	w->count--;
	return OXR_OK;
}

static oxr_status_t add_note(oxr_win *w, const oxr_win_note *n)
{
	if (w->count == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16, i;
		oxr_win_note *nn = malloc(cap * sizeof(*nn));
		if (!nn)
			return OXR_ERR_NOMEM;
		for (i = 0; i < w->count; i++)
			nn[i] = w->notes[(w->head + i) % w->cap];
		free(w->notes);
		w->notes = nn;
		w->head = 0;
		w->cap = cap;
	}
	w->notes[(w->head + w->count++) % w->cap] = *n;
	return OXR_OK;
}

static void refuse(oxr_group *g, struct link *l, const char *why, uint32_t id)
{
	g->puts_refused++;
	oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: refused a window frame from rank %d for window %u: %s",
		g->rank, l->peer, id, why);
}

static void land_put(oxr_group *g, struct link *l, const oxr_cmo *o)
{
	uint32_t v[7];
	const oxr_cmo *bytes = NULL;
	oxr_win_note n;
	oxr_win *w;
	uint64_t off, len;
	int nonotify = 0;

	if (oxr_frame_ints(o, 6, 5, v) && o->kids[5]->tag == OXR_CMO_DATUM) {
		bytes = o->kids[5];
		len = bytes->len;
	} else if (oxr_frame_ints(o, 5, 4, v) && o->kids[4]->tag == OXR_CMO_DATUM) {
		nonotify = 1; /* oxr_put_nonotify's: it lands, and no note says so */
		bytes = o->kids[4];
		len = bytes->len;
	} else if (oxr_frame_ints(o, 7, 7, v)) {
		/* "landed by RDMA": only a link with puts can say that truthfully */
		if (!can_put(l))
			{ refuse(g, l, "an RDMA put note on a link without puts", v[0]); return; }
		len = (uint64_t)v[5] << 32 | v[6];
	} else {
		refuse(g, l, "malformed put", 0);
		return;
	}
	w = find_win(g, v[0]);
	off = (uint64_t)v[2] << 32 | v[3];
	if (!w)
		{ refuse(g, l, "no such window (destroyed?)", v[0]); return; }
	if (g->epoch_revoked)
		{ refuse(g, l, "the group is revoked", v[0]); return; }
	if (v[1] != g->epoch || w->epoch != g->epoch)
		{ refuse(g, l, "stale epoch", v[0]); return; }
	if (off > w->len || len > w->len - off)
		{ refuse(g, l, "out of bounds", v[0]); return; }
	if (bytes && len)
		memcpy(w->base + off, bytes->data, len);
	w->landed++;
	if (nonotify)
		return;
	n = (oxr_win_note){ .peer = l->peer, .value = v[4], .offset = off, .len = (size_t)len };
	if (add_note(w, &n))
		refuse(g, l, "out of memory for the notification", v[0]);
}

static void keep_desc(oxr_group *g, struct link *l, const oxr_cmo *o)
{
	uint32_t v[7] = { 0 };
	int rdma = o && o->nkids == 7 && can_put(l);
	struct rwin *r;

	if (!oxr_frame_ints(o, rdma ? 7 : 4, rdma ? 7 : 4, v))
		{ refuse(g, l, "malformed descriptor", 0); return; }
	r = find_rwin(g, l->peer, v[0]);
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			{ refuse(g, l, "out of memory", v[0]); return; }
		r->next = g->rwins;
		g->rwins = r;
	}
	r->peer = l->peer;
	r->id = v[0];
	r->epoch = v[1];
	r->len = (uint64_t)v[2] << 32 | v[3];
	r->rdma = rdma;
	r->addr = (uint64_t)v[4] << 32 | v[5];
	r->rkey = v[6];
}

void oxr_windows_revoked(oxr_group *g)
{
	oxr_win *w;

	for (w = g->wins; w; w = w->next) {
		w->head = w->count = 0;
		if (w->mr)
			g->ctx->prov->win_revoke(w->mr);
	}
}

struct rekey {
	oxr_group *g;
	oxr_win *w;
};

static int all_rekeyed(void *arg)
{
	struct rekey *x = arg;
	oxr_win *w;

	for (w = x->g->wins; w; w = w->next) {
		struct all_descs d = { x->g, w->id };
		if (!have_all_descs(&d))
			return 0;
	}
	return 1;
}

oxr_status_t oxr_windows_rekey(oxr_group *g, int timeout_ms)
{
	struct rekey x = { g, NULL };
	oxr_status_t st = OXR_OK;
	oxr_win *w;

	if (g->ctx->prov->new_epoch)
		g->ctx->prov->new_epoch(g);
	if (g->wins && g->ctx->prov->win_open)
		st = g->ctx->prov->win_open(g);
	for (w = g->wins; w && st == OXR_OK; w = w->next) {
		w->epoch = g->epoch;
		w->head = w->count = 0;
		if (w->mr) { /* a new registration: the old epoch's rkey is dead at the device */
			g->ctx->prov->win_dereg(w->mr);
			w->mr = NULL;
			st = g->ctx->prov->win_reg(g, w->base, w->len, &w->mr, &w->addr, &w->rkey);
			if (st)
				break;
		}
		st = announce(g, w);
	}
	if (st == OXR_OK)
		st = oxr_progress_until(g, all_rekeyed, &x, timeout_ms);
	return st;
}

oxr_status_t oxr_window_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	if (l->mode != OXR_LINK_AUTH)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent an oxr window frame on an OpenXM link",
			       l->peer);
	if (m->tag == OXR_OX_PRIVATE_PUT)
		land_put(g, l, m->cmo);
	else if (m->tag == OXR_OX_PRIVATE_FENCE)
		fence_frame(g, l, m->cmo);
	else
		keep_desc(g, l, m->cmo);
	return OXR_OK;
}

void oxr_windows_forget_peers(oxr_group *g)
{
	struct rwin *r, *rn;

	for (r = g->rwins; r; r = rn) {
		rn = r->next;
		free(r);
	}
	g->rwins = NULL;
}

void oxr_windows_free(oxr_group *g)
{
	while (g->wins)
		oxr_win_destroy(g->wins);
	oxr_windows_forget_peers(g);
}
