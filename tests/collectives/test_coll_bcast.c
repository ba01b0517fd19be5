/* SPDX-License-Identifier: MIT */
/*
 * RFC-102 bcast and reduce (include/oxr/bcast.h).  In-process: the ops and
 * their promotion rules, argument errors.  Real groups under oxr-run
 * (tests/collectives/bcast_child.c): n = 1..17 and 32, every root, bcast and reduce
 * against a reference every rank computes itself, every op and number
 * kind, append, a user op, an unknown op and a failing op followed by more
 * collectives, message counts of the binomial tree and of the chain, links
 * of both byte orders in one group, and a 64 MiB bcast checked by hash: the
 * groups once per provider (tcp, and verbs where there is an RDMA device;
 * OXR_TEST_PROVIDERS picks: common/providers.h), every link on it.  With
 * OXR_TEST_QUICK (ci/rxe-guest, a slow emulated machine) the groups above 8
 * ranks take every 4th root (and always the last) instead of every one, and
 * the big bcast is 16 MiB.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/bcast.h"
#include "providers.h"
#include "run_child.h"

#define RUN OXR_BIN_DIR "/oxr-run"
#define CHILD OXR_BIN_DIR "/bcast_child"

TestSuite(bcast, .timeout = 600);
TestSuite(bcast_per_provider, .timeout = 600);

/* Fewer roots and a smaller big bcast inside the (slow, emulated) rxe guest. */
static int quick(void)
{
	const char *e = getenv("OXR_TEST_QUICK");

	return e && *e && strcmp(e, "0");
}

static void run_group(const struct provider *pv, int n, const char *mode, const char *arg,
		      const char *want)
{
	char what[96];
	const char *child[] = { CHILD, mode, arg, NULL };
	const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
	struct run r = run_ranks(n, 400, child, env, 450);

	snprintf(what, sizeof(what), "%s %s", mode, arg);
	expect_ranks_ok(&r, n, mode, what);
	if (want)
		cr_assert(strstr(r.out, want), "'%s' in:\n%s", want, r.out);
	run_free(&r);
}

static void all_roots(const struct provider *pv, int n)
{
	char every[16], over[48];

	snprintf(every, sizeof(every), "%d", quick() && n > 8 ? 4 : 1);
	/* the links are this instance's provider, link by link */
	snprintf(over, sizeof(over), "over %s)", pv->name);
	run_group(pv, n, "all", every, n > 1 ? over : NULL);
}

PROVIDER_TEST(bcast, every_root_1_to_6_ranks)
{
	int n;

	for (n = 1; n <= 6; n++)
		all_roots(pv, n);
}

PROVIDER_TEST(bcast, every_root_7_to_12_ranks)
{
	int n;

	for (n = 7; n <= 12; n++)
		all_roots(pv, n);
}

PROVIDER_TEST(bcast, every_root_13_to_17_ranks)
{
	int n;

	for (n = 13; n <= 17; n++)
		all_roots(pv, n);
}

PROVIDER_TEST(bcast, every_root_32_ranks)
{
	all_roots(pv, 32);
}

PROVIDER_TEST(bcast, links_in_both_byte_orders_in_one_group)
{
	/* odd ranks ask for network order: every link to them settles on it,
	 * the others stay little-endian, and objects cross both kinds */
	const char *argv[] = { RUN, "-n", "5", "--", "/bin/sh", "-c",
			       "case $OXR_RUN_RANK in 1|3) export OXR_ORDER=network;; "
			       "*) export OXR_ORDER=little;; esac; exec " CHILD " all 1", NULL };
	const char *env[] = { provider_env(pv), NULL };
	struct run r = spawn_run(argv, env, NULL, 300);
	char over[48];
	int i;

	cr_assert_eq(r.rc, 0, "exit %d\n%s\n%s", r.rc, r.out, r.err);
	for (i = 0; i < 5; i++) {
		char line[32];
		snprintf(line, sizeof(line), "rank %d: all ok", i);
		cr_assert(strstr(r.out, line), "'%s' in:\n%s", line, r.out);
	}
	snprintf(over, sizeof(over), "over %s)", pv->name);
	cr_assert_eq(count_of(r.out, over), 5, "'%s' 5 times in:\n%s", over, r.out);
	run_free(&r);
}

/* 64 MiB; 16 MiB in the guest, where TCG moves ~30 MB/s */
static const char *big_size(void) { return quick() ? "16777216" : "67108864"; }

PROVIDER_TEST(bcast, a_64_MiB_bcast_down_the_chain_checked_by_hash)
{
	/* algo 2: the chain, at n = 4 from root 3 */
	run_group(pv, 4, "big", big_size(), "algo 2");
}

PROVIDER_TEST(bcast, a_64_MiB_bcast_between_2_ranks_in_chunks)
{
	run_group(pv, 2, "big", big_size(), "algo 2");
}

/* ---- the ops, in-process ------------------------------------------- */

static oxr_arena *A;
static void setup(void) { cr_assert_eq(oxr_arena_create(&A), OXR_OK); }
static void teardown(void) { oxr_arena_destroy(A); }

static oxr_cmo *apply(const char *op, const oxr_cmo *x, const oxr_cmo *y)
{
	oxr_cmo *out = NULL;

	cr_assert_eq(oxr_reduce_apply(op, x, y, A, &out), OXR_OK, "%s: %s", op, oxr_errmsg());
	return out;
}

static oxr_cmo *i32(int32_t v) { return oxr_cmo_new_int32(A, v); }
static oxr_cmo *zz(long v) { return oxr_cmo_new_zz_si(A, v); }
static oxr_cmo *dbl(int32_t tag, double v) { return oxr_cmo_new_double(A, tag, v); }

static oxr_cmo *qq(long p, unsigned long q)
{
	mpq_t x;
	oxr_cmo *o;

	mpq_init(x);
	mpq_set_si(x, p, q);
	mpq_canonicalize(x);
	o = oxr_cmo_new_qq(A, x);
	mpq_clear(x);
	return o;
}

#define IEEE OXR_CMO_IEEE_DOUBLE_FLOAT
#define MACH OXR_CMO_64BIT_MACHINE_DOUBLE

Test(bcast, int32_stays_int32_until_it_overflows, .init = setup, .fini = teardown)
{
	mpz_t z;

	cr_assert(oxr_cmo_equal(apply("+", i32(2), i32(3)), i32(5)));
	cr_assert(oxr_cmo_equal(apply("*", i32(-7), i32(6)), i32(-42)));
	cr_assert(oxr_cmo_equal(apply("max", i32(-7), i32(6)), i32(6)));
	cr_assert(oxr_cmo_equal(apply("min", i32(-7), i32(6)), i32(-7)));
	cr_assert(oxr_cmo_equal(apply("+", i32(INT32_MAX), i32(1)), zz(2147483648L)));
	cr_assert(oxr_cmo_equal(apply("+", i32(INT32_MIN), i32(-1)), zz(-2147483649L)));
	mpz_init_set_si(z, 65536L * 65536L);
	mpz_mul(z, z, z);
	cr_assert(oxr_cmo_equal(apply("*", i32(65536), i32(65536)), zz(4294967296L)));
	cr_assert(oxr_cmo_equal(apply("*", zz(4294967296L), zz(4294967296L)),
				oxr_cmo_new_zz(A, z)));
	mpz_clear(z);
	/* NULL and ZERO are 0, as asir reads them */
	cr_assert(oxr_cmo_equal(apply("+", oxr_cmo_null(), i32(4)), i32(4)));
	cr_assert(oxr_cmo_equal(apply("*", oxr_cmo_zero(), zz(4)), zz(0)));
}

Test(bcast, the_larger_kind_wins, .init = setup, .fini = teardown)
{
	cr_assert(oxr_cmo_equal(apply("+", i32(2), zz(3)), zz(5)), "INT32 + ZZ is ZZ");
	cr_assert(oxr_cmo_equal(apply("+", zz(2), qq(1, 3)), qq(7, 3)), "ZZ + QQ is QQ");
	cr_assert(oxr_cmo_equal(apply("*", qq(2, 3), qq(3, 2)), qq(1, 1)), "QQ stays QQ at 1");
	cr_assert(oxr_cmo_equal(apply("max", i32(3), qq(5, 2)), qq(3, 1)), "max promotes too");
	cr_assert(oxr_cmo_equal(apply("min", qq(-1, 2), zz(-1)), qq(-1, 1)));
	cr_assert(oxr_cmo_equal(apply("+", qq(1, 4), dbl(IEEE, 0.5)), dbl(IEEE, 0.75)));
	cr_assert(oxr_cmo_equal(apply("+", i32(1), dbl(MACH, 0.5)), dbl(MACH, 1.5)));
	cr_assert(oxr_cmo_equal(apply("*", dbl(MACH, 2), dbl(MACH, 0.5)), dbl(MACH, 1)));
	cr_assert(oxr_cmo_equal(apply("*", dbl(MACH, 2), dbl(IEEE, 0.5)), dbl(IEEE, 1)),
		  "mixed double tags give IEEE");
	cr_assert(oxr_cmo_equal(apply("max", dbl(IEEE, NAN), dbl(IEEE, 2)), dbl(IEEE, 2)),
		  "fmax: a NaN loses");
}

Test(bcast, append_keeps_the_order, .init = setup, .fini = teardown)
{
	oxr_cmo *x = oxr_cmo_new_list(A, 2), *y = oxr_cmo_new_list(A, 1), *e = oxr_cmo_new_list(A, 0);
	oxr_cmo *want = oxr_cmo_new_list(A, 3), *out;

	x->kids[0] = want->kids[0] = i32(1);
	x->kids[1] = want->kids[1] = oxr_cmo_new_string(A, "b");
	y->kids[0] = want->kids[2] = zz(3);
	cr_assert(oxr_cmo_equal(apply("append", x, y), want));
	cr_assert(oxr_cmo_equal(apply("append", e, e), e));
	cr_assert_eq(oxr_reduce_apply("append", x, i32(1), A, &out), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "CMO_INT32 is not a CMO_LIST"), "%s", oxr_errmsg());
}

Test(bcast, bad_ops_and_operands_are_errors, .init = setup, .fini = teardown)
{
	oxr_cmo *out;

	cr_assert_eq(oxr_reduce_apply("frobnicate", i32(1), i32(2), A, &out), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "unknown op \"frobnicate\""), "%s", oxr_errmsg());
	cr_assert_eq(oxr_reduce_apply("+", oxr_cmo_new_string(A, "x"), i32(2), A, &out),
		     OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "CMO_STRING is not a number"), "%s", oxr_errmsg());
	cr_assert(oxr_reduce_op_known("+") && oxr_reduce_op_known("append"));
	cr_assert(!oxr_reduce_op_known("sum") && !oxr_reduce_op_known(NULL));
}

Test(bcast, a_group_of_one_needs_no_messages, .init = setup, .fini = teardown)
{
	oxr_ctx *c;
	oxr_group *g;
	oxr_cmo *o = i32(7), *out = NULL;
	oxr_bcast_counts k;

	cr_assert_eq(oxr_ctx_create(&c), OXR_OK);
	cr_assert_eq(oxr_group_create(c, 1, 0, &g), OXR_OK);
	cr_assert_eq(oxr_bcast(g, 0, &o, A, 1000), OXR_OK);
	cr_assert(oxr_cmo_equal(o, i32(7)));
	cr_assert_eq(oxr_reduce(g, 0, "+", o, &out, A, 1000), OXR_OK);
	cr_assert(oxr_cmo_equal(out, i32(7)));
	oxr_bcast_last_counts(&k);
	cr_assert(k.sent == 0 && k.received == 0 && k.algo == OXR_COLL_NONE);
	cr_assert_eq(oxr_bcast(g, 1, &o, A, 1000), OXR_ERR_INVAL, "root out of range");
	cr_assert(strstr(oxr_errmsg(), "root 1"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_reduce(g, 0, "nope", o, &out, A, 1000), OXR_ERR_INVAL);
	cr_assert_eq(oxr_reduce_user(g, 0, NULL, NULL, o, &out, A, 1000), OXR_ERR_INVAL);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
	/* read once, by the context */
	setenv("OXR_BCAST_CHUNK_BYTES", "12x", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_BCAST_CHUNK_BYTES=12x"), "%s", oxr_errmsg());
	unsetenv("OXR_BCAST_CHUNK_BYTES");
}
