/* SPDX-License-Identifier: MIT */
/*
 * One rank of the bootstrap tests, started by oxr-run, mpirun or alone.
 * Prints `rank R size N kind NAME`, then checks allgathers and barriers;
 * exits 0 when every check held, else 1 with a message on stderr.
 *
 *   boot_child ok               100 bytes, 3 barriers, 0 bytes, 200003 bytes
 *   boot_child big              ok, then an 8 MiB allgather
 *   boot_child die-after-first  rank 1 exits 3 after the first allgather
 *   boot_child badlen           rank 0 gives 101 bytes where the others give 100
 *   boot_child badtoken         rank 1 joins with a wrong token
 *   boot_child sleep            joins, then sleeps (for oxr-run --timeout)
 *   boot_child lookup           two publishes around an allgather, then every
 *                               rank looks up every rank's blob of both
 *   boot_child lookup-bad       the last rank's lookups of a rank out of range,
 *                               an allgather's round, a later round and the
 *                               wrong length fail (each message on stdout),
 *                               then the rendezvous still serves all: an
 *                               allgather and a good lookup
 *   boot_child lookup-during    rank 0 looks up while the others wait in an
 *                               allgather; then all look up as its replies go
 *                               out
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot_impl.h" /* oxr_boot_publish, oxr_boot_lookup: what groups use */
#include "oxr/boot.h"

static int rank = -1;

#define CHILD_PREFIX "boot_child: "
#include "child_check.h"

/* Rank r's i-th byte in an allgather of len bytes. */
static uint8_t blob_byte(int r, size_t i, size_t len)
{
	return (uint8_t)((size_t)r * 7 + i + len);
}

/* An allgather of len bytes a rank, checked; this rank gives my_len bytes, which is
 * len except where a test wants a mismatch. */
static void gather_check(oxr_boot *b, size_t len, size_t my_len)
{
	int n = oxr_boot_size(b), r;
	uint8_t *mine = malloc(my_len + 1), *all = malloc((size_t)n * my_len + 1);
	size_t i;

	if (!mine || !all) {
		fprintf(stderr, "boot_child: rank %d: out of memory\n", rank);
		exit(1);
	}
	for (i = 0; i < my_len; i++)
		mine[i] = blob_byte(rank, i, len);
	if (oxr_boot_allgather(b, my_len ? mine : NULL, my_len, my_len ? all : NULL))
		die("allgather");
	for (r = 0; r < n; r++) {
		for (i = 0; i < len; i++) {
			if (all[(size_t)r * len + i] != blob_byte(r, i, len)) {
				fprintf(stderr, "boot_child: rank %d: allgather of %zu: byte %zu "
					"of rank %d is wrong\n", rank, len, i, r);
				exit(1);
			}
		}
	}
	free(mine);
	free(all);
}

/* This rank's blob of len bytes, published; returns the round. */
static uint64_t publish(oxr_boot *b, size_t len)
{
	uint8_t *mine = malloc(len + 1);
	uint64_t seq = 0;
	size_t i;

	if (!mine)
		die("out of memory");
	for (i = 0; i < len; i++)
		mine[i] = blob_byte(rank, i, len);
	if (!oxr_boot_can_lookup(b))
		die("%s cannot look up", oxr_boot_name(b));
	if (oxr_boot_publish(b, mine, len, &seq))
		die("publish of %zu bytes", len);
	free(mine);
	return seq;
}

/* Rank r's blob of publish seq (len bytes a rank), looked up and checked. */
static void lookup_check(oxr_boot *b, int r, uint64_t seq, size_t len)
{
	uint8_t *got = malloc(len + 1);
	size_t i;

	if (!got)
		die("out of memory");
	memset(got, 0xee, len);
	if (oxr_boot_lookup(b, r, seq, got, len))
		die("lookup of rank %d in #%llu", r, (unsigned long long)seq);
	for (i = 0; i < len; i++) {
		if (got[i] != blob_byte(r, i, len)) {
			fprintf(stderr, "boot_child: rank %d: lookup of rank %d in #%llu: byte "
				"%zu is wrong\n", rank, r, (unsigned long long)seq, i);
			exit(1);
		}
	}
	free(got);
}

static void lookup_all(oxr_boot *b, uint64_t seq, size_t len)
{
	int r;

	for (r = 0; r < oxr_boot_size(b); r++)
		lookup_check(b, (r + rank) % oxr_boot_size(b), seq, len);
}

/* Every rank's blob in one batched lookup (the size is at most 64), in an
 * order of this rank's own: each blob where its rank was asked. */
static void lookup_batch(oxr_boot *b, uint64_t seq, size_t len)
{
	int n = oxr_boot_size(b), ranks[64], i;
	uint8_t *got = malloc((size_t)n * len);
	size_t k;

	if (!got || n > 64)
		die("batch of %d ranks", n);
	for (i = 0; i < n; i++)
		ranks[i] = (n - 1 - i + rank) % n;
	memset(got, 0xee, (size_t)n * len);
	if (oxr_boot_lookup_batch(b, ranks, n, seq, got, len))
		die("batched lookup of %d ranks in #%llu", n, (unsigned long long)seq);
	for (i = 0; i < n; i++)
		for (k = 0; k < len; k++)
			if (got[(size_t)i * len + k] != blob_byte(ranks[i], k, len))
				die("batched lookup: rank %d's byte %zu is wrong", ranks[i], k);
	free(got);
}

/* Two tables kept: the first still answers after the second round. */
static void mode_lookup(oxr_boot *b)
{
	uint64_t a = publish(b, 64), c;

	gather_check(b, 100, 100);
	c = publish(b, 1000);
	if (c <= a)
		die("publish rounds #%llu then #%llu", (unsigned long long)a,
		    (unsigned long long)c);
	lookup_all(b, c, 1000);
	lookup_all(b, a, 64);
	lookup_batch(b, c, 1000);
	lookup_batch(b, a, 64);
}

/* A lookup the ops answer with an error holding piece; its message on
 * stdout (straight to the ops: boot.c would catch the rank itself). */
static void lookup_fails(oxr_boot *b, int r, uint64_t seq, size_t len, const char *piece)
{
	uint8_t got[64];

	if (b->ops->lookup(b, &r, 1, seq, got, len) == OXR_OK)
		die("lookup of rank %d in #%llu (%zu bytes) worked", r, (unsigned long long)seq,
		    len);
	if (!strstr(oxr_errmsg(), piece))
		die("lookup of rank %d in #%llu: message without '%s'", r,
		    (unsigned long long)seq, piece);
	printf("rank %d: lookup error: %s\n", rank, oxr_errmsg());
	fflush(stdout);
}

/* A batch with one rank out of range among good ones: refused whole, by
 * oxr-run (straight to the ops: boot.c would catch the rank itself). */
static void batch_fails(oxr_boot *b, int n, uint64_t seq)
{
	int ranks[3] = { 0, n + 5, n - 1 };
	uint8_t got[3 * 64];

	if (b->ops->lookup(b, ranks, 3, seq, got, 64) == OXR_OK)
		die("a batch naming rank %d of %d worked", n + 5, n);
	if (!strstr(oxr_errmsg(), "out of range"))
		die("batch naming rank %d: message without 'out of range'", n + 5);
	printf("rank %d: lookup error: %s\n", rank, oxr_errmsg());
	fflush(stdout);
}

static void mode_lookup_bad(oxr_boot *b)
{
	int n = oxr_boot_size(b);
	uint64_t seq;

	gather_check(b, 100, 100); /* round 1: an allgather, no table */
	seq = publish(b, 64);      /* round 2 */
	if (rank == n - 1) {
		lookup_fails(b, n, seq, 64, "out of range");
		lookup_fails(b, 0, seq - 1, 64, "is unknown");
		lookup_fails(b, 0, seq + 1, 64, "has published up to");
		lookup_fails(b, 0, seq, 32, "published 64 bytes");
		batch_fails(b, n, seq);
	}
	gather_check(b, 100, 100);
	lookup_check(b, n - 1 - rank, seq, 64);
	if (oxr_boot_barrier(b))
		die("barrier");
}

/* The others block in the allgather while rank 0 looks up: their round
 * waits for rank 0 alone, and its lookups do not disturb it. */
static void mode_lookup_during(oxr_boot *b)
{
	uint64_t seq = publish(b, 4096);
	int i;

	if (rank == 0) {
		usleep(300 * 1000);
		for (i = 0; i < 3; i++)
			lookup_all(b, seq, 4096);
	}
	gather_check(b, 200003, 200003);
	lookup_all(b, seq, 4096);
	gather_check(b, 100, 100);
}

/* Replaces the token oxr-run gave with a wrong one, through the same
 * channel, before oxr_boot_open reads it. */
static void wrong_token(void)
{
	const char *fd = getenv("OXR_RUN_TOKEN_FD");
	char v[16];
	int p[2];

	if (fd)
		close(atoi(fd));
	if (pipe(p) || write(p[1], "0123456789abcdef0123456789abcdef"
			     "0123456789abcdef0123456789abcdef", 64) != 64) {
		perror("boot_child: pipe");
		exit(1);
	}
	close(p[1]);
	snprintf(v, sizeof(v), "%d", p[0]);
	setenv("OXR_RUN_TOKEN_FD", v, 1);
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "ok", "big", "die-after-first", "badlen",
					     "badtoken", "sleep", "lookup", "lookup-bad",
					     "lookup-during", NULL };
	const char *mode = argc > 1 ? argv[1] : "ok";
	const char *env_rank = getenv("OXR_RUN_RANK");
	oxr_boot *b;
	int i;

	for (i = 0; modes[i] && strcmp(modes[i], mode); i++)
		;
	if (!modes[i]) {
		fprintf(stderr, "boot_child: unknown mode '%s'\n", mode);
		return 2;
	}
	rank = env_rank ? atoi(env_rank) : 0;
	if (!strcmp(mode, "badtoken") && rank == 1)
		wrong_token();
	if (oxr_boot_open(&b))
		die("oxr_boot_open");
	rank = oxr_boot_rank(b);
	printf("rank %d size %d kind %s\n", rank, oxr_boot_size(b), oxr_boot_name(b));
	fflush(stdout);
	if (!strcmp(mode, "sleep"))
		sleep(600);
	if (!strncmp(mode, "lookup", 6)) {
		if (!strcmp(mode, "lookup"))
			mode_lookup(b);
		else if (!strcmp(mode, "lookup-bad"))
			mode_lookup_bad(b);
		else
			mode_lookup_during(b);
		oxr_boot_close(b);
		return 0;
	}
	gather_check(b, 100, !strcmp(mode, "badlen") && rank == 0 ? 101 : 100);
	if (!strcmp(mode, "die-after-first") && rank == 1)
		exit(3);
	for (i = 0; i < 3; i++)
		if (oxr_boot_barrier(b))
			die("barrier");
	gather_check(b, 0, 0);
	gather_check(b, 200003, 200003);
	if (!strcmp(mode, "big"))
		gather_check(b, 8 << 20, 8 << 20);
	oxr_boot_close(b);
	return 0;
}
