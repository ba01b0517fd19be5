/* SPDX-License-Identifier: MIT */
/*
 * Shrink after a kill -9:
 *   oxr-run --survive -n N bench_shrink [KILLS [TIMEOUT_MS]]
 * Each round (KILLS of them, default 1): every rank but 0 tells rank 0 it
 * is about to wait (the first round after the bootstrap's barrier: an eager
 * boot of 1,024 ranks on 2 cores ends on some ranks a minute before others,
 * and a wait must not end before the kill); rank 0 then gives the victim (rank n/2 of the group as
 * it is now, never rank 0) a moment T on CLOCK_MONOTONIC a few ms ahead,
 * and the victim sleeps until T and SIGKILLs itself.  The others wait for a
 * message that never comes (rank 0 on rank n-1, the rest on rank 0): the
 * victim's broken links revoke the group, every wait fails (OXR_ERR_PEER or
 * OXR_ERR_REVOKED) and each survivor calls oxr_group_shrink.  The ranks
 * share one machine, so CLOCK_MONOTONIC is one clock for all: detect = the
 * last survivor's failed wait - T; shrink = the last survivor's return from
 * oxr_group_shrink - T (the figure issue 22 asks for); shrink alone = that
 * return - the first failed wait.  T, not the victim's own clock reading:
 * a dead rank tells nobody when it died; the victim prints how late it woke.
 * Per rank, over the round (oxr_group_counters): REVOKE frames sent,
 * handshakes (the links the round opened: the agreement's tree, the
 * reset's partners), links open after it, and shrink frames sent (reports,
 * decisions, and a fence per open link), and the CPU time it spent from
 * its wait to its return from oxr_group_shrink (its own work: wall time on
 * an oversubscribed machine counts the other ranks' turns too).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "oxr/oxr.h"
#include "oxr/boot.h"
#include "oxr/transport.h"

#define AHEAD_US 5000.0 /* T after the last rank said it waits: the victim has its T by then */

enum { T_FAIL, T_END, F_REVOKES, F_HANDSHAKES, F_LINKS, F_SHRINK, F_CPU, F_N };
enum { NF = F_N - F_REVOKES }; /* the per-rank counts */

static void die(const char *what, oxr_status_t st)
{
	fprintf(stderr, "bench_shrink: %s: %s (%s)\n", what, oxr_strerror(st), oxr_errmsg());
	exit(1);
}

static void send_doubles(oxr_group *g, oxr_arena *a, int peer, const double *v, size_t n)
{
	oxr_ox_msg out = { .tag = OXR_OX_DATA };
	oxr_status_t st;

	oxr_arena_reset(a);
	out.cmo = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, v, n * sizeof(*v));
	if ((st = out.cmo ? oxr_send(g, peer, &out) : OXR_ERR_NOMEM))
		die("send", st);
}

static void recv_doubles(oxr_group *g, int peer, int tmo, double *v, size_t n)
{
	oxr_rmsg *m;
	oxr_status_t st;

	if ((st = oxr_recv(g, peer, tmo, &m)))
		die("recv", st);
	if (!m->msg.cmo || m->msg.cmo->tag != OXR_CMO_DATUM || m->msg.cmo->len != n * sizeof(*v)) {
		fprintf(stderr, "bench_shrink: a malformed message from rank %d\n", peer);
		exit(1);
	}
	memcpy(v, m->msg.cmo->data, n * sizeof(*v));
	oxr_rmsg_free(m);
}

/* The victim: sleeps until T (absolute, so a late wake-up shows) and dies. */
static void die_at(double t_us, int rank, int n)
{
	struct timespec ts = { .tv_sec = (time_t)(t_us / 1e6),
			       .tv_nsec = (long)((t_us - (double)(time_t)(t_us / 1e6) * 1e6) * 1e3) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
	printf("bench_shrink: victim rank %d of %d: SIGKILL %.0f us after T\n", rank, n,
	       oxr_bench_now_us() - t_us);
	fflush(stdout);
	raise(SIGKILL);
}

static double maxf(double a, double b) { return a > b ? a : b; }

int main(int argc, char **argv)
{
	int kills = argc > 1 ? atoi(argv[1]) : 1, tmo = argc > 2 ? atoi(argv[2]) : 60000, k, p,
	    n0;
	oxr_boot *b;
	oxr_ctx *c;
	oxr_group *g;
	oxr_arena *a;
	oxr_status_t st;
	double *detect, *shrink, *alone, fr[NF][2] = { { 0 } }; /* max, sum over rounds' ranks */
	oxr_group_counters c0, c1;

	if ((st = oxr_boot_open(&b)) || (st = oxr_ctx_create(&c)) || (st = oxr_group_boot(c, b, &g)) ||
	    (st = oxr_arena_create(&a)))
		die("start", st);
	n0 = oxr_group_size(g);
	detect = calloc((size_t)(kills > 0 ? kills : 1), sizeof(*detect));
	shrink = calloc((size_t)(kills > 0 ? kills : 1), sizeof(*shrink));
	alone = calloc((size_t)(kills > 0 ? kills : 1), sizeof(*alone));
	/* each round needs rank 0, the victim and rank n-1 (rank 0 waits on it) */
	if (kills < 1 || n0 < kills + 2 || tmo < 1 || !detect || !shrink || !alone) {
		fprintf(stderr, "bench_shrink: needs KILLS >= 1, KILLS + 2 ranks or more, "
				"TIMEOUT_MS >= 1\n");
		return 2;
	}
	for (k = 0; k < kills; k++) {
		int rank = oxr_group_rank(g), n = oxr_group_size(g), victim = n / 2;
		double v[F_N] = { 0 }, t_kill = 0, u, cpu0;
		oxr_rmsg *m = NULL;

		if (k == 0 && (st = oxr_boot_barrier(b)))
			die("bootstrap barrier", st);
		if ((st = oxr_group_stats(g, &c0)))
			die("stats", st);
		if (rank) {
			u = 0;
			send_doubles(g, a, 0, &u, 1);
		} else {
			for (p = 1; p < n; p++)
				recv_doubles(g, p, tmo, &u, 1);
			t_kill = oxr_bench_now_us() + AHEAD_US;
			send_doubles(g, a, victim, &t_kill, 1);
		}
		if (rank == victim) {
			recv_doubles(g, 0, tmo, &u, 1);
			die_at(u, rank, n);
		}
		cpu0 = oxr_bench_cpu_us();
		st = oxr_recv(g, rank ? 0 : n - 1, tmo, &m);
		v[T_FAIL] = oxr_bench_now_us();
		if (st != OXR_ERR_PEER && st != OXR_ERR_REVOKED)
			die(st == OXR_ERR_TIMEOUT ? "no failure seen within TIMEOUT_MS of saying it waits "
				"(the kill comes a few ms after the last rank said so)" :
				"the wait did not end with the victim's failure", st ? st : OXR_ERR_PROTO);
		if ((st = oxr_group_shrink(g, tmo)))
			die("shrink", st);
		v[T_END] = oxr_bench_now_us();
		v[F_CPU] = oxr_bench_cpu_us() - cpu0;
		if (oxr_group_size(g) != n - 1) { /* survivors that gave up count as dead */
			fprintf(stderr, "bench_shrink: rank %d: %d ranks after the shrink, not %d\n",
				rank, oxr_group_size(g), n - 1);
			return 1;
		}
		if ((st = oxr_group_stats(g, &c1)))
			die("stats", st);
		v[F_REVOKES] = (double)(c1.revokes_sent - c0.revokes_sent);
		v[F_HANDSHAKES] = (double)(c1.handshakes - c0.handshakes);
		v[F_LINKS] = c1.links_open;
		v[F_SHRINK] = (double)(c1.shrink_frames - c0.shrink_frames);
		/* the old rank 0 is the new one: the victim is never rank 0 */
		if (oxr_group_rank(g)) {
			send_doubles(g, a, 0, v, F_N);
			continue;
		}
		{
			double last_fail = v[T_FAIL], first_fail = v[T_FAIL], end = v[T_END], w[F_N];
			int f;
			for (f = 0; f < NF; f++)
				fr[f][0] = maxf(fr[f][0], v[F_REVOKES + f]), fr[f][1] += v[F_REVOKES + f];
			for (p = 1; p < n - 1; p++) {
				recv_doubles(g, p, tmo, w, F_N);
				last_fail = maxf(last_fail, w[T_FAIL]);
				first_fail = w[T_FAIL] < first_fail ? w[T_FAIL] : first_fail;
				end = maxf(end, w[T_END]);
				for (f = 0; f < NF; f++)
					fr[f][0] = maxf(fr[f][0], w[F_REVOKES + f]),
					fr[f][1] += w[F_REVOKES + f];
			}
			detect[k] = last_fail - t_kill;
			shrink[k] = end - t_kill;
			alone[k] = end - first_fail;
		}
	}
	if (oxr_group_rank(g) == 0) {
		struct oxr_bench_row row = { .bench = "shrink_detect", .impl = "oxr", .ranks = n0,
					     .unit = "us" };
		double ranks = 0; /* survivors summed over the rounds, for the means */
		for (k = 0; k < kills; k++)
			ranks += n0 - 1 - k;
		if (oxr_bench_emit_sorted(&row, detect, (size_t)kills))
			return 1;
		row.bench = "shrink";
		if (oxr_bench_emit_sorted(&row, shrink, (size_t)kills))
			return 1;
		qsort(alone, (size_t)kills, sizeof(*alone), oxr_bench_cmp_double);
		printf("shrink %-5s ranks %4d  kills %3d  detect median %9.1f us max %9.1f us  "
		       "shrink median %9.1f us max %9.1f us (alone median %9.1f us)  revoke frames a "
		       "rank max %.0f mean %.2f  handshakes a rank max %.0f mean %.1f  links after "
		       "max %.0f mean %.1f  shrink frames a rank max %.0f mean %.1f  cpu a rank max "
		       "%.0f us mean %.1f us (%s)\n",
		       oxr_ctx_transport(c), n0, kills, detect[kills / 2], detect[kills - 1],
		       shrink[kills / 2], shrink[kills - 1], alone[kills / 2], fr[0][0],
		       fr[0][1] / ranks, fr[1][0], fr[1][1] / ranks, fr[2][0], fr[2][1] / ranks,
		       fr[3][0], fr[3][1] / ranks, fr[4][0], fr[4][1] / ranks,
		       oxr_group_links_on_demand(g) ? "links on demand" : "eager links");
		fflush(stdout);
	}
	free(detect);
	free(shrink);
	free(alone);
	oxr_arena_destroy(a);
	oxr_group_destroy(g);
	oxr_ctx_destroy(c);
	oxr_boot_close(b);
	return 0;
}
