/* SPDX-License-Identifier: MIT */
/* The byte vectors of shared/docs/openxm-protocol.md, in both byte orders. */
#include <criterion/criterion.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "test_util.h"

static oxr_arena *A;
static void setup(void) { cr_assert_eq(oxr_arena_create(&A), OXR_OK); }
static void teardown(void) { oxr_arena_destroy(A); }
TestSuite(golden, .init = setup, .fini = teardown, .timeout = 30);

/* Encodes o in `order`, compares with hex, decodes the hex back and checks
 * the object and the re-encoding. */
static void check_vector(oxr_cmo *o, int order, const char *hex)
{
	uint8_t want[4096], *got;
	size_t n = unhex(hex, want), len, used, sz;
	oxr_cmo *back;
	char *h;

	cr_assert_eq(oxr_cmo_size(o, &sz), OXR_OK);
	cr_assert_eq(sz, n, "size %zu, want %zu", sz, n);
	cr_assert_eq(oxr_cmo_encode_alloc(o, order, &got, &len), OXR_OK, "%s", oxr_errmsg());
	h = hex_of(got, len);
	cr_assert_eq(len, n, "got %s want %s", h, hex);
	cr_assert(!memcmp(got, want, n), "got %s want %s", h, hex);
	free(h);
	free(got);

	cr_assert_eq(oxr_cmo_decode(want, n, order, NULL, A, &back, &used), OXR_OK, "%s",
		     oxr_errmsg());
	cr_assert_eq(used, n);
	cr_assert(oxr_cmo_equal(o, back));
}

Test(golden, zz_123123)
{
	check_vector(oxr_cmo_new_zz_si(A, 123123), OXR_ORDER_NETWORK, "00000014 00000001 0001e0f3");
	check_vector(oxr_cmo_new_zz_si(A, 123123), OXR_ORDER_LITTLE, "14000000 01000000 f3e00100");
}

Test(golden, zz_small_and_zero)
{
	check_vector(oxr_cmo_new_zz_si(A, 14), OXR_ORDER_NETWORK, "00000014 00000001 0000000e");
	check_vector(oxr_cmo_new_zz_si(A, -14), OXR_ORDER_NETWORK, "00000014 ffffffff 0000000e");
	check_vector(oxr_cmo_new_zz_si(A, 0), OXR_ORDER_NETWORK, "00000014 00000000");
	check_vector(oxr_cmo_new_zz_si(A, -14), OXR_ORDER_LITTLE, "14000000 ffffffff 0e000000");
	check_vector(oxr_cmo_new_zz_si(A, 0), OXR_ORDER_LITTLE, "14000000 00000000");
}

Test(golden, zz_two_words_least_significant_first)
{
	mpz_t z;

	mpz_init_set_str(z, "100000000", 16); /* 2^32 */
	check_vector(oxr_cmo_new_zz(A, z), OXR_ORDER_NETWORK, "00000014 00000002 00000000 00000001");
	mpz_clear(z);
}

Test(golden, string_hello)
{
	check_vector(oxr_cmo_new_string(A, "Hello"), OXR_ORDER_NETWORK,
		     "00000004 00000005 48656c6c6f");
	check_vector(oxr_cmo_new_string(A, "Hello"), OXR_ORDER_LITTLE,
		     "04000000 05000000 48656c6c6f");
}

Test(golden, indeterminate_x)
{
	oxr_cmo *o = oxr_cmo_new_node(A, OXR_CMO_INDETERMINATE, 1);

	o->kids[0] = oxr_cmo_new_string(A, "x");
	check_vector(o, OXR_ORDER_NETWORK, "0000003c 00000004 00000001 78");
}

Test(golden, int32_null_zero_list)
{
	oxr_cmo *l = oxr_cmo_new_list(A, 2);

	check_vector(oxr_cmo_new_int32(A, -2), OXR_ORDER_NETWORK, "00000002 fffffffe");
	check_vector(oxr_cmo_null(), OXR_ORDER_NETWORK, "00000001");
	check_vector(oxr_cmo_zero(), OXR_ORDER_LITTLE, "16000000");
	l->kids[0] = oxr_cmo_new_int32(A, 1);
	l->kids[1] = oxr_cmo_new_string(A, "ab");
	check_vector(l, OXR_ORDER_NETWORK, "00000011 00000002 00000002 00000001 00000004 00000002 6162");
}

Test(golden, doubles_are_whole_eight_bytes)
{
	/* network order: the 8 bytes big-endian; local order: native bytes */
	check_vector(oxr_cmo_new_double(A, OXR_CMO_IEEE_DOUBLE_FLOAT, 1.5), OXR_ORDER_NETWORK,
		     "00000033 3ff8000000000000");
	check_vector(oxr_cmo_new_double(A, OXR_CMO_IEEE_DOUBLE_FLOAT, 1.5), OXR_ORDER_LITTLE,
		     "33000000 000000000000f83f");
	check_vector(oxr_cmo_new_double(A, OXR_CMO_64BIT_MACHINE_DOUBLE, -2.0), OXR_ORDER_NETWORK,
		     "00000028 c000000000000000");
}

Test(golden, qq_and_monomial_and_dpoly)
{
	mpq_t q;
	int32_t e[3] = { 1, 0, 2 };
	oxr_cmo *m, *p;

	mpq_init(q);
	mpq_set_si(q, -1, 3);
	/* -1/3: numerator body f=-1 word 1, denominator f=1 word 3, no inner tags */
	check_vector(oxr_cmo_new_qq(A, q), OXR_ORDER_NETWORK,
		     "00000015 ffffffff 00000001 00000001 00000003");
	mpq_clear(q);

	m = oxr_cmo_new_monomial32(A, 3, e, oxr_cmo_new_zz_si(A, 5));
	check_vector(m, OXR_ORDER_NETWORK,
		     "00000013 00000003 00000001 00000000 00000002 00000014 00000001 00000005");
	p = oxr_cmo_new_node(A, OXR_CMO_DISTRIBUTED_POLYNOMIAL, 2);
	p->kids[0] = oxr_cmo_dms_generic();
	p->kids[1] = m;
	check_vector(p, OXR_ORDER_NETWORK,
		     "0000001f 00000001 00000018 00000013 00000003 00000001 00000000 00000002 "
		     "00000014 00000001 00000005");
}

Test(golden, error2_as_asir_sends_it)
{
	oxr_cmo *e = oxr_cmo_new_node(A, OXR_CMO_ERROR2, 1), *l = oxr_cmo_new_list(A, 2);

	l->kids[0] = oxr_cmo_new_int32(A, 7);
	l->kids[1] = oxr_cmo_new_string(A, "x");
	e->kids[0] = l;
	check_vector(e, OXR_ORDER_NETWORK,
		     "7f000002 00000011 00000002 00000002 00000007 00000004 00000001 78");
}

Test(golden, ox_command_sm_mathcap_frame)
{
	oxr_ox_msg m = { .tag = OXR_OX_COMMAND, .serial = 0, .sm = OXR_SM_mathcap }, back;
	uint8_t buf[64];
	size_t len, used;
	char *h;

	cr_assert_eq(oxr_ox_encode(&m, 1, OXR_ORDER_NETWORK, buf, sizeof(buf), &len), OXR_OK);
	h = hex_of(buf, len);
	cr_assert_str_eq(h, "000002010000000000000108");
	free(h);
	cr_assert_eq(oxr_ox_decode(buf, len, OXR_ORDER_NETWORK, NULL, A, &back, &used), OXR_OK);
	cr_assert_eq(back.tag, OXR_OX_COMMAND);
	cr_assert_eq(back.sm, 264);
	cr_assert_eq(used, 12);

	m.serial = 3;
	cr_assert_eq(oxr_ox_encode(&m, 0, OXR_ORDER_LITTLE, buf, sizeof(buf), &len), OXR_OK);
	h = hex_of(buf, len);
	cr_assert_str_eq(h, "0102000008010000"); /* no serial */
	free(h);
}

/* ox_asir's mathcap reply (protocol doc section 7, tested against asir). */
static oxr_cmo *asir_mathcap(void)
{
	static const int32_t sms[] = { 276, 275, 258, 262, 263, 277, 266, 267, 268, 274, 269, 272, 265,
				       264, 273, 300, 270, 271, 400, 278, 279, 280, 281, 282, 283 };
	oxr_cmo *mc = oxr_cmo_new_node(A, OXR_CMO_MATHCAP, 1), *top = oxr_cmo_new_list(A, 3);
	oxr_cmo *sys = oxr_cmo_new_list(A, 2), *sm = oxr_cmo_new_list(A, 25);
	oxr_cmo *data = oxr_cmo_new_list(A, 1), *pair = oxr_cmo_new_list(A, 2);
	oxr_cmo *tags = oxr_cmo_new_list(A, 3);
	size_t i;

	sys->kids[0] = oxr_cmo_new_int32(A, 199901160);
	sys->kids[1] = oxr_cmo_new_string(A, "ox_asir");
	for (i = 0; i < 25; i++)
		sm->kids[i] = oxr_cmo_new_int32(A, sms[i]);
	tags->kids[0] = oxr_cmo_new_int32(A, OXR_CMO_INT32);
	tags->kids[1] = oxr_cmo_new_int32(A, OXR_CMO_STRING);
	tags->kids[2] = oxr_cmo_new_int32(A, OXR_CMO_ZZ);
	pair->kids[0] = oxr_cmo_new_int32(A, OXR_OX_DATA);
	pair->kids[1] = tags;
	data->kids[0] = pair;
	top->kids[0] = sys;
	top->kids[1] = sm;
	top->kids[2] = data;
	mc->kids[0] = top;
	return mc;
}

Test(golden, asir_mathcap_reply_start)
{
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .serial = 1, .cmo = asir_mathcap() }, back;
	uint8_t *b;
	size_t len, used;
	char *h;

	cr_assert_eq(oxr_ox_encode_alloc(&m, 1, OXR_ORDER_NETWORK, &b, &len), OXR_OK);
	h = hex_of(b, len);
	/* OX_DATA, serial 1, MATHCAP, LIST 3, LIST 2, INT32 199901160, STRING "ox_asir",
	 * LIST 25, INT32 276, INT32 275 */
	cr_assert(!strncmp(h, "0000020200000001" "00000005" "0000001100000003" "0000001100000002"
			      "000000020bea3fe8" "00000004000000076f785f61736972"
			      "0000001100000019" "0000000200000114" "0000000200000113",
			   16 + 8 + 16 + 16 + 16 + 30 + 16 + 32), "%s", h);
	free(h);
	cr_assert_eq(oxr_ox_decode(b, len, OXR_ORDER_NETWORK, NULL, A, &back, &used), OXR_OK);
	cr_assert_eq(used, len);
	cr_assert_eq(back.serial, 1);
	cr_assert(oxr_cmo_equal(back.cmo, m.cmo));
	cr_assert_eq(back.cmo->kids[0]->kids[1]->nkids, 25);
	cr_assert_eq(back.cmo->kids[0]->kids[1]->kids[24]->v.i32, OXR_SM_reduce_102);
	free(b);
}

Test(golden, mpz_and_mpq_values_back)
{
	uint8_t b[64];
	size_t n = unhex("00000014 ffffffff 0000000e", b), used;
	oxr_cmo *o;
	mpz_t z;

	mpz_init(z);
	cr_assert_eq(oxr_cmo_decode(b, n, OXR_ORDER_NETWORK, NULL, A, &o, &used), OXR_OK);
	cr_assert_eq(oxr_cmo_get_mpz(o, z), OXR_OK);
	cr_assert_eq(mpz_get_si(z), -14);
	n = unhex("14000000 02000000 00000000 01000000", b); /* little-endian 2^32 */
	cr_assert_eq(oxr_cmo_decode(b, n, OXR_ORDER_LITTLE, NULL, A, &o, &used), OXR_OK);
	cr_assert_eq(oxr_cmo_get_mpz(o, z), OXR_OK);
	cr_assert(mpz_cmp_ui(z, 0) > 0 && mpz_sizeinbase(z, 2) == 33);
	mpz_clear(z);
}
