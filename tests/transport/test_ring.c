/* SPDX-License-Identifier: MIT */
/*
 * The heartbeat's ring failure detector (transport/ring.h) in-process: the
 * core's choice against a plain scan for every skip set of 1 to 10 ranks,
 * and the detector over simulated groups (ring_sim.c: periods of H, a rank
 * learns of a death only through its own watch): every stop set of up to
 * 8 ranks, at once and in sequence; at 65,536 ranks random sets (none, 1%,
 * 30%, 90% stopped, at once and over 32 periods) and adversarial ones (a
 * run of P/16 across rank 0, all but two stopped, a cascade of watchers
 * each stopping just before it would find the rank below).
 * Asserted: every stopped rank is found by a rank live then, and no rank
 * before it was silent a whole period (no false positive); at the end
 * every live rank watches the next live rank below and is watched by
 * exactly that one; at no time do two live ranks watch one rank, nor does
 * a rank send or take more than OXR_RING_PINGS pings a period; the j-th
 * rank of a run below a live rank is found at most j periods after the
 * last of the first j stopped, exactly j when they stopped at once (a run
 * of k: k periods, the worst case).  The figures go to the log;
 * OXR_TEST_SEED picks the sets.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmo_random.h"
#include "ring.h"
#include "sim_util.h"

TestSuite(ring, .timeout = 60);

#define BIG 65536
#define LIVES OXR_RING_LIVES

static int32_t *lives(int n) { return sim_lives(n, LIVES); }

static int below(int r, int n, int d) { return ((r - d) % n + n) % n; }

/* One run, checked against what the test computes itself; returns the
 * worst delay in periods. */
static int check(const char *what, int n, const int32_t *die, int log)
{
	struct oxr_ring_sim s = { .n = n, .die = die };
	int r, j, live = 0, at_once = 1;

	cr_assert_eq(oxr_ring_simulate(&s), OXR_OK, "%s: n=%d", what, n);
	for (r = 0; r < n; r++) {
		live += die[r] == LIVES;
		at_once &= die[r] == LIVES || die[r] == 0;
	}
	cr_assert_eq(s.live, live);
	cr_assert_eq(s.false_pos, 0, "%s: n=%d: a rank found dead before a silent period", what, n);
	cr_assert_leq(s.max_watchers, 1, "%s: n=%d: %d live ranks watched one", what, n,
		      s.max_watchers);
	cr_assert_leq(s.max_sent, OXR_RING_PINGS);
	cr_assert_leq(s.max_recvd, OXR_RING_PINGS);
	cr_assert_leq(s.mean_sent, OXR_RING_PINGS + 1e-9);
	cr_assert_leq(s.mean_recvd, OXR_RING_PINGS + 1e-9);
	cr_assert_eq(s.state_bytes, 32);
	for (r = 0; r < n; r++)
		if (die[r] != LIVES && s.found[r] >= 0)
			cr_assert_gt(s.found[r], die[r], "%s: n=%d: rank %d found as it stopped",
				     what, n, r);
	if (!live) {
		if (at_once) /* nobody to find them */
			cr_assert_eq(s.missed, n);
		oxr_ring_sim_free(&s);
		return 0;
	}
	cr_assert_eq(s.missed, 0, "%s: n=%d: %d stopped ranks never found", what, n, s.missed);
	cr_assert_eq(s.unwatched, 0, "%s: n=%d: %d live ranks unwatched", what, n, s.unwatched);
	cr_assert_eq(s.overwatched, 0, "%s: n=%d", what, n);
	cr_assert_eq(s.watcher_differs, 0, "%s: n=%d", what, n);
	cr_assert_eq(s.late, 0, "%s: n=%d: %d finds past their run's bound", what, n, s.late);
	/* the same, computed here: each live rank's run below it */
	for (r = 0; r < n; r++) {
		int32_t last = 0;
		if (die[r] != LIVES)
			continue;
		for (j = 1; j < n && die[below(r, n, j)] != LIVES; j++) {
			int x = below(r, n, j);
			last = die[x] > last ? die[x] : last;
			cr_assert_leq(s.found[x], last + j, "%s: n=%d: rank %d, %d below live %d, "
				      "found in period %d", what, n, x, j, r, s.found[x]);
			if (at_once)
				cr_assert_eq(s.found[x], j, "%s: n=%d: rank %d, %d below live %d, "
					     "found in period %d", what, n, x, j, r, s.found[x]);
		}
		if (live >= 2) {
			cr_assert_eq(s.watch[r], below(r, n, j), "%s: n=%d: rank %d watches %d",
				     what, n, r, s.watch[r]);
			cr_assert_gt(s.recvd[r], 0); /* its watcher pings it */
		} else {
			cr_assert_eq(s.watch[r], -1);
		}
	}
	if (at_once)
		cr_assert_eq(s.worst_delay, s.longest_run, "%s: n=%d: a run of %d found in %d "
			     "periods", what, n, s.longest_run, s.worst_delay);
	if (log)
		cr_log_info("%-34s n=%-6d live %-6d periods %-6d run %-6d delay %-6d "
			    "pings/period sent max %u mean %.2f, taken max %u mean %.2f", what, n,
			    live, s.periods, s.longest_run, s.worst_delay, s.max_sent, s.mean_sent,
			    s.max_recvd, s.mean_recvd);
	j = s.worst_delay;
	oxr_ring_sim_free(&s);
	return j;
}

/* ---- the core alone ------------------------------------------------ */

static int skip_bits(void *arg, int r) { return (int)(*(uint32_t *)arg >> r & 1); }

Test(ring, the_choice_is_the_next_rank_not_skipped_below_and_above)
{
	int n;

	for (n = 1; n <= 10; n++) {
		uint32_t set;
		for (set = 0; set < 1u << n; set++) {
			int r, kept = n - __builtin_popcount(set);
			for (r = 0; r < n; r++) {
				int d, from, want = -1, up = -1;
				int w = oxr_ring_watched(r, n, 1, skip_bits, &set);
				for (d = 1; d < n && want < 0; d++)
					if (!(set >> below(r, n, d) & 1))
						want = below(r, n, d);
				for (d = 1; d < n && up < 0; d++)
					if (!(set >> ((r + d) % n) & 1))
						up = (r + d) % n;
				cr_assert_eq(w, want, "n=%d set %#x rank %d", n, set, r);
				cr_assert_eq(oxr_ring_watcher(r, n, skip_bits, &set), up);
				if (w >= 0) {
					cr_assert_eq(oxr_ring_distance(r, n, w), (r - w + n) % n);
					/* resumed past it, with nothing skipped: the next one */
					from = oxr_ring_distance(r, n, w) + 1;
					cr_assert_eq(oxr_ring_watched(r, n, from, NULL, NULL),
						     from < n ? below(r, n, from) : -1);
				}
				/* the live ranks form one cycle: each watches the one
				 * that names it its watcher */
				if (!(set >> r & 1) && kept >= 2)
					cr_assert_eq(oxr_ring_watcher(w, n, skip_bits, &set), r);
			}
		}
	}
	/* bad arguments, a group of one, the far end of 2^31 - 1 ranks */
	cr_assert_eq(oxr_ring_watched(0, 1, 1, NULL, NULL), -1);
	cr_assert_eq(oxr_ring_watched(-1, 4, 1, NULL, NULL), -1);
	cr_assert_eq(oxr_ring_watched(4, 4, 1, NULL, NULL), -1);
	cr_assert_eq(oxr_ring_watched(1, 4, 0, NULL, NULL), -1);
	cr_assert_eq(oxr_ring_watched(1, 4, 4, NULL, NULL), -1);
	cr_assert_eq(oxr_ring_watched(0, INT32_MAX, 1, NULL, NULL), INT32_MAX - 1);
	cr_assert_eq(oxr_ring_watcher(INT32_MAX - 1, INT32_MAX, NULL, NULL), 0);
	cr_assert_eq(oxr_ring_distance(0, 4, 4), -1);
	cr_assert_eq(oxr_ring_distance(2, 4, 2), 0);
	{
		struct oxr_ring_sim s = { .n = 0 };
		int32_t bad[2] = { LIVES, -2 };
		cr_assert_eq(oxr_ring_simulate(&s), OXR_ERR_INVAL);
		s.n = 2;
		cr_assert_eq(oxr_ring_simulate(&s), OXR_ERR_INVAL);
		s.die = bad;
		cr_assert_eq(oxr_ring_simulate(&s), OXR_ERR_INVAL);
	}
}

/* ---- simulated groups ---------------------------------------------- */

Test(ring, every_stop_set_of_up_to_8_ranks_at_once_and_in_sequence)
{
	uint64_t rs = rnd_seed();
	int n;

	for (n = 1; n <= 8; n++) {
		uint32_t set;
		for (set = 0; set < 1u << n; set++) {
			int32_t die[8];
			int r, k;
			for (r = 0; r < n; r++)
				die[r] = set >> r & 1 ? 0 : LIVES;
			check("exhaustive", n, die, 0);
			for (k = 0; k < 8; k++) {
				for (r = 0; r < n; r++)
					die[r] = set >> r & 1 ? (int32_t)rnd_below(&rs, 4) : LIVES;
				check("exhaustive, in sequence", n, die, 0);
			}
		}
	}
}

static void random_sets(int n, int spread)
{
	static const int permille[] = { 0, 10, 300, 900 };
	uint64_t rs = rnd_seed() ^ (uint64_t)spread;
	size_t i;
	int k;

	for (i = 0; i < sizeof(permille) / sizeof(permille[0]); i++)
		for (k = 0; k < 2; k++) {
			int32_t *die = lives(n);
			char what[64];
			int r;
			for (r = 0; r < n; r++)
				if ((int)rnd_below(&rs, 1000) < permille[i])
					die[r] = (int32_t)rnd_below(&rs, (uint32_t)spread);
			snprintf(what, sizeof(what), "%d.%d%% stopped%s, set %d", permille[i] / 10,
				 permille[i] % 10, spread ? " over 32 periods" : "", k);
			check(what, n, die, 1);
			free(die);
		}
}

Test(ring, random_stop_sets_at_65536_ranks_at_once)
{
	random_sets(BIG, 0);
}

Test(ring, random_stop_sets_at_65536_ranks_in_sequence)
{
	random_sets(BIG, 32);
}

Test(ring, a_run_of_dead_ranks_across_rank_0)
{
	int n = BIG, r, run = n / 16;
	int32_t *die = lives(n);

	for (r = -run / 2; r < run / 2; r++)
		die[(r + n) % n] = 0;
	cr_assert_eq(check("a run of n/16 across 0", n, die, 1), run);
	free(die);
}

Test(ring, all_but_two_dead)
{
	int n = BIG, r, a = 12345, b = a + n / 2 + 3;
	int32_t *die = lives(n);

	for (r = 0; r < n; r++)
		die[r] = r == a || r == b ? LIVES : 0;
	cr_assert_eq(check("all but two dead", n, die, 1), n / 2 + 2);
	free(die);
}

/* Rank c + i stops in period i, just before it would find c + i - 1 (the
 * one it watches, stopped a period earlier): nobody in the cascade finds
 * anything, and the live rank above walks it all, the last to stop first. */
Test(ring, a_cascade_of_watchers_stopping_after_their_watched_rank)
{
	int n = BIG, m = 1024, c = 1000, i;
	int32_t *die = lives(n);
	struct oxr_ring_sim s = { .n = n };

	for (i = 0; i < m; i++)
		die[c + i] = i;
	check("a cascade of 1024", n, die, 1);
	s.die = die;
	cr_assert_eq(oxr_ring_simulate(&s), OXR_OK);
	for (i = 0; i < m; i++) /* the j-th below c + m, j = m - i, in m - 1 + j */
		cr_assert_eq(s.found[c + i], 2 * m - 1 - i, "rank %d", c + i);
	oxr_ring_sim_free(&s);
	/* and top down: each watcher stops first, the rank it watched a
	 * period later, each found by the live rank above the cascade */
	for (i = 0; i < m; i++)
		die[c + i] = m - 1 - i;
	check("a cascade of 1024, top first", n, die, 1);
	free(die);
}
