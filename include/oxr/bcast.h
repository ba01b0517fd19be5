/* SPDX-License-Identifier: MIT */
/*
 * RFC-102 broadcast and reduction over a group (OpenXM-RFC-102 section on
 * ox_bcast_102 / ox_reduce_102; shared/docs/openxm-protocol.md section 5).
 *
 * Both are collective: every rank of the group calls them with the same
 * root (and the same op), in the same order as its other collectives.
 * Ranks are taken relative to the root, r = (rank - root) mod n, so any
 * root works for any n.  Objects travel as OX_DATA messages over the
 * group's links (oxr_send / oxr_recv), so a small bcast or reduce between
 * oxr peers is byte for byte what ox_asir sends.
 *
 * Environment (read by oxr_ctx_create into the group's context's
 * oxr_ctx_params, oxr/params.h, which oxr_ctx_modify may change; a malformed
 * value is an error naming it):
 *   OXR_BCAST_PIPELINE_BYTES  encoded objects of at least this many bytes are
 *                       broadcast by the pipelined chain instead of the
 *                       binomial tree (default: OXR_BCAST_PIPELINE_DEFAULT,
 *                       measured, see collectives/bcast_chain.c)
 *   OXR_BCAST_CHUNK_BYTES  chunk of the pipelined chain (default
 *                       OXR_BCAST_CHUNK_DEFAULT)
 *   OXR_COLL_SPIN_US    microseconds a receive of bcast/reduce polls, yielding
 *                       the core, before it sleeps in the transport's wait
 *                       (default 2000; 0: sleep at once; see
 *                       collectives/bcast_common.c)
 */
#ifndef OXR_BCAST_H
#define OXR_BCAST_H

#include <stdint.h>

#include "oxr/cmo.h"
#include "oxr/status.h"
#include "oxr/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OXR_BCAST_PIPELINE_DEFAULT (4u << 20)
#define OXR_BCAST_CHUNK_DEFAULT (256u << 10)

/*
 * Broadcast from root.  On the root *obj is the object to send (it stays
 * the caller's); on the others *obj gets the received object, allocated
 * from a (payloads included).  timeout_ms bounds each wait for a peer's
 * message (< 0: forever).  Small objects: binomial tree, ceil(log2 n)
 * rounds.  Large ones: the encoded bytes in chunks down a pipelined chain.
 * A rank that fails in the middle (a broken link, no memory) fails the
 * ranks below it in the tree or chain too, each within its timeout_ms.
 */
OXR_API oxr_status_t oxr_bcast(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a, int timeout_ms);
/* Always the binomial tree of whole OX_DATA messages, whatever the size:
 * the bytes ox_asir sends and expects, for groups with OpenXM peers. */
OXR_API oxr_status_t oxr_bcast_plain(oxr_group *g, int root, oxr_cmo **obj, oxr_arena *a,
				     int timeout_ms);

/*
 * Reduction to root with a named op: "+", "*", "max", "min" on numbers
 * (CMO_INT32, CMO_ZZ, CMO_QQ, CMO_IEEE_DOUBLE_FLOAT, CMO_64BIT_MACHINE_DOUBLE;
 * CMO_NULL and CMO_ZERO read as integer 0, as asir reads them) and "append"
 * on CMO_LISTs.  Promotion: INT32 < ZZ < QQ < double; the result has the
 * larger kind of its two operands, and INT32 op INT32 that overflows int32
 * gives a ZZ.  A double result is a CMO_64BIT_MACHINE_DOUBLE when every
 * double operand was one, else a CMO_IEEE_DOUBLE_FLOAT (what asir sends);
 * exact operands become doubles as mpz_get_d / mpq_get_d make them.
 *
 * On the root *out gets the result, allocated from a; on the others
 * CMO_NULL (what ox_asir pushes there).  Operands combine in relative rank
 * order (x from the lower relative rank, y from the higher), grouped by the
 * binomial tree: ((d0 d1)(d2 d3))..., so an associative op needs no
 * commutativity.  The grouping is fixed by n and root; with INT32 operands
 * of mixed signs an intermediate overflow may give a ZZ where a left fold
 * would have stayed INT32 (the value is the same).
 *
 * An unknown op is OXR_ERR_INVAL on every rank before any message is sent.
 * An op that fails on the operands (a type that does not fit the op) fails
 * on the rank where it happened, which still drains its children and sends
 * the error on to its parent: the root and every rank the error passed
 * through return it (naming the rank it came from), the other ranks return
 * OXR_OK, and the group stays usable.
 */
OXR_API oxr_status_t oxr_reduce(oxr_group *g, int root, const char *op, const oxr_cmo *in,
				oxr_cmo **out, oxr_arena *a, int timeout_ms);

/* A user op: *out = x op y, allocated from a (it may share parts of x and y;
 * the reduction copies what it keeps).  Must be associative.  A status
 * other than OXR_OK fails the reduction as above. */
typedef oxr_status_t (*oxr_reduce_fn)(const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a,
				      oxr_cmo **out, void *arg);

/* oxr_reduce with fn(x, y, a, out, arg) as the op (the same fn on every
 * rank); errors as oxr_reduce's. */
OXR_API oxr_status_t oxr_reduce_user(oxr_group *g, int root, oxr_reduce_fn fn, void *arg,
				     const oxr_cmo *in, oxr_cmo **out, oxr_arena *a, int timeout_ms);

/* One application of a named op (the rules of oxr_reduce); *out may share
 * parts of x and y.  OXR_ERR_INVAL for an unknown op or operands it does
 * not take. */
OXR_API oxr_status_t oxr_reduce_apply(const char *op, const oxr_cmo *x, const oxr_cmo *y,
				      oxr_arena *a, oxr_cmo **out);
/* 1 if op names a built-in op. */
OXR_API int oxr_reduce_op_known(const char *op);

enum oxr_bcast_algo {
	OXR_COLL_NONE = 0,      /* n == 1, or the call failed before sending */
	OXR_COLL_BINOMIAL = 1,  /* the RFC-102 tree */
	OXR_COLL_CHAIN = 2,     /* pipelined chain of chunks (large bcast) */
};

/* What the most recent oxr_bcast / oxr_reduce / oxr_reduce_user on the
 * calling thread did on this rank: OX messages (markers and chunks
 * included) and the CMO bytes they carried. */
typedef struct oxr_bcast_counts {
	uint64_t sent, received;
	uint64_t bytes_sent, bytes_received;
	int algo; /* enum oxr_bcast_algo */
} oxr_bcast_counts;

/* Copies those counts into *out. */
OXR_API void oxr_bcast_last_counts(oxr_bcast_counts *out);

#ifdef __cplusplus
}
#endif
#endif
