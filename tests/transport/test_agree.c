/* SPDX-License-Identifier: MIT */
/*
 * The shrink's agreement on the failed ranks (transport/agree.h)
 * in-process: the core alone (its tree without deaths is the binomial
 * tree; four ranks driven frame by frame through a root's death and a
 * false report; bad arguments), and over simulated groups (agree_sim.c:
 * rounds, a death found `delay` rounds after it by the ranks that send to
 * or wait on the dead rank): none dead at 1 to 65,536 ranks; at 65,536
 * random sets dead before the start (1%, 30%, 90%, known or found), the
 * root and the first ranks dead, all but two dead; ranks dying during it
 * (the root as it decides and at random rounds, the root's biggest child,
 * a leaf, a run of consecutive ranks, two at once, the root and then the
 * next root, 1% at random) with random seeds, delays and partial sends;
 * every set of up to 7 ranks with each one dying at each round; random
 * small groups under heavy dying; live ranks falsely reported dead.
 * Asserted: every live rank decides, all the same list, which holds every
 * rank dead before the start and no live rank but the falsely reported;
 * no rank that died before the start sends or takes a frame; at most l =
 * ceil(log2 P) frames sent and l taken a rank when none dies during it,
 * l + 1 + 2c sent and 2l + 1 + 3c taken when c do (agree.c); at most 2l
 * rounds with the dead known, 2l + delay + 1 with the root dying as it
 * decides; a rank's state 80 bytes with none dead, O(1 + f) with f.  The
 * figures go to the log.  OXR_TEST_QUICK: 4,097 ranks instead of 65,536;
 * OXR_TEST_SEED picks the sets.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "sim_util.h"

TestSuite(agree, .timeout = 300);

#define LIVES OXR_AGREE_LIVES

static int ceil_log2(int n)
{
	int l = 0;

	while ((int64_t)1 << l < n)
		l++;
	return l;
}

static int32_t *lives(int n) { return sim_lives(n, LIVES); }

/* permille of the ranks dead before the start, rank 0 spared if keep0 */
static void dead_before(int32_t *die, int n, int permille, int keep0)
{
	int r;

	for (r = keep0; r < n; r++)
		if ((int)(rnd() % 1000) < permille)
			die[r] = 0;
}

struct want {
	int max_rounds; /* 0: not checked */
	int log;
};

/* One agreement, checked rank by rank; returns its rounds. */
static int check(const char *what, int n, const int32_t *die, int known, int delay, int cut,
		 const uint8_t *wrong, struct want w)
{
	struct oxr_agree_sim s = { .n = n, .known = known, .delay = delay, .cut = cut, .die = die,
				   .wrong = wrong };
	int l = ceil_log2(n), r, c = 0, f = 0, rounds;
	uint32_t sent_bound, recvd_bound;

	cr_assert_eq(oxr_agree_simulate(&s), 0, "%s: n=%d", what, n);
	for (r = 0; die && r < n; r++) {
		c += die[r] > 0 && die[r] <= s.end;
		f += die[r] == 0 || (die[r] > 0 && die[r] <= s.end);
	}
	/* a false report costs like a death: the accuser answers the accused
	 * by name and tells the next rank of its block, which tells the accused */
	c += s.accused;
	sent_bound = (uint32_t)(c ? l + 1 + 2 * c : l);
	recvd_bound = (uint32_t)(c ? 2 * l + 1 + 3 * c : l);
	cr_assert_eq(s.stalled, 0, "%s: n=%d: still waiting at round %d", what, n, s.end);
	cr_assert_eq(s.undecided, 0, "%s: n=%d: %d live ranks never decided", what, n,
		     s.undecided);
	cr_assert_eq(s.disagree, 0, "%s: n=%d: %d live ranks decided another list", what, n,
		     s.disagree);
	cr_assert_eq(s.dead_missing, 0, "%s: n=%d: %d ranks dead before the start not in the "
		     "decision", what, n, s.dead_missing);
	cr_assert_eq(s.live_in, s.accused, "%s: n=%d: %d live ranks in the decision, %d accused",
		     what, n, s.live_in, s.accused);
	for (r = 0; r < n; r++) {
		int gone = die && (die[r] == 0 || (die[r] > 0 && die[r] <= s.end));
		if (die && die[r] == 0) {
			cr_assert_eq(s.sent[r] + s.recvd[r], 0, "%s: n=%d: rank %d, dead before "
				     "the start, sent or took a frame", what, n, r);
			continue;
		}
		if (gone)
			continue;
		cr_assert_geq(s.decided[r], 0, "%s: n=%d: live rank %d never decided", what, n, r);
		cr_assert_leq(s.sent[r], sent_bound, "%s: n=%d c=%d: rank %d sent %u frames (> %u)",
			      what, n, c, r, s.sent[r], sent_bound);
		cr_assert_leq(s.recvd[r], recvd_bound, "%s: n=%d c=%d: rank %d took %u frames "
			      "(> %u)", what, n, c, r, s.recvd[r], recvd_bound);
	}
	if (s.live)
		cr_assert_geq(s.decisions, 1);
	if (w.max_rounds)
		cr_assert_leq(s.rounds, w.max_rounds, "%s: n=%d: %d rounds (> %d)", what, n,
			      s.rounds, w.max_rounds);
	/* the lists: nothing per P, 4 bytes (8 with the slack of doubling) per
	 * failed rank known, and the ranks answered by name */
	cr_assert_leq(s.max_bytes, sizeof(struct oxr_agree) + 8 * ((size_t)f + 4) +
		      8 * ((size_t)c + 4), "%s: n=%d: %zu bytes of state", what,
		      n, s.max_bytes);
	if (!f && !s.accused)
		cr_assert_eq(s.max_bytes, sizeof(struct oxr_agree));
	if (w.log)
		cr_log_info("%-34s n=%-6d %s live %-6d c=%-3d rounds %-4d frames/rank max "
			    "%-2u mean %4.2f (bound %u) taken max %-2u (%u) probes max %-3u "
			    "failed %-5d bytes %zu", what, n, known ? "known" : "found", s.live, c,
			    s.rounds, s.max_sent, s.live ? (double)s.frames / s.live : 0,
			    sent_bound, s.max_recvd, recvd_bound, s.max_probes, s.failed,
			    s.max_bytes);
	rounds = s.rounds;
	oxr_agree_sim_free(&s);
	return rounds;
}

/* ---- the core alone ------------------------------------------------ */

/* The frames a hand-driven rank owes now, in order, into to[] and kind[]. */
static int drain(struct oxr_agree *a, int *to, int *kind, int max)
{
	int k, t, cnt = 0;

	while ((k = oxr_agree_next(a, &t, NULL, NULL)) != OXR_AGREE_NONE) {
		cr_assert_geq(k, 0);
		cr_assert_lt(cnt, max);
		to[cnt] = t;
		kind[cnt++] = k;
	}
	return cnt;
}

Test(agree, without_deaths_the_tree_is_the_binomial_tree)
{
	static const int sizes[] = { 1, 2, 3, 4, 7, 8, 64, 100, 1000, 65536, 65537, 1 << 20 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i], ranks[6] = { 0, 1, n / 2, n / 3, n - 2, n - 1 }, q;
		for (q = 0; q < 6; q++) {
			struct oxr_agree a;
			int r = ranks[q], w[OXR_AGREE_LEVELS + 1], nw, k, j = 0;
			int low = r ? r & -r : 1 << ceil_log2(n);
			if (r < 0 || r >= n)
				continue;
			cr_assert_eq(oxr_agree_start(&a, r, n, NULL, 0, NULL, NULL), 0);
			cr_assert_eq(a.parent, r ? r - (r & -r) : -1, "n=%d rank %d: parent %d", n,
				     r, a.parent);
			cr_assert_eq(!!a.decided, n == 1, "n=%d: a group of one decides alone", n);
			nw = oxr_agree_waits(&a, w, OXR_AGREE_LEVELS + 1, NULL, NULL);
			if (r)
				cr_assert_eq(w[j++], a.parent);
			/* then the children, nearest first: r + 2^k, 2^k < lowbit(r) */
			for (k = 0; (1 << k) < low && r + (1 << k) < n; k++)
				cr_assert_eq(w[j++], r + (1 << k), "n=%d rank %d: child %d", n, r,
					     w[j - 1]);
			cr_assert_eq(nw, j, "n=%d rank %d: %d waits, %d expected", n, r, nw, j);
			cr_assert_leq(nw - (r != 0), ceil_log2(n));
			cr_assert_eq(oxr_agree_bytes(&a), sizeof(a));
			oxr_agree_free(&a);
		}
	}
}

/* Four ranks, 0 -> {1, 2}, 2 -> {3}, driven frame by frame: the root
 * dies before it decides; 1, the next live rank, takes over and decides
 * {0}; 2 re-sends to it. */
Test(agree, four_ranks_by_hand_the_root_dies)
{
	struct oxr_agree a[4];
	int to[8], kind[8], r;

	for (r = 0; r < 4; r++)
		cr_assert_eq(oxr_agree_start(&a[r], r, 4, NULL, 0, NULL, NULL), 0);
	/* the leaves report; 0 and 2 wait for theirs */
	cr_assert_eq(drain(&a[0], to, kind, 8), 0);
	cr_assert_eq(drain(&a[2], to, kind, 8), 0);
	cr_assert_eq(drain(&a[1], to, kind, 8), 1);
	cr_assert(to[0] == 0 && kind[0] == OXR_AGREE_UP);
	cr_assert_eq(drain(&a[3], to, kind, 8), 1);
	cr_assert(to[0] == 2 && kind[0] == OXR_AGREE_UP);
	cr_assert_eq(oxr_agree_recv(&a[2], 3, OXR_AGREE_UP, a[3].fail, a[3].nfail, NULL, NULL), 0);
	cr_assert_eq(drain(&a[2], to, kind, 8), 1);
	cr_assert(to[0] == 0 && kind[0] == OXR_AGREE_UP);
	/* 0 dies with both reports unread: 1 and 2 find it */
	cr_assert_eq(oxr_agree_failed(&a[1], 0, NULL, NULL), 0);
	cr_assert_eq(a[1].parent, -1, "1 is the root now");
	cr_assert(!a[1].decided, "it waits for level 1, rank 2");
	cr_assert_eq(drain(&a[1], to, kind, 8), 0);
	cr_assert_eq(oxr_agree_failed(&a[2], 0, NULL, NULL), 0);
	cr_assert_eq(a[2].parent, 1);
	cr_assert_eq(drain(&a[2], to, kind, 8), 1);
	cr_assert(to[0] == 1 && kind[0] == OXR_AGREE_UP);
	cr_assert_eq(a[2].nfail, 1);
	cr_assert_eq(a[2].fail[0], 0);
	cr_assert_eq(oxr_agree_recv(&a[1], 2, OXR_AGREE_UP, a[2].fail, a[2].nfail, NULL, NULL), 0);
	cr_assert_eq(a[1].decided, 2, "the new root decides");
	cr_assert(a[1].ndec == 1 && a[1].dec[0] == 0);
	cr_assert_eq(drain(&a[1], to, kind, 8), 1);
	cr_assert(to[0] == 2 && kind[0] == OXR_AGREE_DECIDE);
	cr_assert_eq(oxr_agree_recv(&a[2], 1, OXR_AGREE_DECIDE, a[1].dec, a[1].ndec, NULL, NULL),
		     0);
	cr_assert_eq(a[2].decided, 1);
	cr_assert_eq(drain(&a[2], to, kind, 8), 1, "to 3, not back to 1 that gave it");
	cr_assert(to[0] == 3 && kind[0] == OXR_AGREE_DECIDE);
	cr_assert_eq(oxr_agree_recv(&a[3], 2, OXR_AGREE_DECIDE, a[2].dec, a[2].ndec, NULL, NULL),
		     0);
	cr_assert(a[3].decided && a[3].ndec == 1 && a[3].dec[0] == 0);
	cr_assert_eq(drain(&a[3], to, kind, 8), 0);
	/* a late report from 2 gets the decision back; a second decision is
	 * ignored; a decision from a rank known dead is not taken */
	cr_assert_eq(oxr_agree_recv(&a[1], 2, OXR_AGREE_UP, a[2].fail, a[2].nfail, NULL, NULL), 0);
	cr_assert_eq(drain(&a[1], to, kind, 8), 0, "2 has it (it came from 1)");
	for (r = 1; r < 4; r++)
		oxr_agree_free(&a[r]);
	cr_assert_eq(oxr_agree_start(&a[2], 2, 4, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(oxr_agree_failed(&a[2], 0, NULL, NULL), 0);
	{
		static const int32_t other[] = { 3 };
		cr_assert_eq(oxr_agree_recv(&a[2], 0, OXR_AGREE_DECIDE, other, 1, NULL, NULL), 0);
		cr_assert(!a[2].decided, "0 is known dead: its decision is dropped");
	}
	oxr_agree_free(&a[2]);
	oxr_agree_free(&a[0]);
}

/* 0 wrongly reports 1 dead: 1's report still comes, and 1 gets the
 * decision by name, and sees itself in it. */
Test(agree, a_rank_reported_dead_wrongly_learns_it)
{
	static const int32_t one[] = { 1 };
	struct oxr_agree a[2];
	int to[4], kind[4];

	cr_assert_eq(oxr_agree_start(&a[0], 0, 2, one, 1, NULL, NULL), 0);
	cr_assert_eq(a[0].decided, 2, "0 alone in its view: it decides {1} at once");
	cr_assert_eq(oxr_agree_start(&a[1], 1, 2, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(drain(&a[1], to, kind, 4), 1);
	cr_assert_eq(drain(&a[0], to, kind, 4), 0, "nobody to tell yet");
	cr_assert_eq(oxr_agree_recv(&a[0], 1, OXR_AGREE_UP, a[1].fail, a[1].nfail, NULL, NULL), 0);
	cr_assert_eq(drain(&a[0], to, kind, 4), 1);
	cr_assert(to[0] == 1 && kind[0] == OXR_AGREE_DECIDE);
	cr_assert_eq(oxr_agree_recv(&a[1], 0, OXR_AGREE_DECIDE, a[0].dec, a[0].ndec, NULL, NULL),
		     0);
	cr_assert(a[1].decided && a[1].ndec == 1 && a[1].dec[0] == 1, "1 sees itself excluded");
	oxr_agree_free(&a[0]);
	oxr_agree_free(&a[1]);
}

/* A decision that comes from below goes up: 3 was told the decision by a
 * rank that reported it dead (by name), and 2 takes it from 3 before it
 * reported to 0. */
Test(agree, a_decision_from_a_child_goes_up_and_down)
{
	static const int32_t dec[] = { 3 };
	struct oxr_agree a;
	int to[4], kind[4];

	cr_assert_eq(oxr_agree_start(&a, 2, 8, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(a.parent, 0);
	cr_assert_eq(oxr_agree_recv(&a, 3, OXR_AGREE_DECIDE, dec, 1, NULL, NULL), 0);
	cr_assert_eq(a.decided, 1);
	cr_assert_eq(drain(&a, to, kind, 4), 1, "3 is in the decision: no child left to tell");
	cr_assert(to[0] == 0 && kind[0] == OXR_AGREE_DECIDE, "the parent gets it");
	/* its parent dies: the next one gets it too */
	cr_assert_eq(oxr_agree_failed(&a, 0, NULL, NULL), 0);
	cr_assert_eq(a.parent, 1);
	cr_assert_eq(drain(&a, to, kind, 4), 1);
	cr_assert(to[0] == 1 && kind[0] == OXR_AGREE_DECIDE);
	oxr_agree_free(&a);
}

Test(agree, bad_arguments_are_rejected)
{
	static const int32_t unsorted[] = { 3, 2 }, twice[] = { 2, 2 }, far[] = { 1, 9 },
			     self[] = { 1, 5 }, neg[] = { -1 }, ok[] = { 2, 3 };
	struct oxr_agree a;
	struct oxr_agree_sim s = { .n = 8, .delay = 1 };
	int32_t die[8];
	int to, r;

	cr_assert_eq(oxr_agree_start(&a, 0, 0, NULL, 0, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, -1, 8, NULL, 0, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 8, 8, NULL, 0, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 5, 8, unsorted, 2, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 5, 8, twice, 2, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 5, 8, far, 2, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 5, 8, self, 2, NULL, NULL), -1, "a rank dead to itself");
	cr_assert_eq(oxr_agree_start(&a, 5, 8, neg, 1, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 5, 8, ok, -1, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_start(&a, 5, 8, NULL, 1, NULL, NULL), -1);
	cr_assert(oxr_agree_list_ok(8, ok, 2) && oxr_agree_list_ok(8, NULL, 0));
	cr_assert(!oxr_agree_list_ok(8, unsorted, 2) && !oxr_agree_list_ok(8, twice, 2) &&
		  !oxr_agree_list_ok(8, far, 2) && !oxr_agree_list_ok(8, neg, 1) &&
		  !oxr_agree_list_ok(8, ok, -1));
	cr_assert_eq(oxr_agree_start(&a, 4, 8, ok, 2, NULL, NULL), 0);
	cr_assert_eq(oxr_agree_recv(&a, 4, OXR_AGREE_UP, NULL, 0, NULL, NULL), -1, "from itself");
	cr_assert_eq(oxr_agree_recv(&a, 8, OXR_AGREE_UP, NULL, 0, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_recv(&a, -1, OXR_AGREE_DECIDE, NULL, 0, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_recv(&a, 5, 7, NULL, 0, NULL, NULL), -1, "no such kind");
	cr_assert_eq(oxr_agree_recv(&a, 5, OXR_AGREE_UP, far, 2, NULL, NULL), -1, "9 of 8");
	cr_assert_eq(oxr_agree_recv(&a, 5, OXR_AGREE_UP, neg, 1, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_recv(&a, 5, OXR_AGREE_UP, ok, -2, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_recv(&a, 0, OXR_AGREE_UP, NULL, 0, NULL, NULL), -1,
		     "a contribution from below: children are above their parent");
	cr_assert_eq(oxr_agree_failed(&a, 4, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_failed(&a, 8, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_failed(&a, -3, NULL, NULL), -1);
	cr_assert_eq(oxr_agree_failed(&a, 2, NULL, NULL), 0, "known already: nothing");
	cr_assert_eq(oxr_agree_next(&a, &to, NULL, NULL), OXR_AGREE_NONE, "5 not reported yet");
	oxr_agree_free(&a);
	oxr_agree_free(&a); /* twice is harmless */
	for (r = 0; r < 8; r++)
		die[r] = LIVES;
	s.n = 0;
	cr_assert_eq(oxr_agree_simulate(&s), -1);
	s.n = 8;
	s.delay = 0;
	cr_assert_eq(oxr_agree_simulate(&s), -1, "a death is found a round after it at least");
	s.delay = 1;
	s.cut = -1;
	cr_assert_eq(oxr_agree_simulate(&s), -1);
	s.cut = 0;
	die[3] = -2;
	s.die = die;
	cr_assert_eq(oxr_agree_simulate(&s), -1);
	die[3] = LIVES;
	cr_assert_eq(oxr_agree_simulate(&s), 0);
	cr_assert_eq(s.undecided, 0);
	oxr_agree_sim_free(&s);
}

/* ---- simulated groups ---------------------------------------------- */

Test(agree, none_dead_at_1_to_65536_ranks)
{
	const int sizes[] = { 1, 2, 3, 7, 64, 1000, big() };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i], l = ceil_log2(n);
		struct oxr_agree_sim s = { .n = n, .delay = 1 };
		int rounds = check("none dead", n, NULL, 1, 1, 0, NULL,
				   (struct want){ .max_rounds = 2 * l, .log = 1 });
		cr_assert_eq(oxr_agree_simulate(&s), 0);
		/* l up and l down: the binomial tree's depth, exactly at 2^k */
		if (!(n & (n - 1)))
			cr_assert_eq(rounds, 2 * l, "n=%d: %d rounds", n, rounds);
		cr_assert_eq(s.frames, 2 * (uint64_t)(n - 1), "n=%d: one up, one down per edge",
			     n);
		cr_assert_eq(s.max_sent, (uint32_t)l);
		cr_assert_eq(s.failed, 0);
		oxr_agree_sim_free(&s);
	}
}

Test(agree, random_sets_dead_before_the_start_at_65536_ranks)
{
	static const int permille[] = { 10, 300, 900 };
	int n = big(), l = ceil_log2(n), known, k;
	size_t i;

	for (i = 0; i < sizeof(permille) / sizeof(permille[0]); i++)
		for (k = 0; k < 2; k++)
			for (known = 1; known >= 0; known--) {
				int32_t *die = lives(n);
				char what[64];
				seed((uint64_t)n * 1000 + i * 10 + (uint64_t)k);
				dead_before(die, n, permille[i], 0);
				snprintf(what, sizeof(what), "%d.%d%% dead before, set %d",
					 permille[i] / 10, permille[i] % 10, k);
				/* known: the tree over the live ranks, no deeper than l */
				check(what, n, die, known, 1 + k, 0, NULL,
				      (struct want){ .max_rounds = known ? 2 * l : 0, .log = 1 });
				free(die);
			}
}

Test(agree, the_root_and_the_first_ranks_dead_before_the_start)
{
	static const int first[] = { 1, 2, 3, 100, 4096 };
	int n = big(), l = ceil_log2(n), r, known;
	size_t i;

	for (i = 0; i < sizeof(first) / sizeof(first[0]); i++)
		for (known = 1; known >= 0; known--) {
			int32_t *die = lives(n);
			char what[64];
			for (r = 0; r < first[i] && r < n; r++)
				die[r] = 0;
			snprintf(what, sizeof(what), "ranks 0..%d dead before", first[i] - 1);
			check(what, n, die, known, 1, 0, NULL,
			      (struct want){ .max_rounds = known ? 2 * l : 0, .log = 1 });
			free(die);
		}
}

Test(agree, all_but_two_dead_and_every_other_rank_dead)
{
	int n = big(), l = ceil_log2(n), r, known;

	for (known = 1; known >= 0; known--) {
		int32_t *die = lives(n);
		for (r = 0; r < n; r++)
			if (r != 12345 % n && r != (12345 + n / 2 + 3) % n)
				die[r] = 0;
		check("all but two dead before", n, die, known, 1, 0, NULL,
		      (struct want){ .max_rounds = known ? 2 * l : 0, .log = 1 });
		for (r = 0; r < n; r++)
			die[r] = r % 2 ? LIVES : 0;
		check("every even rank dead before", n, die, known, 1, 0, NULL,
		      (struct want){ .max_rounds = known ? 2 * l : 0, .log = 1 });
		for (r = 0; r < n; r++)
			die[r] = r % 2 ? LIVES : 3;
		check("every even rank dies in round 3", n, die, known, 1, 0, NULL,
		      (struct want){ .log = 1 });
		free(die);
	}
}

/* The root dies as it decides (in round floor(log2 P), the tree's height
 * with none dead, after its last report), sending `cut` decisions first,
 * or at a random round: its children find it, the next live rank decides
 * (or holds the decision) and answers. */
Test(agree, the_root_dies_during_it)
{
	int n = big(), l = ceil_log2(n), h = ceil_log2(n + 1) - 1, k;

	for (k = 0; k < 12; k++) {
		int32_t *die = lives(n);
		int delay = 1 + (int)(k % 3), cut = (int)(k / 3 % 3), at_l = k < 6, rounds;
		char what[64];
		seed(100 + (uint64_t)k);
		if (k % 2)
			dead_before(die, n, 10, 1);
		die[0] = at_l ? h : 1 + (int)(rnd() % (uint64_t)(2 * l));
		snprintf(what, sizeof(what), "root dies in round %d, %d sent", die[0], cut);
		rounds = check(what, n, die, 1, delay, cut, NULL,
			       (struct want){ .max_rounds = 2 * l + delay + 1, .log = 1 });
		/* found in round h + delay by the ranks waiting on it; rank 1
		 * decides on their reports a round later, or, given the decision
		 * by the root's one send, hands it to them at once; then h down */
		if (at_l && !(k % 2))
			cr_assert_eq(rounds, 2 * h + delay + !cut, "%s: %d rounds", what, rounds);
		free(die);
	}
}

/* An interior rank (the root's biggest child, and one with many
 * children), a leaf, at random rounds and random seeds. */
Test(agree, an_interior_rank_or_a_leaf_dies_during_it)
{
	int n = big(), l = ceil_log2(n), k;

	for (k = 0; k < 12; k++) {
		int32_t *die = lives(n);
		int victim, delay = 1 + (int)(k % 3), cut = (int)(k % 2);
		char what[64];
		seed(200 + (uint64_t)k);
		dead_before(die, n, 10, 1);
		if (k % 3 == 0)
			victim = 1 << (l - 1);
		else if (k % 3 == 1)
			victim = (int)(rnd() % (uint64_t)n) & ~255;
		else
			victim = (int)(rnd() % (uint64_t)n) | 1;
		if (victim >= n)
			victim = n - 1;
		die[victim] = 1 + (int)(rnd() % (uint64_t)(2 * l + 2));
		snprintf(what, sizeof(what), "rank %d dies in round %d", victim, die[victim]);
		check(what, n, die, 1, delay, cut, NULL, (struct want){ .log = 1 });
		free(die);
	}
}

Test(agree, a_run_of_consecutive_ranks_dies_at_once)
{
	int n = big(), l = ceil_log2(n), k, r;

	for (k = 0; k < 8; k++) {
		int32_t *die = lives(n);
		int len = 1 << (k % 4 * 2 + 1), start, at;
		char what[64];
		seed(300 + (uint64_t)k);
		start = k < 4 ? (int)(rnd() % (uint64_t)n) : n - len / 2;
		at = 1 + (int)(rnd() % (uint64_t)(2 * l + 2));
		for (r = 0; r < len; r++)
			die[(start + r) % n] = at;
		snprintf(what, sizeof(what), "%d from rank %d die in round %d", len, start, at);
		check(what, n, die, k % 2, 1 + k % 2, k % 3, NULL, (struct want){ .log = 1 });
		free(die);
	}
}

Test(agree, two_die_at_once_and_the_root_then_the_next_root)
{
	int n = big(), l = ceil_log2(n), h = ceil_log2(n + 1) - 1, k;

	for (k = 0; k < 12; k++) {
		int32_t *die = lives(n);
		int a = 0, b, at = 1 + (int)(k % (2 * l + 2));
		char what[64];
		seed(400 + (uint64_t)k);
		dead_before(die, n, 10, 1);
		if (k < 4) { /* the root and a random rank */
			b = 1 + (int)(rnd() % (uint64_t)(n - 1));
			die[a] = die[b] = at;
		} else if (k < 8) { /* two random ranks */
			a = (int)(rnd() % (uint64_t)n);
			b = (int)(rnd() % (uint64_t)n);
			die[a] = die[b] = at;
		} else { /* the root as it decides, the next root a round later */
			for (b = 1; b < n && !die[b]; b++)
				;
			die[a] = h;
			die[b] = h + 1 + (int)(k % 3);
		}
		snprintf(what, sizeof(what), "%d and %d die", a, b);
		check(what, n, die, 1, 1 + (int)(k % 3), (int)(k % 2), NULL,
		      (struct want){ .log = 1 });
		free(die);
	}
}

Test(agree, one_percent_die_at_random_rounds)
{
	int n = big(), l = ceil_log2(n), k, r;

	for (k = 0; k < 6; k++) {
		int32_t *die = lives(n);
		char what[64];
		seed(500 + (uint64_t)k);
		for (r = 0; r < n; r++) {
			int x = (int)(rnd() % 1000);
			if (x < 10)
				die[r] = 0;
			else if (x < 20)
				die[r] = 1 + (int)(rnd() % (uint64_t)(2 * l + 2));
		}
		snprintf(what, sizeof(what), "1%% dead, 1%% dying, set %d", k);
		check(what, n, die, k % 2, 1 + k % 3, k % 3, NULL, (struct want){ .log = 1 });
		free(die);
	}
}

/* Every set of ranks dead before the start of up to 7 ranks, with each
 * live rank dying at each round, whole or after one send. */
Test(agree, every_small_group_with_each_rank_dying_at_each_round)
{
	int n, r, at, cut;

	for (n = 1; n <= 7; n++) {
		uint32_t set;
		int l = ceil_log2(n);
		for (set = 0; set < 1u << n; set++)
			for (r = -1; r < n; r++)
				for (at = 1; at <= (r < 0 ? 1 : 2 * l + 2); at++)
					for (cut = 0; cut < 2; cut++) {
						int32_t die[8];
						int q;
						if (r >= 0 && set >> r & 1)
							continue;
						for (q = 0; q < n; q++)
							die[q] = set >> q & 1 ? 0 : LIVES;
						if (r >= 0)
							die[r] = at;
						check("small", n, die, (int)(set & 1),
						      1 + at % 2, cut, NULL,
						      (struct want){ 0 });
					}
	}
}

/* Groups of 2 to 40 ranks, up to 40% dying at adversarial rounds (around
 * the root's decision), with the dead before the start known or not. */
Test(agree, random_small_groups_under_heavy_dying)
{
	int k;

	for (k = 0; k < 20000; k++) {
		int n, l, r, known, permille, dying;
		int32_t die[40];
		seed(600 + (uint64_t)k);
		n = 2 + (int)(rnd() % 39);
		l = ceil_log2(n);
		known = (int)(rnd() % 2);
		permille = (int)(rnd() % 4) * 100;
		dying = (int)(rnd() % 5) * 100;
		for (r = 0; r < n; r++) {
			die[r] = (int)(rnd() % 1000) < permille ? 0 : LIVES;
			if (die[r] && (int)(rnd() % 1000) < dying)
				die[r] = rnd() % 2 ? l + (int)(rnd() % 3)
						   : 1 + (int)(rnd() % (uint64_t)(4 * l + 4));
		}
		check("random small", n, die, known, 1 + (int)(rnd() % 4), (int)(rnd() % 4), NULL,
		      (struct want){ 0 });
	}
}

/* Live ranks reported dead by their parent at the start: in the decision,
 * and each decides it. */
Test(agree, live_ranks_reported_dead_wrongly)
{
	int n = big(), k, r;

	for (k = 0; k < 4; k++) {
		int32_t *die = lives(n);
		uint8_t *wrong = calloc(((size_t)n + 7) / 8, 1);
		struct oxr_agree_sim s = { .n = n, .known = 1, .delay = 1, .die = die,
					   .wrong = wrong };
		cr_assert(wrong);
		seed(700 + (uint64_t)k);
		dead_before(die, n, 10 * (k % 2), 1);
		for (r = 0; r < 64; r++) {
			int x = 1 + (int)(rnd() % (uint64_t)(n - 1));
			wrong[x / 8] |= (uint8_t)(1u << x % 8);
		}
		check("64 live ranks reported dead", n, die, 1, 1, 0, wrong,
		      (struct want){ .log = 1 });
		cr_assert_eq(oxr_agree_simulate(&s), 0);
		cr_assert_geq(s.accused, 48, "most of them have a parent of their own");
		cr_assert_eq(s.live_in, s.accused);
		for (r = 0; r < n; r++)
			if (die[r] == LIVES)
				cr_assert_geq(s.decided[r], 0);
		oxr_agree_sim_free(&s);
		free(wrong);
		free(die);
	}
}
