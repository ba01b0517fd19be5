/* SPDX-License-Identifier: MIT */
/*
 * A byte ring in shared memory: one writer (the peer), one reader (the
 * rank that created it), in a sealed memfd the peer maps.  shm_ring.c says
 * how and why; shm_provider.c builds links of two of them.
 */
#ifndef OXR_SHM_RING_H
#define OXR_SHM_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "oxr/status.h"

#define OXR_SHM_NONCE 16
#define OXR_SHM_NOTES 64 /* put notes a ring holds (shm_win.c) */

/* A put's note: the writer stored len bytes at offset of window id itself
 * (shm_win.c) and says so here.  pos is the stream position (the writer's
 * tail) when it did: the reader takes the note once it has read the stream
 * up to pos, so a note never overtakes a message sent before its put, and
 * no message sent after it overtakes the note. */
struct oxr_shm_note {
	uint32_t id, epoch, value, notify;
	uint64_t offset, len, pos;
};

/* The shared header; the bytes follow it.  Each counter sits on a cache
 * line of its own with the flag its reader checks after moving it. */
struct oxr_shm_ring {
	uint32_t magic, version;
	uint64_t cap;                       /* bytes of data[], a power of two */
	uint8_t nonce[OXR_SHM_NONCE];       /* what the creator's offer said */
	_Alignas(64) _Atomic uint64_t tail; /* the writer's: bytes written, ever */
	_Atomic uint32_t writer_waits;      /* the writer sleeps until room comes */
	/* the writer's single-copy offer (shm_cma.c): big_len bytes at big_addr
	 * in its memory are the stream's next after ring position big_pos */
	_Atomic uint64_t big_seq;           /* offers made, ever */
	uint64_t big_pos, big_addr, big_len;
	_Atomic uint64_t note_tail;         /* the writer's: notes written, ever */
	_Alignas(64) _Atomic uint64_t head; /* the reader's: bytes read, ever */
	_Atomic uint32_t reader_waits;      /* the reader sleeps until bytes come */
	_Atomic uint32_t big_refused;       /* the last offer was refused: copy them */
	_Atomic uint64_t big_ack;           /* offers served (read or refused), ever */
	_Atomic uint64_t note_head;         /* the reader's: notes taken, ever */
	_Alignas(64) struct oxr_shm_note notes[OXR_SHM_NOTES];
	_Alignas(64) uint8_t data[];
};

/* One end's view: the counters it owns kept here, never trusted back from
 * the shared page, and the last value it saw of the other's. */
struct oxr_shm_end {
	struct oxr_shm_ring *r;
	size_t map_len;
	uint64_t cap;   /* r->cap as it was checked: the peer may rewrite the page's */
	uint64_t mine;  /* reader: head; writer: tail */
	uint64_t seen;  /* reader: the tail last read; writer: the head last read */
	uint64_t big_seq;  /* writer: offers made; reader: offers served */
	uint64_t big_off;  /* reader: bytes of the current offer read so far */
	size_t big_len;    /* writer: the bytes of the offer in flight (0: none) */
	uint64_t note_mine, note_seen; /* notes, as mine and seen above */
};

/* Creates a ring of cap bytes (a power of two) in a new sealed memfd,
 * mapped here; *fd stays open until the peer mapped it. */
oxr_status_t oxr_shm_ring_create(uint64_t cap, const uint8_t nonce[OXR_SHM_NONCE], int *fd,
				 struct oxr_shm_end *e);
/* Maps the ring that process pid holds open as fd (its offer, checked:
 * size, seals, magic, cap and nonce must all match). */
oxr_status_t oxr_shm_ring_attach(pid_t pid, int fd, uint64_t cap,
				 const uint8_t nonce[OXR_SHM_NONCE], struct oxr_shm_end *e);
void oxr_shm_ring_unmap(struct oxr_shm_end *e);

/* Writer: copies what fits of iov (0: the ring is full), publishes it.
 * -1: the reader's head is out of bounds (a broken or hostile peer). */
ssize_t oxr_shm_ring_write(struct oxr_shm_end *e, const struct iovec *iov, int niov);
/* Reader: copies up to n bytes out (0: empty), frees their room.  -1: the
 * writer's tail is out of bounds. */
ssize_t oxr_shm_ring_read(struct oxr_shm_end *e, void *buf, size_t n);
/* Bytes waiting (reader) / room (writer), -1 when the other's counter is out of bounds. */
int64_t oxr_shm_ring_avail(struct oxr_shm_end *e);
int64_t oxr_shm_ring_room(struct oxr_shm_end *e);

/* shm_cma.c: single copy of large pieces, read by the receiver straight
 * from the sender's memory (process_vm_readv).
 * Writer: offers len bytes at p as the stream's next (nothing else may be
 * written until the offer is served); then big_done says 0 (not yet),
 * 1 (read: the len bytes are sent) or 2 (refused: copy them instead). */
void oxr_shm_big_offer(struct oxr_shm_end *e, const void *p, size_t len);
int oxr_shm_big_done(struct oxr_shm_end *e);
/* Writer: 1 when the offer in flight has its answer (big_done will say which). */
int oxr_shm_big_answered(struct oxr_shm_end *e);
/* Reader: 1 when an offer waits and the ring before it is read, 0 none,
 * -1 a malformed offer. */
int oxr_shm_big_waiting(struct oxr_shm_end *e);
/* Reader: reads up to n bytes of the waiting offer from process pid into
 * buf; refuse: answers "copy them" instead.  Returns bytes read, 0 when it
 * refused, -1 with errno when the read failed (EPERM, ENOSYS: CMA is not
 * allowed here, the caller may refuse; anything else: the peer's fault). */
ssize_t oxr_shm_big_read(struct oxr_shm_end *e, pid_t pid, void *buf, size_t n, int refuse);

/* Writer: 1 when n is published, 0 when the notes are full, -1 when the
 * reader's counter is out of bounds.  n->pos is set here. */
int oxr_shm_note_push(struct oxr_shm_end *e, struct oxr_shm_note *n);
/* Reader: the next note, copied out of the shared page (its fields are the
 * peer's word: the caller checks them): 1, 0 none, -1 out of bounds. */
int oxr_shm_note_peek(struct oxr_shm_end *e, struct oxr_shm_note *n);
void oxr_shm_note_taken(struct oxr_shm_end *e);
/* Writer: notes that fit now (0: full), -1 out of bounds. */
int oxr_shm_note_room(struct oxr_shm_end *e);

/* The flag this end raises before it sleeps, and takes down again. */
static inline _Atomic uint32_t *oxr_shm_ring_my_wait(struct oxr_shm_end *e, int reader)
{
	return reader ? &e->r->reader_waits : &e->r->writer_waits;
}
/* 1 when the other end was asleep and must be woken (its flag is then down). */
int oxr_shm_ring_must_wake(struct oxr_shm_end *e, int reader);

#endif
