/* SPDX-License-Identifier: MIT */
/*
 * Shrink (ULFM's MPI_Comm_shrink, done in place): the survivors of a
 * failure agree on who they are and become the group, renumbered 0..n'-1
 * in their old order, in a new epoch.
 *
 * Agreement floods over the links, with the link state as the failure
 * detector.  Round r: each rank sends PROPOSE(r, alive) to every rank in
 * alive (itself and the ranks whose links are open) and waits for round r
 * from each of them or for their links to fail.  If every proposal equals
 * its own and no link failed, it decides alive and sends COMMIT(alive);
 * otherwise alive becomes the intersection of what came, minus the failed,
 * and round r + 1 starts.  A COMMIT ends the protocol with its set at once;
 * a rank that takes a COMMIT sends it on to all of the set before anything
 * else, so that a decider that dies halfway through its COMMITs leaves
 * either nobody alive with its decision or everybody.
 * A proposal that leaves a rank out fails that rank's link here as well
 * (the sender saw it fail, and failures are final): no survivor waits for
 * a dead rank only another survivor's detector found.
 *
 * Invariant: all deciders decide the same set.  Each rank sends one set
 * per round to all, so a rank that decides in round r saw the same set S
 * from everyone in S, and every other rank either decides S in round r or
 * saw a failure the decider did not (a rank that died in the middle of its
 * sends) and is in round r + 1, waiting for a proposal the decider will not
 * send: the decider's COMMIT reaches it first and it adopts S.  If the
 * decider died before its COMMIT reached a rank C, any live rank H that
 * took S sent S on to C before its next proposal, which C waits for: C
 * takes S too.  A member of S that died meanwhile fails the new group at
 * once (failure detection), and the survivors shrink again.
 *
 * What a member sent before its first proposal is of the old epoch (a
 * ball or rounds of the reset that failed): dropped when the proposal
 * comes, and, while it has not (a COMMIT came first), not counted by the
 * reset that ends the shrink (mark_late).
 *
 * A proposal also carries its sender's epoch and count of collective
 * objects; the decision takes the highest of each, so that survivors that
 * left the old group at different points go on alike.
 *
 * Then the links to ranks outside the set close, the others are moved to
 * their new numbers, and a reset (an OX_SYNC_BALL on every link, the new
 * epoch, windows re-keyed) keeps anything of the old epoch out of the new.
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

enum { PROPOSE = 0, COMMIT = 1 };

static size_t map_bytes(const oxr_group *g) { return ((size_t)g->size + 7) / 8; }
static int has(const uint8_t *m, int r) { return m[r / 8] >> (r % 8) & 1; }
static void drop_rank(uint8_t *m, int r) { m[r / 8] &= (uint8_t)~(1u << (r % 8)); }

/* Frame: [epoch, agreement, round, kind, objects, map]. */
enum { F_EPOCH, F_GEN, F_ROUND, F_KIND, F_OBJS, F_MAP, F_N };

static oxr_status_t send_shrink(oxr_group *g, int peer, int round, int kind, const uint8_t *map,
			       uint32_t epoch, uint32_t objs)
{
	const int32_t head[F_MAP] = { (int32_t)epoch, (int32_t)g->sh_gen, round, kind,
				      (int32_t)objs };
	oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_SHRINK };
	int i;

	oxr_arena_reset(g->scratch);
	m.cmo = oxr_cmo_new_list(g->scratch, F_N);
	for (i = 0; m.cmo && i < F_MAP; i++)
		if (!(m.cmo->kids[i] = oxr_cmo_new_int32(g->scratch, head[i])))
			m.cmo = NULL;
	if (m.cmo && !(m.cmo->kids[F_MAP] = oxr_cmo_new_bytes(g->scratch, OXR_CMO_DATUM, map,
							      map_bytes(g))))
		m.cmo = NULL;
	if (!m.cmo)
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	return oxr_queue_internal(g, peer, &m);
}

/* A proposal leaves out only ranks its sender saw fail (or heard of from
 * one that did), and a failure is final: this rank takes its word.  The
 * heartbeat's ring finds a second failure on one rank only (the watcher)
 * and announces only the first of an epoch; without this a survivor would
 * wait the whole timeout for the proposal of a dead rank whose link never
 * broke (a host powered off: two dead ranks, one watcher). */
static void left_out_failed(oxr_group *g, int from, const uint8_t *map)
{
	char why[96];
	int i;

	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		/* one still opening too: open_all waits for it (a stopped rank
		 * takes the connection and never answers the handshake) */
		if (p == g->rank || p == from || has(map, p) || link_down(g->links[p]))
			continue;
		snprintf(why, sizeof(why), "rank %d failed (rank %d's shrink proposal left it out)",
			 p, from);
		oxr_link_mark_failed(g, p, why);
	}
}

int oxr_shrink_proposed(const struct link *l)
{
	return l->sh[0].round || l->sh[1].round || l->sh_next;
}

int oxr_shrink_old(const oxr_group *g, const struct link *l)
{
	return l->sh_late || (g->sh_running && !oxr_shrink_proposed(l));
}

static void prop_clear(struct sh_prop *p)
{
	free(p->map);
	memset(p, 0, sizeof(*p));
}

void oxr_shrink_free(struct link *l)
{
	prop_clear(&l->sh[0]);
	prop_clear(&l->sh[1]);
	if (l->sh_next)
		prop_clear(l->sh_next);
	free(l->sh_next);
	l->sh_next = NULL;
}

/* p takes what a frame says (its map copied). */
static oxr_status_t prop_set(struct sh_prop *p, const int32_t *v, const oxr_cmo *map)
{
	uint8_t *m = p->len == map->len && p->map ? p->map : malloc(map->len ? map->len : 1);

	if (!m)
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	if (m != p->map)
		free(p->map);
	memcpy(m, map->data, map->len);
	*p = (struct sh_prop){ .map = m, .len = map->len, .round = v[F_ROUND] + 1,
			       .epoch = (uint32_t)v[F_EPOCH], .objs = (uint32_t)v[F_OBJS] };
	return OXR_OK;
}

/* The peer proposes: it left its last reset, so what it sent before is of
 * the old epoch.  A ball there, of a reset that failed, would be taken for
 * its ball of the reset that ends this shrink, and that one then for a
 * message of the new epoch. */
static void forget_before(struct link *l)
{
	while (l->rq_head)
		oxr_rmsg_free(oxr_link_take(l));
	l->ball_seen = l->ball_queued = 0;
}

/* The next agreement's round 0 from a rank that decided this one (its
 * COMMIT came first on the link) while this rank has not yet: kept for
 * renumber(), which starts the next agreement's slots with it. */
static oxr_status_t keep_next(oxr_group *g, struct link *l, const int32_t *v, const oxr_cmo *map)
{
	if (l->sh_next)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent two proposals ahead of rank %d's "
			       "shrink", l->peer, g->rank);
	if (!(l->sh_next = calloc(1, sizeof(*l->sh_next))))
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	return prop_set(l->sh_next, v, map);
}

oxr_status_t oxr_shrink_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	const oxr_cmo *o = m->cmo, *map;
	int32_t v[F_MAP];
	struct sh_prop *slot;
	oxr_status_t st;
	int i, had;

	if (l->mode != OXR_LINK_AUTH)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent an oxr shrink on an OpenXM link", l->peer);
	if (!o || o->tag != OXR_CMO_LIST || o->nkids != F_N || o->kids[F_MAP]->tag != OXR_CMO_DATUM)
		goto bad;
	for (i = 0; i < F_MAP; i++) {
		if (o->kids[i]->tag != OXR_CMO_INT32)
			goto bad;
		v[i] = o->kids[i]->v.i32;
	}
	map = o->kids[F_MAP];
	if (v[F_ROUND] < 0 || (v[F_KIND] != PROPOSE && v[F_KIND] != COMMIT))
		goto bad;
	/* an agreement this rank decided is over: what still comes of it is
	 * late (it precedes the peers' reset balls, and names old ranks).  The
	 * agreement's number, not the epoch, says which one a frame is of: a
	 * survivor still in the last reset (a revoke of its next epoch came
	 * first) is an epoch behind and runs the same agreement */
	if ((uint32_t)v[F_GEN] < g->sh_gen) {
		/* its proposal of an agreement this rank decided without it (a
		 * COMMIT came first): only now is what it sent before known old */
		if (l->sh_late && v[F_KIND] == PROPOSE) {
			forget_before(l);
			if ((uint32_t)v[F_GEN] + 1 == l->sh_late)
				l->sh_late = 0;
		}
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: a shrink of epoch %d, agreement %d from "
			"rank %d dropped", g->rank, v[F_EPOCH], v[F_GEN], l->peer);
		return OXR_OK;
	}
	if ((uint32_t)v[F_GEN] != g->sh_gen) {
		if ((uint32_t)v[F_GEN] - g->sh_gen != 1 || v[F_KIND] != PROPOSE || v[F_ROUND] != 0 ||
		    map->len > map_bytes(g))
			goto bad;
		forget_before(l);
		return keep_next(g, l, v, map);
	}
	if (map->len != map_bytes(g))
		goto bad;
	if (v[F_KIND] == COMMIT)
		/* the first decision is the decision */
		return g->sh_commit.map ? OXR_OK : prop_set(&g->sh_commit, v, map);
	slot = &l->sh[v[F_ROUND] & 1];
	had = oxr_shrink_proposed(l);
	if ((st = prop_set(slot, v, map)))
		return st;
	if (!had)
		forget_before(l);
	left_out_failed(g, l->peer, slot->map);
	/* the peer shrinks after a failure this rank may not have seen: a
	 * reset that a death cut short ends on some ranks and fails on others,
	 * and those that ended it would wait in the new epoch for ranks that
	 * now only agree.  The revoke fails their waits and goes on to all. */
	if (!g->epoch_revoked)
		oxr_revoke_local(g, l->peer, l->peer, "rank %d shrinks the group (it saw a rank "
				 "fail; oxr_group_shrink here too)", l->peer);
	return OXR_OK;
bad:
	return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed shrink", l->peer);
}

struct round_wait {
	oxr_group *g;
	const uint8_t *alive;
	int round;
};

static int owes_proposal(const oxr_group *g, int p, const void *arg)
{
	const struct round_wait *x = arg;

	return p != g->rank && has(x->alive, p) && link_up(g->links[p]) &&
	       g->links[p]->sh[x->round & 1].round != x->round + 1;
}

static int round_done(void *arg)
{
	struct round_wait *x = arg;
	oxr_group *g = x->g;
	int i;

	if (g->sh_commit.map)
		return 1;
	for (i = 0; i < g->nused; i++)
		if (owes_proposal(g, g->used[i], x))
			return 0;
	return 1;
}

/* Names whom the round still waits for: ranks alive to their links that
 * sent nothing, which is a stopped or cut-off rank no detector caught. */
static oxr_status_t round_timeout(const struct round_wait *x, int timeout_ms)
{
	char who[96];
	int owed = oxr_rank_list(x->g, owes_proposal, x, who, sizeof(who));

	return oxr_err(OXR_ERR_TIMEOUT, "shrink: rank %d still waits after %d ms for round %d's "
		       "proposal of rank%s %s, whose link%s up (a rank stopped, not dead: "
		       "OXR_HEARTBEAT_MS finds it)", x->g->rank, timeout_ms, x->round,
		       owed > 1 ? "s" : "", who, owed > 1 ? "s are" : " is");
}

static void free_shrink_state(oxr_group *g)
{
	int i;

	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[g->used[i]];
		prop_clear(&l->sh[0]);
		prop_clear(&l->sh[1]);
	}
	prop_clear(&g->sh_commit);
}

/* What survivors go on from besides the set (see agree). */
struct verdict {
	uint32_t epoch, objs;
};

static void verdict_max(struct verdict *d, uint32_t epoch, uint32_t objs)
{
	d->epoch = epoch > d->epoch ? epoch : d->epoch;
	d->objs = objs > d->objs ? objs : d->objs;
}

/* The decision to every other member of alive. */
static void commit_to_all(oxr_group *g, const uint8_t *alive, int round, const struct verdict *d)
{
	int p;

	for (p = 0; p < g->size; p++)
		if (p != g->rank && has(alive, p) && link_up(link_peek(g, p)))
			(void)send_shrink(g, p, round, COMMIT, alive, d->epoch, d->objs);
}

/*
 * The agreed set into alive, and into *d the epoch and object count the
 * survivors go on from: the highest any of them is at.  A reset that a
 * rank's death cut short ends on some ranks and not on others (those whose
 * ball from it came before it died), so survivors come to the shrink one
 * epoch apart; the reset that ends the shrink must start from one epoch
 * everywhere.  Each proposal says its sender's epoch and count; the
 * deciders saw the same last round, so they name the same highest ones,
 * and a COMMIT carries them.
 */
static oxr_status_t agree(oxr_group *g, uint8_t *alive, int timeout_ms, struct verdict *d)
{
	int round, p;
	oxr_status_t st;

	for (round = 0;; round++) {
		struct round_wait x = { g, alive, round };
		int same = 1;
		for (p = 0; p < g->size; p++)
			if (p != g->rank && has(alive, p) && link_up(link_peek(g, p)) &&
			    (st = send_shrink(g, p, round, PROPOSE, alive, g->epoch, g->objs)))
				return st;
		if ((st = oxr_progress_until(g, round_done, &x, timeout_ms)))
			return st == OXR_ERR_TIMEOUT ? round_timeout(&x, timeout_ms) : st;
		*d = (struct verdict){ g->epoch, g->objs };
		if (g->sh_commit.map) {
			memcpy(alive, g->sh_commit.map, map_bytes(g));
			verdict_max(d, g->sh_commit.epoch, g->sh_commit.objs);
			commit_to_all(g, alive, round, d); /* before anything else: see above */
			break;
		}
		for (p = 0; p < g->size; p++) {
			const struct link *l = link_peek(g, p);
			const uint8_t *theirs = l->sh[round & 1].map;
			size_t i;
			if (p == g->rank || !has(alive, p))
				continue;
			if (!link_up(l)) {
				drop_rank(alive, p);
				same = 0;
				continue;
			}
			verdict_max(d, l->sh[round & 1].epoch, l->sh[round & 1].objs);
			for (i = 0; i < map_bytes(g); i++)
				if (theirs[i] != alive[i]) {
					same = 0;
					alive[i] &= theirs[i];
				}
		}
		if (same) {
			commit_to_all(g, alive, round, d);
			break;
		}
	}
	if (!has(alive, g->rank))
		return oxr_err(OXR_ERR_PEER, "shrink: the other survivors left rank %d out",
			       g->rank);
	return OXR_OK;
}

/* Moves the links of the ranks in alive to their new numbers. */
static oxr_status_t renumber(oxr_group *g, const uint8_t *alive)
{
	struct link **nl;
	int p, n = 0, me = 0, nused = 0;

	for (p = 0; p < g->size; p++)
		if (has(alive, p))
			n++;
	nl = calloc((size_t)n, sizeof(*nl));
	if (!nl)
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory for %d ranks", n);
	g->fd_links = 0;
	for (p = 0, n = 0; p < g->size; p++) {
		struct link *l = g->links[p];
		if (!has(alive, p)) {
			if (l) {
				oxr_link_close(g, l);
				free(l);
			}
			continue;
		}
		if (p == g->rank) {
			me = n;
		} else if (l) {
			nl[n] = l;
			l->peer = n;
			if (l->sh_next) { /* the next agreement's round 0 came */
				l->sh[0] = *l->sh_next;
				free(l->sh_next);
				l->sh_next = NULL;
			}
			g->used[nused++] = n; /* used[] keeps up: a rank's new number is no higher */
			if (l->fd >= 0) {
				struct epoll_event ev = { .events = l->events, .data.u32 = (uint32_t)n };
				epoll_ctl(g->epfd, EPOLL_CTL_MOD, l->fd, &ev);
			}
			if (l->priv && l->ops->renumber)
				l->ops->renumber(l->priv, n);
			if (link_up(l) && (l->ops->caps & OXR_LINK_CAP_FD_STREAM))
				g->fd_links++;
		}
		n++;
	}
	g->nused = nused;
	if (g->eps) { /* the survivors' endpoints, in their new order */
		for (p = 0, n = 0; p < g->size; p++)
			if (has(alive, p))
				g->eps[n++] = g->eps[p];
		/* the bootstrap knows the old ranks; open_all has read every
		 * survivor's endpoint already */
		oxr_boot_release(g->boot);
		g->boot = NULL;
	}
	free(g->links);
	g->links = nl;
	g->size = n;
	g->rank = me;
	g->sh_gen++;
	for (p = 0; p < nused; p++) { /* kept ahead: checked now that the size is known */
		struct link *l = nl[g->used[p]];
		if (!l->sh[0].map)
			continue;
		if (l->sh[0].len != map_bytes(g)) {
			prop_clear(&l->sh[0]);
			oxr_link_fail(g, l, OXR_ERR_PROTO, "rank %d sent a malformed shrink", l->peer);
			continue;
		}
		left_out_failed(g, l->peer, l->sh[0].map);
	}
	oxr_windows_renumber(g, alive); /* their descriptors name old ranks */
	return OXR_OK;
}

static int none_opening(void *arg)
{
	oxr_group *g = arg;
	int p;

	for (p = 0; p < g->size; p++)
		if (link_peek(g, p)->state == LINK_OPENING)
			return 0;
	return 1;
}

/* A booted group opens its links on first use: the agreement needs them
 * all, so it opens them; a rank that cannot be reached is dead. */
static oxr_status_t open_all(oxr_group *g, int timeout_ms)
{
	oxr_status_t st;
	int p;

	if (!g->eps)
		return OXR_OK;
	for (p = 0; p < g->size; p++)
		if (p != g->rank && link_peek(g, p)->state == LINK_NONE)
			(void)oxr_link_want(g, p); /* a failure marks the rank dead */
	g->hold_revoke++; /* the group is revoked: this wait must go on */
	st = oxr_progress_until(g, none_opening, g, timeout_ms);
	g->hold_revoke--;
	oxr_demand_cancel_all(g); /* strangers' and late handshakes name old ranks */
	return st;
}

/* A COMMIT can come before a member's own proposal, which another link
 * carried faster to the decider.  What that member sent before its
 * proposal (the ball of the reset that failed, its rounds) is still on its
 * way and would count in the reset that ends the shrink, whose own ball
 * would then be taken for a message: it is old until the proposal comes. */
static void mark_late(oxr_group *g, const uint8_t *alive)
{
	int p;

	for (p = 0; p < g->size; p++) {
		struct link *l = p != g->rank && has(alive, p) ? g->links[p] : NULL;
		if (l && link_up(l) && !oxr_shrink_proposed(l))
			l->sh_late = g->sh_gen + 1;
	}
}

/* One agreement and the renumbering; the reset is the caller's. */
static oxr_status_t shrink_once(oxr_group *g, int timeout_ms)
{
	size_t nb = map_bytes(g);
	uint8_t *alive = calloc(1, nb);
	struct verdict d = { g->epoch, g->objs };
	int p;
	oxr_status_t st;

	if (!alive)
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	/* rounds of a reset that failed name the old ranks; a survivor's rounds
	 * of the reset that ends the shrink need this rank's proposal first, so
	 * none is lost here, and those still coming from a rank that has not
	 * proposed yet are dropped as they come (oxr_shrink_old) */
	oxr_reset_forget(g);
	g->sh_running = 1;
	/* who is alive: every rank's link open or failed (O(P) links, for now) */
	if ((st = open_all(g, timeout_ms))) {
		g->sh_running = 0;
		free(alive);
		return st;
	}
	for (p = 0; p < g->size; p++)
		if (p == g->rank || link_up(link_peek(g, p)))
			alive[p / 8] |= (uint8_t)(1u << (p % 8));
	/* a revoked group may still agree */
	if ((st = oxr_group_enter(g, OXR_GA_SHRINKING))) {
		g->sh_running = 0;
		free(alive);
		return st;
	}
	st = agree(g, alive, timeout_ms, &d);
	oxr_group_leave(g);
	g->sh_running = 0;
	if (st == OXR_OK)
		mark_late(g, alive);
	free_shrink_state(g);
	if (st == OXR_OK)
		st = renumber(g, alive);
	/* behind the others: their reset ended, this one's did not (the
	 * group stays revoked: the reset that ends the shrink follows) */
	while (st == OXR_OK && g->epoch < d.epoch) {
		oxr_group_next_epoch(g);
		oxr_group_mark_revoked(g);
	}
	if (st == OXR_OK)
		g->objs = d.objs;
	free(alive);
	return st;
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
		if (st != OXR_ERR_PEER || g->size < 2 || tries >= g->size)
			return st;
		oxr_log(g->ctx, OXR_LOG_INFO, "shrink: a survivor failed during the reset (%s): "
			"shrinking again", oxr_errmsg());
	}
}
