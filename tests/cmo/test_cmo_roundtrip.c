/* SPDX-License-Identifier: MIT */
/*
 * Randomized round trips: random nested objects of every tag, encoded in
 * both orders, decoded one-shot (zero copy) and incrementally from random
 * pieces (copying), compared as values and re-encoded to the same bytes.
 */
#include <criterion/criterion.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "cmo_random.h"
#include "test_util.h"

TWO_ARENAS();
TestSuite(roundtrip, .init = setup, .fini = teardown, .timeout = 120);

static void reencode_same(const oxr_cmo *o, int order, const uint8_t *b, size_t n)
{
	uint8_t *c;
	size_t m;

	cr_assert_eq(oxr_cmo_encode_alloc(o, order, &c, &m), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(m, n);
	cr_assert(!memcmp(b, c, n), "re-encoding differs");
	free(c);
}

/* Feeds b in pieces whose sizes come from the generator (1 byte at times). */
static oxr_cmo *feed_pieces(oxr_decoder *d, const uint8_t *b, size_t n, uint64_t *s)
{
	size_t off = 0, used;
	oxr_status_t st = OXR_AGAIN;

	while (off < n) {
		size_t k = rnd_below(s, 4) == 0 ? 1 : 1 + rnd_below(s, 600);
		if (k > n - off)
			k = n - off;
		st = oxr_decoder_feed(d, b + off, k, 0, &used);
		cr_assert(st == OXR_OK || st == OXR_AGAIN, "feed: %d %s", st, oxr_decoder_error(d));
		off += used;
		if (st == OXR_OK)
			break;
		cr_assert_eq(used, k);
	}
	cr_assert_eq(st, OXR_OK, "object not finished after %zu of %zu bytes", off, n);
	cr_assert_eq(off, n);
	return oxr_decoder_cmo(d);
}

Test(roundtrip, random_objects_both_orders)
{
	uint64_t s = rnd_seed();
	int i, order;

	cr_log_info("OXR_TEST_SEED=%#llx", (unsigned long long)s);
	for (i = 0; i < 600; i++) {
		oxr_cmo *o = rnd_cmo(A, &s, 6);
		for (order = 0; order < 2; order++) {
			oxr_decoder *d;
			uint8_t *b;
			size_t n, used, sz;
			oxr_cmo *one, *inc;

			cr_assert_eq(oxr_cmo_encode_alloc(o, order, &b, &n), OXR_OK, "%s", oxr_errmsg());
			cr_assert_eq(oxr_cmo_size(o, &sz), OXR_OK);
			cr_assert_eq(sz, n);
			cr_assert_eq(oxr_cmo_decode(b, n, order, NULL, B, &one, &used), OXR_OK,
				     "object %d order %d: %s", i, order, oxr_errmsg());
			cr_assert_eq(used, n);
			cr_assert(oxr_cmo_equal(o, one), "object %d order %d differs", i, order);
			reencode_same(one, order, b, n);

			cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, order, NULL, B), OXR_OK);
			inc = feed_pieces(d, b, n, &s);
			free(b); /* the copying decoder must not point into the input */
			cr_assert(oxr_cmo_equal(o, inc), "object %d order %d: incremental differs", i, order);
			oxr_decoder_destroy(d);
		}
		if (i % 50 == 49) {
			oxr_arena_reset(A);
			oxr_arena_reset(B);
		}
	}
}

Test(roundtrip, decoded_in_one_order_encodes_in_the_other)
{
	uint64_t s = rnd_seed() ^ 0x9e3779b97f4a7c15ull;
	int i;

	for (i = 0; i < 300; i++) {
		oxr_cmo *o = rnd_cmo(A, &s, 5), *back;
		uint8_t *nbo, *le, *conv;
		size_t n1, n2, n3, used;

		cr_assert_eq(oxr_cmo_encode_alloc(o, OXR_ORDER_NETWORK, &nbo, &n1), OXR_OK);
		cr_assert_eq(oxr_cmo_encode_alloc(o, OXR_ORDER_LITTLE, &le, &n2), OXR_OK);
		cr_assert_eq(n1, n2);
		cr_assert_eq(oxr_cmo_decode(nbo, n1, OXR_ORDER_NETWORK, NULL, B, &back, &used), OXR_OK);
		cr_assert_eq(oxr_cmo_encode_alloc(back, OXR_ORDER_LITTLE, &conv, &n3), OXR_OK);
		cr_assert_eq(n3, n2);
		cr_assert(!memcmp(conv, le, n2), "object %d: network->little conversion differs", i);
		free(nbo);
		free(le);
		free(conv);
	}
}

Test(roundtrip, byte_by_byte_feed)
{
	uint64_t s = rnd_seed() + 7;
	int i;

	for (i = 0; i < 100; i++) {
		oxr_cmo *o = rnd_cmo(A, &s, 4);
		oxr_decoder *d;
		uint8_t *b;
		size_t n, k, used;
		oxr_status_t st = OXR_AGAIN;

		cr_assert_eq(oxr_cmo_encode_alloc(o, i & 1, &b, &n), OXR_OK);
		cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, i & 1, NULL, B), OXR_OK);
		for (k = 0; k < n; k++) {
			st = oxr_decoder_feed(d, b + k, 1, 0, &used);
			cr_assert_eq(used, 1);
			cr_assert_eq(st, k + 1 < n ? OXR_AGAIN : OXR_OK, "byte %zu of %zu: %d %s", k, n,
				     st, oxr_decoder_error(d));
		}
		cr_assert(oxr_cmo_equal(o, oxr_decoder_cmo(d)));
		oxr_decoder_destroy(d);
		free(b);
	}
}

Test(roundtrip, stream_of_frames_in_random_pieces)
{
	enum { N = 200 };
	uint64_t s = rnd_seed() + 11;
	oxr_ox_msg sent[N];
	uint8_t *stream = NULL;
	size_t total = 0, off = 0, used;
	oxr_decoder *d;
	int i, got = 0;

	for (i = 0; i < N; i++) {
		uint8_t *b;
		size_t n;
		int kind = (int)rnd_below(&s, 3);
		sent[i] = (oxr_ox_msg){ .tag = kind == 0 ? OXR_OX_DATA : kind == 1 ? OXR_OX_COMMAND
										   : OXR_OX_SYNC_BALL,
					.serial = i, .sm = (int32_t)rnd_next(&s) };
		if (kind == 0)
			sent[i].cmo = rnd_cmo(A, &s, 4);
		cr_assert_eq(oxr_ox_encode_alloc(&sent[i], 1, OXR_ORDER_LITTLE, &b, &n), OXR_OK);
		stream = realloc(stream, total + n);
		memcpy(stream + total, b, n);
		total += n;
		free(b);
	}
	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_OX, OXR_ORDER_LITTLE, NULL, B), OXR_OK);
	while (off < total) {
		size_t k = 1 + rnd_below(&s, 300);
		if (k > total - off)
			k = total - off;
		/* one piece may hold the end of a frame and the start of the next */
		while (k > 0) {
			oxr_status_t st = oxr_decoder_feed(d, stream + off, k, 0, &used);
			cr_assert(st == OXR_OK || st == OXR_AGAIN, "%s", oxr_decoder_error(d));
			off += used;
			k -= used;
			if (st == OXR_OK) {
				const oxr_ox_msg *m = oxr_decoder_msg(d);
				cr_assert_lt(got, N);
				cr_assert_eq(m->tag, sent[got].tag);
				cr_assert_eq(m->serial, got, "frames out of order");
				if (m->tag == OXR_OX_COMMAND)
					cr_assert_eq(m->sm, sent[got].sm);
				if (m->tag == OXR_OX_DATA)
					cr_assert(oxr_cmo_equal(m->cmo, sent[got].cmo));
				got++;
			}
		}
	}
	cr_assert_eq(got, N);
	oxr_decoder_destroy(d);
	free(stream);
}

Test(roundtrip, large_payloads_zero_copy_and_copied)
{
	size_t n = 3u << 20, len, used;
	char *big = malloc(n);
	uint8_t *b;
	oxr_cmo *o, *back;
	oxr_decoder *d;
	size_t i;

	fill_pattern(big, n, 131, 0);
	o = oxr_cmo_new_bytes(A, OXR_CMO_DATUM, big, n);
	cr_assert_eq(oxr_cmo_encode_alloc(o, OXR_ORDER_NETWORK, &b, &len), OXR_OK);
	cr_assert_eq(oxr_cmo_decode(b, len, OXR_ORDER_NETWORK, NULL, B, &back, &used), OXR_OK);
	cr_assert_eq(back->data, b + 8, "one-shot decode must point into the buffer");
	cr_assert(oxr_cmo_equal(o, back));

	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, OXR_ORDER_NETWORK, NULL, B), OXR_OK);
	for (i = 0; i < len; i += 65536) {
		size_t k = len - i < 65536 ? len - i : 65536;
		oxr_status_t st = oxr_decoder_feed(d, b + i, k, 0, &used);
		cr_assert_eq(st, i + k < len ? OXR_AGAIN : OXR_OK);
	}
	back = oxr_decoder_cmo(d);
	cr_assert(back->data < b || back->data >= b + len, "copying decode must not alias");
	cr_assert(oxr_cmo_equal(o, back));
	oxr_decoder_destroy(d);
	free(b);
	free(big);
}

/* ZZ values through GMP and back, for every word count parity and sign, in
 * both orders (the limb fast path and its odd top word). */
Test(roundtrip, zz_values_through_gmp)
{
	uint64_t s = rnd_seed() + 13;
	mpz_t z, back;
	int words, order, neg;

	mpz_inits(z, back, NULL);
	for (words = 0; words < 70; words++)
		for (neg = 0; neg < 2; neg++)
			for (order = 0; order < 2; order++) {
				oxr_cmo *o, *d;
				uint8_t *b;
				size_t n, used;
				int i;

				mpz_set_ui(z, words ? 1 : 0);
				for (i = 1; i < words; i++) {
					mpz_mul_2exp(z, z, 32);
					mpz_add_ui(z, z, (uint32_t)rnd_next(&s));
				}
				if (neg)
					mpz_neg(z, z);
				o = oxr_cmo_new_zz(A, z);
				cr_assert_eq(o->len, 4u * (size_t)words);
				cr_assert_eq(oxr_cmo_encode_alloc(o, order, &b, &n), OXR_OK);
				cr_assert_eq(oxr_cmo_decode(b, n, order, NULL, B, &d, &used), OXR_OK);
				cr_assert_eq(oxr_cmo_get_mpz(d, back), OXR_OK);
				cr_assert_eq(mpz_cmp(z, back), 0, "%d words, order %d, neg %d", words,
					     order, neg);
				if (words)
					cr_assert_eq(oxr_cmo_word(d, (size_t)words - 1), 1,
						     "the most significant word comes last");
				free(b);
			}
	mpz_clears(z, back, NULL);
}

/* Reading straight into payloads (oxr_decoder_direct) gives the same objects
 * as feeding, whatever the piece sizes. */
Test(roundtrip, direct_payload_reads)
{
	uint64_t s = rnd_seed() + 17;
	int i, directs = 0;

	for (i = 0; i < 300; i++) {
		oxr_cmo *o = rnd_cmo(A, &s, 4);
		oxr_decoder *d;
		uint8_t *b;
		size_t n, off = 0, used;
		oxr_status_t st = OXR_AGAIN;

		cr_assert_eq(oxr_cmo_encode_alloc(o, i & 1, &b, &n), OXR_OK);
		cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, i & 1, NULL, B), OXR_OK);
		while (st == OXR_AGAIN) {
			void *dst;
			size_t room = oxr_decoder_direct(d, &dst), k;
			if (room) {
				k = 1 + rnd_below(&s, (uint32_t)(room < 3000 ? room : 3000));
				if (k > n - off)
					k = n - off;
				memcpy(dst, b + off, k);
				oxr_decoder_advance(d, k);
				off += k;
				directs++;
				k = 0; /* then a feed of nothing */
			} else {
				k = 1 + rnd_below(&s, 50);
				if (k > n - off)
					k = n - off;
			}
			st = oxr_decoder_feed(d, b + off, k, 0, &used);
			off += used;
		}
		cr_assert_eq(st, OXR_OK, "%s", oxr_decoder_error(d));
		cr_assert_eq(off, n);
		cr_assert(oxr_cmo_equal(o, oxr_decoder_cmo(d)));
		oxr_decoder_destroy(d);
		free(b);
	}
	cr_assert_gt(directs, 100, "the direct path ran");
}
