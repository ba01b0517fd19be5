/* SPDX-License-Identifier: MIT */
/* OX frames (ox tag, serial, body) and the names of OX tags and SM codes. */
#include <stdlib.h>
#include <string.h>

#include "oxr/ox.h"
#include "oxr_internal.h"
#include "cmo_encode.h"
#include "cmo_spec.h"

struct name { int32_t code; const char *name; };

#define N(x) { OXR_##x, #x }
static const struct name sm_names[] = {
	N(SM_popSerializedLocalObject), N(SM_popCMO), N(SM_popString), N(SM_mathcap),
	N(SM_pops), N(SM_setName), N(SM_evalName), N(SM_executeStringByLocalParser),
	N(SM_executeFunction), N(SM_beginBlock), N(SM_endBlock), N(SM_shutdown),
	N(SM_setMathcap), N(SM_executeStringByLocalParserInBatchMode), N(SM_getsp),
	N(SM_dupErrors), N(SM_pushCMOtag), N(SM_set_rank_102), N(SM_tcp_accept_102),
	N(SM_tcp_connect_102), N(SM_reset_102), N(SM_bcast_102), N(SM_reduce_102),
	N(SM_nop), N(SM_executeFunctionSync), N(SM_control_kill), N(SM_control_intr),
	N(SM_control_reset_connection),
	{ OXR_SM_setMathcap, "SM_setMathCap" }, /* the OpenXM headers' spelling */
};
static const struct name ox_names[] = {
	N(OX_COMMAND), N(OX_DATA), N(OX_SYNC_BALL), N(OX_NOTIFY), N(OX_DATA_WITH_SIZE),
	N(OX_LOCAL_OBJECT_ASIR),
};
#undef N

#define COUNT(t) (sizeof(t) / sizeof((t)[0]))

static const char *name_of(const struct name *t, size_t n, int32_t code)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

static int32_t code_of(const struct name *t, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(t[i].name) == len && !memcmp(t[i].name, s, len))
			return t[i].code;
	return -1;
}

const char *oxr_sm_name(int32_t sm) { return name_of(sm_names, COUNT(sm_names), sm); }
const char *oxr_ox_tag_name(int32_t tag) { return name_of(ox_names, COUNT(ox_names), tag); }

int32_t oxr_sm_of(const char *s, size_t len)
{
	return code_of(sm_names, COUNT(sm_names), s, len);
}

int32_t oxr_ox_tag_of(const char *s, size_t len)
{
	return code_of(ox_names, COUNT(ox_names), s, len);
}

static oxr_status_t put_msg(struct oxr_sink *s, const oxr_ox_msg *m, int has_serial)
{
	oxr_status_t st;

	if (m->tag != OXR_OX_COMMAND && m->tag != OXR_OX_SYNC_BALL && !oxr_ox_has_cmo(m->tag))
		return oxr_err(OXR_ERR_INVAL, "encode: OX tag %d is not COMMAND, DATA or SYNC_BALL",
			       m->tag);
	st = oxr_sink_put32(s, (uint32_t)m->tag);
	if (!st && has_serial)
		st = oxr_sink_put32(s, (uint32_t)m->serial);
	if (st)
		return st;
	if (m->tag == OXR_OX_COMMAND)
		return oxr_sink_put32(s, (uint32_t)m->sm);
	if (oxr_ox_has_cmo(m->tag))
		return oxr_sink_put_cmo(s, m->cmo, 1, 0);
	return OXR_OK;
}

oxr_status_t oxr_ox_size(const oxr_ox_msg *m, int has_serial, size_t *size)
{
	struct oxr_sink s = { 0 };
	oxr_status_t st = put_msg(&s, m, has_serial);

	if (st == OXR_OK)
		*size = s.len;
	return st;
}

oxr_status_t oxr_ox_encode(const oxr_ox_msg *m, int has_serial, int order,
			   void *buf, size_t cap, size_t *len)
{
	struct oxr_sink s = { .buf = buf, .cap = cap, .order = order ? 1 : 0 };
	oxr_status_t st;

	if (!buf)
		return oxr_err(OXR_ERR_INVAL, "oxr_ox_encode: NULL buffer");
	st = put_msg(&s, m, has_serial);
	if (st == OXR_OK)
		*len = s.len;
	return st;
}

oxr_status_t oxr_ox_encode_alloc(const oxr_ox_msg *m, int has_serial, int order,
				 uint8_t **buf, size_t *len)
{
	struct oxr_sink s = { .order = order ? 1 : 0 };
	oxr_status_t st = put_msg(&s, m, has_serial);

	if (st == OXR_OK)
		st = oxr_sink_alloc(&s, buf);
	if (st == OXR_OK)
		st = put_msg(&s, m, has_serial);
	if (st) {
		free(s.buf);
		return st;
	}
	*len = s.len;
	return OXR_OK;
}

/*
 * The commonest small frame, OX_DATA of a leaf (one int32 or one byte
 * payload, as the spec table says: CMO_INT32, CMO_STRING, CMO_DATUM),
 * written straight: the walk's steps cost a small message more than its
 * trip through the rest of oxr.  The bytes are the walk's.  0: m is
 * anything else or does not fit cap, and the walk does it.
 */
static size_t put_leaf(const oxr_ox_msg *m, int order, uint8_t *buf, size_t cap)
{
	const oxr_cmo *o = m->cmo;
	const struct cmo_spec *sp;
	size_t n;

	if (m->tag != OXR_OX_DATA || !o || !(sp = oxr_cmo_spec(o->tag)) ||
	    sp->ops[1].kind != OP_END)
		return 0;
	if (sp->ops[0].kind == OP_I32)
		n = 16;
	else if (sp->ops[0].kind == OP_BYTES && o->len <= cap && (o->data || !o->len))
		n = 16 + o->len;
	else
		return 0;
	if (n > cap)
		return 0;
	oxr_store32(buf, (uint32_t)m->tag, order);
	oxr_store32(buf + 4, (uint32_t)m->serial, order);
	oxr_store32(buf + 8, (uint32_t)o->tag, order);
	if (sp->ops[0].kind == OP_I32) {
		oxr_store32(buf + 12, (uint32_t)o->v.i32, order);
	} else {
		oxr_store32(buf + 12, (uint32_t)o->len, order);
		if (o->len)
			memcpy(buf + 16, o->data, o->len);
	}
	return n;
}

oxr_status_t oxr_ox_encode_iov(const oxr_ox_msg *m, int order, size_t big, void *small,
			       size_t small_cap, struct iovec *one, void **mem,
			       struct iovec **iov, int *niov, size_t *total)
{
	struct oxr_sink s = { .buf = small, .cap = small_cap, .order = order ? 1 : 0,
			      .probe = 1 };
	oxr_status_t st = OXR_ERR_SPACE;
	size_t scratch, iov_at;
	uint8_t *p;

	if (small && (s.len = put_leaf(m, s.order, small, small_cap)))
		st = OXR_OK;
	else if (small)
		st = put_msg(&s, m, 1);
	if (st == OXR_OK) {
		one->iov_base = small;
		one->iov_len = s.len;
		*mem = NULL;
		*iov = one;
		*niov = 1;
		*total = s.len;
		return OXR_OK;
	}
	if (st != OXR_ERR_SPACE)
		return st;
	s = (struct oxr_sink){ .order = order ? 1 : 0, .big = big };
	if ((st = put_msg(&s, m, 1)))
		return st;
	scratch = s.len;
	s.maxiov = s.niov + 1;
	iov_at = (scratch + 15) & ~(size_t)15;
	p = malloc(iov_at + (size_t)s.maxiov * sizeof(struct iovec));
	if (!p)
		return oxr_err(OXR_ERR_NOMEM, "encode: cannot allocate %zu bytes", scratch);
	s = (struct oxr_sink){ .buf = p, .cap = scratch, .order = order ? 1 : 0, .big = big,
			       .iov = (struct iovec *)(p + iov_at), .maxiov = s.maxiov };
	st = put_msg(&s, m, 1);
	if (st) {
		free(p);
		return st;
	}
	oxr_sink_flush_seg(&s);
	*mem = p;
	*iov = s.iov;
	*niov = s.niov;
	*total = s.total;
	return OXR_OK;
}
