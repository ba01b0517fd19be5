/* SPDX-License-Identifier: MIT */
/*
 * The oxr-run bootstrap: a rank started by `oxr-run -n N PROGRAM` joins
 * oxr-run's rendezvous over TCP and swaps blobs through it.
 *
 * oxr-run gives each rank:
 *   OXR_RUN_ADDR=IPV4:PORT  where oxr-run listens (127.0.0.1, a port the OS chose)
 *   OXR_RUN_RANK=R, OXR_RUN_SIZE=N
 *   OXR_RUN_TOKEN_FD=K      an inherited descriptor holding the launch's token as
 *                           64 hex digits, read once and closed: the token stays
 *                           out of the environment, which ends up in logs.
 * OXR_BOOT_TIMEOUT=SECONDS (default 60, 0 for no limit) bounds the joining and
 * every allgather, barrier, publish and lookup, so it is also how long a rank waits for the
 * slowest of the others; raise it for programs whose ranks drift apart.
 *
 * Protocol: one TCP connection a rank; integers little-endian, fixed width.
 *   hello    rank -> oxr-run  "OXRB", u32 version = 2, u32 rank, u8 token[32]  (44 bytes)
 *   request  rank -> oxr-run  u32 op, u32 seq, u64 len, len bytes
 *   reply    oxr-run -> rank  u32 status, u32 seq, u64 len, len bytes
 * The hello is answered with seq 0 and len 0.  The ops:
 *   1 allgather  a round: seq counts rounds from 1; a barrier is an allgather
 *                of 0 bytes.  oxr-run answers request seq once all N ranks
 *                sent it: status 0 and the N blobs in rank order (len = N * blob).
 *   2 publish    a round as allgather (the same seq count, every rank the same
 *                length), but oxr-run keeps the N blobs, the round's table,
 *                until it exits, and answers each rank with status 0, len 0.
 *   3 lookup     the blobs of 1 to 64 ranks of a publish: seq names the
 *                publish round, the body (len 12 + 4 n) is u64 the blob's
 *                length, u32 n, then n u32 ranks.  Not a round: seq does not
 *                advance and oxr-run answers at once with status 0, seq,
 *                len = n x blob and the blobs in the order asked, or status 1
 *                and why (an unknown round, a rank out of range, another
 *                length), leaving the connection open.  A rank looks up only
 *                between rounds; at boot it asks for its likely partners in one
 *                lookup (group_boot.c), later for one rank at a time.
 * Publish and lookup are version 2; oxr-run takes hellos of version 1, whose
 * ranks only allgather.  A publish then lookups is PMIx's direct modex: each
 * rank reads only the P peers' blobs it needs, where an allgather sends each
 * rank all P (P^2 bytes through oxr-run).
 * Status 1 to a round is an error, its bytes (at most 1024) a message naming
 * the rank or the cause; oxr-run closes every connection after sending one.
 * A request over 64 MiB, or whose round would be over 1 GiB, is sent without
 * its bytes: oxr-run fails the round on the header alone.
 * tools/oxr_run.c is the other side; the two must change together.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "boot_impl.h"
#include "oxr/params.h"
#include "oxr_internal.h"

#include "oxr/boot_run.h"

struct run {
	int fd, size;
	uint32_t seq;      /* of the last request */
	long timeout_s;    /* 0: wait forever */
	int64_t deadline;  /* of the operation under way, ms of CLOCK_MONOTONIC; -1: none */
	char what[64];     /* that operation, for messages */
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void begin(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Names the next operation and starts its OXR_BOOT_TIMEOUT. */
static void begin(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->what, sizeof(r->what), fmt, ap);
	va_end(ap);
	r->deadline = r->timeout_s ? now_ms() + (int64_t)r->timeout_s * 1000 : -1;
}

static oxr_status_t wait_fd(struct run *r, int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int64_t left = r->deadline < 0 ? -1 : r->deadline - now_ms();
		int n;

		if (r->deadline >= 0 && left <= 0)
			return oxr_err(OXR_ERR_TIMEOUT, "%s: nothing from oxr-run within %ld s "
				       "(OXR_BOOT_TIMEOUT): is another rank stuck or slow?",
				       r->what, r->timeout_s);
		n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n > 0)
			return OXR_OK;
		if (n < 0 && errno != EINTR)
			return oxr_err(OXR_ERR_IO, "%s: poll: %s", r->what, strerror(errno));
	}
}

/* Sends or receives all n bytes on the socket before the deadline. */
static oxr_status_t xfer(struct run *r, void *buf, size_t n, int sending)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = sending ? send(r->fd, p, n, MSG_NOSIGNAL) : recv(r->fd, p, n, 0);
		oxr_status_t st;

		if (k > 0) {
			p += k;
			n -= (size_t)k;
			continue;
		}
		if (k == 0 || errno == EPIPE || errno == ECONNRESET)
			return oxr_err(OXR_ERR_PEER, "oxr-run rendezvous closed during %s: another "
				       "rank failed? (see oxr-run's messages)", r->what);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return oxr_err(OXR_ERR_IO, "%s: %s: %s", r->what, sending ? "send" : "recv",
				       strerror(errno));
		st = wait_fd(r, r->fd, sending ? POLLOUT : POLLIN);
		if (st)
			return st;
	}
	return OXR_OK;
}

/* Reads a reply header that must announce want bytes for request seq; an
 * error reply becomes err_status with oxr-run's message. */
static oxr_status_t read_reply(struct run *r, uint32_t want_seq, uint64_t want,
			       oxr_status_t err_status)
{
	uint8_t h[OXR_RUN_HDR_BYTES];
	char msg[OXR_RUN_MAX_MSG + 1];
	oxr_status_t st = xfer(r, h, sizeof(h), 0);
	uint32_t status, seq;
	uint64_t len;

	if (st)
		return st;
	status = oxr_load32(h, 1);
	seq = oxr_load32(h + 4, 1);
	len = oxr_load64(h + 8, 1);
	if (status == 1 && len <= OXR_RUN_MAX_MSG) {
		st = xfer(r, msg, len, 0);
		if (st)
			return st;
		msg[len] = 0;
		return oxr_err(err_status, "%s: oxr-run: %s", r->what, msg);
	}
	if (status || seq != want_seq || len != want)
		return oxr_err(OXR_ERR_PROTO, "%s: malformed reply from oxr-run (status %u, "
			       "seq %u, %llu bytes; expected status 0, seq %u, %llu bytes)",
			       r->what, status, seq, (unsigned long long)len, want_seq,
			       (unsigned long long)want);
	return OXR_OK;
}

static void put_hdr(uint8_t h[OXR_RUN_HDR_BYTES], uint32_t op, uint32_t seq, uint64_t len)
{
	oxr_store32(h, op, 1);
	oxr_store32(h + 4, seq, 1);
	oxr_store64(h + 8, len, 1);
}

/* A round of op (allgather or publish): sends mine, then reads the reply
 * of reply_len bytes into all. */
static oxr_status_t round_trip(struct run *r, uint32_t op, const void *mine, size_t len,
			       void *all, uint64_t reply_len)
{
	uint64_t total = (uint64_t)len * (uint64_t)r->size;
	int over = len > OXR_RUN_MAX_BLOB || total > OXR_RUN_MAX_ROUND;
	uint8_t h[OXR_RUN_HDR_BYTES];
	oxr_status_t st;

	put_hdr(h, op, r->seq, len);
	st = xfer(r, h, sizeof(h), 1);
	if (!st && !over)
		st = xfer(r, (void *)mine, len, 1);
	if (!st)
		st = read_reply(r, r->seq, over ? 0 : reply_len, over ? OXR_ERR_LIMIT : OXR_ERR_PEER);
	if (!st)
		st = xfer(r, all, (size_t)reply_len, 0);
	return st;
}

static oxr_status_t gather(struct run *r, const void *mine, size_t len, void *all,
			   const char *name)
{
	begin(r, "%s #%u", name, ++r->seq);
	return round_trip(r, OXR_RUN_OP_ALLGATHER, mine, len, all,
			  (uint64_t)len * (uint64_t)r->size);
}

static oxr_status_t run_allgather(oxr_boot *b, const void *mine, size_t len, void *all)
{
	return gather(b->impl, mine, len, all, "allgather");
}

static oxr_status_t run_barrier(oxr_boot *b)
{
	return gather(b->impl, NULL, 0, NULL, "barrier");
}

/* A round in which oxr-run keeps every rank's bytes for lookups; *seq
 * names it to them. */
static oxr_status_t run_publish(oxr_boot *b, const void *mine, size_t len, uint64_t *seq)
{
	struct run *r = b->impl;

	begin(r, "publish #%u", ++r->seq);
	*seq = r->seq;
	return round_trip(r, OXR_RUN_OP_PUBLISH, mine, len, NULL, 0);
}

/* n ranks' bytes of publish seq, straight from oxr-run in one round trip:
 * no round, so the other ranks take no part (this rank is between rounds:
 * it is blocking). */
static oxr_status_t run_lookup(oxr_boot *b, const int *ranks, int n, uint64_t seq, void *out,
			       size_t len)
{
	struct run *r = b->impl;
	uint8_t h[OXR_RUN_HDR_BYTES + OXR_RUN_LOOKUP_BYTES + 4 * OXR_RUN_LOOKUP_MAX];
	size_t body = OXR_RUN_LOOKUP_BYTES + 4 * (size_t)n;
	oxr_status_t st;
	int i;

	if (n == 1)
		begin(r, "lookup of rank %d's bytes of publish #%llu", ranks[0],
		      (unsigned long long)seq);
	else
		begin(r, "lookup of %d ranks' bytes of publish #%llu", n, (unsigned long long)seq);
	if (seq < 1 || seq > r->seq)
		return oxr_err(OXR_ERR_INVAL, "%s: this rank has published up to #%u", r->what,
			       r->seq);
	if (n < 1 || n > OXR_RUN_LOOKUP_MAX || len > OXR_RUN_MAX_BLOB / (size_t)n)
		return oxr_err(OXR_ERR_LIMIT, "%s: %d x %zu bytes, over oxr-run's limits of %d "
			       "ranks and 64 MiB", r->what, n, len, OXR_RUN_LOOKUP_MAX);
	put_hdr(h, OXR_RUN_OP_LOOKUP, (uint32_t)seq, body);
	oxr_store64(h + OXR_RUN_HDR_BYTES, len, 1);
	oxr_store32(h + OXR_RUN_HDR_BYTES + 8, (uint32_t)n, 1);
	for (i = 0; i < n; i++)
		oxr_store32(h + OXR_RUN_HDR_BYTES + OXR_RUN_LOOKUP_BYTES + 4 * i, (uint32_t)ranks[i],
			    1);
	st = xfer(r, h, OXR_RUN_HDR_BYTES + body, 1);
	if (!st)
		st = read_reply(r, (uint32_t)seq, (uint64_t)n * len, OXR_ERR_INVAL);
	if (!st)
		st = xfer(r, out, (size_t)n * len, 0);
	return st;
}

static void run_close(oxr_boot *b)
{
	struct run *r = b->impl;

	close(r->fd);
	free(r);
}

static const struct oxr_boot_ops run_ops = {
	.name = "oxr-run",
	.allgather = run_allgather,
	.barrier = run_barrier,
	.close = run_close,
	.publish = run_publish,
	.lookup = run_lookup,
	.batch = 1,
};

#define FROM_OXR_RUN "oxr-run sets it: start the program with oxr-run -n N PROGRAM"

/* Variable name as an integer from min to max (form says so in words);
 * unset is dflt, or an error when dflt < 0. */
static oxr_status_t env_long(const char *name, long min, long max, long dflt,
			     const char *form, long *out)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if ((!v || !*v) && dflt >= 0) {
		*out = dflt;
		return OXR_OK;
	}
	if (!v || !*v)
		return oxr_err(OXR_ERR_INVAL, "%s is not set (%s); expected %s", name,
			       FROM_OXR_RUN, form);
	errno = 0;
	n = strtol(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || n < min || n > max)
		return oxr_err(OXR_ERR_INVAL, "%s='%.64s': expected %s", name, v, form);
	*out = n;
	return OXR_OK;
}

static oxr_status_t parse_addr(struct sockaddr_in *sa)
{
	const char *v = getenv("OXR_RUN_ADDR"), *colon = v ? strrchr(v, ':') : NULL;
	char host[INET_ADDRSTRLEN];
	unsigned long port = 0;
	char *end = NULL;

	if (!v || !*v)
		return oxr_err(OXR_ERR_INVAL, "OXR_RUN_ADDR is not set (%s); expected IPV4:PORT",
			       FROM_OXR_RUN);
	if (colon && (size_t)(colon - v) < sizeof(host) && isdigit((unsigned char)colon[1])) {
		memcpy(host, v, (size_t)(colon - v));
		host[colon - v] = 0;
		port = strtoul(colon + 1, &end, 10);
	}
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!end || *end || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return oxr_err(OXR_ERR_INVAL, "OXR_RUN_ADDR='%.64s': expected IPV4:PORT such as "
			       "127.0.0.1:40000", v);
	return OXR_OK;
}

static int unhex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * The token's 64 hex digits (and maybe a newline) up to end of file.  The
 * descriptor must be a pipe, as oxr-run makes it: a number left in the
 * environment after the token was read (a second oxr_boot_open, a child
 * process) may by now name a file of the program's, not to be eaten.
 */
static oxr_status_t read_token(struct run *r, int fd, uint8_t token[OXR_TOKEN_BYTES])
{
	char hex[2 * OXR_TOKEN_BYTES + 2];
	oxr_status_t st = OXR_OK;
	size_t got = 0, i;
	ssize_t k = 1;
	struct stat sb;
	const char *bad = fstat(fd, &sb) ? "not an open descriptor" :
			  !S_ISFIFO(sb.st_mode) ? "not a pipe" : NULL;

	if (bad)
		return oxr_err(OXR_ERR_INVAL, "OXR_RUN_TOKEN_FD=%d: %s (%s; the token can be read "
			       "once a process)", fd, bad, FROM_OXR_RUN);
	while (!st && k && got < sizeof(hex)) {
		st = wait_fd(r, fd, POLLIN);
		k = st ? 0 : read(fd, hex + got, sizeof(hex) - got);
		if (k > 0)
			got += (size_t)k;
		else if (k < 0 && errno != EINTR && errno != EAGAIN)
			st = oxr_err(OXR_ERR_IO, "OXR_RUN_TOKEN_FD=%d: %s", fd, strerror(errno));
	}
	close(fd);
	if (got == sizeof(hex) - 1 && hex[got - 1] == '\n')
		got--;
	for (i = 0; !st && i < OXR_TOKEN_BYTES; i++) {
		int hi = got == 2 * OXR_TOKEN_BYTES ? unhex_digit(hex[2 * i]) : -1;
		int lo = hi >= 0 ? unhex_digit(hex[2 * i + 1]) : -1;

		if (lo < 0)
			st = oxr_err(OXR_ERR_INVAL, "OXR_RUN_TOKEN_FD=%d: expected %d lowercase "
				     "hex digits of the token in it", fd, 2 * OXR_TOKEN_BYTES);
		else
			token[i] = (uint8_t)(hi << 4 | lo);
	}
	explicit_bzero(hex, sizeof(hex));
	return st;
}

static oxr_status_t dial(struct run *r, const struct sockaddr_in *sa)
{
	int err = 0, one = 1;
	socklen_t el = sizeof(err);
	oxr_status_t st;

	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->fd < 0)
		return oxr_err(OXR_ERR_IO, "%s: socket: %s", r->what, strerror(errno));
	if (connect(r->fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		err = 0;
	else if (errno != EINPROGRESS && errno != EINTR)
		err = errno;
	else if ((st = wait_fd(r, r->fd, POLLOUT)))
		return st;
	else if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &el))
		err = errno;
	if (err)
		return oxr_err(OXR_ERR_PEER, "%s: %s (has oxr-run exited?)", r->what,
			       strerror(err));
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return OXR_OK;
}

static oxr_status_t hello(struct run *r, long rank, const uint8_t token[OXR_TOKEN_BYTES])
{
	uint8_t h[OXR_RUN_HELLO_BYTES];
	oxr_status_t st;

	memcpy(h, "OXRB", 4);
	oxr_store32(h + 4, OXR_RUN_VERSION, 1);
	oxr_store32(h + 8, (uint32_t)rank, 1);
	memcpy(h + 12, token, OXR_TOKEN_BYTES);
	st = xfer(r, h, sizeof(h), 1);
	explicit_bzero(h, sizeof(h));
	return st ? st : read_reply(r, 0, 0, OXR_ERR_AUTH);
}

oxr_status_t oxr_boot_run_open(oxr_boot *b)
{
	struct sockaddr_in sa = { 0 };
	long size = 0, rank = 0, fd = 0;
	char rank_form[64];
	oxr_ctx_params p;
	struct run *r;
	oxr_status_t st;

	r = calloc(1, sizeof(*r));
	if (!r)
		return oxr_err(OXR_ERR_NOMEM, "oxr-run bootstrap: out of memory");
	r->fd = -1;
	st = parse_addr(&sa);
	if (!st)
		st = env_long("OXR_RUN_SIZE", 1, OXR_RUN_MAX_SIZE, -1, "a group size from 1 to 1048576",
			      &size);
	snprintf(rank_form, sizeof(rank_form), "a rank from 0 to %ld", size - 1);
	if (!st)
		st = env_long("OXR_RUN_RANK", 0, size - 1, -1, rank_form, &rank);
	if (!st)
		st = env_long("OXR_RUN_TOKEN_FD", 0, INT_MAX, -1,
			      "the number of an inherited descriptor holding the token", &fd);
	if (!st && !(st = oxr_ctx_params_read(OXR_CTX_PARAM_BOOT_TIMEOUT, &p)))
		r->timeout_s = p.boot_timeout;
	if (st)
		goto fail;
	r->size = (int)size;
	begin(r, "joining oxr-run at %s as rank %ld", getenv("OXR_RUN_ADDR"), rank);
	st = read_token(r, (int)fd, b->token);
	if (!st)
		st = dial(r, &sa);
	if (!st)
		st = hello(r, rank, b->token);
	if (st)
		goto fail;
	b->ops = &run_ops;
	b->rank = (int)rank;
	b->size = r->size;
	b->impl = r;
	return OXR_OK;
fail:
	if (r->fd >= 0)
		close(r->fd);
	free(r);
	explicit_bzero(b->token, sizeof(b->token));
	return st;
}
