/* SPDX-License-Identifier: MIT */
/*
 * bench_pingpong: latency and streaming bandwidth between two ranks.
 *
 *   oxr-run -n 2 bench_pingpong [--quick] [--json FILE]
 *
 * Latency: rank 0 sends an OX_DATA message whose CMO is a CMO_DATUM of N
 * bytes, rank 1 sends one of the same size back; every round trip is one
 * sample, half of it is the latency.  Bandwidth: rank 0 sends a window of W
 * messages (oxr_isend, then waits for all), rank 1 takes them and answers
 * with a small message; bytes of payload over the time of the window.
 *
 * The driver (calibration, statistics, table, JSON) is this file; the two
 * backends are the oxr one at the end of it and the MPI one in
 * mpi_pingpong.c, which includes this file.  One driver, so the two programs
 * measure the same pattern and print the same format, which is what lets
 * run_pingpong.sh set their figures side by side.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

#define PP_WINDOW 64     /* messages in one bandwidth window */
#define PP_MAX_BYTES (4u << 20)

/* ---- what a backend provides ---------------------------------------- */

/* Fills *rank, *size; may take its arguments out of argc/argv (MPI_Init). */
static void be_init(int *argc, char ***argv, int *rank, int *size);
static void be_fini(void);
/* What is being measured, in words, for the title line and the JSON. */
static void be_describe(char *buf, size_t n);
/* Makes the N-byte payload that be_send and be_stream_send send. */
static void be_prepare(size_t n);
static void be_send(int peer, size_t n);
/* Takes one payload message from peer; dies unless it holds n bytes. */
static void be_recv(int peer, size_t n);
static void be_stream_send(int peer, size_t n, int w);
static void be_stream_recv(int peer, size_t n, int w);
/* Small control messages: iteration counts and the bandwidth ack. */
static void be_send_u32(int peer, uint32_t v);
static uint32_t be_recv_u32(int peer);
static void be_barrier(void);

/* ---- the driver ------------------------------------------------------- */

static const char *be_impl;  /* "oxr" or "mpi": the JSON's "impl" */
/* oxr-bench's names of the two measurements (bench_put: "put", "put_bw") */
static const char *be_lat_name = "latency", *be_bw_name = "bandwidth";
static unsigned be_overhead; /* framing bytes the backend adds to a payload */

static struct {
	int quick;
	const char *json;
	size_t only[16]; /* --sizes: measure these sizes only */
	int nonly;
} opt;

static int my_rank = -1;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s_pingpong: rank %d: ", be_impl, my_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Latency sizes; max: iterations at most (a time budget cuts them first). */
static const struct {
	size_t bytes;
	unsigned max;
} lat_sizes[] = {
	{ 8, 10000 }, { 64, 10000 }, { 512, 10000 }, { 4096, 10000 },
	{ 32768, 5000 }, { 262144, 2000 }, { 1u << 20, 1000 }, { 4u << 20, 300 },
};
static const size_t bw_sizes[] = { 4096, 65536, 1u << 20, 4u << 20 };

#define NLAT (sizeof(lat_sizes) / sizeof(lat_sizes[0]))
#define NBW (sizeof(bw_sizes) / sizeof(bw_sizes[0]))

struct lat_row {
	size_t bytes;
	unsigned iters;
	double min, med, p99, mean; /* microseconds, half a round trip */
};

struct bw_row {
	size_t bytes;
	unsigned windows;
	double mbs, med, best; /* MB/s: all windows together, median window, best window */
};

/* 16: --sizes takes at most that many */
static struct lat_row lat[16];
static struct bw_row bw[16];

/* The table's cap on a size's rounds; sizes of --sizes outside it get the
 * cap of the next size up, so a big message is not timed 10000 times. */
static unsigned max_iters(size_t n)
{
	size_t i;

	for (i = 0; i < NLAT; i++)
		if (lat_sizes[i].bytes >= n)
			return lat_sizes[i].max;
	return lat_sizes[NLAT - 1].max;
}

static void emit(const char *bench, size_t n, const char *unit, unsigned warm, const double *v,
		 unsigned k)
{
	/* the put backend is oxr too; the benchmark's name tells them apart */
	struct oxr_bench_row row = { .bench = bench, .ranks = 2, .bytes = n, .unit = unit,
				     .warmup = warm,
				     .impl = strncmp(be_impl, "oxr", 3) ? be_impl : "oxr" };

	if (oxr_bench_emit(&row, v, k))
		die("cannot write the samples to $OXR_BENCH_SAMPLES");
}

/* Rounds that fit the budget, from how long the warm-up rounds took. */
static unsigned calibrate(double warm_s, unsigned warm, double budget, unsigned lo,
			  unsigned hi)
{
	double per = warm_s / warm, n = per > 0 ? budget / per : hi;

	return n < lo ? lo : n > hi ? hi : (unsigned)n;
}

static void ping(size_t n)
{
	be_send(1, n);
	be_recv(1, n);
}

static void pong(size_t n)
{
	be_recv(0, n);
	be_send(0, n);
}

static void latency(struct lat_row *r, size_t n, unsigned max)
{
	unsigned warm = opt.quick ? 10 : 100, i, iters;
	double budget = opt.quick ? 0.2 : 2.0, t0, *s;
	struct oxr_bench_stats st;

	if (n >= (1u << 20))
		warm = opt.quick ? 3 : 20;
	be_prepare(n);
	if (my_rank == 1) {
		for (i = 0; i < warm; i++)
			pong(n);
		iters = be_recv_u32(0);
		for (i = 0; i < iters; i++)
			pong(n);
		return;
	}
	/* calibrate on the second half: the first may pay for connecting, faults */
	for (i = 0, t0 = 0; i < warm; i++) {
		if (i == warm / 2)
			t0 = now();
		ping(n);
	}
	iters = calibrate(now() - t0, warm - warm / 2, budget, opt.quick ? 10 : 50,
			  opt.quick ? max / 10 : max);
	be_send_u32(1, iters);
	s = malloc(iters * sizeof(*s));
	if (!s)
		die("out of memory");
	for (i = 0; i < iters; i++) {
		double t = now();
		ping(n);
		s[i] = (now() - t) * 1e6 / 2;
	}
	emit(be_lat_name, n, "us", warm, s, iters);
	oxr_bench_stats_of(s, iters, &st);
	r->bytes = n;
	r->iters = iters;
	r->min = st.min;
	r->med = st.median;
	r->p99 = st.p99;
	r->mean = st.mean;
	free(s);
}

static void bandwidth(struct bw_row *r, size_t n)
{
	unsigned warm = opt.quick ? 1 : 3, i, wins;
	double budget = opt.quick ? 0.15 : 1.5, t0, *s, total = 0;
	double bytes = (double)n * PP_WINDOW;
	struct oxr_bench_stats st;

	be_prepare(n);
	if (my_rank == 1) {
		for (i = 0; i < warm; i++) {
			be_stream_recv(0, n, PP_WINDOW);
			be_send_u32(0, i);
		}
		wins = be_recv_u32(0);
		for (i = 0; i < wins; i++) {
			be_stream_recv(0, n, PP_WINDOW);
			be_send_u32(0, i);
		}
		return;
	}
	for (i = 0, t0 = 0; i < warm; i++) {
		if (i == warm / 2)
			t0 = now();
		be_stream_send(1, n, PP_WINDOW);
		be_recv_u32(1);
	}
	wins = calibrate(now() - t0, warm - warm / 2, budget, opt.quick ? 3 : 10, 20000);
	be_send_u32(1, wins);
	s = malloc(wins * sizeof(*s));
	if (!s)
		die("out of memory");
	for (i = 0; i < wins; i++) {
		double t = now();
		be_stream_send(1, n, PP_WINDOW);
		be_recv_u32(1);
		s[i] = now() - t;
		total += s[i];
	}
	r->bytes = n;
	r->windows = wins;
	r->mbs = bytes * wins / total / 1e6;
	/* samples as rates, so that oxr-bench's median and best are rates too */
	for (i = 0; i < wins; i++)
		s[i] = bytes / s[i] / 1e6;
	emit(be_bw_name, n, "MB/s", warm, s, wins);
	oxr_bench_stats_of(s, wins, &st);
	r->med = st.median;
	r->best = st.max;
	free(s);
}

static void print_lat(const struct lat_row *r)
{
	char sz[24];

	oxr_bench_size_str(sz, sizeof(sz), r->bytes);
	printf("%-10s %8zu %8zu %7u %10.2f %10.2f %10.2f %10.2f\n", sz, r->bytes,
	       r->bytes + be_overhead, r->iters, r->min, r->med, r->p99, r->mean);
	fflush(stdout);
}

static void print_bw(const struct bw_row *r)
{
	char sz[24];

	oxr_bench_size_str(sz, sizeof(sz), r->bytes);
	printf("%-10s %8zu %8zu %7u %10.0f %10.0f %10.0f\n", sz, r->bytes, r->bytes + be_overhead,
	       r->windows, r->mbs, r->med, r->best);
	fflush(stdout);
}

/* One row a line, so a shell script can read it with awk as well as jq. */
static void write_json(const char *path, const char *what)
{
	FILE *f = fopen(path, "w");
	const char *sep;
	size_t i;

	if (!f)
		die("cannot write %s", path);
	fprintf(f, "{\n  \"bench\": \"pingpong\", \"impl\": \"%s\", \"what\": \"%s\",\n"
		"  \"quick\": %s, \"overhead_bytes\": %u, \"window\": %d,\n  \"latency\": [\n",
		be_impl, what, opt.quick ? "true" : "false", be_overhead, PP_WINDOW);
	for (i = 0, sep = ""; i < 16; i++) {
		if (!lat[i].iters) /* not measured */
			continue;
		const struct lat_row *r = &lat[i];
		fprintf(f, "%s    {\"bytes\": %zu, \"iters\": %u, \"min_us\": %.4g, "
			"\"median_us\": %.4g, \"p99_us\": %.4g, \"mean_us\": %.4g}", sep,
			r->bytes, r->iters, r->min, r->med, r->p99, r->mean);
		sep = ",\n";
	}
	fprintf(f, "\n  ],\n  \"bandwidth\": [\n");
	for (i = 0, sep = ""; i < 16; i++) {
		if (!bw[i].windows)
			continue;
		fprintf(f, "%s    {\"bytes\": %zu, \"windows\": %u, \"mb_s\": %.6g, "
			"\"median_mb_s\": %.6g, \"best_mb_s\": %.6g}", sep, bw[i].bytes,
			bw[i].windows, bw[i].mbs, bw[i].med, bw[i].best);
		sep = ",\n";
	}
	fprintf(f, "\n");
	fprintf(f, "  ]\n}\n");
	if (fclose(f))
		die("cannot write %s", path);
}

static const char legend[] =
	"bytes: payload (a CMO_DATUM's bytes for oxr, MPI_BYTEs for MPI); wire: what the\n"
	"  program hands its transport: %s.\n"
	"latency: half a round trip, rank 0 -> rank 1 -> rank 0, in microseconds over\n"
	"  'iters' round trips after a warm-up; min, median, p99 (nearest rank) and mean.\n"
	"bandwidth: rank 0 sends %d messages, rank 1 answers with 4 bytes when it has them\n"
	"  all; MB = 10^6 payload bytes.  MB/s over all windows together, of the median\n"
	"  window, of the fastest window.\n"
	"Both ranks run on this machine; other work on its cores moves the figures: the\n"
	"  spread between min and median says how much.\n";

static int usage(void)
{
	fprintf(stderr, "usage: %s_pingpong [--quick] [--json FILE]   (2 ranks)\n"
		"  --quick      a few seconds, fewer rounds (for CI)\n"
		"  --json FILE  also write the rows as JSON (rank 0)\n"
		"  --sizes N,N  these payload sizes (bytes, at most 16 of at most 4 MiB)\n", be_impl);
	return 2;
}

int main(int argc, char **argv)
{
	char what[256];
	int size, a;
	size_t i;

	be_init(&argc, &argv, &my_rank, &size);
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--quick"))
			opt.quick = 1;
		else if (!strcmp(argv[a], "--json") && a + 1 < argc)
			opt.json = argv[++a];
		else if (!strcmp(argv[a], "--sizes") && a + 1 < argc) {
			char *p = argv[++a], *end;
			while (*p && opt.nonly < 16) {
				opt.only[opt.nonly++] = strtoul(p, &end, 10);
				if (end == p || (*end && *end != ',') ||
				    opt.only[opt.nonly - 1] > PP_MAX_BYTES)
					return usage();
				p = *end ? end + 1 : end;
			}
		} else
			return usage();
	}
	if (size < 2)
		die("needs 2 ranks, has %d (start it with oxr-run -n 2 / mpirun -np 2)", size);
	be_describe(what, sizeof(what));
	if (my_rank >= 2) { /* more ranks than the pattern uses: they only wait */
		be_barrier();
		be_fini();
		return 0;
	}
	if (my_rank == 0) {
		printf("%s ping-pong: %s%s\n\n", be_impl, what, opt.quick ? " (quick)" : "");
		printf("%-10s %8s %8s %7s %10s %10s %10s %10s\n", "latency", "bytes", "wire",
		       "iters", "min us", "median us", "p99 us", "mean us");
	}
	for (i = 0; i < (opt.nonly ? (size_t)opt.nonly : NLAT); i++) {
		size_t n = opt.nonly ? opt.only[i] : lat_sizes[i].bytes;
		latency(&lat[i], n, max_iters(n));
		if (my_rank == 0)
			print_lat(&lat[i]);
	}
	if (my_rank == 0)
		printf("\n%-10s %8s %8s %7s %10s %10s %10s\n", "bandwidth", "bytes", "wire",
		       "windows", "MB/s", "median", "best");
	/* streaming small messages measures the message rate, not bandwidth:
	 * --sizes streams its sizes from the table's smallest up */
	for (i = 0; i < (opt.nonly ? (size_t)opt.nonly : NBW); i++) {
		size_t n = opt.nonly ? opt.only[i] : bw_sizes[i];
		if (n < bw_sizes[0])
			continue;
		bandwidth(&bw[i], n);
		if (my_rank == 0)
			print_bw(&bw[i]);
	}
	if (my_rank == 0) {
		printf("\n");
		printf(legend, be_overhead ?
		       "the payload plus 16 bytes of framing (OX_DATA tag and\n  serial, "
		       "CMO_DATUM tag and length); the other figures count the payload only" :
		       "the payload (MPI's own envelope is not counted)", PP_WINDOW);
		if (opt.json)
			write_json(opt.json, what);
	}
	be_barrier();
	be_fini();
	return 0;
}

#ifndef PP_OTHER_BACKEND
/* ---- the oxr backend ------------------------------------------------ */

#include "oxr/oxr.h"
#include "oxr/transport.h"

static oxr_boot *boot;
static oxr_ctx *ctx;
static oxr_group *grp;
static oxr_arena *arena;   /* of the payload being sent */
static oxr_arena *small;   /* of the control message being sent */
static oxr_ox_msg payload; /* OX_DATA of a CMO_DATUM */
static uint8_t *pattern;

#include "bench_oxr_common.h"

static void be_init(int *argc, char ***argv, int *rank, int *size)
{
	size_t i;

	be_impl = "oxr";
	be_overhead = 16; /* OX_DATA: tag, serial; CMO_DATUM: tag, length */
	check(oxr_boot_open(&boot), "bootstrap");
	my_rank = oxr_boot_rank(boot);
	check(oxr_ctx_create(&ctx), "context");
	check(oxr_group_boot(ctx, boot, &grp), "group");
	check(oxr_arena_create(&arena), "arena");
	check(oxr_arena_create(&small), "arena");
	pattern = malloc(PP_MAX_BYTES);
	if (!pattern)
		die("out of memory");
	for (i = 0; i < PP_MAX_BYTES; i++)
		pattern[i] = (uint8_t)(i * 7 + 1);
	*rank = oxr_group_rank(grp);
	*size = oxr_group_size(grp);
}

static void be_fini(void)
{
	oxr_arena_destroy(arena);
	oxr_arena_destroy(small);
	free(pattern);
	oxr_group_destroy(grp);
	oxr_ctx_destroy(ctx);
	oxr_boot_close(boot);
}

static void be_describe(char *buf, size_t n)
{
	const char *spin = getenv("OXR_SPIN_US"), *host = getenv("OXR_HOST");

	snprintf(buf, n, "transport %s to %s, %d ranks from %s, OXR_SPIN_US=%s",
		 oxr_ctx_transport(ctx), host ? host : "127.0.0.1", oxr_group_size(grp),
		 oxr_boot_name(boot), spin ? spin : "50 (default)");
}

static void be_prepare(size_t n)
{
	oxr_arena_reset(arena);
	payload = (oxr_ox_msg){ .tag = OXR_OX_DATA,
				.cmo = oxr_cmo_new_bytes(arena, OXR_CMO_DATUM, pattern, n) };
	if (!payload.cmo)
		die("out of memory for a %zu-byte datum", n);
}

static void be_send(int peer, size_t n)
{
	check(oxr_send(grp, peer, &payload), "send");
}

static void check_payload(const oxr_rmsg *m, size_t n)
{
	const oxr_cmo *o = m->msg.cmo;

	if (m->msg.tag != OXR_OX_DATA || !o || o->tag != OXR_CMO_DATUM || o->len != n)
		die("expected an OX_DATA of a %zu-byte CMO_DATUM", n);
	/* the ends only: a full compare would be most of the time of big sizes */
	if (n && (o->data[0] != pattern[0] || o->data[n - 1] != pattern[n - 1]))
		die("a %zu-byte datum arrived with other bytes", n);
}

static void be_recv(int peer, size_t n)
{
	oxr_rmsg *m;

	check(oxr_recv(grp, peer, -1, &m), "recv");
	check_payload(m, n);
	oxr_rmsg_free(m);
}

static void be_stream_send(int peer, size_t n, int w)
{
	oxr_req *r[PP_WINDOW];
	int i;

	for (i = 0; i < w; i++)
		check(oxr_isend(grp, peer, &payload, &r[i]), "isend");
	for (i = 0; i < w; i++) {
		check(oxr_req_wait(r[i], -1), "wait");
		oxr_req_free(r[i]);
	}
}

static void be_stream_recv(int peer, size_t n, int w)
{
	int i;

	for (i = 0; i < w; i++)
		be_recv(peer, n);
}

#endif
