/* SPDX-License-Identifier: MIT */
/*
 * bench_rfc100: the RFC-100 way of a bcast and a reduce, a master talking
 * to each server in turn, against RFC-102's bcast and reduce driven by the
 * same master: the comparison of oxr-master demo, repeated for samples.
 *
 *   bench_rfc100 [-n SERVERS] [--sizes N,N] [--iters I]
 *
 * It starts its own oxr-servers (OXR_SERVER, or the default of
 * oxr_master_launch).  bcast: a CMO_DATUM of N bytes pushed to every
 * server, one after the other (impl "rfc100"), or sent to server 0 and
 * broadcast by the group (impl "rfc102"), until every server has it
 * (SM_getsp round trips).  reduce: every server holds a small ZZ; the
 * master pops each one (rfc100), or the group reduces "+" to server 0 and
 * the master takes that one result (rfc102).  Samples in us, rows under
 * "ranks" = SERVERS, through bench_stats.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "oxr/cmo.h"
#include "oxr/master.h"
#include "oxr/ox.h"

#define TMO 60000

static oxr_master *m;
static oxr_arena *a;
static int n;

static void check(oxr_status_t st, const char *what)
{
	if (st) {
		fprintf(stderr, "bench_rfc100: %s: %s\n", what, oxr_strerror(st));
		exit(1);
	}
}

static double bcast_once(const oxr_cmo *x, int rfc102)
{
	double t0 = oxr_bench_now_us();
	int i;

	if (rfc102)
		check(oxr_master_bcast(m, 0, x), "bcast");
	else
		for (i = 0; i < n; i++)
			check(oxr_master_push(m, i, x), "push");
	check(oxr_master_sync(m, TMO), "sync");
	return oxr_bench_now_us() - t0;
}

static double reduce_once(int rfc102)
{
	oxr_cmo *got;
	double t0;
	int i;

	for (i = 0; i < n; i++)
		check(oxr_master_push(m, i, oxr_cmo_new_zz_si(a, i + 1)), "push");
	check(oxr_master_sync(m, TMO), "sync");
	t0 = oxr_bench_now_us();
	if (rfc102) {
		check(oxr_master_reduce(m, 0, "+"), "reduce");
		check(oxr_master_result(m, 0, TMO, a, &got), "result");
	} else
		for (i = 0; i < n; i++)
			check(oxr_master_pop(m, i, TMO, a, &got), "pop");
	t0 = oxr_bench_now_us() - t0;
	for (i = 1; rfc102 && i < n; i++) /* the others' CMO_NULL, off the clock */
		check(oxr_master_result(m, i, TMO, a, &got), "result");
	oxr_arena_reset(a);
	return t0;
}

static void emit(const char *bench, const char *impl, size_t bytes, unsigned warm, double *t,
		 int iters)
{
	struct oxr_bench_row row = { .bench = bench, .impl = impl, .ranks = n, .bytes = bytes,
				     .unit = "us", .warmup = warm };

	if (oxr_bench_emit(&row, t, (size_t)iters)) {
		perror("bench_rfc100: $OXR_BENCH_SAMPLES");
		exit(1);
	}
	qsort(t, (size_t)iters, sizeof(*t), oxr_bench_cmp_double);
	printf("%-7s %-7s servers %3d bytes %8zu median %10.1f us\n", bench, impl, n, bytes,
	       oxr_bench_median(t, (size_t)iters));
}

int main(int argc, char **argv)
{
	const char *sizes = "8";
	int iters = 20, warm = 2, i, k, impl;
	double *t;
	uint8_t *buf;

	n = 4;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			sizes = argv[++i];
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else
			break;
	}
	if (i < argc || n < 1 || iters < 1) {
		fprintf(stderr, "usage: bench_rfc100 [-n SERVERS] [--sizes N,N] [--iters I]\n");
		return 2;
	}
	t = malloc((size_t)iters * sizeof(*t));
	check(t ? oxr_arena_create(&a) : OXR_ERR_NOMEM, "arena");
	check(oxr_master_launch(NULL, n, &m), "launch");
	check(oxr_master_group(m, 0, TMO), "group");
	for (impl = 0; impl < 2; impl++) {
		const char *name = impl ? "rfc102" : "rfc100";
		const char *p = sizes;
		char *end;
		for (; *p; p = *end ? end + 1 : end) {
			size_t bytes = strtoull(p, &end, 10);
			oxr_cmo *x;
			if (end == p || !(buf = calloc(1, bytes + 1)))
				check(OXR_ERR_INVAL, "--sizes");
			x = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, buf, bytes);
			check(x ? OXR_OK : OXR_ERR_NOMEM, "datum");
			for (k = -warm; k < iters; k++) {
				double s = bcast_once(x, impl);
				if (k >= 0)
					t[k] = s;
			}
			/* every sample left a copy on every server: drop them all */
			for (k = 0; k < n; k++) {
				check(oxr_master_push(m, k, oxr_cmo_new_int32(a, iters + warm)),
				      "push");
				check(oxr_master_cmd(m, k, OXR_SM_pops), "SM_pops");
			}
			check(oxr_master_sync(m, TMO), "sync");
			oxr_arena_reset(a);
			free(buf);
			emit("bcast", name, bytes, (unsigned)warm, t, iters);
		}
		for (k = -warm; k < iters; k++) {
			double s = reduce_once(impl);
			if (k >= 0)
				t[k] = s;
		}
		emit("reduce", name, 4, (unsigned)warm, t, iters);
	}
	oxr_master_destroy(m, 2000);
	oxr_arena_destroy(a);
	free(t);
	return 0;
}
