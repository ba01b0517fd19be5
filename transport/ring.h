/* SPDX-License-Identifier: MIT */
/*
 * The heartbeat's ring failure detector, without a transport: ring.c
 * holds whom a rank watches and why every live rank ends up watched once,
 * progress.c drives it over links (heartbeat(): a rank not to watch is one
 * whose link is down, or an OpenXM peer), ring_sim.c over a simulated
 * group (tests/transport/test_ring.c, oxr-bench --simulate).  Not
 * installed.
 */
#ifndef OXR_RING_H
#define OXR_RING_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/status.h"

/* Pings a watcher sends per H (OXR_HEARTBEAT_MS) at most: one each H/3 of
 * silence from its watched rank, which answers each with a beat. */
#define OXR_RING_PINGS 3

/* One rank's detector state (the group's, progress.c): 32 bytes whatever
 * P.  What it knows dead is its links' state, there anyway. */
struct oxr_ring_watch {
	int64_t check;  /* ms of the next round */
	int64_t since;  /* ms since pred is watched (0: none yet) */
	int64_t pinged; /* ms of the last ping to pred */
	int32_t pred;   /* the rank watched */
};

/* 1 if `rank` is not to be watched (known dead); NULL: none is skipped. */
typedef int (*oxr_ring_skip_fn)(void *arg, int rank);

/* The rank `rank` watches once it has passed `from` - 1 ranks below it:
 * the first of rank - from, rank - from - 1, ... (mod n) not skipped, -1
 * when none is (every other rank skipped, n < 2, bad arguments).  from = 1
 * is the ring's choice: the next live rank below. */
int oxr_ring_watched(int rank, int n, int from, oxr_ring_skip_fn skip, void *arg);
/* Who watches `rank` when every rank agrees on `skip`: the next rank above
 * it not skipped; -1 when none. */
int oxr_ring_watcher(int rank, int n, oxr_ring_skip_fn skip, void *arg);
/* How many ranks below `rank` `watched` is, cyclically (0 for rank
 * itself, -1 for bad arguments): past it, at that + 1, its watcher's scan
 * resumes once it is found dead. */
int oxr_ring_distance(int rank, int n, int watched);

/*
 * ring_sim.c: the detector over a simulated group, in periods of H.  die:
 * per rank the period it stops in (a stopped rank answers nothing and
 * watches nobody; OXR_RING_LIVES: it never stops).  A rank learns of a
 * death only through its own watch: the rank it watches, silent for a
 * whole period, is found dead at its end, and the watcher moves on to the
 * next rank below (the revoke that tells the others in the library is left
 * out: the slowest case).  Each watch costs OXR_RING_PINGS pings a period
 * (no other traffic answers for the watched rank).
 */
#define OXR_RING_LIVES (-1)

struct oxr_ring_sim {
	int n;
	const int32_t *die;
	/* out: per rank (n each; freed by oxr_ring_sim_free) */
	int32_t *watch;  /* the rank it watches at the end (or when it stopped); -1: none */
	int32_t *found;  /* the period a live watcher found it dead; -1: never */
	uint32_t *sent;  /* pings it sent */
	uint32_t *recvd; /* pings it took while it lived (each answered by a beat) */
	/* out: totals */
	int live, periods;   /* ranks live at the end; the period after the last find or stop */
	int missed;          /* stopped ranks never found */
	int false_pos;       /* finds of a rank that had not been silent a whole period */
	int unwatched;       /* live ranks watched by no live rank at the end (live >= 2) */
	int overwatched;     /* live ranks watched by more than one */
	int watcher_differs; /* live ranks whose watcher is not oxr_ring_watcher's */
	int max_watchers;    /* most live ranks watching one rank in one period */
	int late;            /* finds later than the run bound (ring.c) */
	int worst_delay;     /* most periods from a rank's stop to its find */
	int longest_run;     /* most consecutive ranks stopped at the end */
	uint32_t max_sent, max_recvd; /* pings per rank per period, the most */
	double mean_sent, mean_recvd; /* ... and per live rank and period, over the run */
	size_t state_bytes;  /* a rank's detector state in the library */
};
/* OXR_OK; OXR_ERR_INVAL (n < 1, die NULL, a die below OXR_RING_LIVES or
 * past INT32_MAX - n - 1), OXR_ERR_NOMEM (no message set: the core does
 * nothing but compute). */
oxr_status_t oxr_ring_simulate(struct oxr_ring_sim *s);
void oxr_ring_sim_free(struct oxr_ring_sim *s);

#endif
