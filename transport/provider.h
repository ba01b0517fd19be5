/* SPDX-License-Identifier: MIT */
/*
 * The link-provider interface: what the generic layer (groups, progress,
 * windows, revoke/reset/shrink, bootstrap) asks of a transport, and the
 * handlers a transport calls back.  As UCX's uct under ucp, libfabric's
 * fi_ops under fi_*, rdma-core's verbs_context_ops: the generic files call
 * only these ops and never ask which provider they talk to; a provider
 * sees a link only through the handlers and accessors below, never the
 * insides of struct link (link.h).
 *
 * Every link starts on a socket (link_handshake.c proves the peer); then
 * the context's providers may offer to carry the stream (link_upgrade.c):
 * for a peer on this host its host provider first (shm), then its network
 * provider (verbs).  A link whose stream stays on the socket uses the tcp
 * provider's ops.  The socket stays open under any provider: its EOF is how
 * a dead peer shows.
 *
 * Providers live in folders of their own (tcp/, verbs/, shm/); provider.c
 * is their registry, the only file that knows which are built in.
 */
#ifndef OXR_PROVIDER_H
#define OXR_PROVIDER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "oxr/device.h"
#include "oxr/params.h"
#include "transport_impl.h"

struct link;
struct oxr_prov_mr; /* a provider's registration of window memory */

/* What a put's note says, besides who wrote and how many bytes. */
struct oxr_put_note {
	uint32_t id, epoch, value; /* window, the origin's epoch, the notify value */
	uint64_t offset;
};

/* What a link's ops can do. */
enum {
	/* the stream is the socket itself: epoll's readiness drives reads and
	 * writes, and the kernel's buffers do the flow control */
	OXR_LINK_CAP_FD_STREAM = 1u << 0,
	/* one-sided writes into a peer's registered window (put) */
	OXR_LINK_CAP_PUT = 1u << 1,
};

/* One link's transport: recv(2)/sendmsg(2) conventions, -1 with errno
 * EAGAIN when nothing can move now. */
struct oxr_link_ops {
	const char *name; /* what oxr_link_transport says */
	unsigned caps;
	/* arena: buf is arena memory (the decoder's place for a payload) */
	ssize_t (*recv)(oxr_group *g, struct link *l, void *buf, size_t n, int arena);
	ssize_t (*sendv)(oxr_group *g, struct link *l, const struct iovec *iov, int niov);
	/* 1: bytes arrived that recv has not returned yet (NULL: never) */
	int (*buffered)(const struct link *l);
	/* without FD_STREAM: the socket became readable, which only an end can
	 * make it; the provider delivers what came before, then reports the
	 * end (oxr_link_socket_end) */
	void (*fd_event)(oxr_group *g, struct link *l);
	/* bounded wait for what the link posted but did not complete */
	void (*drain)(oxr_group *g, struct link *l, int timeout_ms);
	void (*destroy)(oxr_group *g, void *priv);
	/* the link's peer has a new rank (a shrink renumbered the group) */
	void (*renumber)(void *priv, int peer);
	/* the handshake attached the link (it is OPEN, its priv the link's): what
	 * the peer wrote before, while this side's handshake was still ending,
	 * is taken now; oxr_link_attach then reads it if buffered says so */
	void (*attached)(oxr_group *g, struct link *l);
	/* 1 when l receives through a pool its group's other links share
	 * (verbs' SRQ, shm's FIFO), 0 through a ring of its own (NULL: 0) */
	int (*rx_shared)(const struct link *l);
	/* OXR_LINK_CAP_PUT: writes src[0..len) at raddr/rkey of the peer and
	 * returns once the peer's side has it, so what the link sends later
	 * lands later; a refusal fails the put, not the link */
	oxr_status_t (*put)(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			    const void *src, size_t len);
	/* OXR_LINK_CAP_PUT: the same with its note (libfabric's fi_writedata):
	 * the target's provider hands the note to oxr_put_landed.  Returns once
	 * src may be reused; puts of a link land in the order they were made,
	 * and before anything the link sends after them. */
	oxr_status_t (*put_note)(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
				 const void *src, size_t len, const struct oxr_put_note *n);
};

#define OXR_OFFER_MAX 64 /* bytes of a provider's link offer, at most */

struct oxr_provider {
	const char *name;
	/* Opens what the context needs (a device).  Fails with the reason when
	 * the provider cannot run here; required: the user asked for it. */
	oxr_status_t (*ctx_open)(oxr_ctx *c, const oxr_ctx_params *p, int required, void **pctx);
	void (*ctx_close)(void *pctx);

	/* Links.  offer: the link's transport half for peer, and the bytes
	 * the peer needs (offer_bytes of them); connect: with the peer's
	 * offer (from the network: checked), over the link's socket fd when it
	 * needs more; then the link runs on link_ops with priv. */
	size_t offer_bytes;
	oxr_status_t (*offer)(oxr_group *g, int peer, void **priv, uint8_t *offer);
	oxr_status_t (*connect)(oxr_group *g, void *priv, const uint8_t *theirs, int acceptor,
				int fd, const char *addr, int64_t deadline_ms);
	const struct oxr_link_ops *link_ops;

	/* The group's engine: poll moves what completed (*got: how much);
	 * arm before a sleep (1: something is there already, do not sleep);
	 * event for an epoll key >= OXR_EPOLL_PROVIDER it added; group_free. */
	oxr_status_t (*poll)(oxr_group *g, int *got);
	int (*arm)(oxr_group *g);
	void (*event)(oxr_group *g, uint32_t key);
	void (*group_free)(oxr_group *g);

	/* Windows: memory near the device, its registration for remote
	 * write (revoke: the key dies at once, the handle stays), the
	 * per-epoch state puts need (win_open, win_ready), a new epoch.
	 * mem_alloc's memory is zeroed and its pages untouched (mmap), so a
	 * window sized by P costs only the slots its writers fill. */
	void *(*mem_alloc)(oxr_ctx *c, size_t len);
	void (*mem_free)(oxr_ctx *c, void *p, size_t len);
	oxr_status_t (*win_reg)(oxr_group *g, void *base, size_t len, struct oxr_prov_mr **mr,
				uint64_t *addr, uint32_t *rkey);
	void (*win_revoke)(struct oxr_prov_mr *mr);
	void (*win_dereg)(struct oxr_prov_mr *mr);
	oxr_status_t (*win_open)(oxr_group *g);
	int (*win_ready)(oxr_group *g);
	void (*new_epoch)(oxr_group *g);

	/* Its own frame in the link streams (0: none), a LIST of INT32. */
	int32_t frame_tag;
	oxr_status_t (*frame)(oxr_group *g, struct link *l, const oxr_ox_msg *m);

	/* The device, for oxr-info and oxr_device_query. */
	int (*describe_all)(FILE *f);
	oxr_status_t (*query)(oxr_device_info *out);
	void (*objects)(uint64_t *qps, uint64_t *mrs, uint64_t *pinned);
};

/* provider.c: the registry.  NULL when no provider of that name is built. */
const struct oxr_provider *oxr_provider_find(const char *name);
/* Opens the provider for c: want names one (OXR_TRANSPORT), NULL is auto. */
oxr_status_t oxr_provider_choose(oxr_ctx *c, const char *want);
void oxr_provider_release(oxr_ctx *c);
/* The verbs provider's QPs, registrations and the bytes they pin, all 0
 * without it (oxr_group_stats). */
void oxr_verbs_pinned(uint64_t *qps, uint64_t *mrs, uint64_t *pinned);
/* group_stats.c: the info line a group leaves as it ends */
void oxr_group_log_stats(const oxr_group *g);
/* The stream of a link nobody upgraded: its socket (tcp/tcp_provider.c). */
extern const struct oxr_link_ops oxr_tcp_link_ops;
extern const struct oxr_provider oxr_tcp_provider;
/* Links to ranks on this host (shm/shm_provider.c). */
extern const struct oxr_provider oxr_shm_provider;

/* Epoll keys a provider may add to the group's set (links use their rank):
 * the network provider's from OXR_EPOLL_PROVIDER, the host provider's from
 * OXR_EPOLL_HOST. */
#define OXR_EPOLL_PROVIDER 0xffffff00u
#define OXR_EPOLL_HOST 0xffffff80u

/* ---- handlers: what a provider calls ---- */
/* l's stream can move: readable (decode what arrived), writable (send what waits). */
void oxr_link_ready(oxr_group *g, struct link *l, int readable, int writable);
/* l failed: records why, completes its requests, revokes the group. */
void oxr_link_fail(oxr_group *g, struct link *l, oxr_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A put with its note arrived on l: len bytes, in data (NULL: the device
 * wrote them into the window already).  Checked (window, epoch, bounds)
 * before a byte is copied; a refusal is counted and logged, l goes on. */
void oxr_put_landed(oxr_group *g, struct link *l, const struct oxr_put_note *n, uint64_t len,
		    const void *data, int notify);
/* A put that came on l is not landed: counted and logged, l goes on. */
void oxr_put_refused(oxr_group *g, struct link *l, uint32_t id, const char *why);
/* The socket under l read k (0: EOF; <0: error, with errno): the peer's end. */
void oxr_link_socket_end(oxr_group *g, struct link *l, ssize_t k);
/* The socket under l (whose stream a provider carries, so the socket is
 * quiet) became readable: reads it, and a read is the peer's end. */
void oxr_link_quiet_socket(oxr_group *g, struct link *l);

/* ---- accessors ---- */
struct link *oxr_link_at(oxr_group *g, int peer);
/* The links of the ranks used so far, i in [0, oxr_links_used(g)): what a
 * provider walks instead of all P ranks. */
int oxr_links_used(const oxr_group *g);
struct link *oxr_link_used(oxr_group *g, int i);
/* 1 when the collectives talk to peer straight: ranks 2^i apart either way
 * round the group (binomial trees, dissemination, the crystal router; the
 * revoke's overlay, bmg.c, which defines it): the links a provider gives
 * its fast path first. */
int oxr_rank_is_partner(int rank, int peer, int size);
/* the half of the provider that carries l: a group may mix providers, so
 * check oxr_link_ops_of(l) is yours before taking it */
void *oxr_link_priv(const struct link *l);
const struct oxr_link_ops *oxr_link_ops_of(const struct link *l);
int oxr_link_peer(const struct link *l);
int oxr_link_fd(const struct link *l);
const char *oxr_link_addr(const struct link *l);
int oxr_link_up(const struct link *l);       /* open: not failed, not closed */
int oxr_link_is_auth(const struct link *l);  /* OXR_LINK_AUTH (a group member) */
int oxr_link_sending(const struct link *l);  /* messages wait to be written */
const char *oxr_link_error(const struct link *l); /* why it failed */
oxr_status_t oxr_link_err(const struct link *l);
/* A network provider keeps its group state in g->pgroup and its context's
 * in g->ctx->pctx, the host provider in g->hgroup and g->ctx->hctx; g->epfd
 * is the set they may add fds to (OXR_EPOLL_PROVIDER, OXR_EPOLL_HOST). */

#endif
