/* SPDX-License-Identifier: MIT */
/*
 * The tcp provider: the link's stream stays on the socket the handshake
 * ran on.  It offers nothing at the upgrade (every link that no other
 * provider carries is a tcp link), needs no device and no group state;
 * epoll's readiness on the socket drives the engine (OXR_LINK_CAP_FD_STREAM),
 * and the kernel's socket buffers are the flow control.
 */
#include <sys/socket.h>

#include "provider.h"

static ssize_t tcp_recv(oxr_group *g, struct link *l, void *buf, size_t n, int arena)
{
	(void)g;
	(void)arena;
	return recv(oxr_link_fd(l), buf, n, 0);
}

static ssize_t tcp_sendv(oxr_group *g, struct link *l, const struct iovec *iov, int niov)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)niov };

	(void)g;
	return sendmsg(oxr_link_fd(l), &mh, MSG_NOSIGNAL);
}

const struct oxr_link_ops oxr_tcp_link_ops = {
	.name = "tcp",
	.caps = OXR_LINK_CAP_FD_STREAM,
	.recv = tcp_recv,
	.sendv = tcp_sendv,
};

static oxr_status_t tcp_ctx_open(oxr_ctx *c, const oxr_ctx_params *p, int required, void **pctx)
{
	(void)c;
	(void)p;
	(void)required;
	*pctx = NULL;
	return OXR_OK;
}

const struct oxr_provider oxr_tcp_provider = {
	.name = "tcp",
	.ctx_open = tcp_ctx_open,
	.link_ops = &oxr_tcp_link_ops,
};
