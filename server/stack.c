/* SPDX-License-Identifier: MIT */
/*
 * The engine's operand stack and name table.  Every entry owns the arena
 * its object lives in, so popping one frees exactly its memory and a long
 * session never grows; the depth is bounded (OXR_SERVER_MAX_STACK) so a
 * master pushing without end gets errors, not an out-of-memory kill.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "oxr_internal.h"

void eng_item_free(struct sitem *it)
{
	if (it->a)
		oxr_arena_destroy(it->a);
	it->a = NULL;
	it->o = NULL;
}

oxr_status_t eng_push(oxr_engine *e, oxr_cmo *o, oxr_arena *a)
{
	if (e->sp == e->max_depth) {
		if (a)
			oxr_arena_destroy(a);
		return oxr_err(OXR_ERR_LIMIT, "the stack holds %zu objects already "
			       "(OXR_SERVER_MAX_STACK); pop some first", e->max_depth);
	}
	if (e->sp == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		struct sitem *s;
		if (cap > e->max_depth)
			cap = e->max_depth;
		if (!(s = realloc(e->stack, cap * sizeof(*s)))) {
			if (a)
				oxr_arena_destroy(a);
			return oxr_err(OXR_ERR_NOMEM, "stack: out of memory");
		}
		e->stack = s;
		e->cap = cap;
	}
	e->stack[e->sp].o = o;
	e->stack[e->sp].a = a;
	e->sp++;
	return OXR_OK;
}

oxr_status_t eng_push_copy(oxr_engine *e, const oxr_cmo *o)
{
	oxr_arena *a;
	oxr_cmo *c;
	oxr_status_t st;

	if ((st = oxr_arena_create(&a)))
		return st;
	if ((st = oxr_cmo_copy(a, o, &c))) {
		oxr_arena_destroy(a);
		return st;
	}
	return eng_push(e, c, a);
}

oxr_status_t eng_pop(oxr_engine *e, struct sitem *it, const char *what)
{
	if (!e->sp)
		return oxr_err(OXR_ERR_INVAL, "%s: the stack is empty", what);
	*it = e->stack[--e->sp];
	return OXR_OK;
}

int eng_as_long(const oxr_cmo *o, long *v)
{
	mpz_t z;
	int ok;

	switch (o->tag) {
	case OXR_CMO_NULL:
	case OXR_CMO_ZERO:
		*v = 0;
		return 1;
	case OXR_CMO_INT32:
		*v = o->v.i32;
		return 1;
	case OXR_CMO_ZZ:
		/* a ZZ of more than two words is out of range whatever it holds */
		if (o->v.i32 > 2 || o->v.i32 < -2)
			return 0;
		mpz_init(z);
		ok = oxr_cmo_get_mpz(o, z) == OXR_OK && mpz_fits_slong_p(z);
		if (ok)
			*v = mpz_get_si(z);
		mpz_clear(z);
		return ok;
	default:
		return 0;
	}
}

oxr_status_t eng_int_of(const oxr_cmo *o, long *v, const char *what)
{
	const char *n = oxr_cmo_tag_name(o->tag);

	if (eng_as_long(o, v) && *v >= -2147483647L - 1 && *v <= 2147483647L)
		return OXR_OK;
	return oxr_err(OXR_ERR_INVAL, "%s: expected an integer (CMO_ZZ, CMO_INT32 or CMO_NULL), "
		       "got %s%s", what, n ? n : "an unknown tag",
		       o->tag == OXR_CMO_ZZ ? " out of range" : "");
}

oxr_status_t eng_str_of(const oxr_cmo *o, char **s, const char *what)
{
	const char *n = oxr_cmo_tag_name(o->tag);

	if (o->tag != OXR_CMO_STRING)
		return oxr_err(OXR_ERR_INVAL, "%s: expected a CMO_STRING, got %s", what,
			       n ? n : "an unknown tag");
	/* an empty string's data may be NULL, which memchr and memcpy must not see */
	if (o->len && memchr(o->data, 0, o->len))
		return oxr_err(OXR_ERR_INVAL, "%s: the string holds a NUL byte", what);
	if (!(*s = malloc(o->len + 1)))
		return oxr_err(OXR_ERR_NOMEM, "%s: out of memory", what);
	if (o->len)
		memcpy(*s, o->data, o->len);
	(*s)[o->len] = 0;
	return OXR_OK;
}

oxr_status_t eng_pop_n(oxr_engine *e, size_t n, struct sitem *it, const char *what)
{
	size_t i;

	if (e->sp < n) {
		/* what is there goes too: the command consumed its arguments */
		while (e->sp)
			eng_item_free(&e->stack[--e->sp]);
		return oxr_err(OXR_ERR_INVAL, "%s: %zu arguments needed, the stack held fewer", what,
			       n);
	}
	for (i = 0; i < n; i++)
		it[i] = e->stack[--e->sp];
	return OXR_OK;
}

void eng_items_free(struct sitem *it, size_t n)
{
	while (n)
		eng_item_free(&it[--n]);
}

oxr_status_t eng_pop_int(oxr_engine *e, long *v, const char *what)
{
	struct sitem it = {0}; /* eng_pop fills it when st is OXR_OK */
	oxr_status_t st = eng_pop(e, &it, what);

	if (st)
		return st;
	st = eng_int_of(it.o, v, what);
	eng_item_free(&it);
	return st;
}

oxr_status_t eng_pop_string(oxr_engine *e, char **s, const char *what)
{
	struct sitem it = {0}; /* eng_pop fills it when st is OXR_OK */
	oxr_status_t st = eng_pop(e, &it, what);

	if (st)
		return st;
	st = eng_str_of(it.o, s, what);
	eng_item_free(&it);
	return st;
}

oxr_status_t eng_push_error(oxr_engine *e, oxr_status_t st, const char *fmt, ...)
{
	char msg[1024];
	oxr_arena *a;
	oxr_cmo *err, *l;
	va_list ap;
	oxr_status_t s2;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((s2 = oxr_arena_create(&a)))
		return s2;
	l = oxr_cmo_new_list(a, 3);
	err = oxr_cmo_new_node(a, OXR_CMO_ERROR2, 1);
	if (!l || !err || !(l->kids[0] = oxr_cmo_new_int32(a, e->cur_serial)) ||
	    !(l->kids[1] = oxr_cmo_new_int32(a, st)) || !(l->kids[2] = oxr_cmo_new_string(a, msg))) {
		oxr_arena_destroy(a);
		return oxr_err(OXR_ERR_NOMEM, "error object: out of memory");
	}
	err->kids[0] = l;
	/* an error must get onto a full stack too, or the master never hears
	 * of it: it takes the place of the top */
	if (e->sp == e->max_depth) {
		e->sp--;
		eng_item_free(&e->stack[e->sp]);
	}
	return eng_push(e, err, a);
}

oxr_status_t eng_bind(oxr_engine *e, char *name, struct sitem v)
{
	struct binding *b;
	size_t i;

	for (i = 0; i < e->nnames; i++)
		if (!strcmp(e->names[i].name, name)) {
			free(name);
			eng_item_free(&e->names[i].v);
			e->names[i].v = v;
			return OXR_OK;
		}
	if (e->nnames == e->max_depth || !(b = realloc(e->names, (e->nnames + 1) * sizeof(*b)))) {
		free(name);
		eng_item_free(&v);
		return oxr_err(OXR_ERR_LIMIT, "setName: no room for another name (%zu bound)",
			       e->nnames);
	}
	e->names = b;
	b[e->nnames].name = name;
	b[e->nnames].v = v;
	e->nnames++;
	return OXR_OK;
}

const struct binding *eng_lookup(const oxr_engine *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->nnames; i++)
		if (!strcmp(e->names[i].name, name))
			return &e->names[i];
	return NULL;
}

void eng_stack_free(oxr_engine *e)
{
	size_t i;

	for (i = 0; i < e->sp; i++)
		eng_item_free(&e->stack[i]);
	free(e->stack);
	for (i = 0; i < e->nnames; i++) {
		free(e->names[i].name);
		eng_item_free(&e->names[i].v);
	}
	free(e->names);
	e->stack = NULL;
	e->names = NULL;
	e->sp = e->cap = e->nnames = 0;
}
