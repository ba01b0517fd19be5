/* SPDX-License-Identifier: MIT */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ox_peer.h"

int fd_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

void ox_send(int fd, int order, int32_t tag, int32_t sm, const oxr_cmo *o)
{
	static int32_t serial;
	oxr_ox_msg m = { .tag = tag, .serial = serial++, .sm = sm, .cmo = (oxr_cmo *)o };
	uint8_t *buf;
	size_t len;

	cr_assert_eq(oxr_ox_encode_alloc(&m, 1, order, &buf, &len), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	free(buf);
}

oxr_ox_msg ox_recv_within(int fd, int order, oxr_arena *a, int ms)
{
	oxr_decoder *d;
	oxr_ox_msg m;
	oxr_status_t st = OXR_AGAIN;

	cr_assert_eq(oxr_decoder_create(&d, OXR_DECODE_OX, order, NULL, a), OXR_OK);
	while (st == OXR_AGAIN) {
		uint8_t c;
		size_t used;

		cr_assert(fd_readable(fd, ms), "nothing came on fd %d in %d ms", fd, ms);
		cr_assert_eq(read(fd, &c, 1), 1, "the peer closed fd %d", fd);
		st = oxr_decoder_feed(d, &c, 1, 0, &used);
	}
	cr_assert_eq(st, OXR_OK, "%s", oxr_errmsg());
	m = *oxr_decoder_msg(d);
	oxr_decoder_destroy(d);
	return m;
}
