/* SPDX-License-Identifier: MIT */
/*
 * What both barrier cores share: the window's layout, the checks every
 * arriving write goes through ((slot, sender) and (epoch, seq)), the
 * failure flood, and the step to the next barrier.
 *
 * Invariant (the patent's timer, S27-S30, replaced by tags): a core acts on
 * a write only if it carries the core's epoch and the sequence number of
 * the barrier it stands at (or the next one, kept aside).  A write tagged
 * with an older sequence number belongs to a barrier this rank has already
 * completed, and one tagged with another epoch to a group state that was
 * reset: everything they could have told has been told, so they are
 * dropped and counted, and no register ever needs a timed reset.  A write
 * of barrier seq+1 can arrive while this rank is still in seq (its sender
 * was told of seq's establishment first); it cannot be of seq+2, since
 * nobody completes seq+1 before this rank entered it.  What cannot come
 * from a working peer (a slot its sender does not own, seq+2, the wrong
 * parity's half, a kind or length the slot does not take, a run its sender
 * cannot send) fails the barrier, naming the sender: the write was not
 * lost in transit, it was never one the algorithm sends.
 */
#include <stdlib.h>
#include <string.h>

#include "barrier_core.h"

static const struct bar_algo *algo_of(const bar_core *c)
{
	return c->algo == BAR_ALG_BITMAP ? &bar_bitmap_algo : &bar_dissem_algo;
}

/* The same for every rank but slot_from, which is relative to the owner. */
static int layout(bar_core *c)
{
	const struct bar_algo *a = algo_of(c);
	int j, k = a->nslots(c);

	c->nslots = k;
	c->slot_from = calloc((size_t)k + 1, sizeof(int));
	c->slot_run = calloc((size_t)k + 1, sizeof(int));
	c->slot_off = calloc(2 * (size_t)k + 1, sizeof(size_t));
	if (!c->slot_from || !c->slot_run || !c->slot_off)
		return -1;
	for (j = 0; j < 2 * k; j++) {
		if (j < k)
			a->slot(c, j, &c->slot_from[j], &c->slot_run[j]);
		c->slot_off[j + 1] = c->slot_off[j] + sizeof(bar_hdr) +
				     (c->slot_run[j % k] ? sizeof(bar_run) : 0);
	}
	return 0;
}

int bar_core_init(bar_core *c, int algo, int n, int rank, int radix, uint32_t epoch)
{
	int lg = 0;

	memset(c, 0, sizeof(*c));
	if (n < 1 || rank < 0 || rank >= n || radix < 2 ||
	    (algo != BAR_ALG_BITMAP && algo != BAR_ALG_DISSEM))
		return -1;
	while ((1LL << lg) < n)
		lg++;
	*c = (bar_core){ .algo = algo, .n = n, .rank = rank, .radix = radix,
			 .nwords = (n + 63) / 64, .rounds = lg, .epoch = epoch };
	c->maxpeers = algo_of(c)->maxpeers(c);
	/* the most one call can push: a failure told to every neighbour, an
	 * establishment to every child, or the rounds that came early */
	c->outcap = c->maxpeers + 4;
	c->bits = calloc((size_t)c->nwords, 8);
	c->next = calloc((size_t)c->nwords, 8);
	c->out = calloc((size_t)c->outcap, sizeof(*c->out));
	c->peers = calloc((size_t)c->maxpeers + 1, sizeof(*c->peers));
	if (!c->bits || !c->next || !c->out || !c->peers || layout(c)) {
		bar_core_free(c);
		return -1;
	}
	return 0;
}

void bar_core_free(bar_core *c)
{
	free(c->bits);
	free(c->next);
	free(c->out);
	free(c->peers);
	free(c->slot_from);
	free(c->slot_run);
	free(c->slot_off);
	c->bits = c->next = NULL;
	c->out = NULL;
	c->peers = NULL;
	c->slot_from = c->slot_run = NULL;
	c->slot_off = NULL;
}

size_t bar_core_window_bytes(const bar_core *c)
{
	return c->slot_off[2 * c->nslots];
}

size_t bar_core_slot_offset(const bar_core *c, int s)
{
	return c->slot_off[s];
}

size_t bar_core_slot_bytes(const bar_core *c, int s)
{
	return c->slot_off[s + 1] - c->slot_off[s];
}

int bar_core_slot_at(const bar_core *c, uint64_t off)
{
	int lo = 0, hi = 2 * c->nslots - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (c->slot_off[mid] == off)
			return mid;
		if (c->slot_off[mid] < off)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

void bar_push(bar_core *c, bar_peer to, uint32_t kind, uint32_t aux, const bar_run *run)
{
	if (to.rank == c->rank || c->nout >= c->outcap)
		return; /* outcap bounds every call's pushes (see init) */
	c->out[c->nout++] = (bar_msg){ .to = to.rank,
				       .slot = (int)(c->seq & 1) * c->nslots + to.slot,
				       .h = { c->epoch, c->seq, kind, aux },
				       .run = run ? *run : (bar_run){ 0, 0 } };
}

int bar_complete(bar_core *c)
{
	uint64_t *t = c->bits;

	/* the next barrier starts from what came early; the old register is
	 * cleared at once (S29), older writes being stopped by their tag */
	memset(t, 0, (size_t)c->nwords * 8);
	c->bits = c->next;
	c->next = t;
	c->have = c->next_have;
	c->next_have = 0;
	c->got = c->next_got;
	c->next_got = 0;
	c->req_sent = 0;
	c->round = 0;
	c->entered = 0;
	c->seq++;
	return 1;
}

/* Fails the barrier blaming `who`, and tells the neighbours but `skip`. */
static int fail_telling(bar_core *c, int who, int skip)
{
	int k, i;

	if (c->failed)
		return -1;
	c->failed = 1;
	c->failed_rank = who;
	k = algo_of(c)->dependents(c, c->peers);
	for (i = 0; i < k; i++)
		if (c->peers[i].rank != skip)
			bar_push(c, c->peers[i], BAR_ABORT, (uint32_t)who, NULL);
	return -1;
}

int bar_core_fail(bar_core *c, int who)
{
	return fail_telling(c, who, who); /* the failed rank hears nothing */
}

int bar_refuse(bar_core *c, int from, const char *why)
{
	if (!c->failed)
		c->bad = why;
	/* a wrong write's writer may be alive: where it is a neighbour, it
	 * is told too, rather than waiting out its timeout */
	return fail_telling(c, from, -1);
}

int bar_core_enter(bar_core *c)
{
	if (c->failed)
		return -1;
	if (c->next_abort)
		return bar_core_fail(c, c->next_abort_rank);
	if (c->entered)
		return 0;
	c->entered = 1;
	return algo_of(c)->enter(c);
}

int bar_core_arrive(bar_core *c, int from, int slot, const bar_hdr *h, const bar_run *run)
{
	int32_t d = (int32_t)(h->seq - c->seq);
	int j = c->nslots ? slot % c->nslots : 0;

	if (c->failed)
		return -1;
	if (slot < 0 || slot >= 2 * c->nslots)
		return bar_refuse(c, from, "a write outside the window's slots");
	if (from != c->slot_from[j])
		return bar_refuse(c, from, "a write into a slot that is not its sender's");
	if (h->epoch != c->epoch || d < 0) {
		c->stale++;
		return 0;
	}
	if (d > 1)
		return bar_refuse(c, from, "a write of a barrier two ahead of this rank");
	if ((int)(h->seq & 1) != slot / c->nslots)
		return bar_refuse(c, from, "a write in the other sequence parity's slot");
	/* a run where the slot has no room for one was written past its end.
	 * A run under another kind than a request is no fault: the note was
	 * the request's, and the sender's abort has overwritten its header
	 * since (barrier.c reads the slot at note time); the cores ignore it */
	if (run && !c->slot_run[j])
		return bar_refuse(c, from, "a run in a slot that takes none");
	if (h->kind == BAR_ABORT) {
		if (h->aux >= (uint32_t)c->n)
			return bar_refuse(c, from, "an abort naming no rank of the group");
		if (d == 0)
			return bar_core_fail(c, (int)h->aux);
		c->next_abort = 1;
		c->next_abort_rank = (int)h->aux;
		return 0;
	}
	if (d == 1)
		return algo_of(c)->early(c, j, h, run);
	return algo_of(c)->arrive(c, j, h, run);
}

int bar_core_waits_on(bar_core *c)
{
	if (c->failed || !c->entered)
		return 0;
	return algo_of(c)->waits_on(c, c->peers);
}
