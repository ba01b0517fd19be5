/* SPDX-License-Identifier: MIT */
/*
 * The revoke's reliable broadcast (transport/bmg.h) in-process, over
 * simulated groups (bmg_sim.c: deliveries in FIFO order, a send to a dead
 * rank answered by a failure that retargets its slot): every failure set
 * of the groups of 1 to 10 ranks from every live origin; at 65,536 and
 * 65,537 ranks random sets (none, 1%, 30%, 90% dead) and adversarial ones
 * (every overlay partner of some ranks dead, a run of dead ranks across
 * rank 0, all but two dead, ranks dying as the frame reaches them).
 * Asserted: every live rank is reached, and reached once (it forwards
 * once), no dead rank sends or takes a frame, no rank delivers more than
 * 2 ceil(log2 P) frames nor takes more than 2 + 2 l (l - 1), l =
 * ceil(log2 P) (a run of dead ranks does not funnel every slot landing in
 * it onto the rank after it).  Each case runs with the dead known (their
 * links down: skipped) and unknown (found by a failed send).  The figures
 * (rounds, frames per rank) go to the log.  OXR_TEST_QUICK: 4,097 ranks
 * instead of 65,536 (the rxe guest is slow); OXR_TEST_SEED picks the sets.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmg.h"
#include "sim_util.h"

TestSuite(bmg, .timeout = 300);

static int ceil_log2(int n)
{
	int l = 0;

	while ((int64_t)1 << l < n)
		l++;
	return l;
}

static int bit(const uint8_t *m, int i) { return m[i / 8] >> (i % 8) & 1; }
static void set(uint8_t *m, int i) { m[i / 8] |= (uint8_t)(1u << i % 8); }

static uint8_t *map(int n)
{
	uint8_t *m = calloc(((size_t)n + 7) / 8, 1);

	cr_assert(m);
	return m;
}

static int a_live_rank(const uint8_t *dead, int n)
{
	int r;

	do
		r = (int)(rnd() % (uint64_t)n);
	while (bit(dead, r));
	return r;
}

/* One broadcast, checked rank by rank; returns its rounds. */
static int check(const char *what, int n, const uint8_t *dead, const uint8_t *crash, int origin,
		 int known, int log)
{
	struct oxr_bmg_sim s = { .n = n, .origin = origin, .known = known, .dead = dead,
				 .crash = crash };
	int r, slots = oxr_bmg_slots(n), rounds;

	cr_assert_eq(slots, 2 * ceil_log2(n));
	cr_assert_eq(oxr_bmg_simulate(&s), 0, "%s: n=%d", what, n);
	for (r = 0; r < n; r++) {
		int gone = bit(dead, r) || (crash && bit(crash, r) && s.depth[r] >= 0 && r != origin);
		if (bit(dead, r)) {
			cr_assert_eq(s.depth[r], -1, "%s: n=%d: dead rank %d reached", what, n, r);
			cr_assert_eq(s.recvd[r], 0, "%s: n=%d: dead rank %d took a frame", what, n, r);
		}
		if (gone) {
			cr_assert_eq(s.sent[r], 0, "%s: n=%d: dead rank %d sent", what, n, r);
			continue;
		}
		cr_assert_geq(s.depth[r], 0, "%s: n=%d known=%d origin %d: live rank %d never "
			      "reached", what, n, known, origin, r);
		cr_assert(r == origin || s.recvd[r] >= 1);
		cr_assert_leq(s.sent[r], (uint32_t)slots, "%s: n=%d: rank %d sent %u frames (> %d)",
			      what, n, r, s.sent[r], slots);
		/* one frame per slot whose reach covers it: the ring's two, and
		 * l per other distance and direction */
		cr_assert_leq(s.recvd[r], (uint32_t)(2 + slots * (slots / 2 - 1)),
			      "%s: n=%d: rank %d took %u frames", what, n, r, s.recvd[r]);
	}
	cr_assert_eq(s.reached, s.live);
	if (log)
		cr_log_info("%-30s n=%-6d %s live %-6d rounds %-3d frames/rank max %-2u mean %5.2f "
			    "(bound %d) recv max %-6u failed sends max %u", what, n,
			    known ? "known  " : "unknown", s.live, s.rounds, s.max_sent,
			    (double)s.frames / s.live, slots, s.max_recvd, s.max_probes);
	rounds = s.rounds;
	oxr_bmg_sim_free(&s);
	return rounds;
}

static void both(const char *what, int n, const uint8_t *dead, const uint8_t *crash)
{
	int origin = a_live_rank(dead, n);

	check(what, n, dead, crash, origin, 1, 1);
	check(what, n, dead, crash, origin, 0, 1);
}

/* ---- the core alone ------------------------------------------------ */

Test(bmg, the_overlay_is_rank_plus_minus_powers_of_two_each_once)
{
	static const int sizes[] = { 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 100, 65536, 65537, 1 << 20 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i], ranks[3] = { 0, n / 2, n - 1 }, q;
		for (q = 0; q < 3; q++) {
			int out[64], cnt = oxr_bmg_partners(ranks[q], n, out, 64), j, k;
			cr_assert_leq(cnt, oxr_bmg_slots(n));
			for (j = 0; j < cnt; j++) {
				int d = (out[j] - ranks[q] + n) % n, e = (ranks[q] - out[j] + n) % n;
				cr_assert_neq(out[j], ranks[q]);
				cr_assert(!(d & (d - 1)) || !(e & (e - 1)), "n=%d: %d", n, out[j]);
				for (k = 0; k < j; k++)
					cr_assert_neq(out[k], out[j]);
			}
			/* no dead rank: the broadcast's first targets are the overlay */
			{
				struct oxr_bmg b;
				int t, sent = 0;
				oxr_bmg_start(&b, ranks[q], n, -1, NULL, NULL);
				while ((t = oxr_bmg_next(&b)) >= 0) {
					cr_assert_eq(t, out[sent], "n=%d", n);
					sent++;
				}
				cr_assert_eq(sent, cnt);
			}
		}
	}
}

/* A target found dead, after its frame went, hands its slot on; the rank
 * the frame came from is not sent to, until it dies. */
Test(bmg, a_dead_target_moves_its_slot_on)
{
	struct oxr_bmg b;

	/* rank 0 of 16 got it from 1: slots -1 (15), +1 (1), -2 (14), +2 (2), ... */
	oxr_bmg_start(&b, 0, 16, 1, NULL, NULL);
	cr_assert_eq(oxr_bmg_next(&b), 15);
	cr_assert_eq(oxr_bmg_next(&b), 14);
	cr_assert_eq(oxr_bmg_next(&b), 2);
	cr_assert_eq(oxr_bmg_next(&b), 12);
	cr_assert_eq(oxr_bmg_next(&b), 4);
	cr_assert_eq(oxr_bmg_next(&b), 8);
	cr_assert_eq(oxr_bmg_next(&b), -1);
	/* 1 and 2 die: +1 moves to 2 (dead too, as +2's failure says next) */
	cr_assert_eq(oxr_bmg_failed(&b, 1, NULL, NULL), 1);
	cr_assert_eq(oxr_bmg_next(&b), -1, "2 has it from slot +2 already");
	cr_assert_eq(oxr_bmg_failed(&b, 2, NULL, NULL), 2);
	cr_assert_eq(oxr_bmg_next(&b), 3);
	cr_assert_eq(oxr_bmg_next(&b), -1, "+1 and +2 both at 3: one frame");
	/* 4 dies: +4 moves to 5 */
	cr_assert_eq(oxr_bmg_failed(&b, 4, NULL, NULL), 1);
	cr_assert_eq(oxr_bmg_next(&b), 5);
	/* not a target, out of range, itself: nothing moves */
	cr_assert_eq(oxr_bmg_failed(&b, 7, NULL, NULL), 0);
	cr_assert_eq(oxr_bmg_failed(&b, -1, NULL, NULL), 0);
	cr_assert_eq(oxr_bmg_failed(&b, 16, NULL, NULL), 0);
	cr_assert_eq(oxr_bmg_failed(&b, 0, NULL, NULL), 0);
	cr_assert_eq(oxr_bmg_next(&b), -1);
	/* a group of one sends nothing; bad arguments neither */
	oxr_bmg_start(&b, 0, 1, -1, NULL, NULL);
	cr_assert_eq(oxr_bmg_next(&b), -1);
	oxr_bmg_start(&b, 5, 4, -1, NULL, NULL);
	cr_assert_eq(oxr_bmg_next(&b), -1);
	oxr_bmg_start(&b, 0, 0, -1, NULL, NULL);
	cr_assert_eq(oxr_bmg_next(&b), -1);
}

/* ---- simulated groups ---------------------------------------------- */

Test(bmg, every_failure_set_of_up_to_10_ranks)
{
	int n;

	for (n = 1; n <= 10; n++) {
		uint32_t set_bits;
		for (set_bits = 0; set_bits < 1u << n; set_bits++) {
			uint8_t dead[2] = { (uint8_t)set_bits, (uint8_t)(set_bits >> 8) };
			int origin;
			for (origin = 0; origin < n; origin++)
				if (!bit(dead, origin)) {
					check("exhaustive", n, dead, NULL, origin, 1, 0);
					check("exhaustive", n, dead, NULL, origin, 0, 0);
				}
		}
	}
}

static void random_sets(int n)
{
	static const int permille[] = { 0, 10, 300, 900 };
	size_t i;
	int k;

	for (i = 0; i < sizeof(permille) / sizeof(permille[0]); i++)
		for (k = 0; k < 3; k++) {
			uint8_t *dead = map(n);
			char what[64];
			int r;
			seed((uint64_t)n * 1000 + i * 10 + (uint64_t)k);
			for (r = 0; r < n; r++)
				if ((int)(rnd() % 1000) < permille[i])
					set(dead, r);
			for (r = 0; r < n && bit(dead, r); r++)
				;
			if (r == n) /* one rank lives, at least */
				dead[0] &= 0xfe;
			snprintf(what, sizeof(what), "%d.%d%% dead, set %d", permille[i] / 10,
				 permille[i] % 10, k);
			both(what, n, dead, NULL);
			free(dead);
		}
}

Test(bmg, random_failure_sets_at_65536_ranks)
{
	random_sets(big());
}

Test(bmg, random_failure_sets_at_65537_ranks)
{
	random_sets(big() + 1);
}

Test(bmg, small_odd_groups_random_sets)
{
	static const int sizes[] = { 1, 2, 3, 5, 11, 17, 33, 63, 65, 127, 129, 1000 };
	size_t i;
	int k;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (k = 0; k < 200; k++) {
			int n = sizes[i], r, live = 0;
			uint8_t *dead = map(n), *crash = map(n);
			seed((uint64_t)n * 7919 + (uint64_t)k);
			for (r = 0; r < n; r++) {
				uint64_t x = rnd() % 100;
				if (x < (uint64_t)(k % 10) * 10)
					set(dead, r);
				else if (x < (uint64_t)(k % 10) * 10 + 10 && k % 2)
					set(crash, r);
				live += !bit(dead, r);
			}
			if (live) {
				int origin = a_live_rank(dead, n);
				check("small", n, dead, k % 2 ? crash : NULL, origin, k % 4 < 2, 0);
			}
			free(dead);
			free(crash);
		}
}

/* Every overlay partner of a rank dead: before, it was cut off (the
 * partners are whom the overlay reached it through). */
Test(bmg, every_overlay_partner_of_some_ranks_dead)
{
	int n = big(), victims[4] = { 0, 1, n / 2, n - 1 }, v;
	uint8_t *dead = map(n);

	for (v = 0; v < 4; v++) {
		int out[64], cnt = oxr_bmg_partners(victims[v], n, out, 64), j;
		for (j = 0; j < cnt; j++)
			set(dead, out[j]);
	}
	for (v = 0; v < 4; v++)
		dead[victims[v] / 8] &= (uint8_t)~(1u << victims[v] % 8);
	seed(1);
	both("every partner of 4 ranks dead", n, dead, NULL);
	/* and from one of them */
	check("... from a cut-off rank", n, dead, NULL, n / 2, 0, 1);
	free(dead);
}

Test(bmg, a_run_of_dead_ranks_across_rank_0)
{
	int n = big(), r, run = n / 16;
	uint8_t *dead = map(n);

	for (r = n - run / 2; r < n; r++)
		set(dead, r);
	for (r = 0; r < run / 2; r++)
		set(dead, r);
	seed(2);
	both("a run of n/16 dead across 0", n, dead, NULL);
	free(dead);
}

Test(bmg, all_but_two_dead)
{
	int n = big(), r, a = 12345 % n, b = (a + n / 2 + 3) % n;
	uint8_t *dead = map(n);

	for (r = 0; r < n; r++)
		if (r != a && r != b)
			set(dead, r);
	cr_assert_geq(check("all but two dead", n, dead, NULL, a, 1, 1), 1);
	free(dead);
}

/* Ranks that die as the frame reaches them, before forwarding it: the
 * sender's link breaks and its slot moves on (oxr_revoke_failed). */
Test(bmg, ranks_dying_as_the_frame_reaches_them)
{
	static const int permille[] = { 10, 300 };
	int n = big(), r;
	size_t i;

	for (i = 0; i < 2; i++) {
		uint8_t *dead = map(n), *crash = map(n);
		char what[64];
		seed(3 + i);
		for (r = 0; r < n; r++) {
			int x = (int)(rnd() % 1000);
			if (x < permille[i])
				set(dead, r);
			else if (x < 2 * permille[i])
				set(crash, r);
		}
		snprintf(what, sizeof(what), "%d%% dead, %d%% die with it", permille[i] / 10,
			 permille[i] / 10);
		both(what, n, dead, crash);
		free(dead);
		free(crash);
	}
}
