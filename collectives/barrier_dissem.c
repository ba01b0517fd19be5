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
 *
 * The window: slot k of each sequence parity's half is round k's, written
 * only by rank - 2^k (the 2^k, k < ceil(log2 n), are distinct below n):
 * 2 ceil(log2 n) slots of a header each.
 */
#include "barrier_core.h"

static int target(const bar_core *c, int k)
{
	return (int)((c->rank + (1LL << k)) % c->n);
}

/* round k's write: to target(k), into its slot k */
static bar_peer round_to(const bar_core *c, int k)
{
	return (bar_peer){ target(c, k), k };
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
			bar_push(c, round_to(c, c->round), BAR_ROUND, (uint32_t)c->round, NULL);
	}
	return c->round == c->rounds ? bar_complete(c) : 0;
}

static int ds_enter(bar_core *c)
{
	c->round = 0;
	if (c->rounds > 0)
		bar_push(c, round_to(c, 0), BAR_ROUND, 0, NULL);
	return advance(c);
}

/* Slot k takes round k's write of source(k) only (its sender checked). */
static int valid(bar_core *c, int k, const bar_hdr *h)
{
	if (h->kind == BAR_ROUND && h->aux == (uint32_t)k)
		return 1;
	return bar_refuse(c, c->slot_from[k], "a write that is not its slot's round");
}

static int ds_arrive(bar_core *c, int k, const bar_hdr *h, const bar_run *run)
{
	(void)run; /* its slots take none: the core refused any */
	if (valid(c, k, h) < 0)
		return -1;
	c->got |= 1ull << k;
	return c->entered ? advance(c) : 0;
}

static int ds_early(bar_core *c, int k, const bar_hdr *h, const bar_run *run)
{
	(void)run;
	if (valid(c, k, h) < 0)
		return -1;
	c->next_got |= 1ull << k;
	return 0;
}

static int ds_waits_on(const bar_core *c, bar_peer *peers)
{
	if (c->round >= c->rounds || (c->got >> c->round & 1))
		return 0;
	peers[0] = (bar_peer){ source(c, c->round), c->round };
	return 1;
}

static int ds_dependents(const bar_core *c, bar_peer *peers)
{
	int k;

	for (k = 0; k < c->rounds; k++)
		peers[k] = round_to(c, k);
	return k;
}

static int ds_nslots(const bar_core *c)
{
	return c->rounds;
}

static void ds_slot(const bar_core *c, int k, int *from, int *run)
{
	*from = source(c, k);
	*run = 0;
}

static int ds_maxpeers(const bar_core *c)
{
	return c->rounds;
}

const struct bar_algo bar_dissem_algo = { ds_nslots, ds_slot, ds_maxpeers, ds_enter,
					   ds_arrive, ds_early, ds_waits_on, ds_dependents };
