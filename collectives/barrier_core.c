/* SPDX-License-Identifier: MIT */
/*
 * What both barrier cores share: the (epoch, seq) filter every arriving
 * write goes through, the failure flood, and the step to the next barrier.
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
 * nobody completes seq+1 before this rank entered it.
 */
#include <stdlib.h>
#include <string.h>

#include "barrier_core.h"

static const struct bar_algo *algo_of(const bar_core *c)
{
	return c->algo == BAR_ALG_BITMAP ? &bar_bitmap_algo : &bar_dissem_algo;
}

size_t bar_slot_bytes(int n)
{
	return sizeof(bar_hdr) + 8 * (size_t)((n + 63) / 64);
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
	/* the most one call can push: a failure told to parent and every
	 * child (at most (radix-1) per tree level) or to every round's target */
	c->outcap = (radix - 1) * (lg + 1) + lg + 4;
	c->bits = calloc((size_t)c->nwords, 8);
	c->next = calloc((size_t)c->nwords, 8);
	c->out = calloc((size_t)c->outcap, sizeof(*c->out));
	if (!c->bits || !c->next || !c->out) {
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
	c->bits = c->next = NULL;
	c->out = NULL;
}

void bar_push(bar_core *c, int to, uint32_t kind, uint32_t aux, int with_bits)
{
	if (to == c->rank || c->nout >= c->outcap)
		return; /* outcap bounds every call's pushes (see init) */
	c->out[c->nout++] = (bar_msg){ .to = to, .h = { c->epoch, c->seq, kind, aux },
				       .with_bits = with_bits };
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

int bar_core_fail(bar_core *c, int who)
{
	int peers[256], k, i;

	if (c->failed)
		return -1;
	c->failed = 1;
	c->failed_rank = who;
	k = algo_of(c)->dependents(c, peers, 256);
	for (i = 0; i < k; i++)
		if (peers[i] != who)
			bar_push(c, peers[i], BAR_ABORT, (uint32_t)who, 0);
	return -1;
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

int bar_core_arrive(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits)
{
	int32_t d = (int32_t)(h->seq - c->seq);

	if (c->failed)
		return -1;
	if (from < 0 || from >= c->n || from == c->rank) {
		c->odd++;
		return 0;
	}
	if (h->epoch != c->epoch || d < 0) {
		c->stale++;
		return 0;
	}
	if (d > 1) {
		c->odd++;
		return 0;
	}
	if (h->kind == BAR_ABORT) {
		if (d == 0)
			return bar_core_fail(c, (int)h->aux);
		c->next_abort = 1;
		c->next_abort_rank = (int)h->aux;
		return 0;
	}
	if (d == 1) {
		algo_of(c)->early(c, from, h, bits);
		return 0;
	}
	return algo_of(c)->arrive(c, from, h, bits);
}

int bar_core_waits_on(const bar_core *c, int *peers, int max)
{
	if (c->failed || !c->entered)
		return 0;
	return algo_of(c)->waits_on(c, peers, max);
}
