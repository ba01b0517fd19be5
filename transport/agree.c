/* SPDX-License-Identifier: MIT */
/*
 * The shrink's agreement on the failed ranks (ERA-style: Herault et al.,
 * SC'15), over a tree that is rebuilt around the dead as they are found.
 *
 * Tree.  A rank's blocks are the aligned ranges of 2^k ranks that hold it,
 * k = 0 .. l = ceil(log2 P); its level k is the other half of its block of
 * 2^(k+1).  A block is led by its lowest rank not known dead.  A rank
 * leads its blocks up to the first level whose lower half has a rank not
 * known dead: the first such rank is its parent; with none it leads the
 * whole group and is the root (the lowest rank not known dead).  Its
 * children are the leaders of its levels below that in which it is the
 * lower half.  With nobody dead this is the binomial tree rooted at 0
 * (parent r - lowbit(r), children r + 2^k, 2^k < lowbit(r)); with the dead
 * skipped each block is still one subtree, so the depth stays at most l, a
 * rank has at most l children, and a level is one bit of a mask, not an
 * entry of an array.
 *
 * Up.  A rank sends its parent its list once every child level reported
 * or holds no live rank: the ranks it was given as dead, those its
 * detector found (a send or a wait that failed), the ranks of its blocks
 * it found all dead (a lower half it skipped to its parent, a level
 * without a live rank: nobody else reports them), and its children's
 * lists.  A level's report counts for good.  A rank that finds its parent
 * dead sends again to the next: the next live rank of the same half, or a
 * higher level, when its blocks grow and it first gathers the levels it
 * takes over.  A death found after a rank's report is not sent up: it is
 * the next agreement's (the link stays down).
 *
 * Down.  The root decides its list once every level reported.  A decided
 * rank sends the decision to each child that lacks it (the nearest level
 * first: its leader is the next live rank, which takes this rank's blocks
 * over if it dies), to a new child whenever a child dies, to its
 * parent unless that gave it the decision (whenever its parent dies: so
 * a decision made by a root that then died reaches the new root), and to
 * any rank that reported to it without being its child.  A rank takes the
 * first decision that comes from a rank not known dead, from any side.
 *
 * Invariant: when a rank sends a report, no live rank of its blocks has
 * decided, and none of them decides before the rank it reported to does.
 * True when it is sent: each of its levels reported the same (induction on
 * the block's size), or a rank there that had decided sent the decision
 * instead, which the reporter took and sends in place of a report.  It
 * stays true: a decision enters a block only through its leader (every
 * other rank of it has its parent inside), and only from the leader's
 * parent, the undecided receiver of the report; a block whose leader dies
 * is led by its next live rank, whose parent is the same.  A rank's
 * parent changes only when it learns the parent dead, and from then on it
 * drops that rank's decisions (a dead rank's last frames arrive before its
 * death is learned).  So a root decides afresh only when no live rank
 * holds a decision (its levels hold every rank but the dead ones below
 * it), and every later decision is that one: all ranks alive at the end
 * that decide, decide one list.  Assumed: a rank found dead is dead (the
 * detector is late, never wrong; a link that failed is dead to the group,
 * as in shrink.c).  A rank reported dead wrongly is in the decision and
 * gets it too when its report reaches a rank that excluded it, which
 * answers it by name; one cut off from all of them learns nothing here
 * (its links are down) and its driver's timeout ends the wait.
 * Validity: a reporter's list covers its blocks, each rank in it either a
 * reporter or in a list, so every rank dead before the start is in the
 * decision, and every rank in it was reported dead by someone.  Progress:
 * a rank waits only on its parent and on its levels not reported; a dead
 * one is found, a live child reports once its own levels did, the root
 * (the lowest live rank, once it found those below it) decides, and the
 * decision then goes to every live rank.
 *
 * Cost per rank, l = ceil(log2 P), c = ranks dying during the agreement
 * (or reported dead wrongly): with c = 0 (the dead before it known or
 * found) at most l frames sent and l taken: one to the parent, one to each
 * child, one from each child, one from the parent; 2 (1 - 1/P) sent on
 * average; 2l rounds when the dead are known (l up, l down).  Each parent
 * changes only past a dead one and gets one contribution and at most one
 * decision, each level's leader changes only past a dead one and gets one
 * decision: at most l + 1 + 2c sent, 2l + 1 + 3c taken (no simulated run
 * has gone past l + c).  The root dying as it decides costs delay + 1
 * rounds more at most (the ranks waiting on it find it; the next live rank
 * decides on their reports, or had the decision from it).  A frame is 4
 * bytes a failed rank it names; the state is 80 bytes and its lists, 4
 * bytes a failed rank it reports (the root's: 4f, f failed): O(1 + f)
 * bytes, whatever P (the flood it replaced cost every rank P - 1 frames
 * of P/8 bytes a round).
 */
#include <stdlib.h>
#include <string.h>

#include "agree.h"

enum { ADOPTED = 1, FRESH = 2 };

#define SENT 0x80000000u

/* ceil(log2 n): the levels of a group of n. */
static int levels(int n)
{
	int k = 0;

	while (k < OXR_AGREE_LEVELS && (int64_t)1 << k < n)
		k++;
	return k;
}

int32_t oxr_agree_below(const int32_t *v, int32_t len, int32_t x)
{
	int32_t lo = 0, hi = len;

	while (lo < hi) {
		int32_t m = lo + (hi - lo) / 2;
		if (v[m] < x)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

static int in(const int32_t *v, int32_t len, int32_t x)
{
	int32_t i = oxr_agree_below(v, len, x);

	return i < len && v[i] == x;
}

static int is_dead(const struct oxr_agree *a, int x, oxr_agree_dead_fn dead, void *arg)
{
	return in(a->fail, a->nfail, x) || (a->dec && in(a->dec, a->ndec, x)) ||
	       (dead && dead(arg, x));
}

/* The last index of the run of consecutive ranks that v[i] starts (v is
 * sorted, without repeats: v[j] - v[i] == j - i all along the run). */
static int32_t run_end(const int32_t *v, int32_t len, int32_t i)
{
	int32_t lo = i, hi = len - 1;

	while (lo < hi) {
		int32_t m = lo + (hi - lo + 1) / 2;
		if (v[m] - v[i] == m - i)
			lo = m;
		else
			hi = m - 1;
	}
	return lo;
}

/* The first rank of [s, e) not known dead, -1 if none.  A run of dead
 * ranks in a list is stepped over in one search: a detector finding a run
 * one rank at a time would otherwise rescan it at each find. */
static int first_live(const struct oxr_agree *a, int64_t s, int64_t e, oxr_agree_dead_fn dead,
		      void *arg)
{
	int32_t i = oxr_agree_below(a->fail, a->nfail, (int32_t)s), j;

	while (s < e) {
		if (i < a->nfail && a->fail[i] == s) {
			i = run_end(a->fail, a->nfail, i);
			s = (int64_t)a->fail[i++] + 1;
			continue;
		}
		if (a->dec && (j = oxr_agree_below(a->dec, a->ndec, (int32_t)s)) < a->ndec &&
		    a->dec[j] == s) {
			s = (int64_t)a->dec[run_end(a->dec, a->ndec, j)] + 1;
			i = oxr_agree_below(a->fail, a->nfail, (int32_t)s);
			continue;
		}
		if (dead && dead(arg, (int)s)) {
			s++;
			continue;
		}
		return (int)s;
	}
	return -1;
}

static int grow(int32_t **v, int32_t *cap, int64_t need)
{
	int64_t c = *cap ? *cap : 4;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (c > INT32_MAX || !(p = realloc(*v, (size_t)c * sizeof(**v))))
		return -1;
	*v = p;
	*cap = (int32_t)c;
	return 0;
}

/* fail gets the sorted list[0..len). */
static int merge(struct oxr_agree *a, const int32_t *list, int32_t len)
{
	int32_t i = len ? oxr_agree_below(a->fail, a->nfail, list[0]) : 0, j = 0, add = 0, w;

	while (j < len) {
		if (i < a->nfail && a->fail[i] < list[j]) {
			i++;
		} else {
			add += i >= a->nfail || a->fail[i] != list[j];
			i += i < a->nfail && a->fail[i] == list[j];
			j++;
		}
	}
	if (!add)
		return 0;
	if (grow(&a->fail, &a->capfail, (int64_t)a->nfail + add))
		return -1;
	/* from the back, the runs of fail in one move each: a detector finding
	 * a run of dead ranks below the ones it knows inserts at the front */
	i = a->nfail - 1;
	j = len - 1;
	w = a->nfail + add - 1;
	while (j >= 0) {
		int32_t q = oxr_agree_below(a->fail, i + 1, list[j]), run = i - q + 1;
		memmove(a->fail + w - run + 1, a->fail + q, (size_t)run * sizeof(*a->fail));
		w -= run;
		i = q - 1;
		if (run && a->fail[w + 1] == list[j])
			j--; /* known already: moved with the run */
		else
			a->fail[w--] = list[j--];
	}
	a->nfail += add;
	a->stale = 1;
	return 0;
}

/* fail gets every rank of [s, e). */
static int add_range(struct oxr_agree *a, int64_t s, int64_t e)
{
	int32_t i0 = oxr_agree_below(a->fail, a->nfail, (int32_t)s);
	int32_t i1 = oxr_agree_below(a->fail, a->nfail, (int32_t)e);
	int64_t len = e - s, r;

	if (i1 - i0 == len)
		return 0;
	if (grow(&a->fail, &a->capfail, a->nfail - (i1 - i0) + len))
		return -1;
	memmove(a->fail + i0 + len, a->fail + i1, (size_t)(a->nfail - i1) * sizeof(*a->fail));
	for (r = 0; r < len; r++)
		a->fail[i0 + r] = (int32_t)(s + r);
	a->nfail = (int32_t)(a->nfail - (i1 - i0) + len);
	a->stale = 1;
	return 0;
}

static int64_t half_of(int k) { return (int64_t)1 << k; }
static int64_t base_of(int rank, int k) { return rank & ~(2 * half_of(k) - 1); }
static int is_child_level(const struct oxr_agree *a, int k)
{
	return k < a->top && !(a->rank >> k & 1);
}

/* The level of a rank above this one: the half of their smallest common
 * block it is in. */
static int level_of(const struct oxr_agree *a, int who)
{
	return 31 - __builtin_clz((uint32_t)(who ^ a->rank));
}

/* The first live rank of level k, -1 if none; a level found empty is so
 * for good, and its ranks go into the contribution (nobody else reports
 * them).  -2: out of memory. */
static int child(struct oxr_agree *a, int k, oxr_agree_dead_fn dead, void *arg)
{
	int64_t s = base_of(a->rank, k) + half_of(k), e = s + half_of(k);
	int c;

	if (a->empty >> k & 1)
		return -1;
	if (e > a->n)
		e = a->n;
	if ((c = s < e ? first_live(a, s, e, dead, arg) : -1) >= 0)
		return c;
	a->empty |= 1u << k;
	if (!a->decided && s < e && add_range(a, s, e))
		return -2;
	return -1;
}

/* Parent and top from what is known now.  Both only move up, so the scan
 * resumes at top; a lower half found all dead is this rank's to report. */
static int tree(struct oxr_agree *a, oxr_agree_dead_fn dead, void *arg)
{
	int l = levels(a->n), k;

	a->stale = 0;
	for (k = a->top; k < l; k++) {
		int64_t b = base_of(a->rank, k), from = b;
		int p;
		if (!(a->rank >> k & 1))
			continue; /* the lower half: level k is a child's */
		/* the ranks before the parent were dead when it was chosen */
		if (k == a->top && a->parent >= b)
			from = a->parent;
		if ((p = first_live(a, from, b + half_of(k), dead, arg)) >= 0) {
			a->top = (int8_t)k;
			a->parent = p;
			return 0;
		}
		if (!a->decided && add_range(a, b, b + half_of(k)))
			return -1;
	}
	a->top = (int8_t)l;
	a->parent = -1;
	return 0;
}

/* 1 if every child level reported or is empty; -1 out of memory. */
static int complete(struct oxr_agree *a, oxr_agree_dead_fn dead, void *arg)
{
	int k, c;

	for (k = 0; k < a->top; k++)
		if (is_child_level(a, k) && !(a->reported >> k & 1) &&
		    (c = child(a, k, dead, arg)) != -1)
			return c == -2 ? -1 : 0;
	return 1;
}

/* After any news: the tree again, and a root with every level in decides. */
static int settle(struct oxr_agree *a, oxr_agree_dead_fn dead, void *arg)
{
	int32_t *p;
	int c;

	if (a->stale && tree(a, dead, arg))
		return -1;
	if (a->decided || a->parent >= 0)
		return 0;
	if ((c = complete(a, dead, arg)) <= 0)
		return c;
	/* the list is now the decision, held as long as the state: no slack */
	if (a->nfail < a->capfail && (p = realloc(a->fail, (size_t)a->nfail * sizeof(*p))))
		a->fail = p;
	a->decided = FRESH;
	a->dec = a->fail;
	a->ndec = a->nfail;
	a->fail = NULL;
	a->nfail = a->capfail = 0;
	return 0;
}

int oxr_agree_list_ok(int n, const int32_t *list, int len)
{
	int i;

	if (len < 0 || (len && !list))
		return 0;
	for (i = 0; i < len; i++)
		if (list[i] < 0 || list[i] >= n || (i && list[i] <= list[i - 1]))
			return 0;
	return 1;
}

int oxr_agree_start(struct oxr_agree *a, int rank, int n, const int32_t *known, int nknown,
		    oxr_agree_dead_fn dead, void *arg)
{
	memset(a, 0, sizeof(*a));
	a->rank = rank;
	a->n = n;
	a->parent = a->up = a->told_up = -1;
	a->stale = 1;
	if (n < 1 || rank < 0 || rank >= n || !oxr_agree_list_ok(n, known, nknown) ||
	    in(known, nknown, rank) || grow(&a->fail, &a->capfail, nknown))
		goto bad;
	if (nknown)
		memcpy(a->fail, known, (size_t)nknown * sizeof(*known));
	a->nfail = nknown;
	if (settle(a, dead, arg))
		goto bad;
	return 0;
bad:
	oxr_agree_free(a);
	return -1;
}

static uint32_t *ans_find(const struct oxr_agree *a, int who)
{
	int32_t i;

	for (i = 0; i < a->nans; i++)
		if ((int)(a->ans[i] & ~SENT) == who)
			return &a->ans[i];
	return NULL;
}

static int ans_add(struct oxr_agree *a, int who)
{
	if (ans_find(a, who))
		return 0;
	if (grow((int32_t **)&a->ans, &a->capans, (int64_t)a->nans + 1))
		return -1;
	a->ans[a->nans++] = (uint32_t)who;
	return 0;
}

int oxr_agree_next(struct oxr_agree *a, int *to, oxr_agree_dead_fn dead, void *arg)
{
	uint32_t *e;
	int k, c;
	int32_t i;

	if (settle(a, dead, arg))
		return -1;
	if (!a->decided) {
		if (a->parent < 0 || a->up == a->parent)
			return OXR_AGREE_NONE;
		if ((c = complete(a, dead, arg)) <= 0)
			return c < 0 ? -1 : OXR_AGREE_NONE;
		*to = a->up = a->parent;
		return OXR_AGREE_UP;
	}
	/* nearest level first: its first live rank is the next live rank, which
	 * takes this rank's blocks over if it dies, so a root that dies after
	 * one send leaves the decision with its successor */
	for (k = 0; k < a->top; k++) {
		if (!is_child_level(a, k) || a->told >> k & 1)
			continue;
		if ((c = child(a, k, dead, arg)) == -2)
			return -1;
		a->told |= 1u << k;
		if (c < 0 || ((e = ans_find(a, c)) && *e & SENT))
			continue;
		if (e)
			*e |= SENT;
		*to = c;
		return OXR_AGREE_DECIDE;
	}
	for (i = 0; i < a->nans; i++) {
		int who = (int)(a->ans[i] & ~SENT);
		if (a->ans[i] & SENT)
			continue;
		a->ans[i] |= SENT;
		if (who > a->rank && is_child_level(a, (k = level_of(a, who))) &&
		    child(a, k, dead, arg) == who)
			a->told |= 1u << k;
		*to = who;
		return OXR_AGREE_DECIDE;
	}
	if (a->parent >= 0 && a->told_up != a->parent) {
		*to = a->told_up = a->parent;
		return OXR_AGREE_DECIDE;
	}
	return OXR_AGREE_NONE;
}

static int recv_up(struct oxr_agree *a, int from, const int32_t *list, int len,
		   oxr_agree_dead_fn dead, void *arg)
{
	int k = level_of(a, from), old = -1, now;

	if (from < a->rank) /* a child is above its parent */
		return -1;
	if (a->decided && is_child_level(a, k) && a->told >> k & 1)
		old = child(a, k, dead, arg);
	/* the level's, whichever rank of it leads it in this rank's view */
	a->reported |= 1u << k;
	if (merge(a, list, len) || settle(a, dead, arg))
		return -1;
	now = is_child_level(a, k) ? child(a, k, dead, arg) : -1;
	if (now == -2)
		return -1;
	if (old != now)
		a->told &= ~(1u << k);
	/* it waits for the decision from here: one not a child now (a rank
	 * this one knows dead, or a view behind its) gets it by name */
	if (from != now || is_dead(a, from, dead, arg))
		return ans_add(a, from);
	return 0;
}

static int recv_decide(struct oxr_agree *a, int from, const int32_t *list, int len,
		       oxr_agree_dead_fn dead, void *arg)
{
	uint32_t *e;
	int k;

	/* a dead rank's decision that arrives after its death was learned is
	 * not taken: the ranks that re-parented away from it may already have
	 * reported themselves undecided to another root */
	if (a->decided || is_dead(a, from, dead, arg))
		return 0;
	a->decided = ADOPTED;
	a->dec = list;
	a->ndec = len;
	a->told_up = from == a->parent ? from : -1;
	if (from > a->rank && is_child_level(a, (k = level_of(a, from))) &&
	    child(a, k, dead, arg) == from)
		a->told |= 1u << k;
	if ((e = ans_find(a, from)))
		*e |= SENT;
	a->stale = 1;
	return settle(a, dead, arg);
}

int oxr_agree_recv(struct oxr_agree *a, int from, int kind, const int32_t *list, int len,
		   oxr_agree_dead_fn dead, void *arg)
{
	/* the ends only: a frame's whole list is oxr_agree_list_ok's (its
	 * decoder reads every entry anyway); P ranks taking one decision of f
	 * entries would check it P times here */
	if (from < 0 || from >= a->n || from == a->rank || len < 0 || (len && !list) ||
	    (len && (list[0] < 0 || list[len - 1] >= a->n)))
		return -1;
	if (kind == OXR_AGREE_UP)
		return recv_up(a, from, list, len, dead, arg);
	if (kind == OXR_AGREE_DECIDE)
		return recv_decide(a, from, list, len, dead, arg);
	return -1;
}

int oxr_agree_failed(struct oxr_agree *a, int who, oxr_agree_dead_fn dead, void *arg)
{
	int32_t one = who;
	int k;

	if (who < 0 || who >= a->n || who == a->rank)
		return -1;
	if (is_dead(a, who, dead, arg))
		return 0;
	/* a child told that died: its level's next live rank is owed it */
	if (a->decided && who > a->rank && is_child_level(a, (k = level_of(a, who))) &&
	    child(a, k, dead, arg) == who)
		a->told &= ~(1u << k);
	if (merge(a, &one, 1))
		return -1;
	return settle(a, dead, arg);
}

int oxr_agree_waits(struct oxr_agree *a, int *out, int max, oxr_agree_dead_fn dead, void *arg)
{
	int cnt = 0, k, c;

	if (a->parent >= 0 && cnt < max)
		out[cnt++] = a->parent;
	if (a->decided)
		return cnt;
	for (k = 0; k < a->top && cnt < max; k++)
		if (is_child_level(a, k) && !(a->reported >> k & 1) &&
		    (c = child(a, k, dead, arg)) >= 0)
			out[cnt++] = c;
	return cnt;
}

size_t oxr_agree_bytes(const struct oxr_agree *a)
{
	return sizeof(*a) + ((size_t)a->capfail + (size_t)a->capans) * sizeof(int32_t) +
	       (a->decided == FRESH ? (size_t)a->ndec * sizeof(int32_t) : 0);
}

void oxr_agree_free(struct oxr_agree *a)
{
	free(a->fail);
	free(a->ans);
	if (a->decided == FRESH)
		free((void *)a->dec);
	a->fail = NULL;
	a->ans = NULL;
	a->dec = NULL;
	a->nfail = a->capfail = a->nans = a->capans = a->ndec = 0;
	a->decided = 0;
}
