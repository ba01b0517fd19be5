/* SPDX-License-Identifier: MIT */
/*
 * One rank of the barrier tests, started by oxr-run.  Prints one line
 * `rank R: MODE ok ...` and exits 0 when every check held.
 *
 *   coll_barrier_child check ALGO K DELAY_US FILE
 *       K barriers of ALGO (bitmap | dissemination), each entered after a
 *       random delay of up to DELAY_US.  The evidence is FILE, one 64-bit
 *       counter per rank in shared memory: before barrier k a rank stores
 *       k+1 in its counter; after barrier k returns it checks that every
 *       counter is k+1 or k+2 (everybody entered k, nobody got past k+1).
 *   coll_barrier_child dead ALGO VICTIM
 *       two barriers, then rank VICTIM exits (status 0, so oxr-run leaves
 *       the others running; without oxr_group_destroy, so its links just
 *       drop) without entering the third, which every other rank enters
 *       with no timeout: it must fail with OXR_ERR_PEER (or OXR_ERR_TIMEOUT),
 *       not hang.
 *   coll_barrier_child forge ALGO   (2 ranks)
 *       one barrier; then rank 1 writes 16 bytes into rank 0's barrier
 *       window where no slot starts, and both enter the next barrier:
 *       rank 0's must fail with OXR_ERR_PROTO naming rank 1 (the forged
 *       note comes before rank 1's writes of that barrier, on one link),
 *       rank 1's with OXR_ERR_PEER (rank 0 tells it) or a timeout, or
 *       it completes (rank 0 entered, and may have said so first).
 *   coll_barrier_child forgerun bitmap   (2 ranks)
 *       two barriers; then rank 1 writes rank 0 a request of the next,
 *       barrier 2, in its own slot but with a run of 2 ranks where its
 *       subtree has 1: rank 0's barrier 2 must fail with OXR_ERR_PROTO
 *       naming rank 1 and the run; rank 1 enters only then (its own
 *       request would overwrite the slot before rank 0 read it), and gets
 *       OXR_ERR_PEER (rank 0 told it) or a timeout.
 *   coll_barrier_child reset ALGO
 *       ten barriers; then rank 0 revokes the group instead of entering the
 *       next, which must fail with OXR_ERR_REVOKED on every rank; then
 *       every rank resets the group (a new epoch) and ten barriers more
 *       must work, numbered from 0 again.
 *   coll_barrier_child many ALGO N
 *       N barriers alive at once (each a window of its own, named by the
 *       group's object count), one round of each, first to last and back.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "oxr/barrier.h"
#include "oxr/transport.h"

static int rank = -1;

#include "child_check.h"

static int algo_of(const char *s)
{
	if (!strcmp(s, "bitmap"))
		return OXR_BARRIER_BITMAP;
	if (!strcmp(s, "dissemination"))
		return OXR_BARRIER_DISSEMINATION;
	return OXR_BARRIER_DEFAULT;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int check(oxr_group *g, int algo, long k, long delay_us, const char *file)
{
	int n = oxr_group_size(g), fd, j;
	_Atomic uint64_t *ctr;
	oxr_barrier_t *b;
	oxr_barrier_counts st;
	const char *tr;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0x100000001b3ull;
	long i;

	fd = open(file, O_RDWR);
	CHECK(fd >= 0, "open %s", file);
	ctr = mmap(NULL, (size_t)n * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(ctr != MAP_FAILED, "mmap %s", file);
	close(fd);
	CHECK(oxr_barrier_create(g, algo, &b) == OXR_OK, "barrier_create");
	tr = n > 1 ? NULL : "no link";
	for (i = 0; i < k; i++) {
		if (delay_us > 0) {
			uint64_t r = rnd(&seed);
			/* mostly short, now and then the longest: someone is last */
			long d = (long)(r % (uint64_t)delay_us);
			if ((r >> 32) % 16 == 0)
				d = delay_us;
			usleep((useconds_t)d);
		}
		atomic_store_explicit(&ctr[rank], (uint64_t)i + 1, memory_order_release);
		CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier %ld", i);
		if (!tr)
			tr = child_transport(g);
		for (j = 0; j < n; j++) {
			uint64_t v = atomic_load_explicit(&ctr[j], memory_order_acquire);
			CHECK(v == (uint64_t)i + 1 || v == (uint64_t)i + 2,
			      "after barrier %ld rank %d's counter is %llu: it had not entered", i, j,
			      (unsigned long long)v);
		}
	}
	CHECK(oxr_barrier_stats(b, &st) == OXR_OK, "stats");
	CHECK(st.barriers == (uint64_t)k, "stats count %llu barriers", (unsigned long long)st.barriers);
	printf("rank %d: check ok: %ld barriers of %s over %s, %.2f puts sent and %.2f received "
	       "per barrier, %llu stale ignored\n", rank, k,
	       oxr_barrier_algo_name(oxr_barrier_algo(b)),
	       tr ? tr : "?",
	       k ? (double)st.puts_sent / (double)k : 0,
	       k ? (double)st.puts_received / (double)k : 0, (unsigned long long)st.stale_ignored);
	oxr_barrier_destroy(b);
	munmap((void *)ctr, (size_t)n * 8);
	return 0;
}

static int dead(oxr_boot *boot, oxr_group *g, int algo, int victim)
{
	oxr_barrier_t *b;
	oxr_status_t st;

	CHECK(oxr_barrier_create(g, algo, &b) == OXR_OK, "barrier_create");
	CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier 0");
	CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier 1");
	/* everybody out of barrier 1 first: a rank that dies abruptly revokes
	 * the group, and notes not yet taken go with it */
	CHECK(oxr_boot_barrier(boot) == OXR_OK, "boot barrier");
	if (rank == victim) {
		fflush(stdout);
		_exit(0); /* gone, links and all, without a word */
	}
	st = oxr_barrier(b, -1);
	CHECK(st == OXR_ERR_PEER || st == OXR_ERR_TIMEOUT, "barrier 2 with rank %d gone gave %d",
	      victim, st);
	printf("rank %d: dead ok: %s: %s\n", rank, oxr_strerror(st), oxr_errmsg());
	CHECK(oxr_barrier(b, 1000) == st, "a failed barrier stays failed");
	oxr_barrier_destroy(b);
	return 0;
}

/* The window id of this process's first barrier: the group's object 0
 * (collectives/coll_win.h). */
#define FIRST_BARRIER_WINDOW 0x6f780000u

static int forge(oxr_boot *boot, oxr_group *g, int algo)
{
	oxr_barrier_t *b;
	oxr_status_t st;
	uint32_t junk[4] = { 0, 0, 1, 0 };

	CHECK(oxr_group_size(g) == 2, "forge runs on 2 ranks");
	CHECK(oxr_barrier_create(g, algo, &b) == OXR_OK, "barrier_create");
	CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier 0");
	CHECK(oxr_boot_barrier(boot) == OXR_OK, "boot barrier");
	if (rank == 1)
		CHECK(oxr_put(g, 0, FIRST_BARRIER_WINDOW, 3, junk, sizeof(junk), 1) == OXR_OK,
		      "the forged put");
	st = oxr_barrier(b, 5000);
	if (rank == 0) {
		CHECK(st == OXR_ERR_PROTO && strstr(oxr_errmsg(), "malformed write from rank 1"),
		      "barrier 1 after a forged write gave %d: %s", st, oxr_errmsg());
	} else {
		/* rank 0 may have sent its part before it took the forged note */
		CHECK(st == OXR_OK || st == OXR_ERR_PEER || st == OXR_ERR_TIMEOUT,
		      "barrier 1 of the forger gave %d: %s", st, oxr_errmsg());
	}
	printf("rank %d: forge ok: %s: %s\n", rank, oxr_strerror(st), st ? oxr_errmsg() : "");
	oxr_barrier_destroy(b);
	return 0;
}

/* Barrier 2 is rooted at rank 0 whether the root moves (2 mod 2) or not,
 * rank 1 is its child over the edge of length 1, and that edge's child slot
 * is the first of the even barriers' half: a header (epoch, seq, kind
 * BAR_REQ = 1, aux) and a run (first, count) at offset 0
 * (collectives/barrier_core.h). */
static int forge_run(oxr_boot *boot, oxr_group *g)
{
	uint32_t req[6] = { oxr_group_epoch(g), 2, 1, 0, 1, 2 };
	oxr_barrier_t *b;
	oxr_status_t st = OXR_OK;
	int i;

	CHECK(oxr_group_size(g) == 2, "forgerun runs on 2 ranks");
	CHECK(oxr_barrier_create(g, OXR_BARRIER_BITMAP, &b) == OXR_OK, "barrier_create");
	for (i = 0; i < 2; i++)
		CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier %d", i);
	CHECK(oxr_boot_barrier(boot) == OXR_OK, "boot barrier");
	if (rank == 1) {
		CHECK(oxr_put(g, 0, FIRST_BARRIER_WINDOW, 0, req, sizeof(req), 1) == OXR_OK,
		      "the forged request");
	} else {
		st = oxr_barrier(b, 5000);
		CHECK(st == OXR_ERR_PROTO && strstr(oxr_errmsg(), "malformed write from rank 1") &&
			      strstr(oxr_errmsg(), "run past the end of its sender's subtree"),
		      "barrier 2 after a forged run gave %d: %s", st, oxr_errmsg());
	}
	CHECK(oxr_boot_barrier(boot) == OXR_OK, "boot barrier");
	if (rank == 1) {
		st = oxr_barrier(b, 2000);
		CHECK(st == OXR_ERR_PEER || st == OXR_ERR_TIMEOUT,
		      "barrier 2 of the forger gave %d: %s", st, oxr_errmsg());
	}
	printf("rank %d: forgerun ok: %s: %s\n", rank, oxr_strerror(st), oxr_errmsg());
	oxr_barrier_destroy(b);
	return 0;
}

static int reset(oxr_boot *boot, oxr_group *g, int algo)
{
	oxr_barrier_t *b;
	oxr_status_t st;
	uint32_t e0 = oxr_group_epoch(g);
	int i;

	CHECK(oxr_barrier_create(g, algo, &b) == OXR_OK, "barrier_create");
	for (i = 0; i < 10; i++)
		CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier %d", i);
	/* everybody out of barrier 9 (oxr-run's barrier) before the revoke */
	CHECK(oxr_boot_barrier(boot) == OXR_OK, "boot barrier");
	if (rank == 0)
		CHECK(oxr_group_revoke(g) == OXR_OK, "revoke");
	st = oxr_barrier(b, 60000);
	CHECK(st == OXR_ERR_REVOKED, "a barrier of a revoked group gave %d", st);
	CHECK(oxr_group_reset(g, 60000) == OXR_OK, "reset");
	CHECK(oxr_group_epoch(g) == e0 + 1, "epoch %u after reset", oxr_group_epoch(g));
	for (i = 0; i < 10; i++)
		CHECK(oxr_barrier(b, 60000) == OXR_OK, "barrier %d after the reset", i);
	printf("rank %d: reset ok: revoked barrier failed, 10 after the reset in epoch %u\n", rank,
	       oxr_group_epoch(g));
	oxr_barrier_destroy(b);
	return 0;
}

static int many(oxr_group *g, int algo, int n)
{
	oxr_barrier_t **b = calloc((size_t)n, sizeof(*b));
	int i;

	CHECK(b && n > 0, "many: %d barriers", n);
	for (i = 0; i < n; i++)
		CHECK(oxr_barrier_create(g, algo, &b[i]) == OXR_OK, "barrier_create %d", i);
	for (i = 0; i < 2 * n; i++)
		CHECK(oxr_barrier(b[i < n ? i : 2 * n - 1 - i], 60000) == OXR_OK, "round %d", i);
	for (i = 0; i < n; i++)
		oxr_barrier_destroy(b[i]);
	free(b);
	printf("rank %d: many ok: %d barriers alive at once\n", rank, n);
	return 0;
}

int main(int argc, char **argv)
{
	struct child_rank me;
	oxr_boot *boot;
	oxr_group *g;
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(argc >= 3, "usage: coll_barrier_child check|dead ALGO ...");
	child_join(&me);
	boot = me.boot;
	g = me.g;
	if (!strcmp(argv[1], "check") && argc == 6)
		rc = check(g, algo_of(argv[2]), atol(argv[3]), atol(argv[4]), argv[5]);
	else if (!strcmp(argv[1], "reset") && argc == 3)
		rc = reset(boot, g, algo_of(argv[2]));
	else if (!strcmp(argv[1], "forge") && argc == 3)
		rc = forge(boot, g, algo_of(argv[2]));
	else if (!strcmp(argv[1], "forgerun") && argc == 3 && !strcmp(argv[2], "bitmap"))
		rc = forge_run(boot, g);
	else if (!strcmp(argv[1], "many") && argc == 4)
		rc = many(g, algo_of(argv[2]), atoi(argv[3]));
	else if (!strcmp(argv[1], "dead") && argc == 4)
		rc = dead(boot, g, algo_of(argv[2]), atoi(argv[3]));
	else
		fprintf(stderr, "coll_barrier_child: bad arguments\n");
	child_leave(&me);
	return rc;
}
