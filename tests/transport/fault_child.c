/* SPDX-License-Identifier: MIT */
/*
 * One rank of the fault-injection test (tests/transport/test_fault.c), started by
 * oxr-run:  fault_child OP SEED [K [shrink]]
 * OP is sendrecv, bcast, reduce, barrier, crystal or reset (a revoke and a
 * reset: rank i % n revokes in round i while the others wait on it, then
 * all reset).  Every rank runs OP over and over; K victims (default 1,
 * distinct ranks chosen from SEED) kill themselves with SIGKILL at one
 * moment chosen from SEED, after printing `victim V kill at T`.  With
 * `shrink`, only the first dies so; the others die while they shrink (a
 * timer, 0-3 ms after their operation failed, or at once when the shrink
 * returned first), printing `victim V dies in the shrink`.
 * Each survivor prints `rank R: OP failed at T (code)` when its operation
 * fails, shrinks the group, runs OP once more on the shrunk group, checks
 * the result (a member that died after the agreement fails it: shrink
 * again, up to K times) and prints `rank R: OP recovered` and
 * `rank R: now S of N after M shrinks`, then, after closing the
 * group, `rank R: nothing leaked` if it holds no more file descriptors than before
 * the group was made, and no verbs queue pair or memory registration
 * (oxr_verbs_objects).  T: CLOCK_MONOTONIC microseconds, one clock for all.
 * The failure line ends with oxr's message, which names the failed rank.
 *
 *   fault_child OP outside
 * No rank kills itself: the failure comes from outside (ci/rxe-twohost
 * powers off the host of some ranks).  Each rank prints `rank R: OP running`
 * once OP has worked, then goes on until it fails (at most OUTSIDE_WAIT_US).
 */
#include <dirent.h>
#include <signal.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "oxr/barrier.h"
#include "oxr/bcast.h"
#include "oxr/boot.h"
#include "oxr/crystal.h"
#include "oxr/transport.h"
#include "test_util.h"

#define TMO 20000
#define SELF_WAIT_US 30000000LL     /* a victim among us dies within 30 ms */
#define OUTSIDE_WAIT_US 300000000LL /* for the outside to pull the plug, under emulation */

static int rank = -1;

#include "child_check.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the one opendir holds */
}

struct op_state {
	oxr_barrier_t *bar;
	oxr_crystal *cr;
	oxr_arena *a;
	int iter;
};

static oxr_status_t make_objects(oxr_group *g, const char *op, struct op_state *s)
{
	oxr_status_t st = OXR_OK;

	if (!strcmp(op, "barrier"))
		st = oxr_barrier_create(g, OXR_BARRIER_DEFAULT, &s->bar);
	else if (!strcmp(op, "crystal"))
		st = oxr_crystal_create(g, &s->cr);
	return st;
}

static void drop_objects(struct op_state *s)
{
	oxr_barrier_destroy(s->bar);
	oxr_crystal_destroy(s->cr);
	s->bar = NULL;
	s->cr = NULL;
}

/* One operation on g; with check, its result is verified (1: wrong). */
static oxr_status_t run_op(oxr_group *g, const char *op, struct op_state *s, int *wrong)
{
	int r = oxr_group_rank(g), n = oxr_group_size(g), it = s->iter++;
	oxr_status_t st = OXR_OK;
	oxr_cmo *o;

	*wrong = 0;
	oxr_arena_reset(s->a);
	if (!strcmp(op, "sendrecv")) {
		oxr_rmsg *m = NULL;
		oxr_ox_msg out = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_int32(s->a, r * 1000 + it) };
		if (n == 1)
			return OXR_OK;
		if ((st = oxr_send(g, (r + 1) % n, &out)) ||
		    (st = oxr_recv(g, (r + n - 1) % n, TMO, &m)))
			return st;
		*wrong = m->msg.cmo->tag != OXR_CMO_INT32 ||
			 m->msg.cmo->v.i32 != ((r + n - 1) % n) * 1000 + it;
		oxr_rmsg_free(m);
	} else if (!strcmp(op, "bcast")) {
		int root = it % n;
		o = r == root ? oxr_cmo_new_int32(s->a, 7000 + it) : NULL;
		if ((st = oxr_bcast(g, root, &o, s->a, TMO)))
			return st;
		*wrong = !o || o->tag != OXR_CMO_INT32 || o->v.i32 != 7000 + it;
	} else if (!strcmp(op, "reduce")) {
		oxr_cmo *out = NULL;
		if ((st = oxr_reduce(g, 0, "+", oxr_cmo_new_int32(s->a, r + 1), &out, s->a, TMO)))
			return st;
		*wrong = r == 0 ? (!out || out->tag != OXR_CMO_INT32 || out->v.i32 != n * (n + 1) / 2)
				: (!out || out->tag != OXR_CMO_NULL);
	} else if (!strcmp(op, "barrier")) {
		st = oxr_barrier(s->bar, TMO);
	} else if (!strcmp(op, "crystal")) {
		int32_t v[2] = { r, it };
		oxr_crystal_rec rec;
		int got = 0;
		if ((st = oxr_crystal_pack(s->cr, (r + 1) % n, v, sizeof(v))) ||
		    (st = oxr_crystal_transfer(s->cr, TMO)))
			return st;
		while (oxr_crystal_next(s->cr, &rec) == OXR_OK) {
			const int32_t *w = rec.data;
			got++;
			*wrong |= rec.source != (r + n - 1) % n || rec.len != sizeof(v) ||
				  w[0] != rec.source || w[1] != it;
		}
		*wrong |= got != 1;
	} else if (!strcmp(op, "reset")) {
		int revoker = it % n;
		uint32_t epoch = oxr_group_epoch(g);
		oxr_rmsg *m = NULL;
		if (r == revoker) {
			st = oxr_group_revoke(g);
		} else if ((st = oxr_recv(g, revoker, TMO, &m)) == OXR_OK) {
			fprintf(stderr, "rank %d: a message (tag %u) from rank %d, epoch %u\n", r,
				m->msg.tag, revoker, epoch);
			oxr_rmsg_free(m); /* nobody sends: a message is wrong */
			*wrong = 1;
			return OXR_OK;
		} else if (st == OXR_ERR_REVOKED) {
			st = OXR_OK; /* the revoke came: now the reset */
		}
		if (st || (st = oxr_group_reset(g, TMO)))
			return st;
		/* the next revoker may have revoked the new epoch already */
		if ((*wrong = oxr_group_epoch(g) != epoch + 1))
			fprintf(stderr, "rank %d: epoch %u after the reset from %u\n", r,
				oxr_group_epoch(g), epoch);
	} else {
		fprintf(stderr, "fault_child: unknown OP %s\n", op);
		exit(2);
	}
	return st;
}

/* The transport of the first open link this rank saw after an operation
 * went well (links open on first use and close when peers leave), for the
 * test to check: NULL while none. */
static const char *seen_transport;

static void see_transport(const oxr_group *g)
{
	int p;

	for (p = 0; p < oxr_group_size(g) && !seen_transport; p++)
		if (p != oxr_group_rank(g))
			seen_transport = oxr_link_transport(g, p);
}

static char death_line[48];

static void die_now(int sig)
{
	(void)sig;
	(void)!write(1, death_line, strlen(death_line));
	raise(SIGKILL);
}

/* A victim of the shrink: dies within 0-3 ms, most likely inside it. */
static void arm_shrink_death(void)
{
	struct itimerval t = { .it_value = { .tv_usec = 1 + rand() % 3000 } };

	snprintf(death_line, sizeof(death_line), "victim %d dies in the shrink\n", rank);
	fflush(stdout);
	signal(SIGALRM, die_now);
	setitimer(ITIMER_REAL, &t, NULL);
}

/* victims[0..k): k distinct ranks of n, from the seeded rand(). */
static void pick_victims(int n, int k, int *victims)
{
	int i, j;

	for (i = 0; i < k; i++) {
	again:
		victims[i] = rand() % n;
		for (j = 0; j < i; j++)
			if (victims[j] == victims[i])
				goto again;
	}
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "sendrecv";
	int outside = argc > 2 && !strcmp(argv[2], "outside");
	unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1;
	int k = argc > 3 ? atoi(argv[3]) : outside ? 0 : 1;
	int in_shrink = argc > 4 && !strcmp(argv[4], "shrink");
	long long wait_us = outside ? OUTSIDE_WAIT_US : SELF_WAIT_US;
	struct op_state s = { 0 };
	oxr_boot *b;
	oxr_ctx *c;
	oxr_group *g;
	oxr_status_t st;
	long long start, kill_at;
	int n0, i, shrinks, victims[8], mine = -1, fds0, wrong = 0;
	uint64_t qps, mrs;

	fds0 = count_fds();
	if (oxr_boot_open(&b) || oxr_ctx_create(&c) || oxr_group_boot(c, b, &g) ||
	    oxr_arena_create(&s.a)) {
		fprintf(stderr, "fault_child: start: %s\n", oxr_errmsg());
		return 1;
	}
	rank = oxr_group_rank(g);
	n0 = oxr_group_size(g);
	if (k < 0 || k > 8 || k >= n0) {
		fprintf(stderr, "fault_child: K %d: 0 to 8 victims, fewer than the %d ranks\n", k, n0);
		return 2;
	}
	srand(seed);
	pick_victims(n0, k, victims);
	for (i = 0; i < k; i++)
		if (victims[i] == rank)
			mine = i; /* 0: dies in the operation; more: with `shrink`, in it */
	kill_at = (long long)(rand() % 30000); /* up to 30 ms into the run */
	srand(seed + 7u * (unsigned)rank);     /* each shrink victim its own moment */
	if ((st = make_objects(g, op, &s)))
		die("making the %s objects", op);
	if ((st = oxr_boot_barrier(b)))
		die("barrier");
	start = now_us();
	for (;;) {
		/* a victim whose operation failed first (another died) dies now */
		if (mine >= 0 && (mine == 0 || !in_shrink) && (st || now_us() - start >= kill_at)) {
			printf("victim %d kill at %lld\n", rank, now_us());
			fflush(stdout);
			raise(SIGKILL);
		}
		if (st)
			break;
		st = run_op(g, op, &s, &wrong);
		if (wrong) {
			fprintf(stderr, "rank %d: %s gave a wrong result before the failure\n", rank, op);
			return 1;
		}
		if (st)
			continue;
		see_transport(g);
		if (outside && s.iter == 1) {
			printf("rank %d: %s running\n", rank, op);
			fflush(stdout);
		}
		if (now_us() - start > wait_us) {
			fprintf(stderr, "rank %d: no failure seen in %lld s\n", rank, wait_us / 1000000);
			return 1;
		}
	}
	printf("rank %d: %s failed at %lld (%d): %s\n", rank, op, now_us(), st, oxr_errmsg());
	fflush(stdout);
	if (mine > 0)
		arm_shrink_death();
	/* until the group is the survivors (a victim that died after the
	 * agreement counted it in: its death revokes the shrunk group, and the
	 * operation, run until it fails, ends: shrink again) */
	for (shrinks = 1;; shrinks++) {
		drop_objects(&s);
		if ((st = oxr_group_shrink(g, TMO)))
			die("shrink");
		if (mine > 0)
			die_now(SIGKILL); /* the shrink was quicker than the timer */
		s.iter = 0; /* the ranks failed in different iterations: count afresh */
		start = now_us();
		/* making a barrier or a router is collective: it fails as well */
		if (!(st = make_objects(g, op, &s)))
			do
				st = run_op(g, op, &s, &wrong);
			while (!st && !wrong && !outside && oxr_group_size(g) > n0 - k &&
			       now_us() - start < wait_us);
		if (wrong || (!st && !outside && oxr_group_size(g) > n0 - k) || (st && shrinks > k)) {
			fprintf(stderr, "rank %d: %s on the shrunk group of %d (shrink %d): %s%s\n",
				rank, op, oxr_group_size(g), shrinks, st ? oxr_errmsg() : "",
				wrong ? "a wrong result" : "a victim did not die");
			return 1;
		}
		if (!st)
			break;
	}
	see_transport(g);
	printf("rank %d: %s recovered over %s\n", rank, op,
	       seen_transport ? seen_transport : "no link");
	printf("rank %d: now %d of %d after %d shrinks\n", rank, oxr_group_size(g), n0, shrinks);
	drop_objects(&s);
	oxr_arena_destroy(s.a);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
	oxr_boot_close(b);
	oxr_verbs_objects(&qps, &mrs);
	if (count_fds() <= fds0 && qps == 0 && mrs == 0)
		printf("rank %d: nothing leaked\n", rank);
	else
		fprintf(stderr, "rank %d: %d file descriptors before, %d after; %llu queue pairs and "
			"%llu memory registrations left\n", rank, fds0, count_fds(),
			(unsigned long long)qps, (unsigned long long)mrs);
	return 0;
}
