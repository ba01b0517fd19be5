/* SPDX-License-Identifier: MIT */
/*
 * An engine's channels to its master, opened as OpenXM's ox launcher opens
 * them (oxr-server --listen / --connect): plain TCP, and optionally the
 * launcher's one-time password, PW and a NUL written by whoever connects and
 * checked by the other side.  The sockets are the transport's (tcp/tcp_socket.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/server.h"
#include "oxr_internal.h"
#include "../transport/tcp/tcp_socket.h" /* oxr_tcp_*: the sockets */

#define PASSWORD_MS 30000 /* the bound on reading a master's password */

oxr_status_t oxr_channel_listen(int port, int *lfd, int *bound)
{
	return oxr_tcp_listen(port, lfd, bound);
}

oxr_status_t oxr_channel_accept(int lfd, const char *pw, int timeout_ms, int *fd)
{
	char addr[80], *got;
	size_t n;
	int s;
	oxr_status_t st = oxr_tcp_accept(lfd, timeout_ms, &s, addr, sizeof(addr));

	if (st || !pw) {
		if (!st)
			*fd = s;
		return st;
	}
	n = strlen(pw) + 1;
	if (!(got = malloc(n))) {
		close(s);
		return oxr_err(OXR_ERR_NOMEM, "password: out of memory");
	}
	st = oxr_tcp_io(s, got, n, 0, oxr_now_ms() + PASSWORD_MS, "master");
	if (st == OXR_OK && memcmp(got, pw, n))
		st = oxr_err(OXR_ERR_AUTH, "the master's one-time password is wrong");
	free(got);
	if (st)
		close(s);
	else
		*fd = s;
	return st;
}

oxr_status_t oxr_channel_connect(const char *host_port, const char *pw, int timeout_ms, int *fd)
{
	char host[256];
	const char *colon = strrchr(host_port, ':');
	int64_t deadline = oxr_now_ms() + timeout_ms;
	int s;
	oxr_status_t st;

	if (!colon || (size_t)(colon - host_port) >= sizeof(host))
		return oxr_err(OXR_ERR_INVAL, "--connect wants HOST:PORT, got \"%s\"", host_port);
	memcpy(host, host_port, (size_t)(colon - host_port));
	host[colon - host_port] = 0;
	if ((st = oxr_tcp_connect(host, atoi(colon + 1), timeout_ms, &s)))
		return st;
	if (pw && (st = oxr_tcp_io(s, (void *)pw, strlen(pw) + 1, 1, deadline, "master"))) {
		close(s);
		return st;
	}
	*fd = s;
	return OXR_OK;
}
