/* SPDX-License-Identifier: MIT */
/* The encoder's sink, shared with the OX frame writer. */
#ifndef OXR_CMO_ENCODE_H
#define OXR_CMO_ENCODE_H
#include <stddef.h>
#include <stdint.h>
#include "oxr/cmo.h"

/* buf NULL: only count bytes into len. */
struct oxr_sink {
	uint8_t *buf;
	size_t cap, len;
	int order;
};

oxr_status_t oxr_sink_put32(struct oxr_sink *s, uint32_t v);
oxr_status_t oxr_sink_put_cmo(struct oxr_sink *s, const oxr_cmo *o, int tagged, unsigned depth);
/* Turns a counting sink into a writing one over a new malloc'ed buffer of
 * the counted size. */
oxr_status_t oxr_sink_alloc(struct oxr_sink *s, uint8_t **buf);
#endif
