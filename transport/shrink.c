/* SPDX-License-Identifier: MIT */
/*
 * Shrink (ULFM's MPI_Comm_shrink, done in place): the survivors of a
 * failure agree on who failed and become the group, renumbered 0..n'-1 in
 * their old order, in a new epoch.
 *
 * The agreement is agree.c's: each rank reports the failed ranks it knows
 * up a tree of the live ranks that is rebuilt around the dead, the root
 * decides once every part of the group reported, and the decision goes
 * back down (agree.c has the tree, why every rank that decides decides
 * the same list, and its costs).  This file drives it over the links:
 * the links down at the start are the ranks known dead, and the core
 * learns each later death as a send or a wait meets it (a link down); a
 * rank it waits on (its parent, the children that have not reported) has
 * its link opened, so that a dead one is found, and is watched like the
 * heartbeat's predecessor when
 * OXR_HEARTBEAT_MS is set (a stopped rank, or a host powered off, breaks
 * no link; the heartbeat's ring announces only an epoch's first failure).
 * A rank takes a report's failed ranks as failed (shrink_frame.c: a
 * failure is final).  A decided rank sends what the core owes (the
 * decision to its children, its parent, those that reported to it) and
 * answers, from the decision it keeps, a report that still comes (the
 * reporter's parent died after it decided).  Ranks left out whose links
 * are up get the decision too: a rank reported dead wrongly learns it was
 * left out, rather than going on as a group of its own.
 *
 * A frame also carries its sender's epoch and count of collective objects;
 * reports carry the highest below them and the decision the root's
 * highest, so that survivors that left the old group at different points
 * go on alike.  What a rank sent before it started the agreement is of the
 * old epoch: its fence on each link says where that ends (shrink_frame.c).
 *
 * Then the links to the ranks left out close, the others move to their
 * new numbers, and a reset (an OX_SYNC_BALL on every open link, the new
 * epoch, windows re-keyed) keeps anything of the old epoch out of the new.
 *
 * Cost per rank, l = ceil(log2 P), f failed, c dying during it: at most
 * l + 1 + 2c agreement frames of 4f bytes sent (2 on average), one fence
 * per open link, O(1 + f) bytes of state; nothing per rank of the group
 * but the renumbering of the link table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "oxr_internal.h"
#include "boot_impl.h"
#include "link.h"
#include "link_open.h"
#include "provider.h"
#include "shrink.h"
#include "tcp/tcp_socket.h"

/* The ranks the agreement waits on, when it began to wait on each and
 * when it last pinged it (as progress.c's heartbeat watches one rank). */
#define WATCH_MAX (OXR_AGREE_LEVELS + 1)
struct watch {
	int n;
	int rank[WATCH_MAX];
	int64_t since[WATCH_MAX], pinged[WATCH_MAX];
};

static int in(const int32_t *v, int len, int32_t x)
{
	int i = oxr_agree_below(v, len, x);

	return i < len && v[i] == x;
}

/* A decision came or was made: the epoch and count it goes on from (an
 * adopted one's came with it, shrink_frame.c). */
static void note_decision(oxr_group *g)
{
	struct sh_state *s = &g->sh;

	if (s->ag->decided && !s->have_dec) {
		s->dec_epoch = s->epoch;
		s->dec_objs = s->objs;
		s->have_dec = 1;
	}
}

static oxr_status_t failed(oxr_group *g, int who)
{
	if (oxr_agree_failed(g->sh.ag, who, NULL, NULL))
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	note_decision(g);
	g->sh.news = 1;
	return OXR_OK;
}

/* Sends what the agreement owes now; a send that cannot go is a dead rank. */
static oxr_status_t pump(oxr_group *g)
{
	struct sh_state *s = &g->sh;
	struct oxr_agree *a = s->ag;
	oxr_status_t st;
	int k, to;

	note_decision(g);
	while ((k = oxr_agree_next(a, &to, NULL, NULL)) > 0) {
		if (k == OXR_AGREE_UP)
			st = oxr_shrink_send(g, to, k, a->fail, a->nfail, s->epoch, s->objs);
		else
			st = oxr_shrink_send(g, to, k, a->dec, a->ndec, s->dec_epoch, s->dec_objs);
		if (st == OXR_ERR_NOMEM)
			return st;
		if ((st || link_down(link_peek(g, to))) && (st = failed(g, to)))
			return st;
	}
	return k < 0 ? oxr_err(OXR_ERR_NOMEM, "shrink: out of memory") : OXR_OK;
}

/* The core's waits now; a rank newly waited on has its link opened (the
 * fence is its first frame) and is watched from now on. */
static oxr_status_t watch_update(oxr_group *g, struct watch *w)
{
	struct watch nw = { 0 };
	int64_t now = oxr_now_ms();
	oxr_status_t st;
	int i, j;

	if (!g->sh.ag->decided)
		nw.n = oxr_agree_waits(g->sh.ag, nw.rank, WATCH_MAX, NULL, NULL);
	for (i = 0; i < nw.n; i++) {
		for (j = 0; j < w->n && w->rank[j] != nw.rank[i]; j++)
			;
		if (j < w->n) {
			nw.since[i] = w->since[j];
			nw.pinged[i] = w->pinged[j];
			continue;
		}
		nw.since[i] = now;
		if ((st = oxr_shrink_fence(g, nw.rank[i])) == OXR_ERR_NOMEM)
			return st;
	}
	*w = nw;
	return OXR_OK;
}

/* A rank waited on whose link is down is dead to the core; with the
 * heartbeat on, one silent for OXR_HEARTBEAT_MS is failed, and pinged
 * every third of it. */
static oxr_status_t watch_check(oxr_group *g, struct watch *w)
{
	int h = g->ctx->heartbeat_ms, i;
	int64_t now = oxr_now_ms();
	oxr_status_t st;

	for (i = 0; i < w->n; i++) {
		int r = w->rank[i];
		struct link *l = g->links[r];
		int64_t heard = l && l->last_rx > w->since[i] ? l->last_rx : w->since[i];
		/* opening too: a stopped rank's kernel takes the connection and
		 * the handshake waits (as the heartbeat judges its predecessor) */
		if (h && l && (link_up(l) || l->state == LINK_OPENING) && now - heard > h)
			oxr_link_fail(g, l, OXR_ERR_PEER, "rank %d (%s) sent nothing for %lld ms "
				      "while rank %d waited on it in a shrink (OXR_HEARTBEAT_MS=%d): "
				      "taken as failed", r, l->addr, (long long)(now - heard),
				      g->rank, h);
		if (link_down(link_peek(g, r))) {
			if ((st = failed(g, r)))
				return st;
		} else if (h && l && link_up(l) && now - heard >= h / 3 &&
			   now - w->pinged[i] >= h / 3 && oxr_beat(g, r, 1) == OXR_OK) {
			w->pinged[i] = now;
		}
	}
	return OXR_OK;
}

struct moved_arg {
	oxr_group *g;
	const struct watch *w;
};

/* The wait's end: news for the agreement or a waited-on link down. */
static int moved(void *arg)
{
	const struct moved_arg *x = arg;
	int i;

	if (x->g->sh.news)
		return 1;
	for (i = 0; i < x->w->n; i++)
		if (link_down(link_peek(x->g, x->w->rank[i])))
			return 1;
	return 0;
}

static int owes_news(const oxr_group *g, int p, const void *arg)
{
	const struct watch *w = arg;
	int i;

	for (i = 0; i < w->n; i++)
		if (w->rank[i] == p)
			return link_up(link_peek(g, p));
	return 0;
}

static oxr_status_t wait_timeout(oxr_group *g, const struct watch *w, int timeout_ms)
{
	char who[96];
	int owed = oxr_rank_list(g, owes_news, w, who, sizeof(who));

	if (!owed)
		snprintf(who, sizeof(who), "none up (links still opening)");
	return oxr_err(OXR_ERR_TIMEOUT, "shrink: rank %d still waits after %d ms for the "
		       "agreement's parent or children: %s (alive to their links: a rank "
		       "stopped, not dead: OXR_HEARTBEAT_MS finds it)", g->rank, timeout_ms, who);
}

/* The agreement to its decision. */
static oxr_status_t agree(oxr_group *g, int timeout_ms)
{
	struct sh_state *s = &g->sh;
	struct watch w = { 0 };
	struct moved_arg x = { g, &w };
	int64_t end = timeout_ms < 0 ? -1 : oxr_now_ms() + timeout_ms;
	int h = g->ctx->heartbeat_ms;
	oxr_status_t st;

	for (;;) {
		int64_t left;
		int slice;
		s->news = 0;
		if ((st = pump(g)) || (st = watch_update(g, &w)) || (st = watch_check(g, &w)))
			return st;
		if (s->news)
			continue;
		if (s->ag->decided)
			return OXR_OK;
		left = end < 0 ? -1 : end - oxr_now_ms();
		if (end >= 0 && left <= 0)
			return wait_timeout(g, &w, timeout_ms);
		slice = left < 0 || left > INT32_MAX ? -1 : (int)left;
		if (h && w.n && (slice < 0 || slice > h / 6 + 1))
			slice = h / 6 + 1; /* the watch's pings and judgement */
		st = oxr_progress_until(g, moved, &x, slice);
		if (st && st != OXR_ERR_TIMEOUT)
			return st;
	}
}

/* Moves the links of the ranks not in failed (sorted) to their new numbers. */
static oxr_status_t renumber(oxr_group *g, const int32_t *dead, int ndead)
{
	int n = g->size - ndead, me = g->rank - oxr_agree_below(dead, ndead, g->rank);
	struct link **nl = calloc((size_t)n, sizeof(*nl));
	int32_t *br = NULL;
	int i, p, nused = 0;

	if (!nl || (g->boot && !(br = malloc((size_t)n * sizeof(*br))))) {
		free(nl);
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory for %d ranks", n);
	}
	oxr_demand_cancel_all(g); /* strangers' (settle_handshakes) */
	/* closed first, freed after: a link's end looks at the others' state
	 * (the revoke's overlay skips the dead) */
	for (i = 0; i < g->nused; i++)
		if (in(dead, ndead, g->used[i]))
			oxr_link_close(g, g->links[g->used[i]]);
	g->fd_links = 0;
	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[p = g->used[i]];
		int q = p - oxr_agree_below(dead, ndead, p);
		if (in(dead, ndead, p)) {
			free(l);
			continue;
		}
		nl[q] = l;
		l->peer = q;
		g->used[nused++] = q; /* in place: nused <= i */
		if (l->fd >= 0) {
			struct epoll_event ev = { .events = l->events, .data.u32 = (uint32_t)q };
			epoll_ctl(g->epfd, EPOLL_CTL_MOD, l->fd, &ev);
		}
		if (l->priv && l->ops->renumber)
			l->ops->renumber(l->priv, q);
		if (link_up(l) && (l->ops->caps & OXR_LINK_CAP_FD_STREAM))
			g->fd_links++;
	}
	g->nused = nused;
	/* the survivors' endpoints, in their new order, and their ranks in
	 * the bootstrap for those not looked up yet */
	for (p = 0, n = 0; g->eps && p < g->size; p++) {
		if (in(dead, ndead, p))
			continue;
		g->eps[n] = g->eps[p];
		if (br)
			br[n] = g->boot_rank ? g->boot_rank[p] : p;
		n++;
	}
	free(g->boot_rank);
	g->boot_rank = br;
	free(g->links);
	g->links = nl;
	g->size -= ndead;
	g->rank = me;
	g->sh.gen++;
	oxr_windows_renumber(g, dead, ndead); /* their descriptors name old ranks */
	oxr_demand_renumbered(g);
	return OXR_OK;
}

/* The decided agreement's end: the ranks left out that can still hear it
 * get the decision, which is kept for late reports. */
static oxr_status_t conclude(oxr_group *g)
{
	struct sh_state *s = &g->sh;
	struct oxr_agree *a = s->ag;
	int i;

	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		if (link_up(g->links[p]) && in(a->dec, a->ndec, p) &&
		    oxr_shrink_send(g, p, SH_DECIDE, a->dec, a->ndec, s->dec_epoch,
				    s->dec_objs) == OXR_ERR_NOMEM)
			return OXR_ERR_NOMEM;
	}
	free(s->last);
	if (!(s->last = malloc((size_t)(a->ndec ? a->ndec : 1) * sizeof(*s->last))))
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	if (a->ndec)
		memcpy(s->last, a->dec, (size_t)a->ndec * sizeof(*s->last));
	s->nlast = a->ndec;
	s->last_epoch = s->dec_epoch;
	s->last_objs = s->dec_objs;
	return OXR_OK;
}

static int no_handshake(void *arg)
{
	return ((const oxr_group *)arg)->nhs == 0;
}

/* Before the renumbering, the handshakes in flight end: both ends of one
 * must agree on whom it joins, and one cut here may be done at the other
 * end, which would then refuse this rank's next open of it.  Those with
 * the ranks left out end with their links; one the peer refuses (it
 * renumbered first) waits for its retry without a handshake, and starts
 * again under the new numbers (oxr_demand_renumbered). */
static oxr_status_t settle_handshakes(oxr_group *g, int timeout_ms)
{
	const struct oxr_agree *a = g->sh.ag;
	char why[96];
	oxr_status_t st;
	int i;

	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		if (g->links[p]->state == LINK_OPENING && in(a->dec, a->ndec, p)) {
			snprintf(why, sizeof(why), "rank %d failed (the shrink left it out)", p);
			oxr_link_mark_failed(g, p, why);
		}
	}
	st = oxr_progress_until(g, no_handshake, g, timeout_ms);
	return st == OXR_ERR_TIMEOUT ? oxr_err(st, "shrink: rank %d decided, but %d link "
					     "handshakes were still running after %d ms",
					     g->rank, g->nhs, timeout_ms) : st;
}

/* Every link open or opening to a survivor gets this rank's fence: one the
 * peer opened during the agreement (the revoke's, its own waits) had
 * none, and the reset that ends the shrink there waits for it. */
static oxr_status_t fence_all(oxr_group *g)
{
	int i;

	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		if (!link_gone(g->links[p]) && !in(g->sh.ag->dec, g->sh.ag->ndec, p) &&
		    oxr_shrink_fence(g, p) == OXR_ERR_NOMEM)
			return OXR_ERR_NOMEM;
	}
	return OXR_OK;
}

static int cmp_rank(const void *x, const void *y)
{
	return *(const int32_t *)x - *(const int32_t *)y;
}

/* The agreement's state, knowing the ranks whose links are down, and this
 * rank's fence on every link open or opening. */
static oxr_status_t start(oxr_group *g)
{
	struct sh_state *s = &g->sh;
	int32_t *known = malloc((size_t)(g->nused ? g->nused : 1) * sizeof(*known));
	int i, n = 0;
	oxr_status_t st;

	if (!known || !(s->ag = calloc(1, sizeof(*s->ag)))) {
		free(known);
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	}
	for (i = 0; i < g->nused; i++)
		if (link_down(g->links[g->used[i]]))
			known[n++] = g->used[i];
	qsort(known, (size_t)n, sizeof(*known), cmp_rank);
	s->epoch = g->epoch;
	s->objs = g->objs;
	s->have_dec = 0;
	if (oxr_agree_start(s->ag, g->rank, g->size, known, n, NULL, NULL)) {
		free(s->ag);
		s->ag = NULL;
		free(known);
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	}
	free(known);
	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[g->used[i]];
		if ((link_up(l) || l->state == LINK_OPENING) &&
		    (st = oxr_shrink_fence(g, g->used[i])) == OXR_ERR_NOMEM)
			return st;
	}
	return oxr_shrink_replay(g);
}

/* One agreement and the renumbering; the reset is the caller's. */
static oxr_status_t shrink_once(oxr_group *g, int timeout_ms)
{
	struct sh_state *s = &g->sh;
	uint32_t epoch = 0, objs = 0;
	oxr_status_t st;

	/* rounds of a reset that failed name the old ranks; a survivor's rounds
	 * of the reset that ends the shrink come after its fence, so none is
	 * lost here, and those still coming before it are dropped as they
	 * come (oxr_shrink_old) */
	oxr_reset_forget(g);
	s->due = 0;
	/* a revoked group may still agree */
	if ((st = oxr_group_enter(g, OXR_GA_SHRINKING)))
		return st;
	st = start(g);
	if (st == OXR_OK)
		st = agree(g, timeout_ms);
	if (st == OXR_OK && in(s->ag->dec, s->ag->ndec, g->rank))
		st = oxr_err(OXR_ERR_PEER, "shrink: the other survivors left rank %d out (they "
			     "found it dead)", g->rank);
	if (st == OXR_OK)
		st = conclude(g);
	if (st == OXR_OK)
		st = settle_handshakes(g, timeout_ms);
	if (st == OXR_OK) /* after the handshakes: what they opened has none yet */
		st = fence_all(g);
	oxr_group_leave(g);
	if (st == OXR_OK) {
		epoch = s->dec_epoch;
		objs = s->dec_objs;
	}
	if (s->ag) {
		oxr_agree_free(s->ag);
		free(s->ag);
		s->ag = NULL;
	}
	free(s->dec);
	s->dec = NULL;
	if (st == OXR_OK)
		st = renumber(g, s->last, s->nlast);
	if (st)
		return st;
	s->due = 1;
	/* behind the others: their reset ended, this one's did not (the
	 * group stays revoked: the reset that ends the shrink follows) */
	while (g->epoch < epoch) {
		oxr_group_next_epoch(g);
		oxr_group_mark_revoked(g);
	}
	g->objs = objs > g->objs ? objs : g->objs;
	return OXR_OK;
}

oxr_status_t oxr_group_shrink(oxr_group *g, int timeout_ms)
{
	int old = g->rank, tries;
	oxr_status_t st;

	/* a member of the agreed set that dies before the reset ends fails
	 * it (the reset needs every rank): agree again without it, as often as
	 * ranks die, at most once per rank */
	for (tries = 0;; tries++) {
		if ((st = shrink_once(g, timeout_ms)))
			return st;
		oxr_log(g->ctx, OXR_LOG_INFO, "group shrunk: rank %d is now %d of %d", old, g->rank,
			g->size);
		st = oxr_group_reset(g, timeout_ms);
		g->sh.due = 0;
		if (st != OXR_ERR_PEER || g->size < 2 || tries >= g->size)
			return st;
		oxr_log(g->ctx, OXR_LOG_INFO, "shrink: a survivor failed during the reset (%s): "
			"shrinking again", oxr_errmsg());
	}
}
