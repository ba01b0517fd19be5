/* SPDX-License-Identifier: MIT */
/*
 * What bcast.c, bcast_chain.c and reduce.c share: counted sends and
 * receives, the binomial tree in relative ranks, a deep copy of a CMO into
 * an arena, and the private markers of the protocol.  Not installed.
 */
#ifndef OXR_BCAST_COMMON_H
#define OXR_BCAST_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/bcast.h"
#include "oxr/transport.h"

/* OX_COMMAND sm values of oxr's own, in the 0x6f7803xx block reserved for
 * bcast/reduce: an RFC-102 peer never sees them, since a small bcast or
 * reduce sends plain OX_DATA as asir does. */
enum {
	BC_MARK_CHAIN = 0x6f780301, /* bcast: the object follows down the chain */
	BC_MARK_ERROR = 0x6f780302, /* reduce: an OX_DATA CMO_STRING error follows */
};

/* Microseconds a collective's receive polls (yielding) before it sleeps;
 * OXR_COLL_SPIN_US overrides (bcast_common.c says why). */
#define BC_SPIN_US_DEFAULT 2000

/* Counts of the current operation on this thread (oxr_bcast_last_counts). */
void bc_counts_begin(void);
void bc_counts_algo(int algo);

oxr_status_t bc_send(oxr_group *g, int peer, const oxr_ox_msg *m);
oxr_status_t bc_isend(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req **r);
oxr_status_t bc_recv(oxr_group *g, int peer, int timeout_ms, oxr_rmsg **out);
oxr_status_t bc_send_cmo(oxr_group *g, int peer, const oxr_cmo *o);
oxr_status_t bc_send_mark(oxr_group *g, int peer, int32_t mark);

static inline int bc_rel(int rank, int root, int n) { return (rank - root + n) % n; }
static inline int bc_abs(int rel, int root, int n) { return (rel + root) % n; }
/* The lowest set bit of rel, or the first power of two >= n for rel 0:
 * the binomial children of rel are rel + m for the masks m below it. */
static inline int bc_top_mask(int rel, int n)
{
	int m = 1;

	while (m < n && !(rel & m))
		m <<= 1;
	return m;
}


oxr_status_t bc_check_args(oxr_group *g, int root, const char *what);

/* Bcast by the pipelined chain (bcast_chain.c): the root encodes the
 * object (before any message, so an encoding error leaves no rank waiting)
 * and sends it; the other ranks receive once the marker arrived. */
oxr_status_t bc_chain_encode(const oxr_cmo *o, size_t size, uint8_t **buf);
/* Sends buf (from bc_chain_encode) down the chain and frees it. */
oxr_status_t bc_chain_root(oxr_group *g, int root, uint8_t *buf, size_t size, size_t chunk,
			   int timeout_ms);
oxr_status_t bc_chain_recv(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a, int timeout_ms);
#endif
