/* SPDX-License-Identifier: MIT */
/*
 * Every error path of the decoder: truncation at every byte, negative and
 * huge lengths, limits, nesting bombs, wrong kinds of kids, unknown tags, and
 * random mutations of valid messages.  Hostile bytes must give an error code
 * and a message with the byte offset, never a crash or a large allocation.
 */
#include <criterion/criterion.h>
#include <malloc.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "cmo_random.h"
#include "test_util.h"

TWO_ARENAS();
TestSuite(errors, .init = setup, .fini = teardown, .timeout = 120);

/* Bytes malloc has handed out, mapped chunks included. */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static oxr_status_t dec_hex(const char *hex, int order, const oxr_cmo_limits *lim)
{
	static uint8_t b[1 << 16];
	size_t n = unhex(hex, b), used;
	oxr_cmo *o;

	return oxr_cmo_decode(b, n, order, lim, A, &o, &used);
}

static void expect(const char *hex, oxr_status_t want, const char *needle)
{
	oxr_status_t st = dec_hex(hex, OXR_ORDER_NETWORK, NULL);

	cr_assert_eq(st, want, "%s: got %d (%s)", hex, st, oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), needle), "%s: message '%s' lacks '%s'", hex, oxr_errmsg(),
		  needle);
}

Test(errors, truncation_at_every_byte)
{
	uint64_t s = rnd_seed() + 3;
	int i;

	for (i = 0; i < 150; i++) {
		oxr_cmo *o = rnd_cmo(A, &s, 5), *out;
		uint8_t *b;
		size_t n, k, used;

		cr_assert_eq(oxr_cmo_encode_alloc(o, i & 1, &b, &n), OXR_OK);
		if (n > 4096) { /* every cut of a big one is quadratic: take another */
			free(b);
			i--;
			continue;
		}
		for (k = 0; k < n; k++) {
			/* a copy of exactly k bytes, so ASan sees any read past the end */
			uint8_t *c = malloc(k ? k : 1);
			oxr_decoder *d;
			oxr_status_t st;

			memcpy(c, b, k);
			st = oxr_cmo_decode(c, k, i & 1, NULL, B, &out, &used);
			cr_assert_eq(st, OXR_ERR_TRUNCATED, "object %d cut at %zu of %zu: %d", i, k, n, st);
			cr_assert(strstr(oxr_errmsg(), "byte"), "%s", oxr_errmsg());
			cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, i & 1, NULL, B), OXR_OK);
			cr_assert_eq(oxr_decoder_feed(d, c, k, 0, &used), OXR_AGAIN);
			cr_assert_eq(used, k);
			oxr_decoder_destroy(d);
			free(c);
			oxr_arena_reset(B);
		}
		free(b);
		if (i % 20 == 19)
			oxr_arena_reset(A);
	}
}

Test(errors, negative_lengths)
{
	expect("00000004 ffffffff", OXR_ERR_PROTO, "negative length -1 in CMO_STRING");
	expect("00000003 80000000", OXR_ERR_PROTO, "negative length");
	expect("00000011 fffffffe", OXR_ERR_PROTO, "negative count -2 in CMO_LIST");
	expect("00000013 ffffffff", OXR_ERR_PROTO, "negative length -1 in CMO_MONOMIAL32");
	expect("00000014 80000000", OXR_ERR_PROTO, "out of range");
	expect("00000029 ffffff00", OXR_ERR_PROTO, "negative length");
	expect("0000001f ffffffff", OXR_ERR_PROTO, "negative count");
}

Test(errors, offsets_name_the_bad_field)
{
	/* LIST of 2: INT32 1, then a STRING with a negative length at byte 16 */
	expect("00000011 00000002 00000002 00000001 00000004 ffffffff", OXR_ERR_PROTO,
	       "at byte 16");
	expect("00000011 00000002 00000002 00000001 00000004 ffffffff", OXR_ERR_PROTO,
	       "inside CMO_STRING at byte 16");
	expect("00000011 00000001 00001234", OXR_ERR_PROTO, "at byte 8: unknown CMO tag 4660");
}

Test(errors, huge_lengths_allocate_nothing_big)
{
	oxr_decoder *d;
	uint8_t b[64];
	size_t n, used;

	/* a 2 GiB-1 string and a 2^31-1 element list, claimed but never sent */
	expect("00000004 3fffffff 414141", OXR_ERR_TRUNCATED, "input ends");
	expect("00000004 7fffffff 414141", OXR_ERR_LIMIT, "OXR_CMO_MAX_OBJECT_BYTES");
	expect("00000011 03ffffff 00000001", OXR_ERR_TRUNCATED, "input ends");
	expect("00000014 7fffffff 00000001", OXR_ERR_LIMIT, "OXR_CMO_MAX_OBJECT_BYTES");
	expect("00000011 7fffffff", OXR_ERR_LIMIT, "OXR_CMO_MAX_TOTAL_BYTES");
	cr_assert_lt(oxr_arena_bytes(A), 1u << 20, "arena grew to %zu", oxr_arena_bytes(A));

	/* incremental: a claim costs at most the preallocation bound, then memory
	 * follows the bytes that really come (measured on the heap itself) */
	oxr_arena_reset(A);
	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, OXR_ORDER_NETWORK, NULL, A), OXR_OK);
	n = unhex("00000004 3fffffff 41424344", b);
	{
		size_t before = heap_in_use();
		cr_assert_eq(oxr_decoder_feed(d, b, n, 0, &used), OXR_AGAIN);
		cr_assert_lt(heap_in_use() - before, OXR_CMO_DEFAULT_PREALLOC_BYTES + (1u << 20),
			     "a 1 GiB claim took %zu bytes", heap_in_use() - before);
	}
	oxr_decoder_destroy(d); /* frees the partial payload (LeakSanitizer checks) */

	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, OXR_ORDER_NETWORK, NULL, A), OXR_OK);
	n = unhex("00000011 03ffffff 00000001 00000001", b);
	cr_assert_eq(oxr_decoder_feed(d, b, n, 0, &used), OXR_AGAIN);
	cr_assert_lt(oxr_arena_bytes(A), 1u << 20);
	oxr_decoder_destroy(d);
}

Test(errors, configured_limits)
{
	oxr_cmo_limits lim;

	oxr_cmo_limits_default(&lim);
	lim.max_object_bytes = 4;
	cr_assert_eq(dec_hex("00000004 00000005 48656c6c6f", 0, &lim), OXR_ERR_LIMIT);
	cr_assert(strstr(oxr_errmsg(), "payload of 5 bytes exceeds 4"), "%s", oxr_errmsg());
	cr_assert_eq(dec_hex("00000004 00000004 48656c6c", 0, &lim), OXR_OK);

	oxr_cmo_limits_default(&lim);
	lim.max_total_bytes = 12;
	cr_assert_eq(dec_hex("00000004 00000005 48656c6c6f", 0, &lim), OXR_ERR_LIMIT);
	lim.max_total_bytes = 13;
	cr_assert_eq(dec_hex("00000004 00000005 48656c6c6f", 0, &lim), OXR_OK);

	oxr_cmo_limits_default(&lim);
	lim.max_objects = 3;
	cr_assert_eq(dec_hex("00000011 00000002 00000001 00000001", 0, &lim), OXR_OK);
	cr_assert_eq(dec_hex("00000011 00000003 00000001 00000001 00000001", 0, &lim), OXR_ERR_LIMIT);
	cr_assert(strstr(oxr_errmsg(), "OXR_CMO_MAX_OBJECTS"), "%s", oxr_errmsg());
}

Test(errors, limits_from_environment)
{
	oxr_cmo_limits lim;

	setenv("OXR_CMO_MAX_DEPTH", "7", 1);
	cr_assert_eq(oxr_cmo_limits_from_env(&lim), OXR_OK);
	cr_assert_eq(lim.max_depth, 7);
	setenv("OXR_CMO_MAX_DEPTH", "seven", 1);
	cr_assert_eq(oxr_cmo_limits_from_env(&lim), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_CMO_MAX_DEPTH=seven"), "%s", oxr_errmsg());
	unsetenv("OXR_CMO_MAX_DEPTH");
	setenv("OXR_CMO_MAX_OBJECT_BYTES", "0x100", 1);
	cr_assert_eq(oxr_cmo_limits_from_env(&lim), OXR_OK);
	cr_assert_eq(lim.max_object_bytes, 256);
	unsetenv("OXR_CMO_MAX_OBJECT_BYTES");
}

Test(errors, nesting_bombs)
{
	enum { DEPTH = 100000 };
	uint8_t *b = malloc(DEPTH * 8 + 4);
	size_t i, used;
	oxr_cmo *o;
	oxr_cmo_limits lim;
	oxr_status_t st;

	/* LIST of 1 element, nested DEPTH times, then NULL */
	for (i = 0; i < DEPTH; i++) {
		uint32_t h[2] = { __builtin_bswap32(17), __builtin_bswap32(1) };
		memcpy(b + 8 * i, h, 8);
	}
	memcpy(b + 8 * DEPTH, "\0\0\0\1", 4);
	st = oxr_cmo_decode(b, DEPTH * 8 + 4, OXR_ORDER_NETWORK, NULL, A, &o, &used);
	cr_assert_eq(st, OXR_ERR_LIMIT);
	cr_assert(strstr(oxr_errmsg(), "nesting deeper than 512"), "%s", oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "at byte 4096"), "%s", oxr_errmsg());

	/* exactly at the limit is fine */
	oxr_cmo_limits_default(&lim);
	lim.max_depth = 1000;
	memcpy(b + 8 * 1000, "\0\0\0\1", 4);
	cr_assert_eq(oxr_cmo_decode(b, 1000 * 8 + 4, OXR_ORDER_NETWORK, &lim, A, &o, &used), OXR_OK,
		     "%s", oxr_errmsg());
	cr_assert_eq(used, 8004);
	/* and the encoder writes it back, recursion and all */
	{
		uint8_t *c;
		size_t n;
		cr_assert_eq(oxr_cmo_encode_alloc(o, OXR_ORDER_NETWORK, &c, &n), OXR_OK);
		cr_assert_eq(n, 8004);
		cr_assert(!memcmp(c, b, n));
		free(c);
	}
	/* INDETERMINATE chains and QQ-free kid chains nest too */
	for (i = 0; i < DEPTH; i++)
		memcpy(b + 4 * i, "\0\0\0\x3c", 4);
	cr_assert_eq(oxr_cmo_decode(b, DEPTH * 4, OXR_ORDER_NETWORK, NULL, A, &o, &used),
		     OXR_ERR_LIMIT);
	free(b);
}

Test(errors, unknown_tags)
{
	expect("00000000", OXR_ERR_PROTO, "unknown CMO tag 0");
	expect("00000010", OXR_ERR_PROTO, "unknown CMO tag 16");
	expect("7f000003", OXR_ERR_PROTO, "0x7f000003");
	expect("ffffffff", OXR_ERR_PROTO, "unknown CMO tag -1");
}

Test(errors, wrong_kinds_of_kids)
{
	expect("00000005 00000002 00000001", OXR_ERR_PROTO, "CMO_INT32 where CMO_LIST is required");
	expect("0000003d 00000002 00000001", OXR_ERR_PROTO, "where CMO_STRING is required");
	expect("0000003d 00000004 00000000 00000004 00000000", OXR_ERR_PROTO,
	       "CMO_STRING where CMO_LIST is required");
	expect("0000001a 00000001", OXR_ERR_PROTO, "CMO_NULL where CMO_STRING is required");
	expect("0000001f 00000001 00000001", OXR_ERR_PROTO, "ring definition");
	expect("0000001f 00000001 00000018 00000001", OXR_ERR_PROTO,
	       "CMO_NULL where CMO_MONOMIAL32 or CMO_ZERO is required");
	expect("0000003e 00000011 00000000 00000001", OXR_ERR_PROTO, "where CMO_TREE is required");
	/* QQ with denominator 0 */
	expect("00000015 00000001 00000001 00000000", OXR_ERR_PROTO, "denominator 0");
}

Test(errors, ox_frames)
{
	uint8_t b[64];
	size_t n, used;
	oxr_ox_msg m;

	n = unhex("00000209 00000001 00000001", b);
	cr_assert_eq(oxr_ox_decode(b, n, 0, NULL, A, &m, &used), OXR_ERR_PROTO);
	cr_assert(strstr(oxr_errmsg(), "unknown OX tag 521"), "%s", oxr_errmsg());
	n = unhex("7fcdef30 00000001 00000001", b);
	cr_assert_eq(oxr_ox_decode(b, n, 0, NULL, A, &m, &used), OXR_ERR_UNSUPPORTED);
	n = unhex("00000202 00000001 00000004 ffffffff", b);
	cr_assert_eq(oxr_ox_decode(b, n, 0, NULL, A, &m, &used), OXR_ERR_PROTO);
	cr_assert(strstr(oxr_errmsg(), "at byte 12"), "%s", oxr_errmsg());
	n = unhex("00000201 00000001 000001", b);
	cr_assert_eq(oxr_ox_decode(b, n, 0, NULL, A, &m, &used), OXR_ERR_TRUNCATED);
}

Test(errors, failed_decoder_stays_failed_until_reset)
{
	oxr_decoder *d;
	uint8_t b[32];
	size_t n, used;

	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_CMO, 0, NULL, A), OXR_OK);
	n = unhex("00000004 ffffffff", b);
	cr_assert_eq(oxr_decoder_feed(d, b, n, 0, &used), OXR_ERR_PROTO);
	n = unhex("00000001", b);
	cr_assert_eq(oxr_decoder_feed(d, b, n, 0, &used), OXR_ERR_PROTO);
	cr_assert(strstr(oxr_decoder_error(d), "negative length"));
	oxr_decoder_reset(d);
	cr_assert_eq(oxr_decoder_feed(d, b, n, 0, &used), OXR_OK);
	cr_assert_eq(oxr_decoder_cmo(d)->tag, OXR_CMO_NULL);
	cr_assert_str_eq(oxr_decoder_error(d), "");
	oxr_decoder_destroy(d);
}

/* Random byte flips, insertions and cuts of valid encodings: whatever the
 * decoder accepts must encode and decode again to the same value. */
Test(errors, random_mutations)
{
	uint64_t s = rnd_seed() + 5;
	int i, ok = 0, bad = 0;

	for (i = 0; i < 20000; i++) {
		oxr_cmo *o = rnd_cmo(A, &s, 4), *back, *again;
		uint8_t *b, *c;
		size_t n, m, used, k;
		oxr_status_t st;

		cr_assert_eq(oxr_cmo_encode_alloc(o, i & 1, &b, &n), OXR_OK);
		for (k = 1 + rnd_below(&s, 4); k > 0; k--) {
			size_t at = rnd_below(&s, (uint32_t)n);
			switch (rnd_below(&s, 3)) {
			case 0: b[at] ^= (uint8_t)(1u << rnd_below(&s, 8)); break;
			case 1: b[at] = (uint8_t)rnd_next(&s); break;
			default: if (at + 4 <= n) memset(b + at, 0xff, 4); break;
			}
		}
		st = oxr_cmo_decode(b, n, i & 1, NULL, A, &back, &used);
		if (st == OXR_OK) {
			ok++;
			cr_assert_eq(oxr_cmo_encode_alloc(back, i & 1, &c, &m), OXR_OK, "%s", oxr_errmsg());
			cr_assert_eq(oxr_cmo_decode(c, m, i & 1, NULL, A, &again, &used), OXR_OK);
			cr_assert(oxr_cmo_equal(back, again));
			free(c);
		} else {
			bad++;
			cr_assert(st == OXR_ERR_PROTO || st == OXR_ERR_TRUNCATED || st == OXR_ERR_LIMIT,
				  "status %d", st);
			cr_assert(strstr(oxr_errmsg(), "decode error at byte"), "%s", oxr_errmsg());
		}
		free(b);
		if (i % 200 == 199)
			oxr_arena_reset(A);
	}
	cr_log_info("mutations: %d decoded, %d rejected", ok, bad);
	cr_assert_gt(bad, 1000);
}
