/* SPDX-License-Identifier: MIT */
/* Arena internals used by the decoder. */
#ifndef OXR_ARENA_H
#define OXR_ARENA_H
#include <stddef.h>
#include "oxr/cmo.h"

/* A malloc'ed buffer that can grow and later be handed to an arena. */
void *oxr_arena_grow_begin(size_t cap);
void *oxr_arena_grow(void *data, size_t cap);
void oxr_arena_grow_abort(void *data);
/* The arena takes the buffer over and frees it with the rest. */
void oxr_arena_adopt(oxr_arena *a, void *data);
#endif
