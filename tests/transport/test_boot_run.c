/* SPDX-License-Identifier: MIT */
/*
 * The bootstrap without a launcher (singleton), its environment checks, and
 * oxr-run as a user runs it: boot_child ranks under oxr-run, good and bad.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/boot.h"
#include "run_child.h"

#define RUN OXR_BIN_DIR "/oxr-run"
#define CHILD OXR_BIN_DIR "/boot_child"
#define RAW OXR_BIN_DIR "/boot_raw"
/* Well under OXR_BOOT_TIMEOUT's 60 s: a rank left waiting for a dead one
 * runs into this, not into its own timeout. */
#define HANG_S 30

/* Runs argv to the end.  Nothing in this process's environment may choose
 * the bootstrap for it (empty counts as unset). */
static struct run run_argv(const char *const *argv)
{
	static const char *const env[] = { "OXR_BOOT=", "OXR_RUN_ADDR=", "PMIX_NAMESPACE=",
					   "PMIX_RANK=", NULL };
	struct run r = spawn_run(argv, env, NULL, HANG_S);

	cr_assert(!r.timed_out, "%s ran past %d s (hung?)\nstdout:\n%s\nstderr:\n%s", argv[0],
		  HANG_S, r.out, r.err);
	return r;
}

#define run_v(...) run_argv((const char *const[]){ __VA_ARGS__, NULL })

#define expect_err(r, piece) \
	cr_assert(strstr((r).err, piece), "stderr lacks '%s':\n%s", piece, (r).err)

/* oxr-run -n N boot_child MODE, expecting exit 0 and each rank once. */
static void expect_ranks(int n, const char *mode)
{
	char ns[16], want[64];
	struct run r;
	int i;

	snprintf(ns, sizeof(ns), "%d", n);
	r = run_v(RUN, "-n", ns, CHILD, mode);
	cr_assert_eq(r.rc, 0, "-n %d %s: exit %d\nstdout:\n%s\nstderr:\n%s", n, mode, r.rc, r.out,
		     r.err);
	cr_assert_str_eq(r.err, "");
	for (i = 0; i < n; i++) {
		char *at;

		snprintf(want, sizeof(want), "rank %d size %d kind oxr-run\n", i, n);
		at = strstr(r.out, want);
		cr_assert(at && (at == r.out || at[-1] == '\n'), "no '%s' in:\n%s", want, r.out);
		cr_assert_null(strstr(at + 1, want), "'%s' twice in:\n%s", want, r.out);
	}
	cr_assert_eq(count_of(r.out, "\n"), n, "not %d lines:\n%s", n, r.out);
	run_free(&r);
}

TestSuite(boot_run, .timeout = 90);

Test(boot_run, ranks_1_2_3_5_8)
{
	static const int ns[] = { 1, 2, 3, 5, 8 };
	size_t i;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		expect_ranks(ns[i], "ok");
}

/* 8 MiB a rank: replies far larger than a socket buffer. */
Test(boot_run, big_blobs)
{
	expect_ranks(4, "big");
}

Test(boot_run, singleton_program)
{
	struct run r = run_v(CHILD, "ok");

	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "rank 0 size 1 kind singleton\n");
	run_free(&r);
}

/* Rank 1 exits 3 after the first allgather; the others, in a barrier, must
 * be told and stop, not wait for it. */
Test(boot_run, rank_dies)
{
	struct run r = run_v(RUN, "-n", "3", CHILD, "die-after-first");

	cr_assert_eq(r.rc, 1, "exit %d\n%s", r.rc, r.err);
	cr_assert(strstr(r.err, "oxr-run: rank 1 (pid ") &&
		  strstr(r.err, ") exited with status 3\n"), "%s", r.err);
	run_free(&r);
}

/* Every rank publishes, then looks up every rank's blob and checks it, in
 * two rounds' tables, one rank at a time and all in one batch; at 8 ranks,
 * and at 1 (it looks itself up). */
Test(boot_run, publish_lookup)
{
	expect_ranks(8, "lookup");
	expect_ranks(1, "lookup");
}

/* Lookups of a rank out of range (alone, and in a batch with good ones),
 * of a round that was an allgather, of a later round and of the wrong
 * length fail with what was wrong, to the
 * rank that asked alone: the rendezvous goes on for all (an allgather and
 * good lookups after them). */
Test(boot_run, lookup_errors)
{
	struct run r = run_v(RUN, "-n", "4", CHILD, "lookup-bad");

	cr_assert_eq(r.rc, 0, "exit %d\nstdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
	cr_assert_str_eq(r.err, "");
	cr_assert(strstr(r.out, "rank 3: lookup error: lookup of rank 4's bytes of publish #2: "
			 "oxr-run: rank 4 is out of range (-n 4)\n"), "%s", r.out);
	cr_assert(strstr(r.out, "rank 3: lookup error: lookup of rank 0's bytes of publish #1: "
			 "oxr-run: publish #1 is unknown: no publish round of that number has "
			 "completed (the last was #2)\n"), "%s", r.out);
	cr_assert(strstr(r.out, "rank 3: lookup error: lookup of rank 0's bytes of publish #3: "
			 "this rank has published up to #2\n"), "%s", r.out);
	cr_assert(strstr(r.out, "rank 3: lookup error: lookup of rank 0's bytes of publish #2: "
			 "oxr-run: rank 0 published 64 bytes in #2, not the 32 asked for\n"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "rank 3: lookup error: lookup of 3 ranks' bytes of publish #2: "
			 "oxr-run: rank 9 is out of range (-n 4)\n"), "%s", r.out);
	cr_assert_eq(count_of(r.out, "lookup error"), 5, "%s", r.out);
	run_free(&r);
}

/* Rank 0 looks up while the other ranks wait in an allgather (and all look
 * up while its replies go out): the round completes, every blob right. */
Test(boot_run, lookup_during_round)
{
	expect_ranks(5, "lookup-during");
}

/* A rank of protocol version 1 (allgathers only) among ranks of version 2:
 * oxr-run still takes it, and their rounds work together. */
Test(boot_run, hello_version_1)
{
	struct run r = run_v(RUN, "-n", "3", "/bin/sh", "-c",
			     "[ \"$OXR_RUN_RANK\" = 1 ] && exec \"$1\" v1; exec \"$0\" ok", CHILD,
			     RAW);

	cr_assert_eq(r.rc, 0, "exit %d\nstdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
	cr_assert_str_eq(r.err, "");
	cr_assert_eq(count_of(r.out, "rank 1 size 3 kind raw-v1\n"), 1, "%s", r.out);
	cr_assert_eq(count_of(r.out, " kind oxr-run\n"), 2, "%s", r.out);
	run_free(&r);
}

/* A version this oxr-run does not speak is refused with a message saying
 * which it does. */
Test(boot_run, hello_version_unknown)
{
	struct run r = run_v(RUN, "-n", "1", RAW, "v3");

	cr_assert_eq(r.rc, 0, "exit %d\nstdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
	cr_assert_str_eq(r.out, "refused: protocol version 3; this oxr-run speaks 1 to 2\n");
	expect_err(r, "oxr-run: refused a connection from 127.0.0.1:");
	expect_err(r, ": protocol version 3; this oxr-run speaks 1 to 2\n");
	run_free(&r);
}

Test(boot_run, rank_killed_or_failing)
{
	struct run r = run_v(RUN, "-n", "2", "--", "/bin/sh", "-c", "kill -KILL $$");

	cr_assert_eq(r.rc, 128 + SIGKILL, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "killed by signal 9");
	run_free(&r);
	r = run_v(RUN, "-n", "2", "/bin/sh", "-c", "exit 5");
	cr_assert_eq(r.rc, 1, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "exited with status 5");
	run_free(&r);
	/* Ranks that never use the bootstrap are fine. */
	r = run_v(RUN, "-n", "3", "/bin/true");
	cr_assert_eq(r.rc, 0, "exit %d\n%s", r.rc, r.err);
	run_free(&r);
}

/* Rank 0 gives 101 bytes, the others 100: every rank hears of it. */
Test(boot_run, length_mismatch)
{
	struct run r = run_v(RUN, "-n", "3", CHILD, "badlen");
	int i;

	cr_assert_eq(r.rc, 1, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "rank 0 gave a length of 101 bytes");
	for (i = 0; i < 3; i++) {
		char want[64], *at, *eol;

		snprintf(want, sizeof(want), "boot_child: rank %d: allgather: ", i);
		at = strstr(r.err, want);
		cr_assert_not_null(at, "no '%s' in:\n%s", want, r.err);
		eol = strchr(at, '\n');
		cr_assert(eol && memmem(at, (size_t)(eol - at), "length", 6), "%s", r.err);
	}
	run_free(&r);
}

Test(boot_run, wrong_token)
{
	struct run r = run_v(RUN, "-n", "2", CHILD, "badtoken");

	cr_assert_neq(r.rc, 0, "%s", r.err);
	expect_err(r, "oxr-run: refused a connection from 127.0.0.1:");
	expect_err(r, ": wrong token\n");
	expect_err(r, "boot_child: rank 1: oxr_boot_open: ");
	run_free(&r);
}

/* Ranks that claim a rank taken or out of range are refused too. */
Test(boot_run, wrong_ranks)
{
	struct run r = run_v(RUN, "-n", "2", "/bin/sh", "-c", "OXR_RUN_RANK=0 exec \"$0\" ok",
			     CHILD);

	cr_assert_eq(r.rc, 1, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "oxr-run: refused a connection from 127.0.0.1:");
	expect_err(r, ": rank 0 has joined already\n");
	run_free(&r);
	r = run_v(RUN, "-n", "2", "/bin/sh", "-c", "OXR_RUN_SIZE=9 OXR_RUN_RANK=8 exec \"$0\" ok",
		  CHILD);
	cr_assert_eq(r.rc, 1, "exit %d\n%s", r.rc, r.err);
	expect_err(r, ": rank 8 out of range (-n 2)\n");
	run_free(&r);
}

Test(boot_run, timeout_expires)
{
	struct run r = run_v(RUN, "-n", "2", "--timeout", "1", CHILD, "sleep");

	cr_assert_eq(r.rc, 124, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "--timeout 1 s ran out");
	run_free(&r);
}

/* SIGTERM to oxr-run, once both ranks are up, stops them and oxr-run. */
Test(boot_run, sigterm_forwarded)
{
	static const char script[] =
		"out=$(mktemp) || exit 99; \"$0\" -n 2 \"$1\" sleep >\"$out\" & p=$!; "
		"until [ \"$(grep -c ' kind oxr-run' \"$out\")\" = 2 ]; do sleep 0.05; done; "
		"kill -TERM $p; wait $p; s=$?; rm -f \"$out\"; exit $s";
	struct run r = run_v("/bin/sh", "-c", script, RUN, CHILD);

	cr_assert_eq(r.rc, 128 + SIGTERM, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "oxr-run: got signal 15");
	expect_err(r, "stopping the ranks");
	run_free(&r);
}

Test(boot_run, program_missing)
{
	struct run r = run_v(RUN, "-n", "3", "/nonexistent/oxr-prog");
	char *first;

	cr_assert_eq(r.rc, 127, "exit %d\n%s", r.rc, r.err);
	first = strstr(r.err, "cannot run /nonexistent/oxr-prog");
	cr_assert(first && !strstr(first + 1, "cannot run"), "%s", r.err);
	run_free(&r);
}

#define expect_usage(piece, ...)                                                        \
	do {                                                                            \
		struct run r_ = run_v(RUN, __VA_ARGS__);                          \
		cr_assert_eq(r_.rc, 2, "exit %d\n%s", r_.rc, r_.err);                   \
		expect_err(r_, piece);                                                  \
		expect_err(r_, "usage: oxr-run -n N");                                  \
		run_free(&r_);                                                          \
	} while (0)

Test(boot_run, usage)
{
	struct run r = run_v(RUN, "--help");

	cr_assert_eq(r.rc, 0);
	cr_assert(strstr(r.out, "usage: oxr-run -n N"), "%s", r.out);
	run_free(&r);
	r = run_v(RUN);
	cr_assert_eq(r.rc, 2);
	run_free(&r);
	expect_usage("-n N is required", CHILD);
	expect_usage("no PROGRAM", "-n", "2");
	expect_usage("no PROGRAM", "-n", "2", "--");
	expect_usage("from 1 to 1048576, not '0'", "-n", "0", CHILD);
	expect_usage("not '1048577'", "-n", "1048577", CHILD);
	expect_usage("not '2x'", "-n", "2x", CHILD);
	expect_usage("-n lacks its value", "-n");
	expect_usage("--timeout wants whole seconds", "-n", "1", "--timeout", "0", CHILD);
	expect_usage("--timeout wants whole seconds", "-n", "1", "--timeout=1.5", CHILD);
	expect_usage("unknown option --bogus", "-n", "1", "--bogus", CHILD);
}

/* ---- in this process: the singleton and the checks of the environment ---- */

static void clear_boot_env(void)
{
	static const char *const vars[] = { "OXR_BOOT", "OXR_RUN_ADDR", "OXR_RUN_RANK",
					    "OXR_RUN_SIZE", "OXR_RUN_TOKEN_FD",
					    "OXR_BOOT_TIMEOUT", "PMIX_NAMESPACE", "PMIX_RANK",
					    NULL };
	int i;

	for (i = 0; vars[i]; i++)
		unsetenv(vars[i]);
}

TestSuite(boot_env, .init = clear_boot_env, .timeout = 30);

Test(boot_env, singleton)
{
	uint8_t tok[OXR_TOKEN_BYTES], zero[OXR_TOKEN_BYTES] = { 0 }, all[5];
	oxr_boot *b;

	cr_assert_eq(oxr_boot_open(&b), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_boot_kind(b), OXR_BOOT_SINGLETON);
	cr_assert_str_eq(oxr_boot_name(b), "singleton");
	cr_assert_eq(oxr_boot_rank(b), 0);
	cr_assert_eq(oxr_boot_size(b), 1);
	oxr_boot_token(b, tok);
	cr_assert_neq(memcmp(tok, zero, sizeof(tok)), 0, "an all-zero token");
	cr_assert_eq(oxr_boot_allgather(b, "abcde", 5, all), OXR_OK);
	cr_assert_eq(memcmp(all, "abcde", 5), 0);
	cr_assert_eq(oxr_boot_allgather(b, NULL, 0, NULL), OXR_OK);
	cr_assert_eq(oxr_boot_barrier(b), OXR_OK);
	cr_assert_eq(oxr_boot_allgather(b, NULL, 5, all), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "mine is NULL"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_boot_allgather(b, "x", 1, NULL), OXR_ERR_INVAL);
	oxr_boot_close(b);

	setenv("OXR_BOOT", "singleton", 1);
	cr_assert_eq(oxr_boot_open(&b), OXR_OK, "%s", oxr_errmsg());
	oxr_boot_close(b);
}

Test(boot_env, null_arguments)
{
	uint8_t tok[OXR_TOKEN_BYTES];

	cr_assert_eq(oxr_boot_open(NULL), OXR_ERR_INVAL);
	cr_assert_eq(oxr_boot_allgather(NULL, NULL, 0, NULL), OXR_ERR_INVAL);
	cr_assert_eq(oxr_boot_barrier(NULL), OXR_ERR_INVAL);
	cr_assert_eq(oxr_boot_rank(NULL), -1);
	cr_assert_eq(oxr_boot_size(NULL), -1);
	cr_assert_eq(oxr_boot_kind(NULL), -1);
	cr_assert_str_eq(oxr_boot_name(NULL), "none");
	memset(tok, 1, sizeof(tok));
	oxr_boot_token(NULL, tok);
	cr_assert_eq(tok[0], 0);
	oxr_boot_close(NULL);
}

/* oxr_boot_open fails with want and a message holding piece. */
static void expect_open_fails(oxr_status_t want, const char *piece)
{
	oxr_boot *b = (oxr_boot *)&b;

	cr_assert_eq(oxr_boot_open(&b), want, "%s", oxr_errmsg());
	cr_assert_null(b);
	cr_assert(strstr(oxr_errmsg(), piece), "'%s' lacks '%s'", oxr_errmsg(), piece);
}

static void set_token_fd(int fd)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", fd);
	setenv("OXR_RUN_TOKEN_FD", v, 1);
}

/* A pipe holding text, as oxr-run hands out the token. */
static void token_pipe(const char *text)
{
	int p[2];

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
	close(p[1]);
	set_token_fd(p[0]);
}

Test(boot_env, bad_choice)
{
	setenv("OXR_BOOT", "mpi", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_BOOT=mpi: expected one of singleton, run, pmix");
	setenv("OXR_BOOT", "run", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_ADDR is not set");
}

Test(boot_env, bad_run_variables)
{
	static const char good[] = "00112233445566778899aabbccddeeff"
				   "00112233445566778899aabbccddeeff\n";
	static const char *const addrs[] = { "localhost:1", "127.0.0.1", "127.0.0.1:",
					     "127.0.0.1:0", "127.0.0.1:65536", "1.2.3:4",
					     "127.0.0.1:5x", NULL };
	int i, fd;

	for (i = 0; addrs[i]; i++) {
		setenv("OXR_RUN_ADDR", addrs[i], 1);
		expect_open_fails(OXR_ERR_INVAL, "expected IPV4:PORT");
	}
	setenv("OXR_RUN_ADDR", "127.0.0.1:9", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_SIZE is not set");
	setenv("OXR_RUN_SIZE", "0", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_SIZE='0': expected a group size from 1 to 1048576");
	setenv("OXR_RUN_SIZE", "2", 1);
	setenv("OXR_RUN_RANK", "2", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_RANK='2': expected a rank from 0 to 1");
	setenv("OXR_RUN_RANK", "-1", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_RANK='-1'");
	setenv("OXR_RUN_RANK", "1", 1);
	setenv("OXR_RUN_TOKEN_FD", "x", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_TOKEN_FD='x': expected the number");
	setenv("OXR_RUN_TOKEN_FD", "999", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_RUN_TOKEN_FD=999: not an open descriptor");
	fd = open("/dev/null", O_RDONLY);
	cr_assert_geq(fd, 0);
	set_token_fd(fd);
	expect_open_fails(OXR_ERR_INVAL, "not a pipe");
	close(fd);
	token_pipe("0011");
	expect_open_fails(OXR_ERR_INVAL, "expected 64 lowercase hex digits");
	token_pipe("00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF");
	expect_open_fails(OXR_ERR_INVAL, "expected 64 lowercase hex digits");
	token_pipe(good);
	setenv("OXR_BOOT_TIMEOUT", "soon", 1);
	expect_open_fails(OXR_ERR_INVAL, "OXR_BOOT_TIMEOUT=soon");
}

/* Each of the n ranks of a split run said who it is, once. */
static void every_rank_once(const struct run *r, int n)
{
	char want[64];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "rank %d size %d kind oxr-run\n", i, n);
		cr_assert_eq(count_of(r->out, want), 1, "'%s' not once in:\n%s", want, r->out);
	}
}

/* Ranks split over two oxr-runs as over two hosts: 0-1 with the rendezvous
 * (--publish), 2-4 joining it (--join); the token goes by a 0600 file. */
Test(boot_run, split_publish_join)
{
	static const char script[] =
		"d=$(mktemp -d) || exit 99; \"$0\" -n 5 --ranks 0-1 --publish \"$d/rv\" \"$1\" ok & p=$!; "
		"i=0; until [ -e \"$d/rv\" ] || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done; "
		"[ \"$(stat -c %a \"$d/rv\")\" = 600 ] || echo 'rv not mode 600' >&2; "
		"\"$0\" -n 5 --ranks 2-4 --join \"$d/rv\" \"$1\" ok; b=$?; wait $p; a=$?; "
		"\"$0\" -n 2 --ranks 0-0 --publish \"$d/rv\" /bin/true; e=$?; "
		"rm -rf \"$d\"; exit $((a * 16 + b + (e == 0) * 8))";
	struct run r = run_v("/bin/sh", "-c", script, RUN, CHILD);

	cr_assert_eq(r.rc, 0, "exit %d (16 x the publisher's + the joiner's; 8: an existing file "
		     "was published over)\nstdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
	every_rank_once(&r, 5);
	expect_err(r, "--publish");
	cr_assert_null(strstr(r.err, "not mode 600"), "%s", r.err);
	run_free(&r);
}

/* The same split, the ranks publishing and looking up: the tables live in
 * the --publish oxr-run, where the joined host's ranks look up too. */
Test(boot_run, split_publish_join_lookup)
{
	static const char script[] =
		"d=$(mktemp -d) || exit 99; \"$0\" -n 5 --ranks 0-2 --publish \"$d/rv\" \"$1\" lookup & "
		"p=$!; i=0; until [ -e \"$d/rv\" ] || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done; "
		"\"$0\" -n 5 --ranks 3-4 --join \"$d/rv\" \"$1\" lookup; b=$?; wait $p; a=$?; "
		"rm -rf \"$d\"; exit $((a * 16 + b))";
	struct run r = run_v("/bin/sh", "-c", script, RUN, CHILD);

	cr_assert_eq(r.rc, 0, "exit %d (16 x the publisher's + the joiner's)\nstdout:\n%s\n"
		     "stderr:\n%s", r.rc, r.out, r.err);
	every_rank_once(&r, 5);
	run_free(&r);
}

Test(boot_run, split_misuse)
{
	struct run r = run_v(RUN, "-n", "4", "--ranks", "0-1", CHILD, "ok");

	cr_assert_eq(r.rc, 2, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "leaves ranks to other hosts");
	run_free(&r);
	r = run_v(RUN, "-n", "4", "--ranks", "2-4", "--join", "/nonexistent", CHILD, "ok");
	cr_assert_eq(r.rc, 2, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "ranks go from 0 to 3");
	run_free(&r);
	r = run_v(RUN, "-n", "4", "--ranks", "2-3", "--join", "/dev/null", CHILD, "ok");
	cr_assert_eq(r.rc, 1, "exit %d\n%s", r.rc, r.err);
	expect_err(r, "not a file written by oxr-run --publish");
	run_free(&r);
}
