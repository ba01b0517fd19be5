/* SPDX-License-Identifier: MIT */
/*
 * bench_codec: throughput of the CMO encoder and both decoders, each beside
 * memcpy of the same bytes measured in the same run.
 *
 *   bench_codec [--quick] [--json FILE] [-v]
 *
 * Every workload is checked before it is timed (both decoders, both byte
 * orders: equal to the original, re-encoding gives the wire bytes back, the
 * copying decoder keeps no pointer into its input), so a fast but wrong codec
 * cannot report numbers.  The legend printed at the end says what the rows mean.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "oxr/oxr.h"

#define PIECE (64 * 1024) /* what one socket read hands the copying decoder */
#define MAX_ROWS 64
#define OTHER_ORDER (OXR_ORDER_HOST == OXR_ORDER_LITTLE ? OXR_ORDER_NETWORK : OXR_ORDER_LITTLE)

enum base { BASE_NONE, BASE_WARM, BASE_FRESH };
static const char *const base_name[] = { "", "warm", "fresh" };

struct work {
	const char *name;
	oxr_cmo *obj;
	uint8_t *wire, *swap, *dst; /* host order, the other order, scratch output */
	size_t len;
	uint64_t nobj;
	double memcpy_mbs[3];       /* by enum base */
};

typedef uint64_t (*op_fn)(struct work *w);

struct op {
	const char *name;
	op_fn fn;
	enum base base;
	int objs; /* Mobj/s means something */
};

struct row {
	const char *work, *op;
	size_t bytes;
	double sec, mbs, mobjs, base_mbs; /* mobjs < 0: not counted */
	double faults;                    /* minor page faults per call */
	enum base base;
};

static struct {
	double min_s;
	int runs, quick, verbose;
	const char *json;
} opt = { 0.2, 5, 0, 0, NULL };

static struct row rows[MAX_ROWS];
static int nrows;
static oxr_arena *scratch; /* what timed calls allocate; each call resets it first */
static oxr_decoder *dec;
static mpz_t big;          /* the 1 MiB ZZ workload's value */
static uint64_t sink;      /* every timed call's result lands here, so none is dead code */

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("bench_codec: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void check(oxr_status_t st, const char *what)
{
	if (st != OXR_OK)
		die("%s: %s", what, oxr_errmsg());
}

static oxr_cmo *must(oxr_cmo *o)
{
	if (!o)
		die("build: %s", oxr_errmsg());
	return o;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The compiler must assume the bytes at p are read, so a copy into memory
 * that is freed right after is not a dead store. */
static inline void keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static uint32_t rnd(void)
{
	static uint64_t s = 0x9e3779b97f4a7c15ull;

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (uint32_t)(s >> 32);
}

/* ---- the timed operations ------------------------------------------- */

static uint64_t digest(const oxr_cmo *o)
{
	return (uint64_t)o->tag + o->nkids + o->len + (o->len ? o->data[o->len - 1] : 0);
}

/* One decode of w's bytes (the other order's when swap) into the reset scratch
 * arena: piece 0 one-shot zero-copy, else copying, fed in pieces of that size. */
static oxr_cmo *decode(const struct work *w, int swap, size_t piece)
{
	const uint8_t *p = swap ? w->swap : w->wire;
	int order = swap ? OTHER_ORDER : OXR_ORDER_HOST;
	oxr_status_t st = OXR_AGAIN;
	size_t off = 0, used;
	oxr_cmo *o;

	oxr_arena_reset(scratch);
	if (!piece) {
		check(oxr_cmo_decode(p, w->len, order, NULL, scratch, &o, &used), "decode");
		return o;
	}
	oxr_decoder_set_order(dec, order);
	while (st == OXR_AGAIN && off < w->len) {
		size_t n = w->len - off < piece ? w->len - off : piece;
		st = oxr_decoder_feed(dec, p + off, n, 0, &used);
		off += used;
	}
	if (st == OXR_AGAIN)
		die("%s: the copying decoder wants more than the %zu bytes", w->name, w->len);
	check(st, "decoder feed");
	return oxr_decoder_cmo(dec);
}

/* A new mpz each call, as a receiver keeping the number must have. */
static uint64_t to_mpz(const oxr_cmo *o)
{
	uint64_t v;
	mpz_t z;

	mpz_init(z);
	check(oxr_cmo_get_mpz(o, z), "get_mpz");
	v = mpz_getlimbn(z, 0) + mpz_size(z);
	mpz_clear(z);
	return v;
}

static uint64_t encode(struct work *w, int order)
{
	size_t n;

	check(oxr_cmo_encode(w->obj, order, w->dst, w->len, &n), "encode");
	return n + w->dst[n - 1];
}

static uint64_t op_memcpy_warm(struct work *w)
{
	memcpy(w->dst, w->wire, w->len);
	keep(w->dst);
	return w->dst[w->len - 1];
}

static uint64_t op_memcpy_fresh(struct work *w)
{
	uint8_t *p = malloc(w->len);
	uint64_t v;

	if (!p)
		die("out of memory");
	memcpy(p, w->wire, w->len);
	keep(p);
	v = p[w->len - 1];
	free(p);
	return v;
}

static uint64_t op_new_zz(struct work *w)
{
	oxr_arena_reset(scratch);
	return digest(must(oxr_cmo_new_zz(scratch, big)));
}

static uint64_t op_encode(struct work *w) { return encode(w, OXR_ORDER_HOST); }
static uint64_t op_encode_swap(struct work *w) { return encode(w, OTHER_ORDER); }
static uint64_t op_decode_zc(struct work *w) { return digest(decode(w, 0, 0)); }
static uint64_t op_decode_copy(struct work *w) { return digest(decode(w, 0, PIECE)); }
static uint64_t op_decode_copy1(struct work *w) { return digest(decode(w, 0, w->len)); }
static uint64_t op_decode_mpz(struct work *w) { return to_mpz(decode(w, 0, 0)); }
static uint64_t op_decode_swap_mpz(struct work *w) { return to_mpz(decode(w, 1, 0)); }

static const struct op memcpy_ops[] = {
	{ "memcpy warm", op_memcpy_warm, BASE_NONE, 0 },
	{ "memcpy fresh", op_memcpy_fresh, BASE_WARM, 0 },
};

static const struct op common_ops[] = {
	{ "encode", op_encode, BASE_WARM, 1 },
	{ "decode zero-copy", op_decode_zc, BASE_FRESH, 1 },
	{ "decode copy", op_decode_copy, BASE_FRESH, 1 },
	{ NULL, NULL, 0, 0 },
};

/* One payload: the copying decoder fed all at once too, which allocates it
 * whole instead of growing it as the pieces come. */
static const struct op bytes_ops[] = {
	{ "encode", op_encode, BASE_WARM, 1 },
	{ "decode zero-copy", op_decode_zc, BASE_FRESH, 1 },
	{ "decode copy", op_decode_copy, BASE_FRESH, 1 },
	{ "decode copy 1 piece", op_decode_copy1, BASE_FRESH, 1 },
	{ NULL, NULL, 0, 0 },
};

static const struct op zz_ops[] = {
	{ "encode", op_encode, BASE_WARM, 1 },
	{ "encode swap", op_encode_swap, BASE_WARM, 1 },
	{ "decode zero-copy", op_decode_zc, BASE_FRESH, 1 },
	{ "decode copy", op_decode_copy, BASE_FRESH, 1 },
	{ "decode copy 1 piece", op_decode_copy1, BASE_FRESH, 1 },
	{ "decode+get_mpz", op_decode_mpz, BASE_FRESH, 1 },
	{ "decode swap+get_mpz", op_decode_swap_mpz, BASE_FRESH, 1 },
	{ "new_zz (mpz->words)", op_new_zz, BASE_FRESH, 1 },
	{ NULL, NULL, 0, 0 },
};

/* ---- workloads ------------------------------------------------------ */

static oxr_cmo *build_int32_list(oxr_arena *a)
{
	oxr_cmo *l = must(oxr_cmo_new_list(a, 100000));
	uint32_t i;

	for (i = 0; i < l->nkids; i++)
		l->kids[i] = must(oxr_cmo_new_int32(a, (int32_t)(rnd() % 2001) - 1000));
	return l;
}

static oxr_cmo *build_zz_list(oxr_arena *a)
{
	oxr_cmo *l = must(oxr_cmo_new_list(a, 100000));
	uint32_t i;

	for (i = 0; i < l->nkids; i++) {
		long v = rnd() & 0x7fffffff;
		l->kids[i] = must(oxr_cmo_new_zz_si(a, rnd() & 1 ? -v : v));
	}
	return l;
}

static oxr_cmo *build_zz_1mib(oxr_arena *a)
{
	gmp_randstate_t rs;

	gmp_randinit_default(rs);
	mpz_urandomb(big, rs, 32ul << 18);
	mpz_setbit(big, (32ul << 18) - 1); /* exactly 2^18 words */
	gmp_randclear(rs);
	return must(oxr_cmo_new_zz(a, big));
}

static oxr_cmo *bytes_obj(oxr_arena *a, int32_t tag, size_t n)
{
	char *p = malloc(n);
	oxr_cmo *o;
	size_t i;

	if (!p)
		die("out of memory");
	for (i = 0; i < n; i++)
		p[i] = (char)('a' + rnd() % 26);
	o = must(oxr_cmo_new_bytes(a, tag, p, n));
	free(p);
	return o;
}

static oxr_cmo *build_string_16mib(oxr_arena *a) { return bytes_obj(a, OXR_CMO_STRING, 16 << 20); }
static oxr_cmo *build_datum_16mib(oxr_arena *a) { return bytes_obj(a, OXR_CMO_DATUM, 16 << 20); }

static oxr_cmo *build_string_list(oxr_arena *a)
{
	oxr_cmo *l = must(oxr_cmo_new_list(a, 1000));
	uint32_t i;

	for (i = 0; i < l->nkids; i++)
		l->kids[i] = bytes_obj(a, OXR_CMO_STRING, 4096);
	return l;
}

/* Lists of 6 down to depth 0, whose leaves alternate INT32 and short STRING. */
static oxr_cmo *tree(oxr_arena *a, int depth, unsigned *leaf)
{
	char s[16];
	oxr_cmo *o;
	uint32_t i;

	if (depth == 0) {
		if ((*leaf)++ % 2)
			return must(oxr_cmo_new_int32(a, (int32_t)*leaf));
		snprintf(s, sizeof(s), "leaf%u", *leaf);
		return must(oxr_cmo_new_string(a, s));
	}
	o = must(oxr_cmo_new_list(a, 6));
	for (i = 0; i < 6; i++)
		o->kids[i] = tree(a, depth - 1, leaf);
	return o;
}

static oxr_cmo *build_tree(oxr_arena *a)
{
	unsigned leaf = 0;

	return tree(a, 6, &leaf);
}

static const struct {
	const char *name;
	oxr_cmo *(*build)(oxr_arena *a);
	const struct op *ops;
} works[] = {
	{ "int32 x100000", build_int32_list, common_ops },
	{ "zz<2^31 x100000", build_zz_list, common_ops },
	{ "zz 1 MiB", build_zz_1mib, zz_ops },
	{ "string 16 MiB", build_string_16mib, bytes_ops },
	{ "string 4K x1000", build_string_list, common_ops },
	{ "datum 16 MiB", build_datum_16mib, bytes_ops },
	{ "tree 6^6 leaves", build_tree, common_ops },
};

static uint64_t count_nodes(const oxr_cmo *o)
{
	uint64_t n = 1;
	uint32_t i;

	for (i = 0; i < o->nkids; i++)
		n += count_nodes(o->kids[i]);
	return n;
}

/* 1 if a payload of o or of a kid lies in buf[0..len). */
static int borrows(const oxr_cmo *o, const uint8_t *buf, size_t len)
{
	uintptr_t p = (uintptr_t)o->data, b = (uintptr_t)buf;
	uint32_t i;

	if (o->len && p >= b && p < b + len)
		return 1;
	for (i = 0; i < o->nkids; i++)
		if (borrows(o->kids[i], buf, len))
			return 1;
	return 0;
}

static void verify(struct work *w)
{
	static const char *const how[] = { "zero-copy", "copy", "1-piece copy" };
	const size_t piece[] = { 0, PIECE, w->len };
	int swap, k;
	size_t n;

	for (swap = 0; swap < 2; swap++) {
		for (k = 0; k < 3; k++) {
			oxr_cmo *o = decode(w, swap, piece[k]);

			if (!oxr_cmo_equal(o, w->obj))
				die("%s: %s decode%s differs from the original", w->name, how[k],
				    swap ? " (other order)" : "");
			check(oxr_cmo_encode(o, OXR_ORDER_HOST, w->dst, w->len, &n), "re-encode");
			if (n != w->len || memcmp(w->dst, w->wire, n))
				die("%s: re-encoding the %s decode gives other bytes", w->name,
				    how[k]);
			if (k && borrows(o, swap ? w->swap : w->wire, w->len))
				die("%s: the copying decoder left a payload in its input", w->name);
			if (w->obj->tag == OXR_CMO_ZZ) {
				mpz_t z;
				mpz_init(z);
				check(oxr_cmo_get_mpz(o, z), "get_mpz");
				if (mpz_cmp(z, big))
					die("%s: get_mpz gives another value", w->name);
				mpz_clear(z);
			}
		}
	}
}

/* ---- measuring and reporting ---------------------------------------- */

static long minor_faults(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/* Best seconds per call: opt.runs runs, each calling fn until opt.min_s has
 * passed and at least 3 times.  *faults: page faults per call after the first
 * run, which warms the allocator up. */
static double best_time(op_fn fn, struct work *w, double *faults)
{
	double best = 1e30;
	long calls = 0, nflt = 0;
	int r;

	for (r = 0; r < opt.runs; r++) {
		long n = 0, f0 = minor_faults();
		double t0 = now(), t;

		do {
			sink += fn(w);
			n++;
			t = now() - t0;
		} while (n < 3 || t < opt.min_s);
		if (t / n < best)
			best = t / n;
		if (r > 0) {
			calls += n;
			nflt += minor_faults() - f0;
		}
	}
	*faults = calls ? (double)nflt / (double)calls : 0;
	return best;
}

static void print_row(const struct row *r)
{
	char mobj[24] = "-", base[32] = "-", ratio[24] = "-";

	if (r->mobjs >= 0)
		snprintf(mobj, sizeof(mobj), "%.3f", r->mobjs);
	if (r->base) {
		snprintf(base, sizeof(base), "%.0f %s", r->base_mbs, base_name[r->base]);
		snprintf(ratio, sizeof(ratio), "%.2f", r->mbs / r->base_mbs);
	}
	printf("%-16s %-20s %9zu %10.0f %8s %-12s %7s %6.1f\n", r->work, r->op, r->bytes,
	       r->mbs, mobj, base, ratio, r->faults);
	fflush(stdout);
}

static double measure(struct work *w, const struct op *op)
{
	struct row *r = &rows[nrows++];

	if (nrows > MAX_ROWS)
		die("more than %d rows", MAX_ROWS);
	r->work = w->name;
	r->op = op->name;
	r->bytes = w->len;
	r->base = op->base;
	r->sec = best_time(op->fn, w, &r->faults);
	r->mbs = (double)w->len / r->sec / 1e6;
	r->mobjs = op->objs ? (double)w->nobj / r->sec / 1e6 : -1;
	r->base_mbs = w->memcpy_mbs[op->base];
	print_row(r);
	return r->mbs;
}

static void run_work(const char *name, oxr_cmo *obj, const struct op *ops)
{
	struct work w = { .name = name, .obj = obj, .nobj = count_nodes(obj) };
	const struct op *op;
	size_t n;

	check(oxr_cmo_encode_alloc(obj, OXR_ORDER_HOST, &w.wire, &w.len), "encode");
	check(oxr_cmo_encode_alloc(obj, OTHER_ORDER, &w.swap, &n), "encode");
	w.dst = malloc(w.len);
	if (!w.dst || n != w.len)
		die("%s: out of memory or orders of different sizes", name);
	verify(&w);
	w.memcpy_mbs[BASE_WARM] = measure(&w, &memcpy_ops[0]);
	w.memcpy_mbs[BASE_FRESH] = measure(&w, &memcpy_ops[1]);
	for (op = ops; op->name; op++)
		measure(&w, op);
	printf("\n");
	free(w.wire);
	free(w.swap);
	free(w.dst);
}

static void json_num(char *buf, size_t n, double v, int valid)
{
	if (valid)
		snprintf(buf, n, "%.6g", v);
	else
		snprintf(buf, n, "null");
}

static void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f)
		die("cannot write %s", path);
	fprintf(f, "{\n  \"bench\": \"bench_codec\",\n  \"quick\": %s,\n  \"piece_bytes\": %d,\n"
		"  \"rows\": [\n", opt.quick ? "true" : "false", PIECE);
	for (i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		char mobj[32], bmbs[32], ratio[32], base[16];

		json_num(mobj, sizeof(mobj), r->mobjs, r->mobjs >= 0);
		json_num(bmbs, sizeof(bmbs), r->base_mbs, r->base);
		json_num(ratio, sizeof(ratio), r->mbs / r->base_mbs, r->base);
		snprintf(base, sizeof(base), r->base ? "\"%s\"" : "null", base_name[r->base]);
		fprintf(f, "    {\"workload\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, "
			"\"sec\": %.6g, \"mb_s\": %.6g, \"mobj_s\": %s, \"base\": %s, "
			"\"memcpy_mb_s\": %s, \"ratio\": %s, \"faults_per_call\": %.3g}%s\n",
			r->work, r->op, r->bytes, r->sec, r->mbs, mobj, base, bmbs, ratio,
			r->faults, i + 1 < nrows ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f))
		die("cannot write %s", path);
}

static const char legend[] =
	"MB = 10^6 bytes of the wire encoding; Mobj/s = 10^6 CMO nodes (a list and each\n"
	"kid count) per second.  Each figure is the best of %d runs, each repeating the\n"
	"call for >= %.2f s and >= 3 times.  Wire bytes are in host order; 'swap' is the other.\n"
	"  encode            oxr_cmo_encode into the caller's buffer.\n"
	"  decode zero-copy  oxr_cmo_decode: strings, datums and ZZ words point into the\n"
	"                    input, so for them it is O(1): NOT a copy speed.\n"
	"  decode copy       oxr_decoder_feed, flags 0, in %d KiB pieces as from a socket;\n"
	"                    payloads are copied into the arena.  The fair one beside memcpy.\n"
	"  ... 1 piece       the same fed all at once: a payload is allocated whole, not grown.\n"
	"  decode+get_mpz    zero-copy decode, then oxr_cmo_get_mpz into a new mpz.\n"
	"  memcpy warm       into one preallocated buffer every call.\n"
	"  memcpy fresh      malloc + memcpy + free of the same size every call: what any\n"
	"                    decoder that returns memory it owns must do.\n"
	"  ratio             MB/s over the memcpy in its column: warm for encode (it writes\n"
	"                    the caller's buffer), fresh for decode and new_zz (they return\n"
	"                    memory they allocated).  Goal: decode copy of strings/datums >= 0.8.\n"
	"  flt               minor page faults per call, warm-up run left out: pages new from\n"
	"                    the kernel cost ~10x a copy into memory malloc recycles.\n"
	"The arena a call allocates from is reset at its start (the free is in the time).\n";

static int usage(void)
{
	fprintf(stderr, "usage: bench_codec [--quick] [--json FILE] [-v]\n"
		"  --quick      short runs (~10 s), for CI\n"
		"  --json FILE  also write the rows as JSON\n"
		"  -v           print the checksum of all results\n");
	return 2;
}

/* glibc serves big blocks by mmap and trims the heap top until the first big
 * block is freed, after which it raises both thresholds and recycles memory.
 * Every workload runs in that later state, a server's after its first big
 * message, so the order of the workloads does not change their numbers. */
static void warm_malloc(void)
{
	size_t n = 16u << 20; /* glibc raises no threshold beyond 32 MiB */
	char *p = malloc(n);

	if (!p)
		die("out of memory");
	memset(p, 1, n);
	keep(p);
	free(p);
}

int main(int argc, char **argv)
{
	oxr_arena *build;
	size_t i;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--quick"))
			opt.quick = 1;
		else if (!strcmp(argv[a], "--json") && a + 1 < argc)
			opt.json = argv[++a];
		else if (!strcmp(argv[a], "-v"))
			opt.verbose = 1;
		else
			return usage();
	}
	if (opt.quick) {
		opt.min_s = 0.05;
		opt.runs = 3;
	}
	check(oxr_arena_create(&build), "arena");
	check(oxr_arena_create(&scratch), "arena");
	check(oxr_decoder_create(&dec, OXR_DECODE_CMO, OXR_ORDER_HOST, NULL, scratch), "decoder");
	mpz_init(big);
	warm_malloc();

	printf("%-16s %-20s %9s %10s %8s %-12s %7s %6s\n", "workload", "operation", "bytes",
	       "MB/s", "Mobj/s", "memcpy MB/s", "ratio", "flt");
	for (i = 0; i < sizeof(works) / sizeof(works[0]); i++) {
		oxr_arena_reset(build);
		run_work(works[i].name, works[i].build(build), works[i].ops);
	}
	printf(legend, opt.runs, opt.min_s, PIECE / 1024);
	if (opt.json)
		write_json(opt.json);
	if (opt.verbose)
		printf("checksum %llu\n", (unsigned long long)sink);

	mpz_clear(big);
	oxr_decoder_destroy(dec);
	oxr_arena_destroy(scratch);
	oxr_arena_destroy(build);
	return 0;
}
