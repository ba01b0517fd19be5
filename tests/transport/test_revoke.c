/* SPDX-License-Identifier: MIT */
/*
 * Revoke and reset on a linked pair, and on whole groups of real processes
 * under oxr-run (revoke_child.c), each test once per provider (tcp, and
 * verbs where there is an RDMA device; OXR_TEST_PROVIDERS picks:
 * common/providers.h): a revoke fails pending
 * and later operations with OXR_ERR_REVOKED naming who revoked, floods the
 * group once, and a reset gives a new epoch where nothing of the old one
 * is delivered: no message, no put, no revoke; a killed rank revokes the
 * group for every survivor, and the survivors shrink to a working group.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "frames.h" /* the transport's private frame tags: forged frames */
#include "link_pair.h"
#include "run_child.h"

TestSuite(revoke_per_provider, .timeout = 300);

#define RUN OXR_BIN_DIR "/oxr-run"
#define CHILD OXR_BIN_DIR "/revoke_child"

static void pair_up(struct pair *p, const struct provider *pv)
{
	make_pair_on(p, pv, 2, "little", "little");
	cr_assert_eq(link_up(p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(p->st_accept, OXR_OK, "%s", p->err_accept);
}

static oxr_status_t send_int(oxr_group *g, int peer, int32_t v)
{
	oxr_arena *a;
	oxr_ox_msg m = { .tag = OXR_OX_DATA };
	oxr_status_t st;

	oxr_arena_create(&a);
	m.cmo = oxr_cmo_new_int32(a, v);
	st = oxr_send(g, peer, &m);
	oxr_arena_destroy(a);
	return st;
}

static oxr_status_t recv_int(oxr_group *g, int peer, int32_t *v)
{
	oxr_rmsg *m = NULL;
	oxr_status_t st = oxr_recv(g, peer, 10000, &m);

	if (st == OXR_OK) {
		cr_assert_eq(m->msg.cmo->tag, OXR_CMO_INT32);
		*v = m->msg.cmo->v.i32;
		oxr_rmsg_free(m);
	}
	return st;
}


PROVIDER_TEST(revoke, a_revoke_fails_the_peers_pending_receive_and_a_reset_restores_the_group)
{
	struct pair p;
	struct side b;
	const char *why;
	pthread_t t;
	int32_t v = 0;

	pair_up(&p, pv);
	cr_assert_eq(oxr_group_id(p.a), oxr_group_id(p.b), "one group, one id");
	cr_assert_neq(oxr_group_id(p.a), 0);
	b = (struct side){ .g = p.b, .timeout_ms = 20000 };
	pthread_create(&t, NULL, blocked_recv, &b); /* rank 1 waits for what never comes */
	usleep(100000);
	cr_assert_eq(oxr_group_revoke(p.a), OXR_OK);
	pthread_join(t, NULL);
	cr_assert_eq(b.st, OXR_ERR_REVOKED, "the pending receive fails: %d %s", b.st, b.err);
	cr_assert(strstr(b.err, "revoked by rank 0"), "and says who: %s", b.err);
	cr_assert(oxr_group_revoked(p.b, &why) && strstr(why, "rank 0"), "rank 1 knows");
	cr_assert_eq(send_int(p.a, 1, 1), OXR_ERR_REVOKED, "later sends fail");
	cr_assert_eq(send_int(p.b, 0, 1), OXR_ERR_REVOKED);
	cr_assert_eq(oxr_group_revoke(p.b), OXR_OK, "a second revoke is nothing");
	reset_both(&p);
	cr_assert_eq(oxr_group_epoch(p.a), 1);
	cr_assert_eq(oxr_group_epoch(p.b), 1);
	cr_assert(!oxr_group_revoked(p.a, NULL) && !oxr_group_revoked(p.b, NULL));
	cr_assert_eq(send_int(p.a, 1, 42), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(recv_int(p.b, 0, &v), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(v, 42);
	cr_assert_eq(send_int(p.b, 0, 43), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(recv_int(p.a, 1, &v), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(v, 43);
	free_pair(&p);
}

/* A request the revoke ended says so each time it is asked, whatever
 * failed in between: the receive it was and who revoked. */
PROVIDER_TEST(revoke, a_revoked_request_names_itself_and_who_revoked)
{
	struct pair p;
	oxr_req *r = NULL;
	int done = 0, i;

	pair_up(&p, pv);
	cr_assert_eq(oxr_irecv(p.b, 0, &r), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_group_revoke(p.a), OXR_OK);
	for (i = 0; i < 20000 && !done; i++) {
		if (oxr_req_test(r, &done) && !done)
			break;
		if (!done)
			usleep(100);
	}
	cr_assert(done, "the pending receive completes once the revoke arrives");
	cr_assert_eq(send_int(p.b, 0, 1), OXR_ERR_REVOKED, "another call fails meanwhile");
	cr_assert_eq(oxr_req_test(r, &done), OXR_ERR_REVOKED);
	cr_assert(strstr(oxr_errmsg(), "receive from rank 0") &&
		  strstr(oxr_errmsg(), "revoked by rank 0"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_req_wait(r, 1000), OXR_ERR_REVOKED);
	oxr_req_free(r);
	free_pair(&p);
}

/* Messages sent in epoch 0 and never taken are gone after the reset: the
 * first message of epoch 1 is the first one delivered. */
PROVIDER_TEST(revoke, messages_of_the_old_epoch_are_never_delivered_after_a_reset)
{
	struct pair p;
	int32_t v = 0;
	int i;

	pair_up(&p, pv);
	for (i = 0; i < 20; i++)
		cr_assert_eq(send_int(p.b, 0, 1000 + i), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(recv_int(p.a, 1, &v), OXR_OK);
	cr_assert_eq(v, 1000, "epoch 0 works");
	reset_both(&p);
	cr_assert_eq(send_int(p.b, 0, 7), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(recv_int(p.a, 1, &v), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(v, 7, "the first message after the reset is of epoch 1, not %d", v);
	/* and twice more, with a revoke in between */
	for (i = 0; i < 5; i++)
		cr_assert_eq(send_int(p.a, 1, 2000 + i), OXR_OK);
	cr_assert_eq(oxr_group_revoke(p.b), OXR_OK);
	reset_both(&p);
	cr_assert_eq(oxr_group_epoch(p.b), 2);
	cr_assert_eq(send_int(p.a, 1, 8), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(recv_int(p.b, 0, &v), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(v, 8, "epoch 2's first, not %d", v);
	free_pair(&p);
}

/* A REVOKE frame as a peer would send it: LIST [gid_hi, gid_lo, epoch, origin, -1]. */
static oxr_status_t forge_revoke(oxr_group *g, int peer, uint64_t gid, uint32_t epoch,
				 int origin)
{
	int32_t v[5] = { (int32_t)(uint32_t)(gid >> 32), (int32_t)(uint32_t)gid, (int32_t)epoch,
			 origin, -1 };
	oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_REVOKE };
	oxr_arena *a;
	oxr_status_t st;
	int i;

	oxr_arena_create(&a);
	m.cmo = oxr_cmo_new_list(a, 5);
	for (i = 0; i < 5; i++)
		m.cmo->kids[i] = oxr_cmo_new_int32(a, v[i]);
	st = oxr_send(g, peer, &m);
	oxr_arena_destroy(a);
	return st;
}

PROVIDER_TEST(revoke, revokes_of_a_dead_epoch_or_another_group_are_dropped)
{
	struct pair p;
	int32_t v = 0;

	pair_up(&p, pv);
	reset_both(&p); /* epoch 1 */
	cr_assert_eq(forge_revoke(p.b, 0, oxr_group_id(p.b), 0, 1), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(forge_revoke(p.b, 0, oxr_group_id(p.b) ^ 1, 1, 1), OXR_OK);
	cr_assert_eq(send_int(p.b, 0, 5), OXR_OK);
	cr_assert_eq(recv_int(p.a, 1, &v), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(v, 5);
	cr_assert(!oxr_group_revoked(p.a, NULL), "epoch 0's and another group's revoke dropped");
	cr_assert_eq(forge_revoke(p.b, 0, oxr_group_id(p.b), 1, 1), OXR_OK);
	cr_assert_eq(recv_int(p.a, 1, &v), OXR_ERR_REVOKED, "the current epoch's revoke counts");
	cr_assert(oxr_group_revoked(p.a, NULL));
	free_pair(&p);
}

struct win_side {
	oxr_group *g;
	oxr_win *w;
	uint8_t mem[256];
	oxr_status_t st;
};

static void *make_win(void *arg)
{
	struct win_side *s = arg;

	s->st = oxr_win_create(s->g, 9, s->mem, sizeof(s->mem), 10000, &s->w);
	return NULL;
}

/* Window 9 on both ranks of the pair (made at once: each waits for the other's). */
static void make_wins(struct pair *p, struct win_side *a, struct win_side *b)
{
	pthread_t t;

	*a = (struct win_side){ .g = p->a };
	*b = (struct win_side){ .g = p->b };
	pthread_create(&t, NULL, make_win, a);
	make_win(b);
	pthread_join(t, NULL);
	cr_assert_eq(a->st, OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(b->st, OXR_OK, "%s", oxr_errmsg());
}

/* Windows: a put is refused once revoked, and after the reset the window
 * works again with the new epoch; a put frame of the old epoch never lands. */
PROVIDER_TEST(revoke, windows_refuse_puts_when_revoked_and_work_again_after_the_reset)
{
	struct pair p;
	struct win_side a, b;
	oxr_win_note n;
	uint8_t x[16];
	uint64_t refused;

	pair_up(&p, pv);
	make_wins(&p, &a, &b);
	memset(x, 1, sizeof(x));
	cr_assert_eq(oxr_put(p.b, 0, 9, 0, x, sizeof(x), 1), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(a.w, 10000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(a.mem[0], 1);
	cr_assert_eq(oxr_group_revoke(p.b), OXR_OK);
	memset(x, 2, sizeof(x));
	cr_assert_eq(oxr_put(p.b, 0, 9, 0, x, sizeof(x), 2), OXR_ERR_REVOKED, "a revoked put");
	cr_assert_eq(oxr_win_wait(a.w, 10000, &n), OXR_ERR_REVOKED, "the target's wait fails");
	cr_assert_eq(a.mem[0], 1, "nothing landed");
	reset_both(&p);
	memset(x, 3, sizeof(x));
	cr_assert_eq(oxr_put(p.b, 0, 9, 16, x, sizeof(x), 3), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(a.w, 10000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 3, "the note of epoch 1, not an old one");
	cr_assert_eq(a.mem[16], 3);
	/* a put frame still claiming epoch 0 is refused at the target */
	refused = oxr_group_puts_refused(p.a);
	{
		int32_t v[5] = { 9, 0, 0, 32, 4 };
		oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_PUT };
		oxr_arena *ar;
		int i;
		oxr_arena_create(&ar);
		m.cmo = oxr_cmo_new_list(ar, 6);
		for (i = 0; i < 5; i++)
			m.cmo->kids[i] = oxr_cmo_new_int32(ar, v[i]);
		m.cmo->kids[5] = oxr_cmo_new_bytes(ar, OXR_CMO_DATUM, x, 8);
		cr_assert_eq(oxr_send(p.b, 0, &m), OXR_OK);
		oxr_arena_destroy(ar);
	}
	cr_assert_eq(send_int(p.b, 0, 1), OXR_OK); /* behind it on the link */
	{
		int32_t v;
		cr_assert_eq(recv_int(p.a, 1, &v), OXR_OK);
	}
	cr_assert_eq(oxr_group_puts_refused(p.a), refused + 1, "the stale put was refused");
	cr_assert_eq(a.mem[32], 0, "and did not land");
	oxr_win_destroy(a.w);
	oxr_win_destroy(b.w);
	free_pair(&p);
}

/* A destroyed window's descriptor is dropped at its peers (collectives make
 * a window per object): made and destroyed 40 times, the peers hold one
 * descriptor while it lives and none after. */
PROVIDER_TEST(revoke, a_destroyed_window_is_forgotten_by_its_peers)
{
	struct pair p;
	struct win_side a, b;
	oxr_group_counters ca, cb;
	int i;

	pair_up(&p, pv);
	for (i = 0; i < 40; i++) {
		make_wins(&p, &a, &b);
		cr_assert_eq(oxr_group_stats(p.b, &cb), OXR_OK);
		cr_assert_eq(cb.window_descs, 1, "round %d: rank 1 holds %u descriptors", i,
			     cb.window_descs);
		oxr_win_destroy(a.w);
		oxr_win_destroy(b.w);
	}
	/* both ranks read what is left (one thread drives both: a blocking send
	 * could wait on the other's credits on verbs); 10 s at most */
	for (i = 0; i < 10000; i++) {
		cr_assert_eq(oxr_group_progress(p.a), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(oxr_group_progress(p.b), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(oxr_group_stats(p.a, &ca), OXR_OK);
		cr_assert_eq(oxr_group_stats(p.b, &cb), OXR_OK);
		if (ca.window_descs + cb.window_descs == 0)
			break;
		usleep(1000);
	}
	cr_assert_eq(ca.window_descs + cb.window_descs, 0, "descriptors left: %u and %u",
		     ca.window_descs, cb.window_descs);
	free_pair(&p);
}

/* A rank killed with SIGKILL: every survivor's wait ends with an error
 * naming it, even waits on live ranks (the failure revoked the group). */
PROVIDER_TEST(revoke, a_killed_rank_revokes_the_group_for_every_survivor)
{
	int n;

	for (n = 2; n <= 6; n += 2) {
		char nbuf[16], line[64];
		const char *argv[] = { RUN, "-n", nbuf, "--", CHILD, "kill", NULL };
		const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
		struct run r;
		int i;

		snprintf(nbuf, sizeof(nbuf), "%d", n);
		r = spawn_run(argv, env, NULL, 120);
		cr_assert_neq(r.rc, 0, "oxr-run reports the killed rank");
		cr_assert(strstr(r.err, "killed by signal 9"), "%s", r.err);
		for (i = 0; i < n - 1; i++) {
			snprintf(line, sizeof(line), "rank %d: failure ok", i);
			cr_assert_eq(count_of(r.out, line), 1, "'%s' in:\n%s\nstderr:\n%s", line, r.out,
				     r.err);
		}
		cr_log_info("%d ranks:\n%s", n, r.out);
		run_free(&r);
	}
}

/* The survivors of a killed rank shrink to a renumbered group in epoch 1,
 * where a ring and puts into a new window work. */
PROVIDER_TEST(revoke, survivors_shrink_to_a_renumbered_group_that_works)
{
	int n;

	for (n = 2; n <= 8; n += 3) {
		char nbuf[16], line[64];
		/* --survive: without it oxr-run stops the survivors a second after
		 * the kill, which a slow machine (TCG) needs for the shrink itself */
		const char *argv[] = { RUN, "--survive", "-n", nbuf, "--", CHILD, "shrink", NULL };
		const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
		struct run r;
		int i;

		snprintf(nbuf, sizeof(nbuf), "%d", n);
		r = spawn_run(argv, env, NULL, 120);
		cr_assert(strstr(r.err, "killed by signal 9"), "%s", r.err);
		for (i = 0; i < n; i++) {
			if (i == n / 2)
				continue;
			snprintf(line, sizeof(line), "rank %d: shrink ok (now %d of %d)", i,
				 i < n / 2 ? i : i - 1, n - 1);
			cr_assert_eq(count_of(r.out, line), 1, "'%s' in:\n%s\nstderr:\n%s", line, r.out,
				     r.err);
		}
		run_free(&r);
	}
}

/* A rank stopped (SIGSTOP) breaks no link; the heartbeat finds it, every
 * survivor fails naming it, and they shrink to a group that works.  Two
 * stopped at once (a host powered off): one watcher finds both, the second
 * only during the shrink, and the others learn it from its report (or
 * watch it themselves, when they wait on it in the agreement). */
PROVIDER_TEST(revoke, the_heartbeat_finds_stopped_ranks_and_the_survivors_shrink)
{
	static const int cases[][2] = { { 2, 1 }, { 5, 1 }, { 5, 2 } };
	size_t c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int n = cases[c][0], k = cases[c][1], i;
		char nbuf[16], kbuf[16], line[64];
		const char *argv[] = { RUN, "--survive", "-n", nbuf, "--", CHILD, "stop", kbuf, NULL };
		const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", "OXR_HEARTBEAT_MS=400", NULL };
		struct run r;

		snprintf(nbuf, sizeof(nbuf), "%d", n);
		snprintf(kbuf, sizeof(kbuf), "%d", k);
		r = spawn_run(argv, env, NULL, 120);
		for (i = 0; i < n - k; i++) {
			snprintf(line, sizeof(line), "rank %d: heartbeat ok", i);
			cr_assert_eq(count_of(r.out, line), 1, "%d stopped, '%s' in:\n%s\nstderr:\n%s", k,
				     line, r.out, r.err);
		}
		/* a ring detector: rank 0 alone watches the last rank */
		cr_assert_eq(count_of(r.out, ": found it"), 1, "one heartbeat saw the silence:\n%s",
			     r.out);
		cr_assert_eq(count_of(r.out, "rank 0: found it"), 1, "its watcher, rank 0:\n%s",
			     r.out);
		cr_assert_eq(count_of(r.err, "killed by signal 9"), k,
			     "rank 0 ended the %d stopped ranks: %s", k, r.err);
		cr_log_info("%d ranks, %d stopped:\n%s", n, k, r.out);
		run_free(&r);
	}
}

/* 16 ranks wait on the revoker while it revokes and resets at once: every
 * wait ends revoked (with links on demand the revoker's reset ball reached
 * them before the revoke did, and was handed out as a message). */
PROVIDER_TEST(revoke, a_wait_on_the_revoker_ends_revoked_not_with_its_reset_ball)
{
	const char *argv[] = { RUN, "-n", "16", "--", CHILD, "revoker", NULL };
	const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
	struct run r = spawn_run(argv, env, NULL, 120);
	int i;

	for (i = 0; i < 16; i++) {
		char line[48];
		snprintf(line, sizeof(line), "rank %d: revoker ok", i);
		cr_assert_eq(count_of(r.out, line), 1, "'%s' in:\n%s\nstderr:\n%s", line, r.out,
			     r.err);
	}
	run_free(&r);
}

/* 12 idle ranks with the heartbeat on: nobody is taken for dead, and each
 * sends at most a ping and an answer per H/3 (the ring), not a beat per
 * link: the bound does not grow with the group. */
PROVIDER_TEST(revoke, an_idle_group_beats_round_a_ring_not_on_every_link)
{
	const int n = 12, h = 600, ms = 2000, most = 2 * (ms / (h / 3) + 2);
	const char *argv[] = { RUN, "-n", "12", "--", CHILD, "idle", "2000", NULL };
	const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", "OXR_HEARTBEAT_MS=600", NULL };
	struct run r = spawn_run(argv, env, NULL, 120);
	int i;

	for (i = 0; i < n; i++) {
		char line[64];
		const char *at;
		unsigned long long beats;
		snprintf(line, sizeof(line), "rank %d: idle ok, ", i);
		at = strstr(r.out, line);
		cr_assert(at, "'%s' in:\n%s\nstderr:\n%s", line, r.out, r.err);
		beats = strtoull(at + strlen(line), NULL, 10);
		cr_assert(beats >= 1 && beats <= (unsigned long long)most,
			  "rank %d sent %llu heartbeat frames in %d ms (H = %d; at most %d):\n%s", i,
			  beats, ms, h, most, r.out);
	}
	cr_log_info("%s", r.out);
	run_free(&r);
}

/* Whole groups: one rank revokes while every other waits for a message
 * that never comes; each must see the revoke, then all reset and pass a
 * token round the ring in epoch 1. */
PROVIDER_TEST(revoke, a_revoke_floods_groups_of_2_to_8_ranks_and_they_reset)
{
	int n;

	for (n = 2; n <= 8; n++) {
		char nbuf[16], line[64];
		const char *argv[] = { RUN, "-n", nbuf, "--", CHILD, NULL };
		const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
		struct run r;
		int i;

		snprintf(nbuf, sizeof(nbuf), "%d", n);
		r = spawn_run(argv, env, NULL, 120);
		cr_assert_eq(r.rc, 0, "%d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", n, r.rc, r.out,
			     r.err);
		for (i = 0; i < n; i++) {
			snprintf(line, sizeof(line), "rank %d: revoke ok", i);
			cr_assert_eq(count_of(r.out, line), 1, "'%s' in:\n%s", line, r.out);
		}
		run_free(&r);
	}
}
