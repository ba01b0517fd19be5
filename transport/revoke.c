/* SPDX-License-Identifier: MIT */
/*
 * Revoke (ULFM's MPI_Comm_revoke) and reset (RFC-102's SM_reset_102).
 *
 * Revoke is keyed by (group id, epoch).  The first revoke a rank sees for
 * its current epoch (its own oxr_group_revoke, or a peer's REVOKE frame)
 * marks the group revoked: every pending and later operation of the epoch
 * fails with OXR_ERR_REVOKED, queued messages and put notes are dropped,
 * on verbs every window's registration goes (a late RDMA write of the epoch
 * is refused by the HCA and breaks only its window QP, verbs_wqp.c),
 * sends not yet started are dropped (one already half written is finished,
 * so the stream stays whole for a reset), incoming messages and puts are
 * discarded, and the rank forwards one REVOKE frame to every other open
 * authenticated link.  Forwarding to all peers, not along a binomial
 * graph: eagerly linked groups are fully linked, so one hop reaches every
 * survivor whichever ranks died, with nothing to route around; the price,
 * n - 1 frames a rank, matters only at thousands of ranks (groups whose
 * links open on demand forward over a binomial graph that routes around
 * dead ranks, forward_overlay and bmg.c).  Each rank forwards once per
 * epoch (on demand, plus once per target that turns out dead), so the
 * flood ends.  Frames of an older epoch are dropped (the reset that ended
 * that epoch already cleared it).
 *
 * Reset: every rank writes OX_SYNC_BALL on each of its links, then reads
 * each link up to the peer's OX_SYNC_BALL, discarding what came before.
 * RFC-102 orders these steps (lower rank first) because asir's writes
 * block; here a blocked write keeps reading, so writing all balls first
 * and then reading cannot deadlock.  On OpenXM links (an ox_asir may be at
 * the other end) balls go only upwards, as in asir: a rank reads each lower
 * rank's ball and writes one to each higher rank (ball_in, ball_out).
 * Where links open on demand a rank holds few of them, so the balls drain
 * those it holds and an agreement over the revoke's overlay (below) waits
 * for every rank and fails the reset on a dead one.  Then the epoch goes
 * up, the revoke is cleared, and every window is re-keyed with the new
 * epoch (on verbs a new registration, so an rkey of the old epoch is dead
 * at the HCA, and new window QPs, so no write posted in the old epoch can
 * reach the new).
 *
 * Invariant: nothing of epoch e is delivered in epoch e + 1.  A link is a
 * stream, and the peer's ball separates its epochs on it: what came before
 * the ball is discarded by the reset, what comes after it is kept (even
 * while this rank still waits for other balls), and the peer's RDMA writes
 * of epoch e completed before it sent its ball (a put returns only then;
 * one that a revoke cut short meets a deregistered window), so none lands
 * later.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "bmg.h"
#include "link.h"
#include "link_open.h"

uint64_t oxr_group_id(const oxr_group *g) { return g->gid; }

int oxr_group_revoked(const oxr_group *g, const char **why)
{
	if (why)
		*why = g->epoch_revoked ? g->revoke_msg : NULL;
	return g->epoch_revoked;
}

oxr_status_t oxr_revoked_err(const oxr_group *g, const char *what)
{
	return oxr_err(g->revoke_st ? g->revoke_st : OXR_ERR_REVOKED, "%s: %s", what,
		       g->revoke_msg);
}

/* LIST [INT32 gid_hi, gid_lo, epoch, origin, failed]: failed is the rank
 * whose failure caused the revoke, -1 for one asked for. */
static oxr_status_t send_revoke(oxr_group *g, int peer, int origin)
{
	int32_t v[5] = { (int32_t)(uint32_t)(g->gid >> 32), (int32_t)(uint32_t)g->gid,
			 (int32_t)g->epoch, origin, g->revoke_failed };
	oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_REVOKE };
	oxr_status_t st;
	int i;

	oxr_arena_reset(g->scratch);
	m.cmo = oxr_cmo_new_list(g->scratch, 5);
	for (i = 0; m.cmo && i < 5; i++)
		if (!(m.cmo->kids[i] = oxr_cmo_new_int32(g->scratch, v[i])))
			m.cmo = NULL;
	if (!m.cmo)
		return oxr_err(OXR_ERR_NOMEM, "revoke: out of memory");
	/* queued, not waited for: a revoke is sent from inside the engine too */
	if ((st = oxr_queue_internal(g, peer, &m)))
		return st;
	g->revokes_sent++;
	return OXR_OK;
}

static void forward(oxr_group *g, int p, int origin)
{
	if (send_revoke(g, p, origin))
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: forwarding the revoke to rank %d: %s",
			g->rank, p, oxr_errmsg());
}

/*
 * A booted group's revoke is a reliable broadcast over a binomial graph
 * (ULFM's BMG, bmg.c): the first time a rank sees it, it sends it to the
 * first live rank at or beyond each of rank +- 2^k, opening those links if
 * need be, except the one it came from.  A rank known dead (its link is
 * down) is passed over at once; one found dead later (its open fails, or
 * its link breaks after the frame went: oxr_revoke_failed) moves the slots
 * aimed at it on to the next rank, so the frame reaches every live rank
 * whichever ranks died.  Each rank sends at most 2 ceil(log2 P) frames to
 * ranks that stay alive, from 264 bytes of cursors.
 */
static int known_dead(void *arg, int p)
{
	return link_down(link_peek(arg, p));
}

/* Sends what the cursors owe.  A send can fail a link at once (a dead
 * peer refuses on this host), which retargets from inside it: the loop
 * under way then sends to the new target. */
static void bmg_pump(oxr_group *g)
{
	int t;

	if (g->bmg_busy)
		return;
	g->bmg_busy = 1;
	while ((t = oxr_bmg_next(&g->bmg)) >= 0)
		forward(g, t, g->bmg_origin);
	g->bmg_busy = 0;
}

static void forward_overlay(oxr_group *g, int from, int origin)
{
	oxr_bmg_start(&g->bmg, g->rank, g->size, from, known_dead, g);
	g->bmg_epoch = g->epoch;
	g->bmg_origin = origin;
	g->bmg_on = 1;
	bmg_pump(g);
}

/* Rank p failed after this epoch's revoke went out: the slots aimed at it
 * move on.  Not once a shrink renumbered the group (the cursors name old
 * ranks) nor in another epoch. */
static void bmg_retarget(oxr_group *g, int p)
{
	if (!g->eps || !g->bmg_on || g->bmg_epoch != g->epoch || g->bmg.rank != g->rank ||
	    g->bmg.n != g->size)
		return;
	if (oxr_bmg_failed(&g->bmg, p, known_dead, g))
		bmg_pump(g);
}

void oxr_revoke_local(oxr_group *g, int from, int origin, const char *fmt, ...)
{
	va_list ap;
	int i;

	if (g->epoch_revoked)
		return;
	oxr_group_mark_revoked(g);
	g->revoke_st = OXR_ERR_REVOKED;
	va_start(ap, fmt);
	vsnprintf(g->revoke_msg, sizeof(g->revoke_msg), fmt, ap);
	va_end(ap);
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: group %016llx epoch %u revoked: %s", g->rank,
		(unsigned long long)g->gid, g->epoch, g->revoke_msg);
	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[g->used[i]];
		if (!link_gone(l))
			oxr_link_revoke_queues(g, l);
	}
	oxr_windows_revoked(g);
	if (g->eps) {
		forward_overlay(g, from, origin);
		return;
	}
	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		struct link *l = g->links[p];
		if (p == from || !link_up(l) || l->mode != OXR_LINK_AUTH)
			continue;
		forward(g, p, origin);
	}
}

oxr_status_t oxr_group_revoke(oxr_group *g)
{
	if (!g->epoch_revoked)
		oxr_revoke_local(g, -1, g->rank, "group revoked by rank %d (epoch %u)", g->rank,
				 g->epoch);
	return OXR_OK;
}

void oxr_revoke_failed(oxr_group *g, struct link *l)
{
	if (oxr_group_closing(g) || l->mode != OXR_LINK_AUTH)
		return;
	if (g->epoch_revoked) { /* the frame may not have reached its live ranks yet */
		bmg_retarget(g, l->peer);
		return;
	}
	g->revoke_failed = l->peer;
	oxr_revoke_local(g, l->peer, g->rank, "rank %d failed: %s (the group is revoked: "
			 "oxr_group_reset once it is back, or a new group of the survivors)",
			 l->peer, l->errmsg);
	g->revoke_st = OXR_ERR_PEER;
}

void oxr_say_bye(oxr_group *g)
{
	int i;

	(void)oxr_group_enter(g, OXR_GA_CLOSING);
	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		struct link *l = g->links[p];
		oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_BYE };
		if (!link_up(l) || l->mode != OXR_LINK_AUTH)
			continue;
		oxr_arena_reset(g->scratch);
		/* a revoked group still says goodbye */
		if ((m.cmo = oxr_cmo_new_int32(g->scratch, (int32_t)g->epoch)))
			(void)oxr_queue_internal(g, p, &m);
	}
}

oxr_status_t oxr_revoke_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	const oxr_cmo *o = m->cmo;
	uint32_t v[5];
	uint64_t gid;
	int i, failed;

	if (l->mode != OXR_LINK_AUTH)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent an oxr revoke on an OpenXM link", l->peer);
	if (m->tag == OXR_OX_PRIVATE_BYE) { /* its end that follows is no failure */
		if (l->state == LINK_OPEN)
			oxr_link_to(l, LINK_LEAVING);
		return OXR_OK;
	}
	if (!o || o->tag != OXR_CMO_LIST || o->nkids != 5)
		goto bad;
	for (i = 0; i < 5; i++) {
		if (!o->kids[i] || o->kids[i]->tag != OXR_CMO_INT32)
			goto bad;
		v[i] = (uint32_t)o->kids[i]->v.i32;
	}
	gid = (uint64_t)v[0] << 32 | v[1];
	if (gid != g->gid) {
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: a revoke from rank %d names group %016llx, "
			"not this one (%016llx): dropped", g->rank, l->peer, (unsigned long long)gid,
			(unsigned long long)g->gid);
		return OXR_OK;
	}
	failed = (int32_t)v[4];
	/* an old epoch's revoke, or one more of this epoch's, is dropped before
	 * its ranks are looked at: a shrink may have renumbered the group since,
	 * so they may lie outside it now */
	/* the next epoch's revoke counts once the sender's ball came, whether
	 * the reset took it already or it still waits in the queue (the frame
	 * is handled as it is read, the ball when the reset gets to it) */
	if ((v[2] == g->epoch && g->epoch_revoked) ||
	    (v[2] != g->epoch && !(v[2] == g->epoch + 1 && oxr_group_in_reset(g) &&
				   (l->ball_seen || l->ball_queued)))) {
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: a revoke of epoch %u from rank %d dropped "
			"(this rank is at %u%s)", g->rank, v[2], l->peer, g->epoch,
			g->epoch_revoked ? ", revoked already" : "");
		return OXR_OK;
	}
	if ((int32_t)v[3] < 0 || (int32_t)v[3] >= g->size || failed < -1 || failed >= g->size)
		goto bad;
	if (v[2] == g->epoch && failed >= 0 && !g->epoch_revoked) {
		char why[96];
		g->revoke_failed = failed;
		oxr_revoke_local(g, l->peer, (int)v[3], "rank %d failed (seen by rank %d; the group "
				 "is revoked: oxr_group_reset once it is back, or a new group of the "
				 "survivors)", failed, (int)v[3]);
		g->revoke_st = OXR_ERR_PEER;
		/* a failure announced is one every rank knows: nobody waits on
		 * that rank again (a shrink, the heartbeat's ring) nor opens it */
		snprintf(why, sizeof(why), "rank %d failed (seen by rank %d)", failed, (int)v[3]);
		if (failed != g->rank)
			oxr_link_mark_failed(g, failed, why);
	} else if (v[2] == g->epoch) {
		if ((int32_t)v[3] == l->peer)
			oxr_revoke_local(g, l->peer, l->peer, "group revoked by rank %d (epoch %u)",
					 l->peer, g->epoch);
		else
			oxr_revoke_local(g, l->peer, (int)v[3], "group revoked by rank %d, forwarded "
					 "by rank %d (epoch %u)", (int)v[3], l->peer, g->epoch);
	} else {
		/* the peer finished the reset and revoked the next epoch already */
		g->revoke_next = 1;
		g->revoke_origin = (int)v[3];
		snprintf(g->revoke_msg, sizeof(g->revoke_msg), "group revoked by rank %d (epoch %u)",
			 (int)v[3], v[2]);
	}
	return OXR_OK;
bad:
	return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed revoke", l->peer);
}

/* ---- reset ---------------------------------------------------------- */

struct balls {
	oxr_group *g;
	oxr_status_t st;
	char msg[512]; /* st's message: the wait goes on after it */
	int rounds;    /* of the agreement: this rank's sent so far */
};

/* ---- the reset's agreement (groups that open links on demand) -------- */

/*
 * Balls drain only the links that are open, and under links on demand a
 * rank may hold none to most of the group, so balls alone neither wait for
 * every rank nor see a dead one.  That is agreed on beside them, by a
 * dissemination barrier (Hensgen, Finkel and Manber) over the revoke's
 * overlay: round k goes to rank + 2^k once round k - 1 came from
 * rank - 2^(k-1), for k < ceil(log2 P).  After the last round every rank
 * has heard, along some chain, from every rank, so none ends its reset
 * before all are in theirs.  Each round names the first failed rank its
 * sender knows of; a rank whose partner's link fails (opening it is how a
 * dead partner shows) sends on naming it, so every chain through a dead
 * rank carries its failure and every survivor's reset fails with
 * OXR_ERR_PEER in rounds, not by a timeout.  A reset does not end while a
 * round's link is still opening: the partner, still in this epoch, would
 * refuse the next epoch's handshake and wait for the round forever.
 * Rounds are kept by epoch parity: a peer that ended this reset may send
 * the next one's before this rank has ended it; none can be two ahead.
 * Per rank: ceil(log2 P) frames of 3 integers, 2 ceil(log2 P) links at
 * most, all of them links of the revoke's overlay.
 */
static int agree_rounds(const oxr_group *g)
{
	int k = 0;

	while (k < 31 && 1 << k < g->size)
		k++;
	return g->eps ? k : 0; /* a fully linked group's balls are the agreement */
}

static int agree_partner(const oxr_group *g, int k, int dir)
{
	return oxr_bmg_partner(g->rank, g->size, k, dir);
}

/* The first failure named in epoch e's agreement is the one it reports. */
static void agree_fail(oxr_group *g, uint32_t e, int failed)
{
	if (failed >= 0 && !g->agree_failed[e & 1])
		g->agree_failed[e & 1] = failed + 1;
}

void oxr_reset_forget(oxr_group *g)
{
	memset(g->agree_got, 0, sizeof(g->agree_got));
	memset(g->agree_failed, 0, sizeof(g->agree_failed));
}

oxr_status_t oxr_reset_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	uint32_t v[3];
	int32_t failed;

	if (l->mode != OXR_LINK_AUTH || !oxr_frame_ints(m->cmo, 3, 3, v) || v[1] >= 31)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed reset round", l->peer);
	failed = (int32_t)v[2];
	if ((v[0] != g->epoch && v[0] != g->epoch + 1) || failed < -1 || failed >= g->size ||
	    oxr_shrink_old(g, l)) {
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: a reset round of epoch %u from rank %d "
			"dropped (this rank is at %u)", g->rank, v[0], l->peer, g->epoch);
		return OXR_OK;
	}
	g->agree_got[v[0] & 1] |= 1u << v[1];
	agree_fail(g, v[0], failed);
	return OXR_OK;
}

/* 1 once every round came and went; sends the rounds that may go now. */
static int agreed(struct balls *b)
{
	oxr_group *g = b->g;
	int n = agree_rounds(g), s = g->epoch & 1, k;

	for (; b->rounds <= n; b->rounds++) {
		if (b->rounds > 0 && !(g->agree_got[s] & 1u << (b->rounds - 1))) {
			int src = agree_partner(g, b->rounds - 1, -1);
			const struct link *l = link_peek(g, src);
			if (!link_down(l)) {
				if (l->state == LINK_NONE) /* a dead partner shows only so */
					(void)oxr_link_want(g, src);
				return 0;
			}
			agree_fail(g, g->epoch, src);
		}
		if (b->rounds < n) {
			uint32_t v[3] = { g->epoch, (uint32_t)b->rounds,
					  (uint32_t)(g->agree_failed[s] - 1) };
			/* a dead partner's link fails: its successors find it */
			(void)oxr_send_ints(g, agree_partner(g, b->rounds, 1), OXR_OX_PRIVATE_RESET,
					    3, v);
		}
	}
	for (k = 0; k < n; k++)
		if (link_peek(g, agree_partner(g, k, 1))->state == LINK_OPENING)
			return 0;
	if (g->agree_failed[s] && b->st == OXR_OK) {
		b->st = OXR_ERR_PEER;
		snprintf(b->msg, sizeof(b->msg), "reset: rank %d failed (a reset needs every rank; "
			 "a group without it needs a new group of the survivors)",
			 g->agree_failed[s] - 1);
	}
	return 1;
}

/*
 * Which way balls go on link p: both ways on oxr's own links; on OpenXM
 * links as ox_asir does it (asir_reset_102), only from the lower rank to
 * the higher.  An ox_asir never sends a ball down and never reads one from
 * above: waiting for its ball hangs, and a ball sent down to it stays in
 * its stream, where its next ox_recv_102 takes it for data.
 */
static int ball_out(const oxr_group *g, int p)
{
	return link_peek(g, p)->mode != OXR_LINK_OPENXM || p > g->rank;
}

static int ball_in(const oxr_group *g, int p)
{
	return link_peek(g, p)->mode != OXR_LINK_OPENXM || p < g->rank;
}

int oxr_link_new_epoch(const oxr_group *g, const struct link *l)
{
	/* no ball comes on it: once this rank is in the reset (drop_from_above
	 * has run), what arrives was sent after the peer had our ball */
	return oxr_group_in_reset(g) && !ball_in(g, l->peer);
}

/* Every open link that owes a ball has given it: what came before it is
 * dropped. */
static int all_balls(void *arg)
{
	struct balls *b = arg;
	oxr_group *g = b->g;
	int i, all = 1, shrinking = 0;

	for (i = 0; i < g->nused; i++) {
		int p = g->used[i];
		struct link *l = g->links[p];
		int owed = ball_in(g, p);
		if (!link_up(l) && !link_down(l))
			continue;
		/* what the peer sent before it went comes first: its ball may be
		 * there (not while what it holds is of the shrink's old epoch) */
		while (owed && !l->ball_seen && l->rq_head && !oxr_shrink_old(g, l)) {
			oxr_rmsg *m = oxr_link_take(l);
			l->ball_seen = m->msg.tag == OXR_OX_SYNC_BALL;
			oxr_rmsg_free(m);
		}
		/* a rank that proposes a shrink left its reset (it saw a rank
		 * fail) and sends no ball: this reset cannot end, and waiting for
		 * the others' balls would hold this rank out of the shrink */
		if (owed && !l->ball_seen && link_up(l) && oxr_shrink_proposed(g, l)) {
			if (b->st == OXR_OK) {
				b->st = OXR_ERR_PEER;
				snprintf(b->msg, sizeof(b->msg), "reset: rank %d shrinks the group "
					 "(it saw a rank fail; a reset needs every rank: "
					 "oxr_group_shrink)", p);
			}
			shrinking = 1;
			continue;
		}
		if ((!owed || !l->ball_seen) && link_down(l)) {
			if (b->st == OXR_OK) {
				b->st = OXR_ERR_PEER;
				snprintf(b->msg, sizeof(b->msg), "reset: %s (a reset needs every "
					 "rank; a group without it needs a new group of the "
					 "survivors)", l->errmsg);
			}
			/* the reset fails, but only once the live ranks' balls are in:
			 * one left queued would be taken for the ball of the next reset,
			 * and that reset's own ball would then arrive as a message */
			continue;
		}
		if (owed && !l->ball_seen)
			all = 0;
	}
	/* a link whose handshake is past its epoch check opens in this epoch:
	 * its ball is owed too (oxr_reset_link_opened) */
	return shrinking || (agreed(b) && all && !oxr_demand_committed(g));
}

/* What a reset that timed out still waits for, for its message: the
 * balls owed (the first few ranks), the agreement round, a handshake. */
static int owes_ball(const oxr_group *g, int p, const void *arg)
{
	(void)arg;
	return link_up(g->links[p]) && ball_in(g, p) && !g->links[p]->ball_seen;
}

static void reset_waits(oxr_group *g, const struct balls *b, char *buf, size_t len)
{
	char who[96];
	size_t at = 0;
	int k = b->rounds;

#define SAY(...) (at += (size_t)snprintf(buf + at, at < len ? len - at : 0, __VA_ARGS__))
	buf[0] = 0;
	if (oxr_rank_list(g, owes_ball, NULL, who, sizeof(who)))
		SAY("the balls of ranks %s", who);
	if (k > 0 && k <= agree_rounds(g) && !(g->agree_got[g->epoch & 1] & 1u << (k - 1)))
		SAY("%sround %d of the agreement from rank %d", at ? "; " : "", k - 1,
		    agree_partner(g, k - 1, -1));
	if (oxr_demand_committed(g))
		SAY("%sa link whose handshake passed its epoch check", at ? "; " : "");
	if (!at)
		SAY("links to agreement partners still opening");
#undef SAY
}

/* Links on demand: the revoke went over the overlay, and p's link may be
 * none of it; the ball must not reach a rank that has not heard of the
 * revoke: it would take the ball for a message. */
static oxr_status_t send_ball(oxr_group *g, int p)
{
	oxr_ox_msg ball = { .tag = OXR_OX_SYNC_BALL };
	oxr_status_t st;

	if (g->epoch_revoked && g->eps && g->bmg_on && g->bmg_epoch == g->epoch &&
	    g->links[p]->mode == OXR_LINK_AUTH && !oxr_bmg_has(&g->bmg, p) &&
	    (st = send_revoke(g, p, g->bmg_origin)))
		return st;
	return oxr_queue_internal(g, p, &ball);
}

void oxr_reset_link_opened(oxr_group *g, struct link *l)
{
	if (g->balls_phase && ball_out(g, l->peer))
		(void)send_ball(g, l->peer);
}

/*
 * An OpenXM link to a higher rank brings no ball: what it holds now is of
 * the old epoch, since that peer cannot end its reset (and send anything
 * new) before it has our ball, which goes out after this.  So it is
 * dropped here; bytes still in flight from before the RFC-100 reset are
 * the one thing no ball separates, as in asir.
 */
static void drop_from_above(oxr_group *g)
{
	int i;

	(void)oxr_progress_once(g, 0);
	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[g->used[i]];
		if (l->peer > g->rank && !ball_in(g, l->peer))
			while (l->rq_head)
				oxr_rmsg_free(oxr_link_take(l));
	}
}

oxr_status_t oxr_group_reset(oxr_group *g, int timeout_ms)
{
	struct balls b = { g, OXR_OK, "", 0 };
	oxr_status_t st = OXR_OK;
	int i;

	if ((st = oxr_group_enter(g, OXR_GA_RESETTING)))
		return st;
	g->revoke_next = 0;
	for (i = 0; i < g->nused; i++)
		g->links[g->used[i]]->ball_seen = 0;
	drop_from_above(g);
	/* a ball already queued (the peer entered the reset first) counts in all_balls */
	for (i = 0; i < g->nused && st == OXR_OK; i++) {
		int p = g->used[i];
		if (link_up(g->links[p]) && ball_out(g, p))
			st = send_ball(g, p);
	}
	g->balls_phase = 1;
	if (st == OXR_OK)
		st = oxr_progress_until(g, all_balls, &b, timeout_ms);
	if (st == OXR_ERR_TIMEOUT) {
		char what[256];
		reset_waits(g, &b, what, sizeof(what));
		st = oxr_err(OXR_ERR_TIMEOUT, "reset: rank %d still waits after %d ms for %s",
			     g->rank, timeout_ms, what);
	}
	g->balls_phase = 0;
	if (st == OXR_OK && b.st)
		st = oxr_err(b.st, "%s", b.msg);
	if (st) {
		/* a retry (once a restarted rank stands in for a dead one) must not
		 * count this try's rounds, nor fail on the failure they named; a
		 * peer's round of the retry that came before this try ended is lost
		 * with them, and that retry times out */
		oxr_reset_forget(g);
		oxr_group_leave(g);
		return st;
	}
	/* its slot serves the epoch after the next */
	g->agree_got[g->epoch & 1] = 0;
	g->agree_failed[g->epoch & 1] = 0;
	oxr_group_next_epoch(g);
	g->revoke_st = OXR_OK;
	g->revoke_failed = -1;
	if (!g->revoke_next)
		g->revoke_msg[0] = 0;
	st = oxr_windows_rekey(g, timeout_ms);
	oxr_group_leave(g);
	for (i = 0; i < g->nused; i++) {
		g->links[g->used[i]]->ball_seen = 0;
		oxr_link_note_balls(g->links[g->used[i]]);
	}
	if (st == OXR_OK && g->revoke_next) {
		char why[sizeof(g->revoke_msg)];
		memcpy(why, g->revoke_msg, sizeof(why));
		g->revoke_msg[0] = 0;
		oxr_revoke_local(g, -1, g->revoke_origin, "%s", why);
	}
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: group reset, epoch %u", g->rank, g->epoch);
	return st;
}
