/* SPDX-License-Identifier: MIT */
/*
 * A receive FIFO that many senders share: one per rank and group, in a
 * sealed memfd its local peers map.  shm_fifo.c says how and why;
 * shm_fifo_link.c carries links' streams through it.
 */
#ifndef OXR_SHM_FIFO_H
#define OXR_SHM_FIFO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "oxr/status.h"
#include "shm_ring.h"

#define OXR_SHM_CELL_HDR 64u
#define OXR_SHM_FIFO_NOSLOT 0xffffu /* a ref's slot field: no sender */

enum { OXR_SHM_CELL_DATA = 1, OXR_SHM_CELL_NOTE = 2 };

/* A cell: a sender's piece of its stream (or a put's note), in place. */
struct oxr_shm_cell {
	_Atomic uint64_t state; /* 0 free; else taken: 1 << 63 | slot << 32 | the taker's count */
	/* slot << 48 | count (16 bits) << 32 | sealed << 31 | appending << 30 | len */
	_Atomic uint64_t lenw;
	uint32_t kind;
	uint8_t pad[OXR_SHM_CELL_HDR - 20];
	uint8_t data[];
};

/* A sender's line: what the receiver consumed of its cells, and its flag. */
struct oxr_shm_fifo_slot {
	_Atomic uint64_t done;  /* cells of this sender consumed, ever */
	_Atomic uint32_t waits; /* the sender sleeps until done moves or a cell frees */
	uint32_t pad;
};

/* The shared header; refs, slots and cells follow at offsets of 64. */
struct oxr_shm_fifo {
	uint32_t magic, version;
	uint32_t ncells, cell_bytes, nslots, credit;
	uint8_t nonce[OXR_SHM_NONCE];
	/* each on a line of its own: senders move tail at every cell, the
	 * reader looks at writers_wait at every cell it frees */
	_Alignas(64) _Atomic uint64_t tail;  /* ref positions taken, ever (a hint: see .c) */
	_Alignas(64) _Atomic uint32_t writers_wait; /* some slot's flag is up */
	_Alignas(64) _Atomic uint32_t reader_waits;
	_Alignas(64) _Atomic uint64_t refs[];
};

/* One end's view: the geometry as checked at creation or attach (the page's
 * own fields are the peers' to rewrite), and the counters this end owns. */
struct oxr_shm_fifo_end {
	struct oxr_shm_fifo *f;
	size_t map_len;
	uint32_t ncells, cell_bytes, nslots, credit;
	struct oxr_shm_fifo_slot *slots;
	uint8_t *cells;
	uint64_t head; /* reader: ref positions taken out */
	uint32_t hint; /* writer: where to look for a free cell first */
	int64_t last;  /* writer: its last cell, while it may append (-1: none) */
	uint64_t seen_done; /* writer: its slot's done as last read */
	uint64_t last_w; /* writer: that cell's lenw as it left it */
};

/* Payload bytes of a cell. */
static inline uint32_t oxr_shm_cell_room(const struct oxr_shm_fifo_end *e)
{
	return e->cell_bytes - OXR_SHM_CELL_HDR;
}

static inline struct oxr_shm_cell *oxr_shm_cell_at(const struct oxr_shm_fifo_end *e, uint32_t i)
{
	return (struct oxr_shm_cell *)(void *)(e->cells + (size_t)i * e->cell_bytes);
}

/* Makes a FIFO of about bytes in a new sealed memfd, mapped here. */
oxr_status_t oxr_shm_fifo_create(uint64_t bytes, uint32_t nslots, const uint8_t nonce[OXR_SHM_NONCE],
				 int *fd, struct oxr_shm_fifo_end *e);
/* Maps the FIFO process pid holds as fd, checked against its nonce. */
oxr_status_t oxr_shm_fifo_attach(pid_t pid, int fd, const uint8_t nonce[OXR_SHM_NONCE],
				 struct oxr_shm_fifo_end *e);
void oxr_shm_fifo_unmap(struct oxr_shm_fifo_end *e);

/* Writer (slot s, *count its cells taken ever): copies iov, starting skip
 * bytes in, into its last cell while the reader has not sealed it (data
 * only), else, with may_take, into a free cell it queues (*took = 1: a
 * credit spent).  Returns the bytes stored, 0 when neither could be, -1
 * when the FIFO is broken. */
ssize_t oxr_shm_fifo_send(struct oxr_shm_fifo_end *e, uint32_t s, uint32_t *count, uint32_t kind,
			  const struct iovec *iov, int niov, size_t skip, int may_take, int *took);
/* Writer: cells of slot s in flight (sent and not consumed), -1 when the
 * reader's counter is out of bounds. */
int64_t oxr_shm_fifo_in_flight(struct oxr_shm_fifo_end *e, uint32_t s, uint64_t sent);
/* Writer: 1 when a cell is free now. */
int oxr_shm_fifo_has_free(struct oxr_shm_fifo_end *e);

/* Reader: the next ref, its sender's slot and cell, with the cell's kind
 * as it was checked: 1; 0 none; -1 a broken ref (no sender can be named);
 * -2 slot *s broke its cell (a state or length word not its own, a kind
 * out of bounds).  The ref is taken out in every case. */
int oxr_shm_fifo_pop(struct oxr_shm_fifo_end *e, uint32_t *s, uint32_t *cell, uint32_t *kind);
/* Reader: the bytes of cell (slot s's) there to read now, -1 when its word
 * is out of bounds; *busy: its sender is appending more. */
int64_t oxr_shm_fifo_len(struct oxr_shm_fifo_end *e, uint32_t cell, uint32_t s, int *busy);
/* Reader: seals cell at len bytes (its sender appends no more): 1, or 0
 * when the sender is appending or has appended past len. */
int oxr_shm_fifo_seal(struct oxr_shm_fifo_end *e, uint32_t cell, uint64_t len);
/* Reader: 1 when a ref waits. */
int oxr_shm_fifo_ready(struct oxr_shm_fifo_end *e);
/* Reader: the cell is free for any sender again. */
void oxr_shm_fifo_free(struct oxr_shm_fifo_end *e, uint32_t cell);
/* Reader: frees every cell slot s holds taken and unqueued (its sender
 * died between taking and queuing one). */
void oxr_shm_fifo_free_slot(struct oxr_shm_fifo_end *e, uint32_t s);

/* Sleep flags: the reader's, and each sender's in its slot (Dekker, as the
 * ring's: raise, fence, look once more; the other side publishes, fences,
 * and takes the flag down with an exchange). */
int oxr_shm_fifo_must_wake_reader(struct oxr_shm_fifo_end *e);
void oxr_shm_fifo_writer_sleeps(struct oxr_shm_fifo_end *e, uint32_t s);
int oxr_shm_fifo_any_writer(struct oxr_shm_fifo_end *e);

#endif
