/* SPDX-License-Identifier: MIT */
/*
 * One rank of the scale test (tests/transport/test_scale.c), started by
 * oxr-run with any number of ranks (256 in CI).  Public API only.
 *
 *   scale_child scale collectives
 *       a barrier, a bcast of 4000 bytes from rank 0 (every byte checked), a
 *       reduce of the ranks' sum to rank 0, a crystal router exchange (each
 *       rank sends a record to rank+1, 7*rank mod P and P-1-rank; each checks
 *       how many it got, from whom and what), a ring exchange (to rank+1,
 *       from rank-1), then oxr_group_stats: a rank's open links must stay
 *       within LINK_BOUND(P) = 2 ceil(log2 P) + 4 when links open on first
 *       use, as this rank's partners are ranks 2^i apart (the dissemination
 *       barrier, the binomial bcast and reduce, the crystal router's stages
 *       at a power of 2) and the ring's neighbours, whatever P.  Under
 *       OXR_LINKS=eager every link opens at boot and the bound is not
 *       checked (the line says so).  A final barrier; then the default
 *       barrier (bitmap above 2 ranks), 2 ceil(log2 P) + 1 times: the
 *       barriers after its first must open no link (on demand its tree keeps
 *       its root; rooted at rank s mod P each barrier would bring new
 *       partners).  Then
 *       `rank R: scale collectives ok (links_open L <= bound B; fds F, ...)`,
 *       or `rank R: scale collectives FAILED: links_open L > bound B ...` and
 *       exit 1 (every rank still reaches the final barrier and says its
 *       figures, so one run shows them all).
 *   scale_child scale kill
 *       (run under oxr-run --survive) a barrier, the bootstrap's barrier,
 *       then rank P/2 kills itself (SIGKILL) and every other rank enters a
 *       second barrier, which must fail with OXR_ERR_PEER or OXR_ERR_REVOKED
 *       (never OXR_ERR_TIMEOUT: its bound is KILL_TMO_MS) with a message
 *       naming rank P/2 or saying the group was revoked:
 *       `rank R: scale kill ok (CODE after T ms): MESSAGE`.
 *
 * The barriers are the dissemination barrier on purpose: its partners are
 * the same in every barrier (rank +- 2^k), so the links the first barrier
 * opened are the ones the second waits on (a dead partner's link breaks,
 * on-demand links or not), and its partners fit LINK_BOUND.  The bitmap
 * barrier (the default above 2 ranks) roots barrier s at rank s mod P and,
 * at radix 16, has its root talk to up to 2 x 15 ranks at 256: outside the
 * bound.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "test_util.h"

static int rank = -1;
static long long boot_ms; /* oxr_boot_open to oxr_group_boot's return */

#include "child_check.h"

#define TMO_MS 120000     /* one collective at 256 ranks on 2 cores */
#define KILL_TMO_MS 60000 /* a survivor's barrier must fail before this */
#define BCAST_BYTES 4000
#define NDEST 3 /* crystal records a rank sends */
#define REC_PAY 40

static int ceil_log2(int n)
{
	int k = 0;

	while ((1 << k) < n)
		k++;
	return k;
}

/* The bound on a rank's open links under on-demand links: see the top. */
static int link_bound(int n)
{
	return 2 * ceil_log2(n) + 4;
}

static int crystal_dest(int src, int k, int n)
{
	return k == 0 ? (src + 1) % n : k == 1 ? (int)((7L * src) % n) : n - 1 - src;
}

/* A crystal record: who, to whom, which, then bytes all three decide. */
struct rec {
	int32_t src, dst, k, n;
	uint8_t pay[REC_PAY];
};

static void make_rec(struct rec *r, int src, int k, int n)
{
	memset(r, 0, sizeof(*r));
	r->src = src;
	r->dst = crystal_dest(src, k, n);
	r->k = k;
	r->n = n;
	fill_pattern(r->pay, sizeof(r->pay), 7 + (size_t)k, (size_t)src);
}

static void bcast_check(oxr_group *g, oxr_arena *a, int n)
{
	static uint8_t buf[BCAST_BYTES];
	oxr_cmo *o = NULL;

	fill_pattern(buf, sizeof(buf), 13, 5);
	if (rank == 0)
		CHECK((o = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, buf, sizeof(buf))), "bcast object");
	CHECK(oxr_bcast(g, 0, &o, a, TMO_MS) == OXR_OK, "bcast from rank 0 to %d ranks", n);
	CHECK(o && o->tag == OXR_CMO_DATUM && o->len == sizeof(buf) &&
		      !memcmp(o->data, buf, sizeof(buf)),
	      "bcast: got tag %d, %zu bytes, not the %d bytes rank 0 sent", o ? o->tag : -1,
	      o ? o->len : 0, BCAST_BYTES);
}

static void reduce_check(oxr_group *g, oxr_arena *a, int n)
{
	oxr_cmo *out = NULL;
	int32_t want = (int32_t)((long)n * (n - 1) / 2);

	CHECK(oxr_reduce(g, 0, "+", oxr_cmo_new_int32(a, rank), &out, a, TMO_MS) == OXR_OK,
	      "reduce to rank 0");
	if (rank == 0)
		CHECK(out && out->tag == OXR_CMO_INT32 && out->v.i32 == want,
		      "reduce: rank 0 got tag %d value %d, want int32 %d", out ? out->tag : -1,
		      out ? out->v.i32 : 0, want);
	else
		CHECK(out && out->tag == OXR_CMO_NULL, "reduce: a non-root got tag %d",
		      out ? out->tag : -1);
}

/* Returns the records received. */
static int crystal_check(oxr_crystal *cr, int n)
{
	unsigned char *seen = calloc((size_t)n * NDEST, 1);
	int *last = malloc((size_t)n * sizeof(int));
	int s, k, want = 0, got = 0;
	oxr_crystal_rec rec;

	CHECK(seen && last, "memory");
	for (k = 0; k < NDEST; k++) {
		struct rec r;
		make_rec(&r, rank, k, n);
		CHECK(oxr_crystal_pack(cr, r.dst, &r, sizeof(r)) == OXR_OK, "crystal pack to %d", r.dst);
	}
	CHECK(oxr_crystal_transfer(cr, TMO_MS) == OXR_OK, "crystal transfer");
	for (s = 0; s < n; s++) {
		last[s] = -1;
		for (k = 0; k < NDEST; k++)
			want += crystal_dest(s, k, n) == rank;
	}
	while (oxr_crystal_next(cr, &rec) == OXR_OK) {
		struct rec r, mine;
		CHECK(rec.len == sizeof(r), "crystal: a record of %llu bytes from rank %d",
		      (unsigned long long)rec.len, rec.source);
		memcpy(&r, rec.data, sizeof(r));
		CHECK(rec.source >= 0 && rec.source < n && r.src == rec.source && r.k >= 0 &&
			      r.k < NDEST && r.n == n && r.dst == rank,
		      "crystal: record from rank %d says src %d dst %d k %d n %d", rec.source,
		      r.src, r.dst, r.k, r.n);
		make_rec(&mine, r.src, r.k, n);
		CHECK(mine.dst == rank && !memcmp(&mine, &r, sizeof(r)),
		      "crystal: record %d from rank %d differs", r.k, r.src);
		CHECK(!seen[r.src * NDEST + r.k]++, "crystal: record %d from rank %d twice", r.k,
		      r.src);
		CHECK(r.k > last[r.src], "crystal: record %d from rank %d after its record %d", r.k,
		      r.src, last[r.src]);
		last[r.src] = r.k;
		got++;
	}
	CHECK(got == want, "crystal: %d records received, %d were sent to this rank", got, want);
	free(seen);
	free(last);
	return got;
}

static void ring_check(oxr_group *g, oxr_arena *a, int n)
{
	int next = (rank + 1) % n, prev = (rank + n - 1) % n;
	uint8_t pay[64], want[64];
	oxr_cmo *o = oxr_cmo_new_list(a, 2);
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = o };
	oxr_rmsg *in = NULL;
	const oxr_cmo *c;

	fill_pattern(pay, sizeof(pay), 3, (size_t)rank);
	fill_pattern(want, sizeof(want), 3, (size_t)prev);
	CHECK(o, "ring message");
	o->kids[0] = oxr_cmo_new_int32(a, rank);
	o->kids[1] = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, pay, sizeof(pay));
	CHECK(oxr_send(g, next, &m) == OXR_OK, "ring: send to rank %d", next);
	CHECK(oxr_recv(g, prev, TMO_MS, &in) == OXR_OK, "ring: receive from rank %d", prev);
	c = in->msg.cmo;
	CHECK(in->msg.tag == OXR_OX_DATA && c && c->tag == OXR_CMO_LIST && c->nkids == 2 &&
		      c->kids[0]->tag == OXR_CMO_INT32 && c->kids[0]->v.i32 == prev &&
		      c->kids[1]->len == sizeof(want) && !memcmp(c->kids[1]->data, want, sizeof(want)),
	      "ring: the message from rank %d differs", prev);
	oxr_rmsg_free(in);
}

/* The handshakes (links opened, by either end) of the default barrier
 * after its first barrier: links also close meanwhile, as ranks done with
 * their last barrier leave. */
static int default_barriers(oxr_group *g, int n)
{
	oxr_group_counters c1, c2;
	oxr_barrier_t *b;
	int i;

	CHECK(oxr_barrier_create(g, OXR_BARRIER_DEFAULT, &b) == OXR_OK, "default barrier create");
	CHECK(oxr_barrier(b, TMO_MS) == OXR_OK, "default barrier");
	CHECK(oxr_group_stats(g, &c1) == OXR_OK, "group stats");
	for (i = 0; i < 2 * ceil_log2(n); i++)
		CHECK(oxr_barrier(b, TMO_MS) == OXR_OK, "default barrier again");
	CHECK(oxr_group_stats(g, &c2) == OXR_OK, "group stats");
	oxr_barrier_destroy(b);
	return (int)(c2.handshakes - c1.handshakes);
}

static int collectives(struct child_rank *me)
{
	oxr_group *g = me->g;
	int n = oxr_group_size(g), bound = link_bound(n), got, over, more, rings;
	const char *links = getenv("OXR_LINKS");
	int eager = links && !strcmp(links, "eager");
	oxr_group_counters gc;
	oxr_barrier_t *b;
	oxr_crystal *cr;
	oxr_arena *a;
	long long t0 = now_us(), ms;

	CHECK(n >= 2, "scale collectives needs 2 ranks or more");
	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	CHECK(oxr_barrier_create(g, OXR_BARRIER_DISSEMINATION, &b) == OXR_OK, "barrier create");
	CHECK(oxr_crystal_create(g, &cr) == OXR_OK, "crystal create");
	CHECK(oxr_barrier(b, TMO_MS) == OXR_OK, "first barrier");
	bcast_check(g, a, n);
	oxr_arena_reset(a);
	reduce_check(g, a, n);
	oxr_arena_reset(a);
	got = crystal_check(cr, n);
	ring_check(g, a, n);
	oxr_arena_reset(a);

	CHECK(oxr_group_stats(g, &gc) == OXR_OK, "group stats");
	CHECK(gc.links_open >= 1, "stats: no link open after a ring exchange");
	over = !eager && gc.links_open > (uint32_t)bound;
	/* verbs: at most OXR_VERBS_RINGS links receive through rings of their
	 * own, the others through the group's shared receive queue */
	rings = getenv("OXR_VERBS_RINGS") ? atoi(getenv("OXR_VERBS_RINGS")) : 2;
	CHECK(gc.links_shared_rx <= gc.links_open, "stats: more shared-pool links than links");
	if (gc.links_verbs && gc.links_verbs - gc.links_shared_rx > (uint32_t)rings) {
		printf("rank %d: scale collectives FAILED: %u verbs links receive through rings of "
		       "their own, OXR_VERBS_RINGS is %d (%u through the shared receive queue)\n",
		       rank, gc.links_verbs - gc.links_shared_rx, rings, gc.links_shared_rx);
		return 1;
	}

	/* every rank gets here and says its figures, over the bound or not */
	CHECK(oxr_barrier(b, TMO_MS) == OXR_OK, "final barrier");
	more = default_barriers(g, n);
	ms = (now_us() - t0) / 1000;
	oxr_crystal_destroy(cr);
	oxr_barrier_destroy(b);
	oxr_arena_destroy(a);
	if (more) {
		printf("rank %d: scale collectives FAILED: the default barrier opened %d more links "
		       "after its first (handshakes; links_open %u before it)\n", rank, more, gc.links_open);
		return 1;
	}
	if (over) {
		printf("rank %d: scale collectives FAILED: links_open %u > bound %d = 2 ceil(log2 %d) "
		       "+ 4 (fds %u, handshakes %llu; boot %lld ms, collectives %lld ms)\n", rank,
		       gc.links_open, bound, n, gc.fds, (unsigned long long)gc.handshakes, boot_ms, ms);
		return 1;
	}
	if (eager)
		printf("rank %d: scale collectives ok (links_open %u, bound %d skipped: OXR_LINKS=eager; "
		       "fds %u, handshakes %llu; %d crystal records; boot %lld ms, collectives %lld ms)\n",
		       rank, gc.links_open, bound, gc.fds, (unsigned long long)gc.handshakes, got,
		       boot_ms, ms);
	else
		printf("rank %d: scale collectives ok (links_open %u <= bound %d; fds %u, handshakes "
		       "%llu; %d crystal records; boot %lld ms, collectives %lld ms; verbs %u, of them "
		       "%u on the shared receive queue, %llu KiB pinned)\n", rank, gc.links_open, bound,
		       gc.fds, (unsigned long long)gc.handshakes, got, boot_ms, ms, gc.links_verbs,
		       gc.links_shared_rx, (unsigned long long)(gc.pinned_bytes >> 10));
	return 0;
}

/* 1 if msg names rank v ("rank V" not followed by a digit). */
static int names_rank(const char *msg, int v)
{
	const char *at = msg;

	while ((at = strstr(at, "rank "))) {
		char *end;
		long r = strtol(at + 5, &end, 10);
		if (end != at + 5 && r == v)
			return 1;
		at += 5;
	}
	return 0;
}

static int kill_mode(struct child_rank *me)
{
	oxr_group *g = me->g;
	int n = oxr_group_size(g), victim = n / 2;
	oxr_barrier_t *b;
	oxr_status_t st;
	long long t0;
	const char *msg;

	CHECK(n >= 2, "scale kill needs 2 ranks or more");
	CHECK(oxr_barrier_create(g, OXR_BARRIER_DISSEMINATION, &b) == OXR_OK, "barrier create");
	CHECK(oxr_barrier(b, TMO_MS) == OXR_OK, "first barrier");
	/* every rank is past the first barrier before anyone dies */
	CHECK(oxr_boot_barrier(me->boot) == OXR_OK, "bootstrap barrier");
	if (rank == victim) {
		fflush(stdout);
		raise(SIGKILL);
	}
	t0 = now_us();
	st = oxr_barrier(b, KILL_TMO_MS);
	msg = oxr_errmsg();
	CHECK(st == OXR_ERR_PEER || st == OXR_ERR_REVOKED,
	      "the barrier after rank %d died returned %d (%s) after %lld ms, not a peer's "
	      "failure or a revoke", victim, st, oxr_strerror(st), (now_us() - t0) / 1000);
	CHECK(names_rank(msg, victim) || strstr(msg, "revoked"),
	      "the error names neither rank %d nor a revoke", victim);
	printf("rank %d: scale kill ok (%s after %lld ms): %s\n", rank,
	       st == OXR_ERR_PEER ? "OXR_ERR_PEER" : "OXR_ERR_REVOKED", (now_us() - t0) / 1000, msg);
	oxr_barrier_destroy(b);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 && !strcmp(argv[1], "scale") ? argv[2] : "";
	struct child_rank me;
	long long t0 = now_us();
	int rc = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	child_join(&me);
	boot_ms = (now_us() - t0) / 1000;
	if (!strcmp(mode, "collectives"))
		rc = collectives(&me);
	else if (!strcmp(mode, "kill"))
		rc = kill_mode(&me);
	else
		CHECK(0, "usage: scale_child scale collectives|kill");
	child_leave(&me);
	return rc;
}
