/* SPDX-License-Identifier: MIT */
/*
 * Ranks on distinct hosts without VMs: each rank in its own network
 * namespace (ip netns), joined to the root namespace by a veth on a bridge,
 * so the TCP backend and the oxr-run bootstrap cross a real network stack
 * between distinct addresses (10.77.S.1.., the rendezvous on 10.77.S.254).
 * group_child pairs checks every object's value and the order of arrival
 * on every ordered pair.  The netem case adds delay, jitter and loss on
 * every rank's interface (needs sch_netem: the rxe guest's kernel has it,
 * label guest).  Needs root (CAP_NET_ADMIN); without it the test fails
 * saying so.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_child.h"

#define RUN OXR_BIN_DIR "/oxr-run"
#define CHILD OXR_BIN_DIR "/group_child"
#define MAXN 4

struct net {
	int n, sub, id;
	char br[16];
};

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void teardown(struct net *t)
{
	int i;

	for (i = 0; i < t->n; i++)
		sh("ip netns del oxn%d_%d 2>/dev/null", t->id, i);
	sh("ip link del %s 2>/dev/null", t->br);
}

/* A failed step takes down what was made before it fails the test. */
#define NEED(cond, ...)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			teardown(t);                                                               \
			cr_assert_fail(__VA_ARGS__);                                               \
		}                                                                                  \
	} while (0)

static void setup(struct net *t, int n, const char *netem)
{
	int i;

	t->n = n;
	t->id = getpid() % 100000;
	t->sub = 100 + getpid() % 150;
	snprintf(t->br, sizeof(t->br), "oxb%d", t->id);
	NEED(!sh("ip link add %s type bridge && ip addr add 10.77.%d.254/24 dev %s && "
			"ip link set %s up", t->br, t->sub, t->br, t->br),
		     "cannot make a bridge: this test needs root (CAP_NET_ADMIN) and ip(8)");
	for (i = 0; i < n; i++) {
		NEED(!sh("ip netns add oxn%d_%d && "
				"ip link add oxh%d_%d type veth peer name oxp%d_%d && "
				"ip link set oxp%d_%d netns oxn%d_%d && "
				"ip link set oxh%d_%d master %s up && "
				"ip -n oxn%d_%d link set oxp%d_%d name eth0 && "
				"ip -n oxn%d_%d addr add 10.77.%d.%d/24 dev eth0 && "
				"ip -n oxn%d_%d link set eth0 up && ip -n oxn%d_%d link set lo up",
				t->id, i, t->id, i, t->id, i, t->id, i, t->id, i, t->id, i, t->br,
				t->id, i, t->id, i, t->id, i, t->sub, i + 1, t->id, i, t->id, i),
			     "cannot make namespace %d (ip netns, veth)", i);
		if (netem)
			NEED(!sh("ip netns exec oxn%d_%d tc qdisc add dev eth0 root netem %s",
					t->id, i, netem),
				     "tc netem %s failed: this kernel has no sch_netem (the rxe guest "
				     "runs this case)", netem);
	}
}

/* group_child MODE ARG in n namespaces; returns what oxr-run gave. */
static struct run run_in(struct net *t, const char *arg, const char *const *env)
{
	char addr[32], nbuf[8], script[512];
	const char *argv[] = { RUN, "--addr", addr, "-n", nbuf, "--", "/bin/sh", "-c", script, NULL };

	snprintf(addr, sizeof(addr), "10.77.%d.254", t->sub);
	snprintf(nbuf, sizeof(nbuf), "%d", t->n);
	/* each rank enters its namespace and tells the others its own address */
	snprintf(script, sizeof(script),
		 "exec ip netns exec oxn%d_$OXR_RUN_RANK env OXR_HOST=10.77.%d.$((OXR_RUN_RANK+1)) "
		 "%s pairs %s", t->id, t->sub, CHILD, arg);
	return spawn_run(argv, env, NULL, 300);
}

static void check_pairs(struct net *t, struct run *r)
{
	char line[96];
	int i;

	cr_assert_eq(r->rc, 0, "oxr-run: %d\nstdout:\n%s\nstderr:\n%.3000s", r->rc, r->out, r->err);
	for (i = 0; i < t->n; i++) {
		snprintf(line, sizeof(line), "rank %d: pairs ok", i);
		cr_assert_eq(count_of(r->out, line), 1, "'%s' in:\n%s", line, r->out);
	}
	/* the links ran between the namespaces' addresses, not over loopback */
	snprintf(line, sizeof(line), "(10.77.%d.", t->sub);
	cr_assert_geq(count_of(r->err, line), t->n * (t->n - 1) / 2, "link lines:\n%.3000s", r->err);
	cr_assert_eq(count_of(r->err, "(127.0.0.1:"), 0, "no link over loopback:\n%.3000s", r->err);
}

Test(netns, four_ranks_in_four_namespaces_exchange_every_pair, .timeout = 300)
{
	const char *env[] = { "OXR_LOG_LEVEL=info", "OXR_TRANSPORT=tcp", NULL };
	struct net t;
	struct run r;

	t.n = 0;
	setup(&t, MAXN, NULL);
	r = run_in(&t, "4", env);
	teardown(&t);
	check_pairs(&t, &r);
	cr_log_info("%s", r.out);
	run_free(&r);
}

Test(netem, delay_jitter_and_loss_lose_and_reorder_nothing, .timeout = 600)
{
	const char *env[] = { "OXR_LOG_LEVEL=info", "OXR_TRANSPORT=tcp", "OXR_TEST_BIG_MAX=262144",
			      NULL };
	struct net t;
	struct run r;

	t.n = 0;
	setup(&t, 3, "delay 3ms 2ms loss 2%");
	r = run_in(&t, "3", env);
	teardown(&t);
	check_pairs(&t, &r);
	cr_log_info("%s", r.out);
	run_free(&r);
}
