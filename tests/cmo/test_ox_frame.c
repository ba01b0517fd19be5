/* SPDX-License-Identifier: MIT */
/* OX frames: tags and serials in both orders, names, the frame-without-serial
 * form of the old spec examples, and bad frames on encode. */
#include <criterion/criterion.h>

#include "oxr/ox.h"
#include "cmo_encode.h"
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

/* Feeds b whole (one piece: small leaf frames take the decoder's one-go
 * path) or a byte at a time (always the step-by-step walk). */
static oxr_status_t feed_as(const uint8_t *b, size_t n, int order, int serial,
			    const oxr_cmo_limits *lim, unsigned flags, int bytewise,
			    oxr_decoder **out, size_t *used)
{
	oxr_status_t st = OXR_AGAIN;
	size_t u, at = 0;

	cr_assert_eq(oxr_decoder_create(out, OXR_DECODE_OX, order, lim, A), OXR_OK);
	oxr_decoder_set_serial(*out, serial);
	if (!bytewise) {
		st = oxr_decoder_feed(*out, b, n, flags, &u);
		*used = u;
		return st;
	}
	while (st == OXR_AGAIN && at < n) {
		st = oxr_decoder_feed(*out, b + at, 1, flags, &u);
		at += u;
	}
	*used = at;
	return st;
}

Test(frame, a_whole_small_frame_decodes_as_the_walk_does)
{
	static const struct {
		const char *hex;
		int order, serial;
		oxr_status_t want;
	} cases[] = {
		{ "00000202 00000007 00000002 80000001 00000202", 0, 1, OXR_OK },     /* INT32 */
		{ "02020000 07000000 04000000 02000000 6869 0202", 1, 1, OXR_OK },    /* STRING */
		{ "00000202 00000004 00000004 00000000", 0, 1, OXR_OK },              /* "" */
		{ "00000202 00000009 00000003 00000008 0102030405060708 00", 0, 1, OXR_OK },   /* DATUM */
		{ "00000202 00000002 fffffffe", 0, 0, OXR_OK },                       /* no serial */
		{ "00000202 00000001 00000004 ffffffff 00", 0, 1, OXR_ERR_PROTO },   /* length < 0 */
		{ "00000202 00000001 00000004 00000005 6869", 0, 1, OXR_AGAIN },     /* short */
		{ "00000202 00000001 0000dead 00000000", 0, 1, OXR_ERR_PROTO },      /* unknown CMO */
		{ "00000202 00000001 00000014 00000001 00000002 00000005", 0, 1, OXR_OK }, /* a list */
	};
	oxr_cmo_limits lims[4];
	size_t c, k;

	for (k = 0; k < 4; k++)
		oxr_cmo_limits_default(&lims[k]);
	lims[1].max_object_bytes = 1; /* "hi" and the datum are over it */
	lims[2].max_objects = 0;
	lims[3].max_total_bytes = 17;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (k = 0; k < 4; k++) {
			uint8_t b[64];
			size_t n = unhex(cases[c].hex, b), u1, u2;
			unsigned fl;
			for (fl = 0; fl <= OXR_FEED_BORROW; fl += OXR_FEED_BORROW) {
				oxr_decoder *d1, *d2;
				oxr_status_t s1 = feed_as(b, n, cases[c].order, cases[c].serial, &lims[k],
							  fl, 0, &d1, &u1);
				oxr_status_t s2 = feed_as(b, n, cases[c].order, cases[c].serial, &lims[k],
							  fl, 1, &d2, &u2);
				const oxr_ox_msg *m1 = oxr_decoder_msg(d1), *m2 = oxr_decoder_msg(d2);
				cr_assert_eq(s1, s2, "case %zu, limits %zu: %d whole, %d byte by byte", c,
					     k, s1, s2);
				if (k == 0)
					cr_assert_eq(s1, cases[c].want, "case %zu: %d", c, s1);
				if (s1 == OXR_OK) {
					cr_assert_eq(u1, u2, "case %zu: %zu bytes taken, not %zu", c, u1, u2);
					cr_assert_eq(m1->tag, m2->tag);
					cr_assert_eq(m1->serial, m2->serial);
					cr_assert_eq(m1->cmo->tag, m2->cmo->tag);
					cr_assert_eq(m1->cmo->order, m2->cmo->order);
					cr_assert_eq(m1->cmo->nkids, m2->cmo->nkids);
					cr_assert_eq(m1->cmo->v.i32, m2->cmo->v.i32, "case %zu", c);
					cr_assert_eq(m1->cmo->len, m2->cmo->len, "case %zu", c);
					cr_assert(!m1->cmo->len ||
						  !memcmp(m1->cmo->data, m2->cmo->data, m1->cmo->len));
					cr_assert_eq(oxr_decoder_offset(d1), oxr_decoder_offset(d2));
				}
				oxr_decoder_destroy(d1);
				oxr_decoder_destroy(d2);
			}
		}
}

/* The gather list oxr sends a frame as (one pass into a small buffer, the
 * leaf path, or two walks and a malloc) holds exactly the flat encoding. */
Test(frame, a_gather_list_holds_the_flat_encoding)
{
	static uint8_t blob[200000];
	oxr_cmo *list = oxr_cmo_new_list(A, 2);
	oxr_cmo *objs[] = {
		oxr_cmo_new_int32(A, -7), oxr_cmo_new_string(A, "hi"), oxr_cmo_new_string(A, ""),
		oxr_cmo_new_bytes(A, OXR_CMO_DATUM, blob, 100),
		oxr_cmo_new_bytes(A, OXR_CMO_DATUM, blob, 120),
		oxr_cmo_new_bytes(A, OXR_CMO_DATUM, blob, sizeof(blob)), list, oxr_cmo_null(),
		oxr_cmo_new_double(A, OXR_CMO_64BIT_MACHINE_DOUBLE, 2.5),
	};
	size_t i, k, caps[] = { 0, 16, 128 };
	int order;

	fill_pattern(blob, sizeof(blob), 7, 0);
	list->kids[0] = oxr_cmo_new_int32(A, 1);
	list->kids[1] = oxr_cmo_new_string(A, "two");
	for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
		for (order = 0; order < 2; order++)
			for (k = 0; k < 3; k++) {
				oxr_ox_msg m = { .tag = OXR_OX_DATA, .serial = 0x1234, .cmo = objs[i] };
				uint8_t small[128], *flat = malloc(sizeof(blob) + 64);
				struct iovec one, *iov;
				void *mem;
				int niov, j;
				size_t n, total, at = 0;
				cr_assert_not_null(objs[i]);
				cr_assert_eq(oxr_ox_encode(&m, 1, order, flat, sizeof(blob) + 64, &n), OXR_OK);
				cr_assert_eq(oxr_ox_encode_iov(&m, order, 16384, caps[k] ? small : NULL,
							       caps[k], &one, &mem, &iov, &niov, &total),
					     OXR_OK, "%s", oxr_errmsg());
				cr_assert_eq(total, n, "object %zu, cap %zu: %zu bytes, not %zu", i,
					     caps[k], total, n);
				for (j = 0; j < niov; j++) {
					cr_assert(at + iov[j].iov_len <= n);
					cr_assert(!memcmp(flat + at, iov[j].iov_base, iov[j].iov_len),
						  "object %zu, order %d, cap %zu: iovec %d differs", i, order,
						  caps[k], j);
					at += iov[j].iov_len;
				}
				cr_assert_eq(at, n);
				cr_assert_eq(mem == NULL, iov == &one, "the small buffer or a malloc");
				free(mem);
				free(flat);
			}
}
