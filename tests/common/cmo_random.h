/* SPDX-License-Identifier: MIT */
/* Random CMO objects of every tag, for round-trip and mutation tests. */
#ifndef OXR_TEST_CMO_RANDOM_H
#define OXR_TEST_CMO_RANDOM_H
#include <stdint.h>
#include "oxr/cmo.h"

/* xorshift64*: reproducible from the seed the test prints. */
uint64_t rnd_next(uint64_t *s);
static inline uint32_t rnd_below(uint64_t *s, uint32_t n) { return n ? (uint32_t)(rnd_next(s) % n) : 0; }
/* The seed: OXR_TEST_SEED from the environment, else a fixed default. */
uint64_t rnd_seed(void);

/* A random object no deeper than depth. */
oxr_cmo *rnd_cmo(oxr_arena *a, uint64_t *s, int depth);
#endif
