/* SPDX-License-Identifier: MIT */
/*
 * Broadcast of a large object: a pipelined chain.  The root encodes the
 * object once; the bytes travel as chunks (OX_DATA of a CMO_DATUM) along
 * relative ranks 0 -> 1 -> ... -> n-1, each rank forwarding chunk k while
 * it already receives chunk k+1, and decoding the whole buffer at the end.
 * A header LIST [INT32 size_hi, INT32 size_lo, INT32 chunk, INT32 order]
 * goes first, so every rank allocates the buffer once and checks it
 * against its decoder limits before it does.
 *
 * Cost: about one transfer of the object plus (n - 2) chunk times, where
 * the binomial tree costs ceil(log2 n) whole transfers on its longest path
 * (the root alone sends ceil(log2 n) copies).  Every rank sends and
 * receives the object at most once, so the total bytes moved are the
 * tree's, (n - 1) x size, which is what counts when ranks share cores.
 *
 * When to switch (OXR_BCAST_PIPELINE_DEFAULT, 4 MiB; chunks of 256 KiB):
 * measured on the 2-core CI machine, oxr-run, TCP over loopback,
 * `bench_bcast --algo-sweep`, median us from the root's call to the last
 * rank done, binomial / chain (chain/binomial); two runs, the second with
 * other jobs on the machine (load ~9), so read the ratios:
 *   size      n = 4                            n = 8
 *   256 KiB   258 / 809 (3.13)                 730 / 1155 (1.58)
 *   1 MiB     946 / 1351 (1.43); 1131 / 1542   2771 / 4893 (1.77); 3893 / 4255
 *   2 MiB     3762 / 3225 (0.86); 3198 / 3427  6670 / 8652 (1.30); 9762 / 8308
 *   4 MiB     6119 / 6837 (1.12); 6864 / 6540  16086 / 17560 (1.09); 11241 / 11909
 *   8 MiB     -; 49477 / 18347 (0.37)          -; 105859 / 36627 (0.35)
 *   16 MiB    72606 / 23158 (0.32)             166474 / 69958 (0.42)
 *   64 MiB    277598 / 237831 (0.86); (0.54)   772251 / 575152 (0.74); (0.55)
 * Up to 4 MiB the two are within noise of each other (the chain's n - 1
 * hops in a row, each a wake-up on an oversubscribed machine, against the
 * tree's whole-object hops); from 8 MiB on the chain wins by 2-3x: the
 * tree's time grows 4-7x from 4 to 8 MiB (each hop receives into the
 * transport's memory and copies into the caller's arena; the cause of the
 * jump is not pinned down), the chain's 2-3x.  At n = 2 both are one transfer, and the chunks still
 * won (64 MiB: 162, 166, 88 ms against 245, 333, 169 ms for the tree,
 * alternating runs on a loaded machine), so the rule has no n in it.
 *
 * Invariant: rank r takes exactly the header and ceil(size / chunk) chunks
 * from r - 1, in order, each of the expected length, and forwards each
 * unchanged to r + 1 (when r + 1 < n) before it returns; so every link of
 * the chain is drained when the call ends and the next collective starts
 * on clean links.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bcast_common.h"
#include "oxr_internal.h"

#define MAX_CHUNKS 65536u /* bounds the bookkeeping: larger chunks beyond it */

struct chunks {
	size_t n;
	oxr_cmo *obj;    /* CMO_DATUM nodes pointing into the buffer */
	oxr_ox_msg *msg;
	oxr_req **req;
};

static oxr_status_t chunks_alloc(struct chunks *c, size_t n)
{
	c->n = n;
	c->obj = calloc(n ? n : 1, sizeof(*c->obj));
	c->msg = calloc(n ? n : 1, sizeof(*c->msg));
	c->req = calloc(n ? n : 1, sizeof(*c->req));
	if (!c->obj || !c->msg || !c->req)
		return oxr_err(OXR_ERR_NOMEM, "bcast: out of memory for %zu chunks", n);
	return OXR_OK;
}

/* Waits for the sends posted so far and frees everything. */
static oxr_status_t chunks_finish(struct chunks *c, int timeout_ms, oxr_status_t st)
{
	size_t k;

	for (k = 0; k < c->n; k++)
		if (c->req && c->req[k]) {
			oxr_status_t s = oxr_req_wait(c->req[k], timeout_ms);
			if (s && st == OXR_OK)
				st = s;
			oxr_req_free(c->req[k]);
		}
	free(c->obj);
	free(c->msg);
	free(c->req);
	return st;
}

static oxr_status_t post_chunk(oxr_group *g, int peer, struct chunks *c, size_t k,
			       const uint8_t *p, size_t len)
{
	c->obj[k] = (oxr_cmo){ .tag = OXR_CMO_DATUM, .order = OXR_ORDER_HOST, .data = p, .len = len };
	c->msg[k] = (oxr_ox_msg){ .tag = OXR_OX_DATA, .cmo = &c->obj[k] };
	return bc_isend(g, peer, &c->msg[k], &c->req[k]);
}

/*
 * Asks for transparent huge pages on the 2 MiB-aligned inside of a big
 * buffer that is about to be written for the first time.  A 64 MiB buffer
 * is fresh memory on every call (too big for any cache), and faulting it
 * in 4 KiB pages was a third of a 64 MiB bcast's time on the CI machine
 * (THP there is "madvise"); with 2 MiB pages it is 512 times fewer faults.
 * Only a hint: where THP is off or the call fails nothing changes.
 */
static void hint_huge(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + len) & ~(huge - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
	(void)p;
	(void)len;
#endif
}

static size_t nchunks(size_t size, size_t *chunk)
{
	if (*chunk > (1u << 30)) /* the header carries it as an INT32 */
		*chunk = 1u << 30;
	if (*chunk < size / MAX_CHUNKS + 1)
		*chunk = size / MAX_CHUNKS + 1;
	return (size + *chunk - 1) / *chunk;
}

static oxr_status_t send_header(oxr_group *g, int peer, size_t size, size_t chunk, int order)
{
	oxr_cmo kids[4], *kp[4], list = { .tag = OXR_CMO_LIST, .nkids = 4, .kids = kp };
	int32_t v[4] = { (int32_t)((uint64_t)size >> 32), (int32_t)(uint32_t)size,
			 (int32_t)chunk, order };
	int i;

	for (i = 0; i < 4; i++) {
		kids[i] = (oxr_cmo){ .tag = OXR_CMO_INT32, .v.i32 = v[i] };
		kp[i] = &kids[i];
	}
	return bc_send_cmo(g, peer, &list);
}

oxr_status_t bc_chain_encode(const oxr_cmo *o, size_t size, uint8_t **out)
{
	uint8_t *buf = malloc(size ? size : 1);
	size_t len;
	oxr_status_t st;

	if (!buf)
		return oxr_err(OXR_ERR_NOMEM, "bcast: out of memory for %zu bytes", size);
	hint_huge(buf, size);
	st = oxr_cmo_encode(o, OXR_ORDER_HOST, buf, size, &len);
	if (st == OXR_OK && len != size)
		st = oxr_err(OXR_ERR_INVAL, "bcast: encoded %zu bytes, sized %zu", len, size);
	if (st) {
		free(buf);
		return st;
	}
	*out = buf;
	return OXR_OK;
}

oxr_status_t bc_chain_root(oxr_group *g, int root, uint8_t *buf, size_t size, size_t chunk,
			   int timeout_ms)
{
	int n = oxr_group_size(g), next = bc_abs(1, root, n);
	struct chunks c = { 0 };
	size_t k, nc = nchunks(size, &chunk);
	oxr_status_t st;

	st = send_header(g, next, size, chunk, OXR_ORDER_HOST);
	if (st == OXR_OK)
		st = chunks_alloc(&c, nc);
	for (k = 0; st == OXR_OK && k < nc; k++)
		st = post_chunk(g, next, &c, k, buf + k * chunk,
				k + 1 < nc ? chunk : size - k * chunk);
	st = chunks_finish(&c, timeout_ms, st);
	free(buf);
	return st;
}

static int32_t kid(const oxr_cmo *o, int i) { return o->kids[i]->v.i32; }

static oxr_status_t take_header(oxr_group *g, int prev, int timeout_ms, const oxr_cmo_limits *lim,
				size_t *size, size_t *chunk, int *order)
{
	oxr_rmsg *m;
	const oxr_cmo *h;
	oxr_status_t st;
	int i, ok;

	if ((st = bc_recv(g, prev, timeout_ms, &m)))
		return st;
	h = m->msg.tag == OXR_OX_DATA ? m->msg.cmo : NULL;
	ok = h && h->tag == OXR_CMO_LIST && h->nkids == 4;
	for (i = 0; ok && i < 4; i++)
		ok = h->kids[i]->tag == OXR_CMO_INT32;
	if (ok) {
		*size = (size_t)((uint64_t)(uint32_t)kid(h, 0) << 32 | (uint32_t)kid(h, 1));
		*chunk = (size_t)(uint32_t)kid(h, 2);
		*order = kid(h, 3);
		ok = *chunk > 0 && (*order == OXR_ORDER_NETWORK || *order == OXR_ORDER_LITTLE) &&
		     (*size + *chunk - 1) / *chunk <= MAX_CHUNKS;
	}
	oxr_rmsg_free(m);
	if (!ok)
		return oxr_err(OXR_ERR_PROTO, "bcast: bad chain header from rank %d", prev);
	if (*size > lim->max_total_bytes)
		return oxr_err(OXR_ERR_LIMIT, "bcast: a %zu-byte object from rank %d is over "
			       "OXR_CMO_MAX_TOTAL_BYTES (%llu)", *size, prev,
			       (unsigned long long)lim->max_total_bytes);
	return OXR_OK;
}

oxr_status_t bc_chain_recv(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a, int timeout_ms)
{
	int n = oxr_group_size(g), rel = bc_rel(oxr_group_rank(g), root, n);
	int prev = bc_abs(rel - 1, root, n), next = rel + 1 < n ? bc_abs(rel + 1, root, n) : -1;
	struct chunks c = { 0 };
	size_t size = 0, chunk = 1, nc, k, used;
	oxr_cmo_limits lim;
	int order = OXR_ORDER_HOST;
	uint8_t *buf;
	oxr_status_t st;

	oxr_cmo_limits_from_params(oxr_ctx_get_params(oxr_group_ctx(g)), &lim);
	if ((st = take_header(g, prev, timeout_ms, &lim, &size, &chunk, &order)))
		return st;
	nc = (size + chunk - 1) / chunk;
	if (!(buf = oxr_arena_alloc(a, size ? size : 1)))
		return OXR_ERR_NOMEM;
	hint_huge(buf, size);
	if (next >= 0)
		st = send_header(g, next, size, chunk, order);
	if (st == OXR_OK)
		st = chunks_alloc(&c, nc);
	for (k = 0; st == OXR_OK && k < nc; k++) {
		size_t want = k + 1 < nc ? chunk : size - k * chunk;
		oxr_rmsg *m;
		const oxr_cmo *d;
		if ((st = bc_recv(g, prev, timeout_ms, &m)))
			break;
		d = m->msg.tag == OXR_OX_DATA ? m->msg.cmo : NULL;
		if (!d || d->tag != OXR_CMO_DATUM || d->len != want) {
			st = oxr_err(OXR_ERR_PROTO, "bcast: chunk %zu of %zu from rank %d is not a "
				     "%zu-byte CMO_DATUM", k, nc, prev, want);
			oxr_rmsg_free(m);
			break;
		}
		memcpy(buf + k * chunk, d->data, want);
		oxr_rmsg_free(m);
		if (next >= 0)
			st = post_chunk(g, next, &c, k, buf + k * chunk, want);
	}
	if ((st = chunks_finish(&c, timeout_ms, st)))
		return st;
	if ((st = oxr_cmo_decode(buf, size, order, &lim, a, obj, &used)))
		return st;
	if (used != size)
		return oxr_err(OXR_ERR_PROTO, "bcast: the object took %zu of the %zu bytes sent",
			       used, size);
	return OXR_OK;
}
