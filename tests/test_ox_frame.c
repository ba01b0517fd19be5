/* SPDX-License-Identifier: MIT */
/* OX frames: tags and serials in both orders, names, the frame-without-serial
 * form of the old spec examples, and bad frames on encode. */
#include <criterion/criterion.h>

#include "oxr/ox.h"
#include "test_util.h"

static oxr_arena *A;
static void setup(void) { cr_assert_eq(oxr_arena_create(&A), OXR_OK); }
static void teardown(void) { oxr_arena_destroy(A); }
TestSuite(frame, .init = setup, .fini = teardown, .timeout = 30);

static char *enc(const oxr_ox_msg *m, int serial, int order)
{
	uint8_t b[256];
	size_t n, sz;

	cr_assert_eq(oxr_ox_encode(m, serial, order, b, sizeof(b), &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_ox_size(m, serial, &sz), OXR_OK);
	cr_assert_eq(sz, n);
	return hex_of(b, n);
}

Test(frame, data_command_sync_both_orders)
{
	oxr_ox_msg d = { .tag = OXR_OX_DATA, .serial = 0x01020304, .cmo = oxr_cmo_new_int32(A, 5) };
	oxr_ox_msg c = { .tag = OXR_OX_COMMAND, .serial = 9, .sm = OXR_SM_popCMO };
	oxr_ox_msg s = { .tag = OXR_OX_SYNC_BALL, .serial = 10 };
	char *h;

	cr_assert_str_eq(h = enc(&d, 1, 0), "000002020102030400000002" "00000005"); free(h);
	cr_assert_str_eq(h = enc(&d, 1, 1), "020200000403020102000000" "05000000"); free(h);
	cr_assert_str_eq(h = enc(&c, 1, 0), "000002010000000900000106"); free(h);
	cr_assert_str_eq(h = enc(&s, 1, 0), "000002030000000a"); free(h);
	cr_assert_str_eq(h = enc(&s, 0, 1), "03020000"); free(h);
	cr_assert_str_eq(h = enc(&c, 0, 0), "0000020100000106"); free(h);
}

Test(frame, decode_keeps_serial_and_body)
{
	uint8_t b[64];
	size_t n = unhex("00000202 fffffffe 00000004 00000002 6869", b), used;
	oxr_ox_msg m;

	cr_assert_eq(oxr_ox_decode(b, n, 0, NULL, A, &m, &used), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(m.tag, OXR_OX_DATA);
	cr_assert_eq(m.serial, -2);
	cr_assert_eq(m.cmo->tag, OXR_CMO_STRING);
	cr_assert_eq(m.cmo->len, 2);
	cr_assert(!memcmp(m.cmo->data, "hi", 2));
	cr_assert_eq(used, n);

	n = unhex("03020000 07000000 01020000", b); /* sync ball, then the next frame */
	cr_assert_eq(oxr_ox_decode(b, n, 1, NULL, A, &m, &used), OXR_OK);
	cr_assert_eq(m.tag, OXR_OX_SYNC_BALL);
	cr_assert_eq(m.serial, 7);
	cr_assert_eq(m.cmo, NULL);
	cr_assert_eq(used, 8, "a frame must not eat its successor");
}

Test(frame, frames_without_serial)
{
	uint8_t b[64];
	size_t n = unhex("00000201 00000108 00000202 00000001", b), used;
	oxr_decoder *d;

	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_OX, 0, NULL, A), OXR_OK);
	oxr_decoder_set_serial(d, 0);
	cr_assert_eq(oxr_decoder_feed(d, b, n, OXR_FEED_BORROW, &used), OXR_OK);
	cr_assert_eq(used, 8);
	cr_assert_eq(oxr_decoder_msg(d)->sm, OXR_SM_mathcap);
	cr_assert_eq(oxr_decoder_feed(d, b + 8, n - 8, OXR_FEED_BORROW, &used), OXR_OK);
	cr_assert_eq(oxr_decoder_msg(d)->tag, OXR_OX_DATA);
	cr_assert_eq(oxr_decoder_msg(d)->cmo->tag, OXR_CMO_NULL);
	oxr_decoder_destroy(d);
}

Test(frame, names_both_ways)
{
	cr_assert_str_eq(oxr_sm_name(262), "SM_popCMO");
	cr_assert_str_eq(oxr_sm_name(278), "SM_set_rank_102");
	cr_assert_str_eq(oxr_sm_name(283), "SM_reduce_102");
	cr_assert_eq(oxr_sm_of("SM_tcp_connect_102", 18), 280);
	cr_assert_eq(oxr_sm_of("SM_setMathCap", 13), 273, "OpenXM headers' spelling");
	cr_assert_eq(oxr_sm_of("SM_setMathcap", 13), 273, "asir's spelling");
	cr_assert_eq(oxr_sm_of("SM_nope", 7), -1);
	cr_assert_null(oxr_sm_name(99999));
	cr_assert_str_eq(oxr_ox_tag_name(515), "OX_SYNC_BALL");
	cr_assert_eq(oxr_ox_tag_of("OX_DATA", 7), 514);
	cr_assert_str_eq(oxr_cmo_tag_name(OXR_CMO_ERROR2), "CMO_ERROR2");
	cr_assert_eq(oxr_cmo_tag_of("CMO_TREE", 8), 61);
	cr_assert_eq(oxr_cmo_tag_of("CMO_TRE", 7), 0);
}

Test(frame, bad_frames_and_small_buffers)
{
	oxr_ox_msg m = { .tag = 999 }, d = { .tag = OXR_OX_DATA, .cmo = NULL };
	oxr_ox_msg s = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_string(A, "abcdef") };
	uint8_t b[16];
	size_t n;

	cr_assert_eq(oxr_ox_encode(&m, 1, 0, b, sizeof(b), &n), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OX tag 999"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_ox_encode(&d, 1, 0, b, sizeof(b), &n), OXR_ERR_INVAL);
	cr_assert_eq(oxr_ox_encode(&s, 1, 0, b, sizeof(b), &n), OXR_ERR_SPACE);
	cr_assert_eq(oxr_ox_encode(&s, 1, 0, b, 0, &n), OXR_ERR_SPACE);
	/* without the serial: 4 + 8 + 6 = 18 bytes, still too many; 4 + 8 + 4 fits exactly */
	cr_assert_eq(oxr_ox_encode(&s, 0, 0, b, sizeof(b), &n), OXR_ERR_SPACE);
	s.cmo = oxr_cmo_new_string(A, "abcd");
	cr_assert_eq(oxr_ox_encode(&s, 0, 0, b, sizeof(b), &n), OXR_OK);
	cr_assert_eq(n, 16);
}

Test(frame, builders_reject_bad_arguments)
{
	cr_assert_null(oxr_cmo_new_node(A, 12345, 1));
	cr_assert(strstr(oxr_errmsg(), "unknown CMO tag 12345"));
	cr_assert_null(oxr_cmo_new_double(A, OXR_CMO_INT32, 1.0));
	cr_assert_null(oxr_cmo_new_bytes(A, OXR_CMO_LIST, "x", 1));
	cr_assert_str_eq(oxr_strerror(OXR_ERR_TRUNCATED), "input truncated");
	cr_assert_str_eq(oxr_strerror(12345), "unknown status");
}

Test(frame, encoder_rejects_inconsistent_objects)
{
	oxr_cmo *l = oxr_cmo_new_list(A, 2), *t = oxr_cmo_new_node(A, OXR_CMO_TREE, 3);
	oxr_cmo *p = oxr_cmo_new_node(A, OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE, 3);
	size_t n;

	l->kids[0] = oxr_cmo_null();
	cr_assert_eq(oxr_cmo_size(l, &n), OXR_ERR_INVAL, "an unset kid must not encode");
	t->kids[0] = oxr_cmo_new_int32(A, 1);
	t->kids[1] = t->kids[2] = oxr_cmo_new_list(A, 0);
	cr_assert_eq(oxr_cmo_size(t, &n), OXR_ERR_INVAL, "TREE name must be a STRING");
	p->kids[0] = p->kids[1] = p->kids[2] = oxr_cmo_new_int32(A, 1);
	cr_assert_eq(oxr_cmo_size(p, &n), OXR_ERR_INVAL, "pairs need an even number of kids");
}
