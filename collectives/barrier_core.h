/* SPDX-License-Identifier: MIT */
/*
 * The barriers' algorithm cores, without a transport: a core is told that
 * its rank entered (bar_core_enter) and what an arriving write holds
 * (bar_core_arrive), and answers with the writes to make next (c->out).
 * barrier.c drives a core over oxr_put and a window; the in-process
 * simulation of tests/collectives/test_coll_barrier.c drives the same core over
 * simulated windows.  Not installed.
 *
 * Wire slot (what one write carries; each sender owns two slots in each
 * target's window, chosen by the barrier's sequence parity):
 *   u32 epoch, u32 seq, u32 kind, u32 aux, then for BAR_REQ the sender's
 *   bitmap of n bits in u64 words (bit r of word r/64 = rank r entered).
 */
#ifndef OXR_BARRIER_CORE_H
#define OXR_BARRIER_CORE_H

#include <stddef.h>
#include <stdint.h>

enum { BAR_REQ = 1, BAR_EST = 2, BAR_ROUND = 3, BAR_ABORT = 4 };
enum { BAR_ALG_BITMAP = 1, BAR_ALG_DISSEM = 2 };

typedef struct bar_hdr {
	uint32_t epoch, seq, kind, aux; /* aux: round (BAR_ROUND), failed rank (BAR_ABORT) */
} bar_hdr;

typedef struct bar_msg {
	int to;
	bar_hdr h;
	int with_bits;  /* BAR_REQ: the sender's bitmap follows the header */
} bar_msg;

typedef struct bar_core {
	int algo, n, rank, radix, nwords, rounds;
	int fixed_root;       /* bitmap: every barrier rooted at rank 0 (links on demand) */
	uint32_t epoch, seq;  /* the barrier in progress, or the next one to enter */
	int entered;
	int failed, failed_rank;
	/* bitmap: this barrier's register and the bits of the next barrier
	 * that came early; have/next_have count their ones */
	uint64_t *bits, *next;
	int have, next_have, req_sent;
	/* dissemination: rounds received (bit k), the round this rank is in */
	uint64_t got, next_got;
	int round;
	int next_abort, next_abort_rank;
	bar_msg *out;
	int nout, outcap;
	/* what arrive() threw away: other epochs, older barriers, anomalies */
	uint64_t stale, odd;
} bar_core;

size_t bar_slot_bytes(int n);
/* 0, or -1 out of memory / bad arguments. radix >= 2 (bitmap only). */
int bar_core_init(bar_core *c, int algo, int n, int rank, int radix, uint32_t epoch);
void bar_core_free(bar_core *c);
/*
 * Each returns 1 when this rank's barrier completed (the core then stands
 * at the next sequence number), 0 while it is pending, -1 once it failed
 * (c->failed_rank says who).  c->out holds the writes to make, in order;
 * the caller sends them and sets c->nout = 0 before the next call.  The
 * bitmap of a BAR_REQ is c->bits as it is now: send it before the next call.
 */
int bar_core_enter(bar_core *c);
int bar_core_arrive(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits);
/* This rank saw rank `who` fail: the barrier fails and tells its peers. */
int bar_core_fail(bar_core *c, int who);
/* The peers this rank waits on directly now (their link going down is a
 * failure of the barrier); returns how many were written to peers[max]. */
int bar_core_waits_on(const bar_core *c, int *peers, int max);

/* ---- between barrier_core.c and the algorithm files ---- */
struct bar_algo {
	int (*enter)(bar_core *c); /* own arrival; returns as bar_core_enter */
	int (*arrive)(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits);
	void (*early)(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits);
	int (*waits_on)(const bar_core *c, int *peers, int max);
	int (*dependents)(const bar_core *c, int *peers, int max); /* who waits on me */
};
extern const struct bar_algo bar_bitmap_algo, bar_dissem_algo;
void bar_push(bar_core *c, int to, uint32_t kind, uint32_t aux, int with_bits);
int bar_complete(bar_core *c);  /* returns 1 */

#endif
