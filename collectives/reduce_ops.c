/* SPDX-License-Identifier: MIT */
/*
 * The built-in reduction ops: "+", "*", "max", "min" on numbers and
 * "append" on lists.
 *
 * Numbers have a kind, INT32 < ZZ < QQ < double (CMO_NULL and CMO_ZERO are
 * the INT32 0, as asir reads them), and the result of x op y has the larger
 * kind of the two, so a reduction's result kind is the largest kind among
 * its operands whatever the tree's grouping; the one exception is INT32 op
 * INT32 overflowing int32, which gives the exact value as a ZZ.  Exact
 * kinds compute exactly (GMP); a double result is computed in doubles,
 * the exact operands converted as mpz_get_d / mpq_get_d do (towards zero),
 * and is a CMO_64BIT_MACHINE_DOUBLE only when every double operand was one,
 * else a CMO_IEEE_DOUBLE_FLOAT (what asir sends).  max and min of doubles
 * are C's fmax and fmin (a NaN loses to a number), written out so that
 * liboxr needs no libm.
 */
#include <math.h>
#include <string.h>

#include "oxr/bcast.h"
#include "oxr_internal.h"

enum { OP_ADD, OP_MUL, OP_MAX, OP_MIN, OP_APPEND, NOPS };
static const char *const op_names[NOPS] = { "+", "*", "max", "min", "append" };

enum { K_INT32, K_ZZ, K_QQ, K_DBL };

static int op_of(const char *op)
{
	int i;

	for (i = 0; op && i < NOPS; i++)
		if (!strcmp(op, op_names[i]))
			return i;
	return -1;
}

int oxr_reduce_op_known(const char *op) { return op_of(op) >= 0; }

static int kind_of(const oxr_cmo *o)
{
	switch (o->tag) {
	case OXR_CMO_INT32:
	case OXR_CMO_NULL:
	case OXR_CMO_ZERO:
		return K_INT32;
	case OXR_CMO_ZZ:
		return K_ZZ;
	case OXR_CMO_QQ:
		return K_QQ;
	case OXR_CMO_IEEE_DOUBLE_FLOAT:
	case OXR_CMO_64BIT_MACHINE_DOUBLE:
		return K_DBL;
	default:
		return -1;
	}
}

static int is_dbl(const oxr_cmo *o) { return kind_of(o) == K_DBL; }
static int32_t i32_of(const oxr_cmo *o) { return o->tag == OXR_CMO_INT32 ? o->v.i32 : 0; }

static const char *tag_str(int32_t tag)
{
	const char *s = oxr_cmo_tag_name(tag);

	return s ? s : "an unknown tag";
}

static oxr_status_t get_z(const oxr_cmo *o, mpz_ptr z)
{
	if (o->tag == OXR_CMO_NULL || o->tag == OXR_CMO_ZERO) {
		mpz_set_ui(z, 0);
		return OXR_OK;
	}
	return oxr_cmo_get_mpz(o, z);
}

static oxr_status_t get_q(const oxr_cmo *o, mpq_ptr q)
{
	if (o->tag == OXR_CMO_NULL || o->tag == OXR_CMO_ZERO) {
		mpq_set_ui(q, 0, 1);
		return OXR_OK;
	}
	return oxr_cmo_get_mpq(o, q);
}

static double get_d(const oxr_cmo *o)
{
	double d = 0;

	switch (kind_of(o)) {
	case K_INT32: return i32_of(o);
	case K_DBL: return o->v.f64;
	case K_ZZ: {
		mpz_t z;
		mpz_init(z);
		if (oxr_cmo_get_mpz(o, z) == OXR_OK)
			d = mpz_get_d(z);
		mpz_clear(z);
		return d;
	}
	default: {
		mpq_t q;
		mpq_init(q);
		if (oxr_cmo_get_mpq(o, q) == OXR_OK)
			d = mpq_get_d(q);
		mpq_clear(q);
		return d;
	}
	}
}

static oxr_cmo *nomem(oxr_cmo *o)
{
	if (!o)
		oxr_err(OXR_ERR_NOMEM, "reduce: out of memory");
	return o;
}

static oxr_status_t ints(int op, int32_t x, int32_t y, oxr_arena *a, oxr_cmo **out, int *overflow)
{
	int32_t r;

	switch (op) {
	case OP_ADD: *overflow = __builtin_add_overflow(x, y, &r); break;
	case OP_MUL: *overflow = __builtin_mul_overflow(x, y, &r); break;
	case OP_MAX: r = x > y ? x : y; *overflow = 0; break;
	default: r = x < y ? x : y; *overflow = 0; break;
	}
	if (*overflow)
		return OXR_OK;
	return (*out = nomem(oxr_cmo_new_int32(a, r))) ? OXR_OK : OXR_ERR_NOMEM;
}

/*
 * Integers where the ZZ words are limbs (ZZ_LIMBS_ARE_WORDS): no mpz_t, no
 * conversion.  An operand's magnitude is read in place when its payload is
 * in host order and limb-aligned (what a received message, a pushed object
 * and an earlier result are): its whole limbs, and above them, when the
 * word count is odd (half of all sizes, 10^6 digits among them), the top
 * word as a half limb, which is never read as part of a limb since the
 * bytes after it may not be ours.  Anything else is copied once into a
 * scratch arena, whose big blocks come back warm from the arena cache
 * (fresh malloc'ed pages cost more than the arithmetic).
 *
 * "+" writes the result once, straight into the output arena: the whole
 * limbs of both operands by mpn_add / mpn_sub, then each half-limb top
 * added (or subtracted) at its place.  All of it is computed modulo
 * B^rn, rn limbs being enough for the true result, so an intermediate
 * that is negative or carries out of rn needs no care.  The other ops work
 * on read-only mpz views of contiguous copies.
 */
struct mag {
	const mp_limb_t *l; /* w whole limbs */
	mp_size_t w;
	mp_limb_t top;      /* the half limb above them, 0 when none */
	int neg;
	mp_limb_t one;      /* an INT32's magnitude */
};

/* limbs the magnitude takes: the value is below B^mag_len */
static mp_size_t mag_len(const struct mag *m) { return m->w + (m->top != 0); }

static mp_limb_t limb_at(const struct mag *m, mp_size_t i)
{
	return i < m->w ? m->l[i] : i == m->w ? m->top : 0;
}

/* Words of a ZZ without zero top words (a decoded ZZ has none). */
static size_t zz_nw(const oxr_cmo *o)
{
	size_t nw = o->len / 4;

	while (nw && !oxr_load32(o->data + 4 * (nw - 1), o->order))
		nw--;
	return nw;
}

/* contiguous: no half-limb top (a copy where there would be one) */
static oxr_status_t mag_of(const oxr_cmo *o, oxr_arena **tmp, int contiguous, struct mag *m)
{
	const size_t per = sizeof(mp_limb_t) / 4;
	size_t nw, nl;
	mp_limb_t *c;
	oxr_status_t st;

	m->top = 0;
	m->one = 0;
	m->l = &m->one;
	if (o->tag != OXR_CMO_ZZ) { /* INT32, NULL, ZERO */
		int32_t v = i32_of(o);
		m->one = v < 0 ? (mp_limb_t)-(int64_t)v : (mp_limb_t)v;
		m->w = v != 0;
		m->neg = v < 0;
		return OXR_OK;
	}
	nw = zz_nw(o);
	m->neg = o->v.i32 < 0;
	m->w = 0;
	if (!nw)
		return OXR_OK;
	if (o->order == OXR_ORDER_HOST && (uintptr_t)o->data % _Alignof(mp_limb_t) == 0 &&
	    (!contiguous || nw % per == 0)) {
		m->l = (const mp_limb_t *)(const void *)o->data;
		m->w = (mp_size_t)(nw / per);
		if (nw % per)
			m->top = oxr_load32(o->data + 4 * (nw - 1), OXR_ORDER_HOST);
		return OXR_OK;
	}
	nl = (nw + per - 1) / per;
	if (!*tmp && (st = oxr_arena_create(tmp)))
		return st;
	if (!(c = oxr_arena_alloc(*tmp, nl * sizeof(mp_limb_t))))
		return oxr_err(OXR_ERR_NOMEM, "reduce: out of memory");
	c[nl - 1] = 0; /* the top half of the last limb when nw is odd */
	oxr_copy_elems(c, o->data, nw, 4, o->order, OXR_ORDER_HOST);
	m->l = c;
	m->w = (mp_size_t)nl;
	return OXR_OK;
}

/* |x| against |y|: <0, 0, >0 */
static int mag_cmp(const struct mag *x, const struct mag *y)
{
	mp_size_t n = mag_len(x), i, low = x->w < y->w ? x->w : y->w;

	if (n != mag_len(y))
		return n < mag_len(y) ? -1 : 1;
	for (i = n - 1; i >= low; i--) /* the tops: two limbs at most */
		if (limb_at(x, i) != limb_at(y, i))
			return limb_at(x, i) < limb_at(y, i) ? -1 : 1;
	return i >= 0 ? mpn_cmp(x->l, y->l, i + 1) : 0;
}

/* r (rn limbs) = whole limbs of x + those of y */
static void whole_add(mp_limb_t *r, mp_size_t rn, const struct mag *x, const struct mag *y)
{
	const struct mag *b = x->w >= y->w ? x : y, *s = b == x ? y : x;

	if (s->w)
		r[b->w] = mpn_add(r, b->l, b->w, s->l, s->w);
	else if (b->w)
		memcpy(r, b->l, (size_t)b->w * sizeof(*r)), r[b->w] = 0;
	else
		r[0] = 0;
	if (rn > b->w + 1)
		memset(r + b->w + 1, 0, (size_t)(rn - b->w - 1) * sizeof(*r));
}

/* r (rn limbs) = whole limbs of x - those of y, modulo B^rn */
static void whole_sub(mp_limb_t *r, mp_size_t rn, const struct mag *x, const struct mag *y)
{
	int swap = x->w < y->w;
	const struct mag *b = swap ? y : x, *s = swap ? x : y;
	mp_limb_t borrow = 0;

	if (s->w)
		borrow = mpn_sub(r, b->l, b->w, s->l, s->w);
	else if (b->w)
		memcpy(r, b->l, (size_t)b->w * sizeof(*r));
	if (rn > b->w)
		memset(r + b->w, borrow ? 0xff : 0, (size_t)(rn - b->w) * sizeof(*r));
	if (swap)
		mpn_neg(r, r, rn);
}

/* x + y into a: the result's limbs are allocated there and written once. */
static oxr_status_t mag_add(const struct mag *x, const struct mag *y, oxr_arena *a,
			    oxr_cmo **out)
{
	const struct mag *b = x, *s = y; /* the bigger magnitude, the smaller */
	int sub = x->neg != y->neg, c = mag_cmp(x, y);
	mp_limb_t *r;
	mp_size_t rn;

	if (c < 0)
		b = y, s = x;
	if (sub && c == 0)
		return (*out = nomem(oxr_cmo_zz_on_limbs(a, NULL, 0, 0))) ? OXR_OK : OXR_ERR_NOMEM;
	/* the sum is below B^(len b + 1), the difference below B^(len b); rn
	 * also holds the whole limbs of both (w <= len) and the carry of their
	 * sum */
	rn = mag_len(b) + !sub;
	if (!(r = oxr_arena_alloc(a, (size_t)rn * sizeof(*r))))
		return oxr_err(OXR_ERR_NOMEM, "reduce: out of memory");
	if (sub) {
		whole_sub(r, rn, b, s);
		if (b->top)
			mpn_add_1(r + b->w, r + b->w, rn - b->w, b->top);
		if (s->top)
			mpn_sub_1(r + s->w, r + s->w, rn - s->w, s->top);
	} else {
		whole_add(r, rn, b, s);
		if (b->top)
			mpn_add_1(r + b->w, r + b->w, rn - b->w, b->top);
		if (s->top)
			mpn_add_1(r + s->w, r + s->w, rn - s->w, s->top);
	}
	*out = nomem(oxr_cmo_zz_on_limbs(a, r, (size_t)rn, b->neg));
	return *out ? OXR_OK : OXR_ERR_NOMEM;
}

static oxr_status_t zzs_limbs(int op, const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a,
			      oxr_cmo **out)
{
	int contiguous = op != OP_ADD;
	oxr_arena *tmp = NULL;
	struct mag mx, my;
	mpz_t vx, vy, r;
	mpz_srcptr pick;
	oxr_status_t st;

	if ((st = mag_of(x, &tmp, contiguous, &mx)) || (st = mag_of(y, &tmp, contiguous, &my)))
		goto done;
	if (op == OP_ADD) {
		st = mag_add(&mx, &my, a, out);
		goto done;
	}
	mpz_roinit_n(vx, mx.l, mx.neg ? -mx.w : mx.w);
	mpz_roinit_n(vy, my.l, my.neg ? -my.w : my.w);
	if (op == OP_MUL) {
		mpz_init(r);
		mpz_mul(r, vx, vy);
		st = (*out = nomem(oxr_cmo_new_zz(a, r))) ? OXR_OK : OXR_ERR_NOMEM;
		mpz_clear(r);
		goto done;
	}
	pick = (mpz_cmp(vy, vx) > 0) == (op == OP_MAX) ? vy : vx;
	st = (*out = nomem(oxr_cmo_new_zz(a, pick))) ? OXR_OK : OXR_ERR_NOMEM;
done:
	oxr_arena_destroy(tmp);
	return st;
}

static oxr_status_t zzs(int op, const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a, oxr_cmo **out)
{
	mpz_t zx, zy;
	oxr_status_t st;

	if (ZZ_LIMBS_ARE_WORDS)
		return zzs_limbs(op, x, y, a, out);
	mpz_inits(zx, zy, NULL);
	if (!(st = get_z(x, zx)) && !(st = get_z(y, zy))) {
		switch (op) {
		case OP_ADD: mpz_add(zx, zx, zy); break;
		case OP_MUL: mpz_mul(zx, zx, zy); break;
		case OP_MAX: if (mpz_cmp(zy, zx) > 0) mpz_set(zx, zy); break;
		default: if (mpz_cmp(zy, zx) < 0) mpz_set(zx, zy); break;
		}
		st = (*out = nomem(oxr_cmo_new_zz(a, zx))) ? OXR_OK : OXR_ERR_NOMEM;
	}
	mpz_clears(zx, zy, NULL);
	return st;
}

static oxr_status_t qqs(int op, const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a, oxr_cmo **out)
{
	mpq_t qx, qy;
	oxr_status_t st;

	mpq_inits(qx, qy, NULL);
	if (!(st = get_q(x, qx)) && !(st = get_q(y, qy))) {
		switch (op) {
		case OP_ADD: mpq_add(qx, qx, qy); break;
		case OP_MUL: mpq_mul(qx, qx, qy); break;
		case OP_MAX: if (mpq_cmp(qy, qx) > 0) mpq_set(qx, qy); break;
		default: if (mpq_cmp(qy, qx) < 0) mpq_set(qx, qy); break;
		}
		mpq_canonicalize(qx);
		st = (*out = nomem(oxr_cmo_new_qq(a, qx))) ? OXR_OK : OXR_ERR_NOMEM;
	}
	mpq_clears(qx, qy, NULL);
	return st;
}

static oxr_status_t dbls(int op, const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a, oxr_cmo **out)
{
	double dx = get_d(x), dy = get_d(y), r;
	int machine = (!is_dbl(x) || x->tag == OXR_CMO_64BIT_MACHINE_DOUBLE) &&
		      (!is_dbl(y) || y->tag == OXR_CMO_64BIT_MACHINE_DOUBLE);

	switch (op) {
	case OP_ADD: r = dx + dy; break;
	case OP_MUL: r = dx * dy; break;
	case OP_MAX: r = isnan(dx) || dy > dx ? dy : dx; break;
	default: r = isnan(dx) || dy < dx ? dy : dx; break;
	}
	*out = nomem(oxr_cmo_new_double(a, machine ? OXR_CMO_64BIT_MACHINE_DOUBLE :
					OXR_CMO_IEEE_DOUBLE_FLOAT, r));
	return *out ? OXR_OK : OXR_ERR_NOMEM;
}

static oxr_status_t append(const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a, oxr_cmo **out)
{
	oxr_cmo *l;

	if (x->tag != OXR_CMO_LIST || y->tag != OXR_CMO_LIST)
		return oxr_err(OXR_ERR_INVAL, "reduce op \"append\": %s is not a CMO_LIST",
			       tag_str(x->tag != OXR_CMO_LIST ? x->tag : y->tag));
	if ((uint64_t)x->nkids + y->nkids > UINT32_MAX)
		return oxr_err(OXR_ERR_LIMIT, "reduce op \"append\": the list would be too long");
	if (!(l = nomem(oxr_cmo_new_list(a, x->nkids + y->nkids))))
		return OXR_ERR_NOMEM;
	if (x->nkids)
		memcpy(l->kids, x->kids, sizeof(*l->kids) * x->nkids);
	if (y->nkids)
		memcpy(l->kids + x->nkids, y->kids, sizeof(*l->kids) * y->nkids);
	*out = l;
	return OXR_OK;
}

oxr_status_t oxr_reduce_apply(const char *op, const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a,
			      oxr_cmo **out)
{
	int o = op_of(op), kx, ky, k, overflow = 0;
	oxr_status_t st;

	if (o < 0)
		return oxr_err(OXR_ERR_INVAL, "reduce: unknown op \"%s\" (known: + * max min append)",
			       op ? op : "(null)");
	if (!x || !y || !a || !out)
		return oxr_err(OXR_ERR_INVAL, "reduce op \"%s\": a NULL argument", op);
	if (o == OP_APPEND)
		return append(x, y, a, out);
	kx = kind_of(x);
	ky = kind_of(y);
	if (kx < 0 || ky < 0)
		return oxr_err(OXR_ERR_INVAL, "reduce op \"%s\": %s is not a number (CMO_INT32, "
			       "CMO_ZZ, CMO_QQ, a double, CMO_NULL or CMO_ZERO)", op,
			       tag_str(kx < 0 ? x->tag : y->tag));
	k = kx > ky ? kx : ky;
	if (k == K_INT32) {
		if ((st = ints(o, i32_of(x), i32_of(y), a, out, &overflow)) || !overflow)
			return st;
		k = K_ZZ;
	}
	if (k == K_ZZ)
		return zzs(o, x, y, a, out);
	if (k == K_QQ)
		return qqs(o, x, y, a, out);
	return dbls(o, x, y, a, out);
}
