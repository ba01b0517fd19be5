/* SPDX-License-Identifier: MIT */
/*
 * The heartbeat's ring failure detector: whom each rank watches.
 *
 * Each rank watches one rank: the next below it, cyclically, that it does
 * not skip (known dead; in the library also an OpenXM peer, which answers
 * no pings).  It pings it after H/3 without word from it and answers the
 * pings of the rank that watches it.  A watched rank silent for H has
 * failed: the watcher finds it dead, skips it from then on, and watches
 * the next rank below.
 *
 * Invariant: a rank only ever moves past the rank it watches, so what it
 * found dead itself is the run just below it, nearest first.  With no
 * false positive (a live rank answers within H), no live rank is passed
 * by a live rank above it, so at any time at most one live rank watches a
 * given rank: the nearest live rank above, once it has found every rank
 * in between.  When those finds are done, the live ranks form one cycle,
 * each watched by exactly one live rank (oxr_ring_watcher, the next live
 * rank above), whoever died and in whatever order.  A run of k ranks
 * stopped below a live rank is found by it one rank a period: the j-th
 * one period of H after the j - 1-th was found and after it stopped
 * itself, k periods for the whole run when all stopped at once (each is
 * H to H + H/6 in the library: its rounds are H/6 apart).  Nothing else
 * finds them sooner when only the watches tell (the revoke that names each
 * find is no help: the next rank of the run is found by no one yet).
 *
 * Cost, whatever P: a rank pings one rank and answers at most one, at most
 * OXR_RING_PINGS of each per H; its state is struct oxr_ring_watch (32
 * bytes), what it knows dead being its links' state.  progress.c scans
 * from distance 1 every round, for what a rank skips changes under it too
 * (a revoke marks the ranks others found, a link opens); the simulation
 * resumes past the last find, which is the same rank because the finds
 * are the contiguous run below.
 */
#include "ring.h"

/* rank + dir * d mod n, for 0 < d < n: one wrap at most, no overflow. */
static int step(int rank, int n, int d, int dir)
{
	if (dir < 0)
		return rank >= d ? rank - d : rank + (n - d);
	return rank < n - d ? rank + d : rank - (n - d);
}

/* The first rank at distance from, from + 1, ... < n in direction dir
 * that skip lets through. */
static int scan(int rank, int n, int from, int dir, oxr_ring_skip_fn skip, void *arg)
{
	int d;

	if (n < 2 || rank < 0 || rank >= n || from < 1)
		return -1;
	for (d = from; d < n; d++) {
		int p = step(rank, n, d, dir);
		if (!skip || !skip(arg, p))
			return p;
	}
	return -1;
}

int oxr_ring_watched(int rank, int n, int from, oxr_ring_skip_fn skip, void *arg)
{
	return scan(rank, n, from, -1, skip, arg);
}

int oxr_ring_watcher(int rank, int n, oxr_ring_skip_fn skip, void *arg)
{
	return scan(rank, n, 1, 1, skip, arg);
}

int oxr_ring_distance(int rank, int n, int watched)
{
	if (n < 1 || rank < 0 || rank >= n || watched < 0 || watched >= n)
		return -1;
	return rank >= watched ? rank - watched : rank + (n - watched);
}
