/* SPDX-License-Identifier: MIT */
/*
 * The crystal router over real processes (oxr-run, oversubscribed): random
 * all-to-some patterns for n = 1..17 and 32 with every record checked at its
 * destination (exactly the expected ones, each once, in order per source),
 * also with ranks starting transfers late (so others run ahead),
 * stages too big for a landing region (messages, then grown regions), a
 * 64 MiB record, two routers alive at once, routers made one after the
 * other, destinations outside the group, and a peer that puts
 * malformed stages, each once per provider (tcp, and verbs where there is an
 * RDMA device; OXR_TEST_PROVIDERS picks: common/providers.h), the ranks'
 * links on it.  The ranks are tests/collectives/crystal_child.c.  OXR_TEST_QUICK
 * (for the rxe guest) runs fewer transfers per group, every size of the
 * main test still, and leaves out the second 32-rank group and 64 MiB run.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers.h"
#include "run_child.h"

#define CHILD OXR_BIN_DIR "/crystal_child"

TestSuite(crystal_per_provider, .timeout = 600);

/* expect: a text every rank's line must hold (NULL: none); env: the ranks'
 * (at most 6 entries), to which pv's OXR_TRANSPORT is added */
static void run_group_x(const struct provider *pv, int n, const char *const *env,
			const char *mode, const char *arg, const char *expect)
{
	char line[64], what[96];
	const char *penv[8] = { provider_env(pv) };
	int e;
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

	for (e = 0; env[e]; e++) {
		cr_assert_lt(e + 1, 7, "too many environment entries");
		penv[e + 1] = env[e];
	}
	r = run_ranks(n, 280, child, penv, 300);
	snprintf(what, sizeof(what), "%s %s", mode, arg ? arg : "");
	expect_ranks_ok(&r, n, mode, what);
	if (expect)
		cr_assert_eq(count_of(r.out, expect), n, "'%s' %d times in:\n%s", expect, n, r.out);
	/* the links are this instance's provider */
	if (n > 1 && !strcmp(mode, "patterns")) {
		snprintf(line, sizeof(line), "ok over %s", pv->name);
		cr_assert_eq(count_of(r.out, line), n, "'%s' %d times in:\n%s", line, n, r.out);
	}
	run_free(&r);
}

static void run_group(const struct provider *pv, int n, const char *const *env, const char *mode,
		      const char *arg)
{
	run_group_x(pv, n, env, mode, arg, NULL);
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

PROVIDER_TEST(crystal, random_patterns_1_to_17_and_32_ranks)
{
	char a[64];
	int n;

	for (n = 1; n <= 17; n++)
		run_group(pv, n, quiet, "patterns", pat(a, sizeof(a), 1000 + n, 30, 0));
	run_group(pv, 32, quiet, "patterns", pat(a, sizeof(a), 77, 30, 0));
}

PROVIDER_TEST(crystal, skewed_ranks_run_a_transfer_ahead)
{
	/* late starts let fast ranks put the next transfer's stages early */
	int n[] = { 2, 3, 6, 11, 16, 32 }, i;
	char a[64];

	/* the guest's 32-rank group is the other test's; 32 ranks cost most there */
	for (i = 0; i < (scaled(6) == 6 ? 6 : 5); i++)
		run_group(pv, n[i], quiet, "patterns", pat(a, sizeof(a), 31, 40, 3000));
}

PROVIDER_TEST(crystal, stages_bigger_than_a_region_go_by_messages_and_regions_grow)
{
	const char *const env[] = { "OXR_LOG_LEVEL=error", "OXR_CRYSTAL_REGION_BYTES=64",
				    "OXR_CRYSTAL_REGION_MAX=2048", NULL };
	int n[] = { 2, 3, 5, 8, 13 }, i;
	char a[64];

	for (i = 0; i < 5; i++)
		run_group_x(pv, n[i], env, "patterns", pat(a, sizeof(a), 5, 30, 1000),
			    "region 2048, 1 grows");
}

/* Two routers (and a barrier) on one group at once, each with windows of
 * its own: skewed ranks run into one router's transfer while others are in
 * the other's, and small regions make both re-create their windows. */
PROVIDER_TEST(crystal, two_routers_alive_at_once_each_land_their_own_records)
{
	const char *const grow[] = { "OXR_LOG_LEVEL=error", "OXR_CRYSTAL_REGION_BYTES=64",
				     "OXR_CRYSTAL_REGION_MAX=2048", NULL };
	int n[] = { 2, 3, 6, 9 }, i;
	char a[64];

	for (i = 0; i < 4; i++)
		run_group_x(pv, n[i], quiet, "two", pat(a, sizeof(a), 40 + n[i], 20, 3000),
			    "two ok");
	for (i = 0; i < 2; i++)
		run_group_x(pv, n[i + 1], grow, "two", pat(a, sizeof(a), 7, 20, 1000),
			    "regions 2048 and 2048, 1 and 1 grows");
}

/* A router per transfer, one after the other (as oxr-server's oxr_crystal
 * makes them), ranks skewed: each router's window is a new one. */
PROVIDER_TEST(crystal, routers_made_one_after_the_other_on_skewed_ranks)
{
	int n[] = { 2, 4, 7 }, i;
	char a[64];

	for (i = 0; i < 3; i++)
		run_group_x(pv, n[i], quiet, "serial", pat(a, sizeof(a), 60 + n[i], 40, 3000),
			    "serial ok");
}

PROVIDER_TEST(crystal, one_record_of_64_MiB)
{
	run_group(pv, 2, quiet, "big", NULL);
	if (scaled(2) == 2)
		run_group(pv, 3, quiet, "big", NULL);
}

PROVIDER_TEST(crystal, destinations_outside_the_group_are_refused_at_pack)
{
	run_group(pv, 1, quiet, "baddest", NULL);
	run_group(pv, 3, quiet, "baddest", NULL);
}

PROVIDER_TEST(crystal, malformed_stages_from_a_peer_are_errors)
{
	const char *what[] = { "dest", "len", "stray", "magic", "region" };
	int i;

	for (i = 0; i < 5; i++)
		run_group(pv, 2, quiet, "evil", what[i]);
}
