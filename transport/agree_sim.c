/* SPDX-License-Identifier: MIT */
/*
 * The shrink's agreement (agree.c) over a simulated group: the test of its
 * invariant at 2^16 ranks (tests/transport/test_agree.c) and oxr-bench
 * --simulate's figures at 2^20 come from this one loop.
 *
 * Time goes in rounds: the frames sent in round t are taken in round t + 1,
 * in the order they were sent, before anything a detector finds in that
 * round (a dead rank's last frames arrive before its death is known).  In
 * a round a rank takes its frames, then its detector's finds, then sends
 * all it owes (a rank dying in the round: `cut` frames at most).  Between
 * rounds with no frame in flight the clock jumps to the next find, so a
 * run of k dead ranks found one after the other costs k events, not k
 * delays of idle rounds.  Each rank holds its own state (its lists grow
 * with what it learns), so the simulation costs a struct oxr_agree and 21
 * bytes a rank; a decision travels as a number into a table of the
 * distinct lists decided (one, when the invariant holds), so that P ranks
 * holding the decision cost it once.
 */
#include <stdlib.h>
#include <string.h>

#include "agree.h"

#define MAX_DECISIONS 255

struct frame {
	int32_t from, to;
	int32_t len; /* UP: its list's length; DECIDE: -1 - the decision's number */
	int32_t off; /* UP: where its list starts in the round's payloads */
};

struct vec {
	void *v;
	size_t len, cap, size;
};

struct find {
	int32_t t, r, x; /* in round t, rank r finds rank x dead */
};

struct sim {
	struct oxr_agree_sim *s;
	struct oxr_agree *st;
	uint8_t *gone0;  /* dead before the start: the known dead, when known */
	uint8_t *did;    /* 1 + the number of the list it decided; 0: undecided */
	int32_t *stamp;  /* the last round it was touched in */
	struct vec frames[2], pay[2], touched, heap;
	struct {
		int32_t *v, len;
	} dec[MAX_DECISIONS];
	int ndec, t;
	int findable; /* some rank may be found dead: the waits are worth looking at */
};

static int levels(int n)
{
	int k = 0;

	while ((int64_t)1 << k < n)
		k++;
	return k;
}

static int bit(const uint8_t *m, int i) { return m[i / 8] >> (i % 8) & 1; }

static int gone_fn(void *arg, int rank) { return bit(arg, rank); }

static void *push(struct vec *v)
{
	if (v->len == v->cap) {
		size_t c = v->cap ? 2 * v->cap : 1024;
		void *p = realloc(v->v, c * v->size);
		if (!p)
			return NULL;
		v->v = p;
		v->cap = c;
	}
	return (char *)v->v + v->size * v->len++;
}

static oxr_agree_dead_fn dead_fn(const struct sim *m) { return m->s->known ? gone_fn : NULL; }

/* Alive to take frames and finds in round t (one dying in t still does). */
static int acts(const struct oxr_agree_sim *s, int r, int64_t t)
{
	return !s->die || s->die[r] == OXR_AGREE_LIVES || s->die[r] >= t;
}

static int doomed(const struct oxr_agree_sim *s, int r)
{
	return s->die && s->die[r] != OXR_AGREE_LIVES;
}

static int find_less(const struct find *a, const struct find *b) { return a->t < b->t; }

static int find_push(struct sim *m, int64_t t, int r, int x)
{
	struct find *h, f = { (int32_t)(t > INT32_MAX ? INT32_MAX : t), r, x };
	size_t i;

	if (!push(&m->heap))
		return -1;
	h = m->heap.v;
	for (i = m->heap.len - 1; i && find_less(&f, &h[(i - 1) / 2]); i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = f;
	return 0;
}

static struct find find_pop(struct sim *m)
{
	struct find *h = m->heap.v, top = h[0], last = h[--m->heap.len];
	size_t i = 0, c, n = m->heap.len;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && find_less(&h[c + 1], &h[c]))
			c++;
		if (!find_less(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (n)
		h[i] = last;
	return top;
}

static int touch(struct sim *m, int r)
{
	int32_t *p;

	if (m->stamp[r] == m->t)
		return 0;
	m->stamp[r] = m->t;
	if (!(p = push(&m->touched)))
		return -1;
	*p = r;
	return 0;
}

/* The number of a list decided here (a root's), by its content. */
static int number(struct sim *m, const int32_t *v, int32_t len)
{
	int i;

	for (i = 0; i < m->ndec; i++)
		if (m->dec[i].len == len &&
		    (!len || !memcmp(m->dec[i].v, v, (size_t)len * sizeof(*v))))
			return i;
	if (m->ndec == MAX_DECISIONS) /* told apart up to here: a split anyway */
		return MAX_DECISIONS - 1;
	if (!(m->dec[i].v = malloc(len ? (size_t)len * sizeof(*v) : 1)))
		return -1;
	if (len)
		memcpy(m->dec[i].v, v, (size_t)len * sizeof(*v));
	m->dec[i].len = len;
	return m->ndec++;
}

/* r may have decided in this round: its round, and which list. */
static int note_decision(struct sim *m, int r, int id)
{
	struct oxr_agree *a = &m->st[r];

	if (!a->decided || m->did[r])
		return 0;
	if (id < 0 && (id = number(m, a->dec, a->ndec)) < 0)
		return -1;
	m->did[r] = (uint8_t)(id + 1);
	m->s->decided[r] = m->t;
	return 0;
}

/* r's sends of this round, then the deaths it would have to find. */
static int sends(struct sim *m, int r)
{
	struct oxr_agree_sim *s = m->s;
	struct oxr_agree *a = &m->st[r];
	oxr_agree_dead_fn dead = dead_fn(m);
	int limit = doomed(s, r) && s->die[r] == m->t ? s->cut : -1;
	int kind, to, w[OXR_AGREE_LEVELS + 1], nw, i;

	while (limit && (kind = oxr_agree_next(a, &to, dead, m->gone0)) != OXR_AGREE_NONE) {
		struct frame *f;
		if (kind < 0 || note_decision(m, r, -1))
			return -1;
		limit -= limit > 0;
		if (doomed(s, to) && s->die[to] <= m->t) {
			/* dead by the time it would arrive: the sender finds it */
			s->probes[r]++;
			if (find_push(m, (int64_t)m->t + s->delay, r, to))
				return -1;
			continue;
		}
		if (!(f = push(&m->frames[(m->t + 1) & 1])))
			return -1;
		*f = (struct frame){ r, to, 0, 0 };
		if (kind == OXR_AGREE_DECIDE) {
			f->len = -m->did[r];
		} else {
			struct vec *p = &m->pay[(m->t + 1) & 1];
			if (p->len + (size_t)a->nfail > INT32_MAX)
				return -1;
			f->off = (int32_t)p->len;
			f->len = a->nfail;
			for (i = 0; i < a->nfail; i++) {
				int32_t *x = push(p);
				if (!x)
					return -1;
				*x = a->fail[i];
			}
		}
		s->sent[r]++;
	}
	if (note_decision(m, r, -1))
		return -1;
	if (!m->findable || (doomed(s, r) && s->die[r] <= m->t))
		return 0; /* nothing to find, or it dies now */
	nw = oxr_agree_waits(a, w, OXR_AGREE_LEVELS + 1, dead, m->gone0);
	for (i = 0; i < nw; i++)
		if (doomed(s, w[i]) &&
		    find_push(m, (s->die[w[i]] > m->t ? s->die[w[i]] : m->t) + (int64_t)s->delay, r,
			      w[i]))
			return -1;
	return 0;
}

static int deliver(struct sim *m)
{
	struct oxr_agree_sim *s = m->s;
	struct vec *fv = &m->frames[m->t & 1], *pv = &m->pay[m->t & 1];
	size_t i;

	for (i = 0; i < fv->len; i++) {
		const struct frame *f = (struct frame *)fv->v + i;
		int id = f->len < 0 ? -1 - f->len : -1;
		const int32_t *list = id >= 0 ? m->dec[id].v : (int32_t *)pv->v + f->off;
		int32_t len = id >= 0 ? m->dec[id].len : f->len;
		s->recvd[f->to]++;
		int kind = id >= 0 ? OXR_AGREE_DECIDE : OXR_AGREE_UP;
		if (oxr_agree_recv(&m->st[f->to], f->from, kind, list, len, dead_fn(m), m->gone0) ||
		    note_decision(m, f->to, id) || touch(m, f->to))
			return -1;
	}
	fv->len = pv->len = 0;
	return 0;
}

static int finds(struct sim *m)
{
	struct oxr_agree_sim *s = m->s;

	while (m->heap.len && ((struct find *)m->heap.v)[0].t == m->t) {
		struct find f = find_pop(m);
		if (!acts(s, f.r, m->t))
			continue;
		if (oxr_agree_failed(&m->st[f.r], f.x, dead_fn(m), m->gone0) ||
		    note_decision(m, f.r, -1) || touch(m, f.r))
			return -1;
	}
	return 0;
}

/* The parent each wrongly accused rank has at the start reports it dead
 * (one accused a parent at most). */
static int accusations(struct sim *m, int32_t *acc)
{
	struct oxr_agree_sim *s = m->s;
	struct oxr_agree a;
	int r;

	for (r = 0; r < s->n; r++)
		acc[r] = -1;
	for (r = 0; r < s->n; r++) {
		if (!s->wrong || !bit(s->wrong, r) || doomed(s, r))
			continue;
		if (oxr_agree_start(&a, r, s->n, NULL, 0, dead_fn(m), m->gone0))
			return -1;
		if (a.parent >= 0 && !doomed(s, a.parent) && acc[a.parent] < 0) {
			acc[a.parent] = r;
			s->accused++;
		}
		oxr_agree_free(&a);
	}
	return 0;
}

static int run(struct sim *m)
{
	struct oxr_agree_sim *s = m->s;
	int32_t *acc = s->wrong ? malloc((size_t)s->n * sizeof(*acc)) : NULL;
	int64_t cap = 0;
	size_t i;
	int r;

	if ((s->wrong && (!acc || accusations(m, acc))))
		goto bad;
	m->t = 0;
	for (r = 0; r < s->n; r++) {
		int32_t one = acc ? acc[r] : -1;
		if (doomed(s, r) && s->die[r] == 0)
			continue;
		if (oxr_agree_start(&m->st[r], r, s->n, &one, one >= 0, dead_fn(m), m->gone0) ||
		    note_decision(m, r, -1) || touch(m, r))
			goto bad;
	}
	free(acc);
	acc = NULL;
	for (r = 0; s->die && r < s->n; r++)
		cap = s->die[r] > cap ? s->die[r] : cap;
	/* each find is a rank found dead, n at most in a row, and the tree is
	 * l deep: a run past this waits on something that never comes */
	cap += ((int64_t)s->n + 2 * levels(s->n) + 4) * (s->delay + 1);
	for (;;) {
		int32_t *tv = m->touched.v;
		for (i = 0; i < m->touched.len; i++)
			if (acts(s, tv[i], m->t) && sends(m, tv[i]))
				goto bad;
		m->touched.len = 0;
		s->end = m->t;
		if (m->frames[(m->t + 1) & 1].len)
			m->t++;
		else if (m->heap.len)
			m->t = ((struct find *)m->heap.v)[0].t;
		else
			break;
		if (m->t > cap) {
			s->stalled = 1;
			break;
		}
		if (deliver(m) || finds(m))
			goto bad;
	}
	return 0;
bad:
	free(acc);
	return -1;
}

static int totals(struct sim *m)
{
	struct oxr_agree_sim *s = m->s;
	int r, ref = 0;
	const int32_t *d;
	int32_t nd, i;
	uint8_t *in;

	for (r = 0; r < s->n && !ref; r++)
		if ((!doomed(s, r) || s->die[r] > s->end) && m->did[r])
			ref = m->did[r];
	for (r = 0; r < s->n; r++) {
		if (doomed(s, r) && s->die[r] <= s->end) {
			s->dead_differ += m->did[r] && m->did[r] != ref;
			continue;
		}
		s->live++;
		s->undecided += !m->did[r];
		s->disagree += m->did[r] && m->did[r] != ref;
		s->rounds = s->decided[r] > s->rounds ? s->decided[r] : s->rounds;
		s->frames += s->sent[r];
		s->probes_all += s->probes[r];
		s->max_sent = s->sent[r] > s->max_sent ? s->sent[r] : s->max_sent;
		s->max_recvd = s->recvd[r] > s->max_recvd ? s->recvd[r] : s->max_recvd;
		s->max_probes = s->probes[r] > s->max_probes ? s->probes[r] : s->max_probes;
		if (oxr_agree_bytes(&m->st[r]) > s->max_bytes)
			s->max_bytes = oxr_agree_bytes(&m->st[r]);
	}
	s->decisions = m->ndec;
	if (!ref)
		return 0;
	d = m->dec[ref - 1].v;
	nd = m->dec[ref - 1].len;
	s->failed = nd;
	if (!(in = calloc(((size_t)s->n + 7) / 8, 1)))
		return -1;
	for (i = 0; i < nd; i++)
		in[d[i] / 8] |= (uint8_t)(1u << d[i] % 8);
	for (r = 0; r < s->n; r++) {
		int live = !doomed(s, r) || s->die[r] > s->end;
		if (doomed(s, r) && s->die[r] == 0)
			s->dead_missing += !bit(in, r);
		else if (live)
			s->live_in += bit(in, r);
		else
			s->crashed_in += bit(in, r);
	}
	free(in);
	return 0;
}

void oxr_agree_sim_free(struct oxr_agree_sim *s)
{
	free(s->decided);
	free(s->sent);
	free(s->recvd);
	free(s->probes);
	s->decided = NULL;
	s->sent = s->recvd = s->probes = NULL;
}

static void reset_out(struct oxr_agree_sim *s)
{
	s->decided = NULL;
	s->sent = s->recvd = s->probes = NULL;
	s->live = s->undecided = s->disagree = s->rounds = s->end = 0;
	s->dead_missing = s->live_in = s->crashed_in = s->decisions = s->dead_differ = 0;
	s->failed = s->accused = s->stalled = 0;
	s->frames = s->probes_all = 0;
	s->max_sent = s->max_recvd = s->max_probes = 0;
	s->max_bytes = 0;
}

int oxr_agree_simulate(struct oxr_agree_sim *s)
{
	size_t n = s->n > 0 ? (size_t)s->n : 0;
	struct sim m = { .s = s };
	int ok = -1, r, i;

	reset_out(s);
	if (s->n < 1 || s->delay < 1 || s->cut < 0)
		return -1;
	for (r = 0; s->die && r < s->n; r++)
		if (s->die[r] < OXR_AGREE_LIVES || s->die[r] > INT32_MAX / 2)
			return -1;
	m.frames[0].size = m.frames[1].size = sizeof(struct frame);
	m.pay[0].size = m.pay[1].size = sizeof(int32_t);
	m.touched.size = sizeof(int32_t);
	m.heap.size = sizeof(struct find);
	s->decided = malloc(n * sizeof(*s->decided));
	s->sent = calloc(n, sizeof(*s->sent));
	s->recvd = calloc(n, sizeof(*s->recvd));
	s->probes = calloc(n, sizeof(*s->probes));
	m.st = calloc(n, sizeof(*m.st));
	m.gone0 = calloc((n + 7) / 8, 1);
	m.did = calloc(n, 1);
	m.stamp = malloc(n * sizeof(*m.stamp));
	if (!s->decided || !s->sent || !s->recvd || !s->probes || !m.st || !m.gone0 || !m.did ||
	    !m.stamp) {
		oxr_agree_sim_free(s);
		goto out;
	}
	for (r = 0; r < s->n; r++) {
		s->decided[r] = -1;
		m.stamp[r] = -1;
		if (doomed(s, r) && s->die[r] == 0)
			m.gone0[r / 8] |= (uint8_t)(1u << r % 8);
		m.findable |= doomed(s, r) && (s->die[r] > 0 || !s->known);
	}
	if (run(&m) || totals(&m)) {
		oxr_agree_sim_free(s);
		goto out;
	}
	ok = 0;
out:
	for (r = 0; m.st && r < s->n; r++)
		oxr_agree_free(&m.st[r]);
	for (i = 0; i < m.ndec; i++)
		free(m.dec[i].v);
	for (i = 0; i < 2; i++) {
		free(m.frames[i].v);
		free(m.pay[i].v);
	}
	free(m.touched.v);
	free(m.heap.v);
	free(m.st);
	free(m.gone0);
	free(m.did);
	free(m.stamp);
	return ok;
}
