/* SPDX-License-Identifier: MIT */
/*
 * The shrink's agreement on the failed ranks over a tree that routes
 * around them, without a transport: agree.c holds the algorithm and why
 * every rank that decides decides the same list, agree_sim.c runs it over
 * a simulated group (tests/transport/test_agree.c, oxr-bench --simulate),
 * shrink.c runs it over a group's links.  Not installed.
 */
#ifndef OXR_AGREE_H
#define OXR_AGREE_H

#include <stddef.h>
#include <stdint.h>

/* 1 if `rank` is known dead without being in the state's lists (its link
 * is down); NULL: none is. */
typedef int (*oxr_agree_dead_fn)(void *arg, int rank);

/* What oxr_agree_next hands out: a contribution to the parent (payload
 * fail[0..nfail)), or the decision (payload dec[0..ndec)). */
enum { OXR_AGREE_NONE = 0, OXR_AGREE_UP = 1, OXR_AGREE_DECIDE = 2 };

/* Levels: one per bit of a rank, 2^level < n < 2^31. */
#define OXR_AGREE_LEVELS 31

/*
 * One rank's agreement.  Its blocks are the aligned ranges of 2^k ranks
 * that hold it; level k is the other half of its block of 2^(k+1).  Bit k
 * of the masks is about level k.  80 bytes, and the lists: O(1 + f) for f
 * failed ranks, whatever n.
 */
struct oxr_agree {
	int32_t rank, n;
	int32_t parent;  /* the rank its contribution goes to; -1: it is the root */
	int32_t up;      /* the parent its contribution went to; -1: none yet */
	int32_t told_up; /* the parent that has the decision from it or gave it; -1: none */
	uint32_t reported; /* levels whose block's contribution is in fail */
	uint32_t told;     /* levels whose first live rank has the decision from it */
	uint32_t empty;    /* levels known to hold no live rank (their ranks are in fail) */
	int8_t top;     /* the levels below top are its children's (or its own dead) */
	int8_t decided; /* 0; 1: adopted (dec is the caller's); 2: decided here (dec owned) */
	int8_t stale;   /* something was learned since parent and top were computed */
	int32_t nfail, capfail, ndec, nans, capans;
	int32_t *fail;      /* sorted: the failed ranks it reports (its own, learned, gathered) */
	const int32_t *dec; /* sorted: the decision */
	uint32_t *ans; /* ranks owed the decision that are not its children now (bit 31: sent) */
};

/* Starts rank `rank` of n knowing the sorted ranks known[0..nknown) dead
 * (its own detector's; copied) and whatever dead says.  0; -1: bad
 * arguments (n < 1, rank out of range, known unsorted, out of range or
 * naming rank) or out of memory (then nothing to free).  A group of one
 * decides at once. */
int oxr_agree_start(struct oxr_agree *a, int rank, int n, const int32_t *known, int nknown,
		    oxr_agree_dead_fn dead, void *arg);
/* The next frame to send, its target in *to: OXR_AGREE_UP (payload fail),
 * OXR_AGREE_DECIDE (payload dec), OXR_AGREE_NONE when none is owed now.
 * A send that fails is oxr_agree_failed of its target. */
int oxr_agree_next(struct oxr_agree *a, int *to, oxr_agree_dead_fn dead, void *arg);
/* 1 if list[0..len) is sorted, without repeats, in [0, n): what a driver
 * checks of a frame's list before oxr_agree_recv, which checks its ends
 * only. */
int oxr_agree_list_ok(int n, const int32_t *list, int len);
/* A frame of `kind` from `from`, its list[0..len) checked by
 * oxr_agree_list_ok.  A DECIDE that decides this rank is kept by
 * reference: the caller keeps list as long as the state (it is the
 * result).  0; -1: a bad frame (a kind, sender or list end out of range,
 * an UP from below: the caller fails the link) or out of memory. */
int oxr_agree_recv(struct oxr_agree *a, int from, int kind, const int32_t *list, int len,
		   oxr_agree_dead_fn dead, void *arg);
/* The detector found `who` dead (a link down, a send or a wait failed).
 * 0; -1: bad argument (who out of range or this rank) or out of memory. */
int oxr_agree_failed(struct oxr_agree *a, int who, oxr_agree_dead_fn dead, void *arg);
/* The ranks whose death it would have to learn to go on (its parent, and
 * while undecided the first live rank of each level not reported), at
 * most max into out.  Returns how many. */
int oxr_agree_waits(struct oxr_agree *a, int *out, int max, oxr_agree_dead_fn dead, void *arg);
/* In the sorted list v[0..len): how many entries are below x. */
int32_t oxr_agree_below(const int32_t *v, int32_t len, int32_t x);
/* Bytes the state holds now: the struct and its lists' capacity. */
size_t oxr_agree_bytes(const struct oxr_agree *a);
void oxr_agree_free(struct oxr_agree *a);

/*
 * agree_sim.c: one agreement over a simulated group in rounds: a frame sent
 * in round t is taken in round t + 1.  die (NULL: nobody dies): per rank
 * OXR_AGREE_LIVES, 0 (dead before the start) or the round t > 0 it dies in,
 * after taking that round's frames and sending at most `cut` frames more.
 * known: 1, the ranks dead before the start are known dead to every rank
 * (their links are down); 0, a rank finds them as it finds the others.  A
 * rank finds a dead rank it sends to or waits on (oxr_agree_waits) `delay`
 * rounds after it died or after the send or wait began, whichever is later
 * (delay >= 1: a dead rank's last frames arrive first).  wrong (NULL: none):
 * live ranks that their parent at the start believes dead from the start
 * (a false report, one a parent; the accused's frames still arrive).
 * Bitmaps: bit i%8 of byte i/8.
 */
#define OXR_AGREE_LIVES (-1)

struct oxr_agree_sim {
	int n, known, delay, cut;
	const int32_t *die;
	const uint8_t *wrong;
	/* out: per rank (n each; freed by oxr_agree_sim_free) */
	int32_t *decided; /* the round it decided in; -1: never */
	uint32_t *sent;   /* frames it sent that arrived */
	uint32_t *recvd;  /* frames it took */
	uint32_t *probes; /* its sends that met a dead rank (no frame counted) */
	/* out: totals over the ranks alive at the end */
	int live, undecided, disagree;
	int rounds;       /* the round the last live rank decided in */
	int end;          /* the round of the last event */
	int dead_missing; /* ranks dead before the start not in the decision */
	int live_in;      /* live ranks in the decision */
	int crashed_in;   /* ranks dying during it that are in the decision */
	int decisions;    /* distinct lists decided, dead ranks' included */
	int dead_differ;  /* ranks that decided another list and died (a root that died
			     before any live rank had its decision) */
	int failed;       /* ranks in the decision */
	int accused;      /* live ranks falsely reported dead (wrong) */
	int stalled;      /* 1: cut at (last death + (n + 2 ceil(log2 n) + 4)(delay + 1)) rounds:
			     n finds in a row and the tree's depth, a rank still waited */
	uint64_t frames, probes_all;
	uint32_t max_sent, max_recvd, max_probes;
	size_t max_bytes; /* the most a rank's state held */
};
/* 0; -1 on bad arguments (n < 1, delay < 1, cut < 0, a die below
 * OXR_AGREE_LIVES or above INT32_MAX / 2) or out of memory. */
int oxr_agree_simulate(struct oxr_agree_sim *s);
void oxr_agree_sim_free(struct oxr_agree_sim *s);

#endif
