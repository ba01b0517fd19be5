/* SPDX-License-Identifier: MIT */
/*
 * What the tests of the control plane's pure cores share (test_bmg,
 * test_ring, test_agree): a seeded xorshift stream (OXR_TEST_SEED replays a
 * run), the quick switch (OXR_TEST_QUICK: smaller groups under the
 * sanitizers) and a group in which nobody dies.
 */
#ifndef OXR_TEST_SIM_UTIL_H
#define OXR_TEST_SIM_UTIL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rnd_state;

static inline uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static inline void seed(uint64_t s)
{
	const char *e = getenv("OXR_TEST_SEED");

	rnd_state = (e && *e ? strtoull(e, NULL, 0) : 0x2545f4914f6cdd1dull) ^ s;
	if (!rnd_state)
		rnd_state = 1;
}

static inline int quick(void)
{
	const char *e = getenv("OXR_TEST_QUICK");

	return e && *e && strcmp(e, "0");
}

/* The large group of a test: 65,536 ranks, 4,097 when quick. */
static inline int big(void) { return quick() ? 4097 : 65536; }

/* n ranks that all live (`never`: the core's value for it). */
static inline int32_t *sim_lives(int n, int32_t never)
{
	int32_t *die = malloc((size_t)n * sizeof(*die));
	int r;

	cr_assert(die);
	for (r = 0; r < n; r++)
		die[r] = never;
	return die;
}

#endif
