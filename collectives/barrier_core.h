/* SPDX-License-Identifier: MIT */
/*
 * The barriers' algorithm cores, without a transport: a core is told that
 * its rank entered (bar_core_enter) and what an arriving write holds
 * (bar_core_arrive), and answers with the writes to make next (c->out).
 * barrier.c drives a core over oxr_put and a window; the in-process
 * simulation of tests/collectives/test_coll_barrier.c drives the same core over
 * simulated windows.  Not installed.
 *
 * The window.  Every rank's window has the same layout (it depends on n,
 * the algorithm and the radix only), so a sender knows where it lands: two
 * halves, one per barrier sequence parity, each of nslots slots.  Slot j of
 * a half belongs to exactly one sender, slot_from[j], the same in every
 * barrier: a rank at a fixed distance from the owner (bitmap: owner +- d
 * radix^l, a tree edge of any rotation; dissemination: owner - 2^k).  One
 * writer per slot is what lets a slot be read at note time (barrier.c).
 * A slot holds:
 *   u32 epoch, u32 seq, u32 kind, u32 aux, then, in the slots that take
 *   requests (slot_run[j]), for BAR_REQ the sender's register as one run
 *   of ones: u32 first, u32 count, relative ranks first .. first+count-1
 *   of barrier seq's tree (a request always carries its sender's whole
 *   subtree, a contiguous range: barrier_bitmap.c).  So a slot is 16 or
 *   24 bytes whatever n.
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

/* A request's bits: the relative ranks [first, first + count). */
typedef struct bar_run {
	uint32_t first, count;
} bar_run;

typedef struct bar_msg {
	int to;
	int slot;  /* in the target's window, parity half included */
	bar_hdr h;
	bar_run run; /* BAR_REQ: follows the header; count 0: header only */
} bar_msg;

typedef struct bar_peer {
	int rank, slot; /* where this rank's writes land in the peer's window's
			   half (the sequence parity adds the half) */
} bar_peer;

typedef struct bar_core {
	int algo, n, rank, radix, nwords, rounds;
	int fixed_root;       /* bitmap: every barrier rooted at rank 0 (links on demand) */
	uint32_t epoch, seq;  /* the barrier in progress, or the next one to enter */
	int entered;
	int failed, failed_rank;
	const char *bad;      /* why a write was refused (it failed the barrier) */
	/* bitmap: this barrier's register and the bits of the next barrier
	 * that came early, each in the relative ranks of its own barrier's
	 * tree; have/next_have count their ones */
	uint64_t *bits, *next;
	int have, next_have, req_sent;
	/* dissemination: rounds received (bit k), the round this rank is in */
	uint64_t got, next_got;
	int round;
	int next_abort, next_abort_rank;
	/* the window's layout: slots per parity half, each slot's sender,
	 * whether it takes a request's run, and its offset (slot_off[2 nslots]
	 * = the length) */
	int nslots;
	int *slot_from, *slot_run;
	size_t *slot_off;
	bar_msg *out;
	int nout, outcap;
	bar_peer *peers;      /* scratch of maxpeers: tree or round neighbours */
	int maxpeers;
	/* what arrive() threw away: other epochs, older barriers */
	uint64_t stale;
} bar_core;

/* 0, or -1 out of memory / bad arguments. radix >= 2 (bitmap only). */
int bar_core_init(bar_core *c, int algo, int n, int rank, int radix, uint32_t epoch);
void bar_core_free(bar_core *c);
/* The window's length, and where slot s (0 .. 2 nslots-1) starts and how
 * long it is; the slot starting at byte offset off, or -1. */
size_t bar_core_window_bytes(const bar_core *c);
size_t bar_core_slot_offset(const bar_core *c, int s);
size_t bar_core_slot_bytes(const bar_core *c, int s);
int bar_core_slot_at(const bar_core *c, uint64_t off);
/*
 * Each returns 1 when this rank's barrier completed (the core then stands
 * at the next sequence number), 0 while it is pending, -1 once it failed
 * (c->failed_rank says who; c->bad is set where a malformed write from
 * that rank failed it).  c->out holds the writes to make, in order; the
 * caller sends them and sets c->nout = 0 before the next call.
 * arrive: rank `from` wrote into slot `slot`; h and the run that followed
 * it (NULL: the write was a header only) are what the slot holds now.
 */
int bar_core_enter(bar_core *c);
int bar_core_arrive(bar_core *c, int from, int slot, const bar_hdr *h, const bar_run *run);
/* This rank saw rank `who` fail: the barrier fails and tells its peers. */
int bar_core_fail(bar_core *c, int who);
/* The peers this rank waits on directly now (their link going down is a
 * failure of the barrier), in c->peers; returns how many. */
int bar_core_waits_on(bar_core *c);

/* ---- between barrier_core.c and the algorithm files ---- */
struct bar_algo {
	/* slots per parity half; slot j's sender, and whether it takes runs */
	int (*nslots)(const bar_core *c);
	void (*slot)(const bar_core *c, int j, int *from, int *run);
	int (*maxpeers)(const bar_core *c);
	int (*enter)(bar_core *c); /* own arrival; returns as bar_core_enter */
	/* a write of this barrier (arrive) or of the next (early) into slot j
	 * of the half its sequence parity names, from that slot's sender */
	int (*arrive)(bar_core *c, int j, const bar_hdr *h, const bar_run *run);
	int (*early)(bar_core *c, int j, const bar_hdr *h, const bar_run *run);
	int (*waits_on)(const bar_core *c, bar_peer *peers);
	int (*dependents)(const bar_core *c, bar_peer *peers); /* who waits on me */
};
extern const struct bar_algo bar_bitmap_algo, bar_dissem_algo;
/* run: a request's, or NULL */
void bar_push(bar_core *c, bar_peer to, uint32_t kind, uint32_t aux, const bar_run *run);
int bar_complete(bar_core *c);  /* returns 1 */
/* A write that cannot come from a working peer: fails the barrier,
 * blaming its sender.  Returns -1. */
int bar_refuse(bar_core *c, int from, const char *why);

#endif
