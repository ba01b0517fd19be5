/* SPDX-License-Identifier: MIT */
/*
 * One rank of the crystal router tests, started by oxr-run.  Prints
 * `rank R: MODE ok ...` and exits 0 when every check held.
 *
 *   crystal_child patterns SEED [ROUNDS [JITTER_US]]
 *                                transfers of random all-to-some patterns, empty
 *                                ranks, one rank sending to all, 0-byte records,
 *                                records to self; every rank rebuilds what every
 *                                source packed and checks it got exactly its
 *                                records, each once, in packing order per source;
 *                                a quarter of the transfers start up to
 *                                JITTER_US late on each rank
 *   crystal_child two SEED [ROUNDS [JITTER_US]]
 *                                the same with two routers and a barrier alive
 *                                at once, a different pattern in each router,
 *                                the two transfers of a round in alternating order
 *   crystal_child serial SEED [ROUTERS [JITTER_US]]
 *                                the same, each transfer by a router of its own,
 *                                made after the last one was destroyed
 *   crystal_child big            a 64 MiB record from rank 0 to rank P-1, twice
 *   crystal_child baddest        packing for a rank outside [0, P) is refused
 *   crystal_child evil WHAT      P = 2: rank 1 plays a peer that puts a malformed
 *                                stage (WHAT: dest, len, stray, magic, region)
 *                                into rank 0's window; rank 0 must get an error
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/barrier.h"
#include "oxr/crystal.h"
#include "oxr/transport.h"
#include "coll_win.h"
#include "crystal_wire.h"
#include "test_util.h"

static int rank = -1, size;
static oxr_boot *boot;
static oxr_group *grp;

#include "child_check.h"

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One record of a pattern: what both its source and its destination know. */
struct rec {
	int dest;
	uint32_t seq;
	uint64_t len;
};

enum { PAT_RANDOM, PAT_EMPTY_RANKS, PAT_ONE_SENDER, PAT_ZERO_BYTES, PAT_SELF, NPAT };

/* The records source `src` packs in round `round` (at most cap). */
static int records_of(uint64_t seed, int round, int src, struct rec *r, int cap)
{
	uint64_t s = seed ^ (uint64_t)round << 32 ^ (uint64_t)src * 0x100000001b3ull;
	int pat = round % NPAT, n = 0, ndest, i, d;

	mix(&s);
	if ((pat == PAT_EMPTY_RANKS && src % 3 == 1) || (pat == PAT_ONE_SENDER && src != round % size))
		return 0;
	ndest = pat == PAT_ONE_SENDER ? size : (int)(mix(&s) % (uint64_t)(size < 4 ? size + 1 : 5));
	for (i = 0; i < ndest; i++) {
		int dest = pat == PAT_ONE_SENDER ? i : pat == PAT_SELF ? src : (int)(mix(&s) % (uint64_t)size);
		int k = (int)(mix(&s) % 5);
		for (d = 0; d < k && n < cap; d++, n++) {
			uint64_t len = mix(&s) % 400;
			if (mix(&s) % 16 == 0)
				len = mix(&s) % 30000;
			if (pat == PAT_ZERO_BYTES || mix(&s) % 8 == 0)
				len = 0;
			r[n] = (struct rec){ .dest = dest, .seq = (uint32_t)n, .len = len };
		}
	}
	return n;
}

/* Payload of a record: [src, seq, len, checksum of the rest] when it has
 * room, bytes that depend on (src, seq, i) everywhere else. */
static void fill(uint8_t *p, int src, const struct rec *r)
{
	uint64_t i;
	uint32_t h[4];

	for (i = 0; i < r->len; i++)
		p[i] = (uint8_t)((uint64_t)src * 131 + r->seq * 31 + i * 7 + (i >> 8));
	if (r->len >= 16) {
		h[0] = (uint32_t)src;
		h[1] = r->seq;
		h[2] = (uint32_t)r->len;
		h[3] = (uint32_t)fnv1a64(FNV1A64_INIT, p + 16, r->len - 16);
		memcpy(p, h, 16);
	}
}

#define CAP 256

/* Packs this rank's records of round `round` of pattern `seed` into cr;
 * returns how many. */
static int pack_round(oxr_crystal *cr, uint64_t seed, int round, uint8_t *want)
{
	static struct rec recs[CAP];
	int n = records_of(seed, round, rank, recs, CAP), i;

	for (i = 0; i < n; i++) {
		fill(want, rank, &recs[i]);
		CHECK(oxr_crystal_pack(cr, recs[i].dest, want, recs[i].len) == OXR_OK, "pack");
	}
	return n;
}

/* Checks what cr's last transfer delivered for round `round` of pattern
 * `seed` (this rank packed n records of it): exactly this rank's records,
 * each once, in packing order per source, and the transfer's stats.
 * Returns the records received. */
static uint64_t check_round(oxr_crystal *cr, uint64_t seed, int round, int n, int stages,
			    uint8_t *want)
{
	static struct rec recs[CAP];
	int src, i, *next_seq = calloc((size_t)size, sizeof(int));
	uint8_t *got_seen = calloc((size_t)size, CAP);
	oxr_crystal_rec got;
	oxr_crystal_stats st;
	uint64_t expected = 0, received = 0;

	/* the k-th record from src must be src's k-th record for this rank */
	CHECK(next_seq && got_seen, "memory");
	while (oxr_crystal_next(cr, &got) == OXR_OK) {
		struct rec mine[CAP];
		int m, k;
		CHECK(got.source >= 0 && got.source < size, "source %d", got.source);
		CHECK(((uintptr_t)got.data & 7) == 0, "payload not 8-byte aligned");
		m = records_of(seed, round, got.source, mine, CAP);
		for (k = next_seq[got.source]; k < m && mine[k].dest != rank; k++)
			;
		CHECK(k < m, "round %d: an extra record from %d", round, got.source);
		CHECK(!got_seen[got.source * CAP + k]++, "record %d of %d twice", k, got.source);
		next_seq[got.source] = k + 1;
		CHECK(got.len == mine[k].len, "round %d: record %u from %d has %llu bytes, want %llu",
		      round, mine[k].seq, got.source, (unsigned long long)got.len,
		      (unsigned long long)mine[k].len);
		fill(want, got.source, &mine[k]);
		CHECK(!memcmp(got.data, want, got.len), "round %d: record %u from %d differs",
		      round, mine[k].seq, got.source);
		if (got.len >= 16) {
			uint32_t h[4];
			memcpy(h, got.data, 16);
			CHECK(h[0] == (uint32_t)got.source && h[1] == mine[k].seq &&
			      h[3] == (uint32_t)fnv1a64(FNV1A64_INIT, (const uint8_t *)got.data + 16,
							got.len - 16),
			      "checksum");
		}
		received++;
	}
	for (src = 0; src < size; src++) {
		int m = records_of(seed, round, src, recs, CAP);
		for (i = 0; i < m; i++)
			expected += recs[i].dest == rank;
	}
	CHECK(received == expected, "round %d: %llu records, want %llu", round,
	      (unsigned long long)received, (unsigned long long)expected);
	CHECK(oxr_crystal_get_stats(cr, &st) == OXR_OK, "stats");
	/* ceil(log2 P) stages at most; the smaller half of an odd range is done sooner */
	CHECK(st.stages <= stages && (1 << st.stages) * 2 > size && st.puts == (uint64_t)st.stages &&
	      st.records_received == expected && st.records_packed == (uint64_t)n,
	      "round %d stats: %d stages, %llu puts, %llu received, %llu packed", round,
	      st.stages, (unsigned long long)st.puts, (unsigned long long)st.records_received,
	      (unsigned long long)st.records_packed);
	free(next_seq);
	free(got_seen);
	return received;
}

static int log2_ceil(int n)
{
	int k = 0;

	while ((1 << k) < n)
		k++;
	return k;
}

static int patterns(oxr_crystal *cr, uint64_t seed, int rounds, int jitter_us)
{
	uint8_t *want = malloc(30000);
	int round, stages = log2_ceil(size), my_stages = 0;
	uint64_t total = 0, puts = 0, msgs = 0, js = seed ^ (uint64_t)rank << 48;
	const char *tr = size > 1 ? NULL : "-";

	CHECK(want != NULL, "memory");
	for (round = 0; round < rounds; round++) {
		int n = pack_round(cr, seed, round, want);
		oxr_crystal_stats st;

		/* skew: some ranks run a transfer or more ahead of others */
		if (jitter_us && mix(&js) % 4 == 0)
			usleep((useconds_t)(mix(&js) % (uint64_t)jitter_us));
		CHECK(oxr_crystal_transfer(cr, 120000) == OXR_OK, "transfer round %d", round);
		if (!tr)
			tr = child_transport(grp);
		total += check_round(cr, seed, round, n, stages, want);
		CHECK(oxr_crystal_get_stats(cr, &st) == OXR_OK, "stats");
		puts += st.puts;
		msgs += st.msgs;
		my_stages = st.stages;
	}
	{
		oxr_crystal_stats st;
		oxr_crystal_get_stats(cr, &st);
		printf("rank %d: patterns ok over %s (%d transfers, %llu records, %d stages, %llu puts, "
		       "%llu msgs, region %llu, %llu grows, %llu early)\n", rank,
		       tr ? tr : "?", rounds,
		       (unsigned long long)total, my_stages, (unsigned long long)puts,
		       (unsigned long long)msgs, (unsigned long long)st.region_bytes,
		       (unsigned long long)st.grows, (unsigned long long)st.early);
	}
	free(want);
	return 0;
}

/* Two routers and a barrier alive at once on one group: each router lands
 * in windows of its own, so a rank that runs ahead into one router's
 * transfer while a peer is still in the other's, or in the barrier, puts
 * where that router (and only it) will read.  Every round packs a
 * different pattern into each, transfers them in alternating order and
 * checks both. */
static int two(oxr_crystal *cr, uint64_t seed, int rounds, int jitter_us)
{
	uint8_t *want = malloc(30000);
	oxr_crystal *cr2;
	oxr_barrier_t *b;
	oxr_crystal *r[2];
	oxr_crystal_stats st[2];
	uint64_t seeds[2] = { seed, seed + 0x5bd1e995 }, total = 0, js = seed ^ (uint64_t)rank << 48;
	int round, stages = log2_ceil(size), i;

	CHECK(want != NULL, "memory");
	CHECK(oxr_barrier_create(grp, OXR_BARRIER_DEFAULT, &b) == OXR_OK, "barrier create");
	CHECK(oxr_crystal_create(grp, &cr2) == OXR_OK, "second router");
	r[0] = cr;
	r[1] = cr2;
	for (round = 0; round < rounds; round++) {
		int n[2], first = round & 1;
		for (i = 0; i < 2; i++)
			n[i] = pack_round(r[i], seeds[i], round, want);
		if (jitter_us && mix(&js) % 4 == 0)
			usleep((useconds_t)(mix(&js) % (uint64_t)jitter_us));
		CHECK(oxr_crystal_transfer(r[first], 120000) == OXR_OK, "transfer %d of router %d",
		      round, first);
		if (jitter_us && mix(&js) % 4 == 0)
			usleep((useconds_t)(mix(&js) % (uint64_t)jitter_us));
		CHECK(oxr_crystal_transfer(r[!first], 120000) == OXR_OK, "transfer %d of router %d",
		      round, !first);
		for (i = 0; i < 2; i++)
			total += check_round(r[i], seeds[i], round, n[i], stages, want);
		if (round % 3 == 2)
			CHECK(oxr_barrier(b, 120000) == OXR_OK, "barrier after round %d", round);
	}
	for (i = 0; i < 2; i++)
		CHECK(oxr_crystal_get_stats(r[i], &st[i]) == OXR_OK, "stats");
	printf("rank %d: two ok (%d rounds, %llu records, regions %llu and %llu, %llu and %llu "
	       "grows)\n", rank, rounds, (unsigned long long)total,
	       (unsigned long long)st[0].region_bytes, (unsigned long long)st[1].region_bytes,
	       (unsigned long long)st[0].grows, (unsigned long long)st[1].grows);
	oxr_crystal_destroy(cr2);
	oxr_barrier_destroy(b);
	free(want);
	return 0;
}

/* Routers made and destroyed one after the other, one transfer each, ranks
 * skewed: a rank that runs ahead into the next router must wait for its
 * window on every peer, not put into the last one's, which a late peer
 * still reads (and then drops, the put with it). */
static int serial(uint64_t seed, int routers, int jitter_us)
{
	uint8_t *want = malloc(30000);
	uint64_t total = 0, js = seed ^ (uint64_t)rank << 48;
	int i, stages = log2_ceil(size);

	CHECK(want != NULL, "memory");
	for (i = 0; i < routers; i++) {
		oxr_crystal *cr;
		int n;
		if (jitter_us && mix(&js) % 3 == 0)
			usleep((useconds_t)(mix(&js) % (uint64_t)jitter_us));
		CHECK(oxr_crystal_create(grp, &cr) == OXR_OK, "router %d", i);
		n = pack_round(cr, seed, i, want);
		CHECK(oxr_crystal_transfer(cr, 120000) == OXR_OK, "transfer of router %d", i);
		total += check_round(cr, seed, i, n, stages, want);
		oxr_crystal_destroy(cr);
	}
	printf("rank %d: serial ok (%d routers, %llu records)\n", rank, routers,
	       (unsigned long long)total);
	free(want);
	return 0;
}

static int big(oxr_crystal *cr)
{
	const uint64_t n = 64ull << 20;
	uint8_t *p = malloc(n);
	int t;
	uint64_t i;

	CHECK(p != NULL, "memory");
	for (t = 0; t < 2; t++) {
		oxr_crystal_rec got;
		int seen = 0;
		for (i = 0; i < n; i++)
			p[i] = (uint8_t)(i * 13 + (i >> 16) + (uint64_t)t);
		if (rank == 0) {
			CHECK(oxr_crystal_pack(cr, size - 1, "", 0) == OXR_OK, "pack");
			CHECK(oxr_crystal_pack(cr, size - 1, p, n) == OXR_OK, "pack big");
			CHECK(oxr_crystal_pack(cr, size - 1, "tail", 4) == OXR_OK, "pack");
		}
		CHECK(oxr_crystal_transfer(cr, 300000) == OXR_OK, "transfer %d", t);
		while (oxr_crystal_next(cr, &got) == OXR_OK) {
			CHECK(rank == size - 1 && got.source == 0, "a record on rank %d", rank);
			if (seen == 0)
				CHECK(got.len == 0, "first");
			if (seen == 1)
				CHECK(got.len == n && !memcmp(got.data, p, n), "the 64 MiB record");
			if (seen == 2)
				CHECK(got.len == 4 && !memcmp(got.data, "tail", 4), "last");
			seen++;
		}
		CHECK(seen == (rank == size - 1 ? 3 : 0), "%d records", seen);
	}
	free(p);
	printf("rank %d: big ok\n", rank);
	return 0;
}

static int baddest(oxr_crystal *cr)
{
	oxr_crystal_rec got;
	int bad[] = { -1, size, size + 100 }, i, n = 0;

	for (i = 0; i < 3; i++) {
		char want[64];
		CHECK(oxr_crystal_pack(cr, bad[i], "x", 1) == OXR_ERR_INVAL, "dest %d taken", bad[i]);
		snprintf(want, sizeof(want), "destination rank %d is outside [0, %d)", bad[i], size);
		CHECK(strstr(oxr_errmsg(), want), "message for %d", bad[i]);
	}
	CHECK(oxr_crystal_pack(cr, (rank + 1) % size, "ok", 2) == OXR_OK, "good pack");
	CHECK(oxr_crystal_transfer(cr, 60000) == OXR_OK, "transfer");
	while (oxr_crystal_next(cr, &got) == OXR_OK)
		CHECK(got.len == 2 && got.source == (rank + size - 1) % size && ++n == 1, "record");
	CHECK(n == 1, "got %d", n);
	printf("rank %d: baddest ok\n", rank);
	return 0;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Rank 1 of `evil`: speaks the wire format by hand, wrongly. */
static void liar(const char *what)
{
	static uint8_t mem[2 * CR_REGION_DEFAULT], st[CR_HDR + 3 * CR_REC + 8];
	uint64_t total = CR_REC + 8;
	oxr_win *w;
	oxr_win_note n;
	/* the id rank 0's router takes: the group's first object */
	uint32_t id = oxr_coll_win_id(oxr_group_next_object(grp));

	CHECK(oxr_win_create(grp, id, mem, sizeof(mem), 60000, &w) == OXR_OK, "window");
	put32(st, strcmp(what, "magic") ? CR_MAGIC : 0xdeadbeef);
	put32(st + 4, 1);
	put64(st + 8, strcmp(what, "region") ? CR_REGION_DEFAULT : 4096);
	put32(st + CR_HDR, !strcmp(what, "dest") ? 5 : 0); /* rank 0's half is [0, 1) */
	put32(st + CR_HDR + 4, 1);
	put64(st + CR_HDR + 8, !strcmp(what, "len") ? 1ull << 40 : 8);
	if (!strcmp(what, "stray"))
		total += 5;
	put64(st + 16, total);
	put64(st + 24, 0);
	/* rank 0, P = 2: one slot; transfer 1 lands in the odd half of its window */
	CHECK(oxr_put(grp, 0, id, CR_REGION_DEFAULT, st, CR_HDR + total, CR_NOTE(1, 0, 0)) ==
	      OXR_OK, "put");
	CHECK(oxr_win_wait(w, 60000, &n) == OXR_OK && n.peer == 0, "rank 0's stage");
	oxr_win_destroy(w);
}

static int evil(oxr_crystal *cr, const char *what)
{
	const char *want = !strcmp(what, "dest") ? "sent a record for rank 5"
			   : !strcmp(what, "len") ? "sent a record of 1099511627776 bytes"
			   : !strcmp(what, "stray") ? "stray bytes"
			   : !strcmp(what, "magic") ? "not stage 1's header"
			   : "OXR_CRYSTAL_REGION_BYTES";
	oxr_status_t st;

	CHECK(size == 2, "evil wants 2 ranks");
	if (rank == 1) {
		liar(what);
	} else {
		CHECK(oxr_crystal_pack(cr, 1, "hello", 5) == OXR_OK, "pack");
		st = oxr_crystal_transfer(cr, 60000);
		CHECK(st == OXR_ERR_PROTO, "transfer gave %d", st);
		CHECK(strstr(oxr_errmsg(), want), "message '%s' lacks '%s'", oxr_errmsg(), want);
		printf("rank 0: %s\n", oxr_errmsg());
		CHECK(oxr_crystal_transfer(cr, 1000) == OXR_ERR_INVAL, "a broken router goes on");
	}
	CHECK(oxr_boot_barrier(boot) == OXR_OK, "barrier");
	printf("rank %d: evil ok\n", rank);
	return 0;
}

int main(int argc, char **argv)
{
	struct child_rank me;
	oxr_crystal *cr = NULL;
	const char *mode = argc > 1 ? argv[1] : "patterns";
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	child_join(&me);
	boot = me.boot;
	grp = me.g;
	size = oxr_group_size(grp);
	if ((strcmp(mode, "evil") || rank == 0) && strcmp(mode, "serial"))
		CHECK(oxr_crystal_create(grp, &cr) == OXR_OK, "create");
	if (!strcmp(mode, "patterns"))
		rc = patterns(cr, argc > 2 ? strtoull(argv[2], NULL, 0) : 1,
			      argc > 3 ? atoi(argv[3]) : 3 * NPAT, argc > 4 ? atoi(argv[4]) : 0);
	else if (!strcmp(mode, "two"))
		rc = two(cr, argc > 2 ? strtoull(argv[2], NULL, 0) : 1, argc > 3 ? atoi(argv[3]) : 3 * NPAT,
			 argc > 4 ? atoi(argv[4]) : 0);
	else if (!strcmp(mode, "serial"))
		rc = serial(argc > 2 ? strtoull(argv[2], NULL, 0) : 1, argc > 3 ? atoi(argv[3]) : 3 * NPAT,
			    argc > 4 ? atoi(argv[4]) : 0);
	else if (!strcmp(mode, "big"))
		rc = big(cr);
	else if (!strcmp(mode, "baddest"))
		rc = baddest(cr);
	else if (!strcmp(mode, "evil") && argc > 2)
		rc = evil(cr, argv[2]);
	else
		fprintf(stderr, "usage: crystal_child patterns SEED | two SEED | serial SEED | big | "
			"baddest | evil WHAT\n");
	oxr_crystal_destroy(cr);
	child_leave(&me);
	return rc;
}
