/* SPDX-License-Identifier: MIT */
/*
 * Barriers of a group, over one-sided writes only (oxr_put into a window
 * each rank registers), so they run unchanged on tcp and verbs.
 *
 *   OXR_BARRIER_BITMAP         the NEC bitmap barrier (JP4259390B2): each
 *                              rank's register of who entered travels in
 *                              synchronization requests towards the rank
 *                              that sees all ones, which sends the
 *                              establishment back; requests follow a
 *                              k-nomial tree (OXR_BARRIER_RADIX) rooted
 *                              at rank (s mod n) for barrier number s, or
 *                              at rank 0 always where links open on
 *                              demand (oxr_group_links_on_demand: a moving
 *                              root would open new links in every
 *                              barrier).  2(n-1) writes per
 *                              barrier: a rank sends about 2 and receives
 *                              about 2 on average, the root ceil(log2 n)
 *                              each; 2 ceil(log2 n) hops.
 *   OXR_BARRIER_DISSEMINATION  ceil(log2 n) rounds, round k writing to
 *                              rank + 2^k: n ceil(log2 n) writes, log2(n)
 *                              per rank, log2(n) hops.
 *   OXR_BARRIER_DEFAULT        the environment's OXR_BARRIER=bitmap|
 *                              dissemination|auto; auto (the default) is
 *                              dissemination at 2 ranks (one hop each way
 *                              at once, where the bitmap barrier takes
 *                              two in turn: on shm 0.76 against 1.88 us,
 *                              2026-12-05), the bitmap barrier above.
 *
 * Why the bitmap barrier is the default: measured with bench/run_barrier.sh
 * on the 2-core CI machine (tcp, ranks oversubscribed, OXR_COLL_SPIN_US and
 * OXR_SPIN_US at their defaults), median us per barrier over 5 runs, each
 * beside Open MPI 4.1's MPI_Barrier (tcp BTL) in the same run:
 *            n=2      n=4      n=8       n=16
 *   bitmap   14-31    46-62    121-208   281-520
 *   dissem   9-32     50-86    165-301   445-1011
 *   MPI      8-12     42-79    166-412   551-1513
 *   bitmap/MPI at n=8: 0.34 0.48 0.64 0.73 0.60 (the load of the machine
 *   moves MPI's busy-polling barrier most); dissemination/MPI 0.68-1.45.
 * The bitmap barrier's fewer writes (2(n-1) against n log2 n) cost less
 * than its longer chain of hops (2 log2 n against log2 n): on a loaded
 * machine every write is a system call and a wakeup of another process,
 * and the cores, not the wire, are what a barrier waits for.  (At n=2 both
 * send one write each way, and MPI's pure busy-poll on two free cores wins.)
 * The tree's radix: 16 by default, a flat tree up to 16 ranks (the root
 * takes every request and sends every establishment), 16-nomial above.
 * Oversubscribed, a hop is a wakeup of another process, and fewer hops win
 * over a busier root: one session after the TCP progress changes (medians
 * of 2000 barriers, us), n=8: radix 2 170-180, radix 8 or 16 (flat)
 * 138-153; n=16: radix 2 464, 8 422, 16 324; n=4 the same for all.  At
 * thousands of ranks 16 keeps the depth at log16 n (3 at 4096) and a
 * rank's writes at most 2 * 15 a level.  An earlier quiet session saw no
 * difference at n=8 (99-112 us for radix 2, 4, 8) before those changes.
 *
 * Environment (read by oxr_ctx_create into the group's context's
 * oxr_ctx_params, oxr/params.h; a malformed value is an error naming it):
 *   OXR_BARRIER        bitmap | dissemination | auto (default): the
 *                      algorithm of OXR_BARRIER_DEFAULT
 *   OXR_COLL_SPIN_US   microseconds a barrier's wait polls, yielding the
 *                      core between polls, before it sleeps in the
 *                      transport (default 1000; shared with bcast/reduce;
 *                      0 sleeps at once; at n=8, 1000 was best: 98-100 us
 *                      against 144-163 for 50, 119-131 for 200, 111-128
 *                      for 2000, 146-200 for 5000; OXR_SPIN_US 50 (its
 *                      default) beat 0 and 200)
 *   OXR_BARRIER_RADIX  the bitmap barrier's tree radix, 2..64 (default 16)
 *
 * oxr_barrier_create is collective (it creates the barrier's window: every
 * rank of the group must create its barriers in the same order).  Barrier
 * number s and s+1 may overlap (a rank told of s's establishment can start
 * s+1 while others are still being told); every write carries the group's
 * epoch and the barrier's number, and writes of an older barrier or epoch
 * are ignored.  A peer that dies or whose link breaks fails the barrier on
 * every rank that still waits, with OXR_ERR_PEER naming the rank (ranks
 * tell each other), or OXR_ERR_TIMEOUT after timeout_ms; a revoke fails it
 * with OXR_ERR_REVOKED; a write into the barrier's window that no working
 * peer sends (no slot there, not its writer's slot, a kind, length or
 * barrier number the slot cannot hold) fails it with OXR_ERR_PROTO naming
 * the writer, who is then treated as failed.  An error sticks until the group is reset
 * (oxr_group_reset, a new epoch): the next oxr_barrier then starts afresh,
 * as barrier number 0 of the new epoch, on every rank.
 */
#ifndef OXR_BARRIER_H
#define OXR_BARRIER_H

#include <stdint.h>

#include "oxr/status.h"
#include "oxr/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	OXR_BARRIER_DEFAULT = 0,
	OXR_BARRIER_BITMAP = 1,
	OXR_BARRIER_DISSEMINATION = 2,
};

/* The type is oxr_barrier_t: C cannot have a type and the function
 * oxr_barrier() under one name. */
typedef struct oxr_barrier oxr_barrier_t;

/* Counts of this rank's writes (puts) and received writes. */
typedef struct oxr_barrier_counts {
	uint64_t barriers;       /* completed on this rank */
	uint64_t puts_sent, puts_received;
	uint64_t stale_ignored;  /* writes of an older barrier or epoch */
	uint32_t last_sent, last_received; /* of the most recent oxr_barrier_t */
} oxr_barrier_counts;

/* A barrier of g running algo (OXR_BARRIER_*), the caller's: destroy it
 * before its group.  Collective (see above).  Errors: OXR_ERR_INVAL (a
 * NULL argument), OXR_ERR_NOMEM, the window's (oxr_win_create). */
OXR_API oxr_status_t oxr_barrier_create(oxr_group *g, int algo, oxr_barrier_t **out);
/* Returns once every rank of the group has entered this barrier.
 * timeout_ms < 0 waits without a bound (a dead peer still ends it). */
OXR_API oxr_status_t oxr_barrier(oxr_barrier_t *b, int timeout_ms);
/* Frees b and its window (NULL: nothing). */
OXR_API void oxr_barrier_destroy(oxr_barrier_t *b);
/* Copies b's oxr_barrier_counts into *out (OXR_ERR_INVAL for NULL). */
OXR_API oxr_status_t oxr_barrier_stats(const oxr_barrier_t *b, oxr_barrier_counts *out);
/* OXR_BARRIER_BITMAP or OXR_BARRIER_DISSEMINATION: what b runs. */
OXR_API int oxr_barrier_algo(const oxr_barrier_t *b);
/* "bitmap", "dissemination" (or "default"). */
OXR_API const char *oxr_barrier_algo_name(int algo);

#ifdef __cplusplus
}
#endif
#endif
