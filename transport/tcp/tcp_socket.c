/* SPDX-License-Identifier: MIT */
/*
 * TCP sockets: listening, accepting and connecting with timeouts, blocking
 * I/O against a deadline, and the tuning of a link's socket.  Every link
 * starts on one of these (link_open.c); the tcp provider keeps its
 * stream there (tcp_provider.c).
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "oxr_internal.h"
#include "transport_impl.h"
#include "tcp_socket.h"

/* The system's maximum (the kernel caps a larger one at
 * net.core.somaxconn): a rank that all others connect to at start (eager
 * wiring, RFC-102 servers) must not see connects reset at 128 pending. */
#define LISTEN_BACKLOG 65535

int64_t oxr_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
	int64_t l = deadline - oxr_now_ms();

	return l < 0 ? 0 : l > INT32_MAX ? INT32_MAX : (int)l;
}

static void tune(int fd)
{
	int one = 1;

	/* asir leaves Nagle on and stalls ~40 ms on delayed ACKs (prior-art.md §9) */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Both ends of the socket are addresses of this host: its bytes go
 * through lo, never a network. */
static int same_host(int fd)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) || me.ss_family != peer.ss_family)
		return 0;
	if (peer.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&me, *b = (const void *)&peer;
		return a->sin_addr.s_addr == b->sin_addr.s_addr ||
		       (ntohl(b->sin_addr.s_addr) >> 24) == 127;
	}
	if (peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&me, *b = (const void *)&peer;
		return !memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) ||
		       IN6_IS_ADDR_LOOPBACK(&b->sin6_addr);
	}
	return 0;
}

/*
 * A link inside this host has no network whose capacity congestion control
 * could share out, but the system's algorithm still runs on it, and a
 * pacing one costs bandwidth there: under BBR (the default of some
 * distributions) a 1 MiB stream on lo was paced at BBR's estimate of the
 * link, 41 Gbit/s (ss -ti), and a plain send/recv loop moved 4.3 GB/s
 * against 7.6 with reno.  Such links get OXR_TCP_LOCAL_CC (reno by default:
 * it never paces and every process may choose it); others keep the system's.
 */
void oxr_tcp_tune_link(const oxr_ctx *c, int fd)
{
	const char *cc = c->local_cc;

	if (!cc[0] || !same_host(fd))
		return;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)))
		oxr_log(c, OXR_LOG_INFO, "TCP_CONGESTION %s on a link inside this host: %s (the "
			"system's stays)", cc, strerror(errno));
}

void oxr_tcp_tune_fd(int fd)
{
	tune(fd);
}

oxr_status_t oxr_tcp_listen(int port, int *fd, int *bound)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				  .sin_port = htons((uint16_t)port) };
	socklen_t sl = sizeof(sa);
	int s, one = 1;

	if (port < 0 || port > 65535)
		return oxr_err(OXR_ERR_INVAL, "listen: port %d out of range", port);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return oxr_err(OXR_ERR_IO, "listen: socket: %s", strerror(errno));
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, LISTEN_BACKLOG) ||
	    getsockname(s, (struct sockaddr *)&sa, &sl)) {
		int e = errno;
		close(s);
		return oxr_err(OXR_ERR_IO, "listen on port %d: %s%s", port, strerror(e),
			       e == EADDRINUSE ? " (pass port 0 to let the OS choose)" : "");
	}
	*fd = s;
	*bound = ntohs(sa.sin_port);
	return OXR_OK;
}

static void name_of(const struct sockaddr_storage *ss, char *addr, size_t alen)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(addr, alen, "%s:%d", host, port);
}

void oxr_tcp_peer_name(int fd, char *addr, size_t alen)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		ss.ss_family = AF_UNSPEC;
	name_of(&ss, addr, alen);
}

oxr_status_t oxr_tcp_accept(int lfd, int timeout_ms, int *fd, char *addr, size_t alen)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int r, s;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return oxr_err(OXR_ERR_TIMEOUT, "accept: no peer connected within %d ms", timeout_ms);
	s = r < 0 ? -1 : accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (s < 0)
		return oxr_err(OXR_ERR_IO, "accept: %s", strerror(errno));
	tune(s);
	name_of(&ss, addr, alen);
	*fd = s;
	return OXR_OK;
}

/* One non-blocking connect attempt, waited for with poll. */
static int try_connect(const struct addrinfo *ai, int timeout_ms, int *err)
{
	struct pollfd p;
	socklen_t sl = sizeof(*err);
	int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (s < 0) {
		*err = errno;
		return -1;
	}
	if (connect(s, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		*err = errno;
		close(s);
		return -1;
	}
	p = (struct pollfd){ .fd = s, .events = POLLOUT };
	if (poll(&p, 1, timeout_ms) != 1) {
		*err = ETIMEDOUT;
		close(s);
		return -1;
	}
	getsockopt(s, SOL_SOCKET, SO_ERROR, err, &sl);
	if (*err) {
		close(s);
		return -1;
	}
	return s;
}

oxr_status_t oxr_tcp_connect(const char *host, int port, int timeout_ms, int *fd)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int64_t deadline = oxr_now_ms() + timeout_ms;
	char service[16];
	int rc, s = -1, err = 0;

	if (!host || port <= 0 || port > 65535)
		return oxr_err(OXR_ERR_INVAL, "connect: bad host or port %d", port);
	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc)
		return oxr_err(OXR_ERR_INVAL, "connect: cannot resolve %s: %s", host, gai_strerror(rc));
	/* A peer told to accept may not listen yet: retry refusals until the deadline. */
	for (;;) {
		for (ai = res; ai && s < 0; ai = ai->ai_next)
			s = try_connect(ai, left_ms(deadline), &err);
		if (s >= 0 || (err != ECONNREFUSED && err != EAGAIN) || left_ms(deadline) == 0)
			break;
		usleep(10000);
	}
	freeaddrinfo(res);
	if (s < 0)
		return oxr_err(err == ETIMEDOUT || left_ms(deadline) == 0 ? OXR_ERR_TIMEOUT : OXR_ERR_IO,
			       "connect to %s:%d: %s", host, port, strerror(err));
	/* the handshake runs blocking, with poll bounds; the progress engine
	 * switches the socket to non-blocking when the link is attached */
	rc = fcntl(s, F_GETFL);
	fcntl(s, F_SETFL, rc & ~O_NONBLOCK);
	tune(s);
	*fd = s;
	return OXR_OK;
}

oxr_status_t oxr_tcp_connect_start(const char *host, int port, int *fd)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	char service[16];
	int rc, s;

	if (!host || port <= 0 || port > 65535)
		return oxr_err(OXR_ERR_INVAL, "connect: bad host or port %d", port);
	snprintf(service, sizeof(service), "%d", port);
	/* an address needs no resolver (the usual endpoint); a name asks it once */
	hints.ai_flags = AI_NUMERICHOST;
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc == EAI_NONAME) {
		hints.ai_flags = 0;
		rc = getaddrinfo(host, service, &hints, &res);
	}
	if (rc)
		return oxr_err(OXR_ERR_INVAL, "connect: cannot resolve %s: %s", host, gai_strerror(rc));
	s = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s >= 0 && connect(s, res->ai_addr, res->ai_addrlen) && errno != EINPROGRESS) {
		int e = errno;
		close(s);
		s = -1;
		errno = e;
	}
	rc = errno;
	freeaddrinfo(res);
	if (s < 0)
		return oxr_err(rc == EMFILE || rc == ENFILE ? OXR_ERR_NOMEM : OXR_ERR_PEER,
			       "connect to %s:%d: %s", host, port, strerror(rc));
	*fd = s;
	return OXR_OK;
}

/* Exactly n bytes, or an error, within the deadline. */
oxr_status_t oxr_tcp_io(int fd, void *buf, size_t n, int writing, int64_t deadline,
		       const char *addr)
{
	uint8_t *p = buf;

	while (n > 0) {
		struct pollfd pf = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
		ssize_t k;
		int r = poll(&pf, 1, left_ms(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return oxr_err(OXR_ERR_TIMEOUT, "handshake with %s: timed out", addr);
		k = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (k == 0)
			return oxr_err(OXR_ERR_CLOSED, "handshake with %s: the peer closed the link",
				       addr);
		if (k < 0 && errno != EINTR && errno != EAGAIN)
			return oxr_err(OXR_ERR_IO, "handshake with %s: %s", addr, strerror(errno));
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		}
	}
	return OXR_OK;
}

