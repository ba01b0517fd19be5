/* SPDX-License-Identifier: MIT */
/*
 * bench_startup: what a group costs to start, per rank.
 *
 *   OXR_BENCH_T0_NS=$(date +%s%N) oxr-run -n N bench_startup
 *
 * Every rank boots (oxr_boot_open, a context, oxr_group_boot), runs one
 * barrier (the default algorithm) and a ring exchange (a CMO_INT32 to
 * rank + 1, one from rank - 1), then measures itself: the time since the
 * launch, its RSS and PSS, its descriptors and the group's open links
 * (oxr_group_stats).  The figures travel to rank 0 through the bootstrap's
 * allgather, which opens no link, and rank 0 prints startup_proc.h's
 * RESULT line (and the rows of OXR_BENCH_SAMPLES where it is set).
 * OXR_TRANSPORT and OXR_LINKS choose what is measured; bench/run_startup.sh
 * runs the matrix beside mpi_startup, oxr-bench --bench startup one case.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "oxr/barrier.h"
#include "oxr/boot.h"
#include "oxr/transport.h"
#include "startup_proc.h"

static void check(oxr_status_t st, const char *what)
{
	if (st) {
		fprintf(stderr, "bench_startup: %s: %s (%s)\n", what, oxr_strerror(st), oxr_errmsg());
		exit(1);
	}
}

int main(void)
{
	double main_ns = su_realtime_ns(), t0 = su_t0_ns(main_ns);
	const char *links = getenv("OXR_LINKS");
	oxr_group_counters gc;
	struct su_rank me, *all;
	oxr_barrier_t *b;
	oxr_boot *boot;
	oxr_ctx *c;
	oxr_group *g;
	oxr_arena *a;
	oxr_rmsg *m;
	int n, rank;

	check(oxr_boot_open(&boot), "bootstrap");
	check(oxr_ctx_create(&c), "context");
	check(oxr_group_boot(c, boot, &g), "group");
	check(oxr_arena_create(&a), "arena");
	n = oxr_group_size(g);
	rank = oxr_group_rank(g);
	check(oxr_barrier_create(g, OXR_BARRIER_DEFAULT, &b), "barrier_create");
	check(oxr_barrier(b, -1), "barrier");
	if (n > 1) {
		oxr_ox_msg msg = { .tag = OXR_OX_DATA };
		msg.cmo = oxr_cmo_new_int32(a, rank);
		check(msg.cmo ? oxr_send(g, (rank + 1) % n, &msg) : OXR_ERR_NOMEM, "ring send");
		check(oxr_recv(g, (rank + n - 1) % n, -1, &m), "ring recv");
		if (!m->msg.cmo || m->msg.cmo->tag != OXR_CMO_INT32 ||
		    m->msg.cmo->v.i32 != (rank + n - 1) % n) {
			fprintf(stderr, "bench_startup: rank %d: the ring brought something else\n",
				rank);
			return 1;
		}
		oxr_rmsg_free(m);
	}
	check(oxr_group_stats(g, &gc), "group_stats");
	su_measure(&me, t0, main_ns, gc.links_open);
	all = rank ? NULL : malloc((size_t)n * sizeof(*all));
	if (!rank && !all)
		return 1;
	{
		/* every rank gets all of it (the bootstrap has no gather) */
		struct su_rank *buf = all ? all : malloc((size_t)n * sizeof(*buf));
		if (!buf)
			return 1;
		check(oxr_boot_allgather(boot, &me, sizeof(me), buf), "allgather");
		if (buf != all)
			free(buf);
	}
	if (!rank) {
		su_print("oxr", oxr_ctx_transport(c), links && *links ? links : "default", all, n);
		if (su_emit("oxr", all, n))
			return 1;
		free(all);
	}
	/* the allgather came after every rank's ring receive: nothing is in flight */
	oxr_barrier_destroy(b);
	oxr_arena_destroy(a);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
	oxr_boot_close(boot);
	return 0;
}
