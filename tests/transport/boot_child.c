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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
					     "badtoken", "sleep", NULL };
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
