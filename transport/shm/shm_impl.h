/* SPDX-License-Identifier: MIT */
/*
 * What the shm provider's files share: its context, group and link state.
 * shm_provider.c carries streams, shm_win.c windows and puts.
 */
#ifndef OXR_SHM_IMPL_H
#define OXR_SHM_IMPL_H

#include "oxr_internal.h"
#include "provider.h"
#include "shm_ring.h"

struct shm_mem; /* window memory from oxr_win_alloc (shm_win.c) */

struct shm_ctx {
	uint64_t ring_bytes;
	uint64_t cma_bytes; /* pieces this big go by single copy (0: never) */
	struct shm_mem *mems; /* window memory handed out, each its own memfd */
};

/* A peer's window mapped here for puts (shm_win.c). */
struct shm_att {
	int fd;          /* the memfd's number in the peer */
	uint32_t nonce;  /* its name says it: which registration */
	uint8_t *base;
	size_t len;
};

struct shm_link {
	struct oxr_shm_end rx, tx; /* my ring (the peer writes), the peer's (I write) */
	int rx_fd;                 /* my ring's memfd, until the peer mapped it */
	int bell;                  /* the peer's doorbell */
	int peer;
	int live;                  /* connected: poll may move it */
	pid_t peer_pid;
	uint64_t cma_bytes;        /* single copy from this size on (0: off; a refusal turns it off) */
	int cma_in;                /* this side may read the peer's offers */
	int note_wait;             /* a put waits for room among the notes */
	struct shm_att *atts;      /* the peer's windows mapped here */
	int natt, maxatt;
};

struct shm_group {
	int bell[2];               /* my doorbell: read end in g->epfd */
	struct shm_link **links;   /* those of this group, offered or live */
	int n, max;
};

static inline struct shm_link *oxr_shm_link_of(const struct link *l) { return oxr_link_priv(l); }

/* shm_provider.c */
void oxr_shm_ring_bell(int bell);
int oxr_shm_broken(oxr_group *g, struct link *l, const char *which);

/* shm_win.c: the provider's window ops, and the link's puts */
void *oxr_shm_mem_alloc(oxr_ctx *c, size_t len);
void oxr_shm_mem_free(oxr_ctx *c, void *p, size_t len);
void oxr_shm_mems_free(struct shm_ctx *x);
oxr_status_t oxr_shm_win_reg(oxr_group *g, void *base, size_t len, struct oxr_prov_mr **mr,
			     uint64_t *addr, uint32_t *rkey);
void oxr_shm_win_revoke(struct oxr_prov_mr *mr);
void oxr_shm_win_dereg(struct oxr_prov_mr *mr);
void oxr_shm_new_epoch(oxr_group *g);
void oxr_shm_atts_free(struct shm_link *sl);
oxr_status_t oxr_shm_put(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			 const void *src, size_t len);
oxr_status_t oxr_shm_put_note(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			      const void *src, size_t len, const struct oxr_put_note *n);
/* Reader: hands over the notes the stream has reached; returns the bytes
 * recv may read before the next note (SIZE_MAX: no note waits), or 0 with
 * the link failed when the peer broke the notes. */
size_t oxr_shm_take_notes(oxr_group *g, struct link *l, struct shm_link *sl, int *broke);

#endif
