/* SPDX-License-Identifier: MIT */
/*
 * Running a program from a Criterion test: posix_spawn, never fork
 * (Criterion's workers do not survive a fork), stdin fed and both outputs
 * drained by one poll loop so no pipe can fill and stall the child.
 */
#ifndef OXR_TEST_RUN_CHILD_H
#define OXR_TEST_RUN_CHILD_H

struct run {
	int rc;        /* exit status; -1 if killed by a signal or timed out */
	int sig;       /* the signal, if killed */
	int timed_out; /* 1 if it ran past the timeout and was killed */
	double secs;   /* wall time from spawn to exit */
	char *out, *err;
};

struct run_opts {
	/* the child's whole environment; NULL: this process's plus env */
	char *const *envp;
	/* the child leads its own process group, and a timeout ends the whole
	 * group, SIGTERM first (so a launcher such as mpirun takes its ranks
	 * down), SIGKILL 2 s later */
	int own_group;
};

/* argv[0] is the path; env: extra "NAME=value" entries (NULL-terminated, may
 * be NULL) added to this process's environment; input: stdin (NULL: empty). */
struct run spawn_run(const char *const *argv, const char *const *env, const char *input,
		     int timeout_s);
/* The same with options (o may be NULL). */
struct run spawn_run_opts(const char *const *argv, const char *const *env, const char *input,
			  int timeout_s, const struct run_opts *o);
void run_free(struct run *r);
/* Occurrences of needle in hay. */
int count_of(const char *hay, const char *needle);

/* n ranks of child (its argv, NULL-terminated, at most RUN_RANKS_MAX_ARGS)
 * under `oxr-run -n N [--timeout RUN_TIMEOUT] --` (run_timeout 0: no
 * --timeout); env and timeout_s as spawn_run. */
#define RUN_RANKS_MAX_ARGS 12
struct run run_ranks(int n, int run_timeout, const char *const *child, const char *const *env,
		     int timeout_s);
/* Asserts "rank i: LINE" exactly once in r's stdout for every i < n. */
void expect_rank_lines(const struct run *r, int n, const char *line);
/* Asserts exit 0 (what names the run in the message) and "rank i: MODE ok"
 * once per rank. */
void expect_ranks_ok(const struct run *r, int n, const char *mode, const char *what);
#endif
