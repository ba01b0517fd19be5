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
	char *out, *err;
};

/* argv[0] is the path; env: extra "NAME=value" entries (NULL-terminated, may
 * be NULL) added to this process's environment; input: stdin (NULL: empty). */
struct run spawn_run(const char *const *argv, const char *const *env, const char *input,
		     int timeout_s);
void run_free(struct run *r);
/* Occurrences of needle in hay. */
int count_of(const char *hay, const char *needle);
#endif
