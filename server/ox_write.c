/* SPDX-License-Identifier: MIT */
/* One OX message written whole to a channel of the engine or the master. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ox_write.h"
#include "oxr_internal.h"

oxr_status_t oxr_ox_write(int fd, const oxr_ox_msg *m, int order, const char *to)
{
	uint8_t *buf, *p;
	size_t len, n;
	oxr_status_t st = oxr_ox_encode_alloc(m, 1, order, &buf, &len);

	if (st)
		return st;
	for (p = buf, n = len; n && !st;) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) { /* a non-blocking fd handed over */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			(void)poll(&pfd, 1, 1000);
			continue;
		}
		if (k <= 0) {
			st = oxr_err(k == 0 || errno == EPIPE ? OXR_ERR_CLOSED : OXR_ERR_IO,
				     "write to %s: %s", to, k < 0 ? strerror(errno) : "closed");
			break;
		}
		p += k;
		n -= (size_t)k;
	}
	free(buf);
	return st;
}
