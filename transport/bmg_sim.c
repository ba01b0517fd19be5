/* SPDX-License-Identifier: MIT */
/*
 * The revoke's broadcast (bmg.c) over a simulated group: the test of its
 * invariant at 2^16 ranks (tests/transport/test_bmg.c) and oxr-bench
 * --simulate's figures at 2^20 come from this one loop.
 *
 * Deliveries go in FIFO order, so the queue is a BFS and a rank's depth is
 * the round the frame reaches it in.  A rank forwards as it is taken from
 * the queue, and a send that meets a dead rank is answered at once (in
 * the library the answer is a failed open or a broken link, later): the
 * cursors a rank holds are needed only while it forwards, so one state
 * serves every rank and the simulation costs 24 bytes a rank, not 264
 * more.
 */
#include <stdlib.h>
#include <string.h>

#include "bmg.h"

static int bit(const uint8_t *m, int i) { return m[i / 8] >> (i % 8) & 1; }

static int gone_fn(void *arg, int rank) { return bit(arg, rank); }

void oxr_bmg_sim_free(struct oxr_bmg_sim *s)
{
	free(s->depth);
	free(s->sent);
	free(s->recvd);
	free(s->probes);
	s->depth = NULL;
	s->sent = s->recvd = s->probes = NULL;
}

static void totals(struct oxr_bmg_sim *s, const uint8_t *gone)
{
	int r;

	for (r = 0; r < s->n; r++) {
		if (bit(gone, r))
			continue;
		s->live++;
		s->reached += s->depth[r] >= 0;
		s->rounds = s->depth[r] > s->rounds ? s->depth[r] : s->rounds;
		s->frames += s->sent[r];
		s->probes_all += s->probes[r];
		s->max_sent = s->sent[r] > s->max_sent ? s->sent[r] : s->max_sent;
		s->max_recvd = s->recvd[r] > s->max_recvd ? s->recvd[r] : s->max_recvd;
		s->max_probes = s->probes[r] > s->max_probes ? s->probes[r] : s->max_probes;
	}
}

int oxr_bmg_simulate(struct oxr_bmg_sim *s)
{
	size_t n = s->n > 0 ? (size_t)s->n : 0, nb = (n + 7) / 8;
	int32_t *from = NULL, *queue = NULL;
	uint8_t *gone = NULL;
	size_t head = 0, tail = 0;
	struct oxr_bmg b;
	int ok = -1;

	s->depth = NULL;
	s->sent = s->recvd = s->probes = NULL;
	s->rounds = s->live = s->reached = 0;
	s->frames = s->probes_all = 0;
	s->max_sent = s->max_recvd = s->max_probes = 0;
	s->state_bytes = sizeof(b);
	if (s->n < 1 || !s->dead || s->origin < 0 || s->origin >= s->n || bit(s->dead, s->origin))
		return -1;
	s->depth = malloc(n * sizeof(*s->depth));
	s->sent = calloc(n, sizeof(*s->sent));
	s->recvd = calloc(n, sizeof(*s->recvd));
	s->probes = calloc(n, sizeof(*s->probes));
	from = malloc(n * sizeof(*from));
	queue = malloc(n * sizeof(*queue));
	gone = malloc(nb);
	if (!s->depth || !s->sent || !s->recvd || !s->probes || !from || !queue || !gone) {
		oxr_bmg_sim_free(s);
		goto out;
	}
	memcpy(gone, s->dead, nb);
	memset(s->depth, 0xff, n * sizeof(*s->depth));
	s->depth[s->origin] = 0;
	from[s->origin] = -1;
	queue[tail++] = s->origin;
	while (head < tail) {
		int r = queue[head++], t;
		oxr_bmg_dead_fn dead = s->known ? gone_fn : NULL;
		oxr_bmg_start(&b, r, s->n, from[r], dead, gone);
		while ((t = oxr_bmg_next(&b)) >= 0) {
			if (bit(gone, t)) {
				s->probes[r]++;
				oxr_bmg_failed(&b, t, dead, gone);
				continue;
			}
			s->recvd[t]++;
			if (s->depth[t] >= 0) {
				s->sent[r]++;
				continue;
			}
			s->depth[t] = s->depth[r] + 1;
			if (s->crash && bit(s->crash, t)) {
				/* it dies with the frame, unforwarded: r's link to it breaks */
				gone[t / 8] |= (uint8_t)(1u << t % 8);
				s->probes[r]++;
				oxr_bmg_failed(&b, t, dead, gone);
				continue;
			}
			s->sent[r]++;
			from[t] = r;
			queue[tail++] = t;
		}
	}
	totals(s, gone);
	ok = 0;
out:
	free(from);
	free(queue);
	free(gone);
	return ok;
}
