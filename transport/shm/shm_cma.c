/* SPDX-License-Identifier: MIT */
/*
 * Single copy of large pieces on a shm link (as vader's CMA path): instead
 * of copying a piece into the ring and out again, the writer offers its
 * address, and the reader copies it once, straight from the writer's memory
 * into its destination, with process_vm_readv.
 *
 * Algorithm: the writer publishes the ring bytes before the piece (tail =
 * pos), then the offer {pos, addr, len} and big_seq + 1 (release).  It
 * writes nothing more until the reader answers with big_ack = big_seq: it
 * read all len bytes, or refused (big_refused: CMA not allowed here, or
 * OXR_SHM_CMA_BYTES=0 on its side), and then the writer copies the piece
 * through the ring instead.  Invariant: while an offer is out, tail == pos,
 * so the reader, which loads big_seq before tail, finds the ring empty at
 * exactly pos when it serves the offer; an offer anywhere else, a sequence
 * that skips, or a length beyond 1 GiB is the peer's protocol error.  The
 * reader only ever reads the writer's memory, so a hostile writer's address
 * can fail the link (EFAULT) and nothing more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>

#include "shm_ring.h"

#define BIG_MAX (1ull << 30)

void oxr_shm_big_offer(struct oxr_shm_end *e, const void *p, size_t len)
{
	e->r->big_pos = e->mine;
	e->r->big_addr = (uint64_t)(uintptr_t)p;
	e->r->big_len = len;
	e->big_len = len;
	atomic_store_explicit(&e->r->big_seq, ++e->big_seq, memory_order_release);
}

int oxr_shm_big_done(struct oxr_shm_end *e)
{
	if (atomic_load_explicit(&e->r->big_ack, memory_order_acquire) != e->big_seq)
		return 0;
	e->big_len = 0;
	return atomic_load_explicit(&e->r->big_refused, memory_order_relaxed) ? 2 : 1;
}

int oxr_shm_big_waiting(struct oxr_shm_end *e)
{
	uint64_t seq = atomic_load_explicit(&e->r->big_seq, memory_order_acquire);
	int64_t avail;

	if (seq == e->big_seq)
		return 0;
	if (seq != e->big_seq + 1)
		return -1;
	/* after the offer's load: the ring holds at least what came before it */
	if ((avail = oxr_shm_ring_avail(e)) != 0)
		return avail < 0 ? -1 : 0;
	if (e->r->big_pos != e->mine || e->r->big_len == 0 || e->r->big_len > BIG_MAX ||
	    e->big_off >= e->r->big_len)
		return -1;
	return 1;
}

/* The offer is served: the writer may go on. */
static void answer(struct oxr_shm_end *e, int refused)
{
	atomic_store_explicit(&e->r->big_refused, (uint32_t)refused, memory_order_relaxed);
	e->big_off = 0;
	atomic_store_explicit(&e->r->big_ack, ++e->big_seq, memory_order_release);
}

int oxr_shm_big_answered(struct oxr_shm_end *e)
{
	return atomic_load_explicit(&e->r->big_ack, memory_order_relaxed) == e->big_seq;
}

ssize_t oxr_shm_big_read(struct oxr_shm_end *e, pid_t pid, void *buf, size_t n, int refuse)
{
	uint64_t len = e->r->big_len, addr = e->r->big_addr;
	struct iovec local, remote;
	ssize_t k;

	if (len == 0 || len > BIG_MAX || e->big_off >= len) { /* rewritten since it was checked */
		errno = EPROTO;
		return -1;
	}
	if (refuse) {
		answer(e, 1);
		return 0;
	}
	if (n > len - e->big_off)
		n = (size_t)(len - e->big_off);
	local = (struct iovec){ .iov_base = buf, .iov_len = n };
	remote = (struct iovec){ .iov_base = (void *)(uintptr_t)(addr + e->big_off), .iov_len = n };
	k = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (k <= 0) {
		if (k == 0)
			errno = EFAULT;
		return -1;
	}
	e->big_off += (uint64_t)k;
	if (e->big_off == len)
		answer(e, 0);
	return k;
}
