/* SPDX-License-Identifier: MIT */
/*
 * Incremental CMO / OX decoder.
 *
 * Algorithm: an explicit stack of frames, one per object being filled; the
 * top frame walks its tag's op list (cmo_spec.c) one field at a time.  A
 * field that is not wholly in the current piece is resumed on the next feed:
 * scalars collect in an 8-byte accumulator, payloads are copied as they come.
 *
 * Invariants: nothing is allocated for a length, count or tag before it has
 * been checked against the limits, and what a decoder holds is never more
 * than the preallocation bound (limits.prealloc_bytes, 16 MiB by default)
 * plus four times the bytes that really arrived: a peer claiming a 1 GiB
 * string and sending 10 bytes costs 16 MiB, not 1 GiB.  Payloads up to the
 * bound are allocated whole, so they are copied once, at memcpy speed;
 * beyond it the buffer grows 4x at a time, so realloc moves few bytes.  The decoder
 * never recurses, so nesting depth is bounded by the limit, not the C stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr_internal.h"
#include "arena.h"
#include "cmo_spec.h"

#define INLINE_FRAMES 32
#define SMALL_PAYLOAD (64 * 1024) /* allocated whole; larger ones grow as bytes come */

struct frame {
	oxr_cmo *obj;
	const struct cmo_spec *spec;
	uint64_t start;     /* offset of the object's first byte */
	uint32_t left;      /* counted kids (or pairs) still to come */
	uint32_t want_kids; /* kids the object will have when complete */
	uint32_t cap;       /* slots in obj->kids */
	uint8_t pc;         /* current op */
	uint8_t phase;      /* 0: length not read yet, 1: payload in progress */
	uint8_t half;       /* OP_PAIRS: 0 exponent next, 1 coefficient next */
};

enum { OX_TAG, OX_SERIAL, OX_BODY, OX_DONE };

struct oxr_decoder {
	int what, order, has_serial;
	oxr_cmo_limits lim;
	oxr_arena *arena;

	const uint8_t *in, *end; /* the piece being fed */
	unsigned flags;
	uint64_t off;            /* bytes of this object consumed */
	uint64_t nobjs;
	uint8_t acc[8];
	uint8_t acc_len;

	uint8_t *bulk;           /* payload being copied */
	size_t bulk_len, bulk_have, bulk_cap;
	int bulk_grown;          /* bulk is a growable block, not arena memory */

	struct frame *stk;
	uint32_t depth, stk_cap;
	struct frame inline_stk[INLINE_FRAMES];

	int ox_state, started, done;
	oxr_ox_msg msg;
	oxr_cmo *result;

	oxr_status_t err;
	char errmsg[320];
};

static oxr_status_t fail(struct oxr_decoder *d, oxr_status_t st, uint64_t at,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static oxr_status_t fail(struct oxr_decoder *d, oxr_status_t st, uint64_t at,
			 const char *fmt, ...)
{
	char what[200];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	n = snprintf(d->errmsg, sizeof(d->errmsg), "decode error at byte %" PRIu64 ": %s", at, what);
	if (d->depth > 0 && n > 0 && (size_t)n < sizeof(d->errmsg)) {
		const struct frame *f = &d->stk[d->depth - 1];
		snprintf(d->errmsg + n, sizeof(d->errmsg) - n, " (inside %s at byte %" PRIu64 ")",
			 f->spec->name, f->start);
	}
	d->err = st;
	oxr_err_keep(d->errmsg);
	return st;
}

/* n contiguous bytes of the stream, or NULL when the piece ran out (the part
 * seen so far waits in the accumulator). */
static const uint8_t *take(struct oxr_decoder *d, size_t n)
{
	size_t avail = (size_t)(d->end - d->in), k;
	const uint8_t *p;

	if (d->acc_len == 0 && avail >= n) {
		p = d->in;
		d->in += n;
		d->off += n;
		return p;
	}
	k = n - d->acc_len < avail ? n - d->acc_len : avail;
	memcpy(d->acc + d->acc_len, d->in, k);
	d->acc_len += k;
	d->in += k;
	d->off += k;
	if (d->acc_len < n)
		return NULL;
	d->acc_len = 0;
	return d->acc;
}

static int take32(struct oxr_decoder *d, int32_t *v)
{
	const uint8_t *p = take(d, 4);

	if (!p)
		return 0;
	*v = (int32_t)oxr_load32(p, d->order);
	return 1;
}

static oxr_status_t check_total(struct oxr_decoder *d, uint64_t more, uint64_t at)
{
	if (d->off + more > d->lim.max_total_bytes)
		return fail(d, OXR_ERR_LIMIT, at,
			    "object would exceed %" PRIu64 " bytes (raise OXR_CMO_MAX_TOTAL_BYTES)",
			    d->lim.max_total_bytes);
	return OXR_OK;
}

/* ---- payloads ------------------------------------------------------- */

static oxr_status_t bulk_begin(struct oxr_decoder *d, oxr_cmo *o, uint64_t n, uint64_t at)
{
	size_t avail = (size_t)(d->end - d->in);
	oxr_status_t st;

	if (n > d->lim.max_object_bytes)
		return fail(d, OXR_ERR_LIMIT, at,
			    "payload of %" PRIu64 " bytes exceeds %" PRIu64
			    " (raise OXR_CMO_MAX_OBJECT_BYTES)", n, d->lim.max_object_bytes);
	st = check_total(d, n, at);
	if (st)
		return st;
	o->len = (size_t)n;
	o->data = NULL;
	d->bulk_len = (size_t)n;
	d->bulk_have = 0;
	d->bulk_grown = 0;
	if (n == 0)
		return OXR_OK;
	if ((d->flags & OXR_FEED_BORROW) && avail >= n) {
		o->data = d->in; /* zero copy: the caller keeps the piece alive */
		d->in += n;
		d->off += n;
		d->bulk_have = n;
		return OXR_OK;
	}
	if (n <= SMALL_PAYLOAD) {
		d->bulk = oxr_arena_alloc(d->arena, (size_t)n);
		d->bulk_cap = (size_t)n;
	} else {
		uint64_t cap = n <= d->lim.prealloc_bytes ? n
			       : d->lim.prealloc_bytes > avail ? d->lim.prealloc_bytes : avail;
		if (cap < SMALL_PAYLOAD)
			cap = SMALL_PAYLOAD;
		d->bulk_cap = (size_t)(cap < n ? cap : n);
		d->bulk = oxr_arena_grow_begin(d->bulk_cap);
		d->bulk_grown = 1;
	}
	if (!d->bulk)
		return fail(d, OXR_ERR_NOMEM, at, "cannot allocate %zu bytes", d->bulk_cap);
	return OXR_OK;
}

/* Room for `need` more payload bytes (growing 4x, never past the length). */
static oxr_status_t bulk_reserve(struct oxr_decoder *d, size_t need)
{
	size_t cap = d->bulk_cap * 4;
	uint8_t *nb;

	if (d->bulk_have + need <= d->bulk_cap)
		return OXR_OK;
	if (cap < d->bulk_have + need)
		cap = d->bulk_have + need;
	if (cap > d->bulk_len)
		cap = d->bulk_len;
	nb = oxr_arena_grow(d->bulk, cap);
	if (!nb)
		return fail(d, OXR_ERR_NOMEM, d->off, "cannot grow a payload to %zu bytes", cap);
	d->bulk = nb;
	d->bulk_cap = cap;
	return OXR_OK;
}

/* OXR_OK when the payload is complete, OXR_AGAIN when the piece ran out. */
static oxr_status_t bulk_more(struct oxr_decoder *d, oxr_cmo *o)
{
	size_t avail = (size_t)(d->end - d->in);
	size_t k = d->bulk_len - d->bulk_have;
	oxr_status_t st;

	if (!d->bulk)
		return OXR_OK; /* empty, or pointed at in the piece */
	if (k > avail)
		k = avail;
	if (k) {
		if ((st = bulk_reserve(d, k)))
			return st;
		memcpy(d->bulk + d->bulk_have, d->in, k);
		d->bulk_have += k;
		d->in += k;
		d->off += k;
	}
	if (d->bulk_have < d->bulk_len)
		return OXR_AGAIN;
	if (d->bulk_grown)
		oxr_arena_adopt(d->arena, d->bulk);
	o->data = d->bulk;
	d->bulk = NULL;
	d->bulk_grown = 0;
	return OXR_OK;
}

size_t oxr_decoder_direct(oxr_decoder *d, void **dst)
{
	size_t room;

	if (!d->bulk || d->acc_len || d->err || d->done || d->bulk_have == d->bulk_len)
		return 0;
	if (d->bulk_have == d->bulk_cap && bulk_reserve(d, 1))
		return 0;
	room = d->bulk_cap - d->bulk_have;
	*dst = d->bulk + d->bulk_have;
	return room;
}

void oxr_decoder_advance(oxr_decoder *d, size_t n)
{
	d->bulk_have += n;
	d->off += n;
}

/* ZZ: canonical form has no zero top word, and 0 has no words. */
static void zz_normalize(oxr_cmo *o)
{
	size_t nw = o->len / 4;

	while (nw > 0 && oxr_load32(o->data + 4 * (nw - 1), o->order) == 0)
		nw--;
	o->len = nw * 4;
	o->v.i32 = o->v.i32 < 0 ? -(int32_t)nw : (int32_t)nw;
	if (nw == 0)
		o->data = NULL;
}

/* Length field of a payload op: element count -> bytes, checked. */
static oxr_status_t payload_length(struct oxr_decoder *d, struct frame *f, uint8_t kind,
				   int32_t n, uint64_t at)
{
	uint64_t count = (uint64_t)(n < 0 ? -(int64_t)n : n);
	uint64_t elem = kind == OP_BYTES ? 1 : kind == OP_DOUBLES ? 8 : 4;

	if (n < 0 && kind != OP_ZZ)
		return fail(d, OXR_ERR_PROTO, at, "negative length %" PRId32 " in %s", n,
			    f->spec->name);
	if (kind == OP_ZZ) {
		if (n == INT32_MIN)
			return fail(d, OXR_ERR_PROTO, at, "ZZ word count %" PRId32 " out of range", n);
		f->obj->v.i32 = n;
	}
	return bulk_begin(d, f->obj, count * elem, at);
}

/* ---- objects -------------------------------------------------------- */

static oxr_status_t push(struct oxr_decoder *d, oxr_cmo *o, const struct cmo_spec *s,
			 uint64_t start)
{
	struct frame *f;

	if (d->depth == d->stk_cap) {
		uint64_t cap = (uint64_t)d->stk_cap * 2;
		struct frame *ns;
		if (cap > (uint64_t)d->lim.max_depth + 1)
			cap = (uint64_t)d->lim.max_depth + 1;
		ns = d->stk == d->inline_stk ? malloc(cap * sizeof(*ns))
					     : realloc(d->stk, cap * sizeof(*ns));
		if (!ns)
			return fail(d, OXR_ERR_NOMEM, start, "cannot grow the decoder stack");
		if (d->stk == d->inline_stk)
			memcpy(ns, d->inline_stk, sizeof(d->inline_stk));
		d->stk = ns;
		d->stk_cap = (uint32_t)cap;
	}
	f = &d->stk[d->depth++];
	memset(f, 0, sizeof(*f));
	f->obj = o;
	f->spec = s;
	f->start = start;
	f->want_kids = s->fixed_kids;
	return OXR_OK;
}

static oxr_status_t add_kid(struct oxr_decoder *d, struct frame *f, oxr_cmo *kid)
{
	oxr_cmo *o = f->obj;

	if (o->nkids == f->cap) {
		/* Grow toward the announced count only as kids really arrive. */
		uint64_t guess = 8 + (uint64_t)(d->end - d->in) / 4;
		uint32_t cap = f->cap ? f->cap * 2 : (uint32_t)(guess < f->want_kids ? guess : f->want_kids);
		oxr_cmo **nk;
		if (cap > f->want_kids)
			cap = f->want_kids;
		if (cap <= o->nkids)
			return fail(d, OXR_ERR_PROTO, d->off, "more kids than announced in %s",
				    f->spec->name);
		nk = oxr_arena_alloc(d->arena, (size_t)cap * sizeof(*nk));
		if (!nk)
			return fail(d, OXR_ERR_NOMEM, d->off, "cannot allocate %u kid slots", cap);
		if (o->nkids)
			memcpy(nk, o->kids, o->nkids * sizeof(*nk));
		o->kids = nk;
		f->cap = cap;
	}
	o->kids[o->nkids++] = kid;

	switch (f->spec->ops[f->pc].kind) {
	case OP_KIDS:
		if (--f->left == 0)
			f->pc++;
		break;
	case OP_PAIRS:
		f->half ^= 1;
		if (f->half == 0 && --f->left == 0)
			f->pc++;
		break;
	default:
		f->pc++;
	}
	return OXR_OK;
}

/* A finished object goes to its parent, or becomes the result. */
static oxr_status_t attach(struct oxr_decoder *d, oxr_cmo *o)
{
	if (d->depth == 0) {
		d->result = o;
		d->done = 1;
		return OXR_OK;
	}
	return add_kid(d, &d->stk[d->depth - 1], o);
}

/* Starts a kid: reads its tag (unless the layout implies it), checks it, and
 * pushes a frame for its body. */
static oxr_status_t begin_obj(struct oxr_decoder *d, uint8_t want, int32_t bare_tag)
{
	uint64_t at = d->off;
	const struct cmo_spec *s;
	int32_t tag = bare_tag;
	oxr_status_t st;
	oxr_cmo *o;

	if (!bare_tag) {
		if (d->acc_len)
			at -= d->acc_len;
		if (!take32(d, &tag))
			return OXR_AGAIN;
	}
	s = oxr_cmo_spec(tag);
	if (!s)
		return fail(d, OXR_ERR_PROTO, at, "unknown CMO tag %" PRId32 " (0x%" PRIx32 ")",
			    tag, (uint32_t)tag);
	if (!oxr_cmo_want_ok(want, tag))
		return fail(d, OXR_ERR_PROTO, at, "%s where %s is required", s->name,
			    oxr_cmo_want_name(want));
	if (++d->nobjs > d->lim.max_objects)
		return fail(d, OXR_ERR_LIMIT, at,
			    "more than %" PRIu64 " objects (raise OXR_CMO_MAX_OBJECTS)",
			    d->lim.max_objects);
	if (s->ops[0].kind == OP_END) {
		switch (tag) {
		case OXR_CMO_NULL: return attach(d, oxr_cmo_null());
		case OXR_CMO_ZERO: return attach(d, oxr_cmo_zero());
		case OXR_CMO_DMS_GENERIC: return attach(d, oxr_cmo_dms_generic());
		default: return attach(d, oxr_cmo_error());
		}
	}
	if (d->depth >= d->lim.max_depth)
		return fail(d, OXR_ERR_LIMIT, at,
			    "nesting deeper than %" PRIu32 " (raise OXR_CMO_MAX_DEPTH)",
			    d->lim.max_depth);
	o = oxr_arena_alloc(d->arena, sizeof(*o));
	if (!o)
		return fail(d, OXR_ERR_NOMEM, at, "cannot allocate an object");
	memset(o, 0, sizeof(*o));
	o->tag = tag;
	o->order = (uint8_t)d->order;
	st = push(d, o, s, bare_tag ? d->off : at);
	return st;
}

static oxr_status_t finish(struct oxr_decoder *d)
{
	struct frame *f = &d->stk[d->depth - 1];
	oxr_cmo *o = f->obj;

	if (o->tag == OXR_CMO_QQ && o->kids[1]->v.i32 == 0)
		return fail(d, OXR_ERR_PROTO, f->start, "CMO_QQ with denominator 0");
	d->depth--;
	return attach(d, o);
}

/* One field of the top frame.  OXR_OK: progress made; OXR_AGAIN: piece ended. */
static oxr_status_t step(struct oxr_decoder *d)
{
	struct frame *f = &d->stk[d->depth - 1];
	const struct cmo_op *op = f->pc < CMO_MAX_OPS ? &f->spec->ops[f->pc] : NULL;
	uint64_t at = d->off - d->acc_len;
	const uint8_t *p;
	oxr_status_t st;
	int32_t n;

	if (!op || op->kind == OP_END)
		return finish(d);
	switch (op->kind) {
	case OP_I32:
		if (!take32(d, &f->obj->v.i32))
			return OXR_AGAIN;
		f->pc++;
		return OXR_OK;
	case OP_F64:
		if (!(p = take(d, 8)))
			return OXR_AGAIN;
		{
			uint64_t u = oxr_load64(p, d->order);
			memcpy(&f->obj->v.f64, &u, 8);
		}
		f->pc++;
		return OXR_OK;
	case OP_BYTES:
	case OP_ZZ:
	case OP_WORDS:
	case OP_DOUBLES:
		if (f->phase == 0) {
			if (!take32(d, &n))
				return OXR_AGAIN;
			st = payload_length(d, f, op->kind, n, at);
			if (st)
				return st;
			f->phase = 1;
		}
		st = bulk_more(d, f->obj);
		if (st)
			return st;
		if (op->kind == OP_ZZ)
			zz_normalize(f->obj);
		f->phase = 0;
		f->pc++;
		return OXR_OK;
	case OP_COUNT: {
		uint8_t next = oxr_cmo_counted_op(f->spec);
		uint64_t per = next == OP_PAIRS ? 8 : 4; /* the least bytes one kid takes */
		if (!take32(d, &n))
			return OXR_AGAIN;
		if (n < 0)
			return fail(d, OXR_ERR_PROTO, at, "negative count %" PRId32 " in %s", n,
				    f->spec->name);
		st = check_total(d, (uint64_t)n * per, at);
		if (st)
			return st;
		if ((uint64_t)n * (per / 4) > d->lim.max_objects)
			return fail(d, OXR_ERR_LIMIT, at,
				    "count %" PRId32 " exceeds %" PRIu64 " objects (raise OXR_CMO_MAX_OBJECTS)",
				    n, d->lim.max_objects);
		f->left = (uint32_t)n;
		f->want_kids = f->spec->fixed_kids + (uint32_t)n * (next == OP_PAIRS ? 2 : 1);
		f->pc++;
		return OXR_OK;
	}
	case OP_KIDS:
	case OP_PAIRS:
		if (f->left == 0) {
			f->pc++;
			return OXR_OK;
		}
		if (op->kind == OP_KIDS)
			return begin_obj(d, op->want, 0);
		return begin_obj(d, W_ANY, f->half == 0 ? OXR_CMO_INT32 : 0);
	case OP_KID:
		return begin_obj(d, op->want, 0);
	case OP_BARE_ZZ:
		return begin_obj(d, W_ANY, OXR_CMO_ZZ);
	case OP_BARE_I32:
		return begin_obj(d, W_ANY, OXR_CMO_INT32);
	}
	return fail(d, OXR_ERR_PROTO, at, "bad layout op %u", op->kind);
}

/* The OX frame around the CMO. */
static oxr_status_t step_ox(struct oxr_decoder *d)
{
	uint64_t at = d->off - d->acc_len;

	switch (d->ox_state) {
	case OX_TAG:
		if (!take32(d, &d->msg.tag))
			return OXR_AGAIN;
		switch (d->msg.tag) {
		case OXR_OX_COMMAND:
		case OXR_OX_DATA:
		case OXR_OX_SYNC_BALL:
			break;
		case OXR_OX_LOCAL_OBJECT_ASIR:
			return fail(d, OXR_ERR_UNSUPPORTED, at,
				    "OX_LOCAL_OBJECT_ASIR (asir bsave data) cannot be decoded; "
				    "ask the peer for CMO data");
		default:
			if (oxr_ox_is_private(d->msg.tag))
				break; /* the transport's own: its frames.c judges them */
			return fail(d, OXR_ERR_PROTO, at, "unknown OX tag %" PRId32 " (0x%" PRIx32 ")",
				    d->msg.tag, (uint32_t)d->msg.tag);
		}
		d->ox_state = d->has_serial ? OX_SERIAL : OX_BODY;
		return OXR_OK;
	case OX_SERIAL:
		if (!take32(d, &d->msg.serial))
			return OXR_AGAIN;
		d->ox_state = OX_BODY;
		return OXR_OK;
	default:
		if (d->msg.tag == OXR_OX_COMMAND) {
			if (!take32(d, &d->msg.sm))
				return OXR_AGAIN;
			d->done = 1;
		} else if (d->msg.tag == OXR_OX_SYNC_BALL) {
			d->done = 1;
		} else {
			oxr_status_t st;
			d->started = 1; /* the CMO body follows */
			st = begin_obj(d, W_ANY, 0);
			if (st == OXR_AGAIN)
				d->started = 0;
			return st;
		}
		return OXR_OK;
	}
}

/*
 * Most messages are small and come whole: an OX_DATA frame whose CMO is a
 * leaf of one int32 or one byte payload (CMO_INT32, CMO_STRING, CMO_DATUM,
 * by the spec table, not by name).  Such a frame, all in the piece, is
 * decoded here in one go; the walk's six steps for it cost more than the
 * rest of a message's trip through oxr.  1: done.  0: anything else (not
 * whole, not such a frame, over a limit, out of memory), left untouched
 * for the walk, which decodes it or says what is wrong with it.
 */
static int leaf_frame(struct oxr_decoder *d)
{
	const uint8_t *p = d->in;
	size_t avail = (size_t)(d->end - d->in), hdr = d->has_serial ? 12 : 8, n = 0, need;
	const struct cmo_spec *s;
	uint8_t kind;
	oxr_cmo *o;

	if (avail < hdr + 4 || (int32_t)oxr_load32(p, d->order) != OXR_OX_DATA ||
	    d->lim.max_objects < 1)
		return 0;
	s = oxr_cmo_spec((int32_t)oxr_load32(p + hdr - 4, d->order));
	if (!s || s->ops[1].kind != OP_END ||
	    ((kind = s->ops[0].kind) != OP_I32 && kind != OP_BYTES))
		return 0;
	if (kind == OP_BYTES) {
		int32_t len = (int32_t)oxr_load32(p + hdr, d->order);
		if (len < 0 || (uint64_t)len > d->lim.max_object_bytes || len > SMALL_PAYLOAD)
			return 0;
		n = (size_t)len;
	}
	need = hdr + 4 + n;
	if (avail < need || (kind == OP_BYTES && need > d->lim.max_total_bytes) ||
	    !(o = oxr_arena_alloc(d->arena, sizeof(*o))))
		return 0;
	memset(o, 0, sizeof(*o));
	o->tag = s->tag;
	o->order = (uint8_t)d->order;
	if (kind == OP_I32) {
		o->v.i32 = (int32_t)oxr_load32(p + hdr, d->order);
	} else if (n) {
		uint8_t *b = (d->flags & OXR_FEED_BORROW) ? NULL : oxr_arena_alloc(d->arena, n);
		if (!(d->flags & OXR_FEED_BORROW) && !b)
			return 0;
		if (b)
			memcpy(b, p + hdr + 4, n);
		o->data = b ? b : p + hdr + 4;
		o->len = n;
	}
	d->msg.tag = OXR_OX_DATA;
	if (d->has_serial)
		d->msg.serial = (int32_t)oxr_load32(p + 4, d->order);
	d->nobjs = 1;
	d->in += need;
	d->off = need;
	d->ox_state = OX_BODY;
	d->started = 1;
	d->result = o;
	d->done = 1;
	return 1;
}

/* ---- API ------------------------------------------------------------ */

static void clear_object(struct oxr_decoder *d)
{
	if (d->bulk_grown)
		oxr_arena_grow_abort(d->bulk);
	d->bulk = NULL;
	d->bulk_grown = 0;
	d->depth = 0;
	d->off = 0;
	d->nobjs = 0;
	d->acc_len = 0;
	d->started = 0;
	d->done = 0;
	d->ox_state = OX_TAG;
	memset(&d->msg, 0, sizeof(d->msg));
}

static void dec_init(struct oxr_decoder *d, int what, int order, const oxr_cmo_limits *lim,
		     oxr_arena *a)
{
	memset(d, 0, sizeof(*d));
	d->what = what;
	d->order = order;
	d->has_serial = 1;
	if (lim)
		d->lim = *lim;
	else
		oxr_cmo_limits_default(&d->lim);
	if (d->lim.max_depth == 0)
		d->lim.max_depth = 1;
	d->arena = a;
	d->stk = d->inline_stk;
	d->stk_cap = INLINE_FRAMES;
	d->errmsg[0] = 0;
	clear_object(d);
}

static void dec_fini(struct oxr_decoder *d)
{
	clear_object(d);
	if (d->stk != d->inline_stk)
		free(d->stk);
	d->stk = d->inline_stk;
	d->stk_cap = INLINE_FRAMES;
}

oxr_status_t oxr_decoder_create(oxr_decoder **out, int what, int order,
				const oxr_cmo_limits *lim, oxr_arena *a)
{
	struct oxr_decoder *d;

	if (!out || !a || (what != OXR_DECODE_CMO && what != OXR_DECODE_OX) ||
	    (order != OXR_ORDER_NETWORK && order != OXR_ORDER_LITTLE))
		return oxr_err(OXR_ERR_INVAL, "oxr_decoder_create: bad argument");
	d = malloc(sizeof(*d));
	if (!d)
		return oxr_err(OXR_ERR_NOMEM, "oxr_decoder_create: out of memory");
	dec_init(d, what, order, lim, a);
	*out = d;
	return OXR_OK;
}

void oxr_decoder_destroy(oxr_decoder *d)
{
	if (!d)
		return;
	dec_fini(d);
	free(d);
}

void oxr_decoder_reset(oxr_decoder *d)
{
	clear_object(d);
	d->err = OXR_OK;
	d->errmsg[0] = 0;
	d->result = NULL;
}

void oxr_decoder_set_order(oxr_decoder *d, int order) { d->order = order ? 1 : 0; }
void oxr_decoder_set_arena(oxr_decoder *d, oxr_arena *a) { d->arena = a; }
void oxr_decoder_set_serial(oxr_decoder *d, int has_serial) { d->has_serial = !!has_serial; }
oxr_cmo *oxr_decoder_cmo(const oxr_decoder *d) { return d->result; }
const oxr_ox_msg *oxr_decoder_msg(const oxr_decoder *d) { return &d->msg; }
uint64_t oxr_decoder_offset(const oxr_decoder *d) { return d->off; }
uint64_t oxr_decoder_pending(const oxr_decoder *d) { return d->done ? 0 : d->off; }
const char *oxr_decoder_error(const oxr_decoder *d) { return d->errmsg; }

/* The walk over the piece, step by step, until the object is done or the
 * piece ends.  Not inlined into oxr_decoder_feed: a leaf frame's path
 * there would pay this machinery's registers and stack on every call. */
static __attribute__((noinline)) oxr_status_t walk(struct oxr_decoder *d)
{
	oxr_status_t st = OXR_OK;

	while (!d->done) {
		if (d->what == OXR_DECODE_OX && !d->started)
			st = step_ox(d);
		else if (d->depth == 0 && !d->started) {
			d->started = 1;
			st = begin_obj(d, W_ANY, 0);
			if (st == OXR_AGAIN)
				d->started = 0;
		} else
			st = step(d);
		if (st == OXR_AGAIN && d->in == d->end)
			break;
		if (st < 0)
			break;
	}
	return st;
}

oxr_status_t oxr_decoder_feed(oxr_decoder *d, const void *piece, size_t len,
			      unsigned flags, size_t *used)
{
	oxr_status_t st = OXR_OK;

	if (used)
		*used = 0;
	if (d->err) {
		oxr_err_keep(d->errmsg);
		return d->err;
	}
	if (d->done) {
		clear_object(d); /* the previous result stays valid in its arena */
		d->result = NULL;
	}
	if (!piece && len)
		return oxr_err(OXR_ERR_INVAL, "oxr_decoder_feed: NULL piece");
	d->in = piece;
	d->end = d->in + len;
	d->flags = flags;
	if (d->what == OXR_DECODE_OX && d->ox_state == OX_TAG && !d->acc_len)
		(void)leaf_frame(d); /* done, or left to the walk */
	if (!d->done)
		st = walk(d);
	if (used)
		*used = (size_t)(d->in - (const uint8_t *)piece);
	if (st < 0)
		return st;
	if (!d->done)
		return OXR_AGAIN;
	if (d->what == OXR_DECODE_OX)
		d->msg.cmo = oxr_ox_has_cmo(d->msg.tag) ? d->result : NULL;
	return OXR_OK;
}

static oxr_status_t one_shot(int what, const void *buf, size_t len, int order,
			     const oxr_cmo_limits *lim, oxr_arena *a, size_t *used,
			     struct oxr_decoder *d)
{
	oxr_status_t st;
	size_t u = 0;

	if (!a || (!buf && len))
		return oxr_err(OXR_ERR_INVAL, "decode: NULL buffer or arena");
	dec_init(d, what, order ? 1 : 0, lim, a);
	st = oxr_decoder_feed(d, buf, len, OXR_FEED_BORROW, &u);
	if (st == OXR_AGAIN)
		st = fail(d, OXR_ERR_TRUNCATED, len,
			  "input ends after %zu bytes inside the object", len);
	if (used)
		*used = u;
	return st;
}

oxr_status_t oxr_cmo_decode(const void *buf, size_t len, int order,
			    const oxr_cmo_limits *lim, oxr_arena *a,
			    oxr_cmo **out, size_t *used)
{
	struct oxr_decoder d;
	oxr_status_t st = one_shot(OXR_DECODE_CMO, buf, len, order, lim, a, used, &d);

	if (st == OXR_OK)
		*out = d.result;
	dec_fini(&d);
	return st;
}

oxr_status_t oxr_ox_decode(const void *buf, size_t len, int order,
			   const oxr_cmo_limits *lim, oxr_arena *a,
			   oxr_ox_msg *out, size_t *used)
{
	struct oxr_decoder d;
	oxr_status_t st = one_shot(OXR_DECODE_OX, buf, len, order, lim, a, used, &d);

	if (st == OXR_OK)
		*out = d.msg;
	dec_fini(&d);
	return st;
}

/* ---- limits --------------------------------------------------------- */

void oxr_cmo_limits_default(oxr_cmo_limits *lim)
{
	lim->max_depth = OXR_CMO_DEFAULT_MAX_DEPTH;
	lim->max_object_bytes = OXR_CMO_DEFAULT_MAX_OBJECT_BYTES;
	lim->max_total_bytes = OXR_CMO_DEFAULT_MAX_TOTAL_BYTES;
	lim->max_objects = OXR_CMO_DEFAULT_MAX_OBJECTS;
	lim->prealloc_bytes = OXR_CMO_DEFAULT_PREALLOC_BYTES;
}

/* oxr_cmo_limits_from_env: transport/params.c, with every other knob */
