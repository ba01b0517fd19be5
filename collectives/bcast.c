/* SPDX-License-Identifier: MIT */
/*
 * Broadcast, RFC-102's binomial tree (ox_bcast_102 in ox_asir), for any
 * root through relative ranks r = (rank - root) mod n.
 *
 * Invariant: rank r != 0 receives exactly once, from r - lowbit(r), and
 * only then sends, to r + m for each mask m < lowbit(r) with r + m < n,
 * the largest subtree first; the root sends to every r = m < n.  So every
 * rank receives once, n - 1 messages cross in all, no rank sends more than
 * ceil(log2 n), and after ceil(log2 n) rounds every rank has the object.
 *
 * The first message a rank receives from its tree parent says which
 * algorithm runs: an OX_DATA is the object itself (the small case, the
 * bytes ox_asir sends); the OX_COMMAND BC_MARK_CHAIN says the object
 * follows down the pipelined chain (bcast_chain.c), and the marker goes on
 * down the tree first so that every rank learns it.  Only the root knows
 * the size, so only it can choose.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bcast_common.h"
#include "oxr_internal.h"

/* Sends m (an object or the chain marker) to rel's tree children. */
static oxr_status_t to_children(oxr_group *g, int root, int rel, const oxr_cmo *o, int mark)
{
	int n = oxr_group_size(g), m;
	oxr_status_t st;

	for (m = bc_top_mask(rel, n) >> 1; m > 0; m >>= 1) {
		int dst;
		if (rel + m >= n)
			continue;
		dst = bc_abs(rel + m, root, n);
		st = mark ? bc_send_mark(g, dst, BC_MARK_CHAIN) : bc_send_cmo(g, dst, o);
		if (st)
			return st;
	}
	return OXR_OK;
}

static oxr_status_t root_side(oxr_group *g, int root, const oxr_cmo *o, size_t threshold,
			      size_t chunk, int timeout_ms)
{
	size_t size;
	oxr_status_t st;

	if ((st = oxr_cmo_size(o, &size)))
		return st;
	/* even at n = 2, where both are one transfer, the chunks win: the
	 * receiver fills one buffer it allocated whole, not a payload grown as
	 * it arrives and then copied into the caller's arena */
	if (size >= threshold) {
		uint8_t *buf;
		bc_counts_algo(OXR_COLL_CHAIN);
		if ((st = bc_chain_encode(o, size, &buf)))
			return st;
		if ((st = to_children(g, root, 0, NULL, 1))) {
			free(buf);
			return st;
		}
		return bc_chain_root(g, root, buf, size, chunk, timeout_ms);
	}
	bc_counts_algo(OXR_COLL_BINOMIAL);
	return to_children(g, root, 0, o, 0);
}

static oxr_status_t bcast_run(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a,
			      int timeout_ms, int plain)
{
	int n, rank, rel, parent;
	size_t threshold, chunk;
	oxr_rmsg *m;
	oxr_status_t st;

	bc_counts_begin();
	if ((st = bc_check_args(g, root, "bcast")))
		return st;
	threshold = (size_t)oxr_ctx_get_params(oxr_group_ctx(g))->bcast_pipeline_bytes;
	chunk = (size_t)oxr_ctx_get_params(oxr_group_ctx(g))->bcast_chunk_bytes;
	if (plain)
		threshold = SIZE_MAX;
	if (!obj || (oxr_group_rank(g) == root ? !*obj : !a))
		return oxr_err(OXR_ERR_INVAL, "bcast: %s", !obj ? "obj is NULL" :
			       oxr_group_rank(g) == root ? "the root's *obj is NULL" : "no arena");
	n = oxr_group_size(g);
	rank = oxr_group_rank(g);
	if (n == 1)
		return OXR_OK;
	if (rank == root)
		return root_side(g, root, *obj, threshold, chunk, timeout_ms);
	rel = bc_rel(rank, root, n);
	parent = bc_abs(rel - bc_top_mask(rel, n), root, n);
	if ((st = bc_recv(g, parent, timeout_ms, &m)))
		return st;
	if (m->msg.tag == OXR_OX_COMMAND && m->msg.sm == BC_MARK_CHAIN) {
		oxr_rmsg_free(m);
		bc_counts_algo(OXR_COLL_CHAIN);
		if ((st = to_children(g, root, rel, NULL, 1)))
			return st;
		return bc_chain_recv(g, root, obj, a, timeout_ms);
	}
	bc_counts_algo(OXR_COLL_BINOMIAL);
	if (m->msg.tag != OXR_OX_DATA || !m->msg.cmo) {
		st = oxr_err(OXR_ERR_PROTO, "bcast: rank %d expected an OX_DATA from rank %d, got "
			     "ox tag %d", rank, parent, m->msg.tag);
		oxr_rmsg_free(m);
		return st;
	}
	/* the children first: they are the critical path, the copy is not */
	st = to_children(g, root, rel, m->msg.cmo, 0);
	if (st == OXR_OK)
		st = oxr_cmo_copy(a, m->msg.cmo, obj);
	oxr_rmsg_free(m);
	return st;
}

oxr_status_t oxr_bcast(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a, int timeout_ms)
{
	return bcast_run(g, root, obj, a, timeout_ms, 0);
}

oxr_status_t oxr_bcast_plain(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a, int timeout_ms)
{
	return bcast_run(g, root, obj, a, timeout_ms, 1);
}
