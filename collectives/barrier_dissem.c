/* SPDX-License-Identifier: MIT */
/*
 * The dissemination barrier (Hensgen, Finkel and Manber 1988) as an
 * algorithm core, the baseline of the bitmap barrier: ceil(log2 n) rounds;
 * in round k rank r writes to (r + 2^k) mod n and waits for the write of
 * (r - 2^k) mod n, then goes to round k+1.
 *
 * Invariant: after round k, rank r has heard, directly or through the
 * chain of writes, from the 2^(k+1) ranks r - 2^(k+1) + 1 .. r, because
 * the write it waited for in round k was sent only after its sender had
 * finished round k-1 and so carried the 2^k ranks before it.  After
 * ceil(log2 n) rounds that is all n ranks: nobody leaves early.  A round's
 * write is kept even when it comes before this rank reached that round
 * (or entered at all), so no write is ever lost.  Every rank writes and
 * receives exactly ceil(log2 n) times per barrier.
 */
#include "barrier_core.h"

static int target(const bar_core *c, int k)
{
	return (int)((c->rank + (1LL << k)) % c->n);
}

static int source(const bar_core *c, int k)
{
	long long s = ((long long)c->rank - (1LL << k)) % c->n;

	return (int)(s < 0 ? s + c->n : s);
}

static int advance(bar_core *c)
{
	while (c->round < c->rounds && (c->got >> c->round & 1)) {
		c->round++;
		if (c->round < c->rounds)
			bar_push(c, target(c, c->round), BAR_ROUND, (uint32_t)c->round, 0);
	}
	return c->round == c->rounds ? bar_complete(c) : 0;
}

static int ds_enter(bar_core *c)
{
	c->round = 0;
	if (c->rounds > 0)
		bar_push(c, target(c, 0), BAR_ROUND, 0, 0);
	return advance(c);
}

static int valid(bar_core *c, int from, const bar_hdr *h)
{
	if (h->kind == BAR_ROUND && h->aux < (uint32_t)c->rounds && from == source(c, (int)h->aux))
		return 1;
	c->odd++;
	return 0;
}

static int ds_arrive(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits)
{
	(void)bits;
	if (!valid(c, from, h))
		return 0;
	c->got |= 1ull << h->aux;
	return c->entered ? advance(c) : 0;
}

static void ds_early(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits)
{
	(void)bits;
	if (valid(c, from, h))
		c->next_got |= 1ull << h->aux;
}

static int ds_waits_on(const bar_core *c, int *peers, int max)
{
	if (c->round >= c->rounds || (c->got >> c->round & 1) || max < 1)
		return 0;
	peers[0] = source(c, c->round);
	return 1;
}

static int ds_dependents(const bar_core *c, int *peers, int max)
{
	int k, w = 0;

	for (k = 0; k < c->rounds && w < max; k++)
		peers[w++] = target(c, k);
	return w;
}

const struct bar_algo bar_dissem_algo = { ds_enter, ds_arrive, ds_early, ds_waits_on,
					   ds_dependents };
