/* SPDX-License-Identifier: MIT */
/*
 * What bench_crystal.c (oxr) and mpi_alltoallv.c (MPI) share, so both time
 * the same exchange and print the same lines: the options, the pattern
 * (rank r sends one record of B bytes to each of r+1 .. r+D mod n), the
 * timing loop and the result line.
 *
 *   PROGRAM [--dests LIST] [--bytes B] [--reps R] [--iters I]
 *     LIST: comma-separated destination counts per rank; "max" is n-1
 *           (default 1,2,max); B default 64; R x I timed exchanges, each
 *           block of I after a barrier (defaults 15 x 20)
 *
 * Result line, one per implementation and D, printed by rank 0:
 *   RESULT impl=NAME n=N dests=D bytes=B median_us=X min_us=Y msgs=M sent=S
 * where a block's time is the slowest rank's mean per exchange, median and
 * min over the R blocks, msgs is rank 0's messages (or puts) per exchange
 * and sent the payload bytes it sent per exchange (-1: not known).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

struct cp_opts {
	int dests[16], ndests;
	size_t bytes;
	int reps, iters;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double cp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void cp_parse(int argc, char **argv, int n, struct cp_opts *o)
{
	const char *list = "1,2,max";
	int i;

	*o = (struct cp_opts){ .bytes = 64, .reps = 15, .iters = 20 };
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dests") && i + 1 < argc)
			list = argv[++i];
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			o->bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			o->reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			o->iters = atoi(argv[++i]);
		else
			die("usage: %s [--dests LIST] [--bytes B] [--reps R] [--iters I]", argv[0]);
	}
	if (o->reps < 1 || o->reps > 1000 || o->iters < 1)
		die("bad --reps or --iters");
	while (*list && o->ndests < 16) {
		int d = !strncmp(list, "max", 3) ? n - 1 : atoi(list);
		if (d < 0 || d > n - 1)
			die("%d destinations in a group of %d", d, n);
		o->dests[o->ndests++] = d;
		list += strcspn(list, ",");
		list += *list == ',';
	}
}

/* 1 if rank r sends to rank p in the pattern with d destinations. */
static int cp_sends_to(int r, int p, int d, int n)
{
	int k = ((p - r) % n + n) % n;

	return k >= 1 && k <= d;
}

/* worst[rep] holds the slowest rank's time of each block. */
static void cp_report(const char *impl, int n, int d, const struct cp_opts *o, double *worst,
		      double msgs, double sent)
{
	/* oxr-bench asks for one destination count, all of them ("max"): an
	 * all-to-all, the pattern the model projects */
	struct oxr_bench_row row = { .bench = "crystal", .impl = impl, .ranks = n,
				     .bytes = o->bytes, .unit = "us", .warmup = 3 };

	if (d == n - 1 && oxr_bench_emit(&row, worst, (size_t)o->reps))
		die("cannot write the samples to $OXR_BENCH_SAMPLES");
	qsort(worst, (size_t)o->reps, sizeof(double), oxr_bench_cmp_double);
	printf("RESULT impl=%s n=%d dests=%d bytes=%zu median_us=%.1f min_us=%.1f msgs=%.1f "
	       "sent=%.0f\n", impl, n, d, o->bytes, worst[o->reps / 2], worst[0], msgs, sent);
	fflush(stdout);
}
