/* SPDX-License-Identifier: MIT */
/*
 * The crystal router (Fox et al. 1988): an all-to-some personalized
 * exchange.  Every rank packs any number of records, each a destination
 * rank and a payload of any length (0 bytes to 2^64-1), and one collective
 * transfer delivers each record exactly once to its destination, in
 * ceil(log2 P) stages that each talk to one partner (two for one rank of an
 * odd range).  Records from one source to one destination arrive in the
 * order they were packed.
 *
 *   oxr_crystal *cr;
 *   oxr_crystal_create(g, &cr);             collective: registers the landing window
 *   oxr_crystal_pack(cr, dest, buf, len);   any number, any destinations
 *   oxr_crystal_transfer(cr, timeout_ms);   collective
 *   while (oxr_crystal_next(cr, &rec) == OXR_OK) ... rec.source, rec.data, rec.len
 *   oxr_crystal_destroy(cr);
 *
 * Environment (read by oxr_ctx_create, used by oxr_crystal_create; must be
 * the same on every rank, a transfer says so when it is not):
 *   OXR_CRYSTAL_REGION_BYTES  first size of a landing region (one per stage
 *                       partner, twice over; default 65536).  A stage that
 *                       does not fit goes by messages instead
 *   OXR_CRYSTAL_REGION_MAX    the regions grow, when every rank has learned
 *                       that some stage needed more, up to this (default 8 MiB)
 * Any number of routers may live on a group at once; oxr_crystal_create is
 * collective, so every rank makes a group's routers and barriers in the same
 * order (their windows are numbered by oxr_group_next_object).
 */
#ifndef OXR_CRYSTAL_H
#define OXR_CRYSTAL_H

#include <stdint.h>

#include "oxr/status.h"
#include "oxr/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxr_crystal oxr_crystal;

/* A received record; data is valid until the next transfer or destroy,
 * and 8-byte aligned. */
typedef struct oxr_crystal_rec {
	int source;
	const void *data;
	uint64_t len;
} oxr_crystal_rec;

/* What this rank did in its last transfer, and a few running totals. */
typedef struct oxr_crystal_stats {
	int stages;               /* ceil(log2 P) */
	uint64_t puts;            /* one-sided puts this rank issued */
	uint64_t msgs;            /* messages it sent (stages too big for a region) */
	uint64_t bytes_sent;      /* by puts and messages, stage headers included */
	uint64_t bytes_received;
	uint64_t records_packed;  /* records this rank packed */
	uint64_t records_received;/* records delivered to this rank */
	uint64_t region_bytes;    /* size of one landing region now */
	uint64_t window_bytes;    /* this rank's landing window now */
	uint64_t grows;           /* times the window was re-created larger (total) */
	uint64_t early;           /* puts that landed before this rank reached their
				     stage, kept aside (total) */
	uint64_t transfers;       /* transfers so far (total) */
} oxr_crystal_stats;

/* Collective over the group (every rank linked to every other). */
OXR_API oxr_status_t oxr_crystal_create(oxr_group *g, oxr_crystal **out);
/* Frees cr, its windows and its received records (NULL: nothing); before
 * its group is destroyed. */
OXR_API void oxr_crystal_destroy(oxr_crystal *cr);

/* Appends one record for rank dest; p[0..len) is copied.  A dest outside
 * [0, P) is OXR_ERR_INVAL, and nothing is packed. */
OXR_API oxr_status_t oxr_crystal_pack(oxr_crystal *cr, int dest, const void *p, uint64_t len);

/* Collective: routes every packed record to its destination and makes the
 * records addressed to this rank the received set (the previous received set
 * is dropped).  timeout_ms bounds the whole transfer (< 0: no bound).  A
 * malformed record or stage from a peer is OXR_ERR_PROTO naming the rank and
 * the stage; after any failure the router refuses further transfers. */
OXR_API oxr_status_t oxr_crystal_transfer(oxr_crystal *cr, int timeout_ms);

/* The next received record: OXR_OK and *rec, or OXR_AGAIN after the last. */
OXR_API oxr_status_t oxr_crystal_next(oxr_crystal *cr, oxr_crystal_rec *rec);

/* Copies cr's oxr_crystal_stats into *st (OXR_ERR_INVAL for NULL). */
OXR_API oxr_status_t oxr_crystal_get_stats(const oxr_crystal *cr, oxr_crystal_stats *st);

#ifdef __cplusplus
}
#endif
#endif
