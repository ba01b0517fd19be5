/* SPDX-License-Identifier: MIT */
/*
 * Servers started by a cluster's launcher (mpirun, srun, prterun): the
 * master listens, runs "LAUNCHER SERVER --connect HOST:PORT --password
 * TOKEN.%r", and every server connects back, control first, then data,
 * each proving the password with its launcher rank for %r (the ox
 * launcher's one-time password, plus the rank that pairs a server's two
 * channels and becomes its RFC-102 rank).  A connection without the
 * token, with a rank outside 0..n-1 or a third one for a rank is closed.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "master_impl.h"
#include "oxr/params.h"
#include "oxr_internal.h"

extern char **environ;

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads "TOKEN.RANK\0" (at most 127 bytes) before the deadline; -1 if not. */
static int read_claim(int fd, const char *token, int n, int64_t deadline)
{
	char buf[128];
	size_t got = 0, tl = strlen(token);
	char *end;
	long r;

	while (got < sizeof(buf)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - ms_now();
		ssize_t k;
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		if ((k = read(fd, buf + got, 1)) <= 0)
			return -1;
		if (buf[got++] == 0)
			break;
	}
	if (!got || buf[got - 1] || got < tl + 2 || memcmp(buf, token, tl) || buf[tl] != '.')
		return -1;
	r = strtol(buf + tl + 1, &end, 10);
	return *end || r < 0 || r >= n ? -1 : (int)r;
}

static oxr_status_t spawn_launcher(oxr_master *m, const char *launcher, const char *host,
				   int port, const char *token)
{
	char cmd[4096];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int e;

	if ((size_t)snprintf(cmd, sizeof(cmd), "exec %s '%s' --connect %s:%d --password %s.%%r",
			     launcher, m->path, host, port, token) >= sizeof(cmd))
		return oxr_err(OXR_ERR_INVAL, "launch: the launcher command is too long");
	if ((e = posix_spawn(&m->launcher, "/bin/sh", NULL, NULL, argv, environ)))
		return oxr_err(OXR_ERR_IO, "launch: cannot run /bin/sh: %s", strerror(e));
	return OXR_OK;
}

/* Takes the 2n connections, pairing each server's two by its rank. */
static oxr_status_t gather(oxr_master *m, int lfd, const char *token, int timeout_ms)
{
	int64_t deadline = ms_now() + timeout_ms;
	int need = 2 * m->n, status;

	while (need > 0) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int64_t left = deadline - ms_now();
		int fd, r, one = 1;
		struct srv *s;
		if (waitpid(m->launcher, &status, WNOHANG) == m->launcher) {
			m->launcher = 0;
			return oxr_err(OXR_ERR_PEER, "launch: the launcher ended (status %#x) with %d of "
				       "%d connections made: see its messages", status, 2 * m->n - need,
				       2 * m->n);
		}
		if (left <= 0)
			return oxr_err(OXR_ERR_TIMEOUT, "launch: %d of %d servers' connections came "
				       "within %d ms", 2 * m->n - need, 2 * m->n, timeout_ms);
		if (poll(&p, 1, left > 200 ? 200 : (int)left) <= 0)
			continue;
		if ((fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC)) < 0)
			continue;
		/* a command right behind its data must not wait for a delayed ACK */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		r = read_claim(fd, token, m->n, deadline);
		s = r >= 0 ? &m->s[r] : NULL;
		if (!s || (s->cfd >= 0 && s->dfd >= 0)) {
			close(fd); /* not one of ours, or one too many */
			continue;
		}
		if (s->cfd < 0) {
			s->cfd = fd;
			inet_ntop(AF_INET, &sa.sin_addr, s->host, sizeof(s->host));
		} else {
			s->dfd = fd;
		}
		need--;
	}
	return OXR_OK;
}

oxr_status_t oxr_master_launch_with(const char *launcher, const char *server, int n,
				    int timeout_ms, oxr_master **out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	const char *host;
	oxr_ctx_params p;
	char token[33], hostbuf[256], who[96];
	uint8_t raw[16];
	oxr_master *m;
	int lfd, i;
	oxr_status_t st;

	if (!launcher || !*launcher)
		return oxr_master_launch(server, n, out);
	if ((st = oxr_ctx_params_read(OXR_CTX_PARAM_MASTER_HOST, &p)))
		return st;
	host = p.master_host;
	if ((st = oxr_master_alloc(n, server, &m)))
		return st;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		oxr_master_destroy(m, 0);
		return oxr_err(OXR_ERR_IO, "getrandom: %s", strerror(errno));
	}
	for (i = 0; i < 16; i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	if (!host || !*host) {
		if (gethostname(hostbuf, sizeof(hostbuf)))
			snprintf(hostbuf, sizeof(hostbuf), "127.0.0.1");
		hostbuf[sizeof(hostbuf) - 1] = 0;
		host = hostbuf;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 2 * n) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		st = oxr_err(OXR_ERR_IO, "launch: cannot listen: %s", strerror(errno));
		if (lfd >= 0)
			close(lfd);
		oxr_master_destroy(m, 0);
		return st;
	}
	st = spawn_launcher(m, launcher, host, ntohs(sa.sin_port), token);
	if (!st)
		st = gather(m, lfd, token, timeout_ms);
	close(lfd);
	for (i = 0; i < n && !st; i++) {
		snprintf(who, sizeof(who), "rank %d (at %s)", i, m->s[i].host);
		st = oxr_master_attach(&m->s[i], who);
	}
	if (st) {
		oxr_master_destroy(m, 0);
		return st;
	}
	*out = m;
	return OXR_OK;
}
