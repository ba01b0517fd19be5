/* SPDX-License-Identifier: MIT */
/*
 * SM_popString's printed form, as a computer-algebra user reads it: numbers
 * in decimal (123, -2/3, 0.5), strings as they are at the top and quoted
 * inside lists, lists as [a,b], 0 for CMO_NULL and CMO_ZERO (asir's view),
 * error([serial,code,"message"]); anything else in oxr's bconv notation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "oxr/cmo_text.h"
#include "oxr_internal.h"

struct sbuf {
	char *p;
	size_t n, cap;
	int failed;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 64) + n;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n) /* an empty string's data may be NULL */
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void puts_(struct sbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void print_rec(struct sbuf *b, const oxr_cmo *o, int top)
{
	char num[64];
	uint32_t i;

	switch (o->tag) {
	case OXR_CMO_NULL:
	case OXR_CMO_ZERO:
		puts_(b, "0");
		return;
	case OXR_CMO_INT32:
		snprintf(num, sizeof(num), "%d", o->v.i32);
		puts_(b, num);
		return;
	case OXR_CMO_IEEE_DOUBLE_FLOAT:
	case OXR_CMO_64BIT_MACHINE_DOUBLE:
		snprintf(num, sizeof(num), "%.17g", o->v.f64);
		puts_(b, num);
		return;
	case OXR_CMO_ZZ:
	case OXR_CMO_QQ: {
		mpq_t q;
		char *s;
		mpq_init(q);
		if (oxr_cmo_get_mpq(o, q) == OXR_OK && (s = mpq_get_str(NULL, 10, q))) {
			puts_(b, s);
			free(s);
		} else {
			b->failed = 1;
		}
		mpq_clear(q);
		return;
	}
	case OXR_CMO_STRING:
		if (!top)
			puts_(b, "\"");
		put(b, (const char *)o->data, o->len);
		if (!top)
			puts_(b, "\"");
		return;
	case OXR_CMO_LIST:
		puts_(b, "[");
		for (i = 0; i < o->nkids; i++) {
			if (i)
				puts_(b, ",");
			print_rec(b, o->kids[i], 0);
		}
		puts_(b, "]");
		return;
	case OXR_CMO_ERROR2:
		puts_(b, "error(");
		print_rec(b, o->kids[0], 0);
		puts_(b, ")");
		return;
	default: {
		char *t;
		size_t n;
		if (oxr_text_print_cmo(o, &t, &n)) {
			b->failed = 1;
			return;
		}
		put(b, t, n);
		free(t);
	}
	}
}

oxr_status_t eng_print(const oxr_cmo *o, char **out)
{
	struct sbuf b = { 0 };

	print_rec(&b, o, 1);
	if (!b.failed && !b.p)
		put(&b, "", 0);
	if (b.failed) {
		free(b.p);
		return oxr_err(OXR_ERR_NOMEM, "popString: out of memory");
	}
	*out = b.p;
	return OXR_OK;
}
