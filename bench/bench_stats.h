/* SPDX-License-Identifier: MIT */
/*
 * The one format every bench program hands its samples to oxr-bench in,
 * and the one place their statistics are computed, so that oxr's figures
 * and its peers' are reduced the same way.
 *
 * A program that sets nothing prints its own table as before; when the
 * environment has OXR_BENCH_SAMPLES=FILE, its rank 0 also appends one JSON
 * line per (benchmark, ranks, size) to FILE:
 *   {"bench":"latency","impl":"oxr","ranks":2,"bytes":8,"unit":"us",
 *    "warmup":100,"n":3,"samples":[12.1,11.9,12.4]}
 * every timed sample, in the order taken; warm-up rounds are not in it.
 */
#ifndef OXR_BENCH_STATS_H
#define OXR_BENCH_STATS_H

#include <stddef.h>

struct oxr_bench_stats {
	size_t n;
	double min, median, p99, max, mean, stdev;
};

struct oxr_bench_row {
	const char *bench; /* latency, bandwidth, put, put_bw, barrier, bcast, ... */
	const char *impl;  /* oxr, oxr-dissemination, mpi, perftest, rfc100 ... */
	int ranks;
	size_t bytes;      /* payload per message or per rank; 0 where none */
	const char *unit;  /* "us" (lower is better) or "MB/s" (higher is better) */
	unsigned warmup;   /* rounds run and dropped before the samples */
};

/* CLOCK_MONOTONIC in microseconds: one clock for every rank of a machine */
double oxr_bench_now_us(void);
/* CPU time of the process, every thread, user and system, in microseconds:
 * a rank's own work, apart from the time it waits for a core (ranks that
 * outnumber the cores take turns, and wall time counts the turns too) */
double oxr_bench_cpu_us(void);
/* "8 B", "4 KiB", "1 MiB": whole KiB and MiB as such, other sizes in bytes */
void oxr_bench_size_str(char *buf, size_t len, size_t n);
int oxr_bench_cmp_double(const void *a, const void *b);
/* sorted: ascending, n > 0; nearest rank, the ceil(q n)-th smallest */
double oxr_bench_quantile(const double *sorted, size_t n, double q);
double oxr_bench_median(const double *sorted, size_t n);
/* Stats of v[0..n) (v itself is left in its order); n = 0 gives zeros. */
int oxr_bench_stats_of(const double *v, size_t n, struct oxr_bench_stats *s);
/* Appends the row and its samples to $OXR_BENCH_SAMPLES; 0 when unset or
 * written, -1 (errno set) when the file cannot be written. */
int oxr_bench_emit(const struct oxr_bench_row *r, const double *v, size_t n);
/* oxr_bench_emit, then v[0..n) sorted ascending in place, for the median
 * and maximum the program prints (the line keeps the order taken). */
int oxr_bench_emit_sorted(const struct oxr_bench_row *r, double *v, size_t n);

#endif
