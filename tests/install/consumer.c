/* SPDX-License-Identifier: MIT */
/* Encodes and decodes one object through an installed liboxr. */
#include <stdio.h>
#include <oxr/oxr.h>

int main(void)
{
	oxr_arena *a;
	oxr_cmo *o, *back;
	uint8_t buf[64];
	size_t n, used;

	if (oxr_arena_create(&a) || !(o = oxr_cmo_new_zz_si(a, 123123)) ||
	    oxr_cmo_encode(o, OXR_ORDER_NETWORK, buf, sizeof(buf), &n) ||
	    oxr_cmo_decode(buf, n, OXR_ORDER_NETWORK, NULL, a, &back, &used) ||
	    !oxr_cmo_equal(o, back) || n != 12) {
		fprintf(stderr, "consumer: %s\n", oxr_errmsg());
		return 1;
	}
	printf("consumer: liboxr round trip ok (%zu bytes)\n", n);
	oxr_arena_destroy(a);
	return 0;
}
