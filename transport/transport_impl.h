/* SPDX-License-Identifier: MIT */
/* The insides of contexts, groups and links, shared by transport/ files. */
#ifndef OXR_TRANSPORT_IMPL_H
#define OXR_TRANSPORT_IMPL_H

#include <stdarg.h>
#include <sys/uio.h>

#include "oxr/transport.h"
#include "bmg.h"
#include "ring.h"
#include "frames.h"

enum oxr_log_level { OXR_LOG_ERROR, OXR_LOG_WARN, OXR_LOG_INFO, OXR_LOG_DEBUG };

struct oxr_ctx {
	int log_level;
	int spin_us;
	int spin_yield;           /* a spinning wait gives its core away now and then */
	int link_timeout_ms;
	size_t recv_queue_bytes;
	int order;               /* what we ask for on our links */
	oxr_cmo_limits limits;
	const char *transport;   /* the provider's name: "tcp", "verbs" */
	const struct oxr_provider *prov; /* what offers to carry the links (provider.h) */
	void *pctx;              /* its context (a device) */
	int prov_required;       /* OXR_TRANSPORT named it: no silent fall back to tcp */
	/* the provider of links to ranks on this host (shm), NULL: none; its
	 * context; required: OXR_TRANSPORT=shm, no fall back to prov */
	const struct oxr_provider *hprov;
	void *hctx;
	int hprov_required;
	volatile sig_atomic_t *intr; /* oxr_ctx_set_interrupt: nonzero ends waits */
	int heartbeat_ms;        /* OXR_HEARTBEAT_MS: a silent authenticated peer fails (0: off) */
	uint8_t host_id[16];     /* OXR_HOST_ID, hashed: links compare it (link_handshake.c) */
	char local_cc[16];       /* OXR_TCP_LOCAL_CC: congestion control of same-host links ("": the system's) */
	oxr_ctx_params params;   /* every knob, read once (params.c) */
	char *param_strs;        /* the strings params points to */
};

/* params.c: over's fields (over->field_mask), the rest from the
 * environment; oxr_params_own copies the strings into one block to free. */
oxr_status_t oxr_params_resolve(const oxr_ctx_params *over, oxr_ctx_params *out);
char *oxr_params_own(oxr_ctx_params *p);
/* The name of params' transport word (0: auto, 1: tcp, 2: verbs, 3: shm). */
const char *oxr_params_transport_name(int transport);

void oxr_log(const oxr_ctx *c, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct link; /* link.h: only the generic layer sees inside */

struct listener {
	int fd, port;
};

/* Where a rank of a booted group listens (the bootstrap's allgather). */
struct oxr_endpoint {
	char host[56];
	uint8_t order;   /* the byte its links ask for: messages queued before a
			  * link is open are encoded in the order it will have */
	uint8_t pad[3];
	uint8_t port[4]; /* little-endian */
};
/* 1: e came whole from the bootstrap (a port, a NUL-terminated host): what
 * a link may be opened to; it came from the network, so it is checked. */
int oxr_endpoint_ok(const struct oxr_endpoint *e);

/* What a group is doing (group_state.c holds the transitions). */
enum oxr_gact { OXR_GA_NONE, OXR_GA_RESETTING, OXR_GA_SHRINKING, OXR_GA_CLOSING, OXR_GA_N };
/* The state a user sees: the epoch's revoke and the activity together. */
enum oxr_gstate { OXR_GS_OPEN, OXR_GS_REVOKED, OXR_GS_RESETTING, OXR_GS_SHRINKING, OXR_GS_CLOSING };

struct oxr_agree;

/* A shrink (shrink.c, shrink_frame.c): the agreement that runs, and what
 * outlives it.  O(1 + f) bytes for f failed ranks, whatever P. */
struct sh_state {
	struct oxr_agree *ag;   /* the agreement running (NULL: none) */
	uint32_t gen;           /* agreements decided (a frame names its own: older
				   ones are late, the next one is early) */
	int due;                /* the reset that ends agreement gen - 1 runs: a
				   link's queue is old until its fence of it came */
	int news;               /* a frame moved the agreement (the wait's wake-up) */
	int have_dec;           /* dec_epoch and dec_objs are the decision's */
	uint32_t epoch, objs;   /* the highest epoch and object count reported to it */
	int32_t *dec;           /* an adopted decision's list (the core points at it) */
	uint32_t dec_epoch, dec_objs;
	int32_t *last;          /* the last decision, to answer a report that comes
				   after it (old ranks), and its length */
	int32_t nlast;
	uint32_t last_epoch, last_objs;
};

struct oxr_group {
	oxr_ctx *ctx;
	int size, rank;
	uint32_t epoch;
	int32_t serial;
	int have_token;
	uint8_t token[32];
	int epfd;
	/* [size]: NULL until the rank is first used (oxr_link_slot); used[]
	 * lists the ranks that have one, so that what visits links costs the
	 * links there are, not P */
	struct link **links;
	int *used, nused, used_cap;
	struct listener *lis;
	int nlis;
	oxr_arena *scratch;     /* frames built by the library itself */
	struct oxr_ring_watch beat; /* the heartbeat's watch (progress.c, ring.c) */
	oxr_win *wins;          /* this rank's windows */
	struct rwin *rwins;     /* peers' window descriptors */
	uint64_t puts_refused;
	void *pgroup;           /* the provider's part of the group (a CQ) */
	void *hgroup;           /* the host provider's (shm: a doorbell) */
	int fd_links;           /* open links whose stream is a socket */
	unsigned spins;         /* spinning rounds, to read sockets and the clock now and then */
	struct sendop *spare_op; /* oxr_send's op, kept for the next one */
	unsigned quiet_sends;   /* blocking sends done, to read the links now and then */
	uint64_t fd_moved;      /* bytes read and written on links: a wait spins while they move */
	/* revoke and reset (revoke.c) */
	uint64_t gid;           /* with the epoch, what a revoke names */
	/* the state (group_state.c writes these two, nothing else does) */
	int epoch_revoked;      /* the current epoch is revoked */
	enum oxr_gact act;      /* a reset, a shrink's agreement, a close */
	int hold_revoke;        /* a wait that must finish its bytes whatever happens */
	int revoke_next;        /* a revoke of the epoch the running reset leads to */
	int revoke_origin;      /* its origin */
	oxr_status_t revoke_st; /* what waits fail with: REVOKED, or PEER for a failure */
	int revoke_failed;      /* the rank whose failure revoked the group, or -1 */
	struct sh_state sh;     /* shrink */
	uint32_t objs;          /* collective objects made (oxr_group_next_object) */
	uint64_t revokes_sent;  /* REVOKE frames this rank sent (its own and forwarded) */
	uint64_t beats_sent;    /* heartbeat pings and answers this rank sent */
	uint64_t shrinks_sent;  /* shrink frames this rank sent */
	/* the revoke's broadcast where links open on demand (revoke.c): its
	 * cursors, valid for bmg_epoch while bmg_on, the origin it forwards,
	 * and whether its sends are under way (a failure met in one retargets
	 * without sending: the loop under way sends) */
	struct oxr_bmg bmg;
	uint32_t bmg_epoch;
	int bmg_on, bmg_origin, bmg_busy;
	char revoke_msg[256];
	oxr_req *posted;        /* irecvs not yet matched, in the order they were posted */
	/* links opened on first use (link_demand.c): every rank's endpoint
	 * (NULL: this group's links are opened by hand), the listener in the
	 * epoll set, the handshakes in flight (slots of an epoll key), the links
	 * that wait for a retry or for the peer's open */
	struct oxr_endpoint *eps;
	struct oxr_boot *boot;  /* held: eps fills from its lookups (NULL: eps is whole) */
	uint64_t boot_seq;      /* the round its endpoints were published in */
	int32_t *boot_rank;     /* after a shrink, each rank's rank in the bootstrap
				   (NULL: its own) */
	int demand_lfd;
	struct oxr_hs **hs;
	int nhs, hs_cap, nwaiting;
	int64_t demand_due;     /* ms: the first of their deadlines (0: look again) */
	uint64_t handshakes, handshakes_refused;
	int balls_phase;        /* a reset waits for balls: a link opening now owes one */
	/* the reset's agreement (revoke.c), by epoch parity: the rounds that
	 * came (bit k: round k), and the first rank they said failed, + 1 */
	uint32_t agree_got[2];
	int agree_failed[2];
};

struct oxr_req {
	oxr_group *g;
	int peer, is_send, done;
	oxr_status_t st;
	struct sendop *op;
	oxr_rmsg *m;
	oxr_req *next_posted; /* an unmatched irecv, in g->posted */
};

/* What a handshake settled: the link's byte order, and whether the peer is
 * on this host (1, 0; -1 on an OpenXM link, which cannot say). */
struct oxr_link_hs {
	int order;
	int same_host;
};


/* progress.c */
/* The link is open on fd, its stream carried by ops (priv: their state). */
struct oxr_link_ops;
oxr_status_t oxr_link_attach(oxr_group *g, int peer, int fd, int mode, const struct oxr_link_hs *hs,
			     const char *addr, const struct oxr_link_ops *ops, void *priv);
void oxr_link_close(oxr_group *g, struct link *l);
/* Bounded wait for what the link has posted but not completed. */
void oxr_link_drain(oxr_group *g, struct link *l);
/* What the provider holds for the group beyond its links (a CQ). */
void oxr_link_engine_free(oxr_group *g);
/* 1 if the link holds received bytes not yet decoded. */
int oxr_link_buffered(const struct link *l);
void oxr_link_update_events(oxr_group *g, struct link *l);
/* Reads and decodes what the link has (its buffer first), up to the queue bound. */
void oxr_link_read(oxr_group *g, struct link *l);
/* Writes what the link's send queue has, as far as the link takes it now. */
void oxr_link_write(oxr_group *g, struct link *l);
/* link_demand.c: a link just opened: what the group owes it (its windows'
 * descriptors, a reset's ball, the sends that waited). */
void oxr_link_opened(oxr_group *g, struct link *l);
/* revoke.c: a link opened during this rank's reset gets its ball too. */
void oxr_reset_link_opened(oxr_group *g, struct link *l);
/* window.c: a new peer learns this rank's windows (and, on verbs, its
 * window QP opens when windows exist). */
void oxr_windows_link_opened(oxr_group *g, struct link *l);
/* One round: waits up to timeout_ms for events (0: just polls). */
oxr_status_t oxr_progress_once(oxr_group *g, int timeout_ms);
/* Progress until done(arg) is true, the timeout passes or the group is
 * revoked; spins OXR_SPIN_US before sleeping. */
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
/* A round of a reset's agreement from link l (groups that open links on
 * demand). */
oxr_status_t oxr_reset_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m);
/* Forgets the rounds of resets that came (a shrink renumbers the ranks
 * they were sent by). */
void oxr_reset_forget(oxr_group *g);
/* Link l failed (not a peer that said BYE): the group is revoked here and
 * the revoke forwarded; waits fail with OXR_ERR_PEER naming the rank.  In
 * a group revoked already (links on demand) the revoke's broadcast sends
 * on past the dead rank instead. */
void oxr_revoke_failed(oxr_group *g, struct link *l);
/* A heartbeat frame to peer: a ping (answered with a beat) or a beat. */
oxr_status_t oxr_beat(oxr_group *g, int peer, int ping);
/* Tells every authenticated peer this rank leaves (oxr_group_destroy). */
void oxr_say_bye(oxr_group *g);
/* OXR_ERR_REVOKED with the group's revoke message. */
oxr_status_t oxr_revoked_err(const oxr_group *g, const char *what);
/* window.c: after a reset, every window of this rank gets the new epoch
 * (and, where registered, a new registration: the old rkey dies) and its new
 * descriptor goes to the peers, not waited for: a put waits for its own. */
oxr_status_t oxr_windows_rekey(oxr_group *g, int timeout_ms);
/* shrink.c: a SHRINK frame from link l. */
oxr_status_t oxr_shrink_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m);
/* 1 once the peer fenced l for the shrink this rank runs or would run
 * next: it left its reset and runs none until that shrink is decided */
int oxr_shrink_proposed(const oxr_group *g, const struct link *l);
/* 1 while what l brings was sent before its sender's fence of the shrink
 * this rank runs or whose reset it runs: of the old epoch (a reset's ball
 * or rounds then belong to the reset that failed) */
int oxr_shrink_old(const oxr_group *g, const struct link *l);
/* group.c: the ranks of g's used links for which owes() holds, into buf
 * ("3, 5, 9", the first 8, then " (N in all)"), for a wait's timeout to
 * name whom it waits for; returns how many. */
int oxr_rank_list(const oxr_group *g, int (*owes)(const oxr_group *, int, const void *),
		  const void *arg, char *buf, size_t len);
/* shrink_frame.c: frees what a link kept of shrink frames. */
void oxr_shrink_free(struct link *l);
/* shrink_frame.c: frees what the group kept of shrinks. */
void oxr_shrink_group_free(oxr_group *g);
/* window.c: the peers' window descriptors this rank holds. */
uint32_t oxr_windows_known(const oxr_group *g);
/* Keeps the survivors' descriptors under their new ranks (failed: the
 * sorted old ranks that leave, nfailed of them), as of the old epoch. */
void oxr_windows_renumber(oxr_group *g, const int32_t *failed, int nfailed);
/* A revoke: drops the landed-put notes of every window and deregisters
 * them at once (no late write of the epoch can land). */
void oxr_windows_revoked(oxr_group *g);
/* Queues the library's own frame tag with a LIST of n <= 8 INT32s to peer. */
oxr_status_t oxr_send_ints(oxr_group *g, int peer, int32_t tag, int n, const uint32_t *v);
/* window.c: a private window frame (descriptor or put) from link l. */
oxr_status_t oxr_window_frame(oxr_group *g, struct link *l, const oxr_ox_msg *m);
void oxr_windows_free(oxr_group *g);
/* 1 and the address and rkey peer gave for its window id, if it gave them
 * (a provider with puts); for tests that write where oxr_put would not. */
int oxr_win_remote(oxr_group *g, int peer, uint32_t id, uint64_t *addr, uint32_t *rkey);

/* group_state.c: the group's activity changes (an error when the table
 * forbids it); a revoke of the epoch; the next epoch (not revoked). */
oxr_status_t oxr_group_enter(oxr_group *g, enum oxr_gact to);
void oxr_group_leave(oxr_group *g);
void oxr_group_mark_revoked(oxr_group *g);
void oxr_group_next_epoch(oxr_group *g);
enum oxr_gstate oxr_group_state(const oxr_group *g);
/* Inside a reset or a shrink: their waits and frames go through a revoke. */
int oxr_group_in_reset(const oxr_group *g);
/* Revoked and not in a reset: waits and new operations fail. */
int oxr_group_stopped(const oxr_group *g);
/* oxr_group_destroy runs: links end on purpose, no end is a failure. */
int oxr_group_closing(const oxr_group *g);

/* frames.c: a private frame from link l to its handler (never queued). */
oxr_status_t oxr_frame_dispatch(oxr_group *g, struct link *l, const oxr_ox_msg *m);
/* 1 when o is a LIST of want kids whose first n are INT32 (into v). */
int oxr_frame_ints(const oxr_cmo *o, uint32_t want, uint32_t n, uint32_t *v);

oxr_status_t oxr_queue_send(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req *req,
			    struct sendop **out);
/* Queues one of the library's own frames (a ball, a revoke, a BYE, a shrink
 * round, a heartbeat): sent even in a revoked group, never dropped, never
 * waited for. */
oxr_status_t oxr_queue_internal(oxr_group *g, int peer, const oxr_ox_msg *m);
#endif
