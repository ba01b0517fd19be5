/* SPDX-License-Identifier: MIT */
/*
 * Sockets with timeouts: every link starts on one (the handshake and the
 * provider offers travel there), and the tcp provider keeps its stream on it.
 */
#ifndef OXR_TCP_SOCKET_H
#define OXR_TCP_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/transport.h"

/* tcp_socket.c */
oxr_status_t oxr_tcp_listen(int port, int *fd, int *bound);
oxr_status_t oxr_tcp_accept(int lfd, int timeout_ms, int *fd, char *addr, size_t alen);
oxr_status_t oxr_tcp_connect(const char *host, int port, int timeout_ms, int *fd);
/* "host:port" of fd's peer. */
void oxr_tcp_peer_name(int fd, char *addr, size_t alen);
/* TCP_NODELAY and the like, on a socket connected without oxr_tcp_connect. */
void oxr_tcp_tune_fd(int fd);
/* Starts a non-blocking connect to host:port (*fd: the socket, its connect
 * in progress or done); an error when host does not resolve. */
oxr_status_t oxr_tcp_connect_start(const char *host, int port, int *fd);
/* Same-host links get OXR_TCP_LOCAL_CC; every link gets TCP_NODELAY. */
void oxr_tcp_tune_link(const oxr_ctx *c, int fd);
/* Exactly n bytes written or read on a blocking socket before deadline_ms
 * (CLOCK_MONOTONIC ms, oxr_now_ms). */
oxr_status_t oxr_tcp_io(int fd, void *buf, size_t n, int writing, int64_t deadline_ms,
			const char *addr);
int64_t oxr_now_ms(void);

/* unix_socket.c: the same over a Unix-domain socket path. */
struct sockaddr_un;
oxr_status_t oxr_unix_addr(const char *path, struct sockaddr_un *sa);
oxr_status_t oxr_unix_listen(const char *path, int *fd);
oxr_status_t oxr_unix_connect(const char *path, int timeout_ms, int *fd);

#endif
