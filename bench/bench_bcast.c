/* SPDX-License-Identifier: MIT */
/*
 * bench_bcast: latency of bcast (8 B, 1 MiB, 64 MiB) and of reduce (one
 * INT32, one double, "+") from root 0 over a whole group.
 *
 *   oxr-run -n N bench_bcast [--quick] [--algo-sweep]
 *
 * Each sample starts all ranks at one instant: after a barrier rank 0
 * picks a start time a few ms ahead and broadcasts it, every rank sleeps
 * until then (clock_nanosleep on CLOCK_MONOTONIC, one clock for all the
 * ranks of this machine; for a bcast only the root sleeps, the others are
 * already waiting in the call, as receivers of a bcast are), and every
 * rank notes when it entered the call and when it returned.  The sample is
 * the last return minus the (last) entry: from the root's call until the
 * last rank has the data (bcast), from the last contributor's call until
 * the root has the result (reduce), with neither barrier skew nor the
 * sleep's wake-up delay in it.  The
 * figure is the median (and minimum) over the samples.  The barrier and
 * the start time travel by the implementation's own calls (oxr: reduce +
 * bcast; MPI: MPI_Barrier, MPI_Bcast), outside the timed part.  oxr's rows also give the messages this operation
 * sent and received on the root and at most on any rank (from
 * oxr_bcast_last_counts), where the log2 shape of the tree shows.
 *
 * --algo-sweep (oxr only) times the binomial tree against the pipelined
 * chain at sizes from 16 KiB to 64 MiB, forcing one or the other with
 * OXR_BCAST_PIPELINE_BYTES: the figures behind OXR_BCAST_PIPELINE_DEFAULT.
 *
 * The driver is this file; mpi_bcast.c includes it with its MPI backend,
 * so both print the same rows (bench/run_bcast.sh sets them side by side).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

/* ---- what a backend provides ---------------------------------------- */

static void be_init(int *argc, char ***argv, int *rank, int *size);
static void be_fini(void);
static void be_barrier(void);
/* Rank 0's *t on every rank (the start time of a sample). */
static void be_bcast_time(double *t);
/* The payload of a bcast of n bytes (the root's made once, by be_prepare). */
static void be_prepare(size_t n);
static void be_bcast(size_t n);
static void be_reduce_int(void);
static void be_reduce_double(void);
/* Rank 0 gets every rank's k doubles, rank-major, in all[]. */
static void be_gather(const double *mine, double *all, int k);
/* Messages of the last operation on this rank (0 where unknown). */
static void be_counts(double *sent, double *received);

static const char *be_impl;

/* ---- the driver ------------------------------------------------------- */

static int my_rank, nranks;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bench_bcast rank %d: ", my_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* How far ahead a sample starts: enough for the slowest rank to be asleep
 * waiting for it when the moment comes (oversubscribed ranks wait for a
 * core). */
static double lead_s = 0.002;

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

enum { OP_BCAST, OP_RED_INT, OP_RED_DBL };

static void run_op(int op, size_t bytes)
{
	if (op == OP_BCAST)
		be_bcast(bytes);
	else if (op == OP_RED_INT)
		be_reduce_int();
	else
		be_reduce_double();
}

/* 0 in the algorithm sweep: its rows force an algorithm, they are not the
 * default one's figures */
static int emit_rows = 1;

static void emit(int op, size_t bytes, int warm, double *worst_s, int iters)
{
	struct oxr_bench_row row = { .bench = op == OP_BCAST ? "bcast" : "reduce", .impl = be_impl,
				     .ranks = nranks, .bytes = bytes, .unit = "us",
				     .warmup = (unsigned)warm };
	double *us = malloc((size_t)iters * sizeof(double));
	int i;

	if (!emit_rows)
		return;
	if (!us)
		die("out of memory");
	for (i = 0; i < iters; i++)
		us[i] = 1e6 * worst_s[i];
	if (oxr_bench_emit(&row, us, (size_t)iters))
		die("cannot write the samples to $OXR_BENCH_SAMPLES");
	free(us);
}

struct figure {
	double median_us, min_us;
	double root_sent, root_recv, max_sent, max_recv;
};

/* iters samples of one operation; every rank returns, rank 0 has the figure. */
static struct figure measure(int op, size_t bytes, int iters, int warm)
{
	int k = 2 * iters + 2, i, r;
	double *mine = calloc((size_t)k, sizeof(double)), *start = mine + iters + 2;
	double *all = calloc((size_t)k * (size_t)nranks, sizeof(double));
	double *worst = calloc((size_t)iters, sizeof(double));
	struct figure f = { 0 };

	if (!mine || !all || !worst)
		die("out of memory");
	if (op == OP_BCAST)
		be_prepare(bytes);
	for (i = 0; i < warm; i++) {
		be_barrier();
		run_op(op, bytes);
	}
	for (i = 0; i < iters; i++) {
		double t0 = 0;
		be_barrier();
		if (my_rank == 0)
			t0 = now() + lead_s;
		be_bcast_time(&t0);
		if (op != OP_BCAST || my_rank == 0)
			sleep_until(t0);
		/* times relative to t0, where a double has ns to spare */
		start[i] = now() - t0;
		run_op(op, bytes);
		mine[i] = now() - t0;
	}
	be_counts(&mine[iters], &mine[iters + 1]);
	be_gather(mine, all, k);
	if (my_rank == 0) {
		for (i = 0; i < iters; i++) {
			double last_in = -1e9, last_out = -1e9;
			for (r = 0; r < nranks; r++) {
				const double *x = all + (size_t)r * k;
				if (x[i] > last_out)
					last_out = x[i];
				/* a bcast starts when the root calls it; a receiver
				 * still on its way in is not waited for */
				if ((op != OP_BCAST || r == 0) && x[iters + 2 + i] > last_in)
					last_in = x[iters + 2 + i];
			}
			worst[i] = last_out - last_in;
		}
		emit(op, bytes, warm, worst, iters);
		qsort(worst, (size_t)iters, sizeof(double), oxr_bench_cmp_double);
		f.median_us = 1e6 * oxr_bench_median(worst, (size_t)iters);
		f.min_us = 1e6 * worst[0];
		f.root_sent = all[iters];
		f.root_recv = all[iters + 1];
		for (r = 0; r < nranks; r++) {
			if (all[(size_t)r * k + iters] > f.max_sent)
				f.max_sent = all[(size_t)r * k + iters];
			if (all[(size_t)r * k + iters + 1] > f.max_recv)
				f.max_recv = all[(size_t)r * k + iters + 1];
		}
	}
	free(mine);
	free(all);
	free(worst);
	return f;
}

static void report(const char *what, size_t bytes, int iters, const struct figure *f)
{
	char sz[32];

	if (my_rank)
		return;
	oxr_bench_size_str(sz, sizeof(sz), bytes);
	printf("%-7s %-7s %6d %12.1f %12.1f %6.0f/%-6.0f %6.0f/%-6.0f\n", what, sz, iters,
	       f->median_us, f->min_us, f->root_sent, f->root_recv, f->max_sent, f->max_recv);
	printf("RESULT impl=%s n=%d op=%s bytes=%zu iters=%d median_us=%.2f min_us=%.2f "
	       "root_sent=%.0f root_recv=%.0f max_sent=%.0f max_recv=%.0f\n", be_impl, nranks,
	       what, bytes, iters, f->median_us, f->min_us, f->root_sent, f->root_recv,
	       f->max_sent, f->max_recv);
}

#ifndef BB_OTHER_BACKEND
static void algo_sweep(int quick);
#endif

int main(int argc, char **argv)
{
	size_t sizes[16] = { 8, 1u << 20, 64u << 20 };
	int quick = 0, sweep = 0, i, s, nsizes = 3;
	struct figure f;

	be_init(&argc, &argv, &my_rank, &nranks);
	setvbuf(stdout, NULL, _IOLBF, 0);
	lead_s = nranks > 8 ? 0.002 : 0.001;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--algo-sweep"))
			sweep = 1;
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			char *p = argv[++i], *end;
			for (nsizes = 0; *p && nsizes < 16; p = *end ? end + 1 : end) {
				sizes[nsizes++] = strtoull(p, &end, 10);
				if (end == p || (*end && *end != ','))
					die("--sizes: comma-separated byte counts, not %s", argv[i]);
			}
		} else
			die("usage: bench_bcast [--quick] [--algo-sweep] [--sizes N,N...]");
	}
	if (my_rank == 0)
		printf("bench_bcast: %s, %d ranks, root 0; us from a common start to the last "
		       "rank done: median and minimum over the samples\n%-7s %-7s %6s %12s %12s %13s %13s\n",
		       be_impl, nranks, "op", "size", "iters", "median us", "min us",
		       "root sent/rcv", "max sent/rcv");
	emit_rows = !sweep;
#ifndef BB_OTHER_BACKEND
	if (sweep) {
		algo_sweep(quick);
		be_fini();
		return 0;
	}
#else
	if (sweep)
		die("--algo-sweep is oxr's");
#endif
	for (s = 0; s < nsizes; s++) {
		int iters = sizes[s] <= 8 ? (quick ? 200 : 1000) : sizes[s] <= (1u << 20) ?
			    (quick ? 20 : 60) : (quick ? 3 : 7);
		f = measure(OP_BCAST, sizes[s], iters, iters > 10 ? 10 : 1);
		report("bcast", sizes[s], iters, &f);
	}
	f = measure(OP_RED_INT, 4, quick ? 200 : 1000, 10);
	report("red_i32", 4, quick ? 200 : 1000, &f);
	f = measure(OP_RED_DBL, 8, quick ? 200 : 1000, 10);
	report("red_f64", 8, quick ? 200 : 1000, &f);
	be_fini();
	return 0;
}

#ifndef BB_OTHER_BACKEND
/* ---- the oxr backend -------------------------------------------------- */

#include "oxr/bcast.h"
#include "oxr/oxr.h"
#include "oxr/transport.h"

static oxr_boot *boot;
static oxr_ctx *ctx;
static oxr_group *grp;
static oxr_arena *arena, *payload_arena;
static oxr_cmo *payload;
static oxr_bcast_counts last;

static void check(oxr_status_t st, const char *what)
{
	if (st)
		die("%s: %s (%s)", what, oxr_strerror(st), oxr_errmsg());
}

static void be_init(int *argc, char ***argv, int *rank, int *size)
{
	be_impl = "oxr";
	check(oxr_boot_open(&boot), "bootstrap");
	check(oxr_ctx_create(&ctx), "context");
	check(oxr_group_boot(ctx, boot, &grp), "group");
	check(oxr_arena_create(&arena), "arena");
	check(oxr_arena_create(&payload_arena), "arena");
	*rank = oxr_group_rank(grp);
	*size = oxr_group_size(grp);
}

static void be_fini(void)
{
	check(oxr_boot_barrier(boot), "final barrier");
	oxr_arena_destroy(arena);
	oxr_arena_destroy(payload_arena);
	oxr_group_destroy(grp);
	oxr_ctx_destroy(ctx);
	oxr_boot_close(boot);
}

static void be_barrier(void)
{
	oxr_cmo *in, *out;

	oxr_arena_reset(arena);
	in = oxr_cmo_new_int32(arena, 1);
	check(oxr_reduce(grp, 0, "+", in, &out, arena, -1), "barrier reduce");
	check(oxr_bcast(grp, 0, &out, arena, -1), "barrier bcast");
	oxr_arena_reset(arena);
}

static void be_bcast_time(double *t)
{
	oxr_cmo *o = my_rank == 0 ? oxr_cmo_new_double(arena, OXR_CMO_IEEE_DOUBLE_FLOAT, *t) : NULL;

	check(oxr_bcast(grp, 0, &o, arena, -1), "start-time bcast");
	*t = o->v.f64;
	oxr_arena_reset(arena);
}

static void be_prepare(size_t n)
{
	oxr_arena_reset(payload_arena);
	payload = NULL;
	if (my_rank == 0) {
		uint8_t *b = malloc(n);
		size_t i;
		if (!b)
			die("out of memory");
		for (i = 0; i < n; i++)
			b[i] = (uint8_t)(i * 7 + 1);
		payload = oxr_cmo_new_bytes(payload_arena, OXR_CMO_DATUM, b, n);
		free(b);
	}
}

static void be_bcast(size_t n)
{
	oxr_cmo *o = payload;

	check(oxr_bcast(grp, 0, &o, arena, -1), "bcast");
	oxr_bcast_last_counts(&last);
	if (o->tag != OXR_CMO_DATUM || o->len != n)
		die("bcast gave %zu bytes, not %zu", o->len, n);
	oxr_arena_reset(arena);
}

static void be_reduce_int(void)
{
	oxr_cmo *in = oxr_cmo_new_int32(arena, my_rank), *out;

	check(oxr_reduce(grp, 0, "+", in, &out, arena, -1), "reduce");
	oxr_bcast_last_counts(&last);
	if (my_rank == 0 && (out->tag != OXR_CMO_INT32 || out->v.i32 != nranks * (nranks - 1) / 2))
		die("reduce gave a wrong sum");
	oxr_arena_reset(arena);
}

static void be_reduce_double(void)
{
	oxr_cmo *in = oxr_cmo_new_double(arena, OXR_CMO_IEEE_DOUBLE_FLOAT, 0.5 * my_rank), *out;

	check(oxr_reduce(grp, 0, "+", in, &out, arena, -1), "reduce");
	oxr_bcast_last_counts(&last);
	if (my_rank == 0 && out->v.f64 != 0.25 * nranks * (nranks - 1))
		die("reduce gave a wrong sum");
	oxr_arena_reset(arena);
}

static void be_gather(const double *mine, double *all, int k)
{
	int r;

	if (my_rank) {
		oxr_ox_msg m = { .tag = OXR_OX_DATA };
		oxr_arena_reset(arena);
		m.cmo = oxr_cmo_new_bytes(arena, OXR_CMO_DATUM, mine, sizeof(double) * (size_t)k);
		check(oxr_send(grp, 0, &m), "gather send");
		oxr_arena_reset(arena);
		return;
	}
	memcpy(all, mine, sizeof(double) * (size_t)k);
	for (r = 1; r < nranks; r++) {
		oxr_rmsg *m;
		check(oxr_recv(grp, r, -1, &m), "gather recv");
		if (m->msg.tag != OXR_OX_DATA || m->msg.cmo->tag != OXR_CMO_DATUM ||
		    m->msg.cmo->len != sizeof(double) * (size_t)k)
			die("gather: a bad message from rank %d", r);
		memcpy(all + (size_t)r * k, m->msg.cmo->data, m->msg.cmo->len);
		oxr_rmsg_free(m);
	}
}

static void be_counts(double *sent, double *received)
{
	*sent = (double)last.sent;
	*received = (double)last.received;
}

static void algo_sweep(int quick)
{
	static const size_t sizes[] = { 16u << 10, 64u << 10, 128u << 10, 256u << 10, 512u << 10,
					1u << 20, 2u << 20, 4u << 20, 8u << 20, 16u << 20, 64u << 20 };
	int i;

	if (my_rank == 0)
		printf("algo sweep: binomial tree against pipelined chain (chunk %s bytes)\n"
		       "%-9s %14s %14s %8s\n", getenv("OXR_BCAST_CHUNK_BYTES") ?
		       getenv("OXR_BCAST_CHUNK_BYTES") : "default", "size", "binomial us",
		       "chain us", "chain/bin");
	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		int iters = sizes[i] >= (16u << 20) ? (quick ? 3 : 5) : quick ? 10 : 30;
		struct figure fb, fc;
		char sz[32];
		setenv("OXR_BCAST_PIPELINE_BYTES", "1099511627776", 1);
		fb = measure(OP_BCAST, sizes[i], iters, 2);
		setenv("OXR_BCAST_PIPELINE_BYTES", "1", 1);
		fc = measure(OP_BCAST, sizes[i], iters, 2);
		unsetenv("OXR_BCAST_PIPELINE_BYTES");
		oxr_bench_size_str(sz, sizeof(sz), sizes[i]);
		if (my_rank == 0) {
			printf("%-9s %14.1f %14.1f %8.2f\n", sz, fb.median_us, fc.median_us,
			       fc.median_us / fb.median_us);
			printf("SWEEP n=%d bytes=%zu binomial_us=%.1f chain_us=%.1f\n", nranks,
			       sizes[i], fb.median_us, fc.median_us);
		}
	}
}
#endif
