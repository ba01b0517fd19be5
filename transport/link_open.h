/* SPDX-License-Identifier: MIT */
/*
 * The handshake that opens a link, as a state machine over a non-blocking
 * socket (link_open.c), and its two drivers: the blocking calls of group.c
 * (oxr_link_connect / _accept, eager wiring) run one to its end; the
 * progress engine runs many at once for links opened on first use
 * (link_demand.c).
 */
#ifndef OXR_LINK_OPEN_H
#define OXR_LINK_OPEN_H

#include <stdint.h>

#include "transport_impl.h"

struct oxr_provider;
struct oxr_link_ops;

/* Why a handshake was refused (the OXRN reason on the wire). */
enum oxr_hs_refusal {
	OXR_REF_TOKEN = 1,   /* wrong token */
	OXR_REF_RANK = 2,    /* unexpected rank, or already linked */
	OXR_REF_SIZE = 3,    /* another group size */
	OXR_REF_VERSION = 4, /* another handshake version */
	OXR_REF_RACE = 5,    /* both ends opened at once: the lower rank's open goes on */
	OXR_REF_BUSY = 6,    /* another epoch (a reset in between): try again shortly */
};

struct oxr_hs {
	oxr_group *g;
	int fd, mode, acceptor;
	int peer;            /* connector: its target; acceptor: the rank claimed (-1 first) */
	int want;            /* acceptor: the rank expected, -1 any (eager: any higher) */
	int demand;          /* run by link_demand.c (the race rules apply) */
	int step;
	int committed;       /* past the epoch check: a reset waits for it (revoke.c) */
	int connecting;      /* connector: the socket's connect is still in progress */
	int64_t deadline;
	char addr[64];
	uint8_t out[128];
	size_t out_len, out_off;
	uint8_t in[128];
	size_t in_want, in_off;
	uint8_t nonce[16], peer_nonce[16];
	int order, same_host;
	uint32_t peer_epoch;
	int round;           /* 0: the host provider's offer round, 1: the network's */
	const struct oxr_provider *p;
	void *pv;            /* the provider's half while an offer is open */
	int offered;         /* this side offered in the current round */
	const struct oxr_link_ops *ops;
	void *priv;          /* the result: what carries the stream */
	int refused;         /* the peer's refusal reason, when it sent one */
	uint32_t told_epoch; /* the epoch this side's hello told */
	char why[200];       /* acceptor: the refusal it sends */
	char cfail[200];     /* why this side's half did not connect, for the error */
	int slot;            /* its index in g->hs (link_demand.c), -1 outside */
	uint32_t events;     /* what it waits for: EPOLLIN or EPOLLOUT */
};

/* Starts a handshake on fd (made non-blocking; closed by oxr_hs_free).
 * Connector: peer is the target; connecting: fd's connect is in progress.
 * Acceptor: want is the rank expected, -1 any. */
oxr_status_t oxr_hs_start(oxr_group *g, int fd, int mode, int acceptor, int peer,
			  const char *addr, int connecting, int timeout_ms, struct oxr_hs **out);
/* Moves h on as far as its socket allows: *done once the link may be
 * attached (h->ops, h->priv, h->peer say how).  An error ends h (the
 * caller frees it); h->refused says whether the peer refused and why. */
oxr_status_t oxr_hs_step(struct oxr_hs *h, int *done);
/* Attaches the link h opened (takes its fd and provider half). */
oxr_status_t oxr_hs_attach(struct oxr_hs *h);
void oxr_hs_free(struct oxr_hs *h);
/* Runs h to its end on this thread (the blocking calls), then attaches it;
 * h is freed either way. */
oxr_status_t oxr_hs_run(struct oxr_hs *h);

/* link_demand.c: links opened on first use. */
/* The link to peer is needed (a send, a receive, a put, a frame): starts
 * its handshake unless it is open or opening.  An error when it cannot be
 * opened (no endpoint for it, or it failed). */
oxr_status_t oxr_link_want(oxr_group *g, int peer);
/* An epoll event for a key of link_demand.c (the listener, a handshake). */
void oxr_demand_event(oxr_group *g, uint32_t key, uint32_t events);
/* Deadlines and retries of handshakes in flight; *wait_ms: when next due. */
void oxr_demand_tick(oxr_group *g);
/* The ranks 2^k away either way round the group, each once, not this rank
 * (at most 2 ceil(log2 P), fewer than max): the overlay of the revoke and
 * the partners of the collectives.  Returns how many went into out. */
int oxr_overlay_partners(const oxr_group *g, int *out, int max);
/* Whether the rank a verified connector claims may open its link now (0),
 * or the refusal: the race rules of simultaneous opens (link_demand.c). */
int oxr_demand_claim(oxr_group *g, struct oxr_hs *h, int claimed);
/* 1 when a committed handshake is in flight (a reset does not end meanwhile). */
int oxr_demand_committed(const oxr_group *g);
/* A handshake of link_demand.c ended (done or not): out of the table. */
void oxr_demand_forget(oxr_group *g, struct oxr_hs *h);
void oxr_demand_free(oxr_group *g);
/* Every handshake in flight ends. */
void oxr_demand_cancel_all(oxr_group *g);
/* A shrink renumbered the group (with no handshake in flight: they name
 * the ranks): the links this rank waits to open again (refused as busy,
 * or left to the peer's open) start again under the new numbers at once
 * (what is queued on them goes out once open). */
void oxr_demand_renumbered(oxr_group *g);
/* l ends (closed, a shrink drops it): its handshake or wait with it. */
void oxr_demand_drop_link(oxr_group *g, struct link *l);

#define OXR_EPOLL_LISTEN 0xfffffe00u  /* the group's listener (on-demand links) */
#define OXR_EPOLL_HS 0x80000000u      /* | slot: a handshake in flight */

#endif
