/* SPDX-License-Identifier: MIT */
/* SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for the link handshake. */
#ifndef OXR_SHA256_H
#define OXR_SHA256_H
#include <stddef.h>
#include <stdint.h>

struct oxr_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t n;
};

void oxr_sha256_init(struct oxr_sha256 *s);
void oxr_sha256_update(struct oxr_sha256 *s, const void *p, size_t n);
void oxr_sha256_final(struct oxr_sha256 *s, uint8_t out[32]);

/* HMAC over the concatenation of nparts parts (parts[i], lens[i]). */
void oxr_hmac_sha256(const uint8_t *key, size_t klen, const void *const *parts,
		     const size_t *lens, size_t nparts, uint8_t out[32]);
/* Constant-time comparison: 1 if equal. */
int oxr_mac_equal(const uint8_t *a, const uint8_t *b, size_t n);
#endif
