/* SPDX-License-Identifier: MIT */
/*
 * The insides of a link, for the generic layer only (progress.c, group.c,
 * revoke.c, shrink.c, window.c ...).  Providers see a link through
 * provider.h's accessors, never these fields.
 */
#ifndef OXR_LINK_H
#define OXR_LINK_H

#include <sys/uio.h>

#include "transport_impl.h"

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

/*
 * A link's life, moved only by oxr_link_to (link_handle.c checks the step):
 *   NONE -> OPENING            needed: its handshake runs (link_demand.c);
 *                              sends queue meanwhile
 *   NONE | OPENING -> OPEN     attached (progress.c)
 *   OPENING -> FAILED          the handshake failed or timed out
 *   OPEN -> LEAVING            the peer said BYE: its end will be no failure
 *   OPEN | LEAVING -> ENDED    the peer closed between messages
 *   OPEN | LEAVING -> FAILED   broken, refused, timed out, or closed by us
 *   any -> NONE                freed (oxr_link_close)
 * OPEN and LEAVING carry traffic (link_up); ENDED and FAILED keep the
 * reason for the calls that ask (link_down).
 */
enum link_state { LINK_NONE, LINK_OPEN, LINK_LEAVING, LINK_ENDED, LINK_FAILED, LINK_OPENING };

struct link {
	int fd, state, mode, order, peer;
	int same_host;          /* the peer is on this host: 1, 0, -1 unknown (oxr_link_same_host) */
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
	/* the transport of the stream (provider.h); fd stays open under any,
	 * its end is the peer's */
	const struct oxr_link_ops *ops;
	void *priv;
	int ball_seen;          /* reset: the peer's OX_SYNC_BALL came (what follows is new) */
	int ball_queued;        /* an OX_SYNC_BALL waits in rq: what follows it is kept */
	int64_t last_rx;          /* ms of the last bytes in (heartbeat) */
	/* shrink (shrink_frame.c): 1 + the agreement of the peer's last fence
	 * (what came before it is old) and of this rank's on the link; frames
	 * of an agreement this rank has not started, kept until it does */
	uint32_t sh_fence, sh_fenced;
	struct sh_frame *sh_pend;
	int sh_npend;
	/* opening on demand (link_demand.c): the handshake that will open it
	 * (NULL: none runs now), and while none does, when to try again (the
	 * peer was in another epoch) or by when the peer's own open must come
	 * (both ends opened at once and the peer's goes on) */
	struct oxr_hs *hs;
	int64_t retry_at, open_by;
};

static inline int link_up(const struct link *l)
{
	return l->state == LINK_OPEN || l->state == LINK_LEAVING;
}

static inline int link_down(const struct link *l)
{
	return l->state == LINK_ENDED || l->state == LINK_FAILED;
}

/* Nothing more will come: neither open nor opening. */
static inline int link_gone(const struct link *l)
{
	return !link_up(l) && l->state != LINK_OPENING;
}

/* What the link to a rank never used reads as: NONE, no socket (never
 * written: it is const, in read-only memory). */
extern const struct link oxr_link_none;

/* The link to rank p as it stands, to look at (p in range). */
static inline const struct link *link_peek(const oxr_group *g, int p)
{
	return g->links[p] ? g->links[p] : &oxr_link_none;
}

/* link_handle.c: the link to rank p, made on its first use (NULL: out of
 * memory, with the error set); it stays, at one address, until the group
 * ends. */
struct link *oxr_link_slot(oxr_group *g, int p);

/* link_handle.c: the one place a link's state changes (see above). */
void oxr_link_to(struct link *l, enum link_state to);
/* peer is dead by another rank's word (a revoke naming it): its link, open
 * or not yet, fails with why, and is never opened again. */
void oxr_link_mark_failed(oxr_group *g, int peer, const char *why);
/* The peer closed l between messages (how groups end): ENDED, not FAILED. */
void oxr_link_closed_by_peer(oxr_group *g, struct link *l);

#endif
