/* SPDX-License-Identifier: MIT */
/*
 * The shm receive FIFO that many senders share (transport/shm/shm_fifo.c),
 * on its own, then under a link: order per sender, a full FIFO, what a
 * broken or hostile local peer can write (refs, cells, counters), a sender
 * stopped at any instant, and the link that fails for it.  The FIFO is
 * made here and attached again through /proc/self/fd, as a peer would.
 * Everything else (messages, puts, revoke, failures, collectives) runs on
 * it in the per-provider suites as "shm-fifo".
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_pair.h"
#include "oxr/cmo.h"
#include "shm/shm_fifo.h"
#include "test_util.h"

static const uint8_t nonce[OXR_SHM_NONCE] = "0123456789abcdef";

struct two_ends {
	struct oxr_shm_fifo_end rx, tx; /* the owner's, a sender's */
	int fd;
};

static void fifo_pair(struct two_ends *t, uint64_t bytes)
{
	cr_assert_eq(oxr_shm_fifo_create(bytes, 64, nonce, &t->fd, &t->rx), OXR_OK, "%s",
		     oxr_errmsg());
	cr_assert_eq(oxr_shm_fifo_attach(getpid(), t->fd, nonce, &t->tx), OXR_OK, "%s",
		     oxr_errmsg());
}

static void fifo_pair_free(struct two_ends *t)
{
	oxr_shm_fifo_unmap(&t->tx);
	oxr_shm_fifo_unmap(&t->rx);
	close(t->fd);
}

static ssize_t send_bytes(struct two_ends *t, uint32_t s, uint32_t *count, const void *p,
			  size_t n, size_t skip)
{
	struct iovec v = { (void *)p, n };
	int took;

	/* a cell each: appends have a test of their own */
	t->tx.last = -1;
	return oxr_shm_fifo_send(&t->tx, s, count, OXR_SHM_CELL_DATA, &v, 1, skip, 1, &took);
}

/* The bytes of cell c (slot s's) there now, checked in bounds. */
static uint32_t cell_len(struct two_ends *t, uint32_t c, uint32_t s)
{
	int busy;
	int64_t n = oxr_shm_fifo_len(&t->rx, c, s, &busy);

	cr_assert_geq(n, 0, "cell %u's length word", c);
	return (uint32_t)n;
}

static uint64_t ref_word(uint64_t pos, uint32_t s, uint32_t c)
{
	return pos << 32 | (uint64_t)s << 16 | c;
}

Test(shm_fifo, attach_checks_what_it_maps)
{
	struct two_ends t;
	struct oxr_shm_fifo_end e;
	uint8_t other[OXR_SHM_NONCE] = "fedcba9876543210";

	fifo_pair(&t, 64 << 10);
	cr_assert_eq(t.tx.ncells, 16);
	cr_assert_eq(t.tx.credit, 2);
	cr_assert_neq(oxr_shm_fifo_attach(getpid(), t.fd, other, &e), OXR_OK);
	cr_assert(strstr(oxr_errmsg(), "not the receive FIFO"), "%s", oxr_errmsg());
	cr_assert_neq(oxr_shm_fifo_attach(getpid(), 0, nonce, &e), OXR_OK, "stdin is no FIFO");
	cr_assert_neq(oxr_shm_fifo_create(16 << 10, 64, nonce, &t.fd, &e), OXR_OK);
	cr_assert(strstr(oxr_errmsg(), "OXR_SHM_FIFO_BYTES"), "%s", oxr_errmsg());
	fifo_pair_free(&t);
}

/* Two senders interleaved, a message bigger than a cell: each sender's
 * bytes come out whole and in its order, and credits come back as done. */
Test(shm_fifo, senders_interleaved_come_out_in_order_per_sender)
{
	struct two_ends t;
	uint8_t big[5000], out[2][5000];
	size_t sent[2] = { 0, 0 }, got[2] = { 0, 0 };
	uint32_t count[2] = { 0, 0 }, s, c, kind, len;
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	fifo_pair(&t, 256 << 10);
	while (sent[0] < sizeof(big) || sent[1] < sizeof(big)) {
		for (s = 0; s < 2; s++) {
			ssize_t k;
			if (sent[s] == sizeof(big))
				continue;
			k = send_bytes(&t, s + 1, &count[s], big, sizeof(big), sent[s]);
			cr_assert_gt(k, 0);
			cr_assert_leq((size_t)k, oxr_shm_cell_room(&t.tx));
			sent[s] += (size_t)k;
		}
	}
	while (oxr_shm_fifo_pop(&t.rx, &s, &c, &kind) == 1) {
		cr_assert(s == 1 || s == 2, "slot %u", s);
		cr_assert_eq(kind, OXR_SHM_CELL_DATA);
		len = cell_len(&t, c, s);
		cr_assert_leq(got[s - 1] + len, sizeof(big));
		memcpy(out[s - 1] + got[s - 1], oxr_shm_cell_at(&t.rx, c)->data, len);
		got[s - 1] += len;
		oxr_shm_fifo_free(&t.rx, c);
	}
	for (s = 0; s < 2; s++) {
		cr_assert_eq(got[s], sizeof(big));
		cr_assert(!memcmp(out[s], big, sizeof(big)), "sender %u's bytes out of order", s + 1);
	}
	fifo_pair_free(&t);
}

Test(shm_fifo, a_full_fifo_says_so_and_a_freed_cell_makes_room)
{
	struct two_ends t;
	uint32_t count = 0, s, c, kind, i;

	fifo_pair(&t, 64 << 10);
	for (i = 0; i < t.tx.ncells; i++)
		cr_assert_eq(send_bytes(&t, 3, &count, "x", 1, 0), 1);
	cr_assert_eq(send_bytes(&t, 3, &count, "x", 1, 0), 0, "no cell is free");
	cr_assert(!oxr_shm_fifo_has_free(&t.tx));
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(send_bytes(&t, 3, &count, "x", 1, 0), 0, "taken out, not yet freed");
	oxr_shm_fifo_free(&t.rx, c);
	cr_assert_eq(send_bytes(&t, 3, &count, "y", 1, 0), 1);
	for (i = 0; i < t.rx.ncells; i++)
		cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(oxr_shm_cell_at(&t.rx, c)->data[0], 'y', "the last one queued comes last");
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 0);
	fifo_pair_free(&t);
}

/* A sender counts its cells in flight, reading the reader's count again
 * once half its credit is used: credits come back as cells are consumed,
 * and a count past what was sent is the FIFO's breakage. */
Test(shm_fifo, credits_come_back_as_cells_are_consumed)
{
	struct two_ends t;
	uint32_t count = 0, i;
	uint64_t sent = 0;

	fifo_pair(&t, 512 << 10);
	cr_assert_eq(t.tx.credit, 16);
	for (i = 0; i < t.tx.credit; i++, sent++)
		cr_assert_eq(send_bytes(&t, 1, &count, "x", 1, 0), 1);
	cr_assert_eq(oxr_shm_fifo_in_flight(&t.tx, 1, sent), 16, "nothing consumed yet");
	atomic_store(&t.rx.slots[1].done, 10);
	cr_assert_eq(oxr_shm_fifo_in_flight(&t.tx, 1, sent), 6);
	atomic_store(&t.rx.slots[1].done, 12);
	cr_assert_eq(oxr_shm_fifo_in_flight(&t.tx, 1, sent + 1), 7, "not read again before half");
	cr_assert_eq(oxr_shm_fifo_in_flight(&t.tx, 1, sent + 2), 6, "read again at half");
	atomic_store(&t.rx.slots[1].done, 30);
	cr_assert_eq(oxr_shm_fifo_in_flight(&t.tx, 1, sent + 10), -1, "past what was sent");
	fifo_pair_free(&t);
}

/* Small messages share a cell while the reader has not sealed it: bytes
 * appended after the reader took the ref out still come, in order; a
 * sealed cell takes no more (the next bytes take a cell and a credit), and
 * a cell being appended to cannot be sealed. */
Test(shm_fifo, small_messages_share_a_cell_until_the_reader_seals_it)
{
	struct two_ends t;
	struct iovec v = { "abcd", 4 };
	uint32_t count = 0, s, c, kind;
	int took, i, busy;

	fifo_pair(&t, 64 << 10);
	for (i = 0; i < 10; i++) {
		cr_assert_eq(oxr_shm_fifo_send(&t.tx, 1, &count, OXR_SHM_CELL_DATA, &v, 1, 0, 1,
					       &took), 4);
		cr_assert_eq(took, i == 0, "only the first takes a cell");
	}
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(cell_len(&t, c, 1), 40);
	/* taken out, not sealed: still appended to, and no credit spent */
	cr_assert_eq(oxr_shm_fifo_send(&t.tx, 1, &count, OXR_SHM_CELL_DATA, &v, 1, 0, 0, &took), 4);
	cr_assert_eq(cell_len(&t, c, 1), 44);
	cr_assert(!memcmp(oxr_shm_cell_at(&t.rx, c)->data + 40, "abcd", 4));
	cr_assert_eq(oxr_shm_fifo_seal(&t.rx, c, 40), 0, "sealed only at the length there");
	/* a sender in the middle of an append holds the seal off */
	atomic_fetch_or(&oxr_shm_cell_at(&t.tx, c)->lenw, UINT64_C(1) << 30);
	cr_assert_eq(oxr_shm_fifo_len(&t.rx, c, 1, &busy), 44);
	cr_assert(busy);
	cr_assert_eq(oxr_shm_fifo_seal(&t.rx, c, 44), 0);
	atomic_fetch_and(&oxr_shm_cell_at(&t.tx, c)->lenw, ~(UINT64_C(1) << 30));
	cr_assert_eq(oxr_shm_fifo_seal(&t.rx, c, 44), 1);
	/* sealed: without a credit nothing goes, with one a new cell */
	cr_assert_eq(oxr_shm_fifo_send(&t.tx, 1, &count, OXR_SHM_CELL_DATA, &v, 1, 0, 0, &took), 0);
	cr_assert_eq(oxr_shm_fifo_send(&t.tx, 1, &count, OXR_SHM_CELL_DATA, &v, 1, 0, 1, &took), 4);
	cr_assert(took);
	oxr_shm_fifo_free(&t.rx, c);
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(cell_len(&t, c, 1), 4);
	/* sealed right after it was queued: the next bytes take a new cell */
	cr_assert_eq(oxr_shm_fifo_seal(&t.rx, c, 4), 1);
	cr_assert_eq(oxr_shm_fifo_send(&t.tx, 1, &count, OXR_SHM_CELL_DATA, &v, 1, 0, 1, &took), 4);
	cr_assert(took, "appended to a sealed cell");
	cr_assert_eq(cell_len(&t, c, 1), 4);
	fifo_pair_free(&t);
}

/* What a broken or hostile local peer can store: each is refused, and the
 * FIFO goes on for the others. */
Test(shm_fifo, bad_refs_cells_and_counters_are_refused_and_the_fifo_goes_on)
{
	struct two_ends t;
	uint32_t count = 0, s = 99, c, kind;
	uint64_t h;
	int busy;

	fifo_pair(&t, 64 << 10);
	/* a ref published for the head naming a cell past the end */
	h = t.rx.head;
	atomic_store(&t.tx.f->refs[h % t.tx.ncells], ref_word(h, 1, 60000));
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), -1);
	/* a ref naming slot 2's cell whose state says slot 4 took it */
	h = t.rx.head;
	atomic_store(&oxr_shm_cell_at(&t.tx, 5)->state, UINT64_C(1) << 63 | UINT64_C(4) << 32 | 1);
	atomic_store(&oxr_shm_cell_at(&t.tx, 5)->lenw, UINT64_C(2) << 48);
	atomic_store(&t.tx.f->refs[h % t.tx.ncells], ref_word(h, 2, 5));
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), -2);
	cr_assert_eq(s, 2, "the sender it names is the one to fail");
	oxr_shm_fifo_free(&t.rx, 5);
	/* a length word of another slot, a length past the cell */
	cr_assert_eq(send_bytes(&t, 2, &count, "ok", 2, 0), 2);
	c = t.tx.hint ? t.tx.hint - 1 : t.tx.ncells - 1;
	atomic_store(&oxr_shm_cell_at(&t.tx, c)->lenw, UINT64_C(3) << 48 | 2);
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), -2);
	cr_assert_eq(s, 2);
	atomic_store(&oxr_shm_cell_at(&t.tx, c)->lenw, UINT64_C(2) << 48 | (UINT64_C(1) << 29));
	cr_assert_eq(oxr_shm_fifo_len(&t.rx, c, 2, &busy), -1);
	oxr_shm_fifo_free(&t.rx, c);
	/* and the FIFO still carries the next sender's cell */
	cr_assert_eq(send_bytes(&t, 3, &count, "go", 2, 0), 2);
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(s, 3);
	cr_assert_eq(cell_len(&t, c, s), 2);
	cr_assert(!memcmp(oxr_shm_cell_at(&t.rx, c)->data, "go", 2));
	/* refs a peer scribbled over whole: a sender gives up, no hang */
	for (h = 0; h < t.tx.ncells; h++)
		atomic_store(&t.tx.f->refs[h], ref_word(h + 7, 1, 1));
	cr_assert_eq(send_bytes(&t, 3, &count, "no", 2, 0), -1);
	fifo_pair_free(&t);
}

/* A sender stopped between taking a position and moving tail on (killed,
 * or descheduled) stalls nobody, before or after its ref is taken out; one
 * killed between taking a cell and queuing it leaves a cell that
 * free_slot returns. */
Test(shm_fifo, a_sender_stopped_at_any_instant_stalls_nobody)
{
	struct two_ends t;
	uint32_t count = 0, s, c, kind, i;
	uint64_t p;

	fifo_pair(&t, 64 << 10);
	p = atomic_load(&t.tx.f->tail);
	/* sender 7 took cell 0 and published position p, then stopped */
	atomic_store(&oxr_shm_cell_at(&t.tx, 0)->state, UINT64_C(1) << 63 | UINT64_C(7) << 32 | 1);
	oxr_shm_cell_at(&t.tx, 0)->kind = OXR_SHM_CELL_DATA;
	atomic_store(&oxr_shm_cell_at(&t.tx, 0)->lenw, UINT64_C(7) << 48);
	atomic_store(&t.tx.f->refs[p % t.tx.ncells], ref_word(p, 7, 0));
	cr_assert_eq(send_bytes(&t, 1, &count, "a", 1, 0), 1, "tail moved on for the stopped one");
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(s, 7, "the stopped sender's ref first");
	oxr_shm_fifo_free(&t.rx, c);
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(s, 1);
	oxr_shm_fifo_free(&t.rx, c);
	/* the same, its ref taken out before anyone moved tail */
	p = atomic_load(&t.tx.f->tail);
	atomic_store(&oxr_shm_cell_at(&t.tx, 0)->state, UINT64_C(1) << 63 | UINT64_C(7) << 32 | 2);
	atomic_store(&t.tx.f->refs[p % t.tx.ncells], ref_word(p, 7, 0));
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	oxr_shm_fifo_free(&t.rx, c);
	cr_assert_eq(atomic_load(&t.tx.f->tail), p, "nobody moved tail yet");
	cr_assert_eq(send_bytes(&t, 1, &count, "b", 1, 0), 1);
	cr_assert_eq(oxr_shm_fifo_pop(&t.rx, &s, &c, &kind), 1);
	cr_assert_eq(s, 1);
	oxr_shm_fifo_free(&t.rx, c);
	/* sender 9 killed holding a cell it never queued */
	atomic_store(&oxr_shm_cell_at(&t.tx, 3)->state, UINT64_C(1) << 63 | UINT64_C(9) << 32 | 1);
	for (i = 0; i + 1 < t.tx.ncells; i++)
		cr_assert_eq(send_bytes(&t, 1, &count, "c", 1, 0), 1);
	cr_assert_eq(send_bytes(&t, 1, &count, "c", 1, 0), 0, "its cell is still taken");
	oxr_shm_fifo_free_slot(&t.rx, 9);
	cr_assert_eq(send_bytes(&t, 1, &count, "d", 1, 0), 1, "free_slot gave it back");
	fifo_pair_free(&t);
}

static void fifo_link(struct pair *p)
{
	setenv("OXR_TRANSPORT", "shm", 1);
	setenv("OXR_SHM_RINGS", "0", 1);
	make_pair(p, 2, "little", "little");
	unsetenv("OXR_SHM_RINGS");
	unsetenv("OXR_TRANSPORT");
	cr_assert_eq(link_up(p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(oxr_link_transport(p->a, 1), "shm");
}

/* A link through the FIFOs carries messages both ways; a peer that breaks
 * its consumed counter fails that link with a message saying so, and no
 * FIFO outlives its group. */
Test(shm_fifo, a_link_through_the_fifos_and_a_peer_that_breaks_one)
{
	struct pair p;
	uintptr_t at[8];
	oxr_status_t st;
	int n, i, j;

	fifo_link(&p);
	for (i = 0; i < 100; i++) {
		pair_send_int(p.b, 0, i);
		cr_assert_eq(pair_recv_int(p.a, 1), i);
	}
	n = maps_named("memfd:oxr-shm-fifo", at, 8);
	cr_assert_eq(n, 4, "two FIFOs, each mapped by its owner and its sender: %d maps", n);
	/* a's FIFO, seen from anywhere: every slot's done past all that was sent */
	for (i = 0; i < n; i++) {
		struct oxr_shm_fifo *f = (struct oxr_shm_fifo *)at[i];
		struct oxr_shm_fifo_slot *sl = (struct oxr_shm_fifo_slot *)(
			(uint8_t *)f + ((sizeof(*f) + f->ncells * 8 + 63) & ~(size_t)63));
		for (j = 0; j < (int)f->nslots; j++)
			atomic_store(&sl[j].done, UINT64_C(1) << 40);
	}
	/* a sender reads the counter once it has used half its credit: a
	 * stream of sends nobody reads gets there (small ones share cells) */
	for (i = 0, st = OXR_OK; i < 100000 && st == OXR_OK; i++)
		st = oxr_send(p.b, 0, &(oxr_ox_msg){ .tag = OXR_OX_DATA,
						    .cmo = &(oxr_cmo){ .tag = OXR_CMO_NULL } });
	cr_assert(st != OXR_OK && st != OXR_ERR_TIMEOUT, "%d %s", st, oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "broke the receive FIFO"), "%s", oxr_errmsg());
	free_pair(&p);
	cr_assert_eq(maps_named("memfd:oxr-shm-fifo", at, 8), 0, "no FIFO outlives its group");
}

/* Three sender threads, each its own mapping and slot, stream bytes in
 * pieces of random size (appends and new cells, credits as a link keeps
 * them) while one reader takes cells out, reads them as they grow, seals
 * and frees them: every sender's bytes come whole and in order. */
#define STREAM (3u << 20)

static uint8_t stream_byte(uint32_t s, uint32_t i)
{
	uint32_t x = (i + 1) * 2654435761u ^ s * 40503u;

	return (uint8_t)(x >> 13 ^ x);
}

struct writer {
	struct oxr_shm_fifo_end e;
	int fd;
	uint32_t slot;
};

static void *write_stream(void *arg)
{
	struct writer *w = arg;
	static __thread uint8_t buf[4096];
	uint32_t count = 0, pos = 0, seed = w->slot * 7919u;
	uint64_t sent = 0;

	while (pos < STREAM) {
		uint32_t n = (seed = seed * 1103515245u + 12345u) >> 16 & 1023, i;
		struct iovec v = { buf, 0 };
		int took;
		ssize_t k;
		if (n > STREAM - pos)
			n = STREAM - pos;
		if (!n)
			continue;
		for (i = 0; i < n; i++)
			buf[i] = stream_byte(w->slot, pos + i);
		v.iov_len = n;
		k = oxr_shm_fifo_send(&w->e, w->slot, &count, OXR_SHM_CELL_DATA, &v, 1, 0,
				      oxr_shm_fifo_in_flight(&w->e, w->slot, sent) < w->e.credit, &took);
		if (k < 0)
			return "broken";
		sent += (uint64_t)took;
		pos += (uint32_t)k;
		if (!k)
			sched_yield();
	}
	return NULL;
}

Test(shm_fifo, three_sender_threads_one_reader_every_byte_in_order)
{
	struct two_ends t;
	struct writer w[3];
	pthread_t th[3];
	uint32_t q[4][64], qh[4] = { 0 }, qn[4] = { 0 }, off[4] = { 0 }, pos[4] = { 0 };
	uint64_t done[4] = { 0 };
	uint32_t s, c, kind, left = 3, popped = 0;
	int i;

	fifo_pair(&t, 64 << 10);
	for (i = 0; i < 3; i++) {
		w[i].slot = (uint32_t)i + 1;
		cr_assert_eq(oxr_shm_fifo_attach(getpid(), t.fd, nonce, &w[i].e), OXR_OK);
		cr_assert_eq(pthread_create(&th[i], NULL, write_stream, &w[i]), 0);
	}
	while (left) {
		int k;
		while ((k = oxr_shm_fifo_pop(&t.rx, &s, &c, &kind)) == 1) {
			int busy;
			cr_assert(s >= 1 && s <= 3 && qn[s] < 64, "slot %u, %u queued", s, qn[s]);
			q[s][(qh[s] + qn[s]++) % 64] = c;
			/* every other one sealed as soon as it is out, as a copy-out
			 * does: its sender must not append to it any more */
			if (++popped & 1)
				(void)oxr_shm_fifo_seal(&t.rx, c,
							(uint64_t)oxr_shm_fifo_len(&t.rx, c, s, &busy));
		}
		cr_assert_eq(k, 0, "pop: %d", k);
		for (s = 1; s <= 3; s++) {
			int busy;
			int64_t len;
			const uint8_t *d;
			if (!qn[s])
				continue;
			c = q[s][qh[s]];
			len = oxr_shm_fifo_len(&t.rx, c, s, &busy);
			cr_assert_geq(len, (int64_t)off[s]);
			d = oxr_shm_cell_at(&t.rx, c)->data;
			for (; off[s] < (uint32_t)len; off[s]++, pos[s]++)
				cr_assert_eq(d[off[s]], stream_byte(s, pos[s]),
					     "sender %u: byte %u changed", s, pos[s]);
			if (!oxr_shm_fifo_seal(&t.rx, c, (uint64_t)len))
				continue;
			oxr_shm_fifo_free(&t.rx, c);
			qh[s] = (qh[s] + 1) % 64;
			qn[s]--;
			off[s] = 0;
			atomic_store(&t.rx.slots[s].done, ++done[s]);
			if (pos[s] == STREAM)
				left--;
		}
	}
	for (i = 0; i < 3; i++) {
		void *r;
		pthread_join(th[i], &r);
		cr_assert_null(r, "sender %d: %s", i + 1, (char *)r);
		oxr_shm_fifo_unmap(&w[i].e);
	}
	fifo_pair_free(&t);
}
