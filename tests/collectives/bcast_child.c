/* SPDX-License-Identifier: MIT */
/*
 * One rank of the bcast/reduce tests (tests/collectives/test_coll_bcast.c), started by
 * oxr-run.  Prints `rank R: MODE ok ...` and exits 0 when every check held.
 *
 *   bcast_child all [ROOTS]  for every root (or every ROOTS-th one, always
 *                            including 0 and n-1): bcasts of random objects,
 *                            reduces of every op and number kind, append,
 *                            a user op, an unknown op, a failing op, then
 *                            bcasts forced down the pipelined chain
 *   bcast_child big BYTES    a BYTES CMO_DATUM bcast from root n-1, checked
 *                            by hash on every rank
 *
 * Every rank makes every rank's input from the seed, so each computes the
 * reference itself: a left fold in relative rank order, written here with
 * GMP and doubles, independently of the library's ops.  The inputs keep
 * the fold's result independent of grouping (sums of nonnegative INT32,
 * products of factors of magnitude >= 1, dyadic doubles that add and
 * multiply exactly), so it must equal the tree's exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oxr/bcast.h"
#include "oxr/oxr.h"
#include "oxr/transport.h"
#include "cmo_random.h"
#include "test_util.h"

static int rank = -1, n;
static uint64_t seed;

#include "child_check.h"

#define TMO 120000

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t s = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^
		     (c * 0x94d049bb133111ebull) ^ (d * 0x2545f4914f6cdd1dull);
	int i;

	s |= 1;
	for (i = 0; i < 4; i++)
		rnd_next(&s);
	return s;
}

/* ---- expected message counts of the binomial tree ------------------ */

static int ceil_log2(int x)
{
	int k = 0;

	while ((1 << k) < x)
		k++;
	return k;
}

/* Children of relative rank r: r + m for the powers of two m below
 * lowbit(r) (below n for the root) with r + m < n. */
static int children(int r)
{
	int lim = r ? (r & -r) : n, m, c = 0;

	for (m = 1; m < lim && m < n; m <<= 1)
		if (r + m < n)
			c++;
	return c;
}

static void check_counts(const char *what, int root, uint64_t want_sent, uint64_t want_recv)
{
	oxr_bcast_counts c;

	oxr_bcast_last_counts(&c);
	CHECK(c.sent == want_sent && c.received == want_recv,
	      "%s root %d: sent %llu received %llu, want %llu and %llu", what, root,
	      (unsigned long long)c.sent, (unsigned long long)c.received,
	      (unsigned long long)want_sent, (unsigned long long)want_recv);
	CHECK(n == 1 || c.algo == OXR_COLL_BINOMIAL, "%s: algo %d", what, c.algo);
}

static void check_tree_bcast(int root)
{
	int r = (rank - root + n) % n;

	check_counts("bcast", root, (uint64_t)children(r), r ? 1 : 0);
	CHECK(children(r) <= ceil_log2(n) && (r || children(r) == ceil_log2(n)), "tree shape");
}

static void check_tree_reduce(int root)
{
	int r = (rank - root + n) % n;

	check_counts("reduce", root, r ? 1 : 0, (uint64_t)children(r));
}

/* ---- inputs ---------------------------------------------------------- */

enum { T_INT32, T_ZZ, T_QQ, T_DBL, T_MIXED, NTYPES };
static const char *const type_names[NTYPES] = { "int32", "zz", "qq", "double", "mixed" };
static const char *const ops[4] = { "+", "*", "max", "min" };

static oxr_cmo *zz_si(oxr_arena *a, long v) { return oxr_cmo_new_zz_si(a, v); }

static oxr_cmo *dyadic_q(oxr_arena *a, long num, unsigned k)
{
	mpq_t q;
	oxr_cmo *o;

	mpq_init(q);
	mpq_set_si(q, num, 1ul << k);
	mpq_canonicalize(q);
	o = oxr_cmo_new_qq(a, q);
	mpq_clear(q);
	return o;
}

static int32_t dtag(uint64_t *s)
{
	return rnd_below(s, 2) ? OXR_CMO_IEEE_DOUBLE_FLOAT : OXR_CMO_64BIT_MACHINE_DOUBLE;
}

static long sgn(uint64_t *s) { return rnd_below(s, 2) ? 1 : -1; }

/* The input of rank `who` for (op, type, root). */
static oxr_cmo *input(oxr_arena *a, int op, int type, int who, int root)
{
	uint64_t s = mix((uint64_t)op + 1, (uint64_t)type + 1, (uint64_t)who + 1, (uint64_t)root);
	static const double factors[] = { 0.5, 1, 1.5, 2, 3 };
	int t = type == T_MIXED ? (int)rnd_below(&s, 5) : type; /* 4: CMO_NULL */
	int mul = op == 1;

	if (t == 4)
		return mul ? oxr_cmo_new_int32(a, 1) : oxr_cmo_null();
	if (type == T_MIXED) { /* small and exact in doubles, whatever the mix */
		if (mul) {
			long v = sgn(&s) * (long)(rnd_below(&s, 3) + 1);
			switch (t) {
			case T_INT32: return oxr_cmo_new_int32(a, (int32_t)v);
			case T_ZZ: return zz_si(a, v);
			case T_QQ: return dyadic_q(a, v | 1, rnd_below(&s, 2));
			default: return oxr_cmo_new_double(a, dtag(&s), (double)sgn(&s) *
							   factors[rnd_below(&s, 5)]);
			}
		}
		switch (t) {
		case T_INT32:
			return oxr_cmo_new_int32(a, (int32_t)(rnd_below(&s, 2) ? rnd_below(&s, 1000) :
						  (1u << 30) + rnd_below(&s, 1u << 30)));
		case T_ZZ: return zz_si(a, (long)(rnd_next(&s) >> 28) * (op == 0 ? 1 : sgn(&s)));
		case T_QQ: return dyadic_q(a, (long)rnd_below(&s, 1u << 30) * sgn(&s),
					   rnd_below(&s, 11));
		default: return oxr_cmo_new_double(a, dtag(&s), (double)((long)rnd_below(&s, 1u << 20) *
									  sgn(&s)) / 8);
		}
	}
	switch (t) {
	case T_INT32:
		if (op == 0) /* nonnegative: overflows iff the total does */
			return oxr_cmo_new_int32(a, (int32_t)(rnd_below(&s, 2) ? rnd_below(&s, 1000) :
						  (1u << 29) + rnd_below(&s, 1u << 30)));
		if (mul) /* |v| >= 1: likewise */
			return oxr_cmo_new_int32(a, (int32_t)(sgn(&s) * (long)(rnd_below(&s, 40) + 1)));
		return oxr_cmo_new_int32(a, (int32_t)rnd_next(&s));
	case T_ZZ: {
		mpz_t z;
		oxr_cmo *o;
		mpz_init_set_ui(z, (unsigned long)rnd_next(&s));
		mpz_mul_2exp(z, z, rnd_below(&s, 40));
		mpz_add_ui(z, z, (unsigned long)rnd_next(&s));
		if (rnd_below(&s, 2))
			mpz_neg(z, z);
		o = oxr_cmo_new_zz(a, z);
		mpz_clear(z);
		return o;
	}
	case T_QQ: {
		mpq_t q;
		oxr_cmo *o;
		mpq_init(q);
		mpq_set_si(q, (long)(rnd_next(&s) >> 2) * sgn(&s), (unsigned long)rnd_below(&s, 1u << 30) + 1);
		mpq_canonicalize(q);
		o = oxr_cmo_new_qq(a, q);
		mpq_clear(q);
		return o;
	}
	default:
		if (mul)
			return oxr_cmo_new_double(a, dtag(&s), (double)sgn(&s) * factors[rnd_below(&s, 5)]);
		return oxr_cmo_new_double(a, dtag(&s), (double)((long)rnd_below(&s, 1u << 20) * sgn(&s)) / 8);
	}
}

/* ---- the reference: a left fold in relative rank order -------------- */

static int kind(const oxr_cmo *o)
{
	switch (o->tag) {
	case OXR_CMO_INT32: case OXR_CMO_NULL: case OXR_CMO_ZERO: return T_INT32;
	case OXR_CMO_ZZ: return T_ZZ;
	case OXR_CMO_QQ: return T_QQ;
	default: return T_DBL;
	}
}

static void to_q(const oxr_cmo *o, mpq_t q)
{
	if (o->tag == OXR_CMO_NULL)
		mpq_set_ui(q, 0, 1);
	else if (kind(o) == T_DBL)
		mpq_set_d(q, o->v.f64);
	else
		CHECK(oxr_cmo_get_mpq(o, q) == OXR_OK, "get_mpq");
}

static oxr_cmo *reference(oxr_arena *a, int op, int type, int root)
{
	int i, k = T_INT32, machine = 1;
	mpq_t acc, x;
	oxr_cmo *res;

	if (n == 1) /* nothing to combine: the input itself */
		return input(a, op, type, root, root);
	mpq_inits(acc, x, NULL);
	for (i = 0; i < n; i++) {
		oxr_cmo *in = input(a, op, type, (root + i) % n, root);
		if (kind(in) > k)
			k = kind(in);
		if (kind(in) == T_DBL && in->tag != OXR_CMO_64BIT_MACHINE_DOUBLE)
			machine = 0;
		to_q(in, x);
		if (i == 0)
			mpq_set(acc, x);
		else if (op == 0)
			mpq_add(acc, acc, x);
		else if (op == 1)
			mpq_mul(acc, acc, x);
		else if ((op == 2) == (mpq_cmp(x, acc) > 0))
			mpq_set(acc, x);
	}
	if (k == T_DBL) {
		res = oxr_cmo_new_double(a, machine ? OXR_CMO_64BIT_MACHINE_DOUBLE :
					 OXR_CMO_IEEE_DOUBLE_FLOAT, mpq_get_d(acc));
		mpq_set_d(x, mpq_get_d(acc));
		CHECK(mpq_equal(x, acc), "the test's doubles were meant to be exact");
	} else if (k == T_QQ) {
		res = oxr_cmo_new_qq(a, acc);
	} else {
		CHECK(mpz_cmp_ui(mpq_denref(acc), 1) == 0, "integer");
		if (k == T_INT32 && mpz_fits_sint_p(mpq_numref(acc)))
			res = oxr_cmo_new_int32(a, (int32_t)mpz_get_si(mpq_numref(acc)));
		else
			res = oxr_cmo_new_zz(a, mpq_numref(acc));
	}
	mpq_clears(acc, x, NULL);
	return res;
}

/* ---- the checks ------------------------------------------------------ */

static oxr_cmo *bcast_object(oxr_arena *a, int root, int k, int big)
{
	uint64_t s = mix(1000 + (uint64_t)k, (uint64_t)big, 7, (uint64_t)root);
	oxr_cmo *l;
	int i;

	if (!big)
		return k == 0 ? oxr_cmo_new_int32(a, root) : rnd_cmo(a, &s, 4);
	l = oxr_cmo_new_list(a, 12);
	for (i = 0; i < 12; i++)
		l->kids[i] = rnd_cmo(a, &s, 3);
	return l;
}

static void bcasts(oxr_group *g, oxr_arena *a, int root, int big)
{
	int k;

	for (k = 0; k < 3; k++) {
		oxr_cmo *want = bcast_object(a, root, k, big), *got = rank == root ? want : NULL;
		oxr_bcast_counts c;
		CHECK(oxr_bcast(g, root, &got, a, TMO) == OXR_OK, "bcast %d from %d", k, root);
		CHECK(oxr_cmo_equal(got, want), "bcast %d from root %d differs", k, root);
		oxr_bcast_last_counts(&c);
		if (!big) {
			check_tree_bcast(root);
		} else if (n > 1) {
			/* marker down the tree, then header and chunks down the chain */
			int r = (rank - root + n) % n;
			size_t sz, chunks;
			CHECK(oxr_cmo_size(want, &sz) == OXR_OK, "size");
			chunks = (sz + 1023) / 1024;
			CHECK(c.algo == OXR_COLL_CHAIN, "algo %d", c.algo);
			CHECK(c.sent == (uint64_t)children(r) + (r + 1 < n ? 1 + chunks : 0) &&
			      c.received == (r ? 2 + chunks : 0),
			      "chain root %d: sent %llu received %llu (%zu chunks)", root,
			      (unsigned long long)c.sent, (unsigned long long)c.received, chunks);
		}
		oxr_arena_reset(a);
	}
}

static void reduces(oxr_group *g, oxr_arena *a, int root)
{
	int op, type;

	for (op = 0; op < 4; op++)
		for (type = 0; type < NTYPES; type++) {
			oxr_cmo *in = input(a, op, type, rank, root), *out = NULL;
			oxr_status_t st = oxr_reduce(g, root, ops[op], in, &out, a, TMO);
			CHECK(st == OXR_OK, "reduce %s %s root %d: %d", ops[op], type_names[type],
			      root, st);
			check_tree_reduce(root);
			if (rank == root) {
				oxr_cmo *want = reference(a, op, type, root);
				CHECK(oxr_cmo_equal(out, want), "reduce %s of %s to root %d: got tag %d, "
				      "want tag %d", ops[op], type_names[type], root, out->tag, want->tag);
			} else {
				CHECK(out && out->tag == OXR_CMO_NULL, "non-root result");
			}
			oxr_arena_reset(a);
		}
}

static oxr_cmo *append_input(oxr_arena *a, int who, int root)
{
	uint64_t s = mix(77, (uint64_t)who, 5, (uint64_t)root);
	uint32_t k = rnd_below(&s, 4), i;
	oxr_cmo *l = oxr_cmo_new_list(a, k);

	for (i = 0; i < k; i++)
		l->kids[i] = rnd_cmo(a, &s, 2);
	return l;
}

static void appends(oxr_group *g, oxr_arena *a, int root)
{
	oxr_cmo *out = NULL, *want;
	uint32_t total = 0, j;
	int i;

	CHECK(oxr_reduce(g, root, "append", append_input(a, rank, root), &out, a, TMO) == OXR_OK,
	      "append root %d", root);
	check_tree_reduce(root);
	if (rank == root) {
		for (i = 0; i < n; i++)
			total += append_input(a, (root + i) % n, root)->nkids;
		want = oxr_cmo_new_list(a, total);
		total = 0;
		for (i = 0; i < n; i++) {
			oxr_cmo *l = append_input(a, (root + i) % n, root);
			for (j = 0; j < l->nkids; j++)
				want->kids[total++] = l->kids[j];
		}
		CHECK(oxr_cmo_equal(out, want), "append to root %d differs", root);
	} else {
		CHECK(out->tag == OXR_CMO_NULL, "non-root");
	}
	oxr_arena_reset(a);
}

/* A user op that does not commute: string concatenation. */
static oxr_status_t concat(const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a, oxr_cmo **out,
			   void *arg)
{
	char *b;

	++*(int *)arg;
	if (x->tag != OXR_CMO_STRING || y->tag != OXR_CMO_STRING)
		return OXR_ERR_INVAL;
	b = oxr_arena_alloc(a, x->len + y->len + 1);
	if (!b)
		return OXR_ERR_NOMEM;
	memcpy(b, x->data, x->len);
	memcpy(b + x->len, y->data, y->len);
	*out = oxr_cmo_new_bytes(a, OXR_CMO_STRING, b, x->len + y->len);
	return *out ? OXR_OK : OXR_ERR_NOMEM;
}

static void user_op(oxr_group *g, oxr_arena *a, int root)
{
	char mine[32], *want;
	oxr_cmo *out = NULL;
	int calls = 0, i;

	snprintf(mine, sizeof(mine), "<%d>", rank);
	CHECK(oxr_reduce_user(g, root, concat, &calls, oxr_cmo_new_string(a, mine), &out, a, TMO) ==
	      OXR_OK, "user op root %d", root);
	check_tree_reduce(root);
	CHECK(calls == children((rank - root + n) % n), "user op called %d times", calls);
	if (rank == root) {
		want = calloc((size_t)n, 8);
		for (i = 0; i < n; i++)
			sprintf(want + strlen(want), "<%d>", (root + i) % n);
		CHECK(out->tag == OXR_CMO_STRING && out->len == strlen(want) &&
		      !memcmp(out->data, want, out->len), "user op: got %.*s want %s", (int)out->len,
		      (const char *)out->data, want);
		free(want);
	}
	oxr_arena_reset(a);
}

static void failures(oxr_group *g, oxr_arena *a, int root)
{
	oxr_cmo *in = oxr_cmo_new_int32(a, 1), *out = NULL;
	oxr_bcast_counts c;
	oxr_status_t st;
	int bad = (root + n - 1) % n; /* the last relative rank: a leaf far from the root */

	/* an unknown op: an error on every rank, nothing sent */
	st = oxr_reduce(g, root, "frobnicate", in, &out, a, TMO);
	oxr_bcast_last_counts(&c);
	CHECK(st == OXR_ERR_INVAL && strstr(oxr_errmsg(), "frobnicate"), "unknown op: %d", st);
	CHECK(c.sent == 0 && c.received == 0, "unknown op sent something");
	/* a failing op: "+" on a string at one rank */
	if (rank == bad && n > 1)
		in = oxr_cmo_new_string(a, "not a number");
	st = oxr_reduce(g, root, "+", in, &out, a, TMO);
	if (rank == root && n > 1) {
		CHECK(st == OXR_ERR_INVAL && strstr(oxr_errmsg(), "CMO_STRING is not a number"),
		      "type error on the root: %d", st);
	}
	if (n > 1 && rank != root && st != OXR_OK)
		CHECK(strstr(oxr_errmsg(), "CMO_STRING"), "relayed error: %s", oxr_errmsg());
	oxr_arena_reset(a);
}

static int all(oxr_group *g, int every)
{
	oxr_ctx_params was, chain;
	oxr_arena *a;
	const char *tr = n > 1 ? NULL : "no link";
	int root, count = 0;

	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	for (root = 0; root < n; root++) {
		if (root % every && root != n - 1)
			continue;
		bcasts(g, a, root, 0);
		reduces(g, a, root);
		appends(g, a, root);
		user_op(g, a, root);
		failures(g, a, root);
		count++;
		if (!tr)
			tr = child_transport(g);
	}
	/* the group still works after the failures: and now down the chain */
	was = *oxr_ctx_get_params(oxr_group_ctx(g));
	was.field_mask = OXR_CTX_PARAM_BCAST_PIPELINE_BYTES | OXR_CTX_PARAM_BCAST_CHUNK_BYTES;
	chain = was;
	chain.bcast_pipeline_bytes = 1;
	chain.bcast_chunk_bytes = 1024;
	CHECK(oxr_ctx_modify(oxr_group_ctx(g), &chain) == OXR_OK, "modify");
	for (root = 0; root < n; root++)
		if (root % every == 0 || root == n - 1)
			bcasts(g, a, root, 1);
	CHECK(oxr_ctx_modify(oxr_group_ctx(g), &was) == OXR_OK, "modify back");
	bcasts(g, a, 0, 0);
	oxr_arena_destroy(a);
	printf("rank %d: all ok (%d of %d roots, over %s)\n", rank, count, n, tr ? tr : "?");
	return 0;
}

/* ---- the big one ----------------------------------------------------- */

/* The payload, 8 bytes at a time, hashed as it is made. */
static uint64_t make(uint8_t *dst, size_t len)
{
	uint64_t s = mix(99, len, 3, 1), h = FNV1A64_INIT, w;
	uint8_t b[8];
	size_t i;

	for (i = 0; i < len; i += 8) {
		size_t k = len - i < 8 ? len - i : 8;
		w = rnd_next(&s);
		memcpy(b, &w, 8);
		if (dst)
			memcpy(dst + i, b, k);
		h = fnv1a64(h, b, k);
	}
	return h;
}

static int big(oxr_group *g, size_t len)
{
	int root = n - 1;
	uint64_t want = make(NULL, len);
	oxr_cmo *o = NULL;
	oxr_arena *a;
	oxr_bcast_counts c;
	double t;

	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	if (rank == root) {
		uint8_t *b = malloc(len);
		CHECK(b, "malloc");
		make(b, len);
		o = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, b, len);
		free(b);
		CHECK(o, "datum");
	}
	t = (double)now_us();
	CHECK(oxr_bcast(g, root, &o, a, TMO) == OXR_OK, "big bcast");
	t = ((double)now_us() - t) / 1e6;
	oxr_bcast_last_counts(&c);
	CHECK(o->tag == OXR_CMO_DATUM && o->len == len, "got %zu bytes", o->len);
	CHECK(fnv1a64(FNV1A64_INIT, o->data, o->len) == want, "the hash differs");
	CHECK(n == 1 || c.algo == OXR_COLL_CHAIN, "algo %d", c.algo);
	CHECK(c.sent <= 1 + 8 + len / 1024 && c.received <= 2 + len / 1024 + 1, "counts");
	oxr_arena_destroy(a);
	printf("rank %d: big ok (%zu bytes, hash %016llx, %.1f ms, algo %d, sent %llu received %llu)\n",
	       rank, len, (unsigned long long)want, t * 1e3, c.algo, (unsigned long long)c.sent,
	       (unsigned long long)c.received);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	struct child_rank me;
	oxr_group *g;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	seed = rnd_seed();
	child_join(&me);
	g = me.g;
	n = oxr_group_size(g);
	if (!strcmp(mode, "all"))
		rc = all(g, argc > 2 ? atoi(argv[2]) : 1);
	else if (!strcmp(mode, "big"))
		rc = big(g, argc > 2 ? strtoull(argv[2], NULL, 0) : 64u << 20);
	else
		CHECK(0, "unknown mode %s", mode);
	CHECK(oxr_boot_barrier(me.boot) == OXR_OK, "final barrier");
	child_leave(&me);
	return rc;
}
