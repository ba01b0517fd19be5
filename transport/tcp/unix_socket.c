/* SPDX-License-Identifier: MIT */
/*
 * Links over a Unix-domain socket path: what SM_tcp_accept_102 and
 * SM_tcp_connect_102 mean when the port is a CMO_STRING (asir's
 * generate_port(1) and spawn102_local, protocol doc section 5).
 *
 * As in asir, the acceptor binds and listens on the path when told to accept
 * and serves that one peer; unlike asir, which leaves the socket file
 * behind, it removes the path as soon as the peer is in (or the accept
 * failed), so no group leaves files in /tmp.  A path that exists already is
 * refused, never unlinked: it may be someone else's.  The connector retries
 * until the path accepts or its deadline passes (asir's try_connect gives up
 * after 10 tries 100 ms apart; an oxr connector waits out its timeout).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "tcp_socket.h"
#include "transport_impl.h"

oxr_status_t oxr_unix_addr(const char *path, struct sockaddr_un *sa)
{
	size_t n = path ? strlen(path) : 0;

	if (!n)
		return oxr_err(OXR_ERR_INVAL, "unix socket: an empty path");
	if (n >= sizeof(sa->sun_path))
		return oxr_err(OXR_ERR_INVAL, "unix socket path of %zu bytes: at most %zu fit "
			       "(sun_path); use a shorter one, e.g. under /tmp", n,
			       sizeof(sa->sun_path) - 1);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	return OXR_OK;
}

oxr_status_t oxr_unix_listen(const char *path, int *fd)
{
	struct sockaddr_un sa;
	oxr_status_t st = oxr_unix_addr(path, &sa);
	int s, e;

	if (st)
		return st;
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return oxr_err(OXR_ERR_IO, "listen on %s: socket: %s", path, strerror(errno));
	if (!bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		if (!listen(s, 16)) {
			*fd = s;
			return OXR_OK;
		}
		e = errno;
		unlink(path);
	} else {
		e = errno;
	}
	close(s);
	return oxr_err(OXR_ERR_IO, "listen on unix socket %s: %s%s", path, strerror(e),
		       e == EADDRINUSE ? " (the path exists: give a fresh one, as asir's "
					 "generate_port(1) does)" : "");
}

oxr_status_t oxr_unix_connect(const char *path, int timeout_ms, int *fd)
{
	struct sockaddr_un sa;
	int64_t deadline = oxr_now_ms() + timeout_ms;
	oxr_status_t st = oxr_unix_addr(path, &sa);
	int s, e;

	if (st)
		return st;
	for (;;) {
		if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			return oxr_err(OXR_ERR_IO, "connect to %s: socket: %s", path,
				       strerror(errno));
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			*fd = s;
			return OXR_OK;
		}
		e = errno;
		close(s);
		/* not bound yet, or bound and not yet listening: the acceptor is late */
		if ((e != ENOENT && e != ECONNREFUSED && e != EAGAIN && e != EINTR) ||
		    oxr_now_ms() >= deadline)
			break;
		usleep(5000);
	}
	return oxr_err(e == ENOENT || e == ECONNREFUSED ? OXR_ERR_TIMEOUT : OXR_ERR_IO,
		       "connect to unix socket %s: %s%s", path, strerror(e),
		       e == ENOENT || e == ECONNREFUSED ? " (no acceptor listened there within "
							  "the link timeout)" : "");
}
