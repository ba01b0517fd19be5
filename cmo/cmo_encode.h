/* SPDX-License-Identifier: MIT */
/* The encoder's sink, shared with the OX frame writer. */
#ifndef OXR_CMO_ENCODE_H
#define OXR_CMO_ENCODE_H
#include <stddef.h>
#include <stdint.h>
#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr_internal.h"

#include <sys/uio.h>

/*
 * buf NULL: only count bytes into len.  With big > 0, payloads of at least
 * big bytes that need no byte swap are not copied: they become iovecs that
 * point into the object (iov NULL while counting: niov counts the entries).
 */
struct oxr_sink {
	uint8_t *buf;
	size_t cap, len;
	int order;
	size_t big;
	struct iovec *iov;
	int niov, maxiov;
	size_t seg;   /* start of the part of buf no iovec covers yet */
	size_t total; /* all bytes, referenced ones included */
	int probe;    /* a full buf is OXR_ERR_SPACE without a message (a try) */
};

oxr_status_t oxr_sink_put32_slow(struct oxr_sink *s, uint32_t v);
/* Inline for a writing sink with room: every header word of every frame
 * comes here, and a call each was a tenth of a small message's encoding. */
static inline oxr_status_t oxr_sink_put32(struct oxr_sink *s, uint32_t v)
{
	if (!s->buf || s->cap - s->len < 4)
		return oxr_sink_put32_slow(s, v);
	oxr_store32(s->buf + s->len, v, s->order);
	s->len += 4;
	s->total += 4;
	return OXR_OK;
}
/* Ends the scratch segment written since the last iovec (iov mode). */
void oxr_sink_flush_seg(struct oxr_sink *s);
oxr_status_t oxr_sink_put_cmo(struct oxr_sink *s, const oxr_cmo *o, int tagged, unsigned depth);
/* Turns a counting sink into a writing one over a new malloc'ed buffer of
 * the counted size. */
oxr_status_t oxr_sink_alloc(struct oxr_sink *s, uint8_t **buf);
/*
 * A frame as a gather list for writev: headers and small parts in one
 * scratch buffer, large payloads by reference (they must outlive the send).
 * A frame that fits in the caller's small buffer (small_cap bytes) is
 * written there in one pass, as the single iovec *one, and *mem is NULL:
 * most messages are small, and two walks and a malloc were most of their
 * cost.  Otherwise *mem is one malloc holding the scratch and the iovecs.
 */
oxr_status_t oxr_ox_encode_iov(const oxr_ox_msg *m, int order, size_t big, void *small,
			       size_t small_cap, struct iovec *one, void **mem,
			       struct iovec **iov, int *niov, size_t *total);
#endif
