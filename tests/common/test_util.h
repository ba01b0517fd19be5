/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the test files. */
#ifndef OXR_TEST_UTIL_H
#define OXR_TEST_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Lines of /proc/self/maps naming name (a memfd's "memfd:oxr-..."), the
 * first max start addresses in at[]; -1 when the file cannot be read. */
static inline int maps_named(const char *name, uintptr_t *at, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name)) {
			if (n < max)
				at[n] = (uintptr_t)strtoull(line, NULL, 16);
			n++;
		}
	fclose(f);
	return n;
}

/* Hex of bytes, lowercase, contiguous; malloc'ed. */
static inline char *hex_of(const uint8_t *b, size_t n)
{
	char *s = malloc(2 * n + 1);
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", b[i]);
	s[2 * n] = 0;
	return s;
}

/* Bytes of a hex string (spaces skipped); returns the count. */
static inline size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	while (*h) {
		if (*h == ' ') {
			h++;
			continue;
		}
		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

/* FNV-1a, 64 bits: h is FNV1A64_INIT or an earlier result (to hash in pieces). */
#define FNV1A64_INIT 0xcbf29ce484222325ull
static inline uint64_t fnv1a64(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Byte i of p is (uint8_t)(i * mul + add). */
static inline void fill_pattern(void *p, size_t n, size_t mul, size_t add)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(i * mul + add);
}

/* Microseconds on the monotonic clock. */
static inline long long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Two arenas A and B for a suite: .init = setup, .fini = teardown. */
#define TWO_ARENAS()                                                    \
	static oxr_arena *A, *B;                                        \
	static void setup(void)                                         \
	{                                                               \
		cr_assert_eq(oxr_arena_create(&A), OXR_OK);             \
		cr_assert_eq(oxr_arena_create(&B), OXR_OK);             \
	}                                                               \
	static void teardown(void)                                      \
	{                                                               \
		oxr_arena_destroy(A);                                   \
		oxr_arena_destroy(B);                                   \
	}                                                               \
	struct two_arenas_semicolon
#endif
