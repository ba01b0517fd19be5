/* SPDX-License-Identifier: MIT */
/*
 * The OX engine of oxr-server: an RFC-100 stack machine on a data channel,
 * with the RFC-102 commands (278-283) run over an oxr group, so that an
 * OpenXM master (Risa/Asir's ox_* functions, or oxr-master) drives a server
 * group whose links are oxr links.
 *
 * The engine reads OX messages from the master, pushes OX_DATA objects on
 * its stack and runs OX_COMMANDs; it writes only in reply to SM_popCMO,
 * SM_popString and a reset (RFC-100: servers are silent).  Every failure of
 * a command, bad input from the master included, is a CMO_ERROR2
 * [Integer32 serial, Integer32 code, String message] on the stack, and the
 * engine goes on with the next message.  Only bytes that cannot be framed
 * (a broken OX stream) end the session, with a message in oxr_errmsg().
 *
 * Links between servers (SM_tcp_accept_102 / SM_tcp_connect_102) are plain
 * RFC-102 TCP links, the bytes ox_asir speaks, unless the master gave the
 * group a token (the in-server function oxr_set_token, which oxr-master
 * calls): then they are authenticated oxr links and move to RDMA when both
 * ends have a verbs device.  A plain OpenXM master never sends that, so its
 * groups keep working with ox_asir peers unchanged.
 *
 * Environment: the variables of oxr/transport.h, and
 *   OXR_SERVER_MAX_STACK   objects the stack may hold (default 1048576)
 *   OXR_SERVER_TIMEOUT_MS  bound of one RFC-102 call: a link accept, a
 *                          collective (default -1: none; a master's reset
 *                          ends any wait)
 */
#ifndef OXR_SERVER_H
#define OXR_SERVER_H

#include <signal.h>
#include <stdint.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr/status.h"
#include "oxr/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxr_engine oxr_engine;

enum oxr_engine_flags {
	/* RFC-102 link commands fail instead of opening sockets (the fuzzer). */
	OXR_ENGINE_NO_NET = 1,
};

/* An engine writing its replies to wfd in byte order `order` (already
 * negotiated).  ctx may be NULL: one is made when a group is first needed. */
OXR_API oxr_status_t oxr_engine_create(oxr_ctx *ctx, int wfd, int order, unsigned flags,
				       oxr_engine **out);
/* Frees e, its stack, its group and the context it made (a ctx passed to
 * oxr_engine_create stays the caller's); wfd stays open.  NULL: nothing. */
OXR_API void oxr_engine_destroy(oxr_engine *e);
/* Feeds bytes of the data channel; complete messages are run at once.
 * OXR_OK: all consumed; an error: the stream is broken, the session ends. */
OXR_API oxr_status_t oxr_engine_input(oxr_engine *e, const void *buf, size_t len);
/* Serves the data channel on rfd until SM_shutdown (OXR_OK) or the master
 * closes it (OXR_ERR_CLOSED); also moves the group's links on while idle. */
OXR_API oxr_status_t oxr_engine_serve(oxr_engine *e, int rfd);
/* 1 once SM_shutdown was run. */
OXR_API int oxr_engine_finished(const oxr_engine *e);
/* The flag a SIGUSR1 handler sets (RFC-100 reset: abandon the work, send
 * OX_SYNC_BALL, drop everything until the master's OX_SYNC_BALL). */
OXR_API volatile sig_atomic_t *oxr_engine_reset_flag(oxr_engine *e);
/* Stack depth, and the object at depth i from the top (0: top); for tests. */
OXR_API size_t oxr_engine_depth(const oxr_engine *e);
/* The object at depth i (NULL past the bottom); it stays the engine's. */
OXR_API const oxr_cmo *oxr_engine_peek(const oxr_engine *e, size_t i);

/* The engine's mathcap (CMO_MATHCAP), built into a. */
OXR_API oxr_cmo *oxr_engine_mathcap(oxr_arena *a);

/* An engine's channels to its master, as OpenXM's ox launcher opens them
 * (oxr-server --listen/--connect).  pw, when not NULL, is the launcher's
 * one-time password: whoever connects writes it and a NUL, the acceptor
 * checks it (within 30 s) and fails with OXR_ERR_AUTH when it differs. */
/* Listens on port (0: the OS picks); *bound gets the port. */
OXR_API oxr_status_t oxr_channel_listen(int port, int *lfd, int *bound);
/* One channel from lfd; timeout_ms < 0 waits forever for the connection. */
OXR_API oxr_status_t oxr_channel_accept(int lfd, const char *pw, int timeout_ms, int *fd);
/* One channel to "HOST:PORT", connected within timeout_ms. */
OXR_API oxr_status_t oxr_channel_connect(const char *host_port, const char *pw, int timeout_ms,
					 int *fd);

#ifdef __cplusplus
}
#endif
#endif
