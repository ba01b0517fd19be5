/* SPDX-License-Identifier: MIT */
/*
 * The revoke's reliable broadcast over a binomial graph (ULFM's BMG) that
 * routes around dead ranks.
 *
 * A rank that has the frame owns 2 ceil(log2 P) slots, one per distance
 * 2^k < P and direction s = +1 or -1.  A slot's target is the first rank
 * not known dead at or beyond rank + s 2^k, going on in direction s (mod
 * P): the two ring slots (2^0) as far as the rank before this one, the
 * others at most l = ceil(log2 P) ranks past rank + s 2^k (then the slot
 * has no target).  The rank sends the frame once to each slot's target,
 * once per distinct rank (two slots may land on one), and not to the rank
 * it got the frame from.  When a target turns out dead (its open fails,
 * its link breaks, whether or not the frame had gone), every slot aimed at
 * it moves on past it and sends to its new target.  A cursor only ever
 * moves past ranks found dead.
 *
 * Invariant: once the failures between a live rank r and the next live
 * rank succ(r) round the ring are found, r's +1 slot aims at succ(r), and
 * succ(r) has the frame (r sent it, or another of r's slots did, or it is
 * the rank r got it from).  So the live ranks form a ring that the frame
 * walks whichever ranks died and from whichever live rank it starts; the
 * other slots only shorten the walk (with none dead, l / 2 rounds).
 * A rank dying after it got the frame but before it forwarded it is a
 * dead target like any other: its predecessors' slots move past it.  Each
 * slot moves forward at most P - 1 times and each rank starts once, so the
 * flood ends.
 *
 * Cost: a slot gives a live target the frame once, so a rank sends at
 * most 2 ceil(log2 P) frames to ranks alive at the end (a target that dies
 * after taking the frame costs its slot one more); the state is a fixed
 * array of 62 cursors, 264 bytes, at any P.  A rank receives at most
 * 2 + 2 l (l - 1) frames: one from each slot whose reach covers it, the
 * ring's two and l per other distance and direction (each rank that dies
 * after its slots were aimed may add one more).  The reach is what
 * bounds that: slots free to walk on would all end, after a run of L dead
 * ranks, on the rank after it (16,383 frames at L = 4,096 of 65,536 in
 * tests/transport/test_bmg.c; 78 with the reach).  A slot given up costs
 * a shortcut, not a rank: the ring slots walk on.  Unbounded still: the
 * sends that meet dead ranks (no frame goes; each is a failed open where
 * the link was not known to be down), up to L for the ring slot before a
 * run of L.
 */
#include <string.h>

#include "bmg.h"

int oxr_bmg_slots(int n)
{
	int k = 0;

	while (k < OXR_BMG_SLOTS / 2 && (int64_t)1 << k < n)
		k++;
	return 2 * k;
}

int oxr_bmg_partner(int rank, int n, int k, int dir)
{
	return (int)((((int64_t)rank + dir * ((int64_t)1 << k)) % n + n) % n);
}

/* Slot i: distance 2^(i/2), direction -1 for even i, +1 for odd. */
static int dir_of(int i) { return i & 1 ? 1 : -1; }

static int target(const struct oxr_bmg *b, int i)
{
	int64_t off = b->off[i];

	int64_t t = dir_of(i) > 0 ? b->rank + off : b->rank - off;

	if (off >= b->n)
		return -1;
	/* off < n: one wrap at most, no division (the simulation's inner loop) */
	return (int)(t >= b->n ? t - b->n : t < 0 ? t + b->n : t);
}

/* How far slot i may walk: the ring slots (distance 1) round the whole
 * group, the others ceil(log2 n) ranks past their distance. */
static uint32_t reach(const struct oxr_bmg *b, int i)
{
	int64_t end = i < 2 ? b->n : ((int64_t)1 << i / 2) + oxr_bmg_slots(b->n) / 2;

	return (uint32_t)(end < b->n ? end : b->n);
}

/* Slot i's cursor past the ranks known dead; at its reach, none left (n). */
static void skip_dead(struct oxr_bmg *b, int i, oxr_bmg_dead_fn dead, void *arg)
{
	uint32_t end = reach(b, i);

	while (dead && b->off[i] < end && dead(arg, target(b, i)))
		b->off[i]++;
	if (b->off[i] >= end)
		b->off[i] = (uint32_t)b->n;
}

int oxr_bmg_partners(int rank, int n, int *out, int max)
{
	int cnt = 0, k, s, i;

	for (k = 0; k < OXR_BMG_SLOTS / 2 && (int64_t)1 << k < n && cnt + 2 <= max; k++)
		for (s = -1; s <= 1; s += 2) {
			int p = oxr_bmg_partner(rank, n, k, s);
			for (i = 0; i < cnt && out[i] != p; i++)
				;
			if (p != rank && i == cnt)
				out[cnt++] = p;
		}
	return cnt;
}

/* Membership in the set above without listing it (provider.h): peer is
 * 2^k away one way round or the other. */
int oxr_rank_is_partner(int rank, int peer, int size)
{
	unsigned d = (unsigned)(rank > peer ? rank - peer : peer - rank), e = (unsigned)size - d;

	return (d & (d - 1)) == 0 || (e & (e - 1)) == 0;
}

void oxr_bmg_start(struct oxr_bmg *b, int rank, int n, int from, oxr_bmg_dead_fn dead, void *arg)
{
	int i, ns = oxr_bmg_slots(n);

	memset(b, 0, sizeof(*b));
	if (n < 1 || rank < 0 || rank >= n)
		return; /* no slots: nothing is sent */
	b->rank = rank;
	b->n = n;
	for (i = 0; i < ns; i++) {
		b->off[i] = 1u << (i / 2);
		skip_dead(b, i, dead, arg);
		if (from >= 0 && target(b, i) == from)
			b->sent |= 1ull << i;
	}
}

int oxr_bmg_next(struct oxr_bmg *b)
{
	int ns = oxr_bmg_slots(b->n), t;
	uint64_t todo = ((1ull << ns) - 1) & ~b->sent, m;

	for (; todo; todo &= todo - 1) {
		int i = __builtin_ctzll(todo);
		if ((t = target(b, i)) < 0)
			continue;
		for (m = b->sent; m && target(b, __builtin_ctzll(m)) != t; m &= m - 1)
			;
		b->sent |= 1ull << i;
		if (!m) /* no other slot gave it the frame */
			return t;
	}
	return -1;
}

int oxr_bmg_has(const struct oxr_bmg *b, int who)
{
	uint64_t m;

	for (m = b->sent; m; m &= m - 1)
		if (target(b, __builtin_ctzll(m)) == who)
			return 1;
	return 0;
}

int oxr_bmg_failed(struct oxr_bmg *b, int who, oxr_bmg_dead_fn dead, void *arg)
{
	int ns = oxr_bmg_slots(b->n), i, moved = 0;

	if (who < 0 || who >= b->n || who == b->rank)
		return 0;
	for (i = 0; i < ns; i++)
		if (target(b, i) == who) {
			b->off[i]++;
			skip_dead(b, i, dead, arg);
			b->sent &= ~(1ull << i);
			moved++;
		}
	return moved;
}
