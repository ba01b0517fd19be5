/* SPDX-License-Identifier: MIT */
/*
 * SM_executeFunction's built-ins: arithmetic on INT32/ZZ/QQ/doubles (with
 * the kinds and exactness rules of the reduction ops, collectives/
 * reduce_ops.c, which "add", "mul", "max" and "min" are), list operations,
 * and, through sm_102.c, the in-server group calls.  Every argument's tag
 * and every index is checked; a wrong one is an error naming the function.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "oxr/bcast.h"
#include "oxr_internal.h"

static int is_number(const oxr_cmo *o)
{
	switch (o->tag) {
	case OXR_CMO_INT32: case OXR_CMO_NULL: case OXR_CMO_ZERO: case OXR_CMO_ZZ:
	case OXR_CMO_QQ: case OXR_CMO_IEEE_DOUBLE_FLOAT: case OXR_CMO_64BIT_MACHINE_DOUBLE:
		return 1;
	default:
		return 0;
	}
}

static int is_double(const oxr_cmo *o)
{
	return o->tag == OXR_CMO_IEEE_DOUBLE_FLOAT || o->tag == OXR_CMO_64BIT_MACHINE_DOUBLE;
}

static oxr_status_t get_q(const oxr_cmo *o, mpq_ptr q)
{
	if (o->tag == OXR_CMO_NULL || o->tag == OXR_CMO_ZERO) {
		mpq_set_ui(q, 0, 1);
		return OXR_OK;
	}
	return oxr_cmo_get_mpq(o, q);
}

/* An exact result: a ZZ when it is an integer, else a QQ. */
static oxr_status_t from_q(oxr_arena *a, mpq_srcptr q, oxr_cmo **out)
{
	*out = mpz_cmp_ui(mpq_denref(q), 1) ? oxr_cmo_new_qq(a, q) : oxr_cmo_new_zz(a, mpq_numref(q));
	return *out ? OXR_OK : oxr_err(OXR_ERR_NOMEM, "out of memory");
}

static double get_d(const oxr_cmo *o)
{
	mpq_t q;
	double d;

	if (is_double(o))
		return o->v.f64;
	mpq_init(q);
	d = get_q(o, q) == OXR_OK ? mpq_get_d(q) : 0;
	mpq_clear(q);
	return d;
}

static oxr_status_t neg(const oxr_cmo *x, oxr_arena *a, oxr_cmo **out)
{
	mpq_t q;
	oxr_status_t st;

	if (is_double(x)) {
		*out = oxr_cmo_new_double(a, x->tag, -x->v.f64);
		return *out ? OXR_OK : OXR_ERR_NOMEM;
	}
	mpq_init(q);
	if ((st = get_q(x, q)) == OXR_OK) {
		mpq_neg(q, q);
		st = from_q(a, q, out);
	}
	mpq_clear(q);
	return st;
}

static oxr_status_t divide(const oxr_cmo *x, const oxr_cmo *y, oxr_arena *a, oxr_cmo **out)
{
	mpq_t p, q;
	oxr_status_t st;

	if (is_double(x) || is_double(y)) {
		*out = oxr_cmo_new_double(a, OXR_CMO_IEEE_DOUBLE_FLOAT, get_d(x) / get_d(y));
		return *out ? OXR_OK : OXR_ERR_NOMEM;
	}
	mpq_init(p);
	mpq_init(q);
	if ((st = get_q(x, p)) == OXR_OK && (st = get_q(y, q)) == OXR_OK) {
		if (!mpq_sgn(q)) {
			st = oxr_err(OXR_ERR_INVAL, "div: division by zero");
		} else {
			mpq_div(p, p, q);
			st = from_q(a, p, out);
		}
	}
	mpq_clear(p);
	mpq_clear(q);
	return st;
}

static oxr_status_t arith(const char *name, int argc, oxr_cmo **v, oxr_arena *a, oxr_cmo **out)
{
	static const struct { const char *fn, *op; } binops[] = {
		{ "add", "+" }, { "mul", "*" }, { "max", "max" }, { "min", "min" },
	};
	size_t i;
	oxr_cmo *t;
	oxr_status_t st;

	for (i = 0; i < (size_t)argc; i++)
		if (!is_number(v[i]))
			return oxr_err(OXR_ERR_INVAL, "%s: argument %zu is %s, not a number", name,
				       i + 1, oxr_cmo_tag_name(v[i]->tag) ? oxr_cmo_tag_name(v[i]->tag)
									   : "an unknown tag");
	if (!strcmp(name, "neg"))
		return neg(v[0], a, out);
	if (!strcmp(name, "div"))
		return divide(v[0], v[1], a, out);
	if (!strcmp(name, "sub"))
		return (st = neg(v[1], a, &t)) ? st : oxr_reduce_apply("+", v[0], t, a, out);
	for (i = 0; i < sizeof(binops) / sizeof(binops[0]); i++)
		if (!strcmp(name, binops[i].fn))
			return oxr_reduce_apply(binops[i].op, v[0], v[1], a, out);
	return OXR_ERR_UNSUPPORTED;
}

static oxr_status_t need_list(const char *name, const oxr_cmo *o)
{
	return o->tag == OXR_CMO_LIST ? OXR_OK
				      : oxr_err(OXR_ERR_INVAL, "%s: the argument is not a CMO_LIST",
						name);
}

static oxr_status_t lists(const char *name, int argc, oxr_cmo **v, oxr_arena *a, oxr_cmo **out)
{
	oxr_cmo *l;
	uint32_t i, n;
	long k;
	oxr_status_t st;

	if (!strcmp(name, "list")) {
		if (!(l = oxr_cmo_new_list(a, (uint32_t)argc)))
			return OXR_ERR_NOMEM;
		for (i = 0; i < (uint32_t)argc; i++)
			if ((st = oxr_cmo_copy(a, v[i], &l->kids[i])))
				return st;
		*out = l;
		return OXR_OK;
	}
	if (!strcmp(name, "cons")) {
		if ((st = need_list(name, v[1])) || !(l = oxr_cmo_new_list(a, v[1]->nkids + 1)))
			return st ? st : OXR_ERR_NOMEM;
		if ((st = oxr_cmo_copy(a, v[0], &l->kids[0])))
			return st;
		for (i = 0; i < v[1]->nkids; i++)
			if ((st = oxr_cmo_copy(a, v[1]->kids[i], &l->kids[i + 1])))
				return st;
		*out = l;
		return OXR_OK;
	}
	if (!strcmp(name, "append"))
		return oxr_reduce_apply("append", v[0], v[1], a, out);
	if (!strcmp(name, "length")) {
		if (v[0]->tag != OXR_CMO_LIST && v[0]->tag != OXR_CMO_STRING)
			return oxr_err(OXR_ERR_INVAL, "length: the argument is not a list or a string");
		*out = oxr_cmo_new_zz_si(a, v[0]->tag == OXR_CMO_LIST ? (long)v[0]->nkids
								 : (long)v[0]->len);
		return *out ? OXR_OK : OXR_ERR_NOMEM;
	}
	if ((st = need_list(name, v[0])))
		return st;
	n = v[0]->nkids;
	if (!strcmp(name, "nth")) {
		if (!eng_as_long(v[1], &k) || k < 0 || (unsigned long)k >= n)
			return oxr_err(OXR_ERR_INVAL, "nth: index out of range (the list has %u "
				       "elements, indices from 0)", n);
		return oxr_cmo_copy(a, v[0]->kids[k], out);
	}
	if (!strcmp(name, "first")) {
		if (!n)
			return oxr_err(OXR_ERR_INVAL, "first: the list is empty");
		return oxr_cmo_copy(a, v[0]->kids[0], out);
	}
	/* rest and reverse: a list of the same elements */
	if (!strcmp(name, "rest") && !n)
		return oxr_err(OXR_ERR_INVAL, "rest: the list is empty");
	k = !strcmp(name, "rest");
	if (!(l = oxr_cmo_new_list(a, n - (uint32_t)k)))
		return OXR_ERR_NOMEM;
	for (i = 0; i < l->nkids; i++)
		if ((st = oxr_cmo_copy(a, v[0]->kids[k ? i + 1 : n - 1 - i], &l->kids[i])))
			return st;
	*out = l;
	return OXR_OK;
}

typedef oxr_status_t (*builtin_fn)(const char *, int, oxr_cmo **, oxr_arena *, oxr_cmo **);

static const struct builtin {
	const char *name;
	int min, max; /* argument counts; max -1: any */
	builtin_fn fn;
} builtins[] = {
	{ "add", 2, 2, arith }, { "sub", 2, 2, arith }, { "mul", 2, 2, arith },
	{ "div", 2, 2, arith }, { "neg", 1, 1, arith }, { "max", 2, 2, arith },
	{ "min", 2, 2, arith },
	{ "list", 0, -1, lists }, { "cons", 2, 2, lists }, { "append", 2, 2, lists },
	{ "length", 1, 1, lists }, { "nth", 2, 2, lists }, { "first", 1, 1, lists },
	{ "rest", 1, 1, lists }, { "reverse", 1, 1, lists },
};

oxr_status_t eng_call(oxr_engine *e, const char *name, int argc, oxr_cmo **args,
		      oxr_arena *a, oxr_cmo **out)
{
	size_t i;
	int found = 0;
	oxr_status_t st;

	for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		const struct builtin *b = &builtins[i];
		if (strcmp(name, b->name))
			continue;
		if (argc < b->min || (b->max >= 0 && argc > b->max))
			return oxr_err(OXR_ERR_INVAL, "%s: %d arguments given, it takes %d%s", name,
				       argc, b->min, b->max < 0 ? " or more" : "");
		st = b->fn(name, argc, args, a, out);
		return st == OXR_ERR_NOMEM ? oxr_err(st, "%s: out of memory", name) : st;
	}
	st = eng_group_call(e, name, argc, args, a, out, &found);
	if (found)
		return st;
	return oxr_err(OXR_ERR_INVAL, "no function \"%s\" in oxr-server (built-ins: add sub mul "
		       "div neg max min list cons append length nth first rest reverse, and the "
		       "group calls ox_*_102, oxr_*)", name);
}
