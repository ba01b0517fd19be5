/* SPDX-License-Identifier: MIT */
/*
 * bench_barrier: latency of oxr_barrier, one algorithm per run.
 *
 *   oxr-run -n N bench_barrier bitmap|dissemination [ITERS [WARMUP]]
 *
 * Every rank runs WARMUP barriers, then ITERS timed ones back to back.
 * Rank 0 prints one line: the median and mean time per barrier on rank 0
 * (us), and the writes (puts) each rank sent and received per barrier
 * (mean and max over the ranks of each rank's mean, from oxr_barrier_stats)
 * and peak, the most writes sent plus received by one rank in one barrier,
 * which shows the algorithms' shapes: about 2 each way for the bitmap tree
 * on average (its root, which rotates, 2 ceil(log2 n)), ceil(log2 n) each
 * way for dissemination.  bench/run_barrier.sh runs it beside
 * mpi_barrier.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "oxr/barrier.h"
#include "oxr/transport.h"

static void check(oxr_status_t st, const char *what)
{
	if (st) {
		fprintf(stderr, "bench_barrier: %s: %s (%s)\n", what, oxr_strerror(st), oxr_errmsg());
		exit(1);
	}
}

static void send_i(oxr_group *g, oxr_arena *a, int peer, int32_t v)
{
	oxr_ox_msg m = { .tag = OXR_OX_DATA };

	oxr_arena_reset(a);
	m.cmo = oxr_cmo_new_int32(a, v);
	check(m.cmo ? oxr_send(g, peer, &m) : OXR_ERR_NOMEM, "send");
}

static int32_t recv_i(oxr_group *g, int peer)
{
	oxr_rmsg *m;
	int32_t v;

	check(oxr_recv(g, peer, 60000, &m), "recv");
	v = m->msg.cmo && m->msg.cmo->tag == OXR_CMO_INT32 ? m->msg.cmo->v.i32 : -1;
	oxr_rmsg_free(m);
	return v;
}

int main(int argc, char **argv)
{
	oxr_boot *boot;
	oxr_ctx *c;
	oxr_group *g;
	oxr_barrier_t *b;
	oxr_barrier_counts st;
	oxr_arena *a;
	int algo, n, rank, i, p;
	long iters = argc > 2 ? atol(argv[2]) : 2000, warm = argc > 3 ? atol(argv[3]) : 200;
	double *t, t0, sum = 0;
	uint32_t peak = 0; /* most writes one barrier cost this rank (the root's) */
	const char *spin = getenv("OXR_COLL_SPIN_US");

	if (argc < 2 || (strcmp(argv[1], "bitmap") && strcmp(argv[1], "dissemination")) ||
	    iters < 1) {
		fprintf(stderr, "usage: bench_barrier bitmap|dissemination [ITERS [WARMUP]]\n");
		return 2;
	}
	algo = !strcmp(argv[1], "bitmap") ? OXR_BARRIER_BITMAP : OXR_BARRIER_DISSEMINATION;
	check(oxr_boot_open(&boot), "bootstrap");
	check(oxr_ctx_create(&c), "context");
	check(oxr_group_boot(c, boot, &g), "group");
	check(oxr_arena_create(&a), "arena");
	n = oxr_group_size(g);
	rank = oxr_group_rank(g);
	check(oxr_barrier_create(g, algo, &b), "barrier_create");
	t = malloc((size_t)iters * sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < warm; i++)
		check(oxr_barrier(b, 60000), "barrier");
	check(oxr_barrier_stats(b, &st), "stats");
	{
		uint64_t s0 = st.puts_sent, r0 = st.puts_received;
		for (i = 0; i < iters; i++) {
			t0 = oxr_bench_now_us();
			check(oxr_barrier(b, 60000), "barrier");
			t[i] = oxr_bench_now_us() - t0;
			sum += t[i];
			check(oxr_barrier_stats(b, &st), "stats");
			if (st.last_sent + st.last_received > peak)
				peak = st.last_sent + st.last_received;
		}
		check(oxr_barrier_stats(b, &st), "stats");
		st.puts_sent -= s0;
		st.puts_received -= r0;
	}
	if (rank) {
		send_i(g, a, 0, (int32_t)(1000 * st.puts_sent / (uint64_t)iters));
		send_i(g, a, 0, (int32_t)(1000 * st.puts_received / (uint64_t)iters));
		send_i(g, a, 0, (int32_t)peak);
	} else {
		double smean = (double)st.puts_sent / (double)iters, rmean = (double)st.puts_received /
				(double)iters, smax = smean, rmax = rmean;
		for (p = 1; p < n; p++) {
			double s = recv_i(g, p) / 1000.0, r = recv_i(g, p) / 1000.0;
			uint32_t pk = (uint32_t)recv_i(g, p);
			peak = pk > peak ? pk : peak;
			smean += s;
			rmean += r;
			smax = s > smax ? s : smax;
			rmax = r > rmax ? r : rmax;
		}
		struct oxr_bench_row row = { .bench = "barrier", .ranks = n, .unit = "us",
					     .warmup = (unsigned)warm,
					     .impl = algo == OXR_BARRIER_BITMAP ? "oxr" :
						     "oxr-dissemination" };
		if (oxr_bench_emit(&row, t, (size_t)iters))
			return 1;
		qsort(t, (size_t)iters, sizeof(*t), oxr_bench_cmp_double);
		printf("oxr %s n=%d iters=%ld median_us=%.2f mean_us=%.2f min_us=%.2f "
		       "sent_mean=%.2f sent_max=%.2f recv_mean=%.2f recv_max=%.2f peak=%u transport=%s "
		       "OXR_COLL_SPIN_US=%s OXR_SPIN_US=%s\n", argv[1], n, iters, t[iters / 2],
		       sum / (double)iters, t[0], smean / n, smax, rmean / n, rmax, peak,
		       oxr_ctx_transport(c), spin ? spin : "default", getenv("OXR_SPIN_US") ?
		       getenv("OXR_SPIN_US") : "default");
	}
	/* nobody closes links while a peer still counts */
	check(oxr_barrier(b, 60000), "barrier");
	oxr_barrier_destroy(b);
	free(t);
	oxr_arena_destroy(a);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
	oxr_boot_close(boot);
	return 0;
}
