/* SPDX-License-Identifier: MIT */
/* The insides of contexts, groups and links, shared by transport/ files. */
#ifndef OXR_TRANSPORT_IMPL_H
#define OXR_TRANSPORT_IMPL_H

#include <stdarg.h>
#include <sys/uio.h>

#include "oxr/transport.h"

enum oxr_log_level { OXR_LOG_ERROR, OXR_LOG_WARN, OXR_LOG_INFO, OXR_LOG_DEBUG };

struct oxr_ctx {
	int log_level;
	int spin_us;
	int spin_yield;           /* a spinning wait gives its core away now and then */
	int link_timeout_ms;
	size_t recv_queue_bytes;
	int order;               /* what we ask for on our links */
	oxr_cmo_limits limits;
	const char *transport;   /* "tcp" or "verbs" */
	struct oxr_vdev *vdev;   /* the RDMA device when transport is verbs */
	uint32_t vslots, vslot_bytes; /* ring geometry per verbs link */
	int vtimeout, vretry;    /* QP local ACK timeout exponent and retry count */
	size_t vput_inline;      /* puts up to this size travel in the stream */
	size_t vrndv;            /* stream pieces this big go by rendezvous (0: never) */
	struct oxr_rcache *rcache; /* registrations of receive memory (verbs_rcache.h) */
	int vcm;                 /* OXR_VERBS_CM=rdmacm: QPs connected by librdmacm */
	int verbs_required;      /* OXR_TRANSPORT=verbs: no silent fall back to tcp */
	volatile sig_atomic_t *intr; /* oxr_ctx_set_interrupt: nonzero ends waits */
	int heartbeat_ms;        /* OXR_HEARTBEAT_MS: a silent authenticated peer fails (0: off) */
	char local_cc[16];       /* OXR_TCP_LOCAL_CC: congestion control of same-host links ("": the system's) */
	oxr_ctx_params params;   /* every knob, read once (params.c) */
	char *param_strs;        /* the strings params points to */
};

/* The epoll keys of the group's completion channel and of the device's
 * async events (links use their rank). */
#define OXR_EPOLL_CQ 0xffffffffu
#define OXR_EPOLL_ASYNC 0xfffffffeu

/* params.c: over's fields (over->field_mask), the rest from the
 * environment; oxr_params_own copies the strings into one block to free. */
oxr_status_t oxr_params_resolve(const oxr_ctx_params *over, oxr_ctx_params *out);
char *oxr_params_own(oxr_ctx_params *p);

void oxr_log(const oxr_ctx *c, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A message waiting to be written: a gather list over `mem` and the CMO. */
struct sendop {
	struct sendop *next;
	void *mem;
	struct iovec *iov;
	int niov, cur;  /* cur: first iovec not fully written */
	size_t left;    /* bytes still to write */
	oxr_req *req;   /* completed when written; NULL for oxr_send */
	oxr_status_t st;
	int done;
	int orphan;     /* its request was freed first: free it when written */
	int started;    /* some bytes are written: it must be finished, not dropped */
	int revoked;    /* the group was revoked meanwhile: it completes with that */
	int internal;   /* the library's own (a ball of a reset, a revoke): never dropped */
	struct iovec one;   /* a small frame: its only iovec, over small */
	uint8_t small[128]; /* OX_DATA of a 100-byte string, a command, a ball */
};

struct recvq {
	struct recvq *next;
	oxr_rmsg *m;
	size_t bytes;
};

enum link_state { LINK_NONE, LINK_OPEN, LINK_FAILED };

struct link {
	int fd, state, mode, order, peer;
	int orderly;            /* the peer closed between messages */
	char addr[64];          /* the peer's address, for messages */
	oxr_status_t err;
	char errmsg[256];
	/* receiving */
	oxr_decoder *dec;
	oxr_arena *arena;       /* of the message being decoded */
	uint8_t *rbuf;
	size_t rlen, roff;
	struct recvq *rq_head, *rq_tail;
	size_t rq_bytes;
	/* sending */
	struct sendop *sq_head, *sq_tail;
	uint32_t events;        /* what epoll watches for now */
	/* puts on verbs (window.c): a stream put lands when the peer reads it,
	 * an RDMA put when the HCA writes it; so an RDMA put waits until the
	 * peer acknowledged a fence behind every stream put before it */
	int puts_unfenced;
	uint32_t fence_sent, fence_acked;
	struct vlink *v;        /* verbs: the stream goes over its QP; fd only tells death */
	int ball_seen;          /* reset: the peer's OX_SYNC_BALL came (what follows is new) */
	int ball_queued;        /* an OX_SYNC_BALL waits in rq: what follows it is kept */
	int bye;                /* the peer said it leaves: its end is no failure */
	int64_t last_rx, last_tx; /* ms of the last bytes in and out (heartbeat) */
	uint8_t *sh_map[2];     /* shrink: the peer's proposals of the last two rounds */
	int sh_round[2];        /* their round + 1 (0: none) */
};

struct listener {
	int fd, port;
};

struct oxr_group {
	oxr_ctx *ctx;
	int size, rank;
	uint32_t epoch;
	int32_t serial;
	int have_token;
	uint8_t token[32];
	int epfd;
	struct link *links;     /* [size] */
	struct listener *lis;
	int nlis;
	oxr_arena *scratch;     /* frames built by the library itself */
	int64_t beat_check;     /* ms of the next heartbeat round */
	oxr_win *wins;          /* this rank's windows */
	struct rwin *rwins;     /* peers' window descriptors */
	uint64_t puts_refused;
	struct vgroup *vg;      /* verbs: the CQ of every verbs link */
	int tcp_links;          /* open links whose stream is a socket */
	unsigned spins;         /* spinning rounds, to read sockets and the clock now and then */
	struct sendop *spare_op; /* oxr_send's op, kept for the next one */
	unsigned quiet_sends;   /* blocking sends done, to read the links now and then */
	uint64_t tcp_moved;     /* bytes read and written on sockets: a wait spins while they move */
	/* revoke and reset (revoke.c) */
	uint64_t gid;           /* with the epoch, what a revoke names */
	int revoked;            /* in the current epoch */
	int resetting;          /* inside oxr_group_reset: its own waits go on */
	int hold_revoke;        /* a wait that must finish its bytes whatever happens */
	int revoke_next;        /* a revoke of the epoch the running reset leads to */
	int revoke_origin;      /* its origin */
	oxr_status_t revoke_st; /* what waits fail with: REVOKED, or PEER for a failure */
	int revoke_failed;      /* the rank whose failure revoked the group, or -1 */
	int destroying;         /* oxr_group_destroy: links end on purpose */
	uint8_t *sh_commit;     /* shrink: the decided set, when a COMMIT came */
	int sh_closed;          /* shrink: decided here, late frames are dropped */
	uint64_t revokes_sent;  /* REVOKE frames this rank sent (its own and forwarded) */
	char revoke_msg[256];
	oxr_req *posted;        /* irecvs not yet matched, in the order they were posted */
};

struct oxr_req {
	oxr_group *g;
	int peer, is_send, done;
	oxr_status_t st;
	struct sendop *op;
	oxr_rmsg *m;
	oxr_req *next_posted; /* an unmatched irecv, in g->posted */
};

/* tcp_link.c: sockets and the handshake (blocking, with timeouts). */
oxr_status_t oxr_tcp_listen(int port, int *fd, int *bound);
oxr_status_t oxr_tcp_accept(int lfd, int timeout_ms, int *fd, char *addr, size_t alen);
oxr_status_t oxr_tcp_connect(const char *host, int port, int timeout_ms, int *fd);
void oxr_tcp_tune_link(const oxr_ctx *c, int fd);
/* unix_link.c: the same over a Unix-domain socket path. */
struct sockaddr_un;
oxr_status_t oxr_unix_addr(const char *path, struct sockaddr_un *sa);
oxr_status_t oxr_unix_listen(const char *path, int *fd);
oxr_status_t oxr_unix_connect(const char *path, int timeout_ms, int *fd);
/* Runs the byte-order exchange and, for OXR_LINK_AUTH, the token proof.
 * Acceptor: *peer is in/out (in: the rank it expects, -1 any higher than
 * mine not yet linked; out: the rank proved).  Fails with the reason. */
/* Exactly n bytes written or read on a blocking socket before deadline_ms
 * (CLOCK_MONOTONIC ms, oxr_now_ms). */
oxr_status_t oxr_tcp_io(int fd, void *buf, size_t n, int writing, int64_t deadline_ms,
			const char *addr);
int64_t oxr_now_ms(void);
oxr_status_t oxr_link_handshake(oxr_group *g, int fd, int mode, int acceptor, int *peer,
				const char *addr, int timeout_ms, int *order);

/* progress.c */
oxr_status_t oxr_link_attach(oxr_group *g, int peer, int fd, int mode, int order,
			     const char *addr, struct vlink *v);
void oxr_link_close(oxr_group *g, struct link *l);
/* Bounded wait for what the link has posted but not completed (verbs). */
void oxr_link_drain(oxr_group *g, struct link *l);
/* What the engine holds for the group beyond its links (the verbs CQ). */
void oxr_link_engine_free(oxr_group *g);
/* 1 if the link holds received bytes not yet decoded. */
int oxr_link_buffered(const struct link *l);
/* Fails the link: records the error, completes its requests with it. */
void oxr_link_fail(oxr_group *g, struct link *l, oxr_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void oxr_link_update_events(oxr_group *g, struct link *l);
/* Reads and decodes what the link has (its buffer first), up to the queue bound. */
void oxr_link_read(oxr_group *g, struct link *l);
/* Writes what the link's send queue has, as far as the link takes it now. */
void oxr_link_write(oxr_group *g, struct link *l);
/* link_upgrade.c: on an OXR_LINK_AUTH link both sides offer their QPs over
 * the socket; when both have verbs, *v is the connected QP, else NULL (TCP). */
oxr_status_t oxr_link_upgrade(oxr_group *g, int fd, int peer, int acceptor, const char *addr,
			      int timeout_ms, struct vlink **v);
/* One round: waits up to timeout_ms for events (0: just polls). */
oxr_status_t oxr_progress_once(oxr_group *g, int timeout_ms);
/* Progress until done(arg) is true, the timeout passes or the link fails;
 * spins OXR_SPIN_US before sleeping. */
oxr_status_t oxr_progress_until(oxr_group *g, int (*done)(void *), void *arg, int timeout_ms);
/* progress.c: a revoke's part on one link: queued messages before the
 * first OX_SYNC_BALL dropped, sends not started dropped, the one half
 * written marked to complete with OXR_ERR_REVOKED. */
void oxr_link_revoke_queues(oxr_group *g, struct link *l);
/* The first queued message of l (NULL if none), out of the queue. */
oxr_rmsg *oxr_link_take(struct link *l);
/* Sets ball_queued from what rq holds. */
void oxr_link_note_balls(struct link *l);
/* revoke.c: marks the group revoked in this epoch (once: later calls do
 * nothing), fails what waits, forwards the revoke of `origin` to every
 * other open authenticated link except `from` (-1: none).  why: who
 * revoked or failed. */
void oxr_revoke_local(oxr_group *g, int from, int origin, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* 1 when what link l delivers now belongs to the next epoch although no
 * ball marked it: an OpenXM link from a higher rank while this rank resets
 * (such a peer sends no ball down, as ox_asir). */
int oxr_link_new_epoch(const oxr_group *g, const struct link *l);
/* A REVOKE or BYE frame from link l. */
oxr_status_t oxr_revoke_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m);
/* Link l failed (not a peer that said BYE): the group is revoked here and
 * the revoke forwarded; waits fail with OXR_ERR_PEER naming the rank. */
void oxr_revoke_failed(oxr_group *g, struct link *l);
/* Tells every authenticated peer this rank leaves (oxr_group_destroy). */
void oxr_say_bye(oxr_group *g);
/* OXR_ERR_REVOKED with the group's revoke message. */
oxr_status_t oxr_revoked_err(const oxr_group *g, const char *what);
/* window.c: after a reset, every window of this rank gets the new epoch
 * (and, on verbs, a new registration: the old rkey dies) and its new
 * descriptor goes to the peers; then waits for theirs. */
oxr_status_t oxr_windows_rekey(oxr_group *g, int timeout_ms);
/* shrink.c: a SHRINK frame from link l. */
oxr_status_t oxr_shrink_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m);
/* window.c: forgets every peer's window descriptor (a shrink renumbers). */
void oxr_windows_forget_peers(oxr_group *g);
/* A revoke: drops the landed-put notes of every window and, on verbs,
 * deregisters them at once (no late write of the epoch can land). */
void oxr_windows_revoked(oxr_group *g);
/* Queues the library's own frame tag with a LIST of n <= 8 INT32s to peer. */
oxr_status_t oxr_send_ints(oxr_group *g, int peer, int32_t tag, int n, const uint32_t *v);
/* window.c: a private window frame (descriptor or put) from link l. */
oxr_status_t oxr_window_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m);
void oxr_windows_free(oxr_group *g);
/* 1 and the address and rkey peer gave for its window id, if it gave them
 * (verbs); for tests that write where oxr_put would not. */
int oxr_win_remote(oxr_group *g, int peer, uint32_t id, uint64_t *addr, uint32_t *rkey);

oxr_status_t oxr_queue_send(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req *req,
			    struct sendop **out);
/* Queues one of the library's own frames (a ball, a revoke, a BYE, a shrink
 * round, a heartbeat): sent even in a revoked group, never dropped, never
 * waited for. */
oxr_status_t oxr_queue_internal(oxr_group *g, int peer, const oxr_ox_msg *m);
#endif
