/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_child.h"
#include "test_util.h"

extern char **environ;

struct sink {
	char *b;
	size_t n, cap;
};

static void sink_add(struct sink *s, const char *p, size_t n)
{
	if (s->cap - s->n <= n) {
		s->cap = 2 * s->cap + n + 1;
		s->b = realloc(s->b, s->cap);
		cr_assert_not_null(s->b);
	}
	memcpy(s->b + s->n, p, n);
	s->n += n;
	s->b[s->n] = 0;
}

/* This process's environment with extra entries (overriding same names). */
static char **merged_env(const char *const *extra)
{
	size_t n = 0, k = 0, i, j;
	char **e;

	while (environ[n])
		n++;
	while (extra && extra[k])
		k++;
	e = calloc(n + k + 1, sizeof(*e));
	cr_assert_not_null(e);
	for (i = 0, j = 0; i < n; i++) {
		size_t x, len = strcspn(environ[i], "=");
		for (x = 0; x < k; x++)
			if (!strncmp(extra[x], environ[i], len) && extra[x][len] == '=')
				break;
		if (x == k)
			e[j++] = environ[i];
	}
	for (i = 0; i < k; i++)
		e[j++] = (char *)extra[i];
	return e;
}

struct run spawn_run(const char *const *argv, const char *const *env, const char *input,
		     int timeout_s)
{
	return spawn_run_opts(argv, env, input, timeout_s, NULL);
}

struct run spawn_run_opts(const char *const *argv, const char *const *env, const char *input,
			  int timeout_s, const struct run_opts *o)
{
	int in[2], out[2], err[2], i, status;
	struct sink so = { 0 }, se = { 0 };
	size_t in_left = input ? strlen(input) : 0;
	long start = (long)(now_us() / 1000), deadline = start + timeout_s * 1000L;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	struct pollfd pf[3];
	struct run r = { 0 };
	int group = o && o->own_group;
	char **e = o && o->envp ? NULL : merged_env(env);
	pid_t pid;

	cr_assert(!pipe(in) && !pipe(out) && !pipe(err));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	for (i = 0; i < 2; i++) {
		posix_spawn_file_actions_addclose(&fa, in[i]);
		posix_spawn_file_actions_addclose(&fa, out[i]);
		posix_spawn_file_actions_addclose(&fa, err[i]);
	}
	posix_spawnattr_init(&at);
	if (group) {
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
		posix_spawnattr_setpgroup(&at, 0);
	}
	i = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, e ? e : o->envp);
	cr_assert_eq(i, 0, "spawn %s: %s", argv[0], strerror(i));
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(e);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	pf[0] = (struct pollfd){ .fd = in_left ? in[1] : -1, .events = POLLOUT };
	pf[1] = (struct pollfd){ .fd = out[0], .events = POLLIN };
	pf[2] = (struct pollfd){ .fd = err[0], .events = POLLIN };
	if (!in_left)
		close(in[1]);
	while (pf[0].fd >= 0 || pf[1].fd >= 0 || pf[2].fd >= 0) {
		char buf[4096];
		ssize_t n;
		long left = deadline - (long)(now_us() / 1000);

		if (left <= 0 || poll(pf, 3, (int)left) == 0) {
			r.timed_out = 1;
			if (group) {
				kill(-pid, SIGTERM);
				sleep(2);
				kill(-pid, SIGKILL);
			} else {
				kill(pid, SIGKILL);
			}
			break;
		}
		if (pf[0].fd >= 0 && pf[0].revents) {
			n = write(in[1], input, in_left);
			if (n > 0) {
				input += n;
				in_left -= (size_t)n;
			}
			if (n <= 0 || !in_left) {
				close(in[1]);
				pf[0].fd = -1;
			}
		}
		for (i = 1; i < 3; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			n = read(pf[i].fd, buf, sizeof(buf));
			if (n > 0) {
				sink_add(i == 1 ? &so : &se, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	for (i = 0; i < 3; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	r.secs = (double)((long)(now_us() / 1000) - start) / 1000.0;
	r.rc = WIFEXITED(status) && !r.timed_out ? WEXITSTATUS(status) : -1;
	r.sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	sink_add(&so, "", 0);
	sink_add(&se, "", 0);
	r.out = so.b;
	r.err = se.b;
	return r;
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

int count_of(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

struct run run_ranks(int n, int run_timeout, const char *const *child, const char *const *env,
		     int timeout_s)
{
	char nbuf[16], tbuf[16];
	const char *argv[6 + RUN_RANKS_MAX_ARGS + 1] = { OXR_BIN_DIR "/oxr-run", "-n", nbuf };
	int k = 3, i;

	snprintf(nbuf, sizeof(nbuf), "%d", n);
	if (run_timeout) {
		snprintf(tbuf, sizeof(tbuf), "%d", run_timeout);
		argv[k++] = "--timeout";
		argv[k++] = tbuf;
	}
	argv[k++] = "--";
	for (i = 0; child[i]; i++) {
		cr_assert_lt(i, RUN_RANKS_MAX_ARGS, "run_ranks: too many arguments");
		argv[k++] = child[i];
	}
	argv[k] = NULL;
	return spawn_run(argv, env, NULL, timeout_s);
}

void expect_rank_lines(const struct run *r, int n, const char *line)
{
	char want[160];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "rank %d: %s", i, line);
		cr_assert_eq(count_of(r->out, want), 1, "'%s' once in:\n%s\nstderr:\n%s", want,
			     r->out, r->err);
	}
}

void expect_ranks_ok(const struct run *r, int n, const char *mode, const char *what)
{
	char line[96];

	cr_assert_eq(r->rc, 0, "%d ranks %s: exit %d (signal %d, timed out %d)\nstdout:\n%s\n"
		     "stderr:\n%s", n, what, r->rc, r->sig, r->timed_out, r->out, r->err);
	snprintf(line, sizeof(line), "%s ok", mode);
	expect_rank_lines(r, n, line);
}
