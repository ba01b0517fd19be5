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
 * still "1" in the patent's S24 AND of the packet's and its own register
 * (the establishment itself carries no bits: the tree says who they are).
 * Per barrier that is 2(n-1) writes in all; a rank sends and receives
 * one per child and one to or from its parent, at most about
 * 2 (radix-1) log_radix(n) for the root and 2 on average.  Where links
 * open on first use (fixed_root) every barrier is rooted at rank 0: a
 * rotated tree gives a rank new partners in each barrier, each one a
 * handshake and a link held to the end (up to 2 (radix-1) log_radix(n)
 * per rank after n barriers, against 2 on average for one tree; at 1,024
 * ranks on 2 cores a rotating barrier took 5 s against 0.6 s).
 *
 * The register and the wire.  Ranks are numbered relative to the root of
 * their barrier (v = rank - root mod n); each register holds its barrier's
 * relative ranks (the register of the next barrier, filled by requests
 * that come early, those of the next root).  The subtree of v is the
 * contiguous range [v, v + span(v)), and a rank's register never holds
 * more than its subtree, so a request carries only that range, bit i for
 * relative rank v + i: the patent's n-bit register stays n bits in the
 * rank's memory (the root needs all of it), but no write carries more
 * than the sender's subtree.
 *
 * The window.  Rank r's tree neighbours, whatever the root, are the ranks
 * r + e (its children) and r - e (its parent), e = d radix^l of an edge
 * label j = l (radix-1) + d-1, 1 <= d < radix, e < n: the k-nomial edges
 * join v and v + d radix^l, and rotation moves both ends alike.  So the
 * window has per sequence parity one slot per label and direction, each
 * with a single sender that never changes: child slot j (sender r + e,
 * taking its requests; bits min(radix^l, n - e), the largest subtree a
 * child over that edge can have) and parent slot E + j (sender r - e,
 * establishments; header only), E labels in all.  Two parities, because
 * barriers s and s+1 overlap and s+2 cannot (barrier_core.c).  A sender
 * knows its slot: the label of the edge to its parent is the lowest
 * nonzero base-radix digit of its own v and that digit's place.
 *
 * Per rank, with E = #{(l, d): d radix^l < n} <= (radix-1) ceil(log_radix n):
 *   window  4E slots, 2 * (2E * 16 + 8 * sum_j ceil(bits_j / 64)) bytes
 *           <= 80 E + (n-1)/4 bytes, since the child slots' bits add up
 *           to n-1 (the ranges [d radix^l, (d+1) radix^l) tile [1, n));
 *           at the default radix 16: 1,024 ranks 132 slots, 2,784 B;
 *           100,000 ranks 244 slots, 29,328 B (the old window of 2n slots
 *           of 16 + n/8 bytes: 294,912 B and 2.5 GB);
 *   memory  three n-bit registers (this barrier's, the next's, a request's).
 * A slot per sender instead would be O(n) slots of O(n) bits: O(n^2).
 *
 * Invariant: a rank completes barrier s only after the root of s saw all
 * n bits, and the root's bits come only from requests, each sent by a rank
 * that had entered s and whose subtree had all entered s, and each taken
 * only into the range of its sender's subtree; so nobody leaves before
 * everybody entered.  Every rank completes: the leaves' requests need
 * nothing, each request waits only on its children's, and each
 * establishment only on its parent's; every child of every rank has its
 * own slot (no rank has more than E children), so none is ever refused.
 */
#include "barrier_core.h"

static int root_at(const bar_core *c, uint32_t seq)
{
	return c->fixed_root ? 0 : (int)(seq % (uint32_t)c->n);
}

/* r's relative rank in barrier seq's tree, and back */
static int rel_at(const bar_core *c, uint32_t seq, int r)
{
	return (int)(((long long)r - root_at(c, seq) + c->n) % c->n);
}

static int abs_at(const bar_core *c, uint32_t seq, int v)
{
	return (int)(((long long)v + root_at(c, seq)) % c->n);
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

/* The length d R^l of edge label j = l (R-1) + d-1, and R^l in *place. */
static long long edge_len(const bar_core *c, int j, long long *place)
{
	long long m = 1;
	int l;

	for (l = j / (c->radix - 1); l > 0; l--)
		m *= c->radix;
	if (place)
		*place = m;
	return (j % (c->radix - 1) + 1) * m;
}

/* The label of the edge from v's parent to v (v != 0). */
static int edge_of(const bar_core *c, int v)
{
	long long m = low_power(c, v), p;
	int l = 0;

	for (p = 1; p < m; p *= c->radix)
		l++;
	return l * (c->radix - 1) + (int)((v / m) % c->radix) - 1;
}

static int nedges(const bar_core *c)
{
	int j = 0;

	while (edge_len(c, j, NULL) < c->n)
		j++;
	return j;
}

/* v's child over edge j, or -1: none there nor over any later edge,
 * since the edges grow with j */
static int child(const bar_core *c, int v, int j)
{
	long long e;

	if (j >= c->nslots / 2)
		return -1;
	e = edge_len(c, j, NULL);
	return e < low_power(c, v) && v + e < c->n ? (int)(v + e) : -1;
}

static int has_bit(const uint64_t *b, int v) { return (int)(b[v / 64] >> (v % 64) & 1); }

static uint64_t low_mask(long long nbits)
{
	return nbits >= 64 ? ~0ull : (1ull << nbits) - 1;
}

/* The sender's part of its register, its subtree [v, v + nbits), into
 * c->wire from bit 0 on. */
static void to_wire(bar_core *c, int v, int nbits)
{
	int k;

	for (k = 0; 64LL * k < nbits; k++) {
		long long at = v + 64LL * k, q = at / 64;
		int s = (int)(at % 64);
		uint64_t w = c->bits[q] >> s;
		if (s && q + 1 < c->nwords)
			w |= c->bits[q + 1] << (64 - s);
		c->wire[k] = w & low_mask(nbits - 64LL * k);
	}
}

/* S11: ORs a request's nbits bits into reg from relative rank `at` on,
 * returning how many were new.  at + nbits <= n. */
static int or_in(const bar_core *c, uint64_t *reg, int at, const uint64_t *src, int nbits)
{
	int k, added = 0;

	for (k = 0; 64LL * k < nbits; k++) {
		uint64_t w = src[k] & low_mask(nbits - 64LL * k);
		long long p = at + 64LL * k, q = p / 64;
		int s = (int)(p % 64);
		uint64_t lo = w << s, hi = s ? w >> (64 - s) : 0;
		added += __builtin_popcountll(lo & ~reg[q]);
		reg[q] |= lo;
		if (hi && q + 1 < c->nwords) {
			added += __builtin_popcountll(hi & ~reg[q + 1]);
			reg[q + 1] |= hi;
		}
	}
	return added;
}

/* Where this rank writes its parent, in barrier c->seq (v != 0). */
static bar_peer up(const bar_core *c, int v)
{
	long long m = low_power(c, v);
	int p = (int)(v - ((v / m) % c->radix) * m);

	return (bar_peer){ abs_at(c, c->seq, p), edge_of(c, v) };
}

/* ... and its child u over edge j: the child's parent slot */
static bar_peer down(const bar_core *c, int u, int j)
{
	return (bar_peer){ abs_at(c, c->seq, u), c->nslots / 2 + j };
}

static int establish(bar_core *c)
{
	int v = rel_at(c, c->seq, c->rank), j, u;

	/* S05-S08 at the root, S21-S26 below it */
	for (j = 0; (u = child(c, v, j)) >= 0; j++)
		bar_push(c, down(c, u, j), BAR_EST, 0, 0);
	return bar_complete(c);
}

/* S03/S13: is the register full, for this rank's part of the tree? */
static int check(bar_core *c)
{
	int v = rel_at(c, c->seq, c->rank);

	if (!c->entered || c->req_sent || c->have < span(c, v))
		return 0;
	if (v == 0)
		return establish(c);
	to_wire(c, v, span(c, v));
	bar_push(c, up(c, v), BAR_REQ, 0, span(c, v));
	c->req_sent = 1;
	return 0;
}

static int bm_enter(bar_core *c)
{
	int v = rel_at(c, c->seq, c->rank);

	if (!has_bit(c->bits, v)) {
		c->bits[v / 64] |= 1ull << (v % 64);
		c->have++;
	}
	return check(c);
}

/* A request of barrier seq in child slot j, into reg (that barrier's):
 * the new bits, or -1 when it is no request a child of this rank sends. */
static int take_req(bar_core *c, uint32_t seq, uint64_t *reg, int j, const bar_hdr *h,
		    const uint64_t *bits, int nbits)
{
	int u = child(c, rel_at(c, seq, c->rank), j);

	if (h->kind != BAR_REQ || j >= c->nslots / 2)
		return bar_refuse(c, c->slot_from[j], "a write of a kind its slot does not take");
	if (u < 0)
		return bar_refuse(c, c->slot_from[j], "a request from a rank that is not "
				  "a child of this one in that barrier's tree");
	if (!bits || nbits < span(c, u))
		return bar_refuse(c, c->slot_from[j], "a request shorter than its sender's subtree");
	return or_in(c, reg, u, bits, span(c, u));
}

static int bm_arrive(bar_core *c, int j, const bar_hdr *h, const uint64_t *bits, int nbits)
{
	int v = rel_at(c, c->seq, c->rank), add;

	if (h->kind == BAR_EST) {
		/* only ever sent, by the parent, to a rank that has requested */
		if (v != 0 && c->req_sent && j == c->nslots / 2 + edge_of(c, v))
			return establish(c);
		return bar_refuse(c, c->slot_from[j], "an establishment this rank did not wait for");
	}
	if ((add = take_req(c, c->seq, c->bits, j, h, bits, nbits)) < 0)
		return -1;
	c->have += add;
	return check(c);
}

static int bm_early(bar_core *c, int j, const bar_hdr *h, const uint64_t *bits, int nbits)
{
	int add = take_req(c, c->seq + 1, c->next, j, h, bits, nbits);

	if (add < 0)
		return -1;
	c->next_have += add;
	return 0;
}

static int bm_waits_on(const bar_core *c, bar_peer *peers)
{
	int v = rel_at(c, c->seq, c->rank), j, u, w = 0;

	if (c->req_sent) {
		peers[w++] = up(c, v);
		return w;
	}
	for (j = 0; (u = child(c, v, j)) >= 0; j++)
		if (!has_bit(c->bits, u))
			peers[w++] = down(c, u, j);
	return w;
}

static int bm_dependents(const bar_core *c, bar_peer *peers)
{
	int v = rel_at(c, c->seq, c->rank), j, u, w = 0;

	if (v != 0)
		peers[w++] = up(c, v);
	for (j = 0; (u = child(c, v, j)) >= 0; j++)
		peers[w++] = down(c, u, j);
	return w;
}

/* Child slots first (requests, with bits), then parent slots. */
static int bm_nslots(const bar_core *c)
{
	return 2 * nedges(c);
}

static void bm_slot(const bar_core *c, int j, int *from, int *bits)
{
	int e_count = c->nslots / 2, up_slot = j >= e_count;
	long long m, e = edge_len(c, up_slot ? j - e_count : j, &m);

	*from = (int)(((long long)c->rank + (up_slot ? c->n - e : e)) % c->n);
	*bits = up_slot ? 0 : (int)(m < c->n - e ? m : c->n - e);
}

/* a parent and a child over every edge */
static int bm_maxpeers(const bar_core *c)
{
	return 1 + nedges(c);
}

const struct bar_algo bar_bitmap_algo = { bm_nslots, bm_slot, bm_maxpeers, bm_enter,
					   bm_arrive, bm_early, bm_waits_on, bm_dependents };
