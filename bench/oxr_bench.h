/* SPDX-License-Identifier: MIT */
/*
 * oxr-bench's parts: the runner (oxr_bench.c) fills a set of rows from the
 * programs' sample lines; the report (oxr_bench_report.c) prints the
 * tables, the ratios and the JSON; the model (oxr_bench_model.c) fits
 * LogGP to the rows and projects the collectives.
 */
#ifndef OXR_BENCH_H
#define OXR_BENCH_H

#include <stdio.h>

#include "bench_stats.h"

struct oxr_bench_set_row {
	char bench[24], impl[32], unit[8];
	int ranks;
	size_t bytes;
	unsigned warmup;
	double *samples; /* NULL for a peer that reports statistics only (perftest) */
	struct oxr_bench_stats st;
};

struct oxr_bench_set {
	struct oxr_bench_set_row *row;
	size_t n, cap;
	const char *transport;
	int quick, cores;
};

/* The row of (bench, impl, ranks, bytes), or NULL. */
const struct oxr_bench_set_row *oxr_bench_find(const struct oxr_bench_set *s, const char *bench,
					       const char *impl, int ranks, size_t bytes);
/* The peer oxr's figures of bench are set against: "mpi", "perftest", ... */
const char *oxr_bench_peer_of(const struct oxr_bench_set *s, const char *bench);

void oxr_bench_print_tables(const struct oxr_bench_set *s, FILE *out);
/* One gnuplot data file per (bench, impl): x, median, min, p99. */
int oxr_bench_write_dat(const struct oxr_bench_set *s, const char *dir);
/* The whole run: rows with samples, ratios, and the model (model_json, may be NULL). */
int oxr_bench_write_json(const struct oxr_bench_set *s, const char *path, const char *model_json);

/* Prints the fitted parameters, the projection to 2^20 ranks and the error
 * on the measured points; returns the same as a JSON object (malloc'd), or
 * NULL where the set lacks the ping-pong rows the fit needs. */
char *oxr_bench_model(const struct oxr_bench_set *s, FILE *out);
/* --simulate: the revoke's broadcast, the heartbeat's ring detector and the
 * bitmap barrier's window over simulated groups up to 2^20 ranks (no ranks
 * run); 0, or -1 when a simulated broadcast missed a live rank or broke its
 * frame bound, or the detector broke one of its checks. */
int oxr_bench_simulate(FILE *out);

#endif
