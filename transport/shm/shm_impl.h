/* SPDX-License-Identifier: MIT */
/*
 * What the shm provider's files share: its context, group and link state.
 * shm_provider.c carries streams, shm_win.c windows and puts.
 */
#ifndef OXR_SHM_IMPL_H
#define OXR_SHM_IMPL_H

#include "oxr_internal.h"
#include "provider.h"
#include "shm_fifo.h"
#include "shm_ring.h"

struct shm_mem; /* window memory from oxr_win_alloc (shm_win.c) */

struct shm_ctx {
	uint64_t ring_bytes;
	uint64_t fifo_bytes;
	long rings;         /* links a rank receives on through rings of their own */
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
	/* receiving through my group's FIFO instead of rx (shm_fifo_link.c) */
	int in_slot;               /* the peer's slot in my FIFO; -1: rx, my ring */
	int other_ring;            /* rx is a ring, the peer no collective partner */
	struct shm_group *sg;      /* whose FIFO that is */
	struct shm_pend *pend;     /* its cells taken out of the FIFO, in order */
	uint32_t pcap, phead, pn;
	uint64_t in_done;          /* its cells consumed, ever */
	/* sending through the peer's FIFO instead of tx */
	int out_slot;              /* mine in the peer's FIFO; -1: tx, its ring */
	struct oxr_shm_fifo_end out;
	uint64_t out_sent;         /* cells sent, ever */
	uint32_t out_count;
};

/* A cell taken out of the FIFO for a link: in place, or copied out. */
struct shm_pend {
	int32_t cell;  /* -1: copied to heap */
	uint32_t kind, len, off; /* len: of the copy (in place: the cell's word says) */
	uint8_t *heap;
};

struct shm_group {
	int bell[2];               /* my doorbell: read end in g->epfd */
	struct shm_link **links;   /* those of this group, offered or live */
	int n, max;
	int rings;                 /* links receiving through a ring of their own */
	int other_rings;           /* of them, those not to collective partners */
	/* my receive FIFO, made at the first link that takes it */
	struct oxr_shm_fifo_end fifo;
	int fifo_fd;
	uint8_t fifo_nonce[OXR_SHM_NONCE];
	struct shm_link **slot_of; /* fifo.nslots: whose slot is which */
	uint32_t held;             /* cells held in place by links' pend */
	uint64_t spilled;          /* times they were copied out */
};

static inline struct shm_link *oxr_shm_link_of(const struct link *l) { return oxr_link_priv(l); }

/* shm_provider.c */
void oxr_shm_ring_bell(int bell);
int oxr_shm_broken(oxr_group *g, struct link *l, const char *which);

/* shm_fifo_link.c: links' streams through the receive FIFO */
oxr_status_t oxr_shm_fifo_offer(oxr_group *g, struct shm_group *sg, struct shm_link *sl,
				uint32_t *fd, uint8_t nonce[OXR_SHM_NONCE]);
oxr_status_t oxr_shm_fifo_connect(struct shm_link *sl, pid_t pid, int fd, uint32_t slot,
				  const uint8_t nonce[OXR_SHM_NONCE]);
void oxr_shm_fifo_link_free(oxr_group *g, struct shm_link *sl);
void oxr_shm_fifo_group_free(struct shm_group *sg);
void oxr_shm_fifo_drain(oxr_group *g);
int oxr_shm_fifo_arm(oxr_group *g);
/* Reader: 1 when the link's next bytes or note can be read now. */
int oxr_shm_fifo_rx_ready(struct shm_link *sl);
ssize_t oxr_shm_fifo_recv(oxr_group *g, struct link *l, struct shm_link *sl, void *buf, size_t n);
ssize_t oxr_shm_fifo_sendv(oxr_group *g, struct link *l, struct shm_link *sl,
			   const struct iovec *iov, int niov);
/* Writer: 1 when a cell may go now (credit and a free cell). */
int oxr_shm_fifo_can_send(struct shm_link *sl);
/* Writer: queues a put's note; 1 done, 0 no room, -1 broken. */
int oxr_shm_fifo_note(struct shm_link *sl, const struct oxr_shm_note *n);

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
