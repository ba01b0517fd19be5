/* SPDX-License-Identifier: MIT */
/*
 * Whole groups of real processes on 127.0.0.1, started by oxr-run (and by
 * Open MPI's mpirun through PMIx when oxr has PMIx), each test once per
 * provider (tcp, and verbs where there is an RDMA device; OXR_TEST_PROVIDERS
 * picks: common/providers.h): every pair
 * exchanging random objects of 0 B to 16 MiB in both byte orders, a 10^5
 * message flood with bounded memory, a rank killed in the middle of a
 * message, and the ring example.  The ranks are tests/transport/group_child.c and
 * examples/ring.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "providers.h"
#include "run_child.h"

#define RUN OXR_BIN_DIR "/oxr-run"
#define CHILD OXR_BIN_DIR "/group_child"

TestSuite(group_per_provider, .timeout = 600);

static void run_group(const struct provider *pv, int n, const char *order, const char *mode,
		      const char *arg)
{
	char obuf[32];
	const char *child[] = { CHILD, mode, arg, NULL };
	const char *env[] = { provider_env(pv), obuf, "OXR_LOG_LEVEL=error", NULL };
	struct run r;

	snprintf(obuf, sizeof(obuf), "OXR_ORDER=%s", order);
	r = run_ranks(n, 0, child, env, 300);
	expect_ranks_ok(&r, n, mode, mode);
	run_free(&r);
}

PROVIDER_TEST(group, all_pairs_1_to_8_ranks_both_orders)
{
	int n;

	for (n = 1; n <= 8; n++) {
		run_group(pv, n, "little", "pairs", "3");
		run_group(pv, n, "network", "pairs", "3");
	}
}

PROVIDER_TEST(group, mixed_orders_in_one_group)
{
	/* OXR_ORDER differs per rank: each link settles on its own order */
	const char *argv[] = { RUN, "-n", "3", "--", "/bin/sh", "-c",
			       "if [ \"$OXR_RUN_RANK\" = 1 ]; then export OXR_ORDER=network; fi; exec "
			       CHILD " pairs 3", NULL };
	const char *env[] = { provider_env(pv), NULL };
	struct run r = spawn_run(argv, env, NULL, 300);

	expect_ranks_ok(&r, 3, "pairs", "pairs");
	run_free(&r);
}

/* group_child shmmem on 16 ranks under each environment setting, every
 * rank's line carrying want[i]. */
static void shm_memory_at_16_ranks(const char *const *settings, const char *const *want, int n)
{
	const char *argv[] = { RUN, "-n", "16", "--", CHILD, "shmmem", NULL };
	int i;

	for (i = 0; i < n; i++) {
		/* every link open: the memory of a full node's worth of peers */
		const char *env[] = { "OXR_TRANSPORT=shm", "OXR_LINKS=eager", settings[i], NULL };
		struct run r = spawn_run(argv, env, NULL, 300);

		expect_ranks_ok(&r, 16, "shmmem", settings[i]);
		cr_assert_eq(count_of(r.out, want[i]), 16, "%s", r.out);
		run_free(&r);
	}
}

/* Shared memory per rank is 2 x (OXR_SHM_RING_BYTES + a header page) per
 * same-host peer linked, and nothing else: checked at 16 ranks (every rank
 * counts its ring mappings), at two ring sizes. */
Test(group, shm_memory_per_rank_is_two_rings_per_local_peer_at_16_ranks)
{
	static const char *const rings[] = { "OXR_SHM_RING_BYTES=262144", "OXR_SHM_RING_BYTES=65536" };
	static const char *const want[] = { "15 shm links, 30 ring maps, 7800 KiB",
					    "15 shm links, 30 ring maps, 2040 KiB" };

	shm_memory_at_16_ranks(rings, want, 2);
}

/* The same at 16 ranks with 4 rings a rank, and with none: each rank owns
 * 4 (or 0) rings and one FIFO whatever the number of its local peers. */
Test(group, shm_memory_per_rank_is_its_rings_and_one_fifo_past_oxr_shm_rings)
{
	static const char *const rings[] = { "OXR_SHM_RINGS=4", "OXR_SHM_RINGS=0" };
	static const char *const want[] = { "15 shm links: 4 rings of its own and a FIFO, 1316 KiB",
					    "15 shm links: 0 rings of its own and a FIFO, 276 KiB" };

	shm_memory_at_16_ranks(rings, want, 2);
}

/* Each link holds a descriptor: a rank started under a low fd soft limit
 * raises it to the hard limit when it makes its context, and says so at
 * debug level (oxr-run hands the ranks the limit it was given). */
Test(group, a_rank_raises_its_fd_soft_limit_to_the_hard_limit)
{
	const char *argv[] = { "/bin/sh", "-c", "ulimit -Sn 200 && exec \"$0\" -n 2 -- \"$1\" pairs 1",
			       RUN, CHILD, NULL };
	const char *env[] = { "OXR_LOG_LEVEL=debug", NULL };
	struct rlimit lim;
	struct run r;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &lim), 0);
	if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max <= 200)
		cr_assert_fail("the hard fd limit here is %llu: this test needs one above 200",
			       (unsigned long long)lim.rlim_max);
	r = spawn_run(argv, env, NULL, 120);
	expect_ranks_ok(&r, 2, "pairs", "pairs");
	cr_assert_eq(count_of(r.err, "raised the fd soft limit from 200 to the hard limit"), 2,
		     "%s", r.err);
	run_free(&r);
}

/* Which links get rings: with 4 a rank at 16 ranks, each rank receives on
 * exactly 4 links by ring, at most 2 of them from peers that are no
 * collective partner (ranks 2^i apart either way round), as each link's
 * info line says; the rest by its FIFO. */
Test(group, shm_rings_go_to_collective_partners_first)
{
	const char *argv[] = { RUN, "-n", "16", "--", CHILD, "shmmem", NULL };
	const char *env[] = { "OXR_TRANSPORT=shm", "OXR_SHM_RINGS=4", "OXR_LOG_LEVEL=info",
			      "OXR_LINKS=eager", NULL };
	struct run r = spawn_run(argv, env, NULL, 300);
	int rings[16] = { 0 }, others[16] = { 0 }, fifos = 0, i;
	const char *at;

	expect_ranks_ok(&r, 16, "shmmem", "OXR_SHM_RINGS=4");
	for (at = r.err; (at = strstr(at, ": shm link to rank ")); at++) {
		int me, peer, d;
		const char *line = at;
		while (line > r.err && line[-1] != '\n')
			line--;
		cr_assert_eq(sscanf(strstr(line, "rank "), "rank %d", &me), 1);
		cr_assert_eq(sscanf(at, ": shm link to rank %d", &peer), 1);
		cr_assert(me >= 0 && me < 16 && peer >= 0 && peer < 16, "%.120s", line);
		if (!strncmp(strchr(at + 2, ':'), ": receives through its FIFO", 27)) {
			fifos++;
			continue;
		}
		cr_assert(!strncmp(strchr(at + 2, ':'), ": receives through a ring", 25), "%.120s", line);
		d = abs(me - peer);
		rings[me]++;
		others[me] += (d & (d - 1)) && ((16 - d) & (15 - d));
	}
	for (i = 0; i < 16; i++) {
		cr_assert_eq(rings[i], 4, "rank %d receives on %d rings:\n%s", i, rings[i], r.err);
		cr_assert_leq(others[i], 2, "rank %d: %d rings to others", i, others[i]);
	}
	cr_assert_eq(fifos, 16 * 11, "the other links through the FIFO");
	run_free(&r);
}

/* Seven senders into one receiver that reads them one after another: on
 * shm-fifo the waiting senders' cells fill the shared FIFO and are copied
 * out, and each is pushed back; every message once, in order per sender. */
PROVIDER_TEST(group, seven_senders_into_one_receiver_read_one_after_another)
{
	const char *argv[] = { RUN, "-n", "8", "--", CHILD, "fanin", "2000", NULL };
	const char *env[] = { provider_env(pv), "OXR_RECV_QUEUE_BYTES=262144",
			      "OXR_LOG_LEVEL=debug", NULL };
	struct run r = spawn_run(argv, env, NULL, 300);

	expect_ranks_ok(&r, 8, "fanin", "fanin");
	if (!strcmp(pv->label, "shm-fifo"))
		cr_assert(strstr(r.err, "rank 0: shm: over half the receive FIFO's cells wait"),
			  "the cells were never copied out:\n%s", r.err);
	run_free(&r);
}

PROVIDER_TEST(group, flood_of_1e5_messages_with_bounded_memory)
{
	/* a small receive queue, so the sender really is pushed back */
	const char *argv[] = { RUN, "-n", "2", "--", CHILD, "flood", "100000", NULL };
	const char *env[] = { provider_env(pv), "OXR_RECV_QUEUE_BYTES=1048576", NULL };
	struct run r = spawn_run(argv, env, NULL, 300);

	expect_ranks_ok(&r, 2, "flood", "flood");
	run_free(&r);
}

/* group_child MODE on 2 ranks, rank 1 killing itself: rank 0 says
 * "MODE ok" (its wait ended with an error naming rank 1, no hang) and
 * oxr-run names the killed rank.  Returns the survivor's output. */
static char *killed_rank(const struct provider *pv, const char *mode)
{
	const char *argv[] = { RUN, "-n", "2", "--", CHILD, mode, NULL };
	const char *env[] = { provider_env(pv), NULL };
	struct run r = spawn_run(argv, env, NULL, 120);
	char line[64], *out;

	snprintf(line, sizeof(line), "rank 0: %s ok", mode);
	cr_assert(!r.timed_out, "the group hung:\n%s\n%s", r.out, r.err);
	cr_assert_neq(r.rc, 0, "oxr-run must report the killed rank");
	cr_assert(strstr(r.out, line), "survivor:\n%s\nstderr:\n%s", r.out, r.err);
	cr_assert(strstr(r.err, "rank 1"), "oxr-run names rank 1:\n%s", r.err);
	out = strdup(r.out);
	run_free(&r);
	return out;
}

PROVIDER_TEST(group, a_rank_killed_mid_message_gives_the_survivor_an_error)
{
	char *out = killed_rank(pv, "die");

	cr_assert(strstr(out, "broke") || strstr(out, "closed"), "%s", out);
	free(out);
}

/* A rank killed while it puts: the target's wait ends with an error that
 * names it (on shm the killed rank was storing into the target's pages). */
PROVIDER_TEST(group, a_rank_killed_mid_put_gives_the_target_an_error)
{
	free(killed_rank(pv, "putdie"));
}

/* Many senders into one receiver, on every provider: 8 ranks each put 16
 * blocks into every other rank's window, over memory of the caller's and
 * over oxr_win_alloc's (on shm: stores into the mapped window, a note ring
 * per sender); every note checked, in order per sender, every byte. */
PROVIDER_TEST(group, eight_ranks_put_into_each_other_notes_in_order_per_sender)
{
	static const char *const mem[] = { "own", "alloc" };
	int i;

	for (i = 0; i < 2; i++) {
		const char *child[] = { CHILD, "puts", "16", mem[i], NULL };
		const char *env[] = { provider_env(pv), "OXR_LOG_LEVEL=error", NULL };
		struct run r = run_ranks(8, 0, child, env, 300);
		char links[64];
		expect_ranks_ok(&r, 8, "puts", mem[i]);
		snprintf(links, sizeof(links), "links %s)", pv->name);
		cr_assert_eq(count_of(r.out, links), 8, "every rank's links on %s:\n%s", pv->name,
			     r.out);
		cr_assert_eq(count_of(r.out, "into oxr_win_alloc memory"), i ? 8 : 0, "%s", r.out);
		run_free(&r);
	}
}

PROVIDER_TEST(group, the_ring_example)
{
	int n;

	for (n = 1; n <= 5; n += 2) {
		char nbuf[16], want[128];
		const char *argv[] = { RUN, "-n", nbuf, "--", OXR_BIN_DIR "/ring", NULL };
		const char *env[] = { provider_env(pv), NULL };
		struct run r;
		snprintf(nbuf, sizeof(nbuf), "%d", n);
		/* the provider this instance runs on, as the ring reports it */
		snprintf(want, sizeof(want), "ring of %d over %s: got %d, want %d: ok", n, pv->name,
			 n * (n - 1) / 2, n * (n - 1) / 2);
		r = spawn_run(argv, env, NULL, 120);
		cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
		cr_assert(strstr(r.out, want), "%s", r.out);
		run_free(&r);
	}
}

/* 32 ranks end one after another while the rest still wait, each saying
 * BYE to all: through FIFOs of 8 cells (one in flight a sender), most BYEs
 * wait for a cell and must still go out before their link ends, or the
 * peers take the end for a failure and the ring breaks. */
Test(group, the_ring_example_at_32_ranks_through_small_shm_fifos)
{
	const char *argv[] = { RUN, "-n", "32", "--", OXR_BIN_DIR "/ring", NULL };
	const char *env[] = { "OXR_TRANSPORT=shm", "OXR_SHM_RINGS=0", "OXR_SHM_FIFO_BYTES=32768",
			      NULL };
	struct run r = spawn_run(argv, env, NULL, 120);

	cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
	cr_assert(strstr(r.out, "ring of 32 over shm: got 496, want 496: ok"), "%s", r.out);
	run_free(&r);
}

/* OXR_LINKS=ondemand: the ring talks to its two neighbours only, so 32
 * links open (each end says so once), not 496; the ends that start at once
 * settle on one handshake. */
static void ring_on_demand(const char *transport)
{
	const char *argv[] = { RUN, "-n", "32", "--", OXR_BIN_DIR "/ring", NULL };
	const char *env[] = { "OXR_LINKS=ondemand", "OXR_LOG_LEVEL=info", transport, NULL };
	struct run r = spawn_run(argv, env, NULL, 120);
	const char *p;
	int opened = 0;

	cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
	cr_assert(strstr(r.out, "got 496, want 496: ok"), "%s", r.out);
	cr_assert(strstr(r.err, "links on demand"), "%s", r.err);
	for (p = r.err; (p = strstr(p, ") open\n")); p++)
		opened++;
	cr_assert_eq(opened, 64, "link ends opened: %d, want 64 (2 x 32 ring links)\n%s", opened,
		     r.err);
	/* and each rank's closing line (oxr_group_stats at info) says so: at
	 * most its 2 neighbours (fewer once a neighbour has said goodbye) */
	for (p = r.err, opened = 0; (p = strstr(p, " links open (")); p++) {
		const char *bol = p;
		unsigned links = 99;
		while (bol > r.err && bol[-1] != ' ')
			bol--;
		cr_assert_eq(sscanf(bol, "%u links open (", &links), 1, "%.80s", bol);
		cr_assert(!strncmp(bol - 8, " of 32: ", 8), "%.80s", bol - 8);
		cr_assert_leq(links, 2, "%.200s", p);
		opened++;
	}
	cr_assert_eq(opened, 32, "closing lines: %d\n%s", opened, r.err);
	run_free(&r);
}

Test(group, the_ring_example_at_32_ranks_opens_only_its_32_links_on_demand_tcp)
{
	ring_on_demand("OXR_TRANSPORT=tcp");
}

Test(group, the_ring_example_at_32_ranks_opens_only_its_32_links_on_demand_shm)
{
	ring_on_demand("OXR_TRANSPORT=shm");
}

/* OXR_LINKS=auto: every pair at boot up to 64 ranks, on demand from 65 (a
 * full mesh of 65 x 64 links is what stops eager groups at scale); each
 * rank says which at info, and the ring still comes out right. */
static void ring_auto(int n, const char *want, const char *not)
{
	char nbuf[16], sum[64];
	const char *argv[] = { RUN, "-n", nbuf, "--", OXR_BIN_DIR "/ring", NULL };
	const char *env[] = { "OXR_LINKS=auto", "OXR_LOG_LEVEL=info", "OXR_TRANSPORT=tcp", NULL };
	struct run r;

	snprintf(nbuf, sizeof(nbuf), "%d", n);
	snprintf(sum, sizeof(sum), "got %d, want %d: ok", n * (n - 1) / 2, n * (n - 1) / 2);
	r = spawn_run(argv, env, NULL, 180);
	cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
	cr_assert(strstr(r.out, sum), "%s", r.out);
	cr_assert_eq(count_of(r.err, want), n, "%d ranks said \"%s\", want %d\n%s",
		     count_of(r.err, want), want, n, r.err);
	cr_assert_eq(count_of(r.err, not), 0, "%s", r.err);
	run_free(&r);
}

Test(group, links_auto_are_eager_up_to_64_ranks_tcp)
{
	ring_auto(64, ", links eager)", ", links on demand");
}

Test(group, links_auto_open_on_demand_from_65_ranks_tcp)
{
	ring_auto(65, ", links on demand", ", links eager)");
}

#ifdef OXR_HAVE_PMIX
/* PMIx with links on demand: no allgather of endpoints (direct modex), a
 * rank looks up the two neighbours of the ring, and holds at most 2 links. */
Test(group, the_ring_example_under_mpirun_looks_up_only_the_endpoints_it_uses)
{
	const char *argv[] = { "mpirun", "-np", "8", "--oversubscribe", "--bind-to", "none",
			       OXR_BIN_DIR "/ring", NULL };
	const char *env[] = { "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
			      "OMPI_MCA_btl=self", "OXR_LINKS=ondemand", "OXR_LOG_LEVEL=debug",
			      NULL };
	struct run r = spawn_run(argv, env, NULL, 300);
	int i, looked;

	cr_assert_eq(r.rc, 0, "%s\n%s", r.out, r.err);
	cr_assert(strstr(r.out, "got 28, want 28: ok"), "%s", r.out);
	cr_assert_eq(count_of(r.err, "links on demand, endpoints looked up on first use)"), 8, "%s",
		     r.err);
	for (i = 0; i < 8; i++) {
		char me[48];
		snprintf(me, sizeof(me), "rank %d: looked up rank ", i);
		looked = count_of(r.err, me);
		cr_assert(looked >= 1 && looked <= 2, "rank %d looked up %d endpoints:\n%s", i,
			  looked, r.err);
	}
	run_free(&r);
}

PROVIDER_TEST(group, the_same_group_under_mpirun_pmix)
{
	const char *argv[] = { "mpirun", "-np", "4", "--oversubscribe", "--bind-to", "none",
			       CHILD, "pairs", "3", NULL };
	const char *env[] = { "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
			      "OMPI_MCA_btl=self", provider_env(pv), NULL };
	struct run r = spawn_run(argv, env, NULL, 300);

	expect_ranks_ok(&r, 4, "pairs", "pairs");
	run_free(&r);
}
#endif
