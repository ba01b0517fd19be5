/* SPDX-License-Identifier: MIT */
/*
 * The OX engine's input path and its RFC-100 commands.  Messages from the
 * master are framed by the incremental decoder (so a frame may arrive in
 * pieces of any size, and every length in it is checked against the
 * limits before anything is allocated); OX_DATA objects go on the stack
 * in the arena they were decoded into; commands run at once.
 *
 * Invariant: a command either does what it says or leaves exactly one
 * CMO_ERROR2 on the stack (its arguments consumed), and the engine then
 * reads the next message; only a stream that cannot be framed any more
 * ends the session.  Replies go out only for SM_popCMO, SM_popString and a
 * reset, so the master always knows how many messages to read.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_impl.h"
#include "ox_write.h"
#include "oxr_internal.h"

oxr_status_t oxr_engine_create(oxr_ctx *ctx, int wfd, int order, unsigned flags,
			       oxr_engine **out)
{
	oxr_engine *e;
	oxr_ctx_params env;
	const oxr_ctx_params *p = &env;
	oxr_status_t st;

	/* the context's knobs; without one, the environment's */
	if (ctx)
		p = oxr_ctx_get_params(ctx);
	else if ((st = oxr_ctx_params_read(OXR_CTX_PARAM_SERVER_MAX_STACK |
					   OXR_CTX_PARAM_SERVER_TIMEOUT_MS |
					   OXR_CTX_PARAM_CMO_LIMITS, &env)))
		return st;
	if (!(e = calloc(1, sizeof(*e))))
		return oxr_err(OXR_ERR_NOMEM, "engine: out of memory");
	e->ctx = ctx;
	e->wfd = wfd;
	e->order = order;
	e->flags = flags;
	e->max_depth = (size_t)p->server_max_stack;
	e->timeout_ms = (int)p->server_timeout_ms;
	oxr_cmo_limits_from_params(p, &e->lim);
	if ((st = oxr_arena_create(&e->dec_arena)) ||
	    (st = oxr_decoder_create(&e->dec, OXR_DECODE_OX, order, &e->lim, e->dec_arena))) {
		oxr_engine_destroy(e);
		return st;
	}
	if (ctx)
		oxr_ctx_set_interrupt(ctx, &e->reset_req);
	*out = e;
	return OXR_OK;
}

void oxr_engine_destroy(oxr_engine *e)
{
	if (!e)
		return;
	eng_group_free(e);
	eng_stack_free(e);
	if (e->peer_mc_arena)
		oxr_arena_destroy(e->peer_mc_arena);
	oxr_decoder_destroy(e->dec);
	if (e->dec_arena)
		oxr_arena_destroy(e->dec_arena);
	if (e->ctx && e->own_ctx)
		oxr_ctx_destroy(e->ctx);
	free(e);
}

int oxr_engine_finished(const oxr_engine *e)
{
	return e->finished;
}

volatile sig_atomic_t *oxr_engine_reset_flag(oxr_engine *e)
{
	return &e->reset_req;
}

size_t oxr_engine_depth(const oxr_engine *e)
{
	return e->sp;
}

const oxr_cmo *oxr_engine_peek(const oxr_engine *e, size_t i)
{
	return i < e->sp ? e->stack[e->sp - 1 - i].o : NULL;
}

oxr_status_t eng_reply(oxr_engine *e, int32_t tag, const oxr_cmo *o)
{
	oxr_ox_msg m = { .tag = tag, .serial = e->serial++, .cmo = (oxr_cmo *)o };

	return oxr_ox_write(e->wfd, &m, e->order, "the master");
}

/* ---- the RFC-100 commands ----------------------------------------- */

/* Sends the top of the stack, or the error that stands for it: a master
 * waiting for a reply always gets one. */
static oxr_status_t sm_pop_reply(oxr_engine *e, int as_string)
{
	struct sitem it;
	oxr_status_t st = eng_pop(e, &it, as_string ? "SM_popString" : "SM_popCMO");
	char *s = NULL;

	if (st == OXR_OK && as_string && (st = eng_print(it.o, &s)) == OXR_OK) {
		oxr_arena *a;
		oxr_cmo *str;
		eng_item_free(&it);
		if ((st = oxr_arena_create(&a)) == OXR_OK) {
			if ((str = oxr_cmo_new_string(a, s)))
				it = (struct sitem){ str, a };
			else
				oxr_arena_destroy(a), st = OXR_ERR_NOMEM;
		}
		free(s);
	}
	if (st == OXR_OK && !eng_mathcap_allows(e, it.o)) {
		eng_item_free(&it);
		st = oxr_err(OXR_ERR_UNSUPPORTED, "Mathcap violation: the master's mathcap does "
			     "not accept the object");
	}
	if (st) {
		if (eng_push_error(e, st, "%s", oxr_errmsg()) || eng_pop(e, &it, "reply"))
			return OXR_ERR_NOMEM;
	}
	st = eng_reply(e, OXR_OX_DATA, it.o);
	eng_item_free(&it);
	return st;
}

static oxr_status_t sm_set_mathcap(oxr_engine *e)
{
	struct sitem it;
	oxr_status_t st = eng_pop(e, &it, "SM_setMathcap");

	if (st)
		return st;
	if (it.o->tag != OXR_CMO_MATHCAP) {
		eng_item_free(&it);
		return oxr_err(OXR_ERR_INVAL, "SM_setMathcap: the top is not a CMO_MATHCAP");
	}
	if (e->peer_mc_arena)
		oxr_arena_destroy(e->peer_mc_arena);
	e->peer_mc = it.o;
	e->peer_mc_arena = it.a;
	return OXR_OK;
}

static oxr_status_t sm_pops(oxr_engine *e)
{
	long n;
	oxr_status_t st = eng_pop_int(e, &n, "SM_pops");

	if (st)
		return st;
	if (n < 0)
		return oxr_err(OXR_ERR_INVAL, "SM_pops: a negative count %ld", n);
	while (n-- > 0 && e->sp)
		eng_item_free(&e->stack[--e->sp]);
	return OXR_OK;
}

static oxr_status_t sm_set_name(oxr_engine *e)
{
	struct sitem it[2]; /* name, object */
	char *name;
	oxr_status_t st;

	if ((st = eng_pop_n(e, 2, it, "SM_setName")))
		return st;
	if ((st = eng_str_of(it[0].o, &name, "SM_setName"))) {
		eng_items_free(it, 2);
		return st;
	}
	eng_item_free(&it[0]);
	return eng_bind(e, name, it[1]);
}

static oxr_status_t sm_eval_name(oxr_engine *e)
{
	char *name;
	const struct binding *b;
	oxr_status_t st = eng_pop_string(e, &name, "SM_evalName");

	if (st)
		return st;
	b = eng_lookup(e, name);
	st = b ? eng_push_copy(e, b->v.o)
	       : oxr_err(OXR_ERR_INVAL, "SM_evalName: no object is named \"%s\"", name);
	free(name);
	return st;
}

/* 1 if o nests more than lim levels; looks no deeper than lim + 1. */
static int deeper_than(const oxr_cmo *o, uint32_t lim)
{
	uint32_t i;

	if (lim == 0)
		return o->nkids > 0;
	for (i = 0; i < o->nkids; i++)
		if (deeper_than(o->kids[i], lim - 1))
			return 1;
	return 0;
}

static oxr_status_t sm_execute(oxr_engine *e)
{
	char *name;
	long n, i;
	struct sitem *args = NULL;
	oxr_cmo **objs = NULL;
	oxr_arena *a = NULL;
	oxr_cmo *res;
	oxr_status_t st = eng_pop_string(e, &name, "SM_executeFunction");

	if (st)
		return st;
	if ((st = eng_pop_int(e, &n, "SM_executeFunction (argument count)")))
		goto out;
	if (n < 0 || (size_t)n > e->sp) {
		st = oxr_err(OXR_ERR_INVAL, "SM_executeFunction %s: %ld arguments asked, the stack "
			     "holds %zu", name, n, e->sp);
		goto out;
	}
	args = calloc((size_t)n + 1, sizeof(*args));
	objs = calloc((size_t)n + 1, sizeof(*objs));
	if (!args || !objs) {
		st = oxr_err(OXR_ERR_NOMEM, "SM_executeFunction: out of memory");
		goto out;
	}
	/* the first argument is nearest the top (ox_toolkit pushes last-first) */
	for (i = 0; i < n; i++) {
		(void)eng_pop(e, &args[i], "SM_executeFunction");
		objs[i] = args[i].o;
	}
	if ((st = oxr_arena_create(&a)))
		goto out;
	/* a built-in may answer with (a part of) an argument, "max" say: the
	 * result is copied out before the arguments go.  Nesting is bounded as
	 * for decoded objects, so list(list(...)) repeated cannot build one
	 * that the recursive printer and copier would overflow the stack on. */
	if ((st = eng_call(e, name, (int)n, objs, a, &res)) == OXR_OK)
		st = deeper_than(res, e->lim.max_depth)
			     ? oxr_err(OXR_ERR_LIMIT, "the result nests deeper than %u levels "
				       "(OXR_CMO_MAX_DEPTH)", e->lim.max_depth)
			     : eng_push_copy(e, res);
out:
	for (i = 0; args && i < n; i++)
		eng_item_free(&args[i]);
	free(args);
	free(objs);
	if (a)
		oxr_arena_destroy(a);
	free(name);
	return st;
}

static oxr_status_t sm_dup_errors(oxr_engine *e)
{
	oxr_arena *a;
	oxr_cmo *l;
	size_t i, n = 0, k = 0;
	oxr_status_t st;

	for (i = 0; i < e->sp; i++)
		n += e->stack[i].o->tag == OXR_CMO_ERROR2;
	if ((st = oxr_arena_create(&a)))
		return st;
	if (!(l = oxr_cmo_new_list(a, (uint32_t)n))) {
		oxr_arena_destroy(a);
		return oxr_err(OXR_ERR_NOMEM, "SM_dupErrors: out of memory");
	}
	for (i = 0; i < e->sp; i++)
		if (e->stack[i].o->tag == OXR_CMO_ERROR2 &&
		    (st = oxr_cmo_copy(a, e->stack[i].o, &l->kids[k++]))) {
			oxr_arena_destroy(a);
			return st;
		}
	return eng_push(e, l, a);
}

static oxr_status_t push_int(oxr_engine *e, int32_t v)
{
	oxr_arena *a;
	oxr_cmo *o;
	oxr_status_t st = oxr_arena_create(&a);

	if (st)
		return st;
	if (!(o = oxr_cmo_new_int32(a, v))) {
		oxr_arena_destroy(a);
		return OXR_ERR_NOMEM;
	}
	return eng_push(e, o, a);
}

static oxr_status_t sm_mathcap(oxr_engine *e)
{
	oxr_arena *a;
	oxr_cmo *mc;
	oxr_status_t st = oxr_arena_create(&a);

	if (st)
		return st;
	if (!(mc = oxr_engine_mathcap(a))) {
		oxr_arena_destroy(a);
		return oxr_err(OXR_ERR_NOMEM, "SM_mathcap: out of memory");
	}
	return eng_push(e, mc, a);
}

/* Runs one command; OXR_OK or the status of a reply that could not be
 * written (the session is over then).  Errors of the command itself are
 * on the stack. */
static oxr_status_t run_command(oxr_engine *e, int32_t sm)
{
	oxr_status_t st;
	const char *name = oxr_sm_name(sm);

	switch (sm) {
	case OXR_SM_popCMO: return sm_pop_reply(e, 0);
	case OXR_SM_popString: return sm_pop_reply(e, 1);
	case OXR_SM_mathcap: st = sm_mathcap(e); break;
	case OXR_SM_setMathcap: st = sm_set_mathcap(e); break;
	case OXR_SM_pops: st = sm_pops(e); break;
	case OXR_SM_setName: st = sm_set_name(e); break;
	case OXR_SM_evalName: st = sm_eval_name(e); break;
	case OXR_SM_executeFunction: st = sm_execute(e); break;
	case OXR_SM_getsp: st = push_int(e, (int32_t)e->sp); break;
	case OXR_SM_dupErrors: st = sm_dup_errors(e); break;
	case OXR_SM_pushCMOtag:
		st = e->sp ? push_int(e, e->stack[e->sp - 1].o->tag)
			   : oxr_err(OXR_ERR_INVAL, "SM_pushCMOtag: the stack is empty");
		break;
	case OXR_SM_nop: st = OXR_OK; break;
	case OXR_SM_shutdown: e->finished = 1; st = OXR_OK; break;
	case OXR_SM_set_rank_102:
	case OXR_SM_tcp_accept_102:
	case OXR_SM_tcp_connect_102:
	case OXR_SM_reset_102:
	case OXR_SM_bcast_102:
	case OXR_SM_reduce_102:
		st = eng_sm_102(e, sm);
		break;
	default:
		st = oxr_err(OXR_ERR_UNSUPPORTED, "unknown SM code %d%s%s%s", sm,
			     name ? " (" : "", name ? name : "",
			     name ? ", not run by oxr-server: see its mathcap)" : "");
		name = NULL;
	}
	if (st && st != OXR_ERR_NOMEM) {
		const char *msg = oxr_errmsg();
		int named = name && !strncmp(msg, name, strlen(name));
		return eng_push_error(e, st, "%s%s%s", name && !named ? name : "",
				      name && !named ? ": " : "", msg) == OXR_OK ? OXR_OK : OXR_ERR_NOMEM;
	}
	if (st)
		(void)eng_push_error(e, st, "out of memory");
	return OXR_OK;
}

/* One framed message from the master.  The decoder's arena holds it. */
static oxr_status_t run_message(oxr_engine *e, const oxr_ox_msg *m)
{
	oxr_status_t st = OXR_OK;

	if (e->flushing) { /* RFC-100 reset: drop all up to the master's ball */
		if (m->tag == OXR_OX_SYNC_BALL)
			e->flushing = 0;
		oxr_arena_reset(e->dec_arena);
		return OXR_OK;
	}
	e->cur_serial = m->serial;
	switch (m->tag) {
	case OXR_OX_DATA:
		st = eng_push(e, m->cmo, e->dec_arena); /* the arena is the stack's now */
		if (oxr_arena_create(&e->dec_arena) != OXR_OK) {
			e->dec_arena = NULL;
			return OXR_ERR_NOMEM;
		}
		oxr_decoder_set_arena(e->dec, e->dec_arena);
		if (st)
			(void)eng_push_error(e, st, "OX_DATA: %s", oxr_errmsg());
		return OXR_OK;
	case OXR_OX_COMMAND:
		st = run_command(e, m->sm);
		break;
	case OXR_OX_SYNC_BALL: /* a ball outside a reset means nothing */
		break;
	default:
		st = eng_push_error(e, OXR_ERR_UNSUPPORTED, "OX message tag %d is not run by "
				    "oxr-server (OX_DATA, OX_COMMAND, OX_SYNC_BALL are)", m->tag);
	}
	oxr_arena_reset(e->dec_arena);
	return st;
}

oxr_status_t oxr_engine_input(oxr_engine *e, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len && !e->finished) {
		size_t used = 0;
		oxr_status_t st = oxr_decoder_feed(e->dec, p, len, 0, &used);
		if (st == OXR_AGAIN)
			return OXR_OK;
		if (st)
			return oxr_err(st, "the master's stream cannot be framed any more at byte %llu "
				       "of a message: %s", (unsigned long long)oxr_decoder_offset(e->dec),
				       oxr_decoder_error(e->dec));
		p += used;
		len -= used;
		if ((st = run_message(e, oxr_decoder_msg(e->dec))))
			return st;
	}
	return OXR_OK;
}

/* RFC-100 reset, the engine's half: the work is abandoned already (every
 * group wait returned OXR_ERR_INTR); the group is revoked so that peers
 * still waiting on this rank let go too; then our ball, then drop
 * everything until the master's. */
static oxr_status_t engine_reset(oxr_engine *e)
{
	e->reset_req = 0;
	if (e->g && oxr_group_size(e->g) > 1)
		(void)oxr_group_revoke(e->g);
	/* a message half read goes on being framed, and is dropped whole */
	e->flushing = 1;
	return eng_reply(e, OXR_OX_SYNC_BALL, NULL);
}

oxr_status_t oxr_engine_serve(oxr_engine *e, int rfd)
{
	static uint8_t buf[1 << 16];
	oxr_status_t st;

	while (!e->finished) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		int idle_group = e->g && oxr_group_size(e->g) > 1;
		ssize_t k;
		int r, err;

		if (e->reset_req && (st = engine_reset(e)))
			return st;
		/* between commands the group's links still move: a peer's large
		 * send into this rank completes before this rank's own call */
		r = poll(&pfd, 1, idle_group ? 5 : -1);
		err = errno;
		if (idle_group)
			(void)oxr_group_progress(e->g);
		if (r < 0 && err == EINTR)
			continue;
		if (r < 0)
			return oxr_err(OXR_ERR_IO, "poll on the data channel: %s", strerror(err));
		if (r == 0)
			continue;
		k = read(rfd, buf, sizeof(buf));
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return oxr_err(OXR_ERR_IO, "read from the master: %s", strerror(errno));
		if (k == 0)
			return oxr_err(OXR_ERR_CLOSED, "the master closed the data channel");
		if ((st = oxr_engine_input(e, buf, (size_t)k)))
			return st;
	}
	return OXR_OK;
}
