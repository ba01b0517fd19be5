/* SPDX-License-Identifier: MIT */
/*
 * The crystal router over real processes (oxr-run, oversubscribed): random
 * all-to-some patterns for n = 1..17 and 32 with every record checked at its
 * destination (exactly the expected ones, each once, in order per source),
 * also with ranks starting transfers late (so others run ahead),
 * stages too big for a landing region (messages, then grown regions), a
 * 64 MiB record, destinations outside the group, and a peer that puts
 * malformed stages.  The ranks are tests/collectives/crystal_child.c.  OXR_TEST_QUICK
 * (for the rxe guest) runs fewer transfers per group, every size of the
 * main test still, and leaves out the second 32-rank group and 64 MiB run.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_child.h"

#define CHILD OXR_BIN_DIR "/crystal_child"

TestSuite(crystal, .timeout = 600);

/* expect: a text every rank's line must hold (NULL: none) */
static void run_group_x(int n, const char *const *env, const char *mode, const char *arg,
			const char *expect)
{
	char line[64], what[96];
	/* "SEED ROUNDS JITTER" of patterns travel as one string: split them */
	char a[64], *b = NULL, *c = NULL;
	const char *child[] = { CHILD, mode, NULL, NULL, NULL, NULL };
	struct run r;

	if (arg) {
		snprintf(a, sizeof(a), "%s", arg);
		if ((b = strchr(a, ' ')))
			*b++ = 0;
		if (b && (c = strchr(b, ' ')))
			*c++ = 0;
		child[2] = a;
		child[3] = b;
		child[4] = b ? c : NULL;
	}

	r = run_ranks(n, 280, child, env, 300);
	snprintf(what, sizeof(what), "%s %s", mode, arg ? arg : "");
	expect_ranks_ok(&r, n, mode, what);
	if (expect)
		cr_assert_eq(count_of(r.out, expect), n, "'%s' %d times in:\n%s", expect, n, r.out);
	/* the links are what the environment forces (the rxe guest: verbs) */
	if (n > 1 && !strcmp(mode, "patterns")) {
		const char *tr = getenv("OXR_TRANSPORT");
		snprintf(line, sizeof(line), "ok over %s", tr && !strcmp(tr, "verbs") ? "verbs" : "tcp");
		cr_assert_eq(count_of(r.out, line), n, "'%s' %d times in:\n%s", line, n, r.out);
	}
	run_free(&r);
}

static void run_group(int n, const char *const *env, const char *mode, const char *arg)
{
	run_group_x(n, env, mode, arg, NULL);
}

/* Fewer transfers per group inside the (slow, emulated) rxe guest. */
static int scaled(int k)
{
	const char *e = getenv("OXR_TEST_QUICK");

	return e && *e && strcmp(e, "0") ? (k / 5 > 4 ? k / 5 : 4) : k;
}

/* "SEED ROUNDS JITTER_US" for patterns, ROUNDS scaled */
static const char *pat(char *buf, size_t n, int seed, int rounds, int jitter_us)
{
	snprintf(buf, n, "%d %d %d", seed, scaled(rounds), jitter_us);
	return buf;
}

static const char *const quiet[] = { "OXR_LOG_LEVEL=error", NULL };

Test(crystal, random_patterns_1_to_17_and_32_ranks)
{
	char a[64];
	int n;

	for (n = 1; n <= 17; n++)
		run_group(n, quiet, "patterns", pat(a, sizeof(a), 1000 + n, 30, 0));
	run_group(32, quiet, "patterns", pat(a, sizeof(a), 77, 30, 0));
}

Test(crystal, skewed_ranks_run_a_transfer_ahead)
{
	/* late starts let fast ranks put the next transfer's stages early */
	int n[] = { 2, 3, 6, 11, 16, 32 }, i;
	char a[64];

	/* the guest's 32-rank group is the other test's; 32 ranks cost most there */
	for (i = 0; i < (scaled(6) == 6 ? 6 : 5); i++)
		run_group(n[i], quiet, "patterns", pat(a, sizeof(a), 31, 40, 3000));
}

Test(crystal, stages_bigger_than_a_region_go_by_messages_and_regions_grow)
{
	const char *const env[] = { "OXR_LOG_LEVEL=error", "OXR_CRYSTAL_REGION_BYTES=64",
				    "OXR_CRYSTAL_REGION_MAX=2048", NULL };
	int n[] = { 2, 3, 5, 8, 13 }, i;
	char a[64];

	for (i = 0; i < 5; i++)
		run_group_x(n[i], env, "patterns", pat(a, sizeof(a), 5, 30, 1000),
			    "region 2048, 1 grows");
}

Test(crystal, one_record_of_64_MiB)
{
	run_group(2, quiet, "big", NULL);
	if (scaled(2) == 2)
		run_group(3, quiet, "big", NULL);
}

Test(crystal, destinations_outside_the_group_are_refused_at_pack)
{
	run_group(1, quiet, "baddest", NULL);
	run_group(3, quiet, "baddest", NULL);
}

Test(crystal, malformed_stages_from_a_peer_are_errors)
{
	const char *what[] = { "dest", "len", "stray", "magic", "region" };
	int i;

	for (i = 0; i < 5; i++)
		run_group(2, quiet, "evil", what[i]);
}
