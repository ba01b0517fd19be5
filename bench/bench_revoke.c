/* SPDX-License-Identifier: MIT */
/*
 * Revoke propagation and reset time
 *   oxr-run -n N bench_revoke [ITERS [WARMUP [TIMEOUT_MS]]]
 * Each round: every rank waits for a message that never comes, rank 0
 * revokes, each rank notes when its wait ended (the revoke reached it),
 * then all reset.  The ranks share one machine, so CLOCK_MONOTONIC is one
 * clock for all: propagation = last observation - the revoke call; reset =
 * last reset end - first reset start.  Rank 0 prints medians and maxima,
 * and the REVOKE frames a rank sent per revoke (oxr_group_counters, the
 * measured rounds only): the maximum and the mean over the ranks, and the
 * maximum over the ranks but 0 (rank 0 gathers the times, so it holds a
 * link to every rank, and a reset on demand sends the revoke on each).
 * Last, the CPU time a rank spent from its revoke (or the wait the revoke
 * ends) to its reset's end, per round, mean and maximum over the ranks: the
 * rank's own work, which wall time on an oversubscribed machine hides
 * behind the other ranks' turns on the cores.
 * TIMEOUT_MS (default 10000) bounds each wait and reset: at 1,024 ranks on
 * a 2-core machine a reset may take seconds, and slow is to be told apart
 * from stuck.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "oxr/oxr.h"
#include "oxr/boot.h"
#include "oxr/transport.h"

static void die(const char *what, oxr_status_t st)
{
	fprintf(stderr, "bench_revoke: %s: %s (%s)\n", what, oxr_strerror(st), oxr_errmsg());
	exit(1);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50, warm = argc > 2 ? atoi(argv[2]) : 3,
	    tmo = argc > 3 ? atoi(argv[3]) : 10000, it, rank, n, p;
	oxr_boot *b;
	oxr_ctx *c;
	oxr_group *g;
	oxr_arena *a;
	oxr_status_t st;
	double *prop, *reset, fmax = 0, fsum = 0, fothers = 0, cpu = 0, cmax = 0, csum = 0;
	oxr_group_counters c0, c1;

	if ((st = oxr_boot_open(&b)) || (st = oxr_ctx_create(&c)) || (st = oxr_group_boot(c, b, &g)) ||
	    (st = oxr_arena_create(&a)))
		die("start", st);
	rank = oxr_group_rank(g);
	n = oxr_group_size(g);
	prop = calloc((size_t)iters, sizeof(*prop));
	reset = calloc((size_t)iters, sizeof(*reset));
	if (n < 2 || iters < 1 || warm < 0 || tmo < 1 || !prop || !reset) {
		fprintf(stderr, "bench_revoke: needs 2 or more ranks, ITERS >= 1, WARMUP >= 0, "
				"TIMEOUT_MS >= 1\n");
		return 2;
	}
	/* the first rounds pay for the first revoke frames' buffers */
	for (it = -warm; it < iters; it++) {
		/* observed, reset start, reset end, frames sent, CPU a round */
		double t[5], t0 = 0, c0u;
		oxr_rmsg *m = NULL;
		if ((st = oxr_boot_barrier(b)))
			die("barrier", st);
		if (it == 0 && (st = oxr_group_stats(g, &c0)))
			die("stats", st);
		c0u = oxr_bench_cpu_us();
		if (rank == 0) {
			t0 = oxr_bench_now_us();
			oxr_group_revoke(g);
			t[0] = t0;
		} else {
			st = oxr_recv(g, 0, tmo, &m);
			t[0] = oxr_bench_now_us();
			if (st != OXR_ERR_REVOKED)
				die("the wait did not end with the revoke", st);
		}
		t[1] = oxr_bench_now_us();
		if ((st = oxr_group_reset(g, tmo)))
			die("reset", st);
		t[2] = oxr_bench_now_us();
		if (it >= 0)
			cpu += oxr_bench_cpu_us() - c0u;
		t[3] = t[4] = 0;
		if (it == iters - 1) {
			if ((st = oxr_group_stats(g, &c1)))
				die("stats", st);
			t[3] = (double)(c1.revokes_sent - c0.revokes_sent) / iters;
			t[4] = cpu / iters;
		}
		if (rank) {
			oxr_ox_msg out = { .tag = OXR_OX_DATA };
			oxr_arena_reset(a);
			out.cmo = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, t, sizeof(t));
			if ((st = oxr_send(g, 0, &out)))
				die("send", st);
		} else {
			double last = t[0], first = t[1], end = t[2];
			fmax = fsum = t[3];
			cmax = csum = t[4];
			for (p = 1; p < n; p++) {
				double u[5];
				if ((st = oxr_recv(g, p, tmo, &m)))
					die("recv", st);
				memcpy(u, m->msg.cmo->data, sizeof(u));
				oxr_rmsg_free(m);
				last = u[0] > last ? u[0] : last;
				first = u[1] < first ? u[1] : first;
				end = u[2] > end ? u[2] : end;
				fmax = u[3] > fmax ? u[3] : fmax;
				fothers = u[3] > fothers ? u[3] : fothers;
				fsum += u[3];
				cmax = u[4] > cmax ? u[4] : cmax;
				csum += u[4];
			}
			if (it >= 0) {
				prop[it] = last - t0;
				reset[it] = end - first;
			}
		}
	}
	if (rank == 0) {
		struct oxr_bench_row row = { .bench = "revoke", .impl = "oxr", .ranks = n,
					     .unit = "us", .warmup = (unsigned)warm };
		if (oxr_bench_emit_sorted(&row, prop, (size_t)iters))
			return 1;
		row.bench = "reset";
		if (oxr_bench_emit_sorted(&row, reset, (size_t)iters))
			return 1;
		printf("revoke %-5s ranks %4d  rounds %4d  propagation median %9.1f us max %9.1f us  "
		       "reset median %9.1f us max %9.1f us  frames a rank max %.1f mean %.2f, ranks > 0 "
		       "max %.1f  cpu a rank mean %.1f us max %.1f us (%s)\n",
		       oxr_ctx_transport(c), n, iters, prop[iters / 2], prop[iters - 1],
		       reset[iters / 2], reset[iters - 1], fmax, fsum / n, fothers, csum / n, cmax,
		       oxr_group_links_on_demand(g) ? "links on demand" : "eager links");
	}
	free(prop);
	free(reset);
	oxr_arena_destroy(a);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
	oxr_boot_close(b);
	return 0;
}
