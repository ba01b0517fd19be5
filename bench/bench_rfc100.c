/* SPDX-License-Identifier: MIT */
/*
 * bench_rfc100: the RFC-100 way of a bcast and a reduce, a master talking
 * to each server in turn, against RFC-102's bcast and reduce driven by the
 * same master: the comparison of oxr-master demo, repeated for samples.
 *
 *   bench_rfc100 [-n SERVERS] [--sizes N,N] [--iters I] [--digits D]
 *                [--plain] [--server PATH] [--rfc102] [--tag NAME]
 *
 * It starts its own servers (--server, else OXR_SERVER, else the default
 * of oxr_master_launch; any OpenXM engine the master can start, such as
 * ox_asir through bench/ox_asir_wrapper.sh).  bcast: a CMO_DATUM of N
 * bytes pushed to every server, one after the other (impl "rfc100"), or
 * sent to server 0 and broadcast by the group (impl "rfc102"), until every
 * server has it (SM_getsp round trips).  reduce: every server holds a ZZ;
 * the master pops each one (rfc100), or the group reduces "+" to server 0
 * and the master takes that one result (rfc102).
 *
 * The ZZ is small (i + 1 on server i) unless --digits D: then server i
 * holds its own D-digit integer (a fixed seed), the reduce's first result
 * is checked exactly against GMP's sum, and a bcast row "bcast_zz" sends
 * server 0's D-digit integer the same two ways.  Rows "reduce" and
 * "bcast_zz" then have bytes = the CMO_ZZ's payload (4 bytes a word).
 * --plain: every link of the group plain OpenXM (what an asir master
 * gives); else oxr links among oxr-servers.  --rfc102: no RFC-100 rows.
 * --tag NAME: impl names "rfc102-NAME" (to tell runs apart in one samples
 * file).  Samples in us, rows under "ranks" = SERVERS, through
 * bench_stats.h.
 */
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "oxr/cmo.h"
#include "oxr/master.h"
#include "oxr/ox.h"

#define TMO 120000

static oxr_master *m;
static oxr_arena *a;     /* per sample */
static oxr_arena *vals;  /* the operands, for the whole run */
static oxr_cmo **val;    /* server i's operand */
static mpz_t sum;        /* their sum */
static int n, checked;

static void __attribute__((noreturn)) fail(oxr_status_t st, const char *what)
{
	fprintf(stderr, "bench_rfc100: %s: %s (%s)\n", what, oxr_strerror(st), oxr_errmsg());
	exit(1);
}

static void check(oxr_status_t st, const char *what)
{
	if (st)
		fail(st, what);
}

/* server i's operand: i + 1, or a D-digit integer of its own */
static void make_values(long digits)
{
	gmp_randstate_t r;
	mpz_t lo, z;
	int i;

	val = calloc((size_t)n, sizeof(*val));
	check(val ? oxr_arena_create(&vals) : OXR_ERR_NOMEM, "arena");
	mpz_inits(sum, lo, z, NULL);
	gmp_randinit_default(r);
	gmp_randseed_ui(r, 20261204);
	if (digits > 1)
		mpz_ui_pow_ui(lo, 10, (unsigned long)digits - 1); /* [10^(D-1), 10^D) */
	for (i = 0; i < n; i++) {
		if (digits > 1) {
			mpz_mul_ui(z, lo, 9);
			mpz_urandomm(z, r, z);
			mpz_add(z, z, lo);
		} else {
			mpz_set_si(z, i + 1);
		}
		mpz_add(sum, sum, z);
		val[i] = oxr_cmo_new_zz(vals, z);
		check(val[i] ? OXR_OK : OXR_ERR_NOMEM, "operand");
	}
	gmp_randclear(r);
	mpz_clears(lo, z, NULL);
}

static void check_sum(const oxr_cmo *got)
{
	mpz_t z;

	mpz_init(z);
	check(oxr_cmo_get_mpz(got, z), "the reduce's result");
	if (mpz_cmp(z, sum)) {
		fprintf(stderr, "bench_rfc100: the reduce's result is not the sum of the operands "
			"(%zu against %zu bits)\n", mpz_sizeinbase(z, 2), mpz_sizeinbase(sum, 2));
		exit(1);
	}
	mpz_clear(z);
	checked = 1;
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
		check(oxr_master_push(m, i, val[i]), "push");
	check(oxr_master_sync(m, TMO), "sync");
	t0 = oxr_bench_now_us();
	if (rfc102) {
		check(oxr_master_reduce(m, 0, "+"), "reduce");
		check(oxr_master_result(m, 0, TMO, a, &got), "result");
	} else
		for (i = 0; i < n; i++)
			check(oxr_master_pop(m, i, TMO, a, &got), "pop");
	t0 = oxr_bench_now_us() - t0;
	if (rfc102 && !checked) /* off the clock */
		check_sum(got);
	for (i = 1; rfc102 && i < n; i++) /* the others' 0, off the clock */
		check(oxr_master_result(m, i, TMO, a, &got), "result");
	oxr_arena_reset(a);
	return t0;
}

static const char *tag;

static void emit(const char *bench, const char *impl, size_t bytes, unsigned warm, double *t,
		 int iters)
{
	char name[64];
	struct oxr_bench_row row = { .bench = bench, .impl = name, .ranks = n, .bytes = bytes,
				     .unit = "us", .warmup = warm };

	snprintf(name, sizeof(name), "%s%s%s", impl, tag ? "-" : "", tag ? tag : "");
	if (oxr_bench_emit(&row, t, (size_t)iters)) {
		perror("bench_rfc100: $OXR_BENCH_SAMPLES");
		exit(1);
	}
	qsort(t, (size_t)iters, sizeof(*t), oxr_bench_cmp_double);
	printf("%-8s %-12s servers %3d bytes %8zu median %10.1f us  min %10.1f  max %10.1f\n",
	       bench, name, n, bytes, oxr_bench_median(t, (size_t)iters), t[0], t[iters - 1]);
	fflush(stdout);
}

/* Drops the copies that iters + warm bcasts left on every server. */
static void drop(int count)
{
	oxr_arena *t;
	int k;

	check(oxr_arena_create(&t), "arena");
	for (k = 0; k < n; k++) {
		check(oxr_master_push(m, k, oxr_cmo_new_zz_si(t, count)), "push");
		check(oxr_master_cmd(m, k, OXR_SM_pops), "SM_pops");
	}
	check(oxr_master_sync(m, TMO), "sync");
	oxr_arena_destroy(t);
}

static void bcast_rows(const char *bench, const oxr_cmo *x, size_t bytes, int impl, int warm,
		       int iters, double *t)
{
	int k;

	for (k = -warm; k < iters; k++) {
		double s = bcast_once(x, impl);
		if (k >= 0)
			t[k] = s;
	}
	drop(iters + warm);
	emit(bench, impl ? "rfc102" : "rfc100", bytes, (unsigned)warm, t, iters);
}

int main(int argc, char **argv)
{
	const char *sizes = "8", *server = NULL;
	int iters = 20, warm = 2, plain = 0, only102 = 0, i, k, impl;
	long digits = 0;
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
		else if (!strcmp(argv[i], "--digits") && i + 1 < argc)
			digits = atol(argv[++i]);
		else if (!strcmp(argv[i], "--server") && i + 1 < argc)
			server = argv[++i];
		else if (!strcmp(argv[i], "--tag") && i + 1 < argc)
			tag = argv[++i];
		else if (!strcmp(argv[i], "--plain"))
			plain = 1;
		else if (!strcmp(argv[i], "--rfc102"))
			only102 = 1;
		else
			break;
	}
	if (i < argc || n < 1 || iters < 1 || digits < 0) {
		fprintf(stderr, "usage: bench_rfc100 [-n SERVERS] [--sizes N,N] [--iters I] "
			"[--digits D] [--plain] [--server PATH] [--rfc102] [--tag NAME]\n");
		return 2;
	}
	t = malloc((size_t)iters * sizeof(*t));
	check(t ? oxr_arena_create(&a) : OXR_ERR_NOMEM, "arena");
	make_values(digits);
	check(oxr_master_launch(server, n, &m), "launch");
	check(oxr_master_group(m, plain, TMO), "group");
	for (impl = only102; impl < 2; impl++) {
		const char *p = sizes;
		char *end;
		for (; *p; p = *end ? end + 1 : end) {
			size_t bytes = strtoull(p, &end, 10);
			oxr_cmo *x;
			if (end == p || !(buf = calloc(1, bytes + 1)))
				fail(OXR_ERR_INVAL, "--sizes");
			x = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, buf, bytes);
			check(x ? OXR_OK : OXR_ERR_NOMEM, "datum");
			bcast_rows("bcast", x, bytes, impl, warm, iters, t);
			oxr_arena_reset(a);
			free(buf);
		}
		if (digits)
			bcast_rows("bcast_zz", val[0], val[0]->len, impl, warm, iters, t);
		for (k = -warm; k < iters; k++) {
			double s = reduce_once(impl);
			if (k >= 0)
				t[k] = s;
		}
		emit("reduce", impl ? "rfc102" : "rfc100", digits ? val[0]->len : 4, (unsigned)warm,
		     t, iters);
	}
	oxr_master_destroy(m, 2000);
	oxr_arena_destroy(a);
	oxr_arena_destroy(vals);
	mpz_clear(sum);
	free(val);
	free(t);
	return 0;
}
