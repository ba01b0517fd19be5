/* SPDX-License-Identifier: MIT */
/*
 * Reduction to a root, RFC-102's binomial tree (ox_reduce_102 in ox_asir),
 * for any root through relative ranks r = (rank - root) mod n.
 *
 * Invariant: for mask = 1, 2, 4, ... < n, rank r with r & mask set sends
 * its partial result to r - mask and stops; otherwise it takes the partial
 * of r + mask (when r + mask < n) and combines data = data op received.
 * So every rank but the root sends once, rank r receives once from each
 * child r + m (m < lowbit(r)), the root after ceil(log2 n) rounds holds
 * d0 op d1 op ... op d(n-1) in relative rank order, grouped as the tree
 * ((d0 d1)(d2 d3))((d4 d5)(d6 d7))..., and no op needs to commute.
 *
 * Errors keep the tree's shape: a rank whose combine fails (or that gets
 * an error from a child) still takes the partial of every remaining child,
 * so no message is left behind on a link, and sends its parent the
 * OX_COMMAND BC_MARK_ERROR and then LIST [INT32 status, STRING message]
 * instead of a partial.  The error reaches the root; ranks off its path
 * finish normally.  An unknown op fails on every rank before any message.
 */
#include <stdio.h>
#include <string.h>

#include "bcast_common.h"
#include "oxr_internal.h"

struct combiner {
	const char *op;   /* a built-in op, or */
	oxr_reduce_fn fn; /* a user op */
	void *arg;
};

struct state {
	oxr_group *g;
	int root, n, rel, timeout_ms;
	const oxr_cmo *data;       /* the partial: the caller's input, or in cur */
	oxr_arena *cur, *nxt;
	oxr_arena *out;            /* the root's: its last step's result goes there */
	int last;                  /* this step is the root's last */
	oxr_cmo *result;           /* that result */
	oxr_status_t err;          /* first error seen here, with its message */
	char msg[512];
};

static void fail(struct state *s, oxr_status_t st, const char *detail)
{
	if (s->err)
		return;
	s->err = st ? st : OXR_ERR_INVAL;
	snprintf(s->msg, sizeof(s->msg), "reduce: rank %d: %s", oxr_group_rank(s->g), detail);
}

static oxr_status_t combine(const struct combiner *c, const oxr_cmo *x, const oxr_cmo *y,
			    oxr_arena *a, oxr_cmo **out)
{
	oxr_status_t st;

	if (!c->fn)
		return oxr_reduce_apply(c->op, x, y, a, out);
	*out = NULL;
	st = c->fn(x, y, a, out, c->arg);
	if (st)
		return oxr_err(st, "the user op returned %d (%s)", st, oxr_strerror(st));
	if (!*out)
		return oxr_err(OXR_ERR_INVAL, "the user op gave no object");
	return OXR_OK;
}

/* A built-in op on numbers makes its result whole in the arena it is given,
 * from nothing of its operands; a list from "append" and a user op's result
 * may share parts of them. */
static int self_contained(const struct combiner *c)
{
	return !c->fn && strcmp(c->op, "append") != 0;
}

/* data = data op y, the result whole in the other arena (copied there when
 * it may share parts) so that neither the old partial nor the received
 * message is needed any more; the root's last result straight in the
 * caller's arena. */
static void step(struct state *s, const struct combiner *c, const oxr_cmo *y)
{
	oxr_cmo *tmp, *res;
	oxr_arena *t, *dst;
	oxr_status_t st;

	if ((!s->cur && (st = oxr_arena_create(&s->cur))) ||
	    (!s->nxt && (st = oxr_arena_create(&s->nxt)))) {
		fail(s, st, oxr_errmsg());
		return;
	}
	dst = s->last ? s->out : s->nxt;
	if ((st = combine(c, s->data, y, self_contained(c) ? dst : s->nxt, &tmp))) {
		fail(s, st, oxr_errmsg());
		return;
	}
	if (self_contained(c))
		res = tmp;
	else if ((st = oxr_cmo_copy(dst, tmp, &res))) {
		fail(s, st, oxr_errmsg());
		return;
	}
	if (dst == s->out) {
		s->data = s->result = res;
		return;
	}
	oxr_arena_reset(s->cur);
	t = s->cur;
	s->cur = s->nxt;
	s->nxt = t;
	s->data = res;
}

/* The error a child sent after its BC_MARK_ERROR. */
static void take_error(struct state *s, int child)
{
	oxr_rmsg *m;
	const oxr_cmo *e;
	oxr_status_t st = bc_recv(s->g, child, s->timeout_ms, &m);

	if (st) {
		fail(s, st, oxr_errmsg());
		return;
	}
	e = m->msg.tag == OXR_OX_DATA ? m->msg.cmo : NULL;
	if (e && e->tag == OXR_CMO_LIST && e->nkids == 2 && e->kids[0]->tag == OXR_CMO_INT32 &&
	    e->kids[1]->tag == OXR_CMO_STRING && !s->err) {
		s->err = e->kids[0]->v.i32 < 0 ? e->kids[0]->v.i32 : OXR_ERR_INVAL;
		snprintf(s->msg, sizeof(s->msg), "%.*s", (int)e->kids[1]->len,
			 (const char *)e->kids[1]->data);
	} else if (!e || e->tag != OXR_CMO_LIST) {
		fail(s, OXR_ERR_PROTO, "a malformed error from a child");
	}
	oxr_rmsg_free(m);
}

static void from_child(struct state *s, const struct combiner *c, int child)
{
	oxr_rmsg *m;
	oxr_status_t st = bc_recv(s->g, child, s->timeout_ms, &m);

	if (st) {
		fail(s, st, oxr_errmsg());
		return;
	}
	if (m->msg.tag == OXR_OX_COMMAND && m->msg.sm == BC_MARK_ERROR)
		take_error(s, child);
	else if (m->msg.tag != OXR_OX_DATA || !m->msg.cmo)
		fail(s, OXR_ERR_PROTO, "expected an OX_DATA from a child");
	else if (!s->err)
		step(s, c, m->msg.cmo);
	oxr_rmsg_free(m);
}

static oxr_status_t to_parent(struct state *s, int parent)
{
	oxr_cmo code = { .tag = OXR_CMO_INT32, .v.i32 = s->err }, text, *kp[2] = { &code, &text };
	oxr_cmo list = { .tag = OXR_CMO_LIST, .nkids = 2, .kids = kp };
	oxr_status_t st;

	if (!s->err)
		return bc_send_cmo(s->g, parent, s->data);
	text = (oxr_cmo){ .tag = OXR_CMO_STRING, .data = (const uint8_t *)s->msg,
			  .len = strlen(s->msg) };
	if ((st = bc_send_mark(s->g, parent, BC_MARK_ERROR)))
		return st;
	return bc_send_cmo(s->g, parent, &list);
}

static oxr_status_t run(oxr_group *g, int root, const struct combiner *c, const oxr_cmo *in,
			oxr_cmo **out, oxr_arena *a, int timeout_ms)
{
	struct state s = { .g = g, .root = root, .timeout_ms = timeout_ms, .data = in, .out = a };
	oxr_status_t st = OXR_OK;
	int mask;

	s.n = oxr_group_size(g);
	s.rel = bc_rel(oxr_group_rank(g), root, s.n);
	if (s.n > 1)
		bc_counts_algo(OXR_COLL_BINOMIAL);
	for (mask = 1; mask < s.n; mask <<= 1) {
		if (s.rel & mask) {
			st = to_parent(&s, bc_abs(s.rel - mask, root, s.n));
			break;
		}
		s.last = s.rel == 0 && mask >= s.n - mask; /* no child at 2 mask */
		if (s.rel + mask < s.n)
			from_child(&s, c, bc_abs(s.rel + mask, root, s.n));
	}
	if (st == OXR_OK && s.rel == 0 && !s.err && s.result)
		*out = s.result;
	else if (st == OXR_OK && s.rel == 0 && !s.err && (st = oxr_cmo_copy(a, s.data, out)))
		fail(&s, st, oxr_errmsg());
	oxr_arena_destroy(s.cur);
	oxr_arena_destroy(s.nxt);
	if (st && !s.err)
		return st; /* the link to the parent failed: its message stands */
	if (s.rel != 0 || s.err)
		*out = oxr_cmo_null();
	return s.err ? oxr_err(s.err, "%s", s.msg) : OXR_OK;
}

static oxr_status_t check(oxr_group *g, int root, const oxr_cmo *in, oxr_cmo **out,
			  oxr_arena *a)
{
	oxr_status_t st = bc_check_args(g, root, "reduce");

	if (st)
		return st;
	if (!in || !out || (oxr_group_rank(g) == root && !a))
		return oxr_err(OXR_ERR_INVAL, "reduce: %s is NULL", !in ? "the input" :
			       !out ? "out" : "the root's arena");
	return OXR_OK;
}

oxr_status_t oxr_reduce(oxr_group *g, int root, const char *op, const oxr_cmo *in,
			oxr_cmo **out, oxr_arena *a, int timeout_ms)
{
	struct combiner c = { .op = op };
	oxr_status_t st;

	bc_counts_begin();
	if (!oxr_reduce_op_known(op))
		return oxr_err(OXR_ERR_INVAL, "reduce: unknown op \"%s\" (known: + * max min "
			       "append); nothing was sent", op ? op : "(null)");
	if ((st = check(g, root, in, out, a)))
		return st;
	return run(g, root, &c, in, out, a, timeout_ms);
}

oxr_status_t oxr_reduce_user(oxr_group *g, int root, oxr_reduce_fn fn, void *arg,
			     const oxr_cmo *in, oxr_cmo **out, oxr_arena *a, int timeout_ms)
{
	struct combiner c = { .fn = fn, .arg = arg };
	oxr_status_t st;

	bc_counts_begin();
	if (!fn)
		return oxr_err(OXR_ERR_INVAL, "reduce: no user op (fn is NULL); nothing was sent");
	if ((st = check(g, root, in, out, a)))
		return st;
	return run(g, root, &c, in, out, a, timeout_ms);
}
