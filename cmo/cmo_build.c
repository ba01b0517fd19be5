/* SPDX-License-Identifier: MIT */
/* Building CMO objects, reading their values, comparing them. */
#include <stdlib.h>
#include <string.h>

#include "oxr/cmo.h"
#include "oxr_internal.h"
#include "cmo_spec.h"

/* Body-less tags are shared: a peer sending a million CMO_NULLs costs no memory. */
static oxr_cmo s_null = { .tag = OXR_CMO_NULL };
static oxr_cmo s_zero = { .tag = OXR_CMO_ZERO };
static oxr_cmo s_dms = { .tag = OXR_CMO_DMS_GENERIC };
static oxr_cmo s_error = { .tag = OXR_CMO_ERROR };

oxr_cmo *oxr_cmo_null(void) { return &s_null; }
oxr_cmo *oxr_cmo_zero(void) { return &s_zero; }
oxr_cmo *oxr_cmo_dms_generic(void) { return &s_dms; }
oxr_cmo *oxr_cmo_error(void) { return &s_error; }

void oxr_copy_elems(void *dst, const void *src, size_t n, size_t elem,
		    int src_order, int dst_order)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t i;

	if (elem == 1 || src_order == dst_order) {
		memcpy(dst, src, n * elem);
		return;
	}
	if (elem == 4) {
		/* two words per 64-bit swap: bswap64 then a rotate swaps each half */
		for (i = 0; i + 2 <= n; i += 2) {
			uint64_t w;
			memcpy(&w, s + 4 * i, 8);
			w = oxr_bswap64(w);
			w = w >> 32 | w << 32;
			memcpy(d + 4 * i, &w, 8);
		}
		for (; i < n; i++) {
			uint32_t w;
			memcpy(&w, s + 4 * i, 4);
			w = oxr_bswap32(w);
			memcpy(d + 4 * i, &w, 4);
		}
	} else {
		for (i = 0; i < n; i++) {
			uint64_t w;
			memcpy(&w, s + 8 * i, 8);
			w = oxr_bswap64(w);
			memcpy(d + 8 * i, &w, 8);
		}
	}
}

static oxr_cmo *new_obj(oxr_arena *a, int32_t tag)
{
	oxr_cmo *o = oxr_arena_alloc(a, sizeof(*o));

	if (!o)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->tag = tag;
	o->order = OXR_ORDER_HOST;
	return o;
}

oxr_cmo *oxr_cmo_new_node(oxr_arena *a, int32_t tag, uint32_t nkids)
{
	oxr_cmo *o;

	if (!oxr_cmo_spec(tag)) {
		oxr_err(OXR_ERR_INVAL, "oxr_cmo_new_node: unknown CMO tag %d", tag);
		return NULL;
	}
	o = new_obj(a, tag);
	if (!o)
		return NULL;
	if (nkids) {
		o->kids = oxr_arena_alloc(a, (size_t)nkids * sizeof(*o->kids));
		if (!o->kids)
			return NULL;
		memset(o->kids, 0, (size_t)nkids * sizeof(*o->kids));
	}
	o->nkids = nkids;
	return o;
}

oxr_cmo *oxr_cmo_new_list(oxr_arena *a, uint32_t n)
{
	return oxr_cmo_new_node(a, OXR_CMO_LIST, n);
}

oxr_cmo *oxr_cmo_new_int32(oxr_arena *a, int32_t v)
{
	oxr_cmo *o = new_obj(a, OXR_CMO_INT32);

	if (o)
		o->v.i32 = v;
	return o;
}

oxr_cmo *oxr_cmo_new_double(oxr_arena *a, int32_t tag, double v)
{
	oxr_cmo *o;

	if (tag != OXR_CMO_IEEE_DOUBLE_FLOAT && tag != OXR_CMO_64BIT_MACHINE_DOUBLE) {
		oxr_err(OXR_ERR_INVAL, "oxr_cmo_new_double: tag %d is not a double tag", tag);
		return NULL;
	}
	o = new_obj(a, tag);
	if (o)
		o->v.f64 = v;
	return o;
}

static oxr_cmo *with_payload(oxr_arena *a, int32_t tag, const void *p, size_t n)
{
	oxr_cmo *o = new_obj(a, tag);
	uint8_t *d;

	if (!o)
		return NULL;
	if (n) {
		d = oxr_arena_alloc(a, n);
		if (!d)
			return NULL;
		memcpy(d, p, n);
		o->data = d;
	}
	o->len = n;
	return o;
}

oxr_cmo *oxr_cmo_new_bytes(oxr_arena *a, int32_t tag, const void *p, size_t n)
{
	if (tag != OXR_CMO_STRING && tag != OXR_CMO_DATUM) {
		oxr_err(OXR_ERR_INVAL, "oxr_cmo_new_bytes: tag %d is not STRING or DATUM", tag);
		return NULL;
	}
	if (n > INT32_MAX) {
		oxr_err(OXR_ERR_LIMIT, "oxr_cmo_new_bytes: %zu bytes do not fit a CMO length", n);
		return NULL;
	}
	return with_payload(a, tag, p, n);
}

oxr_cmo *oxr_cmo_new_string(oxr_arena *a, const char *s)
{
	return oxr_cmo_new_bytes(a, OXR_CMO_STRING, s, strlen(s));
}

oxr_cmo *oxr_cmo_zz_on_limbs(oxr_arena *a, const mp_limb_t *l, size_t n, int neg)
{
	size_t nw;
	oxr_cmo *o;

	if (!ZZ_LIMBS_ARE_WORDS)
		return NULL;
	while (n && !l[n - 1])
		n--;
	nw = n * (sizeof(*l) / 4);
	while (nw && !oxr_load32((const uint8_t *)l + 4 * (nw - 1), OXR_ORDER_HOST))
		nw--;
	if (nw > INT32_MAX) {
		oxr_err(OXR_ERR_LIMIT, "a CMO_ZZ of %zu words is too long", nw);
		return NULL;
	}
	if (!(o = new_obj(a, OXR_CMO_ZZ)))
		return NULL;
	o->data = nw ? (const uint8_t *)l : NULL;
	o->len = nw * 4;
	o->v.i32 = neg ? -(int32_t)nw : (int32_t)nw;
	return o;
}

oxr_cmo *oxr_cmo_new_zz(oxr_arena *a, mpz_srcptr z)
{
	size_t nbits = mpz_sizeinbase(z, 2);
	size_t nw = mpz_sgn(z) ? (nbits + 31) / 32 : 0;
	oxr_cmo *o;
	void *w;

	if (nw > INT32_MAX) {
		oxr_err(OXR_ERR_LIMIT, "oxr_cmo_new_zz: %zu words do not fit a CMO_ZZ", nw);
		return NULL;
	}
	o = new_obj(a, OXR_CMO_ZZ);
	if (!o)
		return NULL;
	if (nw) {
		w = oxr_arena_alloc(a, nw * 4);
		if (!w)
			return NULL;
		if (ZZ_LIMBS_ARE_WORDS)
			memcpy(w, mpz_limbs_read(z), nw * 4);
		else
			mpz_export(w, NULL, -1, 4, 0, 0, z);
		o->data = w;
	}
	o->len = nw * 4;
	o->v.i32 = mpz_sgn(z) < 0 ? -(int32_t)nw : (int32_t)nw;
	return o;
}

oxr_cmo *oxr_cmo_new_zz_si(oxr_arena *a, long v)
{
	mpz_t z;
	oxr_cmo *o;

	mpz_init_set_si(z, v);
	o = oxr_cmo_new_zz(a, z);
	mpz_clear(z);
	return o;
}

oxr_cmo *oxr_cmo_new_qq(oxr_arena *a, mpq_srcptr q)
{
	oxr_cmo *o = oxr_cmo_new_node(a, OXR_CMO_QQ, 2);

	if (!o)
		return NULL;
	o->kids[0] = oxr_cmo_new_zz(a, mpq_numref(q));
	o->kids[1] = oxr_cmo_new_zz(a, mpq_denref(q));
	return o->kids[0] && o->kids[1] ? o : NULL;
}

oxr_cmo *oxr_cmo_new_monomial32(oxr_arena *a, uint32_t nexp, const int32_t *exps,
				oxr_cmo *coef)
{
	oxr_cmo *o;

	if ((size_t)nexp * 4 > INT32_MAX) {
		oxr_err(OXR_ERR_LIMIT, "oxr_cmo_new_monomial32: %u exponents are too many", nexp);
		return NULL;
	}
	o = with_payload(a, OXR_CMO_MONOMIAL32, exps, (size_t)nexp * 4);
	if (!o)
		return NULL;
	o->kids = oxr_arena_alloc(a, sizeof(*o->kids));
	if (!o->kids)
		return NULL;
	o->kids[0] = coef;
	o->nkids = 1;
	return o;
}

oxr_cmo *oxr_cmo_new_double_array(oxr_arena *a, const double *v, uint32_t n)
{
	return with_payload(a, OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE, v, (size_t)n * 8);
}

int32_t oxr_cmo_word(const oxr_cmo *o, size_t i)
{
	return (int32_t)oxr_load32(o->data + 4 * i, o->order);
}

double oxr_cmo_double_at(const oxr_cmo *o, size_t i)
{
	uint64_t u = oxr_load64(o->data + 8 * i, o->order);
	double d;

	memcpy(&d, &u, 8);
	return d;
}

oxr_status_t oxr_cmo_get_mpz(const oxr_cmo *o, mpz_ptr z)
{
	if (o->tag == OXR_CMO_INT32) {
		mpz_set_si(z, o->v.i32);
		return OXR_OK;
	}
	if (o->tag == OXR_CMO_NULL || o->tag == OXR_CMO_ZERO) {
		mpz_set_ui(z, 0); /* asir's integer 0 */
		return OXR_OK;
	}
	if (o->tag != OXR_CMO_ZZ)
		return oxr_err(OXR_ERR_INVAL, "oxr_cmo_get_mpz: %s is not an integer",
			       oxr_cmo_tag_name(o->tag) ? oxr_cmo_tag_name(o->tag) : "object");
	if (ZZ_LIMBS_ARE_WORDS && o->len) {
		size_t nw = o->len / 4, nl = (o->len + sizeof(mp_limb_t) - 1) / sizeof(mp_limb_t);
		mp_limb_t *l = mpz_limbs_write(z, (mp_size_t)nl);
		l[nl - 1] = 0; /* the top half of the last limb when nw is odd */
		oxr_copy_elems(l, o->data, nw, 4, o->order, OXR_ORDER_HOST);
		mpz_limbs_finish(z, o->v.i32 < 0 ? -(mp_size_t)nl : (mp_size_t)nl);
		return OXR_OK;
	}
	/* endian argument of mpz_import: -1 little, 1 big, per word */
	mpz_import(z, o->len / 4, -1, 4, o->order == OXR_ORDER_LITTLE ? -1 : 1, 0, o->data);
	if (o->v.i32 < 0)
		mpz_neg(z, z);
	return OXR_OK;
}

oxr_status_t oxr_cmo_get_mpq(const oxr_cmo *o, mpq_ptr q)
{
	oxr_status_t st;

	if (o->tag != OXR_CMO_QQ) {
		st = oxr_cmo_get_mpz(o, mpq_numref(q));
		if (st == OXR_OK)
			mpz_set_ui(mpq_denref(q), 1);
		return st;
	}
	st = oxr_cmo_get_mpz(o->kids[0], mpq_numref(q));
	if (st == OXR_OK)
		st = oxr_cmo_get_mpz(o->kids[1], mpq_denref(q));
	if (st == OXR_OK && mpz_sgn(mpq_denref(q)) == 0)
		return oxr_err(OXR_ERR_INVAL, "oxr_cmo_get_mpq: denominator is zero");
	if (st == OXR_OK)
		mpq_canonicalize(q);
	return st;
}

static size_t elem_size(int32_t tag)
{
	if (tag == OXR_CMO_STRING || tag == OXR_CMO_DATUM)
		return 1;
	return tag == OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE ? 8 : 4;
}

static int same_payload(const oxr_cmo *x, const oxr_cmo *y)
{
	size_t e = elem_size(x->tag), i;

	if (x->len != y->len)
		return 0;
	if (e == 1 || x->order == y->order)
		return x->len == 0 || !memcmp(x->data, y->data, x->len);
	for (i = 0; i < x->len; i += e) {
		if (e == 4 ? oxr_load32(x->data + i, x->order) != oxr_load32(y->data + i, y->order)
			   : oxr_load64(x->data + i, x->order) != oxr_load64(y->data + i, y->order))
			return 0;
	}
	return 1;
}

int oxr_cmo_equal(const oxr_cmo *x, const oxr_cmo *y)
{
	uint32_t i;

	if (x == y)
		return 1;
	if (!x || !y || x->tag != y->tag || x->nkids != y->nkids)
		return 0;
	switch (x->tag) {
	case OXR_CMO_INT32:
	case OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE:
	case OXR_CMO_ZZ:
		if (x->v.i32 != y->v.i32)
			return 0;
		break;
	case OXR_CMO_IEEE_DOUBLE_FLOAT:
	case OXR_CMO_64BIT_MACHINE_DOUBLE:
		/* bitwise, so NaN payloads and -0.0 count */
		if (memcmp(&x->v.f64, &y->v.f64, 8))
			return 0;
		break;
	}
	if (!same_payload(x, y))
		return 0;
	for (i = 0; i < x->nkids; i++)
		if (!oxr_cmo_equal(x->kids[i], y->kids[i]))
			return 0;
	return 1;
}

oxr_status_t oxr_cmo_copy(oxr_arena *a, const oxr_cmo *o, oxr_cmo **out)
{
	oxr_cmo *c;
	uint32_t i;

	if (o->nkids == 0 && !o->data) {
		switch (o->tag) {
		case OXR_CMO_NULL: *out = oxr_cmo_null(); return OXR_OK;
		case OXR_CMO_ZERO: *out = oxr_cmo_zero(); return OXR_OK;
		case OXR_CMO_DMS_GENERIC: *out = oxr_cmo_dms_generic(); return OXR_OK;
		case OXR_CMO_ERROR: *out = oxr_cmo_error(); return OXR_OK;
		default: break;
		}
	}
	if (!(c = oxr_arena_alloc(a, sizeof(*c))))
		return oxr_err(OXR_ERR_NOMEM, "copy of a CMO: out of memory");
	*c = *o;
	if (o->len) {
		uint8_t *d = oxr_arena_alloc(a, o->len);
		if (!d)
			return oxr_err(OXR_ERR_NOMEM, "copy of a CMO: out of memory");
		memcpy(d, o->data, o->len);
		c->data = d;
	}
	if (o->nkids) {
		if (!(c->kids = oxr_arena_alloc(a, sizeof(*c->kids) * o->nkids)))
			return oxr_err(OXR_ERR_NOMEM, "copy of a CMO: out of memory");
		for (i = 0; i < o->nkids; i++) {
			oxr_status_t st = oxr_cmo_copy(a, o->kids[i], &c->kids[i]);
			if (st)
				return st;
		}
	}
	*out = c;
	return OXR_OK;
}
