/* SPDX-License-Identifier: MIT */
/*
 * A single-writer single-reader byte ring in a sealed memfd.
 *
 * Algorithm: head and tail count bytes ever read and written (64 bits: they
 * never wrap); byte i lives at data[i mod cap].  The writer copies into
 * [tail, head + cap), then publishes tail with a release store; the reader
 * copies out of [head, tail) after an acquire load of tail, then publishes
 * head.  Invariant: 0 <= tail - head <= cap, and each side keeps its own
 * counter privately (struct oxr_shm_end.mine) and only ever reads the
 * other's from the page, checking the invariant first: the peer can write
 * anything into the shared page, so a counter out of bounds is the peer's
 * protocol error, never an index we follow.
 *
 * Notes (put notes, shm_win.c) are a second ring of fixed slots in the
 * header, under the same rules: note_tail and note_head count notes ever
 * written and taken, checked the same way before use.
 *
 * Sleep and wake: a side that will sleep raises its flag, fences, and looks
 * once more (shm_provider.c's arm); the other side, after publishing its
 * counter, fences and takes the flag down with an exchange, so exactly one
 * wake-up goes out per sleep (Dekker: store, full fence, load on both sides).
 *
 * Why a memfd: it has no name in /dev/shm, so a rank killed by -9 leaves
 * nothing behind; its pages go when the last mapping does.  The creator
 * seals its size (F_SEAL_SHRINK | GROW | SEAL) before the peer maps it, so a
 * peer cannot truncate it under our loads (a SIGBUS).  The peer reaches it
 * through /proc/<pid>/fd/<fd>: the kernel allows that only to processes that
 * may ptrace the creator (the same user, as with CMA), and the 16-byte
 * nonce, sent over the authenticated link, proves it mapped the right one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "shm_memfd.h"
#include "shm_ring.h"

#define RING_MAGIC 0x5253584fu /* "OXSR" */
#define RING_VERSION 2u

static size_t map_len(uint64_t cap)
{
	return sizeof(struct oxr_shm_ring) + (size_t)cap;
}

oxr_status_t oxr_shm_ring_create(uint64_t cap, const uint8_t nonce[OXR_SHM_NONCE], int *fd,
				 struct oxr_shm_end *e)
{
	size_t len = map_len(cap);
	oxr_status_t st;
	void *p;

	memset(e, 0, sizeof(*e));
	if ((st = oxr_shm_memfd_new("oxr-shm-ring", len, fd)))
		return st;
	if ((p = oxr_shm_map(NULL, len, *fd)) == MAP_FAILED) {
		int err = errno;
		close(*fd);
		*fd = -1;
		return oxr_err(OXR_ERR_NOMEM, "shm: mapping a %zu-byte ring: %s", len,
			       strerror(err));
	}
	e->r = p;
	e->map_len = len;
	e->r->magic = RING_MAGIC;
	e->r->version = RING_VERSION;
	e->r->cap = e->cap = cap;
	memcpy(e->r->nonce, nonce, OXR_SHM_NONCE);
	return OXR_OK;
}

oxr_status_t oxr_shm_ring_attach(pid_t pid, int fd, uint64_t cap,
				 const uint8_t nonce[OXR_SHM_NONCE], struct oxr_shm_end *e)
{
	size_t len = map_len(cap);
	oxr_status_t st;
	void *p;
	int f;

	memset(e, 0, sizeof(*e));
	if ((st = oxr_shm_memfd_open(pid, fd, len, "ring", &f, NULL)))
		return st;
	p = oxr_shm_map(NULL, len, f);
	close(f);
	if (p == MAP_FAILED)
		return oxr_err(OXR_ERR_NOMEM, "shm: mapping the peer's ring: %s", strerror(errno));
	e->r = p;
	e->map_len = len;
	if (e->r->magic != RING_MAGIC || e->r->version != RING_VERSION || e->r->cap != cap ||
	    memcmp(e->r->nonce, nonce, OXR_SHM_NONCE)) {
		oxr_shm_ring_unmap(e);
		return oxr_err(OXR_ERR_PROTO, "shm: the peer's fd %d is not the ring it offered "
			       "(another process's, or a stale one)", fd);
	}
	e->cap = cap;
	return OXR_OK;
}

void oxr_shm_ring_unmap(struct oxr_shm_end *e)
{
	if (e->r)
		munmap(e->r, e->map_len);
	e->r = NULL;
}

int64_t oxr_shm_ring_avail(struct oxr_shm_end *e)
{
	if (e->seen == e->mine) {
		uint64_t t = atomic_load_explicit(&e->r->tail, memory_order_acquire);
		/* never kept: every later call must find it out of bounds too */
		if (t - e->mine > e->cap)
			return -1;
		e->seen = t;
	}
	return (int64_t)(e->seen - e->mine);
}

int64_t oxr_shm_ring_room(struct oxr_shm_end *e)
{
	uint64_t cap = e->cap;

	/* the reader's line is read again only once half the room is used */
	if (e->mine - e->seen > cap / 2) {
		uint64_t h = atomic_load_explicit(&e->r->head, memory_order_acquire);
		if (e->mine - h > cap)
			return -1;
		e->seen = h;
	}
	return (int64_t)(cap - (e->mine - e->seen));
}

/* Copies n bytes between src and the ring at position pos (mod cap). */
static void copy_in(const struct oxr_shm_end *e, uint64_t pos, const uint8_t *src, size_t n)
{
	struct oxr_shm_ring *r = e->r;
	size_t at = (size_t)(pos & (e->cap - 1)), first = e->cap - at;

	if (first >= n) {
		memcpy(r->data + at, src, n);
	} else {
		memcpy(r->data + at, src, first);
		memcpy(r->data, src + first, n - first);
	}
}

static void copy_out(const struct oxr_shm_end *e, uint64_t pos, uint8_t *dst, size_t n)
{
	const struct oxr_shm_ring *r = e->r;
	size_t at = (size_t)(pos & (e->cap - 1)), first = e->cap - at;

	if (first >= n) {
		memcpy(dst, r->data + at, n);
	} else {
		memcpy(dst, r->data + at, first);
		memcpy(dst + first, r->data, n - first);
	}
}

ssize_t oxr_shm_ring_write(struct oxr_shm_end *e, const struct iovec *iov, int niov)
{
	int64_t room = oxr_shm_ring_room(e);
	size_t done = 0;
	int i;

	if (room < 0)
		return -1;
	for (i = 0; i < niov && (uint64_t)room > done; i++) {
		size_t k = iov[i].iov_len;
		if (k > (uint64_t)room - done)
			k = (size_t)((uint64_t)room - done);
		copy_in(e, e->mine + done, iov[i].iov_base, k);
		done += k;
	}
	if (done) {
		e->mine += done;
		atomic_store_explicit(&e->r->tail, e->mine, memory_order_release);
	}
	return (ssize_t)done;
}

ssize_t oxr_shm_ring_read(struct oxr_shm_end *e, void *buf, size_t n)
{
	int64_t avail = oxr_shm_ring_avail(e);

	if (avail < 0)
		return -1;
	if ((uint64_t)avail < n)
		n = (size_t)avail;
	if (n) {
		copy_out(e, e->mine, buf, n);
		e->mine += n;
		atomic_store_explicit(&e->r->head, e->mine, memory_order_release);
	}
	return (ssize_t)n;
}

/* Notes: a second ring of fixed slots beside the bytes, the same rules. */
int oxr_shm_note_room(struct oxr_shm_end *e)
{
	if (e->note_mine - e->note_seen >= OXR_SHM_NOTES) {
		uint64_t h = atomic_load_explicit(&e->r->note_head, memory_order_acquire);
		if (e->note_mine - h > OXR_SHM_NOTES)
			return -1;
		e->note_seen = h;
	}
	return (int)(OXR_SHM_NOTES - (e->note_mine - e->note_seen));
}

int oxr_shm_note_push(struct oxr_shm_end *e, struct oxr_shm_note *n)
{
	int room = oxr_shm_note_room(e);

	if (room <= 0)
		return room;
	n->pos = e->mine;
	e->r->notes[e->note_mine % OXR_SHM_NOTES] = *n;
	e->note_mine++;
	atomic_store_explicit(&e->r->note_tail, e->note_mine, memory_order_release);
	return 1;
}

int oxr_shm_note_peek(struct oxr_shm_end *e, struct oxr_shm_note *n)
{
	if (e->note_seen == e->note_mine) {
		uint64_t t = atomic_load_explicit(&e->r->note_tail, memory_order_acquire);
		if (t - e->note_mine > OXR_SHM_NOTES)
			return -1;
		e->note_seen = t;
		if (t == e->note_mine)
			return 0;
	}
	*n = e->r->notes[e->note_mine % OXR_SHM_NOTES];
	return 1;
}

void oxr_shm_note_taken(struct oxr_shm_end *e)
{
	e->note_mine++;
	atomic_store_explicit(&e->r->note_head, e->note_mine, memory_order_release);
}

int oxr_shm_ring_must_wake(struct oxr_shm_end *e, int reader)
{
	/* the other end's flag: the writer wakes a sleeping reader, and back */
	_Atomic uint32_t *f = oxr_shm_ring_my_wait(e, !reader);

	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(f, memory_order_relaxed) &&
	       atomic_exchange_explicit(f, 0, memory_order_relaxed);
}
