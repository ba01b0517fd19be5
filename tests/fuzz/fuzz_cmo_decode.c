/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the CMO/OX decoder.  Input: one control byte (bit 0
 * byte order, bit 1 OX frame instead of bare CMO, bit 2 frame without serial,
 * bits 3-7 piece size for the incremental run), then the wire bytes.
 *
 * Properties checked, beyond "no crash, no leak, no UB":
 *  - the zero-copy one-shot decoder and the copying incremental decoder fed
 *    in small pieces agree: same status, equal objects;
 *  - whatever decodes re-encodes canonically: encode(decode(x)) decodes to an
 *    equal object and encodes to the same bytes again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static oxr_status_t incremental(const uint8_t *b, size_t n, int ctl, oxr_arena *a,
				oxr_ox_msg *msg, size_t *used)
{
	size_t piece = 1 + (ctl >> 3) * 7, off = 0, u;
	oxr_decoder *d;
	oxr_status_t st = OXR_AGAIN;

	CHECK(oxr_decoder_create(&d, ctl & 2 ? OXR_DECODE_OX : OXR_DECODE_CMO, ctl & 1, NULL, a) == 0);
	oxr_decoder_set_serial(d, !(ctl & 4));
	while (off < n && st == OXR_AGAIN) {
		size_t k = n - off < piece ? n - off : piece;
		st = oxr_decoder_feed(d, b + off, k, 0, &u);
		off += u;
	}
	if (st == OXR_OK) {
		if (ctl & 2)
			*msg = *oxr_decoder_msg(d);
		else
			msg->cmo = oxr_decoder_cmo(d);
	}
	*used = off;
	oxr_decoder_destroy(d);
	return st == OXR_AGAIN ? OXR_ERR_TRUNCATED : st;
}

static void reencode(const oxr_cmo *o, int order, oxr_arena *a)
{
	uint8_t *b, *c;
	size_t n, m, used;
	oxr_cmo *back;

	CHECK(oxr_cmo_encode_alloc(o, order, &b, &n) == OXR_OK);
	CHECK(oxr_cmo_decode(b, n, order, NULL, a, &back, &used) == OXR_OK && used == n);
	CHECK(oxr_cmo_equal(o, back));
	CHECK(oxr_cmo_encode_alloc(back, order, &c, &m) == OXR_OK);
	CHECK(m == n && !memcmp(b, c, n));
	free(b);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oxr_arena *a;
	oxr_ox_msg one = { 0 }, inc = { 0 };
	oxr_status_t s1, s2;
	size_t u1 = 0, u2 = 0;
	int ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	data++;
	size--;
	CHECK(oxr_arena_create(&a) == OXR_OK);
	if (ctl & 2) {
		oxr_decoder *d;
		/* one-shot with the serial setting: the decoder API with BORROW */
		CHECK(oxr_decoder_create(&d, OXR_DECODE_OX, ctl & 1, NULL, a) == 0);
		oxr_decoder_set_serial(d, !(ctl & 4));
		s1 = oxr_decoder_feed(d, data, size, OXR_FEED_BORROW, &u1);
		if (s1 == OXR_OK)
			one = *oxr_decoder_msg(d);
		if (s1 == OXR_AGAIN)
			s1 = OXR_ERR_TRUNCATED;
		oxr_decoder_destroy(d);
	} else {
		s1 = oxr_cmo_decode(data, size, ctl & 1, NULL, a, &one.cmo, &u1);
	}
	s2 = incremental(data, size, ctl, a, &inc, &u2);
	CHECK(s1 == s2);
	if (s1 == OXR_OK) {
		CHECK(u1 == u2);
		CHECK(one.tag == inc.tag && one.serial == inc.serial && one.sm == inc.sm);
		CHECK(oxr_cmo_equal(one.cmo, inc.cmo));
		if (one.cmo)
			reencode(one.cmo, ctl & 1, a);
	} else {
		CHECK(s1 < 0);
	}
	oxr_arena_destroy(a);
	return 0;
}
