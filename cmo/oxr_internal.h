/* SPDX-License-Identifier: MIT */
/* Helpers shared by the files of liboxr; not installed. */
#ifndef OXR_INTERNAL_H
#define OXR_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include <gmp.h>

#include "oxr/cmo.h"
#include "oxr/status.h"

/* Records the detail for oxr_errmsg() and returns status. */
oxr_status_t oxr_err(oxr_status_t status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* oxr_err with a fixed text: no formatting, for paths that fail on every
 * poll (a wait of 0 ms that found nothing). */
oxr_status_t oxr_err_lit(oxr_status_t status, const char *msg);
/* Makes msg the thread's oxr_errmsg() (a copy). */
void oxr_err_keep(const char *msg);

static inline uint32_t oxr_bswap32(uint32_t x) { return __builtin_bswap32(x); }
static inline uint64_t oxr_bswap64(uint64_t x) { return __builtin_bswap64(x); }

/* Loads and stores of wire integers in a connection's order (0 network,
 * 1 little); memcpy keeps them legal at any alignment. */
static inline uint32_t oxr_load32(const void *p, int order)
{
	uint32_t v;
	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return order ? v : oxr_bswap32(v);
#else
	return order ? oxr_bswap32(v) : v;
#endif
}

static inline void oxr_store32(void *p, uint32_t v, int order)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (!order)
		v = oxr_bswap32(v);
#else
	if (order)
		v = oxr_bswap32(v);
#endif
	memcpy(p, &v, 4);
}

static inline uint64_t oxr_load64(const void *p, int order)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return order ? v : oxr_bswap64(v);
#else
	return order ? oxr_bswap64(v) : v;
#endif
}

static inline void oxr_store64(void *p, uint64_t v, int order)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (!order)
		v = oxr_bswap64(v);
#else
	if (order)
		v = oxr_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

/*
 * GMP's import/export run a slow generic loop unless the word size equals the
 * limb size; CMO words are 32 bits.  On a little-endian host without nails
 * the limb array already is the CMO word array (the low word of a 64-bit limb
 * first), so ZZ payloads and limbs convert by a copy, or none.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && GMP_NAIL_BITS == 0
#define ZZ_LIMBS_ARE_WORDS 1
#else
#define ZZ_LIMBS_ARE_WORDS 0
#endif

/* A CMO_ZZ whose payload is the n limbs at l, not copied: l must live as
 * long as the object (in the same arena, say).  Zero top limbs are
 * dropped; neg: negative.  Only where ZZ_LIMBS_ARE_WORDS (NULL elsewhere). */
oxr_cmo *oxr_cmo_zz_on_limbs(oxr_arena *a, const mp_limb_t *l, size_t n, int neg);

/* Copies n elements of elem bytes (1, 4 or 8) from one byte order to another. */
void oxr_copy_elems(void *dst, const void *src, size_t n, size_t elem,
		    int src_order, int dst_order);

/* fn(base, len) runs just before an arena block's memory goes back to libc
 * (free, or a realloc that may move it): the verbs registration cache
 * forgets registrations inside it.  One hook per process. */
void oxr_arena_set_release_hook(void (*fn)(const void *base, size_t len));

#endif
