/* SPDX-License-Identifier: MIT */
/*
 * A receive FIFO shared by many senders, so a rank's memory does not grow
 * with its local peers (issue 20; vader's per-process FIFO, with the cells
 * in the receiver's segment).
 *
 * Layout: ncells cells of cell_bytes (a 64-byte header, then payload),
 * ncells refs (64-bit words), nslots sender lines (slot s is the sender the
 * receiver numbered s when their link opened).
 *
 * Algorithm.  A sender takes a free cell by CAS (0 -> taken by slot s),
 * fills it, then queues a ref to it: it reads tail = p and CASes refs[p mod
 * ncells] from "empty for position p" to "cell c of slot s at position p"
 * (one word: position's low 32 bits, slot, cell), then moves tail on by CAS
 * (anyone who finds position p published, or taken out already, moves
 * tail for it: a sender stopped between its two CASes stalls nobody).  The reader
 * takes refs in position order: ref head published for head -> hands cell
 * over, writes "empty for head + ncells" back, head++.  It frees a cell
 * (state 0) once the link above has read it, in any order.
 *
 * Invariant: every queued ref names a distinct taken cell, and a sender
 * holds its cell taken before it queues, so at most ncells refs are queued
 * and the slot for position p is already empty for p when tail reads p:
 * the ref ring never overflows.  One CAS both claims a position and
 * publishes the ref, so a sender killed at any instant leaves no hole the
 * reader would wait at forever (at worst a taken cell nobody queued, which
 * free_slot returns once the link is gone).  Order per sender: its refs
 * take increasing positions, so the reader sees its cells in order.
 *
 * Flow control: a sender keeps at most `credit` cells in flight (sent and
 * not consumed: slots[s].done, written by the reader), so one sender cannot
 * hold every cell, and a receiver that stops reading one link (its queue
 * full) copies that link's cells out when free cells run short
 * (shm_fifo_link.c), so other senders always find cells.
 *
 * Trust: every local peer of the group can write the whole page.  The
 * reader never follows a value from it unchecked: a ref's cell and slot are
 * bounds-checked, a cell's state must name the ref's slot, its length fits
 * the cell; the writer checks done against what it sent.  A bad value is
 * the sender's protocol error (its link fails), or where no sender can be
 * named, the FIFO's, and its links fail with it.  A hostile local peer can
 * still spoil other senders' cells; the ring links (shm_ring.c) do not
 * share that exposure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "shm_fifo.h"
#include "shm_memfd.h"

#define FIFO_MAGIC 0x4658584fu /* "OXXF" */
#define FIFO_VERSION 1u
#define CELL_BYTES 4096u
#define TAKEN (UINT64_C(1) << 63)
#define EMPTY_SLOT OXR_SHM_FIFO_NOSLOT
#define LEN_MASK ((UINT64_C(1) << 30) - 1)
#define LEN_W (UINT64_C(1) << 30) /* the sender is appending */
#define LEN_S (UINT64_C(1) << 31) /* the reader sealed it: no more appends */
#define MAX_TRIES 65536 /* each failed try saw another sender move on */

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t off_slots(uint32_t ncells)
{
	return up64(sizeof(struct oxr_shm_fifo) + (size_t)ncells * sizeof(uint64_t));
}

static size_t off_cells(uint32_t ncells, uint32_t nslots)
{
	return up64(off_slots(ncells) + (size_t)nslots * sizeof(struct oxr_shm_fifo_slot));
}

static size_t total(uint32_t ncells, uint32_t cell_bytes, uint32_t nslots)
{
	return off_cells(ncells, nslots) + (size_t)ncells * cell_bytes;
}

static uint64_t ref(uint64_t pos, uint32_t s, uint32_t cell)
{
	return (pos << 32) | ((uint64_t)s << 16) | cell;
}

static void view(struct oxr_shm_fifo_end *e)
{
	uint8_t *b = (uint8_t *)e->f;

	e->slots = (struct oxr_shm_fifo_slot *)(void *)(b + off_slots(e->ncells));
	e->cells = b + off_cells(e->ncells, e->nslots);
}

oxr_status_t oxr_shm_fifo_create(uint64_t bytes, uint32_t nslots, const uint8_t nonce[OXR_SHM_NONCE],
				 int *fd, struct oxr_shm_fifo_end *e)
{
	uint64_t n = bytes / CELL_BYTES;
	oxr_status_t st;
	size_t len;
	uint32_t i;

	memset(e, 0, sizeof(*e));
	if (n < 8 || n > 65535 || nslots < 1 || nslots >= EMPTY_SLOT)
		return oxr_err(OXR_ERR_INVAL, "OXR_SHM_FIFO_BYTES=%llu: 32 KiB to 255 MiB "
			       "(%u-byte cells)", (unsigned long long)bytes, CELL_BYTES);
	e->ncells = (uint32_t)n;
	e->cell_bytes = CELL_BYTES;
	e->nslots = nslots;
	/* an eighth each: a few busy senders fill it, none alone */
	e->credit = e->ncells / 8;
	len = total(e->ncells, e->cell_bytes, nslots);
	if ((st = oxr_shm_memfd_new("oxr-shm-fifo", len, fd)))
		return st;
	if ((e->f = oxr_shm_map(NULL, len, *fd)) == MAP_FAILED) {
		int err = errno;
		close(*fd);
		*fd = -1;
		e->f = NULL;
		return oxr_err(OXR_ERR_NOMEM, "shm: mapping a %zu-byte receive FIFO: %s", len,
			       strerror(err));
	}
	e->map_len = len;
	e->last = -1;
	view(e);
	e->f->magic = FIFO_MAGIC;
	e->f->version = FIFO_VERSION;
	e->f->ncells = e->ncells;
	e->f->cell_bytes = e->cell_bytes;
	e->f->nslots = nslots;
	e->f->credit = e->credit;
	memcpy(e->f->nonce, nonce, OXR_SHM_NONCE);
	for (i = 0; i < e->ncells; i++)
		atomic_init(&e->f->refs[i], ref(i, EMPTY_SLOT, 0));
	return OXR_OK;
}

oxr_status_t oxr_shm_fifo_attach(pid_t pid, int fd, const uint8_t nonce[OXR_SHM_NONCE],
				 struct oxr_shm_fifo_end *e)
{
	struct oxr_shm_fifo h;
	oxr_status_t st;
	size_t len;
	void *p;
	int f;

	memset(e, 0, sizeof(*e));
	if ((st = oxr_shm_memfd_open(pid, fd, 0, "receive FIFO", &f, &len)))
		return st;
	p = len >= sizeof(h) ? oxr_shm_map(NULL, len, f) : MAP_FAILED;
	close(f);
	if (p == MAP_FAILED)
		return oxr_err(OXR_ERR_PROTO, "shm: mapping the peer's %zu-byte receive FIFO: %s",
			       len, len >= sizeof(h) ? strerror(errno) : "too short");
	memcpy(&h, p, sizeof(h));
	e->f = p;
	e->map_len = len;
	if (h.magic != FIFO_MAGIC || h.version != FIFO_VERSION || h.cell_bytes != CELL_BYTES ||
	    h.ncells < 8 || h.ncells > 65535 || h.nslots < 1 || h.nslots >= EMPTY_SLOT ||
	    h.credit < 1 || h.credit > h.ncells || total(h.ncells, h.cell_bytes, h.nslots) != len ||
	    memcmp(h.nonce, nonce, OXR_SHM_NONCE)) {
		oxr_shm_fifo_unmap(e);
		return oxr_err(OXR_ERR_PROTO, "shm: the peer's fd %d is not the receive FIFO it "
			       "offered (another process's, or a stale one)", fd);
	}
	e->ncells = h.ncells;
	e->cell_bytes = h.cell_bytes;
	e->nslots = h.nslots;
	e->credit = h.credit;
	e->last = -1;
	view(e);
	return OXR_OK;
}

void oxr_shm_fifo_unmap(struct oxr_shm_fifo_end *e)
{
	if (e->f)
		munmap(e->f, e->map_len);
	e->f = NULL;
}

/* Takes a free cell for slot s; -1 when none is. */
static int64_t take(struct oxr_shm_fifo_end *e, uint32_t s, uint32_t *count)
{
	uint32_t i;

	for (i = 0; i < e->ncells; i++) {
		uint32_t c = (e->hint + i) % e->ncells;
		struct oxr_shm_cell *x = oxr_shm_cell_at(e, c);
		uint64_t zero = 0;
		/* the first straight away (one transfer of its line, not two),
		 * the rest looked at before they are tried */
		if ((i == 0 || atomic_load_explicit(&x->state, memory_order_relaxed) == 0) &&
		    atomic_compare_exchange_strong(&x->state, &zero,
						   TAKEN | (uint64_t)s << 32 | ++*count)) {
			e->hint = (c + 1) % e->ncells;
			return c;
		}
	}
	return -1;
}

/* Queues cell c of slot s: 1, or -1 when the refs are not as the invariant
 * says (a peer wrote them). */
static int enqueue(struct oxr_shm_fifo_end *e, uint32_t s, uint32_t c)
{
	int i;

	for (i = 0; i < MAX_TRIES; i++) {
		uint64_t p = atomic_load(&e->f->tail);
		_Atomic uint64_t *r = &e->f->refs[p % e->ncells];
		uint64_t w = ref(p, EMPTY_SLOT, 0);
		if (atomic_compare_exchange_strong(r, &w, ref(p, s, c))) {
			atomic_compare_exchange_strong(&e->f->tail, &p, p + 1);
			return 1;
		}
		if ((uint32_t)(w >> 32) == (uint32_t)p || w == ref(p + e->ncells, EMPTY_SLOT, 0)) {
			/* published for p by another (and maybe taken out already),
			 * who has not moved tail on yet: do it for them */
			atomic_compare_exchange_strong(&e->f->tail, &p, p + 1);
		}
	}
	return -1;
}

/* Copies up to room bytes of iov, skip bytes in, to dst; returns them. */
static size_t gather(uint8_t *dst, size_t room, const struct iovec *iov, int niov, size_t skip)
{
	size_t n = 0;
	int i;

	for (i = 0; i < niov && n < room; i++) {
		size_t k = iov[i].iov_len;
		if (skip >= k) {
			skip -= k;
			continue;
		}
		k -= skip;
		if (k > room - n)
			k = room - n;
		memcpy(dst + n, (const uint8_t *)iov[i].iov_base + skip, k);
		n += k;
		skip = 0;
	}
	return n;
}

/* Appends to the sender's last cell, while the reader has not sealed it. */
static size_t append(struct oxr_shm_fifo_end *e, const struct iovec *iov, int niov, size_t skip)
{
	struct oxr_shm_cell *x = oxr_shm_cell_at(e, (uint32_t)e->last);
	uint64_t w = e->last_w, len = w & LEN_MASK;
	size_t n;

	if (len >= oxr_shm_cell_room(e) ||
	    !atomic_compare_exchange_strong(&x->lenw, &w, e->last_w | LEN_W)) {
		/* full, or taken out: the next bytes take a cell, this one first
		 * when the reader has freed it (its line is in our cache now) */
		e->hint = (uint32_t)e->last;
		e->last = -1;
		return 0;
	}
	n = gather(x->data + len, oxr_shm_cell_room(e) - len, iov, niov, skip);
	e->last_w = (e->last_w & ~LEN_MASK) | (len + n);
	atomic_store_explicit(&x->lenw, e->last_w, memory_order_release);
	return n;
}

ssize_t oxr_shm_fifo_send(struct oxr_shm_fifo_end *e, uint32_t s, uint32_t *count, uint32_t kind,
			  const struct iovec *iov, int niov, size_t skip, int may_take, int *took)
{
	struct oxr_shm_cell *x;
	uint64_t lw;
	int64_t c;
	size_t n;

	*took = 0;
	if (kind == OXR_SHM_CELL_DATA && e->last >= 0 && (n = append(e, iov, niov, skip)))
		return (ssize_t)n;
	if (!may_take || (c = take(e, s, count)) < 0)
		return 0;
	x = oxr_shm_cell_at(e, (uint32_t)c);
	n = gather(x->data, oxr_shm_cell_room(e), iov, niov, skip);
	x->kind = kind;
	lw = (uint64_t)s << 48 | (uint64_t)(*count & 0xffff) << 32 | n;
	atomic_store_explicit(&x->lenw, lw, memory_order_relaxed);
	if (enqueue(e, s, (uint32_t)c) < 0) {
		atomic_store_explicit(&x->state, 0, memory_order_release);
		e->last = -1;
		errno = EPROTO;
		return -1;
	}
	*took = 1;
	e->last = kind == OXR_SHM_CELL_DATA ? c : -1;
	/* what it stored, not what is there now: the reader may have sealed
	 * it already, and an append must then fail */
	e->last_w = lw;
	return (ssize_t)n;
}

int64_t oxr_shm_fifo_in_flight(struct oxr_shm_fifo_end *e, uint32_t s, uint64_t sent)
{
	/* the reader's line is read again only once half the credit is used */
	if (sent - e->seen_done >= e->credit / 2) {
		uint64_t d = atomic_load_explicit(&e->slots[s].done, memory_order_acquire);
		if (d > sent)
			return -1;
		e->seen_done = d;
	}
	return (int64_t)(sent - e->seen_done);
}

int oxr_shm_fifo_has_free(struct oxr_shm_fifo_end *e)
{
	uint32_t i;

	for (i = 0; i < e->ncells; i++)
		if (atomic_load_explicit(&oxr_shm_cell_at(e, (e->hint + i) % e->ncells)->state,
					 memory_order_relaxed) == 0)
			return 1;
	return 0;
}

int oxr_shm_fifo_ready(struct oxr_shm_fifo_end *e)
{
	uint64_t w = atomic_load_explicit(&e->f->refs[e->head % e->ncells], memory_order_acquire);

	return w != ref(e->head, EMPTY_SLOT, 0);
}

int oxr_shm_fifo_pop(struct oxr_shm_fifo_end *e, uint32_t *s, uint32_t *cell, uint32_t *kind)
{
	_Atomic uint64_t *r = &e->f->refs[e->head % e->ncells];
	uint64_t w = atomic_load_explicit(r, memory_order_acquire), st, lw;
	uint32_t ws = (uint32_t)(w >> 16) & 0xffff, wc = (uint32_t)w & 0xffff;
	struct oxr_shm_cell *x;

	if (w == ref(e->head, EMPTY_SLOT, 0))
		return 0;
	/* taken out whatever it says: a bad ref must not stop the FIFO */
	atomic_store_explicit(r, ref(e->head + e->ncells, EMPTY_SLOT, 0), memory_order_release);
	e->head++;
	if ((uint32_t)(w >> 32) != (uint32_t)(e->head - 1) || ws >= e->nslots || wc >= e->ncells)
		return -1;
	*s = ws;
	*cell = wc;
	x = oxr_shm_cell_at(e, wc);
	st = atomic_load_explicit(&x->state, memory_order_acquire);
	lw = atomic_load_explicit(&x->lenw, memory_order_acquire);
	*kind = x->kind;
	if (!(st & TAKEN) || ((st >> 32) & 0x7fffffff) != ws || (lw >> 48) != ws ||
	    (*kind != OXR_SHM_CELL_DATA && *kind != OXR_SHM_CELL_NOTE))
		return -2;
	return 1;
}

int64_t oxr_shm_fifo_len(struct oxr_shm_fifo_end *e, uint32_t cell, uint32_t s, int *busy)
{
	uint64_t lw = atomic_load_explicit(&oxr_shm_cell_at(e, cell)->lenw, memory_order_acquire);

	*busy = (lw & LEN_W) != 0;
	if ((lw >> 48) != s || (lw & LEN_MASK) > oxr_shm_cell_room(e))
		return -1;
	return (int64_t)(lw & LEN_MASK);
}

int oxr_shm_fifo_seal(struct oxr_shm_fifo_end *e, uint32_t cell, uint64_t len)
{
	_Atomic uint64_t *lenw = &oxr_shm_cell_at(e, cell)->lenw;
	uint64_t lw = atomic_load_explicit(lenw, memory_order_acquire);

	if ((lw & (LEN_W | LEN_S)) || (lw & LEN_MASK) != len)
		return (lw & LEN_S) != 0;
	return atomic_compare_exchange_strong(lenw, &lw, lw | LEN_S);
}

void oxr_shm_fifo_free(struct oxr_shm_fifo_end *e, uint32_t cell)
{
	atomic_store_explicit(&oxr_shm_cell_at(e, cell)->state, 0, memory_order_release);
}

void oxr_shm_fifo_free_slot(struct oxr_shm_fifo_end *e, uint32_t s)
{
	uint32_t i;

	for (i = 0; i < e->ncells; i++) {
		struct oxr_shm_cell *x = oxr_shm_cell_at(e, i);
		uint64_t st = atomic_load_explicit(&x->state, memory_order_acquire);
		if ((st & TAKEN) && ((st >> 32) & 0x7fffffff) == s)
			atomic_store_explicit(&x->state, 0, memory_order_release);
	}
}

int oxr_shm_fifo_must_wake_reader(struct oxr_shm_fifo_end *e)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&e->f->reader_waits, memory_order_relaxed) &&
	       atomic_exchange_explicit(&e->f->reader_waits, 0, memory_order_relaxed);
}

void oxr_shm_fifo_writer_sleeps(struct oxr_shm_fifo_end *e, uint32_t s)
{
	atomic_store(&e->slots[s].waits, 1);
	atomic_store(&e->f->writers_wait, 1);
}

int oxr_shm_fifo_any_writer(struct oxr_shm_fifo_end *e)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&e->f->writers_wait, memory_order_relaxed) &&
	       atomic_exchange_explicit(&e->f->writers_wait, 0, memory_order_relaxed);
}
