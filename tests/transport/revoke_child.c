/* SPDX-License-Identifier: MIT */
/*
 * One rank of the revoke test, started by oxr-run: the last rank revokes
 * while every other rank waits for a message nobody sends; each checks its
 * wait failed with OXR_ERR_REVOKED naming the last rank, then all reset and
 * pass a token round the ring in epoch 1.  Prints `rank R: revoke ok`.
 *   revoke_child kill: the last rank dies (SIGKILL) while every other one
 *   waits for a message from its right neighbour, most of them alive: the
 *   failure revokes the group, so every wait ends with an error naming the
 *   dead rank; a reset then fails saying why.  Prints `rank R: failure ok`.
 *   revoke_child shrink: rank n/2 dies; the survivors see it, shrink to n-1
 *   ranks (renumbered, epoch 1), pass a token round the new ring and put
 *   into a window made after the shrink and into one made before it (its
 *   new key comes after the reset that ends the shrink, unasked).  Prints
 *   `rank R: shrink ok (now S of N)`.
 *   revoke_child stop (with OXR_HEARTBEAT_MS set): the last rank tells
 *   rank 0 its pid and stops itself (SIGSTOP): alive to the kernel, so no
 *   link ever breaks; the heartbeat must find it.  The others wait for it,
 *   fail naming it, shrink, pass a token round, and rank 0 kills it.
 *   Prints `rank R: heartbeat ok (T ms)`, plus `rank R: found it` on a rank
 *   whose own heartbeat saw the silence first.  `stop K`: the last K ranks
 *   stop (a host powered off); rank 0's ring finds them one after the other.
 *   revoke_child revoker: rank 0 revokes and resets at once while every
 *   other rank waits for a message from rank 0: each wait must end revoked,
 *   never with rank 0's reset ball (with links on demand the ball comes
 *   straight from rank 0, the revoke over the overlay, often later); then
 *   all reset and pass a token round.  Prints `rank R: revoker ok`.
 *   revoke_child idle MS (with OXR_HEARTBEAT_MS set): every rank waits MS ms
 *   for a message nobody sends, then passes a token round the ring: nobody
 *   was taken for dead.  Prints `rank R: idle ok, B beats` with the
 *   heartbeat frames it sent during the wait.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "oxr/boot.h"
#include "oxr/transport.h"
#include "test_util.h"

static int rank = -1;

#include "child_check.h"

static int kill_mode(oxr_group *g, int n)
{
	char want[32];
	oxr_rmsg *m = NULL;
	oxr_status_t st;
	long t0;

	if (rank == n - 1) {
		usleep(200000);
		raise(SIGKILL);
	}
	t0 = (long)(now_us() / 1000);
	st = oxr_recv(g, (rank + 1) % n, 20000, &m);
	CHECK(st == OXR_ERR_PEER, "the wait ended with %d, not OXR_ERR_PEER", st);
	snprintf(want, sizeof(want), "rank %d failed", n - 1);
	CHECK(strstr(oxr_errmsg(), want) || (rank == n - 2 && strstr(oxr_errmsg(), "rank")),
	      "the error names the dead rank");
	CHECK(oxr_group_revoked(g, NULL), "revoked");
	CHECK(oxr_group_reset(g, 5000) == OXR_ERR_PEER, "a reset without every rank fails");
	printf("rank %d: failure ok (%ld ms after the wait began)\n", rank, (long)(now_us() / 1000) - t0);
	return 0;
}

/* A token round the ring of g: rank 0 gets back the sum of all ranks. */
static int ring(oxr_group *g, oxr_arena *a)
{
	int r = oxr_group_rank(g), n = oxr_group_size(g);
	int32_t v = 0;
	oxr_rmsg *m = NULL;
	oxr_ox_msg out = { .tag = OXR_OX_DATA };

	if (n == 1)
		return 0;
	if (r != 0) {
		CHECK(oxr_recv(g, r - 1, 20000, &m) == OXR_OK, "ring receive");
		v = m->msg.cmo->v.i32;
		oxr_rmsg_free(m);
	}
	oxr_arena_reset(a);
	out.cmo = oxr_cmo_new_int32(a, v + r);
	CHECK(oxr_send(g, (r + 1) % n, &out) == OXR_OK, "ring send");
	if (r == 0) {
		CHECK(oxr_recv(g, n - 1, 20000, &m) == OXR_OK, "ring back");
		v = m->msg.cmo->v.i32;
		oxr_rmsg_free(m);
		CHECK(v == n * (n - 1) / 2, "the ring sum is %d", v);
	}
	return 0;
}

static int shrink_mode(oxr_group *g, oxr_arena *a, int n)
{
	int dead = n / 2, old = rank, want;
	uint8_t mem[64] = { 0 }, old_mem[64] = { 0 }, x[8];
	oxr_rmsg *m = NULL;
	oxr_win *w, *wo;
	oxr_win_note note;

	CHECK(oxr_win_create(g, 4, old_mem, sizeof(old_mem), 20000, &wo) == OXR_OK,
	      "a window before the failure");
	if (rank == dead) {
		usleep(200000);
		raise(SIGKILL);
	}
	CHECK(oxr_recv(g, (rank + 1) % n, 20000, &m) == OXR_ERR_PEER, "the failure is seen");
	CHECK(oxr_win_create(g, 5, mem, sizeof(mem), 20000, &w) == OXR_ERR_PEER,
	      "a revoked group makes no window");
	CHECK(oxr_group_shrink(g, 20000) == OXR_OK, "shrink");
	rank = oxr_group_rank(g);
	want = old < dead ? old : old - 1;
	CHECK(rank == want && oxr_group_size(g) == n - 1, "rank %d of %d, not %d of %d", rank,
	      oxr_group_size(g), want, n - 1);
	CHECK(oxr_group_epoch(g) == 1 && !oxr_group_revoked(g, NULL), "epoch 1, not revoked");
	if (n - 1 > 1) { /* at once, into the window of the old group, to the rank before */
		memset(x, rank + 1, sizeof(x));
		CHECK(oxr_put(g, (rank + n - 2) % (n - 1), 4, 16, x, sizeof(x), 9) == OXR_OK,
		      "put into the old window: %s", oxr_errmsg());
		CHECK(oxr_win_wait(wo, 20000, &note) == OXR_OK, "the put into the old window");
		CHECK(note.peer == (rank + 1) % (n - 1) && note.value == 9 &&
			      old_mem[16] == note.peer + 1,
		      "old window: put from %d (note %u) landed %d", note.peer, note.value,
		      old_mem[16]);
	}
	if (ring(g, a))
		return 1;
	/* windows: one made after the shrink, each rank puts its number to the next */
	CHECK(oxr_win_create(g, 5, mem, sizeof(mem), 20000, &w) == OXR_OK, "window");
	if (n - 1 > 1) {
		memset(x, rank + 1, sizeof(x));
		CHECK(oxr_put(g, (rank + 1) % (n - 1), 5, 8, x, sizeof(x), 7) == OXR_OK, "put");
		CHECK(oxr_win_wait(w, 20000, &note) == OXR_OK, "the neighbour's put");
		CHECK(note.peer == (rank + n - 2) % (n - 1) && mem[8] == note.peer + 1,
		      "put from %d landed %d", note.peer, mem[8]);
	}
	oxr_win_destroy(wo);
	printf("rank %d: shrink ok (now %d of %d)\n", old, rank, oxr_group_size(g));
	oxr_win_destroy(w);
	return 0;
}

static int revoker_mode(oxr_group *g, oxr_arena *a)
{
	oxr_rmsg *m = NULL;
	oxr_status_t st;

	if (rank == 0) {
		CHECK(oxr_group_revoke(g) == OXR_OK, "revoke");
	} else {
		st = oxr_recv(g, 0, 20000, &m);
		CHECK(st == OXR_ERR_REVOKED, "the wait on the revoker ended with %d, not revoked (%s)",
		      st, st == OXR_OK ? "a message: its reset ball?" : oxr_errmsg());
	}
	CHECK(oxr_group_reset(g, 20000) == OXR_OK, "reset: %s", oxr_errmsg());
	if (ring(g, a))
		return 1;
	printf("rank %d: revoker ok\n", rank);
	return 0;
}

static int idle_mode(oxr_group *g, oxr_arena *a, int n, int ms)
{
	oxr_group_counters c0, c1;
	oxr_rmsg *m = NULL;
	oxr_status_t st;

	CHECK(oxr_group_stats(g, &c0) == OXR_OK, "stats");
	st = oxr_recv(g, (rank + 1) % n, ms, &m);
	CHECK(st == OXR_ERR_TIMEOUT, "the idle wait ended with %d (%s), not a timeout", st,
	      oxr_errmsg());
	CHECK(oxr_group_stats(g, &c1) == OXR_OK, "stats");
	if (ring(g, a))
		return 1;
	printf("rank %d: idle ok, %llu beats\n", rank,
	       (unsigned long long)(c1.beats_sent - c0.beats_sent));
	return 0;
}

/* The state letter of /proc/PID/stat (T: stopped, Z: dead, not reaped). */
static char proc_state(long pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return '?';
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return rp && rp[1] == ' ' ? rp[2] : '?';
}

static int stop_mode(oxr_group *g, oxr_arena *a, int n, int k)
{
	oxr_ox_msg out = { .tag = OXR_OX_DATA };
	oxr_rmsg *m = NULL;
	char want[32];
	long t0, victim[8] = { 0 };
	oxr_status_t st;
	int fd, i;

	CHECK(k >= 1 && k <= 8 && k < n, "stop K: 1 to 8 ranks, fewer than the group");
	if (rank >= n - k) {
		pid_t self = getpid();
		if (fork() == 0) { /* a safety net only: rank 0 kills it first */
			for (fd = 0; fd < 1024; fd++) /* no link, no pipe of oxr-run kept open */
				close(fd);
			for (i = 0; i < 200 && getppid() == self; i++)
				usleep(100000);
			kill(self, SIGKILL);
			_exit(0);
		}
		out.cmo = oxr_cmo_new_int32(a, (int32_t)self);
		CHECK(oxr_send(g, 0, &out) == OXR_OK, "the pid to rank 0");
		raise(SIGSTOP);
		return 1; /* never: it is killed while stopped */
	}
	for (i = 0; rank == 0 && i < k; i++) {
		CHECK(oxr_recv(g, n - 1 - i, 20000, &m) == OXR_OK, "the victims' pids");
		victim[i] = m->msg.cmo->v.i32;
		oxr_rmsg_free(m);
	}
	t0 = (long)(now_us() / 1000);
	st = oxr_recv(g, n - 1, 20000, &m);
	CHECK(st == OXR_ERR_PEER, "the wait ended with %d, not OXR_ERR_PEER", st);
	snprintf(want, sizeof(want), "rank %d failed", n - 1);
	CHECK(strstr(oxr_errmsg(), want), "the error names the stopped rank: %s", oxr_errmsg());
	if (strstr(oxr_errmsg(), "sent nothing"))
		printf("rank %d: found it\n", rank);
	t0 = (long)(now_us() / 1000) - t0;
	CHECK(oxr_group_shrink(g, 20000) == OXR_OK, "shrink: %s", oxr_errmsg());
	CHECK(oxr_group_size(g) == n - k, "the survivors");
	if (ring(g, a))
		return 1;
	for (i = 0; rank == 0 && i < k; i++) {
		/* still stopped: the survivors found it, its death (the safety
		 * net's SIGKILL, 20 s on) did not end their waits */
		CHECK(proc_state(victim[i]) == 'T', "rank %d is still stopped, not '%c'", n - 1 - i,
		      proc_state(victim[i]));
		kill((pid_t)victim[i], SIGKILL);
		(void)waitpid(-1, NULL, WNOHANG);
	}
	printf("rank %d: heartbeat ok (%ld ms)\n", rank, t0);
	return 0;
}

int main(int argc, char **argv)
{
	struct child_rank me;
	oxr_group *g;
	oxr_arena *a;
	oxr_rmsg *m = NULL;
	oxr_status_t st;
	char want[64];
	int n, last;

	child_join(&me);
	g = me.g;
	CHECK(oxr_arena_create(&a) == OXR_OK, "arena");
	n = oxr_group_size(g);
	last = n - 1;
	if (argc > 1 && (!strcmp(argv[1], "shrink") || !strcmp(argv[1], "kill") ||
			 !strcmp(argv[1], "stop") || !strcmp(argv[1], "idle") ||
			 !strcmp(argv[1], "revoker"))) {
		int rc = !strcmp(argv[1], "kill")   ? kill_mode(g, n)
			 : !strcmp(argv[1], "stop") ? stop_mode(g, a, n, argc > 2 ? atoi(argv[2]) : 1)
			 : !strcmp(argv[1], "idle") ? idle_mode(g, a, n, argc > 2 ? atoi(argv[2]) : 2000)
			 : !strcmp(argv[1], "revoker") ? revoker_mode(g, a)
						    : shrink_mode(g, a, n);
		oxr_arena_destroy(a);
		child_leave(&me);
		return rc;
	}
	snprintf(want, sizeof(want), "revoked by rank %d", last);
	if (rank == last) {
		usleep(200000); /* the others are waiting by now */
		CHECK(oxr_group_revoke(g) == OXR_OK, "revoke");
	} else {
		st = oxr_recv(g, (rank + 1) % n, 20000, &m);
		CHECK(st == OXR_ERR_REVOKED, "the wait ended with %d, not OXR_ERR_REVOKED", st);
		CHECK(strstr(oxr_errmsg(), want), "the error names the revoker");
	}
	CHECK(oxr_group_revoked(g, NULL), "revoked");
	CHECK(oxr_group_reset(g, 20000) == OXR_OK, "reset");
	CHECK(oxr_group_epoch(g) == 1 && !oxr_group_revoked(g, NULL), "epoch 1, not revoked");
	if (n > 1) {
		int32_t v = 0;
		oxr_ox_msg out = { .tag = OXR_OX_DATA };
		if (rank != 0) {
			CHECK(oxr_recv(g, rank - 1, 20000, &m) == OXR_OK, "ring receive");
			CHECK(m->msg.cmo->tag == OXR_CMO_INT32, "an INT32");
			v = m->msg.cmo->v.i32;
			oxr_rmsg_free(m);
		}
		out.cmo = oxr_cmo_new_int32(a, v + rank);
		CHECK(oxr_send(g, (rank + 1) % n, &out) == OXR_OK, "ring send");
		if (rank == 0) {
			CHECK(oxr_recv(g, last, 20000, &m) == OXR_OK, "ring back");
			v = m->msg.cmo->v.i32;
			oxr_rmsg_free(m);
			CHECK(v == n * (n - 1) / 2, "the ring sum is %d", v);
		}
	}
	printf("rank %d: revoke ok\n", rank);
	oxr_arena_destroy(a);
	child_leave(&me);
	return 0;
}
