/* SPDX-License-Identifier: MIT */
/*
 * The one-byte byte-order exchange that opens every OX connection.
 * The engine writes first, the client reads first; on RFC-102 links asir has
 * both sides write first, which cannot deadlock because one byte always fits
 * in the socket buffer.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "oxr/ox.h"
#include "oxr_internal.h"

uint8_t oxr_order_byte(int order)
{
	return order == OXR_ORDER_LITTLE ? OXR_ORDER_BYTE_LITTLE : OXR_ORDER_BYTE_NETWORK;
}

static int valid_byte(uint8_t b)
{
	return b == OXR_ORDER_BYTE_NETWORK || b == OXR_ORDER_BYTE_LITTLE || b == OXR_ORDER_BYTE_BIG;
}

oxr_status_t oxr_order_resolve(uint8_t mine, uint8_t theirs, int *order)
{
	if (!valid_byte(mine))
		return oxr_err(OXR_ERR_INVAL, "byte order: our byte 0x%02x is not 0, 1 or 0xff", mine);
	if (!valid_byte(theirs))
		return oxr_err(OXR_ERR_PROTO,
			       "byte order: peer sent 0x%02x, not 0, 1 or 0xff (asir's launcher sends 2 "
			       "when the engine failed to start)", theirs);
	*order = mine == theirs && mine == OXR_ORDER_BYTE_LITTLE ? OXR_ORDER_LITTLE
								  : OXR_ORDER_NETWORK;
	return OXR_OK;
}

static oxr_status_t put_byte(int fd, uint8_t b)
{
	ssize_t n;

	do
		n = write(fd, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return OXR_OK;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, -1) == 1)
			return put_byte(fd, b);
	}
	return oxr_err(OXR_ERR_IO, "byte order: write failed: %s", n < 0 ? strerror(errno) : "short write");
}

static oxr_status_t get_byte(int fd, int timeout_ms, uint8_t *b)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int r;

	for (;;) {
		r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return oxr_err(OXR_ERR_IO, "byte order: poll failed: %s", strerror(errno));
		if (r == 0)
			return oxr_err(OXR_ERR_TIMEOUT,
				       "byte order: no byte from the peer within %d ms", timeout_ms);
		n = read(fd, b, 1);
		if (n == 1)
			return OXR_OK;
		if (n == 0)
			return oxr_err(OXR_ERR_CLOSED, "byte order: peer closed before sending its byte");
		if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return oxr_err(OXR_ERR_IO, "byte order: read failed: %s", strerror(errno));
	}
}

oxr_status_t oxr_order_exchange(int rfd, int wfd, int role, uint8_t mine,
				int timeout_ms, int *order)
{
	oxr_status_t st;
	uint8_t theirs = 0;

	if (!valid_byte(mine) || role < OXR_ROLE_ENGINE || role > OXR_ROLE_PEER)
		return oxr_err(OXR_ERR_INVAL, "byte order: bad role %d or byte 0x%02x", role, mine);
	if (role == OXR_ROLE_CLIENT) {
		if ((st = get_byte(rfd, timeout_ms, &theirs)) || (st = put_byte(wfd, mine)))
			return st;
	} else {
		if ((st = put_byte(wfd, mine)) || (st = get_byte(rfd, timeout_ms, &theirs)))
			return st;
	}
	return oxr_order_resolve(mine, theirs, order);
}
