/* SPDX-License-Identifier: MIT */
/*
 * The text notation of ox_toolkit's bconv (include/oxr/cmo_text.h).  Both
 * directions walk the op list of the tag (cmo_spec.c), so no layout is
 * written down here.  An object is "(NAME,part,...)", one part per op:
 *
 *   OP_I32, OP_BARE_I32   int32 in decimal
 *   OP_F64                "%.17g", so it reads back bit for bit
 *   OP_BYTES              ["n",] "quoted": \" \\ \xNN (and \n \t \r on input)
 *   OP_ZZ, OP_BARE_ZZ     signed decimal; a tagged ZZ also reads bconv's raw
 *                         "f,w1,...,w|f|" (words least significant first)
 *   OP_WORDS, OP_DOUBLES  n,x1,...,xn
 *   OP_KID                (object)
 *   OP_COUNT              n; optional on input, checked when given
 *   OP_KIDS               (k1),(k2),...
 *   OP_PAIRS              e1,(c1),e2,(c2),...
 *
 * Text comes from people and from outside: every count is compared with
 * the items that really follow and never sizes an allocation, and nesting
 * stops at OXR_CMO_DEFAULT_MAX_DEPTH, so hostile text cannot take the stack.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/cmo_text.h"
#include "oxr_internal.h"
#include "cmo_spec.h"

#define MAX_DEPTH OXR_CMO_DEFAULT_MAX_DEPTH

/* The part kinds an item loop looks ahead for. */
enum { M_INT, M_KID, M_NUM };

struct parser {
	const char *s;
	size_t len, pos;
	oxr_arena *a;
};

/* An arena array that grows as items arrive; old copies stay in the arena
 * until it is reset, which bounds the waste at the final size. */
struct vec {
	void *v;
	size_t n, cap;
};

static oxr_status_t __attribute__((format(printf, 4, 5)))
perr_at(const struct parser *p, size_t at, oxr_status_t st, const char *fmt, ...)
{
	size_t i, line = 1, col = 1;
	char msg[320];
	va_list ap;

	for (i = 0; i < at && i < p->len; i++) {
		col++;
		if (p->s[i] == '\n') {
			line++;
			col = 1;
		}
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 1)
		return oxr_err(st, "text: line %zu, column %zu: %s%s", line, col, msg,
			       at >= p->len ? " (the text ends here)" : "");
	return oxr_err(st, "text: column %zu: %s%s", col, msg,
		       at >= p->len ? " (the text ends here)" : "");
}

#define perr(p, st, ...) perr_at(p, (p)->pos, st, __VA_ARGS__)

static void *vec_push(oxr_arena *a, struct vec *v, size_t elem)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 4;
		void *nv = oxr_arena_alloc(a, cap * elem);

		if (!nv)
			return NULL;
		if (v->n)
			memcpy(nv, v->v, v->n * elem);
		v->v = nv;
		v->cap = cap;
	}
	return (char *)v->v + elem * v->n++;
}

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Next character after white space, or -1 at the end. */
static int peek(struct parser *p)
{
	while (p->pos < p->len && is_space(p->s[p->pos]))
		p->pos++;
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int accept(struct parser *p, int c)
{
	if (peek(p) != c)
		return 0;
	p->pos++;
	return 1;
}

/* Length of the optionally signed decimal at pos, 0 if there is none. */
static size_t int_len(const struct parser *p)
{
	size_t i = p->pos, d;

	if (i < p->len && (p->s[i] == '-' || p->s[i] == '+'))
		i++;
	for (d = i; i < p->len && isdigit((unsigned char)p->s[i]); i++)
		;
	return i > d ? i - p->pos : 0;
}

/* Whether ',' and then a part of kind m come next; consumes nothing. */
static int more(struct parser *p, int m)
{
	size_t save = p->pos;
	int c, r = 0;

	if (accept(p, ',')) {
		c = peek(p);
		if (m == M_KID)
			r = c == '(';
		else if (m == M_INT)
			r = int_len(p) > 0;
		else
			r = c >= 0 && c != '(' && c != ')' && c != ',';
	}
	p->pos = save;
	return r;
}

static oxr_status_t comma(struct parser *p, const char *what, const char *in)
{
	if (accept(p, ','))
		return OXR_OK;
	return perr(p, OXR_ERR_PROTO, "expected ',' before %s in %s", what, in);
}

static oxr_status_t get_int(struct parser *p, int64_t lo, int64_t hi, const char *what,
			    const char *in, int64_t *v)
{
	size_t n, i;
	const char *t;
	uint64_t u = 0;
	int64_t x;

	peek(p);
	n = int_len(p);
	if (!n)
		return perr(p, OXR_ERR_PROTO, "expected %s in %s", what, in);
	t = p->s + p->pos;
	for (i = *t == '-' || *t == '+'; i < n && u < (1ull << 40); i++)
		u = 10 * u + (uint64_t)(t[i] - '0');
	x = *t == '-' ? -(int64_t)u : (int64_t)u;
	if (i < n || x < lo || x > hi)
		return perr(p, OXR_ERR_PROTO, "%.*s%s is out of range for %s in %s",
			    n > 24 ? 24 : (int)n, t, n > 24 ? "..." : "", what, in);
	p->pos += n;
	*v = x;
	return OXR_OK;
}

static oxr_status_t get_i32(struct parser *p, const char *what, const char *in, int32_t *v)
{
	int64_t x;
	oxr_status_t st = get_int(p, INT32_MIN, INT32_MAX, what, in, &x);

	if (st == OXR_OK)
		*v = (int32_t)x;
	return st;
}

static oxr_status_t get_mpz(struct parser *p, mpz_ptr z, const char *in)
{
	size_t n;
	char *t;

	peek(p);
	n = int_len(p);
	if (!n)
		return perr(p, OXR_ERR_PROTO, "expected an integer in %s", in);
	t = malloc(n + 1);
	if (!t)
		return oxr_err(OXR_ERR_NOMEM, "text: out of memory");
	memcpy(t, p->s + p->pos, n);
	t[n] = '\0';
	mpz_set_str(z, t + (t[0] == '+'), 10);
	free(t);
	p->pos += n;
	return OXR_OK;
}

static int is_numch(int c)
{
	return isalnum(c) || c == '.' || c == '+' || c == '-';
}

static oxr_status_t get_f64(struct parser *p, const char *in, double *v)
{
	char buf[64], *end;
	size_t n = 0;

	peek(p);
	while (p->pos + n < p->len && n < sizeof(buf) - 1 &&
	       is_numch((unsigned char)p->s[p->pos + n])) {
		buf[n] = p->s[p->pos + n];
		n++;
	}
	buf[n] = '\0';
	*v = strtod(buf, &end);
	if (!n || end != buf + n ||
	    (p->pos + n < p->len && is_numch((unsigned char)p->s[p->pos + n])))
		return perr(p, OXR_ERR_PROTO, "expected a double in %s", in);
	p->pos += n;
	return OXR_OK;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* The byte of the escape after a backslash at pos - 1, or -1. */
static int unescape(struct parser *p, size_t end)
{
	const unsigned char *t = (const unsigned char *)p->s + p->pos;
	static const char plain[] = "\"\"\\\\n\nt\tr\r"; /* escape, byte */
	const char *m;

	if (*t == 'x') {
		if (p->pos + 3 > end || !isxdigit(t[1]) || !isxdigit(t[2]))
			return -1;
		p->pos += 3;
		return hexval(t[1]) * 16 + hexval(t[2]);
	}
	for (m = plain; *m; m += 2) {
		if (*t == (unsigned char)m[0]) {
			p->pos++;
			return (unsigned char)m[1];
		}
	}
	return -1;
}

static oxr_status_t get_bytes(struct parser *p, const char *in, uint8_t **data, size_t *len)
{
	size_t i, start, n = 0;
	uint8_t *d;
	int c;

	if (peek(p) != '"')
		return perr(p, OXR_ERR_PROTO, "expected a quoted string in %s", in);
	start = p->pos + 1;
	for (i = start; i < p->len && p->s[i] != '"'; i++)
		if (p->s[i] == '\\')
			i++;
	if (i >= p->len)
		return perr(p, OXR_ERR_PROTO, "unterminated string in %s", in);
	if (i - start > INT32_MAX)
		return perr(p, OXR_ERR_LIMIT, "string too long for a CMO in %s", in);
	/* The bytes are never more than the characters between the quotes. */
	d = oxr_arena_alloc(p->a, i - start + 1);
	if (!d)
		return OXR_ERR_NOMEM;
	for (p->pos = start; p->pos < i; d[n++] = (uint8_t)c) {
		c = (unsigned char)p->s[p->pos++];
		if (c == '\\' && (c = unescape(p, i)) < 0)
			return perr_at(p, p->pos - 1, OXR_ERR_PROTO,
				       "bad escape '\\%c' in %s (use \\\" \\\\ or \\xNN)",
				       p->s[p->pos], in);
	}
	p->pos = i + 1;
	*data = d;
	*len = n;
	return OXR_OK;
}

/* ---- parser --------------------------------------------------------- */

/* One object being parsed. */
struct obj {
	const struct cmo_spec *sp;
	oxr_cmo *o;
	struct vec kids;
	unsigned depth;
};

static oxr_status_t parse_cmo(struct parser *p, unsigned depth, oxr_cmo **out);

static oxr_status_t push_kid(struct parser *p, struct obj *ob, oxr_cmo *k)
{
	oxr_cmo **slot;

	if (!k)
		return OXR_ERR_NOMEM;
	slot = vec_push(p->a, &ob->kids, sizeof(*slot));
	if (!slot)
		return OXR_ERR_NOMEM;
	*slot = k;
	return OXR_OK;
}

static oxr_status_t parse_kid(struct parser *p, struct obj *ob, uint8_t want)
{
	size_t at;
	oxr_cmo *k;
	oxr_status_t st;

	if (peek(p) != '(')
		return perr(p, OXR_ERR_PROTO, "expected '(' of a kid (%s) in %s",
			    oxr_cmo_want_name(want), ob->sp->name);
	at = p->pos;
	st = parse_cmo(p, ob->depth + 1, &k);
	if (st != OXR_OK)
		return st;
	if (!oxr_cmo_want_ok(want, k->tag))
		return perr_at(p, at, OXR_ERR_PROTO, "%s wants %s here, not %s", ob->sp->name,
			       oxr_cmo_want_name(want), oxr_cmo_tag_name(k->tag));
	return push_kid(p, ob, k);
}

static oxr_status_t parse_bare_i32(struct parser *p, struct obj *ob, const char *what)
{
	int32_t v;
	oxr_status_t st = get_i32(p, what, ob->sp->name, &v);

	return st != OXR_OK ? st : push_kid(p, ob, oxr_cmo_new_int32(p->a, v));
}

/* bconv's raw ZZ after its first integer f: ",w1,...,w|f|". */
static oxr_status_t parse_raw_zz(struct parser *p, struct obj *ob, size_t at, mpz_ptr z)
{
	struct vec w = { 0 };
	int64_t x;
	long f;
	uint32_t *slot;
	oxr_status_t st = OXR_OK;

	if (mpz_cmpabs_ui(z, INT32_MAX) > 0)
		return perr_at(p, at, OXR_ERR_PROTO, "word count out of int32 range in %s",
			       ob->sp->name);
	f = mpz_get_si(z);
	while (st == OXR_OK && w.n < (size_t)labs(f)) {
		st = comma(p, "a word", ob->sp->name);
		if (st == OXR_OK)
			st = get_int(p, 0, UINT32_MAX, "a word (0..4294967295)", ob->sp->name, &x);
		if (st == OXR_OK && !(slot = vec_push(p->a, &w, sizeof(*slot))))
			st = OXR_ERR_NOMEM;
		if (st == OXR_OK)
			*slot = (uint32_t)x;
	}
	if (st != OXR_OK)
		return st;
	mpz_import(z, w.n, -1, 4, 0, 0, w.v);
	if (f < 0)
		mpz_neg(z, z);
	return OXR_OK;
}

static oxr_status_t parse_zz(struct parser *p, struct obj *ob, int raw_ok, oxr_cmo **out)
{
	size_t at;
	mpz_t z;
	oxr_status_t st;

	mpz_init(z);
	peek(p);
	at = p->pos;
	st = get_mpz(p, z, ob->sp->name);
	if (st == OXR_OK && raw_ok && more(p, M_INT))
		st = parse_raw_zz(p, ob, at, z);
	if (st == OXR_OK && !(*out = oxr_cmo_new_zz(p->a, z)))
		st = OXR_ERR_NOMEM;
	mpz_clear(z);
	return st;
}

/* Items of a counted op for as long as they come; *n gets how many. */
static oxr_status_t parse_items(struct parser *p, struct obj *ob, const struct cmo_op *op,
				int64_t *n)
{
	int m = op->kind == OP_KIDS ? M_KID : op->kind == OP_DOUBLES ? M_NUM : M_INT;
	size_t elem = op->kind == OP_DOUBLES ? 8 : 4;
	const char *in = ob->sp->name;
	struct vec data = { 0 };
	oxr_status_t st = OXR_OK;
	void *slot;

	for (*n = 0; st == OXR_OK && more(p, m); ++*n) {
		accept(p, ',');
		if (op->kind == OP_KIDS) {
			st = parse_kid(p, ob, op->want);
		} else if (op->kind == OP_PAIRS) {
			st = parse_bare_i32(p, ob, "an exponent");
			if (st == OXR_OK)
				st = comma(p, "a coefficient", in);
			if (st == OXR_OK)
				st = parse_kid(p, ob, op->want);
		} else if (!(slot = vec_push(p->a, &data, elem))) {
			st = OXR_ERR_NOMEM;
		} else if (op->kind == OP_DOUBLES) {
			st = get_f64(p, in, slot);
		} else {
			st = get_i32(p, "an int32", in, slot);
		}
	}
	if (op->kind == OP_WORDS || op->kind == OP_DOUBLES) {
		ob->o->data = data.v;
		ob->o->len = data.n * elem;
	}
	return st;
}

static oxr_status_t check_count(struct parser *p, struct obj *ob, int64_t count,
				size_t at, int64_t n)
{
	if (count < 0 || count == n)
		return OXR_OK;
	return perr_at(p, at, OXR_ERR_PROTO, "count %" PRId64 " does not match the %" PRId64
		       " that follow in %s", count, n, ob->sp->name);
}

/* An optional count, or one an op requires (WORDS, DOUBLES). */
static oxr_status_t parse_count(struct parser *p, struct obj *ob, int required,
				int64_t *count, size_t *at)
{
	oxr_status_t st;

	*count = -1;
	if (!required && !more(p, M_INT))
		return OXR_OK;
	st = comma(p, "a count", ob->sp->name);
	if (st != OXR_OK)
		return st;
	peek(p);
	*at = p->pos;
	return get_int(p, 0, INT32_MAX, "a count", ob->sp->name, count);
}

static oxr_status_t parse_bytes(struct parser *p, struct obj *ob)
{
	int64_t count = -1;
	size_t at = 0, len = 0;
	uint8_t *d = NULL;
	oxr_status_t st = comma(p, "a string", ob->sp->name);

	peek(p);
	if (st == OXR_OK && int_len(p)) {
		at = p->pos;
		st = get_int(p, 0, INT32_MAX, "a count", ob->sp->name, &count);
		if (st == OXR_OK)
			st = comma(p, "a string", ob->sp->name);
	}
	if (st == OXR_OK)
		st = get_bytes(p, ob->sp->name, &d, &len);
	if (st != OXR_OK)
		return st;
	ob->o->data = d;
	ob->o->len = len;
	return check_count(p, ob, count, at, (int64_t)len);
}

static oxr_status_t parse_op(struct parser *p, struct obj *ob, const struct cmo_op *op,
			     int64_t *count, size_t *count_at)
{
	const char *in = ob->sp->name;
	oxr_status_t st = OXR_OK;
	int64_t n, own;
	size_t own_at;
	oxr_cmo *z;

	switch (op->kind) {
	case OP_COUNT:
		return parse_count(p, ob, 0, count, count_at);
	case OP_BYTES:
		return parse_bytes(p, ob);
	case OP_WORDS:
	case OP_DOUBLES:
		/* their own count, not the object's OP_COUNT */
		count = &own;
		count_at = &own_at;
		st = parse_count(p, ob, 1, count, count_at);
		/* fall through */
	case OP_KIDS:
	case OP_PAIRS:
		if (st == OXR_OK)
			st = parse_items(p, ob, op, &n);
		return st != OXR_OK ? st : check_count(p, ob, *count, *count_at, n);
	}
	st = comma(p, op->kind == OP_KID ? "a kid" : op->kind == OP_F64 ? "a double" :
		   "an integer", in);
	if (st != OXR_OK)
		return st;
	switch (op->kind) {
	case OP_I32:
		return get_i32(p, "an int32", in, &ob->o->v.i32);
	case OP_F64:
		return get_f64(p, in, &ob->o->v.f64);
	case OP_BARE_I32:
		return parse_bare_i32(p, ob, "an int32");
	case OP_KID:
		return parse_kid(p, ob, op->want);
	case OP_ZZ:
	case OP_BARE_ZZ:
		st = parse_zz(p, ob, op->kind == OP_ZZ, &z);
		if (st == OXR_OK && op->kind == OP_ZZ)
			*ob->o = *z;
		else if (st == OXR_OK)
			st = push_kid(p, ob, z);
		return st;
	}
	return oxr_err(OXR_ERR_INVAL, "text: %s: op %d unknown to the text notation", in, op->kind);
}

/* Whether the last part of a tag may be followed by more (for the message). */
static int open_tail(const struct cmo_spec *sp)
{
	int i, k = OP_END;

	for (i = 0; i < CMO_MAX_OPS && sp->ops[i].kind != OP_END; i++)
		k = sp->ops[i].kind;
	return k == OP_KIDS || k == OP_PAIRS || k == OP_WORDS || k == OP_DOUBLES || k == OP_ZZ;
}

static oxr_status_t get_name(struct parser *p, const char **name, size_t *n)
{
	size_t i;

	peek(p);
	for (i = p->pos; i < p->len && (isalnum((unsigned char)p->s[i]) || p->s[i] == '_'); i++)
		;
	if (i == p->pos || isdigit((unsigned char)p->s[p->pos]))
		return perr(p, OXR_ERR_PROTO, "expected a name (CMO_..., OX_...) after '('");
	*name = p->s + p->pos;
	*n = i - p->pos;
	p->pos = i;
	return OXR_OK;
}

static oxr_status_t close_paren(struct parser *p, const char *in, int open)
{
	if (accept(p, ')'))
		return OXR_OK;
	return perr(p, OXR_ERR_PROTO, open ? "expected ',' or ')' in %s" : "expected ')' to end %s",
		    in);
}

static oxr_status_t unknown_name(struct parser *p, const char *name, size_t n)
{
	return perr_at(p, (size_t)(name - p->s), OXR_ERR_PROTO, "unknown name '%.*s'",
		       n > 40 ? 40 : (int)n, name);
}

/* An object at '(': the nesting is checked before anything below is read. */
static oxr_status_t parse_cmo(struct parser *p, unsigned depth, oxr_cmo **out)
{
	struct obj ob = { .depth = depth };
	const struct cmo_op *op;
	int64_t count = -1;
	size_t count_at = 0, at;
	const char *name;
	size_t n;
	oxr_status_t st;

	peek(p);
	at = p->pos;
	if (!accept(p, '('))
		return perr(p, OXR_ERR_PROTO, "expected '('");
	st = get_name(p, &name, &n);
	if (st != OXR_OK)
		return st;
	ob.sp = oxr_cmo_spec(oxr_cmo_tag_of(name, n));
	if (!ob.sp)
		return unknown_name(p, name, n);
	/* Counted as the decoder counts: objects with a body. */
	if (depth > MAX_DEPTH && ob.sp->ops[0].kind != OP_END)
		return perr_at(p, at, OXR_ERR_LIMIT, "objects nested deeper than %u", MAX_DEPTH);
	ob.o = oxr_cmo_new_node(p->a, ob.sp->tag, 0);
	if (!ob.o)
		return OXR_ERR_NOMEM;
	for (op = ob.sp->ops; op < ob.sp->ops + CMO_MAX_OPS && op->kind != OP_END; op++) {
		st = parse_op(p, &ob, op, &count, &count_at);
		if (st != OXR_OK)
			return st;
	}
	st = close_paren(p, ob.sp->name, open_tail(ob.sp));
	if (st != OXR_OK)
		return st;
	ob.o->kids = ob.kids.v;
	ob.o->nkids = (uint32_t)ob.kids.n;
	if (ob.o->tag == OXR_CMO_QQ && ob.o->kids[1]->v.i32 == 0)
		return perr_at(p, at, OXR_ERR_PROTO, "CMO_QQ with denominator 0");
	*out = ob.o;
	return OXR_OK;
}

static oxr_status_t parse_sm(struct parser *p, const char *in, int32_t *sm)
{
	const char *name;
	size_t n;
	oxr_status_t st;

	if (!accept(p, '('))
		return perr(p, OXR_ERR_PROTO, "expected '(' of an SM command in %s", in);
	peek(p);
	if (int_len(p)) {
		st = get_i32(p, "an SM code", in, sm);
	} else {
		st = get_name(p, &name, &n);
		if (st == OXR_OK && (*sm = oxr_sm_of(name, n)) < 0)
			st = unknown_name(p, name, n);
	}
	return st != OXR_OK ? st : close_paren(p, "the SM command", 0);
}

static oxr_status_t parse_frame(struct parser *p, int32_t tag, const char *in, oxr_ox_msg *m)
{
	struct obj ob = { .sp = &(struct cmo_spec){ .name = in } };
	oxr_status_t st = OXR_OK;

	memset(m, 0, sizeof(*m));
	m->tag = tag;
	switch (tag) {
	case OXR_OX_DATA:
		st = comma(p, "a CMO", in);
		if (st == OXR_OK)
			st = parse_kid(p, &ob, W_ANY);
		if (st == OXR_OK)
			m->cmo = *(oxr_cmo **)ob.kids.v;
		break;
	case OXR_OX_COMMAND:
		st = comma(p, "an SM command", in);
		if (st == OXR_OK)
			st = parse_sm(p, in, &m->sm);
		break;
	case OXR_OX_SYNC_BALL:
		break;
	default:
		return perr(p, OXR_ERR_PROTO, "%s has no text form", in);
	}
	return st != OXR_OK ? st : close_paren(p, in, 0);
}

oxr_status_t oxr_text_parse(const char *s, size_t len, oxr_arena *a, oxr_text_item *out,
			    size_t *used)
{
	struct parser p = { .s = s, .len = len, .a = a };
	oxr_text_item it = { 0 };
	const char *name;
	size_t n;
	int32_t ox;
	oxr_status_t st;

	if ((!s && len) || !a || !out)
		return oxr_err(OXR_ERR_INVAL, "oxr_text_parse: NULL argument");
	if (peek(&p) != '(')
		return perr(&p, OXR_ERR_PROTO, "expected '('");
	/* An OX name makes a frame; anything else is left to the CMO parser. */
	p.pos++;
	st = get_name(&p, &name, &n);
	ox = st == OXR_OK && (n < 4 || memcmp(name, "CMO_", 4)) ? oxr_ox_tag_of(name, n) : 0;
	if (ox > 0) {
		it.is_frame = 1;
		st = parse_frame(&p, ox, oxr_ox_tag_name(ox), &it.msg);
	} else {
		p.pos = 0;
		peek(&p);
		st = parse_cmo(&p, 1, &it.msg.cmo);
	}
	if (st != OXR_OK)
		return st;
	*out = it;
	if (used)
		*used = p.pos;
	return OXR_OK;
}

/* ---- printer -------------------------------------------------------- */

/* A growing malloc'ed string; the first failure sticks in st. */
struct out {
	char *b;
	size_t n, cap;
	oxr_status_t st;
};

/* Room for n more bytes and the NUL. */
static char *reserve(struct out *o, size_t n)
{
	size_t cap;
	char *nb;

	if (o->st != OXR_OK)
		return NULL;
	if (o->cap - o->n > n)
		return o->b + o->n;
	for (cap = o->cap ? o->cap : 256; cap - o->n <= n; cap *= 2)
		;
	nb = realloc(o->b, cap);
	if (!nb) {
		o->st = oxr_err(OXR_ERR_NOMEM, "text: out of memory");
		return NULL;
	}
	o->b = nb;
	o->cap = cap;
	return o->b + o->n;
}

static void __attribute__((format(printf, 2, 3))) put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *d;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	d = reserve(o, (size_t)n);
	if (!d)
		return;
	va_start(ap, fmt);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->n += (size_t)n;
}

static void put_bytes(struct out *o, const uint8_t *p, size_t len)
{
	char *d = reserve(o, 4 * len + 2), *d0 = d;
	size_t i;

	if (!d)
		return;
	*d++ = '"';
	for (i = 0; i < len; i++) {
		if (p[i] == '"' || p[i] == '\\')
			*d++ = '\\';
		if (p[i] >= 0x20 && p[i] < 0x7f)
			*d++ = (char)p[i];
		else
			d += sprintf(d, "\\x%02x", p[i]);
	}
	*d++ = '"';
	*d = '\0';
	o->n += (size_t)(d - d0);
}

static oxr_status_t put_zz(struct out *o, const oxr_cmo *z)
{
	mpz_t v;
	char *d;

	if (!z || z->tag != OXR_CMO_ZZ || (size_t)llabs(z->v.i32) * 4 != z->len ||
	    (z->len && !z->data))
		return oxr_err(OXR_ERR_INVAL, "text: a malformed CMO_ZZ cannot be printed");
	mpz_init(v);
	oxr_cmo_get_mpz(z, v);
	d = reserve(o, mpz_sizeinbase(v, 10) + 1);
	if (d) {
		mpz_get_str(d, 10, v);
		o->n += strlen(d);
	}
	mpz_clear(v);
	return OXR_OK;
}

static oxr_status_t put_i32_kid(struct out *o, const oxr_cmo *k)
{
	if (!k || k->tag != OXR_CMO_INT32)
		return oxr_err(OXR_ERR_INVAL,
			       "text: an untagged int32 slot does not hold a CMO_INT32");
	put(o, "%" PRId32, k->v.i32);
	return OXR_OK;
}

/* Items an OP_COUNT counts, from nkids and the layout; -1 if they do not fit. */
static int64_t counted(const struct cmo_spec *sp, const oxr_cmo *c)
{
	uint8_t op = oxr_cmo_counted_op(sp);
	uint32_t per = op == OP_PAIRS ? 2 : op == OP_KIDS ? 1 : 0, extra;

	if (c->nkids < sp->fixed_kids || (c->nkids && !c->kids))
		return -1;
	extra = c->nkids - sp->fixed_kids;
	if (!per)
		return extra ? -1 : 0;
	return extra % per ? -1 : (int64_t)(extra / per);
}

static oxr_status_t print_obj(struct out *o, const oxr_cmo *c, unsigned depth);

static oxr_status_t print_kid(struct out *o, const oxr_cmo *c, const oxr_cmo *k, uint8_t want,
			      unsigned depth)
{
	const char *name = k ? oxr_cmo_tag_name(k->tag) : NULL;

	if (k && !oxr_cmo_want_ok(want, k->tag))
		return oxr_err(OXR_ERR_INVAL, "text: %s holds %s where it wants %s",
			       oxr_cmo_tag_name(c->tag), name ? name : "an unknown tag",
			       oxr_cmo_want_name(want));
	return print_obj(o, k, depth + 1);
}

static oxr_status_t print_op(struct out *o, const oxr_cmo *c, const struct cmo_op *op,
			     int64_t count, uint32_t *k, unsigned depth)
{
	oxr_status_t st = OXR_OK;
	size_t i, elem = op->kind == OP_DOUBLES ? 8 : 4;

	if (op->kind != OP_KIDS && op->kind != OP_PAIRS)
		put(o, ",");
	switch (op->kind) {
	case OP_I32: put(o, "%" PRId32, c->v.i32); break;
	case OP_F64: put(o, "%.17g", c->v.f64); break;
	case OP_BYTES: put_bytes(o, c->data, c->len); break;
	case OP_ZZ: return put_zz(o, c);
	case OP_BARE_ZZ: return put_zz(o, c->kids[(*k)++]);
	case OP_BARE_I32: return put_i32_kid(o, c->kids[(*k)++]);
	case OP_COUNT: put(o, "%" PRId64, count); break;
	case OP_KID: return print_kid(o, c, c->kids[(*k)++], op->want, depth);
	case OP_WORDS:
	case OP_DOUBLES:
		if (c->len % elem || (c->len && !c->data))
			return oxr_err(OXR_ERR_INVAL, "text: %s payload of %zu bytes is not whole",
				       oxr_cmo_tag_name(c->tag), c->len);
		put(o, "%zu", c->len / elem);
		for (i = 0; i < c->len / elem; i++) {
			if (op->kind == OP_WORDS)
				put(o, ",%" PRId32, oxr_cmo_word(c, i));
			else
				put(o, ",%.17g", oxr_cmo_double_at(c, i));
		}
		break;
	case OP_KIDS:
	case OP_PAIRS:
		for (i = 0; st == OXR_OK && i < (size_t)count; i++) {
			put(o, ",");
			if (op->kind == OP_PAIRS) {
				st = put_i32_kid(o, c->kids[(*k)++]);
				put(o, ",");
			}
			if (st == OXR_OK)
				st = print_kid(o, c, c->kids[(*k)++], op->want, depth);
		}
		break;
	}
	return st;
}

static oxr_status_t print_obj(struct out *o, const oxr_cmo *c, unsigned depth)
{
	const struct cmo_spec *sp;
	const struct cmo_op *op;
	int64_t count;
	uint32_t k = 0;
	oxr_status_t st = OXR_OK;

	if (!c)
		return oxr_err(OXR_ERR_INVAL, "text: an unset (NULL) object cannot be printed");
	sp = oxr_cmo_spec(c->tag);
	if (!sp)
		return oxr_err(OXR_ERR_INVAL, "text: CMO tag %" PRId32 " has no text form", c->tag);
	/* A cycle built by hand ends here too. */
	if (depth > MAX_DEPTH && sp->ops[0].kind != OP_END)
		return oxr_err(OXR_ERR_LIMIT, "text: objects nested deeper than %u", MAX_DEPTH);
	count = counted(sp, c);
	if (count < 0)
		return oxr_err(OXR_ERR_INVAL, "text: %s with %" PRIu32
			       " kids does not fit its layout", sp->name, c->nkids);
	put(o, "(%s", sp->name);
	for (op = sp->ops; st == OXR_OK && op < sp->ops + CMO_MAX_OPS && op->kind != OP_END; op++)
		st = print_op(o, c, op, count, &k, depth);
	put(o, ")");
	return st;
}

static oxr_status_t finish(struct out *o, oxr_status_t st, char **out, size_t *len)
{
	if (st == OXR_OK)
		st = o->st;
	if (st != OXR_OK) {
		free(o->b);
		return st;
	}
	*out = o->b;
	if (len)
		*len = o->n;
	return OXR_OK;
}

oxr_status_t oxr_text_print_cmo(const oxr_cmo *c, char **out, size_t *len)
{
	struct out o = { 0 };

	if (!out)
		return oxr_err(OXR_ERR_INVAL, "oxr_text_print_cmo: NULL out");
	return finish(&o, print_obj(&o, c, 1), out, len);
}

oxr_status_t oxr_text_print_msg(const oxr_ox_msg *m, char **out, size_t *len)
{
	struct out o = { 0 };
	const char *sm;
	oxr_status_t st = OXR_OK;

	if (!m || !out)
		return oxr_err(OXR_ERR_INVAL, "oxr_text_print_msg: NULL argument");
	put(&o, "(%s", oxr_ox_tag_name(m->tag) ? oxr_ox_tag_name(m->tag) : "?");
	switch (m->tag) {
	case OXR_OX_DATA:
		put(&o, ",");
		st = print_obj(&o, m->cmo, 1);
		break;
	case OXR_OX_COMMAND:
		sm = oxr_sm_name(m->sm);
		if (sm)
			put(&o, ",(%s)", sm);
		else
			put(&o, ",(%" PRId32 ")", m->sm);
		break;
	case OXR_OX_SYNC_BALL:
		break;
	default:
		st = oxr_err(OXR_ERR_INVAL, "text: OX tag %" PRId32 " has no text form", m->tag);
	}
	put(&o, ")");
	return finish(&o, st, out, len);
}
