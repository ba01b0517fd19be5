/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "cmo_random.h"

uint64_t rnd_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

uint64_t rnd_seed(void)
{
	const char *e = getenv("OXR_TEST_SEED");

	return e && *e ? strtoull(e, NULL, 0) | 1 : 0x0123456789abcdefull;
}

static oxr_cmo *rnd_zz(oxr_arena *a, uint64_t *s)
{
	mpz_t z;
	oxr_cmo *o;
	uint32_t words = rnd_below(s, 4) == 0 ? rnd_below(s, 40) : rnd_below(s, 3);
	uint32_t i;

	mpz_init(z);
	for (i = 0; i < words; i++) {
		mpz_mul_2exp(z, z, 32);
		mpz_add_ui(z, z, (uint32_t)rnd_next(s));
	}
	if (rnd_below(s, 2))
		mpz_neg(z, z);
	o = oxr_cmo_new_zz(a, z);
	mpz_clear(z);
	return o;
}

static oxr_cmo *rnd_bytes(oxr_arena *a, uint64_t *s, int32_t tag)
{
	uint32_t n = rnd_below(s, 8) == 0 ? rnd_below(s, 5000) : rnd_below(s, 20);
	uint8_t *b = malloc(n + 1);
	oxr_cmo *o;
	uint32_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)rnd_next(s);
	o = oxr_cmo_new_bytes(a, tag, b, n);
	free(b);
	return o;
}

static oxr_cmo *rnd_string(oxr_arena *a, uint64_t *s)
{
	return rnd_bytes(a, s, OXR_CMO_STRING);
}

static oxr_cmo *rnd_list(oxr_arena *a, uint64_t *s, int depth, uint32_t max)
{
	uint32_t n = rnd_below(s, max + 1), i;
	oxr_cmo *o = oxr_cmo_new_list(a, n);

	for (i = 0; i < n; i++)
		o->kids[i] = rnd_cmo(a, s, depth - 1);
	return o;
}

static oxr_cmo *rnd_monomial(oxr_arena *a, uint64_t *s)
{
	int32_t exps[8];
	uint32_t n = rnd_below(s, 8), i;

	for (i = 0; i < n; i++)
		exps[i] = (int32_t)rnd_next(s);
	return oxr_cmo_new_monomial32(a, n, exps, rnd_below(s, 2) ? rnd_zz(a, s)
						       : oxr_cmo_new_int32(a, (int32_t)rnd_next(s)));
}

static oxr_cmo *rnd_double(uint64_t *s, oxr_arena *a, int32_t tag)
{
	uint64_t u = rnd_next(s);
	double d;

	memcpy(&d, &u, 8); /* any bit pattern, NaNs included */
	return oxr_cmo_new_double(a, tag, d);
}

oxr_cmo *rnd_cmo(oxr_arena *a, uint64_t *s, int depth)
{
	static const int32_t leaves[] = {
		OXR_CMO_NULL, OXR_CMO_INT32, OXR_CMO_DATUM, OXR_CMO_STRING, OXR_CMO_ZZ,
		OXR_CMO_QQ, OXR_CMO_ZERO, OXR_CMO_DMS_GENERIC, OXR_CMO_IEEE_DOUBLE_FLOAT,
		OXR_CMO_64BIT_MACHINE_DOUBLE, OXR_CMO_ERROR, OXR_CMO_MONOMIAL32,
		OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,
	};
	static const int32_t nodes[] = {
		OXR_CMO_LIST, OXR_CMO_LIST, OXR_CMO_MATHCAP, OXR_CMO_INDETERMINATE,
		OXR_CMO_RATIONAL, OXR_CMO_COMPLEX, OXR_CMO_ERROR2, OXR_CMO_TREE,
		OXR_CMO_DISTRIBUTED_POLYNOMIAL, OXR_CMO_RING_BY_NAME, OXR_CMO_LAMBDA,
		OXR_CMO_RECURSIVE_POLYNOMIAL, OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE,
		OXR_CMO_BIGFLOAT32, OXR_CMO_DMS_OF_N_VARIABLES,
	};
	int32_t tag;
	oxr_cmo *o;
	uint32_t i, n;

	if (depth <= 0 || rnd_below(s, 3) == 0)
		tag = leaves[rnd_below(s, sizeof(leaves) / sizeof(leaves[0]))];
	else
		tag = nodes[rnd_below(s, sizeof(nodes) / sizeof(nodes[0]))];

	switch (tag) {
	case OXR_CMO_NULL: return oxr_cmo_null();
	case OXR_CMO_ZERO: return oxr_cmo_zero();
	case OXR_CMO_DMS_GENERIC: return oxr_cmo_dms_generic();
	case OXR_CMO_ERROR: return oxr_cmo_error();
	case OXR_CMO_INT32: return oxr_cmo_new_int32(a, (int32_t)rnd_next(s));
	case OXR_CMO_DATUM:
	case OXR_CMO_STRING: return rnd_bytes(a, s, tag);
	case OXR_CMO_ZZ: return rnd_zz(a, s);
	case OXR_CMO_QQ: {
		mpq_t q;
		mpq_init(q);
		mpz_set_si(mpq_numref(q), (long)(int32_t)rnd_next(s));
		mpz_set_ui(mpq_denref(q), 1 + rnd_below(s, 1000000));
		mpz_mul_2exp(mpq_numref(q), mpq_numref(q), rnd_below(s, 100));
		mpq_canonicalize(q);
		o = oxr_cmo_new_qq(a, q);
		mpq_clear(q);
		return o;
	}
	case OXR_CMO_IEEE_DOUBLE_FLOAT:
	case OXR_CMO_64BIT_MACHINE_DOUBLE: return rnd_double(s, a, tag);
	case OXR_CMO_MONOMIAL32: return rnd_monomial(a, s);
	case OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE: {
		double v[6];
		n = rnd_below(s, 6);
		for (i = 0; i < n; i++)
			v[i] = (double)(int32_t)rnd_next(s) / 7.0;
		return oxr_cmo_new_double_array(a, v, n);
	}
	case OXR_CMO_LIST: return rnd_list(a, s, depth, rnd_below(s, 10) == 0 ? 300 : 6);
	case OXR_CMO_MATHCAP:
	case OXR_CMO_DMS_OF_N_VARIABLES:
		o = oxr_cmo_new_node(a, tag, 1);
		o->kids[0] = rnd_list(a, s, depth, 4);
		return o;
	case OXR_CMO_INDETERMINATE:
	case OXR_CMO_ERROR2:
		o = oxr_cmo_new_node(a, tag, 1);
		o->kids[0] = rnd_cmo(a, s, depth - 1);
		return o;
	case OXR_CMO_RING_BY_NAME:
		o = oxr_cmo_new_node(a, tag, 1);
		o->kids[0] = rnd_string(a, s);
		return o;
	case OXR_CMO_RATIONAL:
	case OXR_CMO_COMPLEX:
		o = oxr_cmo_new_node(a, tag, 2);
		o->kids[0] = rnd_cmo(a, s, depth - 1);
		o->kids[1] = rnd_cmo(a, s, depth - 1);
		return o;
	case OXR_CMO_RECURSIVE_POLYNOMIAL:
		o = oxr_cmo_new_node(a, tag, 2);
		o->kids[0] = rnd_list(a, s, depth, 3);
		o->kids[1] = rnd_cmo(a, s, depth - 1);
		return o;
	case OXR_CMO_TREE:
		o = oxr_cmo_new_node(a, tag, 3);
		o->kids[0] = rnd_string(a, s);
		o->kids[1] = rnd_list(a, s, depth, 3);
		o->kids[2] = rnd_list(a, s, depth, 3);
		return o;
	case OXR_CMO_LAMBDA:
		o = oxr_cmo_new_node(a, tag, 2);
		o->kids[0] = rnd_list(a, s, depth, 3);
		o->kids[1] = oxr_cmo_new_node(a, OXR_CMO_TREE, 3);
		o->kids[1]->kids[0] = rnd_string(a, s);
		o->kids[1]->kids[1] = rnd_list(a, s, depth - 1, 2);
		o->kids[1]->kids[2] = rnd_list(a, s, depth - 1, 2);
		return o;
	case OXR_CMO_DISTRIBUTED_POLYNOMIAL:
		n = rnd_below(s, 5);
		o = oxr_cmo_new_node(a, tag, 1 + n);
		o->kids[0] = oxr_cmo_dms_generic();
		for (i = 0; i < n; i++)
			o->kids[1 + i] = rnd_below(s, 5) ? rnd_monomial(a, s) : oxr_cmo_zero();
		return o;
	case OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE:
		n = rnd_below(s, 4);
		o = oxr_cmo_new_node(a, tag, 2 * n);
		o->v.i32 = (int32_t)rnd_below(s, 5);
		for (i = 0; i < n; i++) {
			o->kids[2 * i] = oxr_cmo_new_int32(a, (int32_t)(n - i));
			o->kids[2 * i + 1] = rnd_cmo(a, s, depth - 1);
		}
		return o;
	case OXR_CMO_BIGFLOAT32: {
		mpz_t z;
		o = oxr_cmo_new_node(a, tag, 3);
		for (i = 0; i < 3; i++)
			o->kids[i] = oxr_cmo_new_int32(a, (int32_t)rnd_next(s));
		/* the words: borrow a ZZ's payload */
		mpz_init_set_ui(z, (unsigned long)rnd_next(s) | 1);
		{
			oxr_cmo *w = oxr_cmo_new_zz(a, z);
			o->data = w->data;
			o->len = w->len;
		}
		mpz_clear(z);
		return o;
	}
	}
	return oxr_cmo_null();
}
