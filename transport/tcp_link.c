/* SPDX-License-Identifier: MIT */
/*
 * TCP links: listening, accepting and connecting with timeouts, and the
 * handshake that opens a link.
 *
 * Every link starts as RFC-102 does it in asir: both sides write their
 * byte-order byte, then read the other's.  An OXR_LINK_OPENXM link is open
 * after that.  An OXR_LINK_AUTH link then runs a challenge-response on the
 * group's token, so neither side sends the token itself (all integers
 * little-endian):
 *   acceptor  -> "OXRA" u32 version, u32 nserver, u32 acceptor rank, nonce_a[16]
 *   connector -> "OXRC" u32 version, u32 nserver, u32 its rank, u32 target rank,
 *                nonce_c[16], HMAC(token, "oxr-c" nonce_a nonce_c ranks nserver)
 *   acceptor  -> "OXRK" HMAC(token, "oxr-a" nonce_c nonce_a ranks nserver)
 *             or "OXRN" u32 reason, and closes.
 * The acceptor checks the rank the connector claims against the one it
 * expects, so a process of the group cannot pose as another rank either.
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
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "oxr_internal.h"
#include "sha256.h"
#include "transport_impl.h"

#define HS_VERSION 2 /* 2: the epochs follow the proof */

enum refusal { REF_TOKEN = 1, REF_RANK = 2, REF_SIZE = 3, REF_VERSION = 4 };

static const char *refusal_text(uint32_t r)
{
	switch (r) {
	case REF_TOKEN: return "wrong token (not a member of this group?)";
	case REF_RANK: return "unexpected rank";
	case REF_SIZE: return "different group size";
	case REF_VERSION: return "handshake version mismatch";
	}
	return "refused";
}

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
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 128) ||
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

static void put_u32(uint8_t *p, uint32_t v) { oxr_store32(p, v, OXR_ORDER_LITTLE); }
static uint32_t get_u32(const uint8_t *p) { return oxr_load32(p, OXR_ORDER_LITTLE); }

static void mac(const oxr_group *g, const char *label, const uint8_t *n1, const uint8_t *n2,
		uint32_t from, uint32_t to, uint8_t out[32])
{
	uint8_t ranks[12];
	const void *parts[4] = { label, n1, n2, ranks };
	size_t lens[4] = { strlen(label), 16, 16, sizeof(ranks) };

	put_u32(ranks, from);
	put_u32(ranks + 4, to);
	put_u32(ranks + 8, (uint32_t)g->size);
	oxr_hmac_sha256(g->token, sizeof(g->token), parts, lens, 4, out);
}

static int rank_wanted(const oxr_group *g, int want, uint32_t claimed)
{
	if (claimed >= (uint32_t)g->size || (int)claimed == g->rank)
		return 0;
	if (want >= 0)
		return (int)claimed == want;
	return (int)claimed > g->rank && g->links[claimed].state != LINK_OPEN;
}

static oxr_status_t auth_acceptor(oxr_group *g, int fd, int *peer, const char *addr,
				  int64_t deadline)
{
	uint8_t a[32], c[68], k[36], want_mac[32];
	uint32_t claimed, reason = 0;
	oxr_status_t st;

	memcpy(a, "OXRA", 4);
	put_u32(a + 4, HS_VERSION);
	put_u32(a + 8, (uint32_t)g->size);
	put_u32(a + 12, (uint32_t)g->rank);
	if (getrandom(a + 16, 16, 0) != 16)
		return oxr_err(OXR_ERR_IO, "handshake: getrandom: %s", strerror(errno));
	if ((st = oxr_tcp_io(fd, a, 32, 1, deadline, addr)))
		return st;
	if ((st = oxr_tcp_io(fd, c, 68, 0, deadline, addr)))
		return st != OXR_ERR_TIMEOUT ? st
		       : oxr_err(st, "handshake with %s: no oxr answer in time (a plain OpenXM peer? "
				 "its link needs OXR_LINK_OPENXM)", addr);
	claimed = get_u32(c + 12);
	mac(g, "oxr-c", a + 16, c + 20, claimed, (uint32_t)g->rank, want_mac);
	if (memcmp(c, "OXRC", 4) || get_u32(c + 4) != HS_VERSION)
		reason = REF_VERSION;
	else if (get_u32(c + 8) != (uint32_t)g->size)
		reason = REF_SIZE;
	else if (!oxr_mac_equal(c + 36, want_mac, 32))
		reason = REF_TOKEN;
	else if (get_u32(c + 16) != (uint32_t)g->rank || !rank_wanted(g, *peer, claimed))
		reason = REF_RANK;
	if (reason) {
		memcpy(k, "OXRN", 4);
		put_u32(k + 4, reason);
		oxr_tcp_io(fd, k, 8, 1, deadline, addr);
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d refused a link from %s claiming rank %u: %s",
			g->rank, addr, claimed, refusal_text(reason));
		return oxr_err(OXR_ERR_AUTH, "refused a link from %s claiming rank %u: %s", addr,
			       claimed, refusal_text(reason));
	}
	memcpy(k, "OXRK", 4);
	mac(g, "oxr-a", c + 20, a + 16, (uint32_t)g->rank, claimed, k + 4);
	if ((st = oxr_tcp_io(fd, k, 36, 1, deadline, addr)))
		return st;
	*peer = (int)claimed;
	return OXR_OK;
}

static oxr_status_t auth_connector(oxr_group *g, int fd, int peer, const char *addr,
				   int64_t deadline)
{
	uint8_t a[32], c[68], k[36], want_mac[32];
	oxr_status_t st;

	if ((st = oxr_tcp_io(fd, a, 32, 0, deadline, addr)))
		return st;
	if (memcmp(a, "OXRA", 4) || get_u32(a + 4) != HS_VERSION)
		return oxr_err(OXR_ERR_PROTO,
			       "handshake with %s: not an oxr peer, or another version (an OpenXM "
			       "peer needs OXR_LINK_OPENXM)", addr);
	if (get_u32(a + 12) != (uint32_t)peer)
		return oxr_err(OXR_ERR_AUTH, "handshake with %s: it is rank %u, not rank %d", addr,
			       get_u32(a + 12), peer);
	memcpy(c, "OXRC", 4);
	put_u32(c + 4, HS_VERSION);
	put_u32(c + 8, (uint32_t)g->size);
	put_u32(c + 12, (uint32_t)g->rank);
	put_u32(c + 16, (uint32_t)peer);
	if (getrandom(c + 20, 16, 0) != 16)
		return oxr_err(OXR_ERR_IO, "handshake: getrandom: %s", strerror(errno));
	mac(g, "oxr-c", a + 16, c + 20, (uint32_t)g->rank, (uint32_t)peer, c + 36);
	if ((st = oxr_tcp_io(fd, c, 68, 1, deadline, addr)) ||
	    (st = oxr_tcp_io(fd, k, 8, 0, deadline, addr)))
		return st;
	if (!memcmp(k, "OXRN", 4))
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s refused the link: %s", peer, addr,
			       refusal_text(get_u32(k + 4)));
	if (memcmp(k, "OXRK", 4) || (st = oxr_tcp_io(fd, k + 8, 28, 0, deadline, addr)))
		return st ? st : oxr_err(OXR_ERR_PROTO, "handshake with %s: bad answer", addr);
	mac(g, "oxr-a", c + 20, a + 16, (uint32_t)peer, (uint32_t)g->rank, want_mac);
	if (!oxr_mac_equal(k + 4, want_mac, 32))
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s failed to prove the group token", peer,
			       addr);
	return OXR_OK;
}

/*
 * After the proof both sides tell their epoch ("OXRE" u32, both write
 * first).  A rank that joins a group already past epoch 0 (a process
 * restarted in the place of a dead one) takes the group's epoch, so that
 * the reset that follows brings every rank to one new epoch.  Only a rank
 * with no window yet may move: a window is of the epoch it was made in.
 */
static oxr_status_t agree_epoch(oxr_group *g, int fd, int peer, const char *addr,
				int64_t deadline)
{
	uint8_t mine[8], theirs[8];
	uint32_t e;
	oxr_status_t st;

	memcpy(mine, "OXRE", 4);
	put_u32(mine + 4, g->epoch);
	if ((st = oxr_tcp_io(fd, mine, 8, 1, deadline, addr)) ||
	    (st = oxr_tcp_io(fd, theirs, 8, 0, deadline, addr)))
		return st;
	if (memcmp(theirs, "OXRE", 4))
		return oxr_err(OXR_ERR_PROTO, "handshake with %s: no epoch from rank %d", addr, peer);
	e = get_u32(theirs + 4);
	if (e <= g->epoch)
		return OXR_OK;
	if (g->wins)
		return oxr_err(OXR_ERR_INVAL, "rank %d at %s is in epoch %u, this rank in %u with "
			       "windows made: a rank joins a group before it makes windows", peer,
			       addr, e, g->epoch);
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: joins the group in epoch %u (rank %d's)", g->rank,
		e, peer);
	g->epoch = e;
	return OXR_OK;
}

oxr_status_t oxr_link_handshake(oxr_group *g, int fd, int mode, int acceptor, int *peer,
				const char *addr, int timeout_ms, int *order)
{
	int64_t deadline = oxr_now_ms() + timeout_ms;
	uint8_t mine = oxr_order_byte(g->ctx->order), theirs;
	oxr_status_t st;

	if (mode == OXR_LINK_AUTH && !g->have_token)
		return oxr_err(OXR_ERR_INVAL, "an OXR_LINK_AUTH link needs the group token: call "
			       "oxr_group_set_token (or build the group with oxr_group_boot)");
	/* RFC-102 (asir register_102): both sides write first; one byte cannot block */
	if ((st = oxr_tcp_io(fd, &mine, 1, 1, deadline, addr)) ||
	    (st = oxr_tcp_io(fd, &theirs, 1, 0, deadline, addr)) ||
	    (st = oxr_order_resolve(mine, theirs, order)))
		return st;
	if (mode == OXR_LINK_OPENXM)
		return OXR_OK;
	if ((st = acceptor ? auth_acceptor(g, fd, peer, addr, deadline)
			   : auth_connector(g, fd, *peer, addr, deadline)))
		return st;
	return agree_epoch(g, fd, *peer, addr, deadline);
}
