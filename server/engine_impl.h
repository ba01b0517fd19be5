/* SPDX-License-Identifier: MIT */
/* The insides of the OX engine, shared by server/ files. */
#ifndef OXR_ENGINE_IMPL_H
#define OXR_ENGINE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/barrier.h"
#include "oxr/server.h"

/* One stack entry or name binding: the object and the arena it lives in
 * (NULL for the shared singletons). */
struct sitem {
	oxr_cmo *o;
	oxr_arena *a;
};

struct binding {
	char *name;
	struct sitem v;
};

struct oxr_engine {
	oxr_ctx *ctx;
	int own_ctx;
	unsigned flags;
	int wfd, order;
	int32_t serial;     /* of our replies */
	int32_t cur_serial; /* of the message being run (named in errors) */
	int finished;
	int flushing;       /* after a reset: drop all until the master's ball */
	volatile sig_atomic_t reset_req;

	struct sitem *stack;
	size_t sp, cap, max_depth;
	struct binding *names;
	size_t nnames;

	oxr_arena *peer_mc_arena; /* the master's mathcap (SM_setMathcap) */
	oxr_cmo *peer_mc;

	oxr_cmo_limits lim;
	oxr_decoder *dec;
	oxr_arena *dec_arena;

	/* RFC-102 */
	oxr_group *g;
	oxr_barrier_t *barrier;
	uint8_t token[32];
	int have_token;
	uint8_t *plain;     /* [nserver]: peers that are plain OpenXM engines (oxr_plain_102) */
	int nplain;
	int timeout_ms;
};

/* stack.c */
oxr_status_t eng_push(oxr_engine *e, oxr_cmo *o, oxr_arena *a);
/* Pushes a copy of o in a new arena. */
oxr_status_t eng_push_copy(oxr_engine *e, const oxr_cmo *o);
/* Pops the top; the caller owns *it (eng_item_free).  Empty: an error. */
oxr_status_t eng_pop(oxr_engine *e, struct sitem *it, const char *what);
void eng_item_free(struct sitem *it);
/* Pops the n arguments of a command, it[0] the top, before any of them is
 * looked at, so that a bad one still consumes them all. */
oxr_status_t eng_pop_n(oxr_engine *e, size_t n, struct sitem *it, const char *what);
void eng_items_free(struct sitem *it, size_t n);
/* An integer argument: ZZ or INT32 in int range, or NULL/ZERO (= 0). */
oxr_status_t eng_int_of(const oxr_cmo *o, long *v, const char *what);
/* A String argument, as a malloc'ed NUL-terminated copy. */
oxr_status_t eng_str_of(const oxr_cmo *o, char **s, const char *what);
/* Pops an integer argument: ZZ or INT32 in int range, or NULL/ZERO (= 0). */
oxr_status_t eng_pop_int(oxr_engine *e, long *v, const char *what);
/* Pops a String argument into a malloc'ed NUL-terminated copy. */
oxr_status_t eng_pop_string(oxr_engine *e, char **s, const char *what);
/* Pushes CMO_ERROR2 [serial, code, message] for status st; returns OXR_OK
 * unless even that fails (out of memory). */
oxr_status_t eng_push_error(oxr_engine *e, oxr_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
oxr_status_t eng_bind(oxr_engine *e, char *name, struct sitem v);
const struct binding *eng_lookup(const oxr_engine *e, const char *name);
void eng_stack_free(oxr_engine *e);
int eng_as_long(const oxr_cmo *o, long *v);

/* print.c: SM_popString's printed form, malloc'ed. */
oxr_status_t eng_print(const oxr_cmo *o, char **out);

/* mathcap.c: 1 if every tag in o is one the master's mathcap accepts. */
int eng_mathcap_allows(const oxr_engine *e, const oxr_cmo *o);

/* functions.c: SM_executeFunction's built-ins.  args[0] is the first
 * argument; the result goes into a. */
oxr_status_t eng_call(oxr_engine *e, const char *name, int argc, oxr_cmo **args,
		      oxr_arena *a, oxr_cmo **out);

/* sm_102.c: the RFC-102 commands and the group calls of the built-ins. */
oxr_status_t eng_sm_102(oxr_engine *e, int32_t sm);
oxr_status_t eng_group_call(oxr_engine *e, const char *name, int argc, oxr_cmo **args,
			    oxr_arena *a, oxr_cmo **out, int *found);
void eng_group_free(oxr_engine *e);

/* engine.c: writes one OX message to the master. */
oxr_status_t eng_reply(oxr_engine *e, int32_t tag, const oxr_cmo *o);

#endif
