/* SPDX-License-Identifier: MIT */
/*
 * Reduction of big integers, checked exactly against GMP, so that the fast
 * path of the built-in ops on CMO_ZZ (limbs read in place, "+" written
 * straight into the result: collectives/reduce_ops.c) cannot silently be
 * wrong.  In-process: oxr_reduce_apply on operands of every size around the
 * limb and word boundaries up to 10^5 digits, both signs, both byte
 * orders, aligned and not, with zero top words, mixed with INT32 / NULL /
 * ZERO, and the carries and cancellations that change the length.  Then
 * groups of 2 to 4 oxr-servers, plain OpenXM links and oxr links: "+" of
 * 10^5-digit integers of both signs to every root (and "*", max, min of
 * smaller ones), each result against GMP's.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/bcast.h"
#include "oxr/master.h"
#include "server_harness.h"

#define DIGITS_1E5_BITS 332193 /* 10^5 decimal digits */

static gmp_randstate_t R;
static void rand_setup(void)
{
	gmp_randinit_default(R);
	gmp_randseed_ui(R, 102);
	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
}
static void rand_teardown(void)
{
	gmp_randclear(R);
	oxr_arena_destroy(A);
}

/* z as a CMO_ZZ in a byte order, its words 4 bytes past a limb boundary or
 * not, with pad zero top words (a form the decoder never makes, but a
 * builder may). */
static oxr_cmo *zz_as(mpz_srcptr z, int order, int misalign, int pad)
{
	size_t nw = mpz_sgn(z) ? (mpz_sizeinbase(z, 2) + 31) / 32 : 0, all = nw + (size_t)pad;
	uint8_t *buf = oxr_arena_alloc(A, all * 4 + 8);
	oxr_cmo *o = oxr_arena_alloc(A, sizeof(*o));

	cr_assert(buf && o);
	buf += misalign ? 4 : 0;
	memset(buf, 0, all * 4);
	mpz_export(buf, NULL, -1, 4, order == OXR_ORDER_LITTLE ? -1 : 1, 0, z);
	memset(o, 0, sizeof(*o));
	o->tag = OXR_CMO_ZZ;
	o->order = (uint8_t)order;
	o->data = all ? buf : NULL;
	o->len = all * 4;
	o->v.i32 = mpz_sgn(z) < 0 ? -(int32_t)all : (int32_t)all;
	return o;
}

/* A canonical CMO_ZZ (no zero top word, count and length agreeing) equal
 * to want. */
static void is_zz(const oxr_cmo *got, mpz_srcptr want, const char *what)
{
	mpz_t z;
	size_t nw;

	cr_assert_eq(got->tag, OXR_CMO_ZZ, "%s: tag %d", what, got->tag);
	nw = got->len / 4;
	cr_assert_eq(got->len % 4, 0, "%s", what);
	cr_assert_eq((size_t)(got->v.i32 < 0 ? -(int64_t)got->v.i32 : got->v.i32), nw,
		     "%s: count %d, %zu words", what, got->v.i32, nw);
	cr_assert(nw == 0 || oxr_cmo_word(got, nw - 1) != 0, "%s: a zero top word", what);
	mpz_init(z);
	cr_assert_eq(oxr_cmo_get_mpz(got, z), OXR_OK);
	cr_assert(mpz_cmp(z, want) == 0, "%s: wrong value (%zu bits against %zu)", what,
		  mpz_sizeinbase(z, 2), mpz_sizeinbase(want, 2));
	mpz_clear(z);
}

static void expect(const char *op, mpz_srcptr x, mpz_srcptr y, mpz_ptr r)
{
	if (!strcmp(op, "+"))
		mpz_add(r, x, y);
	else if (!strcmp(op, "*"))
		mpz_mul(r, x, y);
	else if (!strcmp(op, "max"))
		mpz_set(r, mpz_cmp(x, y) >= 0 ? x : y);
	else
		mpz_set(r, mpz_cmp(x, y) <= 0 ? x : y);
}

static void check_op(const char *op, mpz_srcptr x, const oxr_cmo *cx, mpz_srcptr y,
		     const oxr_cmo *cy, const char *what)
{
	oxr_cmo *got;
	mpz_t r;
	char msg[256];

	mpz_init(r);
	expect(op, x, y, r);
	snprintf(msg, sizeof(msg), "%s: x (%zu bits, sign %d) %s y (%zu bits, sign %d)", what,
		 mpz_sizeinbase(x, 2), mpz_sgn(x), op, mpz_sizeinbase(y, 2), mpz_sgn(y));
	cr_assert_eq(oxr_reduce_apply(op, cx, cy, A, &got), OXR_OK, "%s: %s", msg, oxr_errmsg());
	is_zz(got, r, msg);
	mpz_clear(r);
}

static void random_value(mpz_ptr z, unsigned long bits, int neg)
{
	/* long runs of ones and zeros half the time: carries through many limbs */
	if (gmp_urandomm_ui(R, 2))
		mpz_rrandomb(z, R, bits);
	else
		mpz_urandomb(z, R, bits);
	if (neg)
		mpz_neg(z, z);
}

Test(reduce_zz, every_size_sign_order_and_alignment, .init = rand_setup, .fini = rand_teardown)
{
	static const unsigned long bits[] = { 0,   1,   31,  32,   33,   63,   64,
					      65,  95,  96,  127,  128,  129,  191,
					      192, 193, 1000, 4096, 65537, DIGITS_1E5_BITS };
	static const char *const ops[] = { "+", "max", "min", "*" };
	size_t nb = sizeof(bits) / sizeof(bits[0]), i, j, k;
	mpz_t x, y;

	mpz_inits(x, y, NULL);
	for (i = 0; i < nb; i++)
		for (j = 0; j < nb; j++) {
			unsigned long f = gmp_urandomm_ui(R, 1u << 10);
			random_value(x, bits[i], f & 1);
			random_value(y, bits[j], f >> 1 & 1);
			oxr_cmo *cx = zz_as(x, f >> 2 & 1, f >> 3 & 1, (f >> 4 & 1) * 2);
			oxr_cmo *cy = zz_as(y, f >> 5 & 1, f >> 6 & 1, (f >> 7 & 1) * 3);
			for (k = 0; k < 4; k++) {
				if (k == 3 && bits[i] + bits[j] > 200000)
					continue; /* "*": the product of two 10^5-digit numbers is slow enough */
				check_op(ops[k], x, cx, y, cy, "random");
			}
			check_op("+", x, cx, x, cx, "x + x");
			mpz_neg(y, x);
			check_op("+", x, cx, y, zz_as(y, f >> 8 & 1, f >> 9 & 1, 0), "x + -x");
			oxr_arena_reset(A);
		}
	mpz_clears(x, y, NULL);
}

Test(reduce_zz, carries_and_cancellations_that_change_the_length, .init = rand_setup,
     .fini = rand_teardown)
{
	static const unsigned long at[] = { 32, 64, 96, 128, 160, 4064, 4096, 4128, DIGITS_1E5_BITS };
	size_t i;
	int order, mis;
	mpz_t p, x, y;

	mpz_inits(p, x, y, NULL);
	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		for (order = 0; order < 2; order++)
			for (mis = 0; mis < 2; mis++) {
				mpz_ui_pow_ui(p, 2, at[i]); /* 2^k */
				mpz_sub_ui(x, p, 1);        /* 2^k - 1: all ones */
				mpz_set_ui(y, 1);
				/* (2^k - 1) + 1 = 2^k: a carry through every word, one word more */
				check_op("+", x, zz_as(x, order, mis, 0), y, zz_as(y, !order, !mis, 0),
					 "carry");
				/* 2^k + -1 and -1 + 2^k: one word less */
				mpz_set_si(y, -1);
				check_op("+", p, zz_as(p, order, mis, 0), y, zz_as(y, order, mis, 0),
					 "borrow");
				check_op("+", y, zz_as(y, order, mis, 1), p, zz_as(p, order, !mis, 1),
					 "borrow");
				/* -(2^k) + (2^k - 1) = -1: the difference loses every word but one */
				mpz_neg(p, p);
				check_op("+", p, zz_as(p, order, mis, 0), x, zz_as(x, !order, mis, 0),
					 "cancel");
				/* -(2^k - 1) + -1 = -(2^k) */
				mpz_neg(x, x);
				check_op("+", x, zz_as(x, order, mis, 0), y, zz_as(y, order, mis, 0),
					 "negative carry");
				oxr_arena_reset(A);
			}
	mpz_clears(p, x, y, NULL);
}

Test(reduce_zz, big_integers_with_int32_null_and_zero, .init = rand_setup,
     .fini = rand_teardown)
{
	static const int32_t small[] = { 0, 1, -1, 7, INT32_MAX, INT32_MIN };
	static const char *const ops[] = { "+", "max", "min", "*" };
	size_t i, k;
	mpz_t x, s, r;
	oxr_cmo *cx, *got;

	mpz_inits(x, s, r, NULL);
	random_value(x, DIGITS_1E5_BITS, 1);
	cx = zz_as(x, OXR_ORDER_LITTLE, 1, 0);
	for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		for (k = 0; k < 4; k++) {
			mpz_set_si(s, small[i]);
			check_op(ops[k], x, cx, s, oxr_cmo_new_int32(A, small[i]), "int32");
			check_op(ops[k], s, oxr_cmo_new_int32(A, small[i]), x, cx, "int32");
		}
	mpz_set_ui(s, 0);
	for (k = 0; k < 4; k++) {
		check_op(ops[k], x, cx, s, oxr_cmo_null(), "null");
		check_op(ops[k], s, oxr_cmo_zero(), x, cx, "zero");
	}
	/* a ZZ 0 (no words) and 0 + 0 */
	check_op("+", s, zz_as(s, 0, 0, 0), s, zz_as(s, 1, 1, 2), "zeros");
	/* a whole reduction's worth: the partial fed back in */
	cr_assert_eq(oxr_reduce_apply("+", cx, cx, A, &got), OXR_OK);
	cr_assert_eq(oxr_reduce_apply("+", got, cx, A, &got), OXR_OK);
	mpz_mul_ui(r, x, 3);
	is_zz(got, r, "3x");
	mpz_clears(x, s, r, NULL);
}

/* ---- groups of oxr-servers ---- */

/* Pushes vals[i] to server i, reduces with op to root, checks the root's
 * result against want and every other server's 0. */
static void reduce_group(int n, int root, const char *op, mpz_t *vals, const char *what)
{
	mpz_t want;
	oxr_cmo *got;
	int i;
	char msg[160];

	mpz_init_set(want, vals[root]);
	for (i = 1; i < n; i++)
		expect(op, want, vals[(root + i) % n], want);
	for (i = 0; i < n; i++)
		cr_assert_eq(oxr_master_push(M, i, oxr_cmo_new_zz(A, vals[i])), OXR_OK);
	cr_assert_eq(oxr_master_reduce(M, root, op), OXR_OK, "%s", oxr_errmsg());
	snprintf(msg, sizeof(msg), "%s: %d servers, root %d, \"%s\"", what, n, root, op);
	for (i = 0; i < n; i++) {
		cr_assert_eq(oxr_master_result(M, i, TMO, A, &got), OXR_OK, "%s: server %d: %s", msg,
			     i, oxr_errmsg());
		if (i == root)
			is_zz(got, want, msg);
		else
			cr_assert_eq(got->tag, OXR_CMO_NULL, "%s: server %d's tag %d", msg, i, got->tag);
	}
	oxr_arena_reset(A);
	mpz_clear(want);
}

static void groups_of(int plain)
{
	static const char *const ops[] = { "*", "max", "min" };
	mpz_t v[4];
	int n, i, root, k;

	gmp_randinit_default(R);
	gmp_randseed_ui(R, 283 + (unsigned long)plain);
	for (i = 0; i < 4; i++)
		mpz_init(v[i]);
	for (n = 2; n <= 4; n++) {
		up(n);
		cr_assert_eq(oxr_master_group(M, plain, TMO), OXR_OK, "group: %s", oxr_errmsg());
		for (root = 0; root < n; root++) {
			for (i = 0; i < n; i++) /* 10^5 digits give or take, both signs */
				random_value(v[i], DIGITS_1E5_BITS - (unsigned long)gmp_urandomm_ui(R, 64),
					     (int)gmp_urandomm_ui(R, 2));
			reduce_group(n, root, "+", v, "random signs");
			for (i = 0; i < n; i++)
				mpz_abs(v[i], v[i]);
			reduce_group(n, root, "+", v, "positive");
			for (i = 0; i < n; i++)
				mpz_neg(v[i], v[i]);
			reduce_group(n, root, "+", v, "negative");
		}
		/* the sum cancels to 0, and to a number far shorter than the operands */
		for (i = 0; i < n; i++)
			random_value(v[i], DIGITS_1E5_BITS, i % 2);
		mpz_set_ui(v[n - 1], 0);
		for (i = 0; i < n - 1; i++)
			mpz_sub(v[n - 1], v[n - 1], v[i]);
		reduce_group(n, 0, "+", v, "cancelling");
		mpz_add_ui(v[n - 1], v[n - 1], 12345);
		reduce_group(n, n - 1, "+", v, "nearly cancelling");
		for (k = 0; k < 3; k++) {
			for (i = 0; i < n; i++)
				random_value(v[i], 10000, (int)gmp_urandomm_ui(R, 2));
			reduce_group(n, k % n, ops[k], v, "smaller");
		}
		down();
	}
	for (i = 0; i < 4; i++)
		mpz_clear(v[i]);
	gmp_randclear(R);
}

Test(reduce_zz, groups_of_2_to_4_oxr_servers_over_oxr_links, .timeout = 300)
{
	groups_of(0);
}

Test(reduce_zz, groups_of_2_to_4_oxr_servers_over_plain_links, .timeout = 300)
{
	groups_of(1);
}
