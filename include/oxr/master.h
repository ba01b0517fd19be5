/* SPDX-License-Identifier: MIT */
/*
 * The master side of OpenXM (RFC-100 client, RFC-102 driver): start N
 * oxr-servers, push data and run commands on each, and drive them as a
 * group (ranks, links, bcast, reduce, barrier, reset).  What Risa/Asir's
 * ox_launch / ox_push_cmo / ox_cmd / ox_pop_cmo / ox_*_102 do, as a C API.
 *
 * Every call returns a status; a server's CMO_ERROR2 reply is
 * OXR_ERR_PEER with the server's message in oxr_errmsg().
 *
 * Environment: OXR_SERVER (the oxr-server binary; default: next to the
 * calling program, then $PATH) and what oxr/server.h lists, passed on to
 * the servers.
 */
#ifndef OXR_MASTER_H
#define OXR_MASTER_H

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxr_master oxr_master;

/* Starts n local oxr-servers (server: the binary, NULL: OXR_SERVER or the
 * default), each with a data and a control channel. */
OXR_API oxr_status_t oxr_master_launch(const char *server, int n, oxr_master **out);
/* Starts n oxr-servers with a cluster's launcher, the words before the
 * server's command line: "mpirun -n 4", "srun -n 4 --mpi=pmix".  Each
 * server connects back (--connect HOST:PORT, HOST from OXR_MASTER_HOST or
 * this host's name) and proves a one-time password carrying its launcher
 * rank, which becomes its RFC-102 rank.  NULL or "": oxr_master_launch. */
OXR_API oxr_status_t oxr_master_launch_with(const char *launcher, const char *server, int n,
					    int timeout_ms, oxr_master **out);
/* Starts n local servers, server i from the binary servers[i] (NULL: the
 * default of oxr_master_launch), each as oxr_master_launch starts one (data
 * channel on fds 3 and 4, --control-fd 5): a group can mix oxr-servers
 * with other OpenXM engines started the same way (a test's ox_asir peer).
 * Errors: as oxr_master_launch. */
OXR_API oxr_status_t oxr_master_launch_each(const char *const *servers, int n, oxr_master **out);
/* Shuts every server down (SM_shutdown, then SIGKILL after timeout_ms). */
OXR_API void oxr_master_destroy(oxr_master *m, int timeout_ms);
/* How many servers m drives. */
OXR_API int oxr_master_size(const oxr_master *m);
/* The data channel's socket of server i (for tests that write raw bytes). */
OXR_API int oxr_master_data_fd(const oxr_master *m, int i);
/* The byte order negotiated with server i. */
OXR_API int oxr_master_order(const oxr_master *m, int i);

/* Waits for server i's process to end (its waitpid status). */
OXR_API oxr_status_t oxr_master_wait(oxr_master *m, int i, int timeout_ms, int *status);

/* RFC-100: push an object, send a command, pop the top (SM_popCMO and its
 * reply; a CMO_ERROR2 reply is returned as the object, status OXR_OK). */
OXR_API oxr_status_t oxr_master_push(oxr_master *m, int i, const oxr_cmo *o);
/* Sends the OX_COMMAND sm to server i. */
OXR_API oxr_status_t oxr_master_cmd(oxr_master *m, int i, int32_t sm);
/* SM_popCMO and its reply from server i, allocated from a. */
OXR_API oxr_status_t oxr_master_pop(oxr_master *m, int i, int timeout_ms, oxr_arena *a,
				    oxr_cmo **out);
/* Reads the next reply (an OX_DATA) without asking: after an SM_popString
 * sent with oxr_master_cmd, say. */
OXR_API oxr_status_t oxr_master_recv(oxr_master *m, int i, int timeout_ms, oxr_arena *a,
				     oxr_cmo **out);
/* Pushes args (last first) and n and name, then SM_executeFunction. */
OXR_API oxr_status_t oxr_master_call(oxr_master *m, int i, const char *fn, int argc,
				     const oxr_cmo *const *args);
/* Pops the top and fails (OXR_ERR_PEER, the message) when it is an error;
 * out may be NULL. */
OXR_API oxr_status_t oxr_master_result(oxr_master *m, int i, int timeout_ms, oxr_arena *a,
				       oxr_cmo **out);
/* RFC-100 reset of server i: SM_control_reset_connection, drop the data
 * channel up to the server's OX_SYNC_BALL, send ours. */
OXR_API oxr_status_t oxr_master_reset(oxr_master *m, int i, int timeout_ms);

/* RFC-102, over all servers: ranks 0..n-1 and every pair linked.  Each
 * server's mathcap says whether it is an oxr-server; oxr-servers get a
 * token (unless plain), so their links to each other are authenticated and
 * move to RDMA where both ends can, while every link to another engine
 * (ox_asir) stays plain RFC-102 TCP, the bytes it speaks.  plain: every
 * link plain. */
OXR_API oxr_status_t oxr_master_group(oxr_master *m, int plain, int timeout_ms);
/* Treats server i as a plain OpenXM engine (as if its mathcap said so):
 * before oxr_master_group. */
OXR_API void oxr_master_set_plain(oxr_master *m, int i);
/* RFC-102 links over Unix-domain sockets, as asir's spawn102_local makes
 * them (generate_port(1)): for every pair a new socket path in dir is the
 * port, a CMO_STRING, of SM_tcp_accept_102 and SM_tcp_connect_102 (whose
 * host is then CMO_NULL), for oxr-servers and other engines alike.  The
 * master removes each path once its link is made (asir's servers leave
 * theirs behind).  dir NULL: a new directory under $TMPDIR (or /tmp),
 * removed with the master.  Before oxr_master_group.  Errors:
 * OXR_ERR_INVAL (the group is formed already, or dir is too long for a
 * socket path), OXR_ERR_IO (the directory cannot be made). */
OXR_API oxr_status_t oxr_master_set_unix(oxr_master *m, const char *dir);
/* Kills server i (SM_control_kill: a process failure, for tests and for
 * giving up on a hung one). */
OXR_API oxr_status_t oxr_master_kill(oxr_master *m, int i);
/* Starts a new server in the place of server i (killed first if alive),
 * gives it rank i and the group's token and links it to every other; it
 * takes the group's epoch.  Then oxr_master_reset_102 makes the group
 * whole again, in a new epoch. */
OXR_API oxr_status_t oxr_master_restart(oxr_master *m, int i, int timeout_ms);
/* Each pushes the result on every server (RFC-102 conventions). */
OXR_API oxr_status_t oxr_master_bcast(oxr_master *m, int root, const oxr_cmo *o);
/* SM_reduce_102 of every server's top with op onto root (its result there,
 * CMO_NULL elsewhere). */
OXR_API oxr_status_t oxr_master_reduce(oxr_master *m, int root, const char *op);
/* SM_reset_102 everywhere, after an RFC-100 reset of every server. */
OXR_API oxr_status_t oxr_master_reset_102(oxr_master *m, int timeout_ms);
/* Waits until every server has run all it was sent (SM_getsp round trip)
 * and checks that none has an error on top of its stack. */
OXR_API oxr_status_t oxr_master_sync(oxr_master *m, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
