/* SPDX-License-Identifier: MIT */
/*
 * One-sided windows.  On a link whose provider cannot put (tcp) a put is a
 * private OX frame whose CMO is
 *   LIST [INT32 id, INT32 epoch, INT32 offset_hi, INT32 offset_lo, INT32 notify, DATUM bytes]
 * (no notify for oxr_put_nonotify) and a descriptor one with
 * LIST [INT32 id, INT32 epoch, INT32 len_hi, INT32 len_lo], or, when the
 * window is destroyed, LIST [INT32 id, INT32 epoch].  The bytes go
 * out by reference (gather send), so a put copies nothing on the origin; on
 * the target they land with one copy out of the receive path.
 *
 * On a link that can put (verbs) the window is registered for remote write
 * and its descriptor adds INT32 addr_hi, addr_lo, rkey; every put goes by
 * the provider's own path, never the stream: put (no note; the device
 * writes the bytes) or put_note (the note comes out of the target's
 * provider, which calls oxr_put_landed: one RDMA WRITE WITH IMMEDIATE,
 * verbs_wqp.c).  All of a link's puts take the one path, so they land in
 * the order they were made.
 *
 * On a shm link (a rank of this host) the window, if its memory came from
 * oxr_win_alloc, is registered with the host provider too: a put is a
 * memcpy into the peer's mapping and a note in the link's ring
 * (shm/shm_win.c).  Each link's descriptor carries the registration of the
 * provider that carries that link.
 *
 * A revoke deregisters every window at once: an RDMA write of the revoked
 * epoch that comes late is refused by the HCA, a store from a rank of this
 * host lands in pages the window no longer uses (shm_win.c), and the reset
 * registers the window anew (a new rkey) for the next epoch.  The new
 * descriptors go out on the links open, as the balls did, and the reset
 * does not wait for the peers': a put that finds its copy of the old epoch
 * waits for the new one (the peer sends it when its own reset ends).  A
 * peer's key is not asked for at the put: on verbs that would make a
 * one-sided put wait for the target's CPU.
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
#include <sys/mman.h>

#include "oxr_internal.h"
#include "agree.h"
#include "link.h"
#include "link_open.h"
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
	/* registered for remote write: [0] by the network provider, [1] the host's */
	struct {
		struct oxr_prov_mr *mr;
		uint64_t addr;
		uint32_t rkey;
	} reg[2];
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
	int i;

	for (i = 0; i < x->g->nused; i++) {
		int p = x->g->used[i];
		if (link_up(x->g->links[p]) && x->g->links[p]->mode == OXR_LINK_AUTH) {
			struct rwin *r = find_rwin(x->g, p, x->id);
			if (!r || r->epoch != x->g->epoch)
				return 0;
		}
	}
	return !x->g->ctx->prov->win_ready || x->g->ctx->prov->win_ready(x->g);
}

/* The window's descriptor to every authenticated peer; the rkey goes only
 * to those whose link can put. */
static int can_put(const struct link *l)
{
	return l->ops && (l->ops->caps & OXR_LINK_CAP_PUT) != 0;
}

/* The network provider (0) or the host's (1), NULL when it has none. */
static const struct oxr_provider *prov_at(const oxr_ctx *c, int i)
{
	return i ? c->hprov : c->prov;
}

/* Which registration serves puts over l: -1 none (the stream carries them). */
static int reg_of(const oxr_group *g, const struct link *l)
{
	if (!can_put(l))
		return -1;
	return g->ctx->hprov && l->ops == g->ctx->hprov->link_ops;
}

/* Windows' memory comes from the host provider when there is one, so
 * ranks of this host can map it. */
static const struct oxr_provider *mem_prov(const oxr_ctx *c)
{
	return c->hprov && c->hprov->mem_alloc ? c->hprov : c->prov;
}

static void regs_drop(oxr_group *g, oxr_win *w)
{
	int i;

	for (i = 0; i < 2; i++)
		if (w->reg[i].mr) {
			prov_at(g->ctx, i)->win_dereg(w->reg[i].mr);
			w->reg[i].mr = NULL;
		}
}

static oxr_status_t regs_make(oxr_group *g, oxr_win *w)
{
	oxr_status_t st = OXR_OK;
	int i;

	for (i = 0; i < 2 && st == OXR_OK; i++) {
		const struct oxr_provider *p = prov_at(g->ctx, i);
		if (p && p->win_reg)
			st = p->win_reg(g, w->base, w->len, &w->reg[i].mr, &w->reg[i].addr,
					&w->reg[i].rkey);
	}
	return st;
}

/* w's descriptor to peer p (queued: also sent from inside the engine,
 * when a link opens); the rkey only where p's link can put. */
static oxr_status_t announce_to(oxr_group *g, const oxr_win *w, int p)
{
	int i = reg_of(g, g->links[p]); /* p's link is open */
	uint64_t addr = i >= 0 ? w->reg[i].addr : 0;
	uint32_t v[7] = { w->id, g->epoch, (uint32_t)((uint64_t)w->len >> 32), (uint32_t)w->len,
			  (uint32_t)(addr >> 32), (uint32_t)addr, i >= 0 ? w->reg[i].rkey : 0 };

	return oxr_send_ints(g, p, OXR_OX_PRIVATE_WIN, i >= 0 && w->reg[i].mr ? 7 : 4, v);
}

/* To every peer linked now; a link that opens later gets it then
 * (oxr_windows_link_opened), so no descriptor goes to a peer that never
 * talks to this rank. */
static oxr_status_t announce(oxr_group *g, const oxr_win *w)
{
	oxr_status_t st = OXR_OK;
	int i;

	for (i = 0; i < g->nused && st == OXR_OK; i++) {
		int p = g->used[i];
		if (link_up(g->links[p]) && g->links[p]->mode == OXR_LINK_AUTH)
			st = announce_to(g, w, p);
	}
	return st;
}

void oxr_windows_link_opened(oxr_group *g, struct link *l)
{
	oxr_win *w;

	if (!g->wins)
		return;
	/* on verbs, the new link's window QP (the provider opens what is missing) */
	if (g->ctx->prov->win_open && g->ctx->prov->win_open(g))
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: window QP to rank %d: %s", g->rank, l->peer,
			oxr_errmsg());
	for (w = g->wins; w; w = w->next)
		if (w->epoch == g->epoch && announce_to(g, w, l->peer))
			oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: window %u to rank %d: %s", g->rank,
				w->id, l->peer, oxr_errmsg());
}

struct one_desc {
	oxr_group *g;
	int peer;
	uint32_t id;
};

/* The put that waits for it readies the window QP itself (verbs_wqp.c). */
static int have_desc(void *arg)
{
	struct one_desc *x = arg;
	struct rwin *r = find_rwin(x->g, x->peer, x->id);

	return link_gone(link_peek(x->g, x->peer)) || oxr_group_stopped(x->g) ||
	       (r && r->epoch == x->g->epoch);
}

/* The first put to a peer whose link is not open yet opens it, and waits
 * for the descriptors the peer sends a new link; the first put after a
 * reset waits for the window's new key, which the peer sends as its reset
 * ends.  Both waits are bounded by the link timeout: a peer that never made
 * the window fails the put.  Eager groups (no endpoint table) have every
 * descriptor once the window is made. */
static struct rwin *fetch_rwin(oxr_group *g, int peer, uint32_t id, int stale)
{
	struct one_desc x = { g, peer, id };

	if (stale ? link_up(link_peek(g, peer)) : g->eps && !oxr_link_want(g, peer))
		(void)oxr_progress_until(g, have_desc, &x, g->ctx->link_timeout_ms);
	return find_rwin(g, peer, id);
}

oxr_status_t oxr_win_alloc(oxr_group *g, size_t len, void **out)
{
	void *p = NULL;

	if (!g || !out)
		return oxr_err(OXR_ERR_INVAL, "win_alloc: NULL argument");
	/* zeroed without a memset: a window sized by P (the barrier's slot
	 * per sender) must not touch pages no sender writes */
	if (mem_prov(g->ctx)->mem_alloc)
		p = mem_prov(g->ctx)->mem_alloc(g->ctx, len);
	else if ((p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		p = NULL;
	if (!p)
		return oxr_err(OXR_ERR_NOMEM, "win_alloc: no memory for a %zu-byte window", len);
	*out = p;
	return OXR_OK;
}

void oxr_win_free(oxr_group *g, void *p, size_t len)
{
	if (!g || !p)
		return;
	if (mem_prov(g->ctx)->mem_free)
		mem_prov(g->ctx)->mem_free(g->ctx, p, len);
	else
		munmap(p, len ? len : 1);
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
	st = regs_make(g, w);
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

/* The peers forget w's descriptor: each window made holds one at every
 * linked peer, and collectives make a window per object (a crystal router
 * per oxr-server call), so without this the peers' lists only grew; and a
 * later window with w's id must not be taken as made before its own
 * descriptor comes.  LIST [INT32 id, INT32 epoch]. */
static void gone(oxr_group *g, const oxr_win *w)
{
	uint32_t v[2] = { w->id, w->epoch };
	int i;

	if (oxr_group_closing(g)) /* the links end: the peers drop the rank's all */
		return;
	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		if (link_up(g->links[p]) && g->links[p]->mode == OXR_LINK_AUTH)
			(void)oxr_send_ints(g, p, OXR_OX_PRIVATE_WIN, 2, v);
	}
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
	regs_drop(w->g, w);
	gone(w->g, w);
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
uint32_t oxr_windows_known(const oxr_group *g)
{
	const struct rwin *r;
	uint32_t n = 0;

	for (r = g->rwins; r; r = r->next)
		n++;
	return n;
}
uint64_t oxr_group_puts_refused(const oxr_group *g) { return g->puts_refused; }

/* The target's window a put may go to, or an error that says why not. */
static oxr_status_t put_target(oxr_group *g, int peer, uint32_t id, uint64_t offset, size_t len,
			       struct rwin **out)
{
	struct rwin *r = peer >= 0 && peer < g->size ? find_rwin(g, peer, id) : NULL;

	if (oxr_group_stopped(g))
		return oxr_revoked_err(g, "put");
	/* on demand, a link that opened after this window was made may still
	 * have the peer's descriptor on the way, and after a reset the new key
	 * comes as the peer's reset ends: wait for it */
	if ((!r || r->epoch != g->epoch) && peer >= 0 && peer < g->size && peer != g->rank) {
		r = fetch_rwin(g, peer, id, r != NULL);
		if (oxr_group_stopped(g))
			return oxr_revoked_err(g, "put");
		if ((!r || r->epoch != g->epoch) && link_down(link_peek(g, peer))) {
			oxr_err_keep(g->links[peer]->errmsg);
			return g->links[peer]->err;
		}
	}
	if (!r)
		return oxr_err(OXR_ERR_INVAL, "put: rank %d has no window %u known to rank %d "
			       "(create it on both sides first)", peer, id, g->rank);
	if (r->epoch != g->epoch)
		return oxr_err(OXR_ERR_TIMEOUT, "put: rank %d sent no key of window %u for epoch %u "
			       "within %d ms (OXR_LINK_TIMEOUT_MS; its last is of epoch %u: is it "
			       "still in the reset?)", peer, id, g->epoch, g->ctx->link_timeout_ms,
			       r->epoch);
	if (offset > r->len || len > r->len - offset || len > INT32_MAX)
		return oxr_err(OXR_ERR_INVAL, "put: %zu bytes at offset %llu do not fit window %u "
			       "of rank %d (%llu bytes)", len, (unsigned long long)offset, id, peer,
			       (unsigned long long)r->len);
	*out = r;
	return OXR_OK;
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
	if (r->rdma && can_put(link_peek(g, peer))) {
		struct link *l = g->links[peer];
		struct oxr_put_note n = { .id = id, .epoch = g->epoch, .value = notify,
					  .offset = offset };

		return l->ops->put_note(g, l, r->addr + offset, r->rkey, src, len, &n);
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
	if (r->rdma && can_put(link_peek(g, peer))) {
		struct link *l = g->links[peer];

		return l->ops->put(g, l, r->addr + offset, r->rkey, src, len);
	}
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

void oxr_put_refused(oxr_group *g, struct link *l, uint32_t id, const char *why)
{
	g->puts_refused++;
	oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: refused a window frame from rank %d for window %u: %s",
		g->rank, l->peer, id, why);
}

void oxr_put_landed(oxr_group *g, struct link *l, const struct oxr_put_note *pn, uint64_t len,
		    const void *data, int notify)
{
	oxr_win *w = find_win(g, pn->id);
	oxr_win_note n;

	if (!w)
		{ oxr_put_refused(g, l, pn->id, "no such window (destroyed?)"); return; }
	if (g->epoch_revoked)
		{ oxr_put_refused(g, l, pn->id, "the group is revoked"); return; }
	if (pn->epoch != g->epoch || w->epoch != g->epoch)
		{ oxr_put_refused(g, l, pn->id, "stale epoch"); return; }
	if (pn->offset > w->len || len > w->len - pn->offset)
		{ oxr_put_refused(g, l, pn->id, "out of bounds"); return; }
	if (data && len)
		memcpy(w->base + pn->offset, data, len);
	w->landed++;
	if (!notify) /* oxr_put_nonotify's: it lands, and no note says so */
		return;
	n = (oxr_win_note){ .peer = l->peer, .value = pn->value, .offset = pn->offset,
			    .len = (size_t)len };
	if (add_note(w, &n))
		oxr_put_refused(g, l, pn->id, "out of memory for the notification");
}

/* A put frame from the stream (a link that cannot put). */
static void land_put(oxr_group *g, struct link *l, const oxr_cmo *o)
{
	uint32_t v[5];
	const oxr_cmo *bytes;
	struct oxr_put_note pn;
	int notify = 1;

	if (oxr_frame_ints(o, 6, 5, v) && o->kids[5]->tag == OXR_CMO_DATUM) {
		bytes = o->kids[5];
	} else if (oxr_frame_ints(o, 5, 4, v) && o->kids[4]->tag == OXR_CMO_DATUM) {
		notify = 0;
		bytes = o->kids[4];
		v[4] = 0;
	} else {
		oxr_put_refused(g, l, 0, "malformed put");
		return;
	}
	pn = (struct oxr_put_note){ .id = v[0], .epoch = v[1], .value = v[4],
				    .offset = (uint64_t)v[2] << 32 | v[3] };
	oxr_put_landed(g, l, &pn, bytes->len, bytes->data, notify);
}

static void drop_rwin(oxr_group *g, int peer, uint32_t id)
{
	struct rwin **pp, *r;

	for (pp = &g->rwins; (r = *pp); pp = &r->next)
		if (r->peer == peer && r->id == id) {
			*pp = r->next;
			free(r);
			return;
		}
}

static void keep_desc(oxr_group *g, struct link *l, const oxr_cmo *o)
{
	uint32_t v[7] = { 0 };
	int rdma = o && o->nkids == 7 && can_put(l);
	struct rwin *r;

	if (o && o->nkids == 2) { /* the peer destroyed the window */
		if (!oxr_frame_ints(o, 2, 2, v))
			oxr_put_refused(g, l, 0, "malformed window end");
		else
			drop_rwin(g, l->peer, v[0]);
		return;
	}
	if (!oxr_frame_ints(o, rdma ? 7 : 4, rdma ? 7 : 4, v))
		{ oxr_put_refused(g, l, 0, "malformed descriptor"); return; }
	r = find_rwin(g, l->peer, v[0]);
	if (r && r->epoch > v[1])
		return; /* a late one of an older epoch */
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			{ oxr_put_refused(g, l, v[0], "out of memory"); return; }
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
	int i;

	for (w = g->wins; w; w = w->next) {
		w->head = w->count = 0;
		for (i = 0; i < 2; i++)
			if (w->reg[i].mr)
				prov_at(g->ctx, i)->win_revoke(w->reg[i].mr);
	}
}

/* The new descriptors go out; the peers' are not waited for (see the
 * top).  Window QPs (verbs) are made again by the provider's new_epoch
 * where they existed, and those are waited for: a put must not wait for
 * its target's CPU, and every rank of the reset waits here alike. */
static int qps_ready(void *arg)
{
	oxr_group *g = arg;

	return g->ctx->prov->win_ready(g);
}

oxr_status_t oxr_windows_rekey(oxr_group *g, int timeout_ms)
{
	oxr_status_t st = OXR_OK;
	oxr_win *w;

	if (g->ctx->prov->new_epoch)
		g->ctx->prov->new_epoch(g);
	if (g->ctx->hprov && g->ctx->hprov->new_epoch)
		g->ctx->hprov->new_epoch(g);
	for (w = g->wins; w && st == OXR_OK; w = w->next) {
		w->epoch = g->epoch;
		w->head = w->count = 0;
		/* new registrations: the old epoch's keys are dead (at the device;
		 * a shm window's old pages are gone from it) */
		regs_drop(g, w);
		if ((st = regs_make(g, w)) == OXR_OK)
			st = announce(g, w);
	}
	if (st == OXR_OK && g->ctx->prov->win_ready)
		st = oxr_progress_until(g, qps_ready, g, timeout_ms);
	return st;
}

oxr_status_t oxr_window_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	if (l->mode != OXR_LINK_AUTH)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent an oxr window frame on an OpenXM link",
			       l->peer);
	if (m->tag == OXR_OX_PRIVATE_PUT)
		land_put(g, l, m->cmo);
	else
		keep_desc(g, l, m->cmo);
	return OXR_OK;
}

void oxr_windows_renumber(oxr_group *g, const int32_t *failed, int nfailed)
{
	struct rwin **pp, *r;

	for (pp = &g->rwins; (r = *pp);) {
		/* the failed ranks below it */
		int lo = oxr_agree_below(failed, nfailed, r->peer);

		if (lo < nfailed && failed[lo] == r->peer) {
			*pp = r->next;
			free(r);
			continue;
		}
		/* kept, of the old epoch: the first put asks for the new key */
		r->peer -= lo;
		pp = &r->next;
	}
}

static void forget_peers(oxr_group *g)
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
	forget_peers(g);
}
