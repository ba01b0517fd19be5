/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the bconv text parser: anything that parses prints,
 * parses again to an equal object with the same text, and survives the
 * binary codec in both orders.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/cmo_text.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oxr_arena *a;
	oxr_text_item it, again;
	size_t used, n, m, u;
	char *t1, *t2;
	int order;

	CHECK(oxr_arena_create(&a) == OXR_OK);
	if (oxr_text_parse((const char *)data, size, a, &it, &used) == OXR_OK) {
		CHECK(used <= size);
		if (it.is_frame)
			CHECK(oxr_text_print_msg(&it.msg, &t1, &n) == OXR_OK);
		else
			CHECK(oxr_text_print_cmo(it.msg.cmo, &t1, &n) == OXR_OK);
		CHECK(oxr_text_parse(t1, n, a, &again, &used) == OXR_OK && used == n);
		CHECK(again.is_frame == it.is_frame && oxr_cmo_equal(again.msg.cmo, it.msg.cmo));
		if (it.is_frame)
			CHECK(oxr_text_print_msg(&again.msg, &t2, &m) == OXR_OK);
		else
			CHECK(oxr_text_print_cmo(again.msg.cmo, &t2, &m) == OXR_OK);
		CHECK(m == n && !memcmp(t1, t2, n));
		free(t1);
		free(t2);
		for (order = 0; order < 2 && it.msg.cmo; order++) {
			uint8_t *b;
			oxr_cmo *back;
			CHECK(oxr_cmo_encode_alloc(it.msg.cmo, order, &b, &n) == OXR_OK);
			CHECK(oxr_cmo_decode(b, n, order, NULL, a, &back, &u) == OXR_OK && u == n);
			CHECK(oxr_cmo_equal(back, it.msg.cmo));
			free(b);
		}
	}
	oxr_arena_destroy(a);
	return 0;
}
