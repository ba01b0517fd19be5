/* SPDX-License-Identifier: MIT */
/*
 * How a crystal-router stage travels (crystal.c is the algorithm,
 * crystal_wire.h the bytes).
 *
 * Records land by oxr_put in the
 * receiver's landing window: one region per (transfer parity, stage,
 * writer), so a partner that runs ahead never overwrites a region still
 * being read: within a transfer the stages differ, and a writer cannot get
 * two transfers ahead of any rank (finishing a transfer needs a message that
 * causally follows every rank's start of it), so parity suffices.  Every
 * stage sends exactly one put per writer, even an empty one; its header
 * carries the stage's 64-bit byte count (the size negotiation).  A stage
 * larger than a region goes as the header put plus messages, and the
 * receiver sizes its landing buffer from the header: no global maximum.
 *
 * Growth.  Windows are created collectively, so the regions grow only when
 * every rank knows the same new size.  Each stage header also carries the
 * largest stage the sender has heard of, merged on every receive; since a
 * path of stage messages leads from every rank to every other, at the end
 * of transfer t every rank holds the same maximum of the values all ranks
 * started t with (their biggest stage of t-1).  When it exceeds the region,
 * every rank re-creates its window with doubled regions (to
 * OXR_CRYSTAL_REGION_MAX) under the group's next object number (coll_win.h),
 * before any put of t+1.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oxr_internal.h"
#include "crystal_impl.h"
#include "crystal_wire.h"
#include "coll_win.h"

long long oxr_cr_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int oxr_cr_left_ms(long long deadline)
{
	long long l;

	if (deadline < 0)
		return -1;
	l = deadline - oxr_cr_now_ms();
	return l < 0 ? 0 : l > 0x7fffffff ? 0x7fffffff : (int)l;
}

oxr_status_t oxr_cr_reserve(struct buf *b, uint64_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->p && more <= b->cap - b->n)
		return OXR_OK;
	if (more > SIZE_MAX / 2 - b->n)
		return oxr_err(OXR_ERR_NOMEM, "crystal: %llu more bytes do not fit in memory",
			       (unsigned long long)more);
	cap = b->cap ? b->cap : 4096;
	while (cap - b->n < more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return oxr_err(OXR_ERR_NOMEM, "crystal: out of memory for %zu bytes", cap);
	b->p = p;
	b->cap = cap;
	return OXR_OK;
}

/* The landing window for regions of `region` bytes, under the group's next
 * object number; collective.  The old one goes only once the new one stands. */
oxr_status_t oxr_cr_make_window(oxr_crystal *cr, uint64_t region, int timeout_ms)
{
	size_t len = 2 * (size_t)cr->nslots * region;
	void *mem = NULL;
	oxr_win *w;
	uint32_t id;
	oxr_status_t st;

	/* near the HCA: the stages' records land here by DMA */
	if ((st = oxr_win_alloc(cr->g, len, &mem)))
		return st;
	st = oxr_coll_win_create(cr->g, "crystal", mem, len, timeout_ms, &id, &w);
	if (st) {
		oxr_win_free(cr->g, mem, len);
		return st;
	}
	cr->win_id = id;
	oxr_win_destroy(cr->win);
	oxr_win_free(cr->g, cr->mem, cr->memlen);
	cr->win = w;
	cr->mem = mem;
	cr->memlen = len;
	cr->region = region;
	return OXR_OK;
}

oxr_status_t oxr_cr_send_stage(oxr_crystal *cr, int k)
{
	const struct stage *s = &cr->st[k];
	uint64_t total = cr->snd.n - CR_HDR, off;
	uint32_t id = cr->win_id, note = CR_NOTE(cr->seq, k, s->to_j);
	size_t o, len = cr->snd.n <= cr->region ? cr->snd.n : CR_HDR;
	oxr_status_t st;

	off = ((cr->seq & 1) * (uint64_t)s->to_nslots + (uint64_t)s->to_slot) * cr->region;
	oxr_store32(cr->snd.p, CR_MAGIC, 1);
	oxr_store32(cr->snd.p + 4, cr->seq, 1);
	oxr_store64(cr->snd.p + 8, cr->region, 1);
	oxr_store64(cr->snd.p + 16, total, 1);
	oxr_store64(cr->snd.p + 24, cr->know, 1);
	if (CR_HDR + total > cr->want)
		cr->want = CR_HDR + total;
	if ((st = oxr_put(cr->g, s->to, id, off, cr->snd.p, len, note)))
		return oxr_err(st, "crystal stage %d: put to rank %d: %s", k, s->to, oxr_errmsg());
	cr->stats.puts++;
	cr->stats.bytes_sent += len;
	for (o = len; o < cr->snd.n; o += CR_CHUNK) {
		oxr_cmo d = { .tag = OXR_CMO_DATUM, .order = OXR_ORDER_HOST, .data = cr->snd.p + o,
			      .len = cr->snd.n - o < CR_CHUNK ? cr->snd.n - o : CR_CHUNK };
		oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = &d };
		if ((st = oxr_send(cr->g, s->to, &m)))
			return oxr_err(st, "crystal stage %d: send to rank %d: %s", k, s->to,
				       oxr_errmsg());
		cr->stats.msgs++;
		cr->stats.bytes_sent += d.len;
	}
	return OXR_OK;
}

/* The note of writer `from` for `note`, taking early ones from the stash. */
static oxr_status_t wait_note(oxr_crystal *cr, int k, int from, uint32_t note,
			      long long deadline, oxr_win_note *n)
{
	size_t i;
	oxr_status_t st;

	for (i = 0; i < cr->nstash; i++)
		if (cr->stash[i].peer == from && cr->stash[i].value == note) {
			*n = cr->stash[i];
			cr->stash[i] = cr->stash[--cr->nstash];
			return OXR_OK;
		}
	for (;;) {
		uint32_t seq;
		if ((st = oxr_win_wait(cr->win, oxr_cr_left_ms(deadline), n)))
			return oxr_err(st, "crystal stage %d on rank %d: waiting for rank %d: %s", k,
				       cr->rank, from, oxr_errmsg());
		if (n->peer == from && n->value == note)
			return OXR_OK;
		/* a writer may be ahead by stages, or by one transfer, no more */
		seq = n->value >> 16;
		if ((seq != (cr->seq & 0xffff) && seq != ((cr->seq + 1) & 0xffff)) ||
		    ((n->value >> 8) & 0xff) >= (uint32_t)cr->nstages || cr->nstash >= 4 * MAX_STAGES)
			return oxr_err(OXR_ERR_PROTO, "crystal stage %d on rank %d: unexpected put "
				       "from rank %d (notify 0x%08x)", k, cr->rank, n->peer, n->value);
		if (cr->nstash == cr->capstash) {
			size_t cap = cr->capstash ? 2 * cr->capstash : 8;
			oxr_win_note *p = realloc(cr->stash, cap * sizeof(*p));
			if (!p)
				return oxr_err(OXR_ERR_NOMEM, "crystal: out of memory");
			cr->stash = p;
			cr->capstash = cap;
		}
		cr->stash[cr->nstash++] = *n;
		cr->stats.early++;
	}
}

/* Checks records landed at next's end (not yet counted in next.n). */
static oxr_status_t check_records(oxr_crystal *cr, int k, int from, const struct stage *s,
				  uint64_t total)
{
	const uint8_t *p = cr->next.p + cr->next.n;
	uint64_t o = 0;

	while (o < total) {
		uint32_t dest, src;
		uint64_t len;
		if (total - o < CR_REC)
			return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d sent %llu stray bytes "
				       "at byte %llu (a record header is %d)", k, from,
				       (unsigned long long)(total - o), (unsigned long long)o, CR_REC);
		dest = oxr_load32(p + o, 1);
		src = oxr_load32(p + o + 4, 1);
		len = oxr_load64(p + o + 8, 1);
		if (dest < (uint32_t)s->nlo || dest >= (uint32_t)s->nhi)
			return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d sent a record for rank "
				       "%u (byte %llu), which rank %d may not hold (range [%d, %d))",
				       k, from, dest, (unsigned long long)o, cr->rank, s->nlo, s->nhi);
		if (src >= (uint32_t)cr->size)
			return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d sent a record from "
				       "source %u (byte %llu) in a group of %d", k, from, src,
				       (unsigned long long)o, cr->size);
		if (len > total - o - CR_REC || PAD8(len) > total - o - CR_REC)
			return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d sent a record of %llu "
				       "bytes at byte %llu with only %llu left in the stage", k, from,
				       (unsigned long long)len, (unsigned long long)o,
				       (unsigned long long)(total - o - CR_REC));
		o += CR_REC + PAD8(len);
	}
	return OXR_OK;
}

/* Fallback: the records come as DATUM chunks, into the buffer the header sized. */
static oxr_status_t recv_chunks(oxr_crystal *cr, int k, int from, uint64_t total,
				long long deadline)
{
	uint8_t *p = cr->next.p + cr->next.n;
	uint64_t got = 0;
	oxr_status_t st;

	while (got < total) {
		oxr_rmsg *m;
		const oxr_cmo *d;
		if ((st = oxr_recv(cr->g, from, oxr_cr_left_ms(deadline), &m)))
			return oxr_err(st, "crystal stage %d on rank %d: receiving from rank %d: %s",
				       k, cr->rank, from, oxr_errmsg());
		d = m->msg.tag == OXR_OX_DATA ? m->msg.cmo : NULL;
		if (!d || d->tag != OXR_CMO_DATUM || d->len > total - got || !d->len) {
			oxr_rmsg_free(m);
			return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d sent something else "
				       "than the %llu bytes it announced (at byte %llu)", k, from,
				       (unsigned long long)total, (unsigned long long)got);
		}
		memcpy(p + got, d->data, d->len);
		got += d->len;
		cr->stats.bytes_received += d->len;
		oxr_rmsg_free(m);
	}
	return OXR_OK;
}

oxr_status_t oxr_cr_recv_stage(oxr_crystal *cr, int k, int j, long long deadline)
{
	const struct stage *s = &cr->st[k];
	int from = s->from[j];
	uint64_t off = ((cr->seq & 1) * (uint64_t)cr->nslots + (uint64_t)(s->slot + j)) * cr->region;
	uint64_t total, region, know;
	oxr_win_note n;
	const uint8_t *h;
	oxr_status_t st;

	if ((st = wait_note(cr, k, from, CR_NOTE(cr->seq, k, j), deadline, &n)))
		return st;
	h = cr->mem + off;
	if (n.offset != off || n.len < CR_HDR || oxr_load32(h, 1) != CR_MAGIC ||
	    oxr_load32(h + 4, 1) != cr->seq)
		return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d put %zu bytes at offset %llu "
			       "that are not stage %u's header (expected at offset %llu)", k, from,
			       n.len, (unsigned long long)n.offset, cr->seq, (unsigned long long)off);
	region = oxr_load64(h + 8, 1);
	total = oxr_load64(h + 16, 1);
	know = oxr_load64(h + 24, 1);
	if (region != cr->region)
		return oxr_err(OXR_ERR_PROTO, "crystal: rank %d uses %llu-byte landing regions, rank "
			       "%d %llu (OXR_CRYSTAL_REGION_BYTES and _MAX must be the same on every "
			       "rank)", from, (unsigned long long)region, cr->rank,
			       (unsigned long long)cr->region);
	if (n.len != (total <= region - CR_HDR ? CR_HDR + total : CR_HDR))
		return oxr_err(OXR_ERR_PROTO, "crystal stage %d: rank %d announced %llu bytes but "
			       "put %zu", k, from, (unsigned long long)total, n.len);
	if ((st = oxr_cr_reserve(&cr->next, total)))
		return oxr_err(st, "crystal stage %d: landing the %llu bytes rank %d announced: %s",
			       k, (unsigned long long)total, from, oxr_errmsg());
	cr->stats.bytes_received += CR_HDR;
	if (total <= region - CR_HDR) {
		if (total)
			memcpy(cr->next.p + cr->next.n, h + CR_HDR, total);
		cr->stats.bytes_received += total;
	} else if ((st = recv_chunks(cr, k, from, total, deadline))) {
		return st;
	}
	if ((st = check_records(cr, k, from, s, total)))
		return st;
	cr->next.n += total;
	if (know > cr->know)
		cr->know = know;
	if (CR_HDR + total > cr->want)
		cr->want = CR_HDR + total;
	return OXR_OK;
}

/* The agreed growth, at the end of a transfer: every rank has the same know,
 * region and region_max, so every rank takes the same branch. */
oxr_status_t oxr_cr_maybe_grow(oxr_crystal *cr, long long deadline)
{
	uint64_t r;
	oxr_status_t st;

	if (cr->know <= cr->region || cr->region >= cr->region_max)
		return OXR_OK;
	for (r = cr->region; r < cr->know && r < cr->region_max; r *= 2)
		;
	st = oxr_cr_make_window(cr, r < cr->region_max ? r : cr->region_max, oxr_cr_left_ms(deadline));
	if (!st && cr->nstash)
		st = oxr_err(OXR_ERR_PROTO, "crystal: rank %d has %zu puts of the next transfer in "
			     "the old window", cr->rank, cr->nstash);
	cr->stats.grows++;
	return st;
}
