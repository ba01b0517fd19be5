/* SPDX-License-Identifier: MIT */
/*
 * Links whose stream runs through the receiver's shared FIFO (shm_fifo.c)
 * instead of a ring of their own: a rank receives on up to OXR_SHM_RINGS
 * shm links through rings (fast boxes: its collective partners first,
 * shm_provider.c's wants_ring), on the rest through one FIFO per group, so
 * its memory stops growing with the number of ranks on the node.  Each direction chooses
 * alone: the receiver's offer says ring or FIFO (and the sender's slot).
 *
 * Receiving: poll and arm drain the FIFO's refs into each sender's pend
 * queue (never blocked: at most `credit` cells a sender, by flow control),
 * recv copies out of the cells in place and frees them.  A link whose
 * reader stopped (its message queue full) still holds its cells; once more
 * than half the cells are held, they are copied out to the heap and freed,
 * so other senders always find cells and a blocked rank still hears from
 * the peer it waits for.  Heap per link: at most credit x cell bytes
 * (credits return only when the bytes are read, not when copied out).
 *
 * Order: a sender's cells are in order in the FIFO and in its pend queue;
 * a put's note is a cell too, taken where it stands in the stream.
 *
 * Per rank and group: one FIFO of OXR_SHM_FIFO_BYTES (default 256 KiB:
 * 64 cells of 4 KiB) plus 16 B per slot (1024 slots), whatever the number
 * of local peers; per FIFO link 24 B x credit of pend, and a mapping of the
 * peer's FIFO where this side sends through it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "shm_impl.h"

#define NSLOTS 1024u

static struct shm_group *sgr(oxr_group *g) { return g->hgroup; }

oxr_status_t oxr_shm_fifo_offer(oxr_group *g, struct shm_group *sg, struct shm_link *sl,
				uint32_t *fd, uint8_t nonce[OXR_SHM_NONCE])
{
	struct shm_ctx *x = g->ctx->hctx;
	oxr_status_t st;
	uint32_t s;

	if (!sg->fifo.f) {
		if (getrandom(sg->fifo_nonce, OXR_SHM_NONCE, 0) != OXR_SHM_NONCE)
			return oxr_err(OXR_ERR_IO, "shm: getrandom: %s", strerror(errno));
		if (!(sg->slot_of = calloc(NSLOTS, sizeof(*sg->slot_of))))
			return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
		if ((st = oxr_shm_fifo_create(x->fifo_bytes, NSLOTS, sg->fifo_nonce, &sg->fifo_fd,
					      &sg->fifo))) {
			free(sg->slot_of);
			sg->slot_of = NULL;
			return st;
		}
	}
	for (s = 0; s < sg->fifo.nslots && sg->slot_of[s]; s++)
		;
	if (s == sg->fifo.nslots)
		return oxr_err(OXR_ERR_NOMEM, "shm: all %u slots of the receive FIFO are taken",
			       sg->fifo.nslots);
	if (!(sl->pend = calloc(sg->fifo.credit, sizeof(*sl->pend))))
		return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
	sl->pcap = sg->fifo.credit;
	atomic_store(&sg->fifo.slots[s].done, 0);
	atomic_store(&sg->fifo.slots[s].waits, 0);
	sg->slot_of[s] = sl;
	sl->in_slot = (int)s;
	sl->sg = sg;
	*fd = (uint32_t)sg->fifo_fd;
	memcpy(nonce, sg->fifo_nonce, OXR_SHM_NONCE);
	return OXR_OK;
}

oxr_status_t oxr_shm_fifo_connect(struct shm_link *sl, pid_t pid, int fd, uint32_t slot,
				  const uint8_t nonce[OXR_SHM_NONCE])
{
	oxr_status_t st = oxr_shm_fifo_attach(pid, fd, nonce, &sl->out);

	if (st)
		return st;
	if (slot >= sl->out.nslots) {
		oxr_shm_fifo_unmap(&sl->out);
		return oxr_err(OXR_ERR_PROTO, "shm: rank %d offered slot %u of a %u-slot FIFO",
			       sl->peer, slot, sl->out.nslots);
	}
	sl->out_slot = (int)slot;
	return OXR_OK;
}

/* Frees the front pend entry: its cell or copy goes, a credit comes back. */
static void pend_pop(struct shm_group *sg, struct shm_link *sl)
{
	struct shm_pend *p = &sl->pend[sl->phead];

	if (p->cell >= 0) {
		oxr_shm_fifo_free(&sg->fifo, (uint32_t)p->cell);
		sg->held--;
	}
	free(p->heap);
	p->heap = NULL;
	sl->phead = (sl->phead + 1) % sl->pcap;
	sl->pn--;
	sl->in_done++;
}

/* Cells freed or credits returned: senders asleep on them are woken. */
static void wake_writers(struct shm_group *sg)
{
	uint32_t s;

	if (!oxr_shm_fifo_any_writer(&sg->fifo))
		return;
	for (s = 0; s < sg->fifo.nslots; s++) {
		struct shm_link *sl = sg->slot_of[s];
		if (sl && atomic_load_explicit(&sg->fifo.slots[s].waits, memory_order_relaxed) &&
		    atomic_exchange(&sg->fifo.slots[s].waits, 0) && sl->bell >= 0)
			oxr_shm_ring_bell(sl->bell);
	}
}

/* 1 when process pid has exited (gone, or a zombie not reaped yet). */
static int peer_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t k;
	int fd;

	if (pid <= 0)
		return 0;
	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[k > 0 ? k : 0] = 0;
	/* "pid (comm) S ...": comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	return p && p[1] && (p[2] == 'Z' || p[2] == 'X');
}

void oxr_shm_fifo_link_free(oxr_group *g, struct shm_link *sl)
{
	struct shm_group *sg = sgr(g);

	oxr_shm_fifo_unmap(&sl->out);
	if (sl->in_slot < 0 || !sg)
		return;
	/* its refs still queued come out first: a cell freed while its ref
	 * waits in the FIFO could be taken and queued again, two refs to it */
	oxr_shm_fifo_drain(g);
	while (sl->pn)
		pend_pop(sg, sl);
	free(sl->pend);
	sl->pend = NULL;
	sg->slot_of[sl->in_slot] = NULL;
	/* a sender killed between taking a cell and queuing it; a live one
	 * may still be storing into its cell, which then stays taken */
	if (peer_gone(sl->peer_pid))
		oxr_shm_fifo_free_slot(&sg->fifo, (uint32_t)sl->in_slot);
	sl->in_slot = -1;
	wake_writers(sg);
}

void oxr_shm_fifo_group_free(struct shm_group *sg)
{
	oxr_shm_fifo_unmap(&sg->fifo);
	if (sg->fifo_fd >= 0)
		close(sg->fifo_fd);
	free(sg->slot_of);
}

static struct link *link_of(oxr_group *g, struct shm_link *sl)
{
	struct link *l = oxr_link_at(g, sl->peer);

	return l && oxr_link_priv(l) == sl ? l : NULL;
}

/* Copies every held cell out to the heap: readers of other links must not
 * find the FIFO full because one link is not read.  A cell its sender is
 * appending to stays (it is that sender's one). */
static void spill(struct shm_group *sg)
{
	int i;

	for (i = 0; i < sg->n; i++) {
		struct shm_link *sl = sg->links[i];
		uint32_t j;
		for (j = 0; sl->in_slot >= 0 && j < sl->pn; j++) {
			struct shm_pend *p = &sl->pend[(sl->phead + j) % sl->pcap];
			int64_t len;
			int busy;
			if (p->cell < 0)
				continue;
			len = oxr_shm_fifo_len(&sg->fifo, (uint32_t)p->cell, (uint32_t)sl->in_slot,
					       &busy);
			if (len < 0 || (p->kind == OXR_SHM_CELL_DATA &&
					!oxr_shm_fifo_seal(&sg->fifo, (uint32_t)p->cell, (uint64_t)len)))
				continue; /* broken (recv says so) or being appended to */
			if (!(p->heap = malloc(len ? (size_t)len : 1)))
				return; /* kept in place: tried again at the next drain */
			memcpy(p->heap, oxr_shm_cell_at(&sg->fifo, (uint32_t)p->cell)->data, (size_t)len);
			p->len = (uint32_t)len;
			oxr_shm_fifo_free(&sg->fifo, (uint32_t)p->cell);
			p->cell = -1;
			sg->held--;
		}
	}
}

void oxr_shm_fifo_drain(oxr_group *g)
{
	struct shm_group *sg = sgr(g);
	uint32_t s, c, kind;
	int k;

	if (!sg || !sg->fifo.f)
		return;
	/* awake: a flag left up from a sleep would only cost senders a wake-up */
	if (atomic_load_explicit(&sg->fifo.f->reader_waits, memory_order_relaxed))
		atomic_store_explicit(&sg->fifo.f->reader_waits, 0, memory_order_relaxed);
	while ((k = oxr_shm_fifo_pop(&sg->fifo, &s, &c, &kind)) != 0) {
		struct shm_link *sl = k == -1 ? NULL : sg->slot_of[s];
		struct link *l;
		if (k == -1) {
			oxr_log(g->ctx, OXR_LOG_ERROR, "rank %d: shm: a broken ref in the receive "
				"FIFO, dropped (a local peer wrote it)", g->rank);
			continue;
		}
		if (!sl) { /* its link is gone */
			if (k == 1)
				oxr_shm_fifo_free(&sg->fifo, c);
			continue;
		}
		if (k == -2 || sl->pn == sl->pcap) {
			if ((l = link_of(g, sl)))
				oxr_link_fail(g, l, OXR_ERR_PROTO, "shm link to rank %d: the peer "
					      "broke the receive FIFO (%s)", sl->peer,
					      k == -2 ? "a cell out of bounds" : "more cells than "
					      "its credit");
			if (k == 1)
				oxr_shm_fifo_free(&sg->fifo, c);
			continue;
		}
		sl->pend[(sl->phead + sl->pn) % sl->pcap] =
			(struct shm_pend){ .cell = (int32_t)c, .kind = kind };
		sl->pn++;
		sg->held++;
	}
	if (sg->held > sg->fifo.ncells / 2) {
		if (!sg->spilled++)
			oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: shm: over half the receive FIFO's "
				"cells wait for links not read now: copied out", g->rank);
		spill(sg);
		wake_writers(sg);
	}
}

/* The front entry's bytes there now (its len for a copy, the cell's word
 * in place); -1 when the peer broke the cell's word. */
static int64_t front_len(struct shm_group *sg, struct shm_link *sl, struct shm_pend *p, int *busy)
{
	*busy = 0;
	if (p->cell < 0)
		return p->len;
	return oxr_shm_fifo_len(&sg->fifo, (uint32_t)p->cell, (uint32_t)sl->in_slot, busy);
}

int oxr_shm_fifo_rx_ready(struct shm_link *sl)
{
	struct shm_pend *p;
	int64_t len;
	int busy;

	if (!sl->pn)
		return 0;
	p = &sl->pend[sl->phead];
	len = front_len(sl->sg, sl, p, &busy);
	/* all read of a cell its sender is appending to: nothing yet */
	return len < 0 || (uint64_t)len > p->off || !busy;
}

ssize_t oxr_shm_fifo_recv(oxr_group *g, struct link *l, struct shm_link *sl, void *buf, size_t n)
{
	struct shm_group *sg = sgr(g);
	uint64_t before = sl->in_done;
	size_t got = 0;

	/* the FIFO's refs were taken out by the poll that said this link is
	 * ready; what came since waits for the next one */
	while (sl->in_slot >= 0 && sl->pn && got < n) {
		struct shm_pend *p = &sl->pend[sl->phead];
		const uint8_t *src = p->heap ? p->heap
					     : oxr_shm_cell_at(&sg->fifo, (uint32_t)p->cell)->data;
		int busy;
		int64_t len = front_len(sg, sl, p, &busy);
		size_t k;
		if (len < 0 || (uint64_t)len < p->off)
			return oxr_shm_broken(g, l, "the receive FIFO (a cell's length)");
		if (p->kind == OXR_SHM_CELL_NOTE) {
			struct oxr_shm_note nt;
			struct oxr_put_note pn;
			if (got)
				break; /* the bytes before it go up first */
			if (len != sizeof(nt))
				return oxr_shm_broken(g, l, "the receive FIFO (a note's length)");
			memcpy(&nt, src, sizeof(nt));
			pend_pop(sg, sl);
			pn = (struct oxr_put_note){ .id = nt.id, .epoch = nt.epoch,
						    .value = nt.value, .offset = nt.offset };
			oxr_put_landed(g, l, &pn, nt.len, NULL, nt.notify != 0);
			if (!oxr_link_up(l))
				break;
			continue;
		}
		k = (size_t)len - p->off;
		if (k > n - got)
			k = n - got;
		memcpy((uint8_t *)buf + got, src + p->off, k);
		p->off += (uint32_t)k;
		got += k;
		if (p->off < (uint64_t)len)
			break; /* buf is full */
		/* all of it read: sealed, no more bytes come into it */
		if (p->cell >= 0 && !oxr_shm_fifo_seal(&sg->fifo, (uint32_t)p->cell, (uint64_t)len))
			break; /* its sender is appending: the rest comes at the next read */
		pend_pop(sg, sl);
	}
	if (sl->in_done != before) {
		atomic_store_explicit(&sg->fifo.slots[sl->in_slot].done, sl->in_done,
				      memory_order_release);
		wake_writers(sg);
	}
	if (!got) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)got;
}

int oxr_shm_fifo_can_send(struct shm_link *sl)
{
	int64_t fl = oxr_shm_fifo_in_flight(&sl->out, (uint32_t)sl->out_slot, sl->out_sent);

	/* a broken counter: 1, so the send runs into it and fails the link;
	 * room in the last cell counts only as the send finds it */
	return fl < 0 || (fl < sl->out.credit && oxr_shm_fifo_has_free(&sl->out));
}

ssize_t oxr_shm_fifo_sendv(oxr_group *g, struct link *l, struct shm_link *sl,
			   const struct iovec *iov, int niov)
{
	int64_t fl = oxr_shm_fifo_in_flight(&sl->out, (uint32_t)sl->out_slot, sl->out_sent);
	size_t done = 0, want = 0;
	int i, took;

	if (fl < 0)
		return oxr_shm_broken(g, l, "the receive FIFO (a consumed count)");
	for (i = 0; i < niov; i++)
		want += iov[i].iov_len;
	while (done < want) {
		ssize_t k = oxr_shm_fifo_send(&sl->out, (uint32_t)sl->out_slot, &sl->out_count,
					      OXR_SHM_CELL_DATA, iov, niov, done,
					      fl < sl->out.credit, &took);
		if (k < 0)
			return oxr_shm_broken(g, l, "the receive FIFO (its refs)");
		if (k == 0)
			break;
		done += (size_t)k;
		sl->out_sent += (uint64_t)took;
		fl += took;
	}
	if (done && oxr_shm_fifo_must_wake_reader(&sl->out))
		oxr_shm_ring_bell(sl->bell);
	if (!done) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)done;
}

int oxr_shm_fifo_note(struct shm_link *sl, const struct oxr_shm_note *n)
{
	struct iovec v = { (void *)n, sizeof(*n) };
	ssize_t k;
	int took;

	if (!oxr_shm_fifo_can_send(sl))
		return 0;
	k = oxr_shm_fifo_send(&sl->out, (uint32_t)sl->out_slot, &sl->out_count, OXR_SHM_CELL_NOTE,
			      &v, 1, 0, 1, &took);
	if (k <= 0)
		return (int)(k < 0 ? -1 : 0);
	sl->out_sent++;
	if (oxr_shm_fifo_must_wake_reader(&sl->out))
		oxr_shm_ring_bell(sl->bell);
	return 1;
}

int oxr_shm_fifo_arm(oxr_group *g)
{
	struct shm_group *sg = sgr(g);

	if (!sg || !sg->fifo.f)
		return 0;
	atomic_store(&sg->fifo.f->reader_waits, 1);
	atomic_thread_fence(memory_order_seq_cst);
	return oxr_shm_fifo_ready(&sg->fifo);
}
