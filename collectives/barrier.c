/* SPDX-License-Identifier: MIT */
/*
 * oxr_barrier: the barrier cores (barrier_core.h) driven over one-sided
 * writes.  Each rank's window holds the slots of the core's layout: per
 * barrier number parity, one per rank that can write to this one (a tree
 * or round neighbour), each with that one sender, so concurrent writes of
 * different senders, and a sender's writes of two overlapping barriers,
 * never share bytes; O(radix log n) slots of 16 or 24 bytes, not one per
 * rank.
 *
 * Invariant: when a note is taken, the slot it names holds the write it
 * announces or a later one from the same sender (puts land in order per
 * sender, and nobody else writes that slot), and a later one is of a
 * later barrier in the other parity's half, or of barrier s+2, which its
 * sender can only reach after this rank took barrier s's write; so reading
 * the slot at note time never loses a write, and reading a slot twice is
 * harmless (the cores' ORs and round marks are idempotent).  A write whose
 * place or length no slot has, or that its slot's sender cannot have sent,
 * fails the barrier (OXR_ERR_PROTO, naming the writer).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oxr/barrier.h"
#include "oxr_internal.h"
#include "barrier_core.h"
#include "coll_win.h"

#define BAR_SPIN_DEFAULT 1000
/* How often a quiet wait looks at its peers' links: from 50 ms, doubling
 * to 1 s.  A dead peer's link says so within a slice; a fixed 50 ms woke
 * each of 1,024 ranks on 2 cores 80 times in a 4 s barrier, and those
 * wake-ups were most of the barrier's time. */
#define BAR_SLICE_MS 50
#define BAR_SLICE_MAX_MS 1000

struct oxr_barrier {
	oxr_group *g;
	oxr_win *w;
	uint32_t id;
	bar_core c;
	uint8_t *mem;
	size_t len;
	long spin_us;
	oxr_barrier_counts st;
	char why[256];   /* the sticky failure */
	oxr_status_t err;
};

const char *oxr_barrier_algo_name(int algo)
{
	return algo == OXR_BARRIER_BITMAP ? "bitmap"
	       : algo == OXR_BARRIER_DISSEMINATION ? "dissemination" : "default";
}

int oxr_barrier_algo(const oxr_barrier_t *b)
{
	return b->c.algo == BAR_ALG_BITMAP ? OXR_BARRIER_BITMAP : OXR_BARRIER_DISSEMINATION;
}

/* auto: at 2 ranks the bitmap barrier takes two hops (request, then
 * establishment) where dissemination takes one each way at once; above,
 * the bitmap barrier's fewer writes win (oxr/barrier.h has the figures). */
static oxr_status_t pick_algo(int algo, int env, int n, int *out)
{
	if (algo == OXR_BARRIER_BITMAP || algo == OXR_BARRIER_DISSEMINATION) {
		*out = algo;
		return OXR_OK;
	}
	if (algo != OXR_BARRIER_DEFAULT)
		return oxr_err(OXR_ERR_INVAL, "barrier: unknown algorithm %d", algo);
	/* OXR_BARRIER: bitmap, dissemination, auto */
	*out = env == 1 || (env == 2 && n == 2) ? OXR_BARRIER_DISSEMINATION : OXR_BARRIER_BITMAP;
	return OXR_OK;
}

/* The core of b's algorithm for the group's current epoch. */
static int core_init(oxr_barrier_t *b, int algo, int radix)
{
	oxr_group *g = b->g;

	if (bar_core_init(&b->c, algo, oxr_group_size(g), oxr_group_rank(g), radix,
			  oxr_group_epoch(g)))
		return -1;
	b->c.fixed_root = oxr_group_links_on_demand(g);
	return 0;
}

oxr_status_t oxr_barrier_create(oxr_group *g, int algo, oxr_barrier_t **out)
{
	oxr_barrier_t *b;
	oxr_status_t st;
	void *mem;
	int a = OXR_BARRIER_BITMAP, n;
	const oxr_ctx_params *p;
	long spin, radix;

	if (!g || !out)
		return oxr_err(OXR_ERR_INVAL, "barrier_create: NULL argument");
	p = oxr_ctx_get_params(oxr_group_ctx(g));
	n = oxr_group_size(g);
	if ((st = pick_algo(algo, p->barrier, n, &a)))
		return st;
	spin = p->coll_spin_us >= 0 ? p->coll_spin_us : BAR_SPIN_DEFAULT;
	radix = p->barrier_radix;
	b = calloc(1, sizeof(*b));
	if (!b)
		return oxr_err(OXR_ERR_NOMEM, "barrier: out of memory");
	b->g = g;
	if (core_init(b, a == OXR_BARRIER_BITMAP ? BAR_ALG_BITMAP : BAR_ALG_DISSEM, (int)radix)) {
		oxr_barrier_destroy(b);
		return oxr_err(OXR_ERR_NOMEM, "barrier: out of memory for %d ranks", n);
	}
	/* one rank has no slots; a window has bytes */
	b->len = bar_core_window_bytes(&b->c);
	b->len = b->len ? b->len : sizeof(bar_hdr);
	/* the window near the HCA: its slots are written by DMA */
	if (oxr_win_alloc(g, b->len, &mem) == OXR_OK)
		b->mem = mem;
	if (!b->mem) {
		oxr_barrier_destroy(b);
		return oxr_err(OXR_ERR_NOMEM, "barrier: out of memory for %d ranks", n);
	}
	b->spin_us = spin;
	if ((st = oxr_coll_win_create(g, "barrier", b->mem, b->len, 60000, &b->id, &b->w))) {
		oxr_barrier_destroy(b);
		return st;
	}
	*out = b;
	return OXR_OK;
}

void oxr_barrier_destroy(oxr_barrier_t *b)
{
	if (!b)
		return;
	oxr_win_destroy(b->w);
	bar_core_free(&b->c);
	if (b->mem)
		oxr_win_free(b->g, b->mem, b->len);
	free(b);
}

oxr_status_t oxr_barrier_stats(const oxr_barrier_t *b, oxr_barrier_counts *out)
{
	if (!b || !out)
		return oxr_err(OXR_ERR_INVAL, "barrier_stats: NULL argument");
	*out = b->st;
	out->stale_ignored = b->c.stale;
	return OXR_OK;
}

/* The first failure sticks: every later call reports it. */
static oxr_status_t fail(oxr_barrier_t *b, oxr_status_t code, const char *why)
{
	if (!b->err) {
		b->err = code;
		snprintf(b->why, sizeof(b->why), "%s", why);
	}
	return oxr_err(b->err, "barrier %u (%s) on rank %d of %d: %s", b->c.seq,
		       oxr_barrier_algo_name(oxr_barrier_algo(b)), b->c.rank, b->c.n, b->why);
}

/* Sends what the core asked for.  A write that fails is the failure of
 * its target: the core is told, and its flood of aborts goes out too
 * (writes to dead ranks among them fail quietly). */
static oxr_status_t flush(oxr_barrier_t *b)
{
	int i, bad = -1;

	for (i = 0; i < b->c.nout; i++) {
		bar_msg *m = &b->c.out[i];
		size_t len = sizeof(bar_hdr);
		uint8_t buf[sizeof(bar_hdr) + sizeof(bar_run)];
		oxr_status_t st;

		/* header and run go as one write */
		memcpy(buf, &m->h, sizeof(bar_hdr));
		if (m->run.count) {
			memcpy(buf + len, &m->run, sizeof(bar_run));
			len += sizeof(bar_run);
		}
		st = oxr_put(b->g, m->to, b->id, bar_core_slot_offset(&b->c, m->slot), buf, len,
			     m->h.kind);
		if (st == OXR_OK) {
			b->st.puts_sent++;
			b->st.last_sent++;
		} else if (st == OXR_ERR_REVOKED) {
			/* the revoke itself tells every rank: no aborts */
			b->c.nout = 0;
			b->c.failed = 1;
			return fail(b, st, oxr_errmsg());
		} else if (m->h.kind != BAR_ABORT && bad < 0) {
			char why[200];
			bad = m->to;
			snprintf(why, sizeof(why), "writing to rank %d failed: %s", m->to,
				 oxr_errmsg());
			fail(b, OXR_ERR_PEER, why);
		}
	}
	b->c.nout = 0;
	if (bad >= 0 && !b->c.failed) {
		bar_core_fail(&b->c, bad);
		flush(b);
	}
	return bad >= 0 ? fail(b, OXR_ERR_PEER, "") : OXR_OK;
}

/* A write this rank refuses: the barrier fails here, and its neighbours
 * are told (the writer blamed), with what was wrong. */
static oxr_status_t refuse(oxr_barrier_t *b, int from, const char *what)
{
	char why[200];

	snprintf(why, sizeof(why), "a malformed write from rank %d: %s", from, what);
	fail(b, OXR_ERR_PROTO, why);
	bar_refuse(&b->c, from, what); /* nothing new where the core refused it */
	flush(b);
	return fail(b, OXR_ERR_PROTO, "");
}

/* Reads the slot the note names, as it is now (see the invariant). */
static oxr_status_t take(oxr_barrier_t *b, const oxr_win_note *note, int *state)
{
	int s = bar_core_slot_at(&b->c, note->offset);
	bar_hdr h;
	bar_run run;

	b->st.puts_received++;
	b->st.last_received++;
	/* a header, or a header and its run where the slot takes one */
	if (s < 0 || (note->len != sizeof(bar_hdr) && note->len != bar_core_slot_bytes(&b->c, s)))
		return refuse(b, note->peer, "no slot of its window starts and ends there");
	memcpy(&h, b->mem + note->offset, sizeof(h));
	if (note->len > sizeof(h))
		memcpy(&run, b->mem + note->offset + sizeof(h), sizeof(run));
	*state = bar_core_arrive(&b->c, note->peer, s, &h, note->len > sizeof(h) ? &run : NULL);
	if (*state < 0 && b->c.bad)
		return refuse(b, b->c.failed_rank, b->c.bad);
	return flush(b);
}

static int64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* A direct dependency whose link is down ends the wait. */
static int dead_peer(oxr_barrier_t *b)
{
	int k = bar_core_waits_on(&b->c), i;

	for (i = 0; i < k; i++)
		if (oxr_link_lost(b->g, b->c.peers[i].rank))
			return b->c.peers[i].rank;
	return -1;
}

/*
 * The group was reset (oxr_group_reset): every rank's windows carry the new
 * epoch, so the transport refuses writes of the old one, and the tags stop
 * any that landed before.  The barriers start again at number 0, failure
 * forgotten.  The slots are not cleared: a write of the new epoch may have
 * landed during the reset already.
 */
static oxr_status_t new_epoch(oxr_barrier_t *b)
{
	int algo = b->c.algo, n = b->c.n, radix = b->c.radix;

	bar_core_free(&b->c);
	if (core_init(b, algo, radix))
		return oxr_err(OXR_ERR_NOMEM, "barrier: out of memory for %d ranks", n);
	b->err = 0;
	return OXR_OK;
}

oxr_status_t oxr_barrier(oxr_barrier_t *b, int timeout_ms)
{
	int64_t start = now_us(), deadline;
	int state, slice = BAR_SLICE_MS;
	oxr_status_t st;

	if (!b)
		return oxr_err(OXR_ERR_INVAL, "barrier: NULL barrier");
	if (oxr_group_epoch(b->g) != b->c.epoch && (st = new_epoch(b)))
		return st;
	if (b->err)
		return fail(b, b->err, "");
	deadline = timeout_ms < 0 ? INT64_MAX : start + (int64_t)timeout_ms * 1000;
	b->st.last_sent = b->st.last_received = 0;
	state = bar_core_enter(&b->c);
	if ((st = flush(b)))
		return st;
	while (state == 0) {
		oxr_win_note note;
		int64_t t = now_us();
		int dead;
		/* yield-polling first: see bcast_common.c (an idle core's wakeup
		 * costs more than a yield on an oversubscribed machine) */
		if (t - start < b->spin_us) {
			if ((st = oxr_group_progress(b->g)))
				return fail(b, st, oxr_errmsg());
			st = oxr_win_wait(b->w, 0, &note);
			if (st == OXR_ERR_TIMEOUT) {
				sched_yield();
				continue;
			}
		} else {
			int64_t left = deadline - t;
			int ms = left / 1000 < slice ? (int)(left / 1000) : slice;
			st = oxr_win_wait(b->w, ms < 0 ? 0 : ms, &note);
			if (st == OXR_ERR_TIMEOUT && slice < BAR_SLICE_MAX_MS)
				slice *= 2;
		}
		if (st == OXR_OK) {
			if ((st = take(b, &note, &state)))
				return st;
			continue;
		}
		if (st != OXR_ERR_TIMEOUT)
			return fail(b, st, oxr_errmsg());
		if ((dead = dead_peer(b)) >= 0) {
			char why[160];
			snprintf(why, sizeof(why), "rank %d, which this rank waits on, is gone", dead);
			fail(b, OXR_ERR_PEER, why);
			bar_core_fail(&b->c, dead);
			flush(b);
			return fail(b, OXR_ERR_PEER, "");
		}
		if (now_us() >= deadline)
			return oxr_err(OXR_ERR_TIMEOUT, "barrier %u (%s) on rank %d of %d: not "
				       "complete within %d ms", b->c.seq,
				       oxr_barrier_algo_name(oxr_barrier_algo(b)), b->c.rank,
				       b->c.n, timeout_ms);
	}
	if (state < 0) {
		char why[160];
		snprintf(why, sizeof(why), "rank %d is gone (a peer said so)", b->c.failed_rank);
		return fail(b, OXR_ERR_PEER, why);
	}
	b->st.barriers++;
	return OXR_OK;
}
