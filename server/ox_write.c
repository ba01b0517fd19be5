/* SPDX-License-Identifier: MIT */
/*
 * One OX message written whole to a channel of the engine or the master.
 * A gather list, as the transport sends: headers and small parts in one
 * scratch buffer, payloads of BIG bytes or more (a big integer's words)
 * written from the object itself, with no copy and no buffer to fault in.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cmo_encode.h"
#include "ox_write.h"
#include "oxr_internal.h"

#define BIG 16384
#define MAX_IOV 1024 /* Linux's UIO_MAXIOV; POSIX allows no fewer than 16 */

oxr_status_t oxr_ox_write(int fd, const oxr_ox_msg *m, int order, const char *to)
{
	uint8_t small[512];
	struct iovec one, *iov;
	void *mem;
	int niov;
	size_t total;
	oxr_status_t st = oxr_ox_encode_iov(m, order, BIG, small, sizeof(small), &one, &mem, &iov,
					    &niov, &total);

	if (st)
		return st;
	for (;;) {
		ssize_t k;
		for (; niov && !iov->iov_len; iov++, niov--)
			;
		if (!niov)
			break;
		k = writev(fd, iov, niov < MAX_IOV ? niov : MAX_IOV);
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
		for (; niov && (size_t)k >= iov->iov_len; iov++, niov--)
			k -= (ssize_t)iov->iov_len;
		if (niov) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	free(mem);
	return st;
}
