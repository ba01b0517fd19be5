/* SPDX-License-Identifier: MIT */
/*
 * Crystal router (Fox et al. 1988; as in Neko's crystal_router and gslib's
 * crystal.c): all-to-some personalized exchange by recursive bisection.
 *
 * The active range [lo, hi) holds this rank and starts as [0, P).  Each
 * stage splits it at mid = lo + n/2; a rank keeps the records whose
 * destination lies in its own half and ships the rest to its partner in the
 * other half (r <-> r +- n/2).  An odd range has one unpaired upper rank,
 * hi-1, which offloads its lower-half records to lo.  Invariant: every
 * record held by a rank has its destination inside that rank's range, so
 * when the range is one rank the records are exactly this rank's.  A record
 * is held by one rank at a time (sent means dropped here) and partitions are
 * stable, so each record arrives once and one source's records arrive in
 * packing order.  ceil(log2 P) stages (one fewer for some ranks).
 *
 * The stage bytes travel through the landing windows of crystal_land.c,
 * whose opening comment says how (puts into per-stage regions, a message
 * fallback, and how every rank agrees on growing the regions).
 */
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "crystal_impl.h"
#include "crystal_wire.h"

static int plan(int size, int rank, struct stage *st, int *nslots)
{
	int lo = 0, hi = size, k = 0, slot = 0;

	while (hi - lo > 1) {
		int n = hi - lo, mid = lo + n / 2;
		struct stage *s = &st[k++];

		*s = (struct stage){ .from = { -1, -1 }, .slot = slot };
		if (rank < mid) {
			s->to = rank + n / 2;
			s->from[s->nfrom++] = s->to;
			if ((n & 1) && rank == lo)
				s->from[s->nfrom++] = hi - 1;
			hi = mid;
		} else if ((n & 1) && rank == hi - 1) {
			s->to = lo;
			s->to_j = 1;
			lo = mid;
		} else {
			s->to = rank - n / 2;
			s->from[s->nfrom++] = s->to;
			lo = mid;
		}
		s->nlo = lo;
		s->nhi = hi;
		slot += s->nfrom;
	}
	*nslots = slot;
	return k;
}

oxr_status_t oxr_crystal_create(oxr_group *g, oxr_crystal **out)
{
	oxr_crystal *cr;
	uint64_t region;
	oxr_status_t st;
	int k;

	if (!g || !out)
		return oxr_err(OXR_ERR_INVAL, "crystal create: NULL argument");
	cr = calloc(1, sizeof(*cr));
	if (!cr)
		return oxr_err(OXR_ERR_NOMEM, "crystal create: out of memory");
	cr->g = g;
	cr->rank = oxr_group_rank(g);
	cr->size = oxr_group_size(g);
	cr->nstages = plan(cr->size, cr->rank, cr->st, &cr->nslots);
	for (k = 0; k < cr->nstages; k++) {
		struct stage to[MAX_STAGES];
		struct stage *s = &cr->st[k];
		plan(cr->size, s->to, to, &s->to_nslots);
		s->to_slot = to[k].slot + s->to_j;
	}
	region = oxr_ctx_get_params(oxr_group_ctx(g))->crystal_region_bytes;
	cr->region_max = oxr_ctx_get_params(oxr_group_ctx(g))->crystal_region_max;
	if (cr->region_max < region)
		cr->region_max = region;
	st = oxr_cr_make_window(cr, region, -1);
	if (st) {
		free(cr);
		return st;
	}
	*out = cr;
	return OXR_OK;
}

void oxr_crystal_destroy(oxr_crystal *cr)
{
	if (!cr)
		return;
	oxr_win_destroy(cr->win);
	oxr_win_free(cr->g, cr->mem, cr->memlen);
	free(cr->out.p);
	free(cr->cur.p);
	free(cr->next.p);
	free(cr->snd.p);
	free(cr->stash);
	free(cr);
}

static void put_rec(uint8_t *p, uint32_t dest, uint32_t src, const void *data, uint64_t len)
{
	oxr_store32(p, dest, 1);
	oxr_store32(p + 4, src, 1);
	oxr_store64(p + 8, len, 1);
	if (len)
		memcpy(p + CR_REC, data, len);
	memset(p + CR_REC + len, 0, PAD8(len) - len);
}

oxr_status_t oxr_crystal_pack(oxr_crystal *cr, int dest, const void *p, uint64_t len)
{
	oxr_status_t st;

	if (dest < 0 || dest >= cr->size)
		return oxr_err(OXR_ERR_INVAL, "crystal pack: destination rank %d is outside [0, %d) "
			       "(on rank %d)", dest, cr->size, cr->rank);
	if (!p && len)
		return oxr_err(OXR_ERR_INVAL, "crystal pack: NULL payload of %llu bytes",
			       (unsigned long long)len);
	if (len > SIZE_MAX / 4)
		return oxr_err(OXR_ERR_LIMIT, "crystal pack: a %llu-byte record", (unsigned long long)len);
	st = oxr_cr_reserve(&cr->out, CR_REC + PAD8(len));
	if (st)
		return st;
	put_rec(cr->out.p + cr->out.n, (uint32_t)dest, (uint32_t)cr->rank, p, len);
	cr->out.n += CR_REC + PAD8(len);
	cr->npacked++;
	return OXR_OK;
}

/* Splits cur: this rank's half into next, the other half's into snd. */
static oxr_status_t partition(oxr_crystal *cr, const struct stage *s)
{
	size_t o = 0;
	oxr_status_t st;

	cr->next.n = 0;
	cr->snd.n = 0;
	if ((st = oxr_cr_reserve(&cr->snd, CR_HDR)))
		return st;
	cr->snd.n = CR_HDR;
	while (o < cr->cur.n) {
		const uint8_t *r = cr->cur.p + o;
		int dest = (int)oxr_load32(r, 1);
		size_t n = CR_REC + PAD8(oxr_load64(r + 8, 1));
		struct buf *b = dest >= s->nlo && dest < s->nhi ? &cr->next : &cr->snd;

		if ((st = oxr_cr_reserve(b, n)))
			return st;
		memcpy(b->p + b->n, r, n);
		b->n += n;
		o += n;
	}
	return OXR_OK;
}

static oxr_status_t run_stages(oxr_crystal *cr, long long deadline)
{
	struct buf t;
	oxr_status_t st;
	int k, j;

	for (k = 0; k < cr->nstages; k++) {
		if ((st = partition(cr, &cr->st[k])) || (st = oxr_cr_send_stage(cr, k)))
			return st;
		for (j = 0; j < cr->st[k].nfrom; j++)
			if ((st = oxr_cr_recv_stage(cr, k, j, deadline)))
				return st;
		t = cr->cur;
		cr->cur = cr->next;
		cr->next = t;
	}
	return OXR_OK;
}

oxr_status_t oxr_crystal_transfer(oxr_crystal *cr, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : oxr_cr_now_ms() + timeout_ms;
	uint64_t grows = cr->stats.grows, early = cr->stats.early;
	struct buf t;
	oxr_status_t st;
	size_t o;

	if (cr->broken)
		return oxr_err(OXR_ERR_INVAL, "crystal transfer: an earlier transfer failed on rank %d; "
			       "destroy the router", cr->rank);
	cr->seq++;
	cr->stats = (oxr_crystal_stats){ .stages = cr->nstages, .grows = grows, .early = early,
					 .transfers = cr->stats.transfers + 1 };
	cr->stats.records_packed = cr->npacked;
	cr->npacked = 0;
	t = cr->cur;
	cr->cur = cr->out;
	cr->out = t;
	cr->out.n = 0;
	cr->iter = 0;
	/* what this rank tells the others: its biggest stage of the last transfer */
	cr->know = cr->want;
	cr->want = 0;
	st = run_stages(cr, deadline);
	if (!st)
		st = oxr_cr_maybe_grow(cr, deadline);
	if (st) {
		cr->broken = 1;
		cr->cur.n = 0;
		return st;
	}
	for (o = 0; o < cr->cur.n; o += CR_REC + PAD8(oxr_load64(cr->cur.p + o + 8, 1)))
		cr->stats.records_received++;
	return OXR_OK;
}

oxr_status_t oxr_crystal_next(oxr_crystal *cr, oxr_crystal_rec *rec)
{
	const uint8_t *p;

	if (cr->iter >= cr->cur.n)
		return OXR_AGAIN;
	p = cr->cur.p + cr->iter;
	rec->source = (int)oxr_load32(p + 4, 1);
	rec->len = oxr_load64(p + 8, 1);
	rec->data = p + CR_REC;
	cr->iter += CR_REC + PAD8(rec->len);
	return OXR_OK;
}

oxr_status_t oxr_crystal_get_stats(const oxr_crystal *cr, oxr_crystal_stats *st)
{
	if (!cr || !st)
		return oxr_err(OXR_ERR_INVAL, "crystal stats: NULL argument");
	*st = cr->stats;
	st->region_bytes = cr->region;
	st->window_bytes = cr->memlen;
	return OXR_OK;
}
