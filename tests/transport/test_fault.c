/* SPDX-License-Identifier: MIT */
/*
 * Fault injection: for P = 4 and 8 and each of send/receive, bcast,
 * reduce, the barrier and the crystal router, a random rank is killed
 * (SIGKILL) at a random moment while every rank runs the operation in a
 * loop (tests/transport/fault_child.c).  Every survivor must fail with an error
 * within 2 s of the kill, shrink, run the operation again correctly on the
 * shrunk group, and end holding no more file descriptors than it started
 * with.  Prints the table: trials, detected, max detection time, recovered.
 *
 * OXR_FAULT_TRIALS trials per operation and P (default 4; 50 for the
 * issue's full run); OXR_TEST_SEED moves the victims and moments.  Once
 * per provider (tcp, and verbs where there is an RDMA device;
 * OXR_TEST_PROVIDERS picks: common/providers.h): the ranks' links, and the
 * shrunk group's, run on it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers.h"
#include "run_child.h"

#define RUN OXR_BIN_DIR "/oxr-run"
#define CHILD OXR_BIN_DIR "/fault_child"

TestSuite(fault_per_provider, .timeout = 1800);

struct row {
	int trials, detected, recovered;
	double max_ms;
};

/* One trial: 1 if every survivor detected in 2 s and recovered. */
static void trial(const struct provider *pv, const char *op, int p, unsigned seed, struct row *row,
		  char *why, size_t wn)
{
	char nbuf[16], sbuf[32], line[96];
	const char *argv[] = { RUN, "-n", nbuf, "--survive", "--", CHILD, op, sbuf, NULL };
	const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
	struct run r;
	long long kill_at = -1, t;
	int victim = -1, i, det = 0, rec = 0, fds = 0, on_pv;
	const char *at;

	snprintf(nbuf, sizeof(nbuf), "%d", p);
	snprintf(sbuf, sizeof(sbuf), "%u", seed);
	r = spawn_run(argv, env, NULL, 120);
	row->trials++;
	if ((at = strstr(r.out, "victim ")))
		sscanf(at, "victim %d kill at %lld", &victim, &kill_at);
	for (i = 0; i < p; i++) {
		int code;
		if (i == victim)
			continue;
		snprintf(line, sizeof(line), "rank %d: %s failed at ", i, op);
		if ((at = strstr(r.out, line)) && sscanf(at + strlen(line), "%lld (%d)", &t, &code) == 2 &&
		    kill_at >= 0) {
			double ms = (double)(t - kill_at) / 1000.0;
			if (ms < 2000.0)
				det++;
			if (ms > row->max_ms)
				row->max_ms = ms;
		}
		snprintf(line, sizeof(line), "rank %d: %s recovered over ", i, op);
		rec += count_of(r.out, line) == 1;
		snprintf(line, sizeof(line), "rank %d: nothing leaked", i);
		fds += count_of(r.out, line) == 1;
	}
	if (victim >= 0 && det == p - 1)
		row->detected++;
	/* the links were this instance's provider: every survivor that saw an
	 * open link names it, and at least one did */
	snprintf(line, sizeof(line), " recovered over %s\n", pv->name);
	on_pv = count_of(r.out, line);
	if (victim >= 0 && rec == p - 1 && fds == p - 1 && on_pv >= 1 &&
	    on_pv + count_of(r.out, " recovered over no link\n") == p - 1)
		row->recovered++;
	else if (!why[0])
		snprintf(why, wn, "%s P=%d seed %u: victim %d, %d detected, %d recovered (%d over %s), "
			 "%d leaked nothing\nstdout:\n%.2000s\nstderr:\n%.2000s", op, p, seed, victim,
			 det, rec, on_pv, pv->name, fds, r.out, r.err);
	run_free(&r);
}

PROVIDER_TEST(fault, a_rank_killed_at_a_random_moment_is_detected_and_the_survivors_recover)
{
	static const char *const ops[] = { "sendrecv", "bcast", "reduce", "barrier", "crystal" };
	const char *tv = getenv("OXR_FAULT_TRIALS"), *sv = getenv("OXR_TEST_SEED");
	int trials = tv ? atoi(tv) : 4, k, p, t, ok = 1;
	unsigned seed = sv ? (unsigned)strtoul(sv, NULL, 10) : 20261203u;
	char why[5000] = "";

	cr_log_info("%-9s %2s %7s %9s %14s %10s", "operation", "P", "trials", "detected",
		    "max detect ms", "recovered");
	for (k = 0; k < 5; k++)
		for (p = 4; p <= 8; p += 4) {
			struct row row = { 0 };
			for (t = 0; t < trials; t++)
				trial(pv, ops[k], p, seed + (unsigned)(1000 * k + 100 * p + t), &row,
				      why, sizeof(why));
			cr_log_info("%-9s %2d %7d %9d %14.1f %10d", ops[k], p, row.trials, row.detected,
				    row.max_ms, row.recovered);
			printf("fault table: %-9s P=%d trials %d detected %d max %.1f ms recovered %d\n",
			       ops[k], p, row.trials, row.detected, row.max_ms, row.recovered);
			ok &= row.detected == row.trials && row.recovered == row.trials;
		}
	cr_assert(ok, "every trial detected within 2 s and recovered; the first that was not:\n%s",
		  why);
}
