/* SPDX-License-Identifier: MIT */
/*
 * The NEC bitmap barrier (JP4259390B2, steps S01-S30) as an algorithm core.
 *
 * Each rank keeps the patent's bitmap register: bit r set = rank r has
 * entered.  Entering sets the own bit (S02).  A synchronization request is
 * a write of the sender's register to a rank whose bit is still 0 in it
 * (S04/S14); the receiver ORs it in (S11).  The rank whose register becomes
 * all ones has seen every arrival: it notifies its process (S05) and sends
 * synchronization-establishment writes (S08), which are passed on (S26)
 * until every rank was told (S21).
 *
 * Where the requests go.  The patent sends each request to every rank
 * whose bit is 0, and again on every change of the register: O(n) writes
 * per rank and O(n^2) per barrier.  It allows any subset ("at least one
 * target"), so here the targets follow a k-nomial tree over the ranks,
 * rotated so that barrier number s is rooted at rank s mod n (no rank is
 * the central counter every time): a rank directs its request to its
 * parent, the one rank outside its subtree it reports to, and holds it
 * until its register holds its whole subtree, so it sends one request per
 * barrier, not one per change.  The root's register is then all ones
 * exactly when everybody entered.  Establishment travels down the same
 * tree: a rank told by its parent tells its children, which are the ranks
 * still "1" in the patent's S24 AND of the packet's and its own register.
 * Per barrier that is 2(n-1) writes in all; a rank sends and receives
 * one per child and one to or from its parent, at most about
 * 2 (radix-1) log_radix(n) for the root and 2 on average.  Where links
 * open on first use (fixed_root) every barrier is rooted at rank 0: a
 * rotated tree gives a rank new partners in each barrier, each one a
 * handshake and a link held to the end (up to 2 (radix-1) log_radix(n)
 * per rank after n barriers, against 2 on average for one tree; at 1,024
 * ranks on 2 cores a rotating barrier took 5 s against 0.6 s).
 *
 * Invariant: a rank completes barrier s only after the root of s saw all
 * n bits, and the root's bits come only from requests, each sent by a rank
 * that had entered s and whose subtree had all entered s; so nobody leaves
 * before everybody entered.  Every rank completes: the leaves' requests
 * need nothing, each request waits only on its children's, and each
 * establishment only on its parent's.
 */
#include "barrier_core.h"

static int root_of(const bar_core *c)
{
	return c->fixed_root ? 0 : (int)(c->seq % (uint32_t)c->n);
}

static int rel_of(const bar_core *c, int r)
{
	return (r - root_of(c) + c->n) % c->n;
}

static int abs_of(const bar_core *c, int v)
{
	return (v + root_of(c)) % c->n;
}

/* R^j for the lowest nonzero base-R digit j of v; for the root the first
 * power of R >= n.  The subtree of v is [v, v + that) cut at n. */
static long long low_power(const bar_core *c, int v)
{
	long long m = 1;

	if (v == 0) {
		while (m < c->n)
			m *= c->radix;
		return m;
	}
	while (v % (m * c->radix) == 0)
		m *= c->radix;
	return m;
}

static int span(const bar_core *c, int v)
{
	long long m = low_power(c, v);

	return (int)(m < c->n - v ? m : c->n - v);
}

static int parent(const bar_core *c, int v)
{
	long long m = low_power(c, v);

	return (int)(v - ((v / m) % c->radix) * m);
}

/* Children of v in relative ranks, into kids; returns how many. */
static int children(const bar_core *c, int v, int *kids, int max)
{
	long long top = low_power(c, v), m;
	int k = 0, d;

	for (m = 1; m < top; m *= c->radix)
		for (d = 1; d < c->radix; d++) {
			long long ch = v + d * m;
			if (ch >= c->n || k >= max)
				break;
			kids[k++] = (int)ch;
		}
	return k;
}

static int has_bit(const uint64_t *b, int r) { return (int)(b[r / 64] >> (r % 64) & 1); }

/* ORs src into dst (S11), returning how many bits were new. */
static int or_in(const bar_core *c, uint64_t *dst, const uint64_t *src)
{
	int i, added = 0;

	for (i = 0; i < c->nwords; i++) {
		uint64_t w = src[i];
		if (i == c->nwords - 1 && c->n % 64)
			w &= (1ull << (c->n % 64)) - 1;
		w &= ~dst[i];
		added += __builtin_popcountll(w);
		dst[i] |= w;
	}
	return added;
}

static int establish(bar_core *c)
{
	int kids[128], k, i;

	/* S05-S08 at the root, S21-S26 below it */
	k = children(c, rel_of(c, c->rank), kids, 128);
	for (i = 0; i < k; i++)
		bar_push(c, abs_of(c, kids[i]), BAR_EST, 0, 0);
	return bar_complete(c);
}

/* S03/S13: is the register full, for this rank's part of the tree? */
static int check(bar_core *c)
{
	int v = rel_of(c, c->rank);

	if (!c->entered || c->req_sent || c->have < span(c, v))
		return 0;
	if (v == 0)
		return establish(c);
	bar_push(c, abs_of(c, parent(c, v)), BAR_REQ, 0, 1);
	c->req_sent = 1;
	return 0;
}

static int bm_enter(bar_core *c)
{
	if (!has_bit(c->bits, c->rank)) {
		c->bits[c->rank / 64] |= 1ull << (c->rank % 64);
		c->have++;
	}
	return check(c);
}

static int bm_arrive(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits)
{
	if (h->kind == BAR_REQ && bits) {
		c->have += or_in(c, c->bits, bits);
		return check(c);
	}
	/* an establishment is only ever sent to a rank that has requested */
	if (h->kind == BAR_EST && c->req_sent &&
	    from == abs_of(c, parent(c, rel_of(c, c->rank))))
		return establish(c);
	c->odd++;
	return 0;
}

static void bm_early(bar_core *c, int from, const bar_hdr *h, const uint64_t *bits)
{
	(void)from;
	if (h->kind == BAR_REQ && bits)
		c->next_have += or_in(c, c->next, bits);
	else
		c->odd++;
}

static int bm_waits_on(const bar_core *c, int *peers, int max)
{
	int kids[128], k, i, w = 0, v = rel_of(c, c->rank);

	if (c->req_sent) {
		if (max > 0)
			peers[w++] = abs_of(c, parent(c, v));
		return w;
	}
	k = children(c, v, kids, 128);
	for (i = 0; i < k && w < max; i++)
		if (!has_bit(c->bits, abs_of(c, kids[i])))
			peers[w++] = abs_of(c, kids[i]);
	return w;
}

static int bm_dependents(const bar_core *c, int *peers, int max)
{
	int kids[128], k, i, w = 0, v = rel_of(c, c->rank);

	if (v != 0 && max > 0)
		peers[w++] = abs_of(c, parent(c, v));
	k = children(c, v, kids, 128);
	for (i = 0; i < k && w < max; i++)
		peers[w++] = abs_of(c, kids[i]);
	return w;
}

const struct bar_algo bar_bitmap_algo = { bm_enter, bm_arrive, bm_early, bm_waits_on,
					   bm_dependents };
