/* SPDX-License-Identifier: MIT */
/*
 * CMO encoder.  One walk over the tag's op list (cmo_spec.c) serves both
 * sizing and writing: a sink without a buffer only counts.  The output is
 * canonical (ZZ with the minimal word count, as asir sends), so encoding a
 * decoded object gives its bytes back.
 */
#include <stdlib.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr_internal.h"
#include "cmo_spec.h"
#include "cmo_encode.h"

/* Builders can make objects deeper than any decoder accepts; the C stack
 * is the limit that matters here. */
#define MAX_ENCODE_DEPTH 10000

static oxr_status_t room(struct oxr_sink *s, size_t n)
{
	if (!s->buf) {
		s->len += n;
		s->total += n;
		return OXR_OK;
	}
	s->total += n;
	if (s->cap - s->len < n)
		return s->probe ? OXR_ERR_SPACE
				: oxr_err(OXR_ERR_SPACE, "encode: output buffer of %zu bytes is too "
					  "small", s->cap);
	return OXR_OK;
}

oxr_status_t oxr_sink_put32_slow(struct oxr_sink *s, uint32_t v)
{
	oxr_status_t st = room(s, 4);

	if (st || !s->buf)
		return st;
	oxr_store32(s->buf + s->len, v, s->order);
	s->len += 4;
	return OXR_OK;
}

static void add_iov(struct oxr_sink *s, const void *p, size_t n)
{
	s->iov[s->niov].iov_base = (void *)p;
	s->iov[s->niov].iov_len = n;
	s->niov++;
}

/* Closes the scratch segment written since the last iovec. */
void oxr_sink_flush_seg(struct oxr_sink *s)
{
	if (s->len > s->seg)
		add_iov(s, s->buf + s->seg, s->len - s->seg);
	s->seg = s->len;
}

static oxr_status_t put_elems(struct oxr_sink *s, const void *src, size_t n, size_t elem,
			      int src_order)
{
	oxr_status_t st;

	if (s->big && n * elem >= s->big && (elem == 1 || src_order == s->order)) {
		s->total += n * elem;
		if (!s->iov) {
			s->niov += 2; /* the segment before it, and it */
			return OXR_OK;
		}
		oxr_sink_flush_seg(s);
		add_iov(s, src, n * elem);
		return OXR_OK;
	}
	st = room(s, n * elem);

	if (st || !s->buf || n == 0)
		return st;
	oxr_copy_elems(s->buf + s->len, src, n, elem, src_order, s->order);
	s->len += n * elem;
	return OXR_OK;
}

static size_t zz_words(const oxr_cmo *o)
{
	size_t nw = o->len / 4;

	while (nw > 0 && oxr_load32(o->data + 4 * (nw - 1), o->order) == 0)
		nw--;
	return nw;
}

static oxr_status_t bad(const oxr_cmo *o, const char *what)
{
	const char *name = oxr_cmo_tag_name(o->tag);

	return oxr_err(OXR_ERR_INVAL, "encode: %s %s", name ? name : "object", what);
}

oxr_status_t oxr_sink_put_cmo(struct oxr_sink *s, const oxr_cmo *o, int tagged, unsigned depth)
{
	const struct cmo_spec *sp;
	uint32_t k = 0, counted = 0, i;
	oxr_status_t st = OXR_OK;
	int op_i;

	if (!o)
		return oxr_err(OXR_ERR_INVAL, "encode: a kid slot is NULL (unset)");
	if (depth > MAX_ENCODE_DEPTH)
		return oxr_err(OXR_ERR_LIMIT, "encode: nesting deeper than %d", MAX_ENCODE_DEPTH);
	sp = oxr_cmo_spec(o->tag);
	if (!sp)
		return oxr_err(OXR_ERR_INVAL, "encode: unknown CMO tag %d", o->tag);
	if (o->nkids < sp->fixed_kids)
		return bad(o, "has too few kids");
	if (tagged && (st = oxr_sink_put32(s, (uint32_t)o->tag)))
		return st;

	for (op_i = 0; op_i < CMO_MAX_OPS && !st; op_i++) {
		const struct cmo_op *op = &sp->ops[op_i];
		const oxr_cmo *kid;

		switch (op->kind) {
		case OP_END:
			op_i = CMO_MAX_OPS;
			break;
		case OP_I32:
			st = oxr_sink_put32(s, (uint32_t)o->v.i32);
			break;
		case OP_F64:
			st = put_elems(s, &o->v.f64, 1, 8, OXR_ORDER_HOST);
			break;
		case OP_BYTES:
			if (o->len > INT32_MAX)
				return bad(o, "payload too long for an int32 length");
			if (!(st = oxr_sink_put32(s, (uint32_t)o->len)))
				st = put_elems(s, o->data, o->len, 1, o->order);
			break;
		case OP_ZZ: {
			size_t nw = zz_words(o);
			if (nw > INT32_MAX)
				return bad(o, "has too many words");
			if (!(st = oxr_sink_put32(s, (uint32_t)(o->v.i32 < 0 ? -(int32_t)nw : (int32_t)nw))))
				st = put_elems(s, o->data, nw, 4, o->order);
			break;
		}
		case OP_WORDS:
		case OP_DOUBLES: {
			size_t e = op->kind == OP_WORDS ? 4 : 8;
			if (o->len % e || o->len / e > INT32_MAX)
				return bad(o, "payload length is not a whole number of elements");
			if (!(st = oxr_sink_put32(s, (uint32_t)(o->len / e))))
				st = put_elems(s, o->data, o->len / e, e, o->order);
			break;
		}
		case OP_COUNT:
			counted = o->nkids - sp->fixed_kids;
			if (oxr_cmo_counted_op(sp) == OP_PAIRS) {
				if (counted % 2)
					return bad(o, "needs an even number of kids (exponent, coefficient)");
				counted /= 2;
			}
			st = oxr_sink_put32(s, counted);
			break;
		case OP_KIDS:
			for (i = 0; i < counted && !st; i++, k++) {
				kid = o->kids[k];
				if (kid && !oxr_cmo_want_ok(op->want, kid->tag))
					return bad(o, "has a kid of the wrong kind");
				st = oxr_sink_put_cmo(s, kid, 1, depth + 1);
			}
			break;
		case OP_PAIRS:
			for (i = 0; i < counted && !st; i++, k += 2) {
				kid = o->kids[k];
				if (!kid || kid->tag != OXR_CMO_INT32)
					return bad(o, "exponent is not a CMO_INT32");
				if (!(st = oxr_sink_put_cmo(s, kid, 0, depth + 1)))
					st = oxr_sink_put_cmo(s, o->kids[k + 1], 1, depth + 1);
			}
			break;
		case OP_KID:
		case OP_BARE_ZZ:
		case OP_BARE_I32:
			kid = o->kids[k++];
			if (!kid)
				return bad(o, "has an unset kid");
			if (op->kind == OP_KID && !oxr_cmo_want_ok(op->want, kid->tag))
				return bad(o, "has a kid of the wrong kind");
			if (op->kind != OP_KID &&
			    kid->tag != (op->kind == OP_BARE_ZZ ? OXR_CMO_ZZ : OXR_CMO_INT32))
				return bad(o, "has a part of the wrong kind");
			st = oxr_sink_put_cmo(s, kid, op->kind == OP_KID, depth + 1);
			break;
		}
	}
	return st;
}

oxr_status_t oxr_cmo_size(const oxr_cmo *o, size_t *size)
{
	struct oxr_sink s = { 0 };
	oxr_status_t st = oxr_sink_put_cmo(&s, o, 1, 0);

	if (st == OXR_OK)
		*size = s.len;
	return st;
}

oxr_status_t oxr_cmo_encode(const oxr_cmo *o, int order, void *buf, size_t cap, size_t *len)
{
	struct oxr_sink s = { .buf = buf, .cap = cap, .order = order ? 1 : 0 };
	oxr_status_t st;

	if (!buf)
		return oxr_err(OXR_ERR_INVAL, "oxr_cmo_encode: NULL buffer");
	st = oxr_sink_put_cmo(&s, o, 1, 0);
	if (st == OXR_OK)
		*len = s.len;
	return st;
}

oxr_status_t oxr_sink_alloc(struct oxr_sink *s, uint8_t **buf)
{
	*buf = malloc(s->len ? s->len : 1);
	if (!*buf)
		return oxr_err(OXR_ERR_NOMEM, "encode: cannot allocate %zu bytes", s->len);
	s->buf = *buf;
	s->cap = s->len;
	s->len = 0;
	return OXR_OK;
}

oxr_status_t oxr_cmo_encode_alloc(const oxr_cmo *o, int order, uint8_t **buf, size_t *len)
{
	struct oxr_sink s = { .order = order ? 1 : 0 };
	oxr_status_t st = oxr_sink_put_cmo(&s, o, 1, 0);

	if (st == OXR_OK)
		st = oxr_sink_alloc(&s, buf);
	if (st == OXR_OK)
		st = oxr_sink_put_cmo(&s, o, 1, 0);
	if (st) {
		if (s.buf)
			free(s.buf);
		return st;
	}
	*len = s.len;
	return OXR_OK;
}
