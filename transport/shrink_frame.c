/* SPDX-License-Identifier: MIT */
/*
 * The shrink's frames on the links (shrink.c runs the agreement).
 *
 * Frame: LIST [epoch, agreement, kind, objects, DATUM of ranks as
 * little-endian int32].  An UP carries its sender's failed list and the
 * highest epoch and object count below it; a DECIDE the decision; a FENCE
 * nothing: the first frame a rank sends on a link in an agreement, so that
 * what it sent there before (the ball and rounds of the reset that failed,
 * messages of the revoked epoch) is known old and dropped.  A rank fences
 * every open link when it starts an agreement and every link that opens
 * before it decides: O(links open) frames, as many as the reset's balls.
 *
 * By the agreement a frame names (agreements decided, g->sh.gen):
 *   older than the last: dropped;
 *   the last, decided here: a fence is still the peer's (its queue is old
 *     until it comes, oxr_shrink_old); a report is answered with the
 *     decision, kept for this (the reporter's parent died after this rank
 *     decided, and it waits for the decision from whoever it reports to);
 *   the running one: into the agreement;
 *   the next one, or the running one before this rank starts it: kept on
 *     the link (SH_PEND_MAX) for when it starts.
 * A rank that hears of a shrink it does not run yet revokes the epoch: it
 * may be in a reset that the shrinking rank left, or computing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "link.h"
#include "provider.h"
#include "shrink.h"

enum { F_EPOCH, F_GEN, F_KIND, F_OBJS, F_LIST, F_N };

static oxr_status_t send_frame(oxr_group *g, int peer, uint32_t gen, int kind, const int32_t *list,
			       int len, uint32_t epoch, uint32_t objs)
{
	const int32_t head[F_LIST] = { (int32_t)epoch, (int32_t)gen, kind, (int32_t)objs };
	oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_SHRINK };
	static uint8_t none[1];
	uint8_t *b;
	int i;

	oxr_arena_reset(g->scratch);
	b = len ? oxr_arena_alloc(g->scratch, (size_t)len * 4) : none;
	m.cmo = b ? oxr_cmo_new_list(g->scratch, F_N) : NULL;
	for (i = 0; m.cmo && i < F_LIST; i++)
		if (!(m.cmo->kids[i] = oxr_cmo_new_int32(g->scratch, head[i])))
			m.cmo = NULL;
	for (i = 0; m.cmo && i < len; i++)
		oxr_store32(b + 4 * i, (uint32_t)list[i], OXR_ORDER_LITTLE);
	if (m.cmo && !(m.cmo->kids[F_LIST] = oxr_cmo_new_bytes(g->scratch, OXR_CMO_DATUM, b,
								(size_t)len * 4)))
		m.cmo = NULL;
	if (!m.cmo)
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory for a frame of %d ranks", len);
	g->shrinks_sent++;
	return oxr_queue_internal(g, peer, &m);
}

oxr_status_t oxr_shrink_fence(oxr_group *g, int peer)
{
	struct link *l = oxr_link_slot(g, peer);
	oxr_status_t st;

	if (!l)
		return OXR_ERR_NOMEM;
	if (l->sh_fenced == g->sh.gen + 1)
		return OXR_OK;
	if ((st = send_frame(g, peer, g->sh.gen, SH_FENCE, NULL, 0, g->epoch, g->objs)))
		return st;
	l->sh_fenced = g->sh.gen + 1;
	return OXR_OK;
}

oxr_status_t oxr_shrink_send(oxr_group *g, int peer, int kind, const int32_t *list, int len,
			     uint32_t epoch, uint32_t objs)
{
	oxr_status_t st = oxr_shrink_fence(g, peer);

	return st ? st : send_frame(g, peer, g->sh.gen, kind, list, len, epoch, objs);
}

/* The peer left the old epoch: what it sent before is old.  A ball there,
 * of a reset that failed, would be taken for its ball of the reset that
 * ends this shrink, and that one then for a message of the new epoch. */
static void forget_before(struct link *l)
{
	while (l->rq_head)
		oxr_rmsg_free(oxr_link_take(l));
	l->ball_seen = l->ball_queued = 0;
}

int oxr_shrink_proposed(const oxr_group *g, const struct link *l)
{
	return l->sh_fence == g->sh.gen + 1 || l->sh_fence == g->sh.gen + 2;
}

int oxr_shrink_old(const oxr_group *g, const struct link *l)
{
	return (g->sh.ag && l->sh_fence != g->sh.gen + 1) ||
	       (g->sh.due && l->sh_fence != g->sh.gen);
}

static void pend_free(struct link *l)
{
	struct sh_frame *f, *fn;

	for (f = l->sh_pend; f; f = fn) {
		fn = f->next;
		free(f);
	}
	l->sh_pend = NULL;
	l->sh_npend = 0;
}

void oxr_shrink_free(struct link *l)
{
	pend_free(l);
}

void oxr_shrink_group_free(oxr_group *g)
{
	if (g->sh.ag) {
		oxr_agree_free(g->sh.ag);
		free(g->sh.ag);
		g->sh.ag = NULL;
	}
	free(g->sh.dec);
	free(g->sh.last);
	g->sh.dec = g->sh.last = NULL;
	g->sh.nlast = 0;
}

static oxr_status_t keep(oxr_group *g, struct link *l, uint32_t gen, int kind, const int32_t *list,
			 int len, uint32_t epoch, uint32_t objs)
{
	struct sh_frame *f, **pp;

	if (l->sh_npend >= SH_PEND_MAX)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent more than %d shrink frames ahead of "
			       "rank %d's agreement", l->peer, SH_PEND_MAX, g->rank);
	if (!(f = malloc(sizeof(*f) + (size_t)len * sizeof(*list))))
		return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
	*f = (struct sh_frame){ .gen = gen, .epoch = epoch, .objs = objs, .kind = kind,
				.len = len };
	if (len)
		memcpy(f->list, list, (size_t)len * sizeof(*list));
	for (pp = &l->sh_pend; *pp; pp = &(*pp)->next)
		;
	*pp = f;
	l->sh_npend++;
	return OXR_OK;
}

/* A frame of the running agreement from the link's peer. */
static oxr_status_t take(oxr_group *g, struct link *l, int kind, const int32_t *list, int len,
			 uint32_t epoch, uint32_t objs)
{
	struct sh_state *s = &g->sh;
	char why[96];
	int32_t *copy = NULL;
	int i, rc;

	if (!oxr_agree_list_ok(g->size, list, len))
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a shrink list that is not sorted ranks "
			       "of a group of %d", l->peer, g->size);
	if (kind == SH_UP) {
		s->epoch = epoch > s->epoch ? epoch : s->epoch;
		s->objs = objs > s->objs ? objs : s->objs;
		/* its sender saw them fail, or heard from one that did, and a
		 * failure is final: this rank takes its word.  The heartbeat's
		 * ring finds a second failure on its watcher only; without this
		 * a rank would wait the whole timeout on a dead rank another
		 * detector found (a host powered off: two dead, one watcher) */
		for (i = 0; i < len; i++)
			if (list[i] != g->rank && !link_down(link_peek(g, list[i]))) {
				snprintf(why, sizeof(why), "rank %d failed (rank %d's shrink "
					 "report names it)", list[i], l->peer);
				oxr_link_mark_failed(g, list[i], why);
			}
	} else if (!s->ag->decided) { /* the core keeps an adopted decision's list */
		if (!(copy = malloc((size_t)(len ? len : 1) * sizeof(*copy))))
			return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
		if (len)
			memcpy(copy, list, (size_t)len * sizeof(*copy));
		list = copy;
	}
	rc = oxr_agree_recv(s->ag, l->peer, kind, list, len, NULL, NULL);
	if (copy && s->ag->dec == copy) {
		free(s->dec);
		s->dec = copy;
		s->dec_epoch = epoch;
		s->dec_objs = objs;
		s->have_dec = 1;
	} else {
		free(copy);
	}
	s->news = 1;
	if (rc)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent a shrink %s out of place (an agreement "
			       "it is not in), or rank %d ran out of memory", l->peer,
			       kind == SH_UP ? "report" : "decision", g->rank);
	return OXR_OK;
}

oxr_status_t oxr_shrink_replay(oxr_group *g)
{
	oxr_status_t st = OXR_OK;
	int i;

	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[g->used[i]];
		struct sh_frame *f = l->sh_pend;
		l->sh_pend = NULL;
		l->sh_npend = 0;
		while (f) {
			struct sh_frame *fn = f->next;
			if (st == OXR_OK && link_up(l) && f->gen == g->sh.gen &&
			    (st = take(g, l, f->kind, f->list, f->len, f->epoch, f->objs)) &&
			    st != OXR_ERR_NOMEM) {
				oxr_link_fail(g, l, st, "%s", oxr_errmsg());
				st = OXR_OK;
			}
			free(f);
			f = fn;
		}
	}
	return st;
}

/* The last decision again, for a report that came after it. */
static oxr_status_t answer_late(oxr_group *g, struct link *l, uint32_t gen)
{
	const struct sh_state *s = &g->sh;

	if (!s->last)
		return OXR_OK;
	return send_frame(g, l->peer, gen, SH_DECIDE, s->last, s->nlast, s->last_epoch,
			  s->last_objs);
}

oxr_status_t oxr_shrink_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m)
{
	const oxr_cmo *o = m->cmo;
	struct sh_state *s = &g->sh;
	uint32_t v[F_LIST], gen;
	int32_t *list = NULL;
	int i, len, kind;
	oxr_status_t st = OXR_OK;

	if (l->mode != OXR_LINK_AUTH)
		return oxr_err(OXR_ERR_PROTO, "rank %d sent an oxr shrink on an OpenXM link", l->peer);
	if (!oxr_frame_ints(o, F_N, F_LIST, v) || !o->kids[F_LIST] ||
	    o->kids[F_LIST]->tag != OXR_CMO_DATUM || o->kids[F_LIST]->len % 4 ||
	    o->kids[F_LIST]->len / 4 > (size_t)g->size)
		goto bad;
	gen = v[F_GEN];
	kind = (int)v[F_KIND];
	len = (int)(o->kids[F_LIST]->len / 4);
	if ((kind != SH_UP && kind != SH_DECIDE && kind != SH_FENCE) || (kind == SH_FENCE && len))
		goto bad;
	if (gen + 1 < s->gen || (gen + 1 == s->gen && kind == SH_DECIDE)) {
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: a shrink frame of agreement %u from rank "
			"%d dropped (this rank decided %u)", g->rank, gen, l->peer, s->gen);
		return OXR_OK;
	}
	if (gen > s->gen + 1 || (gen == s->gen + 1 && !s->ag && kind != SH_FENCE))
		goto bad;
	if (kind == SH_FENCE) {
		l->sh_fence = gen + 1;
		forget_before(l);
	} else if (gen + 1 == s->gen) {
		return answer_late(g, l, gen);
	} else {
		if (len && !(list = malloc((size_t)len * sizeof(*list))))
			return oxr_err(OXR_ERR_NOMEM, "shrink: out of memory");
		for (i = 0; i < len; i++)
			list[i] = (int32_t)oxr_load32(o->kids[F_LIST]->data + 4 * i,
						      OXR_ORDER_LITTLE);
		if (gen == s->gen && s->ag)
			st = take(g, l, kind, list, len, v[F_EPOCH], v[F_OBJS]);
		else
			st = keep(g, l, gen, kind, list, len, v[F_EPOCH], v[F_OBJS]);
		free(list);
	}
	/* the peer shrinks after a failure this rank may not have seen: a
	 * reset that a death cut short ends on some ranks and fails on others,
	 * and those that ended it would wait in the new epoch for ranks that
	 * now only agree.  The revoke fails their waits and goes on to all. */
	if (st == OXR_OK && gen == s->gen && !s->ag && !g->epoch_revoked)
		oxr_revoke_local(g, l->peer, l->peer, "rank %d shrinks the group (it saw a rank "
				 "fail; oxr_group_shrink here too)", l->peer);
	return st;
bad:
	return oxr_err(OXR_ERR_PROTO, "rank %d sent a malformed shrink", l->peer);
}
