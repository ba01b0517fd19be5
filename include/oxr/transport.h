/* SPDX-License-Identifier: MIT */
/*
 * Peer groups: a context (configured from the environment), a group of
 * nserver processes of which this one is `rank`, links to the other ranks
 * opened RFC-102 style (accept on a port / connect to host:port, naming the
 * peer's rank), and OX messages sent to and received from a rank.
 *
 * Links come in two modes, and the choice is always explicit:
 *   OXR_LINK_AUTH    between oxr processes: after the byte-order exchange the
 *                    connecting side proves the group's token and the rank it
 *                    claims (HMAC-SHA256 challenge-response, both ways); a
 *                    wrong token or an unexpected rank is refused and logged
 *                    with the peer's address.
 *   OXR_LINK_OPENXM  the RFC-102 wire format exactly as ox_asir speaks it (the
 *                    one-byte exchange, both sides writing first, then plain
 *                    OX messages); it cannot carry a token, so whoever connects
 *                    to the port is the peer.  Use it only for OpenXM peers.
 *
 * Environment (read by oxr_ctx_create into its oxr_ctx_params, oxr/params.h;
 * a malformed value is an error naming it):
 *   OXR_TRANSPORT       auto | tcp | verbs    (default auto: an RDMA device when
 *                       one works, else tcp; verbs: a device or an error)
 *   OXR_DEVICE          the RDMA device, "name" or "name:port" (default: the
 *                       hardware HCA nearest this process, else rxe/siw)
 *   OXR_GID_INDEX       GID table index (default: the IPv4-mapped RoCE v2 GID)
 *   OXR_VERBS_SLOTS, OXR_VERBS_SLOT_BYTES  receive ring per verbs link
 *                       (default 64 x 8192 bytes)
 *   OXR_VERBS_PUT_INLINE  puts up to this many bytes travel in the link's
 *                       stream (one write, checked at the target before they
 *                       land) instead of by RDMA WRITE into the window plus a
 *                       notification (default 256; 0: every put by RDMA WRITE)
 *   OXR_VERBS_RNDV      a piece of a message of at least this many bytes goes
 *                       by rendezvous: the receiver RDMA-READs it from the
 *                       sender's memory, registered for that message only
 *                       (default 65536; 0: every byte copied through the ring)
 *   OXR_VERBS_RCACHE_MB receive memory kept registered between messages, in
 *                       MiB (default 256; 0: register per read)
 *   OXR_VERBS_CM        tcp | rdmacm: QPs connected by an exchange over the
 *                       link's socket (default, perftest's way) or by librdmacm
 *   OXR_RDMA_ADDR       with rdmacm: the IP address of this rank's RDMA device
 *                       (default: the IPv4 of its IPv4-mapped GID; a link-local
 *                       IPv6 address needs %interface)
 *   OXR_VERBS_TIMEOUT, OXR_VERBS_RETRY  QP ACK timeout exponent (4.096 us *
 *                       2^t, default 14 = 67 ms) and retries (default 7): a
 *                       dead peer fails a verbs link within about their product
 *   OXR_LOG_LEVEL       error | warn | info | debug   (default warn; to stderr)
 *   OXR_SPIN_US         microseconds a blocking wait polls before it sleeps in
 *                       epoll (default 50; 0 sleeps at once)
 *   OXR_LINK_TIMEOUT_MS connect, accept and handshake bound (default 30000)
 *   OXR_HEARTBEAT_MS    0 (default): off.  H > 0: a ring failure detector;
 *                       each rank pings the next live rank below it when it
 *                       heard nothing from it for H/3, and one silent for H
 *                       has failed (the group is revoked naming it, and every
 *                       survivor marks it failed): finds a stopped or hung
 *                       rank whose links never break.  H must exceed the
 *                       longest stretch a rank computes outside oxr calls.
 *   OXR_TCP_LOCAL_CC    the TCP congestion control of links whose two ends
 *                       are this host (default reno: no pacing; "system"
 *                       keeps the system's); links to other hosts keep it
 *   OXR_RECV_QUEUE_BYTES  bytes of received, not yet taken messages a link
 *                       buffers before it stops reading (TCP then pushes back
 *                       on the sender; default 64 MiB)
 *   OXR_ORDER           little | network: the byte order oxr asks for on its
 *                       links (default: the host's)
 *   OXR_HOST            the address other ranks reach this one at (oxr_group_boot)
 *   and the OXR_CMO_* decoder limits of oxr/cmo.h.
 */
#ifndef OXR_TRANSPORT_H
#define OXR_TRANSPORT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "oxr/boot.h"
#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr/params.h"
#include "oxr/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxr_ctx oxr_ctx;
typedef struct oxr_group oxr_group;

/* A context configured from the environment (oxr_ctx_create_with(NULL,
 * out)), the caller's: destroy it after its groups.  Errors: OXR_ERR_INVAL
 * (a malformed OXR_* variable, named), OXR_ERR_NOMEM, and with
 * OXR_TRANSPORT=verbs no usable device. */
OXR_API oxr_status_t oxr_ctx_create(oxr_ctx **out);
/* Frees c (NULL: nothing); its groups must be destroyed first. */
OXR_API void oxr_ctx_destroy(oxr_ctx *c);
/* "verbs" or "tcp": what this context's authenticated links use (OpenXM
 * links are always tcp; a verbs context falls back to tcp per link when the
 * peer has no verbs, unless OXR_TRANSPORT=verbs). */
OXR_API const char *oxr_ctx_transport(const oxr_ctx *c);
/* While *flag is nonzero, every wait of the context's groups (but a send's,
 * which finishes what it began) returns OXR_ERR_INTR: an engine's signal
 * handler sets it to abandon work (an RFC-100 reset).  NULL: never. */
OXR_API void oxr_ctx_set_interrupt(oxr_ctx *c, volatile sig_atomic_t *flag);
/* Verbs queue pairs and memory registrations this process holds now, for
 * leak checks (0 and 0 without the verbs backend). */
OXR_API void oxr_verbs_objects(uint64_t *qps, uint64_t *mrs);

/* A group of nserver ranks of which this process is rank, with no link yet
 * (oxr_link_*); the caller's, destroyed before c.  Errors: OXR_ERR_INVAL
 * (rank not in 0..nserver-1), OXR_ERR_NOMEM, OXR_ERR_IO. */
OXR_API oxr_status_t oxr_group_create(oxr_ctx *c, int nserver, int rank, oxr_group **out);
/* Closes every link; pending receives are dropped.  The windows left are
 * freed too; barriers, crystal routers and requests must go first. */
OXR_API void oxr_group_destroy(oxr_group *g);
/* How many ranks the group has (fewer after oxr_group_shrink). */
OXR_API int oxr_group_size(const oxr_group *g);
/* This process's rank in the group. */
OXR_API int oxr_group_rank(const oxr_group *g);
/* The group's epoch, one more after each reset or shrink. */
OXR_API uint32_t oxr_group_epoch(const oxr_group *g);
/* The number of the next collective object made on g (barriers and crystal
 * routers name their windows with it): 0, 1, 2, ... on every rank while the
 * ranks make the same objects in the same order.  Ranks that made
 * different numbers of objects on a group that failed under them agree
 * again at its shrink: every survivor goes on from the highest count among
 * them, so no number names two objects. */
OXR_API uint32_t oxr_group_next_object(oxr_group *g);
/* The secret OXR_LINK_AUTH links prove (32 bytes, e.g. oxr_boot_token()). */
OXR_API oxr_status_t oxr_group_set_token(oxr_group *g, const uint8_t *token, size_t len);

/*
 * A whole group from the bootstrap (oxr-run, PMIx or a singleton): size,
 * rank and token from it, every pair of ranks linked (OXR_LINK_AUTH), each
 * rank listening on a port the OS chose and publishing host:port through the
 * bootstrap's allgather.  The host other ranks connect to is OXR_HOST, or
 * 127.0.0.1 when it is not set (right for oxr-run, which starts local ranks).
 */
OXR_API oxr_status_t oxr_group_boot(oxr_ctx *c, oxr_boot *b, oxr_group **out);

enum oxr_link_mode {
	OXR_LINK_AUTH = 0,
	OXR_LINK_OPENXM = 1,
};

/* Listens on port (0: the OS chooses; *bound gets the port).  One listening
 * socket serves every later accept on that port. */
OXR_API oxr_status_t oxr_link_listen(oxr_group *g, int port, int *bound);
/* Accepts the link to peer_rank on a port opened by oxr_link_listen (or
 * opens it now).  timeout_ms < 0: OXR_LINK_TIMEOUT_MS. */
OXR_API oxr_status_t oxr_link_accept(oxr_group *g, int port, int peer_rank, int mode,
				     int timeout_ms);
/* Connects the link to peer_rank, which accepts on host:port; timeout_ms as
 * oxr_link_accept's.  Errors of both: OXR_ERR_TIMEOUT, OXR_ERR_AUTH (the
 * token or rank did not match), OXR_ERR_IO, OXR_ERR_INVAL (a bad rank, or
 * a link to it is open already). */
OXR_API oxr_status_t oxr_link_connect(oxr_group *g, const char *host, int port, int peer_rank,
				      int mode, int timeout_ms);
/* The same over a Unix-domain socket path (an RFC-102 String port, as asir's
 * generate_port(1) makes): accept binds and listens on path (which must
 * not exist), takes one peer and removes path; connect retries until path
 * accepts or timeout_ms passes.  A path longer than sun_path is an error. */
OXR_API oxr_status_t oxr_link_accept_path(oxr_group *g, const char *path, int peer_rank, int mode,
					  int timeout_ms);
/* (connect: see oxr_link_accept_path.) */
OXR_API oxr_status_t oxr_link_connect_path(oxr_group *g, const char *path, int peer_rank, int mode,
					   int timeout_ms);
/* 1 if a link to peer is open. */
OXR_API int oxr_link_is_open(const oxr_group *g, int peer);
/* 1 if the link to peer has failed or ended.  In a booted group whose links
 * open on first use, a link not open yet starts opening here, so a rank
 * that waits on a peer which never wrote to it still learns of its death. */
OXR_API int oxr_link_lost(oxr_group *g, int peer);
/* 1 if the group's links open on first use (a booted group under
 * OXR_LINKS=ondemand), 0 if they were all opened at boot or by hand.  An
 * algorithm free to vary its partners keeps them fixed then: each new
 * partner is a handshake and a link held until the group ends. */
OXR_API int oxr_group_links_on_demand(const oxr_group *g);
/* "verbs" or "tcp": what carries the link's stream; NULL when no link is open. */
OXR_API const char *oxr_link_transport(const oxr_group *g, int peer);
/* Where the peer of an authenticated link runs: 1 on this host (the same
 * OXR_HOST_ID: the same kernel boot and host name by default), 0 on
 * another, -1 when no link is open or it is an OpenXM link (the RFC-102
 * handshake cannot tell). */
OXR_API int oxr_link_same_host(const oxr_group *g, int peer);
/* Negotiated byte order of the link (OXR_ORDER_*), or an error. */
OXR_API oxr_status_t oxr_link_order(const oxr_group *g, int peer, int *order);

/* ---- messages ------------------------------------------------------- */

/* A received message and the memory it lives in.  The struct itself is in
 * that arena too: oxr_rmsg_free frees it all, never free() it. */
typedef struct oxr_rmsg {
	oxr_ox_msg msg;
	int peer;
	oxr_arena *arena; /* owned; freed by oxr_rmsg_free */
} oxr_rmsg;

/* Frees m, its message and its arena (NULL: nothing). */
OXR_API void oxr_rmsg_free(oxr_rmsg *m);

/*
 * Sends one OX message (OX_DATA, OX_COMMAND or OX_SYNC_BALL) to peer.  The
 * serial is the group's next (one counter for all links, as asir does).
 * Returns when every byte is with the kernel; while it waits it keeps
 * reading the group's links, so two ranks sending to each other at once
 * cannot deadlock.
 */
OXR_API oxr_status_t oxr_send(oxr_group *g, int peer, const oxr_ox_msg *m);
/* Receives the next message from peer, in order; timeout_ms < 0 waits forever. */
OXR_API oxr_status_t oxr_recv(oxr_group *g, int peer, int timeout_ms, oxr_rmsg **out);

/* Non-blocking forms.  The message and the memory of its CMO must stay
 * valid until the request completes.  Receives from one peer get its
 * messages in the order they were posted, whichever is tested first; an
 * oxr_recv comes after the receives already posted. */
typedef struct oxr_req oxr_req;
/* Posts a send of m to peer; *req is the caller's (oxr_req_free). */
OXR_API oxr_status_t oxr_isend(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req **req);
/* Posts a receive from peer; *req is the caller's (oxr_req_free). */
OXR_API oxr_status_t oxr_irecv(oxr_group *g, int peer, oxr_req **req);
/* *done = 1 once complete; returns the operation's status then. */
OXR_API oxr_status_t oxr_req_test(oxr_req *r, int *done);
/* Waits for r to complete (timeout_ms < 0: forever); its status, or
 * OXR_ERR_TIMEOUT. */
OXR_API oxr_status_t oxr_req_wait(oxr_req *r, int timeout_ms);
/* The received message of a completed irecv (ownership passes to the caller). */
OXR_API oxr_rmsg *oxr_req_take(oxr_req *r);
/* Frees r (NULL: nothing).  A send not begun is withdrawn; one begun is
 * finished first, so its message's memory may go once this returns.  A
 * receive not done is withdrawn, a received message not taken freed. */
OXR_API void oxr_req_free(oxr_req *r);

/* ---- one-sided windows --------------------------------------------- */

/*
 * A window is memory of this rank that its peers may write into with
 * oxr_put.  Creating one is collective over the ranks this one has links
 * to: each hands its descriptor (id, epoch, length; on verbs also address
 * and rkey) to every peer and waits for theirs, so a put is checked against
 * the target's bounds before it leaves.  The target checks every put again
 * (id, epoch, bounds, and that it came over an authenticated link) before a
 * byte lands; anything else is dropped and logged.  On TCP a put travels as
 * a private OX frame on the link, in order with the messages.
 */
typedef struct oxr_win oxr_win;

typedef struct oxr_win_note {
	int peer;        /* who wrote */
	uint32_t value;  /* the notify value it passed */
	uint64_t offset; /* where, and how much */
	size_t len;
} oxr_win_note;

/* Window id over base[0..len), which stays the caller's and must outlive
 * the window; *out is freed by oxr_win_destroy or with the group.  Ids
 * 0x6f780000 to 0x6f78ffff are the barriers' and crystal routers'.  Errors:
 * OXR_ERR_INVAL (NULL base, id in use), OXR_ERR_NOMEM, OXR_ERR_TIMEOUT and
 * the links' errors while the descriptors are swapped. */
OXR_API oxr_status_t oxr_win_create(oxr_group *g, uint32_t id, void *base, size_t len,
				    int timeout_ms, oxr_win **out);
/* Zeroed, page-aligned memory for a window of g: on verbs from the NUMA node
 * of the group's device (where the HCA's DMA is cheapest), else plain.
 * Free it with oxr_win_free, with the same g and len, after the window. */
OXR_API oxr_status_t oxr_win_alloc(oxr_group *g, size_t len, void **out);
/* Frees memory of oxr_win_alloc. */
OXR_API void oxr_win_free(oxr_group *g, void *p, size_t len);
/* Closes the window (NULL: nothing); its memory stays the caller's. */
OXR_API void oxr_win_destroy(oxr_win *w);
/* Writes src[0..len) to peer's window id at offset.  Returns when the bytes
 * have left this process (local completion); the target sees them land, in
 * order with every other put and message from this rank, through
 * oxr_win_wait.  src need not outlive the call. */
OXR_API oxr_status_t oxr_put(oxr_group *g, int peer, uint32_t id, uint64_t offset, const void *src,
			     size_t len, uint32_t notify);
/* A put without a note, for targets that watch their memory (a flag word,
 * as perftest's ib_write_lat and MPI codes do).  On verbs it is an RDMA
 * WRITE of any size, landed by the target's HCA without the target's CPU,
 * and the call returns once that HCA has the bytes (remote completion).
 * On TCP it travels in the stream like oxr_put and lands when the target's
 * progress engine reads it, so a target that polls its memory calls
 * oxr_group_progress in the loop (a CQ poll on verbs).  Ordered with the origin's
 * earlier puts to that peer; counted by oxr_win_landed only on TCP. */
OXR_API oxr_status_t oxr_put_nonotify(oxr_group *g, int peer, uint32_t id, uint64_t offset,
				   const void *src, size_t len);
/* The next landed put's note (remote completion at the target). */
OXR_API oxr_status_t oxr_win_wait(oxr_win *w, int timeout_ms, oxr_win_note *note);
/* Puts landed so far, and puts refused (bad bounds, stale epoch, unknown id). */
OXR_API uint64_t oxr_win_landed(const oxr_win *w);
/* Puts into g's windows refused so far (all windows). */
OXR_API uint64_t oxr_group_puts_refused(const oxr_group *g);

/* What a group holds now and has done, for scale checks (oxr-bench --bench
 * startup, OXR_LOG_LEVEL=info prints them when the group ends). */
typedef struct oxr_group_counters {
	uint32_t links_open;        /* links carrying traffic now, all providers */
	uint32_t links_tcp;         /* of which on a socket, */
	uint32_t links_shm;         /* on shared memory, */
	uint32_t links_verbs;       /* on a verbs QP */
	uint32_t links_opening;     /* links asked for whose handshake is not done */
	uint32_t fds;               /* descriptors the group holds (sockets, epoll, listener) */
	uint64_t handshakes;        /* handshakes completed, both directions */
	uint64_t handshakes_refused; /* refused: strangers, simultaneous opens, busy */
	uint64_t revokes_sent;      /* REVOKE frames sent (own and forwarded) */
	uint64_t qps, mrs;          /* the process's verbs QPs and registrations (0 without) */
	uint64_t pinned_bytes;      /* the bytes those registrations pin */
	uint32_t links_shared_rx;   /* open links that receive through a pool the group's
				     * links share (verbs' SRQ, shm's FIFO), not a ring of
				     * their own (OXR_VERBS_RINGS, OXR_SHM_RINGS) */
	uint64_t beats_sent;        /* heartbeat pings and answers sent (OXR_HEARTBEAT_MS) */
	uint32_t window_descs;      /* peers' window descriptors held: one per live window of
				     * a linked peer (a destroyed one is dropped) */
	uint64_t shrink_frames;     /* shrink frames sent: reports, decisions, fences */
} oxr_group_counters;
/* Fills *out (OXR_ERR_INVAL for NULL). */
OXR_API oxr_status_t oxr_group_stats(const oxr_group *g, oxr_group_counters *out);

/* ---- revoke and reset ---------------------------------------------- */

/*
 * Revoke (ULFM's MPI_Comm_revoke), keyed by (group id, epoch): the first
 * revoke a rank sees in its epoch, its own or a peer's, fails every pending
 * and later operation of the group with OXR_ERR_REVOKED (the message says
 * who revoked), drops queued messages, put notes and sends not yet begun,
 * discards what arrives, and is forwarded once to every linked peer.  A
 * revoke of an epoch already reset is dropped.  The group is usable again
 * after oxr_group_reset.
 */
OXR_API oxr_status_t oxr_group_revoke(oxr_group *g);
/* 1 if revoked in the current epoch; *why (may be NULL) says by whom. */
OXR_API int oxr_group_revoked(const oxr_group *g, const char **why);
/* What revokes name with the epoch: derived from the group token (one-way),
 * 0 for a group without one. */
OXR_API uint64_t oxr_group_id(const oxr_group *g);
/*
 * RFC-102's reset (SM_reset_102), collective over every rank linked to
 * this one: an OX_SYNC_BALL goes out on each link, everything that arrives
 * before the peer's ball is discarded, the epoch goes up by one, a revoke
 * is cleared, and every window gets the new epoch (on verbs a new
 * registration: no write aimed with an old rkey can land).  Fails with
 * OXR_ERR_PEER when a linked rank has failed.
 */
OXR_API oxr_status_t oxr_group_reset(oxr_group *g, int timeout_ms);
/*
 * ULFM's shrink, in place, collective over the survivors: they agree on
 * who is alive (failed ranks reported up a tree of the live ranks, the
 * root's decision sent down it; O(log P) rounds, a frame names only the
 * failed ranks: docs/fault-tolerance.md), close the links to the others, take new ranks 0..n'-1 in their
 * old order (oxr_group_size and oxr_group_rank change), and reset into a
 * new epoch.  Requests, windows' peers and collective objects made before
 * refer to the old numbering: windows stay (re-keyed), the rest is to be
 * made again.  A rank that dies during the shrink fails the new group:
 * shrink again.
 */
OXR_API oxr_status_t oxr_group_shrink(oxr_group *g, int timeout_ms);

/* Moves every link forward without blocking (reads, writes, completions,
 * puts landing); OXR_ERR_REVOKED once the group is revoked. */
OXR_API oxr_status_t oxr_group_progress(oxr_group *g);

#ifdef __cplusplus
}
#endif
#endif
