/* SPDX-License-Identifier: MIT */
/*
 * One rank under oxr-run that speaks the rendezvous' wire format by hand
 * (include/oxr/boot_run.h), as a rank built against an older or newer oxr
 * would: what oxr-run must accept or refuse of them.
 *
 *   boot_raw v1   a hello of version 1, then boot_child ok's rounds (an
 *                 allgather of 100 bytes, 3 barriers, 0 bytes, 200003 bytes),
 *                 checked; prints `rank R size N kind raw-v1`
 *   boot_raw v3   a hello of version 3, which oxr-run must refuse; prints
 *                 `refused: MESSAGE`
 * Exits 0 when oxr-run did as expected, else 1 with a message on stderr.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "oxr/boot.h"
#include "oxr/boot_run.h"

static int rank = -1;

static void fail(const char *what)
{
	fprintf(stderr, "boot_raw: rank %d: %s\n", rank, what);
	exit(1);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void xfer(int fd, void *buf, size_t n, int sending)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

		if (k <= 0)
			fail(sending ? "send to oxr-run failed" : "oxr-run closed the connection");
		p += k;
		n -= (size_t)k;
	}
}

/* The hex token from the pipe oxr-run gave this rank. */
static void read_token(uint8_t token[OXR_TOKEN_BYTES])
{
	const char *v = getenv("OXR_RUN_TOKEN_FD");
	char hex[2 * OXR_TOKEN_BYTES];
	size_t got = 0;
	int fd = v ? atoi(v) : -1, i;

	while (fd >= 0 && got < sizeof(hex)) {
		ssize_t k = read(fd, hex + got, sizeof(hex) - got);

		if (k <= 0)
			fail("cannot read the token");
		got += (size_t)k;
	}
	if (fd < 0)
		fail("OXR_RUN_TOKEN_FD is not set");
	for (i = 0; i < OXR_TOKEN_BYTES; i++) {
		unsigned x;

		if (sscanf(hex + 2 * i, "%2x", &x) != 1)
			fail("the token is not hex");
		token[i] = (uint8_t)x;
	}
}

static int dial(void)
{
	const char *v = getenv("OXR_RUN_ADDR");
	const char *colon = v ? strrchr(v, ':') : NULL;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[INET_ADDRSTRLEN] = "";
	int fd;

	if (!colon || (size_t)(colon - v) >= sizeof(host))
		fail("OXR_RUN_ADDR is not IPV4:PORT");
	memcpy(host, v, (size_t)(colon - v));
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		fail("cannot connect to oxr-run");
	return fd;
}

/* A reply's header; status 1's message into msg (NUL-terminated). */
static uint32_t reply(int fd, uint32_t *seq, uint64_t *len, char msg[OXR_RUN_MAX_MSG + 1])
{
	uint8_t h[OXR_RUN_HDR_BYTES];
	uint32_t status;

	xfer(fd, h, sizeof(h), 0);
	status = get32(h);
	*seq = get32(h + 4);
	*len = get32(h + 8) | (uint64_t)get32(h + 12) << 32;
	msg[0] = 0;
	if (status == 1 && *len <= OXR_RUN_MAX_MSG) {
		xfer(fd, msg, (size_t)*len, 0);
		msg[*len] = 0;
	}
	return status;
}

static uint8_t blob_byte(int r, size_t i, size_t len)
{
	return (uint8_t)((size_t)r * 7 + i + len);
}

/* Version 1's allgather of len bytes a rank, round seq, checked. */
static void gather(int fd, int n, uint32_t seq, size_t len)
{
	uint8_t h[OXR_RUN_HDR_BYTES], *buf = malloc((size_t)n * len + 1);
	char msg[OXR_RUN_MAX_MSG + 1];
	uint32_t rseq;
	uint64_t rlen;
	size_t i;
	int r;

	if (!buf)
		fail("out of memory");
	put32(h, OXR_RUN_OP_ALLGATHER);
	put32(h + 4, seq);
	put32(h + 8, (uint32_t)len);
	put32(h + 12, 0);
	for (i = 0; i < len; i++)
		buf[i] = blob_byte(rank, i, len);
	xfer(fd, h, sizeof(h), 1);
	xfer(fd, buf, len, 1);
	if (reply(fd, &rseq, &rlen, msg) || rseq != seq || rlen != (uint64_t)n * len)
		fail(*msg ? msg : "a malformed allgather reply");
	xfer(fd, buf, (size_t)rlen, 0);
	for (r = 0; r < n; r++)
		for (i = 0; i < len; i++)
			if (buf[(size_t)r * len + i] != blob_byte(r, i, len))
				fail("a wrong byte in an allgather");
	free(buf);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	uint32_t version = !strcmp(mode, "v1") ? 1 : !strcmp(mode, "v3") ? 3 : 0;
	const char *size = getenv("OXR_RUN_SIZE"), *r = getenv("OXR_RUN_RANK");
	uint8_t h[OXR_RUN_HELLO_BYTES];
	char msg[OXR_RUN_MAX_MSG + 1];
	uint32_t status, seq;
	uint64_t len;
	int fd, n = size ? atoi(size) : 0, i;

	if (!version) {
		fprintf(stderr, "boot_raw: unknown mode '%s'\n", mode);
		return 2;
	}
	rank = r ? atoi(r) : -1;
	memcpy(h, "OXRB", 4);
	put32(h + 4, version);
	put32(h + 8, (uint32_t)rank);
	read_token(h + 12);
	fd = dial();
	xfer(fd, h, sizeof(h), 1);
	status = reply(fd, &seq, &len, msg);
	if (version == 3) {
		if (status != 1)
			fail("oxr-run took a hello of version 3");
		printf("refused: %s\n", msg);
		return 0;
	}
	if (status || seq || len)
		fail(*msg ? msg : "a malformed answer to the hello");
	printf("rank %d size %d kind raw-v1\n", rank, n);
	fflush(stdout);
	gather(fd, n, 1, 100);
	for (i = 0; i < 4; i++)
		gather(fd, n, 2 + (uint32_t)i, 0);
	gather(fd, n, 6, 200003);
	close(fd);
	return 0;
}
