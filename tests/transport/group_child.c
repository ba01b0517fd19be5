/* SPDX-License-Identifier: MIT */
/*
 * One rank of a multi-process group test, started by oxr-run (or mpirun).
 * Prints one line `rank R: MODE ok ...` and exits 0 when every check held.
 *
 *   group_child pairs [K]   every ordered pair exchanges K random CMO objects
 *                           (one of them up to 16 MiB, or OXR_TEST_BIG_MAX
 *                           bytes); the receiver rebuilds
 *                           what the sender made from the same seed and
 *                           compares values, and checks the order of arrival
 *   group_child puts K [alloc]
 *                           every rank puts K blocks into every other rank's
 *                           window (alternately 64 bytes, which travel in the
 *                           stream, and 1000, which go by RDMA WRITE on verbs);
 *                           each target checks every note (who, value, where,
 *                           in order per sender) and every byte; the line
 *                           names the links' transport.  alloc: the window's
 *                           memory from oxr_win_alloc (on shm: stores into it)
 *   group_child putdie      rank 1 kills itself in the middle of a stream of
 *                           puts to rank 0, whose wait must end with an error
 *                           naming rank 1, not hang
 *   group_child flood N     rank 0 sends N small messages to rank 1, which
 *                           takes them slowly; both check their RSS stays bounded
 *   group_child die         rank 1 kills itself in the middle of sending a
 *                           64 MiB message; rank 0 must get an error, not hang
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "oxr/transport.h"
#include "cmo_random.h"
#include "shm/shm_ring.h"
#include "test_util.h"

static int rank = -1;

#include "child_check.h"

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The k-th object from src to dst: both sides can make it. */
static oxr_cmo *object(oxr_arena *a, int src, int dst, int k)
{
	uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 40 | (uint64_t)dst << 20 | (uint64_t)k);

	rnd_next(&s);
	if (k == 1) { /* the big one: up to 16 MiB (OXR_TEST_BIG_MAX: a slow network's cap) */
		const char *cap = getenv("OXR_TEST_BIG_MAX");
		size_t max = cap && atol(cap) > 0 ? (size_t)atol(cap) : 16u << 20;
		size_t n = (size_t)(rnd_next(&s) % max) + 1;
		char *b = malloc(n);
		oxr_cmo *o;

		fill_pattern(b, n, 31, (size_t)src);
		o = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, b, n);
		free(b);
		return o;
	}
	if (k == 2)
		return oxr_cmo_new_bytes(a, OXR_CMO_STRING, "", 0); /* 0 bytes of payload */
	return rnd_cmo(a, &s, 5);
}

static int pairs(oxr_group *g, int k)
{
	int n = oxr_group_size(g), p, i;
	oxr_arena *a;

	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	for (p = 0; p < n; p++) {
		if (p == rank)
			continue;
		for (i = 0; i < k; i++) {
			oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = object(a, rank, p, i) };
			CHECK(oxr_send(g, p, &m) == OXR_OK, "send %d to %d", i, p);
		}
		/* and a command and a sync ball, which carry no CMO */
		{
			oxr_ox_msg c = { .tag = OXR_OX_COMMAND, .sm = OXR_SM_popCMO };
			oxr_ox_msg s = { .tag = OXR_OX_SYNC_BALL };
			CHECK(oxr_send(g, p, &c) == OXR_OK && oxr_send(g, p, &s) == OXR_OK, "to %d", p);
		}
		oxr_arena_reset(a);
	}
	for (p = 0; p < n; p++) {
		oxr_rmsg *m;
		if (p == rank)
			continue;
		for (i = 0; i < k; i++) {
			oxr_cmo *want;
			CHECK(oxr_recv(g, p, 60000, &m) == OXR_OK, "recv %d from %d", i, p);
			want = object(a, p, rank, i);
			CHECK(m->msg.tag == OXR_OX_DATA && oxr_cmo_equal(m->msg.cmo, want),
			      "message %d from %d differs", i, p);
			oxr_rmsg_free(m);
			oxr_arena_reset(a);
		}
		CHECK(oxr_recv(g, p, 60000, &m) == OXR_OK && m->msg.tag == OXR_OX_COMMAND &&
		      m->msg.sm == OXR_SM_popCMO, "command from %d", p);
		oxr_rmsg_free(m);
		CHECK(oxr_recv(g, p, 60000, &m) == OXR_OK && m->msg.tag == OXR_OX_SYNC_BALL,
		      "sync ball from %d", p);
		oxr_rmsg_free(m);
	}
	oxr_arena_destroy(a);
	printf("rank %d: pairs ok (%d peers x %d objects)\n", rank, n - 1, k);
	return 0;
}

#define PUT_SLOT 1000

static uint8_t put_byte(int src, int i, size_t j)
{
	return (uint8_t)(src * 31 + i * 7 + (int)j * 13 + 1);
}

static int puts_all(oxr_group *g, int k, int alloc)
{
	int n = oxr_group_size(g), p, i, got;
	size_t len = (size_t)n * (size_t)k * PUT_SLOT, j;
	uint8_t *win = NULL, *seen = calloc((size_t)n * (size_t)k, 1), src[PUT_SLOT];
	int *last = malloc((size_t)n * sizeof(int));
	const char *tr = NULL;
	void *v = NULL;
	oxr_win *w;

	if (alloc && oxr_win_alloc(g, len, &v) == OXR_OK)
		win = v;
	else if (!alloc)
		win = calloc(1, len);
	for (p = 0; last && p < n; p++)
		last[p] = -1;
	CHECK(win && seen && last && oxr_win_create(g, 7, win, len, 60000, &w) == OXR_OK,
	      "window");
	for (i = 0; i < k; i++) {
		size_t plen = i % 2 ? 64 : PUT_SLOT;

		for (j = 0; j < plen; j++)
			src[j] = put_byte(rank, i, j);
		for (p = 0; p < n; p++)
			CHECK(p == rank || oxr_put(g, p, 7, (uint64_t)(rank * k + i) * PUT_SLOT, src,
						   plen, (uint32_t)(rank * 1000 + i)) == OXR_OK,
			      "put %d to rank %d", i, p);
	}
	for (got = 0; got < (n - 1) * k; got++) {
		oxr_win_note note;
		int s, idx;

		CHECK(oxr_win_wait(w, 60000, &note) == OXR_OK, "note %d of %d", got, (n - 1) * k);
		s = note.peer;
		idx = (int)(note.value % 1000);
		CHECK(s >= 0 && s < n && s != rank && (int)(note.value / 1000) == s && idx < k &&
			      note.offset == (uint64_t)(s * k + idx) * PUT_SLOT &&
			      note.len == (idx % 2 ? 64u : PUT_SLOT),
		      "note from %d: value %u, offset %llu, len %zu", s, note.value,
		      (unsigned long long)note.offset, note.len);
		CHECK(!seen[s * k + idx]++, "put %d from rank %d noted twice", idx, s);
		CHECK(idx > last[s], "put %d from rank %d noted after its put %d", idx, s, last[s]);
		last[s] = idx;
		for (j = 0; j < note.len; j++)
			CHECK(win[note.offset + j] == put_byte(s, idx, j),
			      "put %d from rank %d: byte %zu differs", idx, s, j);
	}
	for (p = 0; p < n; p++) {
		const char *t = p == rank ? NULL : oxr_link_transport(g, p);

		if (t)
			tr = !tr || !strcmp(tr, t) ? t : "mixed";
	}
	oxr_win_destroy(w);
	if (alloc)
		oxr_win_free(g, win, len);
	else
		free(win);
	free(seen);
	free(last);
	printf("rank %d: puts ok (%d peers x %d puts%s, links %s)\n", rank, n - 1, k,
	       alloc ? " into oxr_win_alloc memory" : "", tr ? tr : "none");
	return 0;
}

/* Rank 1 dies while it puts into rank 0's window (stores, on shm). */
static int put_die(oxr_group *g)
{
	const size_t len = 1u << 20;
	void *v = NULL;
	oxr_win *w;
	int i;

	CHECK(oxr_group_size(g) == 2, "putdie needs 2 ranks");
	CHECK(oxr_win_alloc(g, len, &v) == OXR_OK && oxr_win_create(g, 8, v, len, 60000, &w) == OXR_OK,
	      "window");
	if (rank == 1) {
		static uint8_t src[65536];
		for (i = 0; i < 1000; i++)
			CHECK(oxr_put(g, 0, 8, (uint64_t)(i % 16) * sizeof(src), src, sizeof(src),
				      (uint32_t)i) == OXR_OK, "put %d", i);
		raise(SIGKILL); /* puts and notes in flight, as kill -9 would */
	} else {
		const char *tr = oxr_link_transport(g, 1);
		oxr_win_note note;
		oxr_status_t st;
		long notes = 0;
		while ((st = oxr_win_wait(w, 30000, &note)) == OXR_OK)
			notes++;
		CHECK(st == OXR_ERR_PEER || st == OXR_ERR_REVOKED, "expected the peer's failure, got %d: %s",
		      st, oxr_errmsg());
		CHECK(strstr(oxr_errmsg(), "rank 1"), "error names rank 1: %s", oxr_errmsg());
		printf("rank 0: putdie ok: %ld notes, then \"%s\" (link %s)\n", notes, oxr_errmsg(),
		       tr ? tr : "none");
	}
	return 0;
}

static int flood(oxr_group *g, long count)
{
	long i, peak = 0, start = rss_kib();
	oxr_arena *a;

	CHECK(oxr_group_size(g) >= 2, "flood needs 2 ranks");
	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	for (i = 0; i < count && rank <= 1; i++) {
		if (rank == 0) {
			oxr_cmo *o = oxr_cmo_new_list(a, 2);
			oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = o };
			o->kids[0] = oxr_cmo_new_int32(a, (int32_t)i);
			o->kids[1] = oxr_cmo_new_bytes(a, OXR_CMO_STRING, "0123456789abcdef0123456789abcdef", 32);
			CHECK(oxr_send(g, 1, &m) == OXR_OK, "send %ld", i);
			if (i % 1000 == 999)
				oxr_arena_reset(a);
		} else {
			oxr_rmsg *m;
			CHECK(oxr_recv(g, 0, 60000, &m) == OXR_OK, "recv %ld", i);
			CHECK(m->msg.cmo->kids[0]->v.i32 == (int32_t)i, "message %ld out of order", i);
			oxr_rmsg_free(m);
			if (i % 2000 == 0)
				usleep(2000); /* a slow receiver: the sender must be pushed back */
		}
		if (i % 5000 == 0 && rss_kib() > peak)
			peak = rss_kib();
	}
	oxr_arena_destroy(a);
	/* the bound: the receive queue limit (OXR_RECV_QUEUE_BYTES) plus slack */
	CHECK(peak - start < 96 * 1024, "RSS grew by %ld KiB", peak - start);
	printf("rank %d: flood ok (%ld messages, RSS grew %ld KiB)\n", rank, count, peak - start);
	return 0;
}

/* Every rank sends count messages to rank 0, which reads them sender after
 * sender: the others' messages wait meanwhile (on shm-fifo, in the shared
 * FIFO, then copied out of it, then pushed back), and every message comes
 * exactly once, in order per sender, within bounded memory. */
static int fan_in(oxr_group *g, long count)
{
	static uint8_t pay[3000];
	long i, start = rss_kib(), peak = start;
	int s, n = oxr_group_size(g);
	oxr_arena *a;

	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	memset(pay, 'a' + rank % 26, sizeof(pay));
	for (i = 0; i < count && rank > 0; i++) {
		oxr_cmo *o = oxr_cmo_new_list(a, 3);
		oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = o };
		o->kids[0] = oxr_cmo_new_int32(a, (int32_t)i);
		o->kids[1] = oxr_cmo_new_int32(a, rank);
		o->kids[2] = oxr_cmo_new_bytes(a, OXR_CMO_STRING, (const char *)pay,
					       (size_t)(i * 37 % (long)sizeof(pay)));
		CHECK(oxr_send(g, 0, &m) == OXR_OK, "send %ld", i);
		if (i % 100 == 99)
			oxr_arena_reset(a);
	}
	for (s = 1; s < n && rank == 0; s++) {
		for (i = 0; i < count; i++) {
			oxr_rmsg *m;
			const oxr_cmo *o;
			CHECK(oxr_recv(g, s, 60000, &m) == OXR_OK, "recv %ld from %d", i, s);
			o = m->msg.cmo;
			CHECK(o->kids[0]->v.i32 == (int32_t)i && o->kids[1]->v.i32 == s,
			      "from %d: message %d of rank %d where %ld was due", s, o->kids[0]->v.i32,
			      o->kids[1]->v.i32, i);
			CHECK(o->kids[2]->len == (uint64_t)(i * 37 % (long)sizeof(pay)) &&
			      (!o->kids[2]->len || o->kids[2]->data[0] == 'a' + s % 26),
			      "from %d: message %ld's bytes", s, i);
			oxr_rmsg_free(m);
			if (i % 500 == 0 && rss_kib() > peak)
				peak = rss_kib();
		}
	}
	oxr_arena_destroy(a);
	CHECK(peak - start < 96 * 1024, "RSS grew by %ld KiB", peak - start);
	printf("rank %d: fanin ok (%ld messages from each of %d ranks, RSS grew %ld KiB)\n", rank,
	       count, n - 1, peak - start);
	return 0;
}

static int die_mode(oxr_group *g)
{
	CHECK(oxr_group_size(g) == 2, "die needs 2 ranks");
	if (rank == 1) {
		oxr_arena *a;
		size_t n = 64u << 20;
		char *b = calloc(1, n);
		oxr_ox_msg m = { .tag = OXR_OX_DATA };
		oxr_req *r;
		int i, done;
		CHECK(b && oxr_arena_create(&a) == OXR_OK, "alloc");
		/* the link open first (on demand it opens now): the kill comes mid-message,
		 * not mid-handshake */
		m.cmo = oxr_cmo_new_int32(a, 1);
		CHECK(oxr_send(g, 0, &m) == OXR_OK, "first send");
		m.cmo = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, b, n);
		CHECK(oxr_isend(g, 0, &m, &r) == OXR_OK, "isend");
		for (i = 0; i < 50; i++)
			oxr_req_test(r, &done);
		raise(SIGKILL); /* in the middle of the message, as kill -9 would */
	} else {
		oxr_rmsg *m = NULL;
		oxr_status_t st = oxr_recv(g, 1, 30000, &m);
		CHECK(st == OXR_OK, "first message: %s", oxr_errmsg());
		oxr_rmsg_free(m);
		m = NULL;
		st = oxr_recv(g, 1, 30000, &m);
		CHECK(st == OXR_ERR_PEER, "expected a peer error, got %d", st);
		CHECK(strstr(oxr_errmsg(), "rank 1"), "error names rank 1");
		printf("rank 0: die ok: survivor got \"%s\"\n", oxr_errmsg());
	}
	return 0;
}

/* The shm provider's memory.  A rank owns a ring (OXR_SHM_RING_BYTES plus a
 * header page) for each of its first OXR_SHM_RINGS shm links and one
 * receive FIFO for the rest; it maps, for each link, the peer's ring or the
 * peer's FIFO it writes into, and nothing more. */
static int shm_memory(oxr_group *g)
{
	const char *rb = getenv("OXR_SHM_RING_BYTES"), *rg = getenv("OXR_SHM_RINGS");
	long page = sysconf(_SC_PAGESIZE), ring = rb ? atol(rb) : 262144, links = 0, maps = 0;
	long bytes = 0, each = (ring + (long)sizeof(struct oxr_shm_ring) + page - 1) / page * page;
	long rings = rg ? atol(rg) : 16, own, fmaps = 0, fbytes = 0, fifo = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int p;

	CHECK(f, "/proc/self/maps");
	for (p = 0; p < oxr_group_size(g); p++)
		links += p != rank && !strcmp(oxr_link_transport(g, p), "shm");
	own = links < rings ? links : rings;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int r = strstr(line, "memfd:oxr-shm-ring") != NULL;
		if ((!r && !strstr(line, "memfd:oxr-shm-fifo")) ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (r) {
			maps++;
			bytes += (long)(hi - lo);
			continue;
		}
		CHECK(!fifo || fifo == (long)(hi - lo), "FIFOs of %ld and %lu bytes", fifo, hi - lo);
		fifo = (long)(hi - lo);
		fmaps++;
		fbytes += fifo;
	}
	fclose(f);
	CHECK(links == oxr_group_size(g) - 1, "%ld of %d links on shm", links,
	      oxr_group_size(g) - 1);
	/* its own rings and FIFO, and one of the peer's per link */
	CHECK(maps >= own && bytes == maps * each && maps + fmaps == own + (links > own) + links,
	      "%ld ring maps of %ld KiB, %ld FIFO maps for %ld shm links, %ld rings of its own",
	      maps, bytes >> 10, fmaps, links, own);
	if (!fmaps)
		printf("rank %d: shmmem ok (%ld shm links, %ld ring maps, %ld KiB = 2 x %ld x %ld "
		       "KiB)\n", rank, links, maps, bytes >> 10, links, each >> 10);
	else
		printf("rank %d: shmmem ok (%ld shm links: %ld rings of its own and a FIFO, %ld KiB "
		       "of its own; %ld KiB of peers' mapped)\n", rank, links, own,
		       (own * each + fifo) >> 10, (bytes + fbytes - own * each - fifo) >> 10);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "pairs";
	struct child_rank me;
	oxr_group *g;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	child_join(&me);
	g = me.g;
	if (!strcmp(mode, "pairs"))
		rc = pairs(g, argc > 2 ? atoi(argv[2]) : 4);
	else if (!strcmp(mode, "puts"))
		rc = puts_all(g, argc > 2 ? atoi(argv[2]) : 4, argc > 3 && !strcmp(argv[3], "alloc"));
	else if (!strcmp(mode, "flood"))
		rc = flood(g, argc > 2 ? atol(argv[2]) : 100000);
	else if (!strcmp(mode, "fanin"))
		rc = fan_in(g, argc > 2 ? atol(argv[2]) : 2000);
	else if (!strcmp(mode, "die"))
		rc = die_mode(g);
	else if (!strcmp(mode, "putdie"))
		rc = put_die(g);
	else if (!strcmp(mode, "shmmem"))
		rc = shm_memory(g);
	else
		CHECK(0, "unknown mode %s", mode);
	CHECK(strcmp(mode, "die") == 0 || strcmp(mode, "putdie") == 0 || oxr_boot_barrier(me.boot) == OXR_OK, "final barrier");
	child_leave(&me);
	return rc;
}
