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
 * contiguous range [v, v + span(v)), a rank's register never holds more
 * than its subtree, and it requests only once it holds all of it: so the
 * bitmap a request carries is always that one range, and it goes on the
 * wire run-length encoded, (first, count) = (v, span(v)), which the
 * receiver ORs into its register.  The patent's n-bit register stays n
 * bits in the rank's memory (the root needs all of it, and it is never
 * registered), but a write is 24 bytes whatever n.  A receiver knows the
 * range each child slot's sender covers in each barrier, so it takes
 * that range exactly; any other run (outside it, past it, short of it,
 * empty) was never sent by a working peer and fails the barrier.  No
 * write carries a partial bitmap: aborts and establishments carry none,
 * and dissemination rounds (barrier_dissem.c) have no runs in their slots.
 *
 * The window.  Rank r's tree neighbours, whatever the root, are the ranks
 * r + e (its children) and r - e (its parent), e = d radix^l of an edge
 * label j = l (radix-1) + d-1, 1 <= d < radix, e < n: the k-nomial edges
 * join v and v + d radix^l, and rotation moves both ends alike.  So the
 * window has per sequence parity one slot per label and direction, each
 * with a single sender that never changes: child slot j (sender r + e,
 * taking its requests: a header and a run) and parent slot E + j (sender
 * r - e, establishments: a header), E labels in all.  Two parities,
 * because barriers s and s+1 overlap and s+2 cannot (barrier_core.c).  A
 * sender knows its slot: the label of the edge to its parent is the lowest
 * nonzero base-radix digit of its own v and that digit's place.
 *
 * Per rank, with E = #{(l, d): d radix^l < n} <= (radix-1) ceil(log_radix n):
 *   window  4E slots, 2 (E (16 + 8) + E 16) = 80 E bytes, independent of
 *           the bits the requests stand for; at the default radix 16:
 *           1,024 ranks 132 slots, 2,640 B; 100,000 ranks 244 slots,
 *           4,880 B; 2^20 ranks 300 slots, 6,000 B (bitmaps in the child
 *           slots made it up to 80 E + (n-1)/4 bytes: 2,784 B, 29,328 B
 *           and 267,360 B); at 2^20 ranks and any radix 2..64 at most
 *           15,360 B (radix 64, E = 192);
 *   memory  two n-bit registers (this barrier's and the next's).
 * A slot per sender instead would be O(n) slots.
 *
 * Invariant: a rank completes barrier s only after the root of s saw all
 * n bits, and the root's bits come only from requests, each sent by a rank
 * that had entered s and whose subtree had all entered s, and each taken
 * only as the range of its sender's whole subtree; so nobody leaves before
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

/* The length d R^l of edge label j = l (R-1) + d-1. */
static long long edge_len(const bar_core *c, int j)
{
	long long m = 1;
	int l;

	for (l = j / (c->radix - 1); l > 0; l--)
		m *= c->radix;
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

	while (edge_len(c, j) < c->n)
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
	e = edge_len(c, j);
	return e < low_power(c, v) && v + e < c->n ? (int)(v + e) : -1;
}

static int has_bit(const uint64_t *b, int v) { return (int)(b[v / 64] >> (v % 64) & 1); }

static uint64_t low_mask(long long nbits)
{
	return nbits >= 64 ? ~0ull : (1ull << nbits) - 1;
}

/* S11 for a run: sets relative ranks [at, at + count) in reg, returning
 * how many were new.  at + count <= n. */
static int or_run(uint64_t *reg, int at, int count)
{
	long long p = at, end = (long long)at + count;
	int added = 0;

	while (p < end) {
		int s = (int)(p % 64);
		long long w = end - p < 64 - s ? end - p : 64 - s;
		uint64_t m = low_mask(w) << s;
		added += __builtin_popcountll(m & ~reg[p / 64]);
		reg[p / 64] |= m;
		p += w;
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
		bar_push(c, down(c, u, j), BAR_EST, 0, NULL);
	return bar_complete(c);
}

/* S03/S13: is the register full, for this rank's part of the tree? */
static int check(bar_core *c)
{
	int v = rel_at(c, c->seq, c->rank);
	bar_run run;

	if (!c->entered || c->req_sent || c->have < span(c, v))
		return 0;
	if (v == 0)
		return establish(c);
	/* the register holds no more than the subtree: it is all of it */
	run = (bar_run){ (uint32_t)v, (uint32_t)span(c, v) };
	bar_push(c, up(c, v), BAR_REQ, 0, &run);
	c->req_sent = 1;
	return 0;
}

static int bm_enter(bar_core *c)
{
	c->have += or_run(c->bits, rel_at(c, c->seq, c->rank), 1);
	return check(c);
}

/* Why run cannot be a request of the child u, whose subtree is [u, u +
 * sp), or NULL.  A child requests only once its register holds all of
 * its subtree, so its run is that range exactly: a shorter one would
 * leave this rank waiting for ranks that have entered. */
static const char *bad_run(const bar_run *run, int u, int sp)
{
	uint32_t off;

	if (!run)
		return "a request without its run of ranks";
	if (!run->count)
		return "a request of an empty run";
	off = run->first - (uint32_t)u; /* wraps when first < u */
	if (run->first < (uint32_t)u || off >= (uint32_t)sp)
		return "a run starting outside its sender's subtree";
	if (run->count > (uint32_t)sp - off)
		return "a run past the end of its sender's subtree";
	if (off || run->count != (uint32_t)sp)
		return "a run short of its sender's whole subtree";
	return NULL;
}

/* A request of barrier seq in child slot j, into reg (that barrier's):
 * the new bits, or -1 when it is no request a child of this rank sends. */
static int take_req(bar_core *c, uint32_t seq, uint64_t *reg, int j, const bar_hdr *h,
		    const bar_run *run)
{
	int u = child(c, rel_at(c, seq, c->rank), j);
	const char *why;

	if (h->kind != BAR_REQ || j >= c->nslots / 2)
		return bar_refuse(c, c->slot_from[j], "a write of a kind its slot does not take");
	if (u < 0)
		return bar_refuse(c, c->slot_from[j], "a request from a rank that is not "
				  "a child of this one in that barrier's tree");
	if ((why = bad_run(run, u, span(c, u))))
		return bar_refuse(c, c->slot_from[j], why);
	return or_run(reg, u, span(c, u));
}

static int bm_arrive(bar_core *c, int j, const bar_hdr *h, const bar_run *run)
{
	int v = rel_at(c, c->seq, c->rank), add;

	if (h->kind == BAR_EST) {
		/* only ever sent, by the parent, to a rank that has requested */
		if (v != 0 && c->req_sent && j == c->nslots / 2 + edge_of(c, v))
			return establish(c);
		return bar_refuse(c, c->slot_from[j], "an establishment this rank did not wait for");
	}
	if ((add = take_req(c, c->seq, c->bits, j, h, run)) < 0)
		return -1;
	c->have += add;
	return check(c);
}

static int bm_early(bar_core *c, int j, const bar_hdr *h, const bar_run *run)
{
	int add = take_req(c, c->seq + 1, c->next, j, h, run);

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

/* Child slots first (requests, with their runs), then parent slots. */
static int bm_nslots(const bar_core *c)
{
	return 2 * nedges(c);
}

static void bm_slot(const bar_core *c, int j, int *from, int *run)
{
	int e_count = c->nslots / 2, up_slot = j >= e_count;
	long long e = edge_len(c, up_slot ? j - e_count : j);

	*from = (int)(((long long)c->rank + (up_slot ? c->n - e : e)) % c->n);
	*run = !up_slot;
}

/* a parent and a child over every edge */
static int bm_maxpeers(const bar_core *c)
{
	return 1 + nedges(c);
}

const struct bar_algo bar_bitmap_algo = { bm_nslots, bm_slot, bm_maxpeers, bm_enter,
					   bm_arrive, bm_early, bm_waits_on, bm_dependents };
