/* SPDX-License-Identifier: MIT */
/*
 * The heartbeat's ring detector (ring.c) over a simulated group: the test
 * of its invariant at 2^16 ranks (tests/transport/test_ring.c) and
 * oxr-bench --simulate's figures at 2^20 come from this one loop.
 *
 * Time goes in periods of H, from event to event: a rank stopping, a
 * watcher finding the rank it watches dead.  A watch begun in period b of
 * a rank that stops in period s finds it at max(b, s) + 1, once it was
 * silent a whole period (the library's H to H + H/6 counted as one).
 * Within a period stops go first: a watcher that stops finds nothing.
 * Each watcher learns only through its own watch, so its walk depends on
 * the stop times alone and at most one find per rank waits: a heap of the
 * stops and the pending finds, 2P entries at most, orders them.  Between
 * events only pings happen, counted per watch when it ends, so a run
 * costs O((P + finds) log P), not P per period (all but two of 2^16 ranks
 * dead: 32,767 periods).
 */
#include <stdlib.h>

#include "ring.h"

enum { STOP, FIND }; /* at one period, stops first */

struct sim {
	struct oxr_ring_sim *s;
	int32_t *since;  /* the period each rank's watch began */
	int32_t *cnt;    /* live ranks watching each rank now */
	uint64_t *heap;  /* period << 32 | kind << 31 | rank, least first */
	size_t nheap;
	uint64_t *sent, *recvd; /* pings, wide: a period count times 3 */
};

static int stopped(const int32_t *die, int r, int64_t t)
{
	return die[r] != OXR_RING_LIVES && die[r] <= t;
}

static int stopped_at_end(void *arg, int r) { return ((const int32_t *)arg)[r] != OXR_RING_LIVES; }

static void push(struct sim *m, int64_t t, int kind, int r)
{
	uint64_t key = (uint64_t)t << 32 | (uint64_t)kind << 31 | (uint32_t)r;
	size_t i = m->nheap++;

	for (; i && m->heap[(i - 1) / 2] > key; i = (i - 1) / 2)
		m->heap[i] = m->heap[(i - 1) / 2];
	m->heap[i] = key;
}

static uint64_t pop(struct sim *m)
{
	uint64_t top = m->heap[0], last = m->heap[--m->nheap];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < m->nheap) {
		if (c + 1 < m->nheap && m->heap[c + 1] < m->heap[c])
			c++;
		if (m->heap[c] >= last)
			break;
		m->heap[i] = m->heap[c];
		i = c;
	}
	m->heap[i] = last;
	return top;
}

/* r watches x from period t; its find is due if x ever stops. */
static void start_watch(struct sim *m, int r, int x, int64_t t)
{
	struct oxr_ring_sim *s = m->s;

	s->watch[r] = x;
	m->since[r] = (int32_t)t;
	if (x < 0)
		return;
	m->cnt[x]++;
	if (m->cnt[x] > s->max_watchers)
		s->max_watchers = m->cnt[x];
	if (!stopped(s->die, x, t) && (uint32_t)m->cnt[x] * OXR_RING_PINGS > s->max_recvd)
		s->max_recvd = (uint32_t)m->cnt[x] * OXR_RING_PINGS;
	if (s->die[x] != OXR_RING_LIVES)
		push(m, (t > s->die[x] ? t : s->die[x]) + 1, FIND, r);
}

/* r's watch ends at period t (a find, its stop, the end of the run): its
 * pings, and those its rank took while it lived. */
static void end_watch(struct sim *m, int r, int64_t t)
{
	struct oxr_ring_sim *s = m->s;
	int x = s->watch[r];
	int64_t b = m->since[r], e = t;

	if (x < 0)
		return;
	m->cnt[x]--;
	m->sent[r] += (uint64_t)(t - b) * OXR_RING_PINGS;
	if (t > b)
		s->max_sent = OXR_RING_PINGS; /* one watch at a time */
	if (s->die[x] != OXR_RING_LIVES && s->die[x] < e)
		e = s->die[x];
	if (e > b)
		m->recvd[x] += (uint64_t)(e - b) * OXR_RING_PINGS;
}

static void find(struct sim *m, int r, int64_t t)
{
	struct oxr_ring_sim *s = m->s;
	int x = s->watch[r];

	if (!stopped(s->die, x, t - 1) || m->since[r] > t - 1)
		s->false_pos++; /* it answered within the period */
	if (s->found[x] < 0)
		s->found[x] = (int32_t)t;
	end_watch(m, r, t);
	start_watch(m, r, oxr_ring_watched(r, s->n, oxr_ring_distance(r, s->n, x) + 1, NULL, NULL),
		    t);
}

/* At the end: each live rank watched once, by the rank the core names;
 * each run of stopped ranks below a live rank found within its bound. */
static void check_end(struct sim *m)
{
	struct oxr_ring_sim *s = m->s;
	int r, x, j;

	for (r = 0; r < s->n; r++)
		if (s->die[r] == OXR_RING_LIVES)
			s->live++;
	for (r = 0; r < s->n; r++) {
		int64_t bound = 0;
		if (s->die[r] != OXR_RING_LIVES) {
			s->missed += s->found[r] < 0;
			if (s->found[r] >= 0 && s->found[r] - s->die[r] > s->worst_delay)
				s->worst_delay = s->found[r] - s->die[r];
			continue;
		}
		if (s->live >= 2) {
			int w = oxr_ring_watcher(r, s->n, stopped_at_end, (void *)s->die);
			s->unwatched += m->cnt[r] == 0;
			s->overwatched += m->cnt[r] > 1;
			s->watcher_differs += w < 0 || s->watch[w] != r;
		} else {
			s->overwatched += m->cnt[r] != 0;
		}
		/* the run below r: its j-th rank is found at the latest j periods
		 * after the last of the first j stopped (ring.c) */
		for (j = 1; (x = oxr_ring_watched(r, s->n, j, NULL, NULL)) >= 0 &&
			    s->die[x] != OXR_RING_LIVES; j++) {
			bound = s->die[x] > bound ? s->die[x] : bound;
			s->late += s->found[x] >= 0 && s->found[x] > bound + j;
		}
		if (j - 1 > s->longest_run)
			s->longest_run = j - 1;
	}
}

/* Pings per live rank and period over the run, the watches closed at its
 * end. */
static void means(struct sim *m)
{
	struct oxr_ring_sim *s = m->s;
	uint64_t life = 0, sent = 0, recvd = 0;
	int r;

	for (r = 0; r < s->n; r++)
		if (s->die[r] == OXR_RING_LIVES)
			end_watch(m, r, s->periods);
	for (r = 0; r < s->n; r++) {
		life += s->die[r] == OXR_RING_LIVES ? (uint64_t)s->periods : (uint64_t)s->die[r];
		sent += m->sent[r];
		recvd += m->recvd[r];
		s->sent[r] = m->sent[r] > UINT32_MAX ? UINT32_MAX : (uint32_t)m->sent[r];
		s->recvd[r] = m->recvd[r] > UINT32_MAX ? UINT32_MAX : (uint32_t)m->recvd[r];
	}
	s->mean_sent = life ? (double)sent / (double)life : 0;
	s->mean_recvd = life ? (double)recvd / (double)life : 0;
}

void oxr_ring_sim_free(struct oxr_ring_sim *s)
{
	free(s->watch);
	free(s->found);
	free(s->sent);
	free(s->recvd);
	s->watch = s->found = NULL;
	s->sent = s->recvd = NULL;
}

static void reset_out(struct oxr_ring_sim *s)
{
	s->watch = s->found = NULL;
	s->sent = s->recvd = NULL;
	s->live = s->periods = s->missed = s->false_pos = 0;
	s->unwatched = s->overwatched = s->watcher_differs = 0;
	s->max_watchers = s->late = s->worst_delay = s->longest_run = 0;
	s->max_sent = s->max_recvd = 0;
	s->mean_sent = s->mean_recvd = 0;
	s->state_bytes = sizeof(struct oxr_ring_watch);
}

oxr_status_t oxr_ring_simulate(struct oxr_ring_sim *s)
{
	size_t n = s->n > 0 ? (size_t)s->n : 0;
	struct sim m = { .s = s };
	oxr_status_t st = OXR_ERR_NOMEM;
	int64_t last = -1, maxdie = -1;
	int r;

	reset_out(s);
	if (s->n < 1 || !s->die)
		return OXR_ERR_INVAL;
	for (r = 0; r < s->n; r++) {
		/* a find comes at most n periods after the last stop */
		if (s->die[r] < OXR_RING_LIVES || s->die[r] > INT32_MAX - s->n - 1)
			return OXR_ERR_INVAL;
		maxdie = s->die[r] > maxdie ? s->die[r] : maxdie;
	}
	s->watch = malloc(n * sizeof(*s->watch));
	s->found = malloc(n * sizeof(*s->found));
	s->sent = malloc(n * sizeof(*s->sent));
	s->recvd = malloc(n * sizeof(*s->recvd));
	m.since = malloc(n * sizeof(*m.since));
	m.cnt = calloc(n, sizeof(*m.cnt));
	m.heap = malloc(2 * n * sizeof(*m.heap));
	m.sent = calloc(n, sizeof(*m.sent));
	m.recvd = calloc(n, sizeof(*m.recvd));
	if (!s->watch || !s->found || !s->sent || !s->recvd || !m.since || !m.cnt || !m.heap ||
	    !m.sent || !m.recvd) {
		oxr_ring_sim_free(s);
		goto out;
	}
	for (r = 0; r < s->n; r++) {
		s->found[r] = -1;
		s->watch[r] = -1;
		if (s->die[r] > 0)
			push(&m, s->die[r], STOP, r);
	}
	/* period 0: every rank not stopped yet watches the rank below it */
	for (r = 0; r < s->n; r++)
		if (s->die[r] != 0)
			start_watch(&m, r, oxr_ring_watched(r, s->n, 1, NULL, NULL), 0);
	while (m.nheap) {
		uint64_t e = pop(&m);
		int64_t t = (int64_t)(e >> 32);
		int kind = (int)(e >> 31 & 1);
		r = (int)(e & 0x7fffffff);
		if (kind == STOP) {
			end_watch(&m, r, t);
		} else if (!stopped(s->die, r, t)) {
			find(&m, r, t);
			last = t;
		}
	}
	/* one period at least: with nobody stopped, the steady state's pings */
	s->periods = (int)((last > maxdie ? last : maxdie > 0 ? maxdie : 0) + 1);
	check_end(&m);
	means(&m);
	st = OXR_OK;
out:
	free(m.since);
	free(m.cnt);
	free(m.heap);
	free(m.sent);
	free(m.recvd);
	return st;
}
