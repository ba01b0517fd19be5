/* SPDX-License-Identifier: MIT */
/* The bconv text notation: canonical round trips, golden bytes, every error. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/oxr.h"
#include "cmo_spec.h"
#include "test_util.h"
#include "golden_vectors.h"

static oxr_arena *A;

static void setup(void)
{
	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
}

static void teardown(void)
{
	oxr_arena_destroy(A);
}

TestSuite(text, .init = setup, .fini = teardown, .timeout = 60);

/* Parses s, which must hold exactly one item (white space may follow). */
static oxr_text_item parse_ok(const char *s)
{
	oxr_text_item it;
	size_t used = 0, n = strlen(s);
	oxr_status_t st = oxr_text_parse(s, n, A, &it, &used);

	cr_assert_eq(st, OXR_OK, "parse %.200s: %s", s, oxr_errmsg());
	cr_assert_leq(used, n);
	cr_assert_eq(strspn(s + used, " \t\r\n"), n - used, "%.200s: used %zu of %zu", s, used, n);
	return it;
}

static oxr_cmo *cmo_of(const char *s)
{
	oxr_text_item it = parse_ok(s);

	cr_assert_eq(it.is_frame, 0, "%s parsed as a frame", s);
	cr_assert_not_null(it.msg.cmo);
	return it.msg.cmo;
}

/* The canonical text of an item; freed by the caller. */
static char *text_of(const oxr_text_item *it)
{
	char *t = NULL;
	size_t len = 0;
	oxr_status_t st = it->is_frame ? oxr_text_print_msg(&it->msg, &t, &len)
				       : oxr_text_print_cmo(it->msg.cmo, &t, &len);

	cr_assert_eq(st, OXR_OK, "print: %s", oxr_errmsg());
	cr_assert_eq(strlen(t), len);
	return t;
}

static void assert_same_item(const oxr_text_item *x, const oxr_text_item *y, const char *what)
{
	cr_assert_eq(x->is_frame, y->is_frame, "%s", what);
	cr_assert_eq(x->msg.tag, y->msg.tag, "%s", what);
	cr_assert_eq(x->msg.sm, y->msg.sm, "%s", what);
	cr_assert_eq(x->msg.serial, 0, "%s", what);
	cr_assert(oxr_cmo_equal(x->msg.cmo, y->msg.cmo), "%s: objects differ", what);
}

/* Canonical texts: print(parse(t)) == t.  At least one per tag of cmo_spec.c. */
static const char *const canon[] = {
	"(CMO_NULL)",
	"(CMO_INT32,0)",
	"(CMO_INT32,-2147483648)",
	"(CMO_INT32,2147483647)",
	"(CMO_DATUM,\"\\x00\\x01\\xff\\\"\\\\ab\\x7f \")",
	"(CMO_DATUM,\"\")",
	"(CMO_STRING,\"Hello\")",
	"(CMO_STRING,\"\")",
	"(CMO_STRING,\"tab\\x09nl\\x0a\\xc3\\xa9\")",
	"(CMO_MATHCAP,(CMO_LIST,3,(CMO_LIST,2,(CMO_INT32,199901160),(CMO_STRING,\"ox_asir\")),"
	"(CMO_LIST,2,(CMO_INT32,262),(CMO_INT32,264)),"
	"(CMO_LIST,1,(CMO_LIST,2,(CMO_INT32,514),(CMO_LIST,2,(CMO_INT32,2),(CMO_INT32,20))))))",
	"(CMO_LIST,0)",
	"(CMO_LIST,2,(CMO_INT32,1),(CMO_STRING,\"ab\"))",
	"(CMO_LIST,3,(CMO_LIST,1,(CMO_LIST,1,(CMO_LIST,0))),(CMO_NULL),(CMO_LIST,1,(CMO_ZERO)))",
	"(CMO_MONOMIAL32,3,1,0,2,(CMO_ZZ,5))",
	"(CMO_MONOMIAL32,0,(CMO_INT32,-1))",
	"(CMO_ZZ,0)",
	"(CMO_ZZ,123123)",
	"(CMO_ZZ,-14)",
	"(CMO_ZZ,-4294967296)",
	"(CMO_ZZ,18446744073709551615)",
	"(CMO_QQ,-1,3)",
	"(CMO_QQ,0,1)",
	"(CMO_QQ,-340282366920938463463374607431768211457,18446744073709551616)",
	"(CMO_ZERO)",
	"(CMO_DMS_GENERIC)",
	"(CMO_DMS_OF_N_VARIABLES,(CMO_LIST,2,(CMO_INT32,2),(CMO_INT32,0)))",
	"(CMO_RING_BY_NAME,(CMO_STRING,\"R\"))",
	"(CMO_RECURSIVE_POLYNOMIAL,(CMO_LIST,1,(CMO_INDETERMINATE,(CMO_STRING,\"x\"))),"
	"(CMO_POLYNOMIAL_IN_ONE_VARIABLE,2,0,3,(CMO_ZZ,1),0,(CMO_INT32,-7)))",
	"(CMO_DISTRIBUTED_POLYNOMIAL,2,(CMO_DMS_GENERIC),(CMO_MONOMIAL32,2,1,0,(CMO_ZZ,3)),(CMO_ZERO))",
	"(CMO_DISTRIBUTED_POLYNOMIAL,0,(CMO_RING_BY_NAME,(CMO_STRING,\"R\")))",
	"(CMO_POLYNOMIAL_IN_ONE_VARIABLE,0,1)",
	"(CMO_RATIONAL,(CMO_ZZ,1),(CMO_ZZ,2))",
	"(CMO_COMPLEX,(CMO_IEEE_DOUBLE_FLOAT,1.5),(CMO_IEEE_DOUBLE_FLOAT,-0))",
	"(CMO_64BIT_MACHINE_DOUBLE,0.10000000000000001)",
	"(CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,0)",
	"(CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,5,-0,inf,-inf,1.0000000000000002,2.2250738585072014e-308)",
	"(CMO_IEEE_DOUBLE_FLOAT,inf)",
	"(CMO_IEEE_DOUBLE_FLOAT,-inf)",
	"(CMO_IEEE_DOUBLE_FLOAT,nan)",
	"(CMO_IEEE_DOUBLE_FLOAT,-nan)",
	"(CMO_IEEE_DOUBLE_FLOAT,1.0000000000000001e+300)",
	"(CMO_BIGFLOAT32,53,1,-3,2,0,-2147483648)",
	"(CMO_INDETERMINATE,(CMO_STRING,\"x\"))",
	"(CMO_TREE,(CMO_STRING,\"plus\"),(CMO_LIST,0),(CMO_LIST,2,(CMO_INT32,1),(CMO_INT32,2)))",
	"(CMO_LAMBDA,(CMO_LIST,1,(CMO_INDETERMINATE,(CMO_STRING,\"x\"))),"
	"(CMO_TREE,(CMO_STRING,\"x\"),(CMO_LIST,0),(CMO_LIST,0)))",
	"(CMO_ERROR)",
	"(CMO_ERROR2,(CMO_LIST,3,(CMO_INT32,7),(CMO_INT32,-1),(CMO_STRING,\"boom\")))",
	"(OX_DATA,(CMO_ZZ,5))",
	"(OX_DATA,(CMO_LIST,1,(CMO_NULL)))",
	"(OX_COMMAND,(SM_popCMO))",
	"(OX_COMMAND,(SM_control_reset_connection))",
	"(OX_COMMAND,(1234))",
	"(OX_COMMAND,(-5))",
	"(OX_SYNC_BALL)",
};
#define N_CANON (sizeof(canon) / sizeof(canon[0]))

static int has_example(const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < N_CANON; i++)
		if (canon[i][0] == '(' && !strncmp(canon[i] + 1, name, n) &&
		    (canon[i][n + 1] == ',' || canon[i][n + 1] == ')'))
			return 1;
	return 0;
}

Test(text, every_tag_has_an_example)
{
	static const int32_t large[] = { OXR_CMO_ERROR, OXR_CMO_ERROR2 };
	int32_t tag;
	size_t i, seen = 0;

	for (tag = 0; tag < 64; tag++) {
		if (!oxr_cmo_spec(tag))
			continue;
		cr_expect(has_example(oxr_cmo_tag_name(tag)), "no example of %s",
			  oxr_cmo_tag_name(tag));
		seen++;
	}
	for (i = 0; i < 2; i++)
		cr_expect(has_example(oxr_cmo_tag_name(large[i])), "no example of %s",
			  oxr_cmo_tag_name(large[i]));
	cr_assert_geq(seen, 24);
}

Test(text, canonical_round_trip)
{
	size_t i;

	for (i = 0; i < N_CANON; i++) {
		oxr_text_item x = parse_ok(canon[i]), y;
		char *t = text_of(&x);

		cr_assert_str_eq(t, canon[i]);
		y = parse_ok(t);
		assert_same_item(&x, &y, canon[i]);
		free(t);
	}
}

/* Through the bytes too, in both orders: the text and the codec agree. */
Test(text, binary_round_trip)
{
	size_t i, len, used;
	int order;

	for (i = 0; i < N_CANON; i++) {
		for (order = 0; order < 2; order++) {
			oxr_text_item x = parse_ok(canon[i]), y = x;
			uint8_t *buf;
			oxr_status_t st;
			char *t;

			if (x.is_frame)
				st = oxr_ox_encode_alloc(&x.msg, 1, order, &buf, &len);
			else
				st = oxr_cmo_encode_alloc(x.msg.cmo, order, &buf, &len);
			cr_assert_eq(st, OXR_OK, "encode %s: %s", canon[i], oxr_errmsg());
			if (x.is_frame)
				st = oxr_ox_decode(buf, len, order, NULL, A, &y.msg, &used);
			else
				st = oxr_cmo_decode(buf, len, order, NULL, A, &y.msg.cmo, &used);
			cr_assert_eq(st, OXR_OK, "decode %s: %s", canon[i], oxr_errmsg());
			cr_assert_eq(used, len);
			assert_same_item(&x, &y, canon[i]);
			t = text_of(&y);
			cr_assert_str_eq(t, canon[i], "order %d", order);
			free(t);
			free(buf);
		}
	}
}

/* bconv's shorthand and free white space read as the canonical form. */
Test(text, accepted_forms)
{
	static const char *const in[][2] = {
		{ "(CMO_LIST,(CMO_INT32,1))", "(CMO_LIST,1,(CMO_INT32,1))" },
		{ "(CMO_LIST)", "(CMO_LIST,0)" },
		{ "(CMO_LIST,(CMO_INT32,1),(CMO_LIST))", "(CMO_LIST,2,(CMO_INT32,1),(CMO_LIST,0))" },
		{ "(CMO_STRING,5,\"Hello\")", "(CMO_STRING,\"Hello\")" },
		{ "(CMO_DATUM,2,\"\\x00\\xFF\")", "(CMO_DATUM,\"\\x00\\xff\")" },
		{ "(CMO_STRING,\"a\\n\\t\\r\\x41\")", "(CMO_STRING,\"a\\x0a\\x09\\x0dA\")" },
		{ "(CMO_ZZ,1,123123)", "(CMO_ZZ,123123)" },
		{ "(CMO_ZZ,-1,14)", "(CMO_ZZ,-14)" },
		{ "(CMO_ZZ,-2,0,1)", "(CMO_ZZ,-4294967296)" },
		{ "(CMO_ZZ,2,4294967295,4294967295)", "(CMO_ZZ,18446744073709551615)" },
		{ "(CMO_ZZ,2,7,0)", "(CMO_ZZ,7)" }, /* a zero top word drops */
		{ "(CMO_ZZ,0)", "(CMO_ZZ,0)" },
		{ "(CMO_ZZ,+7)", "(CMO_ZZ,7)" },
		{ "(CMO_ZZ,-0)", "(CMO_ZZ,0)" },
		{ "(CMO_ZZ,007)", "(CMO_ZZ,7)" },
		{ "(CMO_INT32,+5)", "(CMO_INT32,5)" },
		{ "(CMO_INT32,-0)", "(CMO_INT32,0)" },
		{ "(CMO_QQ,+2,03)", "(CMO_QQ,2,3)" },
		{ "(CMO_DISTRIBUTED_POLYNOMIAL,(CMO_DMS_GENERIC),(CMO_ZERO))",
		  "(CMO_DISTRIBUTED_POLYNOMIAL,1,(CMO_DMS_GENERIC),(CMO_ZERO))" },
		{ "(CMO_DISTRIBUTED_POLYNOMIAL,(CMO_DMS_GENERIC))",
		  "(CMO_DISTRIBUTED_POLYNOMIAL,0,(CMO_DMS_GENERIC))" },
		{ "(CMO_IEEE_DOUBLE_FLOAT,0.5)", "(CMO_IEEE_DOUBLE_FLOAT,0.5)" },
		{ "(CMO_IEEE_DOUBLE_FLOAT,-0.0)", "(CMO_IEEE_DOUBLE_FLOAT,-0)" },
		{ "(CMO_IEEE_DOUBLE_FLOAT,INFINITY)", "(CMO_IEEE_DOUBLE_FLOAT,inf)" },
		{ "(CMO_IEEE_DOUBLE_FLOAT,1e300)", "(CMO_IEEE_DOUBLE_FLOAT,1.0000000000000001e+300)" },
		{ "(CMO_IEEE_DOUBLE_FLOAT,0x1p-2)", "(CMO_IEEE_DOUBLE_FLOAT,0.25)" },
		{ "(CMO_64BIT_MACHINE_DOUBLE,.5e1)", "(CMO_64BIT_MACHINE_DOUBLE,5)" },
		{ " \t( CMO_LIST , 2 ,\n\t(CMO_INT32 , -1 ) ,\r\n ( CMO_NULL ) ) ",
		  "(CMO_LIST,2,(CMO_INT32,-1),(CMO_NULL))" },
		{ "( CMO_STRING , 1 , \" \" )", "(CMO_STRING,\" \")" },
		{ "(CMO_ZZ , 1 , 5)", "(CMO_ZZ,5)" },
		{ "(OX_COMMAND,(262))", "(OX_COMMAND,(SM_popCMO))" },
		{ "(OX_COMMAND,( SM_setMathCap ))", "(OX_COMMAND,(SM_setMathcap))" },
		{ " ( OX_DATA , ( CMO_NULL ) ) ", "(OX_DATA,(CMO_NULL))" },
		{ "(OX_SYNC_BALL )", "(OX_SYNC_BALL)" },
	};
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		oxr_text_item x = parse_ok(in[i][0]), y;
		char *t = text_of(&x);

		cr_assert_str_eq(t, in[i][1], "from %s", in[i][0]);
		y = parse_ok(t);
		assert_same_item(&x, &y, in[i][0]);
		free(t);
	}
}

Test(text, list_contents)
{
	oxr_cmo *o = cmo_of("(CMO_LIST,3,(CMO_INT32,1),(CMO_STRING,\"ab\"),(CMO_LIST,0))");

	cr_assert_eq(o->tag, OXR_CMO_LIST);
	cr_assert_eq(o->nkids, 3);
	cr_assert_eq(o->kids[0]->tag, OXR_CMO_INT32);
	cr_assert_eq(o->kids[0]->v.i32, 1);
	cr_assert_eq(o->kids[1]->tag, OXR_CMO_STRING);
	cr_assert_eq(o->kids[1]->len, 2);
	cr_assert_arr_eq(o->kids[1]->data, "ab", 2);
	cr_assert_eq(o->kids[2]->tag, OXR_CMO_LIST);
	cr_assert_eq(o->kids[2]->nkids, 0);
}

Test(text, datum_bytes)
{
	static const uint8_t want[] = { 0, 1, 0xff, '"', '\\', 'a', 'b', 0x7f, ' ' };
	oxr_cmo *o = cmo_of("(CMO_DATUM,\"\\x00\\x01\\xff\\\"\\\\ab\\x7f \")");

	cr_assert_eq(o->tag, OXR_CMO_DATUM);
	cr_assert_eq(o->len, sizeof(want));
	cr_assert_arr_eq(o->data, want, sizeof(want));
}

Test(text, doubles)
{
	oxr_cmo *o = cmo_of("(CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,5,-0.0,inf,-inf,1e-320,nan)");
	oxr_cmo *d = cmo_of("(CMO_IEEE_DOUBLE_FLOAT,-0)");

	cr_assert_eq(o->len, 5 * 8);
	cr_assert(oxr_cmo_double_at(o, 0) == 0 && signbit(oxr_cmo_double_at(o, 0)));
	cr_assert(isinf(oxr_cmo_double_at(o, 1)) && oxr_cmo_double_at(o, 1) > 0);
	cr_assert(isinf(oxr_cmo_double_at(o, 2)) && oxr_cmo_double_at(o, 2) < 0);
	cr_assert_eq(oxr_cmo_double_at(o, 3), 1e-320); /* subnormal */
	cr_assert(isnan(oxr_cmo_double_at(o, 4)));
	cr_assert(d->v.f64 == 0 && signbit(d->v.f64));
}

Test(text, big_zz)
{
	char digits[302], text[320], *t;
	mpz_t z, want;
	oxr_cmo *o;
	int i;

	digits[0] = '-';
	for (i = 1; i <= 300; i++)
		digits[i] = (char)('1' + (i * 7) % 9);
	digits[301] = 0;
	snprintf(text, sizeof(text), "(CMO_ZZ,%s)", digits);
	o = cmo_of(text);
	mpz_inits(z, want, NULL);
	mpz_set_str(want, digits, 10);
	cr_assert_eq(oxr_cmo_get_mpz(o, z), OXR_OK);
	cr_assert_eq(mpz_cmp(z, want), 0);
	cr_assert_eq(o->v.i32, -(int32_t)((mpz_sizeinbase(want, 2) + 31) / 32));
	cr_assert_eq(o->len, 4 * (size_t)-o->v.i32);
	cr_assert_eq(oxr_text_print_cmo(o, &t, NULL), OXR_OK);
	cr_assert_str_eq(t, text);
	free(t);
	mpz_clears(z, want, NULL);
}

Test(text, raw_zz_words)
{
	oxr_cmo *o = cmo_of("(CMO_ZZ,-2,1,2)");

	cr_assert_eq(o->v.i32, -2);
	cr_assert_eq(oxr_cmo_word(o, 0), 1);
	cr_assert_eq(oxr_cmo_word(o, 1), 2);
}

Test(text, qq_negative)
{
	oxr_cmo *o = cmo_of("(CMO_QQ,-22,7)");
	mpq_t q;

	cr_assert_eq(o->nkids, 2);
	cr_assert_eq(o->kids[0]->tag, OXR_CMO_ZZ);
	cr_assert_eq(o->kids[1]->tag, OXR_CMO_ZZ);
	mpq_init(q);
	cr_assert_eq(oxr_cmo_get_mpq(o, q), OXR_OK);
	cr_assert_eq(mpz_get_si(mpq_numref(q)), -22);
	cr_assert_eq(mpz_get_si(mpq_denref(q)), 7);
	mpq_clear(q);
}

Test(text, layouts_fill_the_right_fields)
{
	oxr_cmo *m = cmo_of("(CMO_MONOMIAL32,3,1,0,-2,(CMO_ZZ,5))");
	oxr_cmo *p = cmo_of("(CMO_POLYNOMIAL_IN_ONE_VARIABLE,2,4,3,(CMO_ZZ,1),0,(CMO_INT32,-7))");
	oxr_cmo *b = cmo_of("(CMO_BIGFLOAT32,53,-1,-3,2,7,-2147483648)");
	oxr_cmo *d = cmo_of("(CMO_DISTRIBUTED_POLYNOMIAL,2,(CMO_DMS_GENERIC),"
			    "(CMO_MONOMIAL32,2,1,0,(CMO_ZZ,3)),(CMO_ZERO))");

	cr_assert_eq(oxr_cmo_nexp(m), 3);
	cr_assert_eq(oxr_cmo_word(m, 2), -2);
	cr_assert_eq(m->nkids, 1);
	cr_assert_eq(m->kids[0]->tag, OXR_CMO_ZZ);

	cr_assert_eq(p->v.i32, 4); /* the variable */
	cr_assert_eq(p->nkids, 4);
	cr_assert_eq(p->kids[0]->tag, OXR_CMO_INT32);
	cr_assert_eq(p->kids[0]->v.i32, 3);
	cr_assert_eq(p->kids[2]->v.i32, 0);
	cr_assert_eq(p->kids[3]->tag, OXR_CMO_INT32);
	cr_assert_eq(p->kids[3]->v.i32, -7);

	cr_assert_eq(b->nkids, 3);
	cr_assert_eq(b->kids[0]->v.i32, 53);
	cr_assert_eq(b->kids[1]->v.i32, -1);
	cr_assert_eq(b->kids[2]->v.i32, -3);
	cr_assert_eq(b->len, 8);
	cr_assert_eq(oxr_cmo_word(b, 0), 7);
	cr_assert_eq(oxr_cmo_word(b, 1), INT32_MIN);

	cr_assert_eq(d->tag, OXR_CMO_DISTRIBUTED_POLYNOMIAL);
	cr_assert_eq(d->nkids, 3);
	cr_assert_eq(d->kids[0]->tag, OXR_CMO_DMS_GENERIC);
	cr_assert_eq(d->kids[1]->tag, OXR_CMO_MONOMIAL32);
	cr_assert_eq(d->kids[2]->tag, OXR_CMO_ZERO);
}

Test(text, frames)
{
	oxr_text_item d = parse_ok("(OX_DATA,(CMO_ZZ,-5))");
	oxr_text_item c = parse_ok("(OX_COMMAND,(SM_popCMO))");
	oxr_text_item s = parse_ok("(OX_SYNC_BALL)");
	long v;

	cr_assert(d.is_frame && d.msg.tag == OXR_OX_DATA && d.msg.serial == 0);
	cr_assert_eq(d.msg.cmo->tag, OXR_CMO_ZZ);
	cr_assert_eq(d.msg.cmo->v.i32, -1);
	v = -(long)oxr_cmo_word(d.msg.cmo, 0);
	cr_assert_eq(v, -5);
	cr_assert(c.is_frame && c.msg.tag == OXR_OX_COMMAND && c.msg.sm == OXR_SM_popCMO);
	cr_assert_null(c.msg.cmo);
	cr_assert(s.is_frame && s.msg.tag == OXR_OX_SYNC_BALL && !s.msg.cmo);
}

Test(text, used_and_several_items)
{
	const char *s = "  (CMO_NULL)  (CMO_INT32,7)\n";
	oxr_text_item it;
	size_t used;

	cr_assert_eq(oxr_text_parse(s, strlen(s), A, &it, &used), OXR_OK);
	cr_assert_eq(used, 12);
	cr_assert_eq(it.msg.cmo->tag, OXR_CMO_NULL);
	cr_assert_eq(oxr_text_parse(s + used, strlen(s) - used, A, &it, &used), OXR_OK);
	cr_assert_eq(used, 15);
	cr_assert_eq(it.msg.cmo->v.i32, 7);
	/* Only the given length is read: no NUL needed, nothing past it. */
	cr_assert_eq(oxr_text_parse("(CMO_INT32,12)", 13, A, &it, &used), OXR_ERR_PROTO);
	cr_assert_eq(oxr_text_parse("(CMO_INT32,12)junk", 14, A, &it, &used), OXR_OK);
	cr_assert_eq(it.msg.cmo->v.i32, 12);
}

/* ---- golden bytes ---------------------------------------------------- */


Test(text, golden_vectors)
{
	size_t i, len, used;

	for (i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
		oxr_text_item x = parse_ok(golden[i][0]), y = { .is_frame = x.is_frame };
		uint8_t *buf, raw[64];
		oxr_decoder *d;
		char *h, *t;

		/* frames as the protocol doc writes them: no serial */
		if (x.is_frame)
			cr_assert_eq(oxr_ox_encode_alloc(&x.msg, 0, OXR_ORDER_NETWORK, &buf, &len), OXR_OK);
		else
			cr_assert_eq(oxr_cmo_encode_alloc(x.msg.cmo, OXR_ORDER_NETWORK, &buf, &len),
				     OXR_OK);
		h = hex_of(buf, len);
		cr_assert_str_eq(h, golden[i][1], "%s", golden[i][0]);
		len = unhex(golden[i][1], raw);
		cr_assert_eq(oxr_decoder_create(&d, x.is_frame ? OXR_DECODE_OX : OXR_DECODE_CMO,
						OXR_ORDER_NETWORK, NULL, A), OXR_OK);
		oxr_decoder_set_serial(d, 0);
		cr_assert_eq(oxr_decoder_feed(d, raw, len, OXR_FEED_BORROW, &used), OXR_OK,
			     "%s: %s", golden[i][1], oxr_errmsg());
		cr_assert_eq(used, len);
		if (x.is_frame)
			y.msg = *oxr_decoder_msg(d);
		else
			y.msg.cmo = oxr_decoder_cmo(d);
		t = text_of(&y);
		cr_assert_str_eq(t, golden[i][0]);
		oxr_decoder_destroy(d);
		free(t);
		free(h);
		free(buf);
	}
}

/* ---- errors ------------------------------------------------------------ */

struct bad {
	const char *text;
	oxr_status_t st;
	int col;          /* 0: the column is not checked */
	const char *what; /* a part of the message */
};

static const struct bad bad[] = {
	{ "", OXR_ERR_PROTO, 1, "expected '('" },
	{ "   ", OXR_ERR_PROTO, 4, "the text ends here" },
	{ "CMO_NULL", OXR_ERR_PROTO, 1, "expected '('" },
	{ "(", OXR_ERR_PROTO, 2, "expected a name" },
	{ "(CMO_FOO)", OXR_ERR_PROTO, 2, "unknown name 'CMO_FOO'" },
	{ "(OX_FOO)", OXR_ERR_PROTO, 2, "unknown name 'OX_FOO'" },
	{ "( \n CMO_FOO)", OXR_ERR_PROTO, 0, "line 2, column 2: unknown name 'CMO_FOO'" },
	{ "(123)", OXR_ERR_PROTO, 2, "expected a name" },
	{ "(CMO_NULL", OXR_ERR_PROTO, 10, "expected ')' to end CMO_NULL" },
	{ "(CMO_NULL,1)", OXR_ERR_PROTO, 10, "expected ')' to end CMO_NULL" },
	/* INT32 at each position */
	{ "(CMO_INT32)", OXR_ERR_PROTO, 11, "expected ','" },
	{ "(CMO_INT32 1)", OXR_ERR_PROTO, 12, "expected ','" },
	{ "(CMO_INT32,)", OXR_ERR_PROTO, 12, "expected an int32" },
	{ "(CMO_INT32,x)", OXR_ERR_PROTO, 12, "expected an int32" },
	{ "(CMO_INT32,- 1)", OXR_ERR_PROTO, 12, "expected an int32" },
	{ "(CMO_INT32,1", OXR_ERR_PROTO, 13, "expected ')' to end CMO_INT32" },
	{ "(CMO_INT32,1,2)", OXR_ERR_PROTO, 13, "expected ')'" },
	{ "(CMO_INT32,2147483648)", OXR_ERR_PROTO, 12, "out of range" },
	{ "(CMO_INT32,-2147483649)", OXR_ERR_PROTO, 12, "out of range" },
	{ "(CMO_INT32,99999999999999999999999999999999)", OXR_ERR_PROTO, 12, "out of range" },
	/* LIST */
	{ "(CMO_LIST,2,(CMO_INT32,1))", OXR_ERR_PROTO, 11, "count 2 does not match the 1" },
	{ "(CMO_LIST,0,(CMO_NULL))", OXR_ERR_PROTO, 11, "count 0 does not match the 1" },
	{ "(CMO_LIST,1)", OXR_ERR_PROTO, 11, "count 1 does not match the 0" },
	{ "(CMO_LIST,-1)", OXR_ERR_PROTO, 11, "out of range for a count" },
	{ "(CMO_LIST,2147483648,(CMO_NULL))", OXR_ERR_PROTO, 11, "out of range" },
	{ "(CMO_LIST,(CMO_NULL)(CMO_NULL))", OXR_ERR_PROTO, 21, "expected ',' or ')' in CMO_LIST" },
	{ "(CMO_LIST,(CMO_NULL),)", OXR_ERR_PROTO, 21, "expected ',' or ')'" },
	{ "(CMO_LIST,1,(CMO_NULL)", OXR_ERR_PROTO, 23, "expected ',' or ')'" },
	{ "(CMO_LIST,1,CMO_NULL)", OXR_ERR_PROTO, 11, "count 1 does not match the 0" },
	{ "(CMO_LIST,(CMO_INT32,1)", OXR_ERR_PROTO, 24, "the text ends here" },
	/* strings */
	{ "(CMO_STRING)", OXR_ERR_PROTO, 12, "expected ','" },
	{ "(CMO_STRING,abc)", OXR_ERR_PROTO, 13, "expected a quoted string" },
	{ "(CMO_STRING,\"abc)", OXR_ERR_PROTO, 13, "unterminated string" },
	{ "(CMO_STRING,\"abc\\\")", OXR_ERR_PROTO, 13, "unterminated string" },
	{ "(CMO_STRING,\"abc\\", OXR_ERR_PROTO, 13, "unterminated string" },
	{ "(CMO_STRING,\"a\\qb\")", OXR_ERR_PROTO, 15, "bad escape '\\q'" },
	{ "(CMO_STRING,\"\\x4\")", OXR_ERR_PROTO, 14, "bad escape" },
	{ "(CMO_STRING,\"\\xg0\")", OXR_ERR_PROTO, 14, "bad escape" },
	{ "(CMO_STRING,\"\\0\")", OXR_ERR_PROTO, 14, "bad escape" },
	{ "(CMO_STRING,4,\"abc\")", OXR_ERR_PROTO, 13, "count 4 does not match the 3" },
	{ "(CMO_STRING,3\"abc\")", OXR_ERR_PROTO, 14, "expected ',' before a string" },
	{ "(CMO_STRING,-1,\"\")", OXR_ERR_PROTO, 13, "out of range for a count" },
	{ "(CMO_STRING,\"a\"", OXR_ERR_PROTO, 16, "expected ')'" },
	{ "(CMO_DATUM,1,\"\\x00\" \"\")", OXR_ERR_PROTO, 21, "expected ')' to end CMO_DATUM" },
	/* kids with a wanted tag */
	{ "(CMO_TREE,(CMO_INT32,1),(CMO_LIST,0),(CMO_LIST,0))", OXR_ERR_PROTO, 11,
	  "CMO_TREE wants CMO_STRING here, not CMO_INT32" },
	{ "(CMO_TREE,(CMO_STRING,\"f\"),(CMO_NULL),(CMO_LIST,0))", OXR_ERR_PROTO, 28,
	  "CMO_TREE wants CMO_LIST here, not CMO_NULL" },
	{ "(CMO_TREE,(CMO_STRING,\"f\"),(CMO_LIST,0))", OXR_ERR_PROTO, 40, "expected ','" },
	{ "(CMO_TREE,(CMO_STRING,\"f\"),(CMO_LIST,0),CMO_LIST)", OXR_ERR_PROTO, 41,
	  "expected '(' of a kid (CMO_LIST)" },
	{ "(CMO_MATHCAP,(CMO_INT32,1))", OXR_ERR_PROTO, 14, "wants CMO_LIST" },
	{ "(CMO_MATHCAP)", OXR_ERR_PROTO, 13, "expected ','" },
	{ "(CMO_MATHCAP,(CMO_LIST,0)", OXR_ERR_PROTO, 26, "expected ')'" },
	{ "(CMO_RING_BY_NAME,(CMO_ZZ,1))", OXR_ERR_PROTO, 19, "wants CMO_STRING" },
	{ "(CMO_LAMBDA,(CMO_LIST,0),(CMO_LIST,0))", OXR_ERR_PROTO, 26, "wants CMO_TREE" },
	{ "(CMO_DISTRIBUTED_POLYNOMIAL,1,(CMO_DMS_GENERIC),(CMO_INT32,1))", OXR_ERR_PROTO, 49,
	  "wants CMO_MONOMIAL32 or CMO_ZERO here, not CMO_INT32" },
	{ "(CMO_DISTRIBUTED_POLYNOMIAL,(CMO_DMS_GENERIC),(CMO_ZERO),(CMO_LIST,0))", OXR_ERR_PROTO,
	  58, "wants CMO_MONOMIAL32 or CMO_ZERO" },
	{ "(CMO_DISTRIBUTED_POLYNOMIAL,0,(CMO_NULL))", OXR_ERR_PROTO, 31, "a ring definition" },
	{ "(CMO_DISTRIBUTED_POLYNOMIAL,2,(CMO_DMS_GENERIC),(CMO_ZERO))", OXR_ERR_PROTO, 29,
	  "count 2 does not match the 1" },
	{ "(CMO_DISTRIBUTED_POLYNOMIAL)", OXR_ERR_PROTO, 28, "expected ','" },
	/* words, doubles, pairs */
	{ "(CMO_MONOMIAL32,2,1,(CMO_ZZ,1))", OXR_ERR_PROTO, 17, "count 2 does not match the 1" },
	{ "(CMO_MONOMIAL32,1,1)", OXR_ERR_PROTO, 20, "expected ','" },
	{ "(CMO_MONOMIAL32,(CMO_ZZ,1))", OXR_ERR_PROTO, 17, "expected a count" },
	{ "(CMO_MONOMIAL32,1,2147483648,(CMO_ZZ,1))", OXR_ERR_PROTO, 19, "out of range" },
	{ "(CMO_BIGFLOAT32,53,1,-3)", OXR_ERR_PROTO, 24, "expected ','" },
	{ "(CMO_BIGFLOAT32,53,1,-3,1,x)", OXR_ERR_PROTO, 25, "count 1 does not match the 0" },
	{ "(CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,2,1.0)", OXR_ERR_PROTO, 36, "count 2" },
	{ "(CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,1,1.0x)", OXR_ERR_PROTO, 38, "expected a double" },
	{ "(CMO_POLYNOMIAL_IN_ONE_VARIABLE,1,0,3)", OXR_ERR_PROTO, 38, "expected ','" },
	{ "(CMO_POLYNOMIAL_IN_ONE_VARIABLE,1,0,3,5)", OXR_ERR_PROTO, 39, "expected '('" },
	{ "(CMO_POLYNOMIAL_IN_ONE_VARIABLE,2,0,3,(CMO_ZZ,1))", OXR_ERR_PROTO, 33, "count 2" },
	{ "(CMO_POLYNOMIAL_IN_ONE_VARIABLE,(CMO_ZZ,1))", OXR_ERR_PROTO, 33, "expected an int32" },
	/* numbers */
	{ "(CMO_ZZ)", OXR_ERR_PROTO, 8, "expected ','" },
	{ "(CMO_ZZ,abc)", OXR_ERR_PROTO, 9, "expected an integer" },
	{ "(CMO_ZZ,1 2)", OXR_ERR_PROTO, 11, "expected ',' or ')' in CMO_ZZ" },
	{ "(CMO_ZZ,1,4294967296)", OXR_ERR_PROTO, 11, "out of range for a word" },
	{ "(CMO_ZZ,1,-1)", OXR_ERR_PROTO, 11, "out of range for a word" },
	{ "(CMO_ZZ,2,1)", OXR_ERR_PROTO, 12, "expected ',' before a word" },
	{ "(CMO_ZZ,1,1,1)", OXR_ERR_PROTO, 12, "expected ',' or ')'" },
	{ "(CMO_ZZ,2147483648,1)", OXR_ERR_PROTO, 9, "word count out of int32 range" },
	{ "(CMO_QQ,1)", OXR_ERR_PROTO, 10, "expected ','" },
	{ "(CMO_QQ,1,0)", OXR_ERR_PROTO, 1, "denominator 0" },
	{ "(CMO_QQ,1,2,3)", OXR_ERR_PROTO, 12, "expected ')'" },
	{ "(CMO_IEEE_DOUBLE_FLOAT,)", OXR_ERR_PROTO, 24, "expected a double" },
	{ "(CMO_IEEE_DOUBLE_FLOAT,1.5x)", OXR_ERR_PROTO, 24, "expected a double" },
	{ "(CMO_IEEE_DOUBLE_FLOAT,1..5)", OXR_ERR_PROTO, 24, "expected a double" },
	{ "(CMO_IEEE_DOUBLE_FLOAT,nan(1))", OXR_ERR_PROTO, 27, "expected ')'" },
	/* frames */
	{ "(OX_DATA)", OXR_ERR_PROTO, 9, "expected ','" },
	{ "(OX_DATA,CMO_NULL)", OXR_ERR_PROTO, 10, "expected '('" },
	{ "(OX_DATA,(CMO_NULL)", OXR_ERR_PROTO, 20, "expected ')' to end OX_DATA" },
	{ "(OX_DATA,(OX_DATA,(CMO_NULL)))", OXR_ERR_PROTO, 11, "unknown name 'OX_DATA'" },
	{ "(OX_COMMAND)", OXR_ERR_PROTO, 12, "expected ','" },
	{ "(OX_COMMAND,SM_popCMO)", OXR_ERR_PROTO, 13, "expected '('" },
	{ "(OX_COMMAND,(SM_nosuch))", OXR_ERR_PROTO, 14, "unknown name 'SM_nosuch'" },
	{ "(OX_COMMAND,(SM_popCMO)", OXR_ERR_PROTO, 24, "expected ')' to end OX_COMMAND" },
	{ "(OX_COMMAND,(SM_popCMO,1))", OXR_ERR_PROTO, 23, "expected ')'" },
	{ "(OX_COMMAND,(4294967296))", OXR_ERR_PROTO, 14, "out of range for an SM code" },
	{ "(OX_SYNC_BALL,1)", OXR_ERR_PROTO, 14, "expected ')' to end OX_SYNC_BALL" },
	{ "(OX_NOTIFY)", OXR_ERR_PROTO, 11, "OX_NOTIFY has no text form" },
	/* lines */
	{ "(CMO_LIST,\n  (CMO_INT32,x))", OXR_ERR_PROTO, 0, "line 2, column 14: expected an int32" },
};

Test(text, parse_errors)
{
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct bad *b = &bad[i];
		oxr_text_item it = { .is_frame = 42 };
		size_t used = 4242;
		char col[32];
		oxr_status_t st = oxr_text_parse(b->text, strlen(b->text), A, &it, &used);

		cr_assert_eq(st, b->st, "%s: status %d (%s)", b->text, st, oxr_errmsg());
		cr_assert(strstr(oxr_errmsg(), b->what), "%s: message '%s' lacks '%s'", b->text,
			  oxr_errmsg(), b->what);
		cr_assert(!strncmp(oxr_errmsg(), "text: ", 6), "%s", oxr_errmsg());
		snprintf(col, sizeof(col), "column %d:", b->col);
		cr_assert(!b->col || strstr(oxr_errmsg(), col), "%s: message '%s' lacks '%s'",
			  b->text, oxr_errmsg(), col);
		/* outputs untouched on failure */
		cr_assert_eq(it.is_frame, 42);
		cr_assert_eq(used, 4242);
	}
}

/* ---- nesting --------------------------------------------------------- */

/* n copies of open, then leaf, then n copies of close. */
static char *nest(const char *open, size_t n, const char *leaf, const char *close)
{
	size_t lo = strlen(open), ll = strlen(leaf), lc = strlen(close), i;
	char *s = malloc(n * (lo + lc) + ll + 1), *p = s;

	cr_assert_not_null(s);
	for (i = 0; i < n; i++, p += lo)
		memcpy(p, open, lo);
	memcpy(p, leaf, ll);
	p += ll;
	for (i = 0; i < n; i++, p += lc)
		memcpy(p, close, lc);
	*p = 0;
	return s;
}

static oxr_status_t parse_str(const char *s, oxr_text_item *it)
{
	size_t used;

	return oxr_text_parse(s, strlen(s), A, it, &used);
}

Test(text, nesting_bombs_fail_cleanly)
{
	static const char *const opens[] = { "(CMO_LIST,1,", "(CMO_LIST,", "(CMO_INDETERMINATE,",
					     "(CMO_MATHCAP,", "(CMO_TREE,", "(CMO_RATIONAL," };
	oxr_text_item it;
	size_t i;
	char *s;

	for (i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
		s = nest(opens[i], 100000, "(CMO_NULL)", ")");
		cr_assert_eq(parse_str(s, &it), OXR_ERR_LIMIT, "%s...: %s", opens[i], oxr_errmsg());
		cr_assert(strstr(oxr_errmsg(), "nested deeper than 512"), "%s", oxr_errmsg());
		free(s);
	}
	/* Bare parentheses never nest: the name is missing at the second one. */
	s = nest("(", 100000, "", "");
	cr_assert_eq(parse_str(s, &it), OXR_ERR_PROTO);
	cr_assert(strstr(oxr_errmsg(), "column 2: expected a name"), "%s", oxr_errmsg());
	free(s);
}

/* Depth counts objects with a body, as the decoder does: 512 of them, and a
 * body-less leaf below, parse, print and survive the codec; one more fails. */
Test(text, nesting_limit_is_exact)
{
	oxr_text_item it;
	uint8_t *buf;
	size_t len, used;
	oxr_cmo *o;
	char *s, *t;

	s = nest("(CMO_LIST,1,", 511, "(CMO_INT32,1)", ")");
	cr_assert_eq(parse_str(s, &it), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_text_print_cmo(it.msg.cmo, &t, NULL), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(t, s);
	cr_assert_eq(oxr_cmo_encode_alloc(it.msg.cmo, OXR_ORDER_NETWORK, &buf, &len), OXR_OK);
	cr_assert_eq(oxr_cmo_decode(buf, len, OXR_ORDER_NETWORK, NULL, A, &o, &used), OXR_OK,
		     "%s", oxr_errmsg());
	cr_assert(oxr_cmo_equal(o, it.msg.cmo));
	free(buf);
	free(t);
	free(s);

	s = nest("(CMO_LIST,1,", 512, "(CMO_NULL)", ")");
	cr_assert_eq(parse_str(s, &it), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_text_print_cmo(it.msg.cmo, &t, NULL), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(t, s);
	free(t);
	free(s);

	s = nest("(CMO_LIST,1,", 512, "(CMO_INT32,1)", ")");
	cr_assert_eq(parse_str(s, &it), OXR_ERR_LIMIT);
	/* the column of the 513th '(' */
	cr_assert(strstr(oxr_errmsg(), "column 6145:"), "%s", oxr_errmsg());
	free(s);
}

/* ---- printer errors -------------------------------------------------- */

static oxr_status_t print_st(const oxr_cmo *o)
{
	char *t = (char *)"untouched";
	oxr_status_t st = oxr_text_print_cmo(o, &t, NULL);

	if (st == OXR_OK)
		free(t);
	else
		cr_assert_str_eq(t, "untouched");
	return st;
}

Test(text, print_errors)
{
	oxr_cmo *l = oxr_cmo_new_list(A, 2), *cyc = oxr_cmo_new_list(A, 1);
	oxr_cmo *tree = oxr_cmo_new_node(A, OXR_CMO_TREE, 3);
	oxr_cmo *qq = oxr_cmo_new_node(A, OXR_CMO_QQ, 1);
	oxr_cmo *poly = oxr_cmo_new_node(A, OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE, 3);
	oxr_cmo *zz = oxr_cmo_new_zz_si(A, 5);
	oxr_cmo bogus = { .tag = 12345 };
	oxr_ox_msg m = { .tag = OXR_OX_DATA };
	char *t;

	cr_assert_eq(print_st(NULL), OXR_ERR_INVAL);
	l->kids[0] = oxr_cmo_null();
	cr_assert_eq(print_st(l), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "unset"), "%s", oxr_errmsg());
	l->kids[1] = zz;
	cr_assert_eq(print_st(l), OXR_OK);

	cyc->kids[0] = cyc; /* a cycle is a nesting bomb */
	cr_assert_eq(print_st(cyc), OXR_ERR_LIMIT);

	tree->kids[0] = tree->kids[1] = tree->kids[2] = zz;
	cr_assert_eq(print_st(tree), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "CMO_TREE holds CMO_ZZ where it wants CMO_STRING"), "%s",
		  oxr_errmsg());
	qq->kids[0] = zz;
	cr_assert_eq(print_st(qq), OXR_ERR_INVAL); /* one kid, the layout has two */
	poly->kids[0] = oxr_cmo_new_int32(A, 1);
	poly->kids[1] = poly->kids[2] = zz;
	cr_assert_eq(print_st(poly), OXR_ERR_INVAL); /* pairs need an even count */
	cr_assert_eq(print_st(&bogus), OXR_ERR_INVAL);
	zz->len = 8; /* claims more words than f says */
	cr_assert_eq(print_st(zz), OXR_ERR_INVAL);

	cr_assert_eq(oxr_text_print_msg(&m, &t, NULL), OXR_ERR_INVAL); /* no cmo */
	m.tag = OXR_OX_NOTIFY;
	cr_assert_eq(oxr_text_print_msg(&m, &t, NULL), OXR_ERR_INVAL);
	cr_assert_eq(oxr_text_print_cmo(oxr_cmo_null(), NULL, NULL), OXR_ERR_INVAL);
}

/* Built objects print from any stored byte order. */
Test(text, print_reads_stored_order)
{
	static const uint8_t be[] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe };
	oxr_cmo m = { .tag = OXR_CMO_MONOMIAL32, .order = OXR_ORDER_NETWORK, .data = be,
		      .len = 8 };
	oxr_cmo *coef = oxr_cmo_new_int32(A, 3);
	char *t;

	m.kids = &coef;
	m.nkids = 1;
	cr_assert_eq(oxr_text_print_cmo(&m, &t, NULL), OXR_OK);
	cr_assert_str_eq(t, "(CMO_MONOMIAL32,2,1,-2,(CMO_INT32,3))");
	free(t);
}
