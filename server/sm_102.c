/* SPDX-License-Identifier: MIT */
/*
 * RFC-102 in the engine: SM_set_rank_102 .. SM_reduce_102 (278-283) with
 * ox_asir's conventions (protocol doc section 5: arguments are stack items,
 * integers as ZZ, INT32 or CMO_NULL = 0, nothing pushed on success, a
 * CMO_ERROR2 on failure), and the in-server group calls of
 * SM_executeFunction (ox_send_102 ... ox_get_rank_102, oxr_barrier,
 * oxr_crystal, ...).  Collectives are those of collectives/; a reset is
 * oxr_group_reset (SYNC_BALL drain, new epoch).
 *
 * Links are OpenXM links (ox_asir's bytes, over TCP or, for a String port,
 * a Unix-domain socket) unless the master gave a
 * token (oxr_set_token): then authenticated oxr links, upgraded to verbs
 * where both ends can.  Every argument is checked before any link is
 * touched, so a bad call fails alike on every rank that makes it.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "oxr/barrier.h"
#include "oxr/bcast.h"
#include "oxr/crystal.h"
#include "oxr_internal.h"

#define MAX_NSERVER 65536

void eng_group_free(oxr_engine *e)
{
	free(e->plain);
	e->plain = NULL;
	e->nplain = 0;
	oxr_barrier_destroy(e->barrier);
	e->barrier = NULL;
	oxr_group_destroy(e->g);
	e->g = NULL;
}

static oxr_status_t need_group(oxr_engine *e, const char *what)
{
	return e->g ? OXR_OK
		    : oxr_err(OXR_ERR_INVAL, "%s: this server is in no group: send "
			      "SM_set_rank_102 (nserver, rank) first", what);
}

static oxr_status_t need_rank(oxr_engine *e, long r, const char *what)
{
	int n = oxr_group_size(e->g);

	if (r < 0 || r >= n)
		return oxr_err(OXR_ERR_INVAL, "%s: rank %ld is not in the group (nserver %d)",
			       what, r, n);
	return OXR_OK;
}

static oxr_status_t set_rank(oxr_engine *e)
{
	struct sitem it[2];
	long n, r;
	oxr_status_t st;

	if ((st = eng_pop_n(e, 2, it, "SM_set_rank_102")))
		return st;
	if (!(st = eng_int_of(it[0].o, &r, "rank")))
		st = eng_int_of(it[1].o, &n, "nserver");
	eng_items_free(it, 2);
	if (st)
		return st;
	if (n < 1 || n > MAX_NSERVER || r < 0 || r >= n)
		return oxr_err(OXR_ERR_INVAL, "nserver %ld, rank %ld: need 1 <= nserver <= %d and "
			       "0 <= rank < nserver", n, r, MAX_NSERVER);
	if (e->flags & OXR_ENGINE_NO_NET)
		return oxr_err(OXR_ERR_UNSUPPORTED, "this engine opens no links (fuzzing build)");
	if (!e->ctx) {
		if ((st = oxr_ctx_create(&e->ctx)))
			return st;
		e->own_ctx = 1;
		oxr_ctx_set_interrupt(e->ctx, &e->reset_req);
	}
	eng_group_free(e);
	if (!(e->plain = calloc((size_t)n, 1)))
		return oxr_err(OXR_ERR_NOMEM, "SM_set_rank_102: out of memory");
	if ((st = oxr_group_create(e->ctx, (int)n, (int)r, &e->g)))
		return st;
	if (e->have_token && (st = oxr_group_set_token(e->g, e->token, sizeof(e->token)))) {
		eng_group_free(e);
		return st;
	}
	return OXR_OK;
}

/* An oxr link when the master gave a token and did not say the peer is a
 * plain OpenXM engine; else the bytes ox_asir speaks. */
static int link_mode(const oxr_engine *e, long peer)
{
	return e->have_token && !e->plain[peer] ? OXR_LINK_AUTH : OXR_LINK_OPENXM;
}

/* Every link of the group is an oxr one (windows, the pipelined chain). */
static int all_oxr(const oxr_engine *e)
{
	return e->have_token && !e->nplain;
}

/* Where a link is made: a TCP port, or a Unix-domain socket path when the
 * master pushed the port as a CMO_STRING (asir's generate_port(1)). */
struct where {
	long port;
	char *path;
};

/* The port and peer rank of an accept or a connect (it[0] peer, it[1] port). */
static oxr_status_t link_args(oxr_engine *e, const struct sitem *it, struct where *w, long *peer,
			      const char *what)
{
	oxr_status_t st;

	if ((st = eng_int_of(it[0].o, peer, "peer rank")))
		return st;
	if (it[1].o->tag == OXR_CMO_STRING) {
		/* its length is checked against sun_path before any socket is made */
		if ((st = eng_str_of(it[1].o, &w->path, "port (a Unix socket path)")))
			return st;
	} else {
		if ((st = eng_int_of(it[1].o, &w->port, "port")))
			return st;
		if (w->port < 0 || w->port > 65535)
			return oxr_err(OXR_ERR_INVAL, "port %ld is not a TCP port", w->port);
	}
	if ((st = need_group(e, what)))
		return st;
	return need_rank(e, *peer, what);
}

/* Nothing slow stands between the command and listen(): the context (the
 * device probe) is made when the engine starts or at SM_set_rank_102, and a
 * peer such as ox_asir gives its connect only about a second. */
static oxr_status_t tcp_accept(oxr_engine *e)
{
	struct sitem it[2];
	struct where w = { 0, NULL };
	long peer;
	oxr_status_t st;

	if ((st = eng_pop_n(e, 2, it, "SM_tcp_accept_102")))
		return st;
	if (!(st = link_args(e, it, &w, &peer, "accept")))
		st = w.path ? oxr_link_accept_path(e->g, w.path, (int)peer, link_mode(e, peer),
						   e->timeout_ms)
			    : oxr_link_accept(e->g, (int)w.port, (int)peer, link_mode(e, peer),
					      e->timeout_ms);
	free(w.path);
	eng_items_free(it, 2);
	return st;
}

static oxr_status_t tcp_connect(oxr_engine *e)
{
	struct sitem it[3];
	struct where w = { 0, NULL };
	long peer;
	char *host = NULL;
	oxr_status_t st;

	if ((st = eng_pop_n(e, 3, it, "SM_tcp_connect_102")))
		return st;
	if ((st = link_args(e, it, &w, &peer, "connect")))
		;
	else if (w.path) /* the host is ignored, as in asir (spawn102_local sends 0) */
		st = oxr_link_connect_path(e->g, w.path, (int)peer, link_mode(e, peer),
					   e->timeout_ms);
	else if (it[2].o->tag == OXR_CMO_NULL || !(st = eng_str_of(it[2].o, &host, "host")))
		st = oxr_link_connect(e->g, host ? host : "127.0.0.1", (int)w.port, (int)peer,
				      link_mode(e, peer), e->timeout_ms);
	free(host);
	free(w.path);
	eng_items_free(it, 3);
	return st;
}

static oxr_status_t reset(oxr_engine *e)
{
	oxr_status_t st;

	if (!e->g)
		return OXR_OK; /* no links: nothing to drain */
	e->reset_req = 0;
	/* a barrier's state belongs to the old epoch */
	oxr_barrier_destroy(e->barrier);
	e->barrier = NULL;
	st = oxr_group_reset(e->g, e->timeout_ms);
	return st;
}

/* Broadcast from root: the root's object is *o (its own arena *a); the
 * others get theirs in a new arena. */
static oxr_status_t bcast(oxr_engine *e, long root, oxr_cmo **o, oxr_arena *a)
{
	return all_oxr(e) ? oxr_bcast(e->g, (int)root, o, a, e->timeout_ms)
			     : oxr_bcast_plain(e->g, (int)root, o, a, e->timeout_ms);
}

static oxr_status_t sm_bcast(oxr_engine *e)
{
	long root;
	struct sitem it = { 0 };
	oxr_status_t st;

	if ((st = eng_pop_int(e, &root, "root")) || (st = need_group(e, "bcast")) ||
	    (st = need_rank(e, root, "bcast")))
		return st;
	if (root == oxr_group_rank(e->g)) {
		if ((st = eng_pop(e, &it, "bcast (the root's data)")))
			return st;
	} else if ((st = oxr_arena_create(&it.a))) {
		return st;
	}
	if ((st = bcast(e, root, &it.o, it.a))) {
		eng_item_free(&it);
		return st;
	}
	return eng_push(e, it.o, it.a);
}

static oxr_status_t reduce(oxr_engine *e, long root, const char *op, const oxr_cmo *in,
			   oxr_arena *a, oxr_cmo **out)
{
	oxr_status_t st;

	if ((st = need_group(e, "reduce")) || (st = need_rank(e, root, "reduce")))
		return st;
	if (!oxr_reduce_op_known(op))
		return oxr_err(OXR_ERR_INVAL, "reduce: unknown op \"%s\" (+ * max min append)", op);
	if ((st = oxr_reduce(e->g, (int)root, op, in, out, a, e->timeout_ms)))
		return st;
	/* asir's convention: the result on the root, 0 (CMO_NULL) elsewhere */
	if (root != oxr_group_rank(e->g))
		*out = oxr_cmo_null();
	return OXR_OK;
}

static oxr_status_t sm_reduce(oxr_engine *e)
{
	struct sitem it[3]; /* op, root, data */
	char *op = NULL;
	long root;
	oxr_arena *a;
	oxr_cmo *res = NULL;
	oxr_status_t st;

	if ((st = eng_pop_n(e, 3, it, "SM_reduce_102")))
		return st;
	if (!(st = eng_str_of(it[0].o, &op, "op")) && !(st = eng_int_of(it[1].o, &root, "root")) &&
	    !(st = oxr_arena_create(&a))) {
		if ((st = reduce(e, root, op, it[2].o, a, &res)) == OXR_OK) {
			st = eng_push(e, res, a);
			a = NULL;
		}
		if (a)
			oxr_arena_destroy(a);
	}
	eng_items_free(it, 3);
	free(op);
	return st;
}

oxr_status_t eng_sm_102(oxr_engine *e, int32_t sm)
{
	switch (sm) {
	case OXR_SM_set_rank_102: return set_rank(e);
	case OXR_SM_tcp_accept_102: return tcp_accept(e);
	case OXR_SM_tcp_connect_102: return tcp_connect(e);
	case OXR_SM_reset_102: return reset(e);
	case OXR_SM_bcast_102: return sm_bcast(e);
	case OXR_SM_reduce_102: return sm_reduce(e);
	default: return oxr_err(OXR_ERR_UNSUPPORTED, "SM code %d is not an RFC-102 command", sm);
	}
}

/* ---- the in-server group calls -------------------------------------- */

static oxr_status_t arg_int(oxr_cmo **v, int i, const char *fn, long *out)
{
	if (!eng_as_long(v[i], out))
		return oxr_err(OXR_ERR_INVAL, "%s: argument %d is not an integer", fn, i + 1);
	return OXR_OK;
}

static oxr_status_t fn_recv(oxr_engine *e, long peer, oxr_arena *a, oxr_cmo **out)
{
	oxr_rmsg *m;
	oxr_status_t st = oxr_recv(e->g, (int)peer, e->timeout_ms, &m);

	if (st)
		return st;
	st = m->msg.tag == OXR_OX_DATA && m->msg.cmo
		     ? oxr_cmo_copy(a, m->msg.cmo, out)
		     : oxr_err(OXR_ERR_PROTO, "ox_recv_102: rank %ld sent OX tag %d, not OX_DATA",
			       peer, m->msg.tag);
	oxr_rmsg_free(m);
	return st;
}

static oxr_status_t fn_crystal(oxr_engine *e, const oxr_cmo *recs, oxr_arena *a, oxr_cmo **out)
{
	oxr_crystal *cr;
	oxr_crystal_rec rec;
	uint32_t i, n = 0;
	oxr_cmo *l = NULL, **got = NULL;
	oxr_status_t st;

	if (recs->tag != OXR_CMO_LIST)
		return oxr_err(OXR_ERR_INVAL, "oxr_crystal: the argument is not a list of [dest, obj]");
	for (i = 0; i < recs->nkids; i++) {
		const oxr_cmo *r = recs->kids[i];
		long d;
		if (r->tag != OXR_CMO_LIST || r->nkids != 2 || !eng_as_long(r->kids[0], &d) ||
		    need_rank(e, d, "oxr_crystal"))
			return oxr_err(OXR_ERR_INVAL, "oxr_crystal: record %u is not [dest, obj] with "
				       "dest a rank of the group", i + 1);
	}
	if ((st = oxr_crystal_create(e->g, &cr)))
		return st;
	for (i = 0; i < recs->nkids && !st; i++) {
		uint8_t *buf;
		size_t len;
		long d;
		(void)eng_as_long(recs->kids[i]->kids[0], &d);
		if ((st = oxr_cmo_encode_alloc(recs->kids[i]->kids[1], OXR_ORDER_HOST, &buf, &len)))
			break;
		st = oxr_crystal_pack(cr, (int)d, buf, len);
		free(buf);
	}
	if (!st)
		st = oxr_crystal_transfer(cr, e->timeout_ms);
	/* each record is one encoded CMO, [source, obj] in the result */
	while (!st && oxr_crystal_next(cr, &rec) == OXR_OK) {
		oxr_cmo *obj, *pair, **grown;
		size_t used;
		if ((st = oxr_cmo_decode(rec.data, rec.len, OXR_ORDER_HOST, &e->lim, a, &obj, &used)))
			break;
		/* the decoded payloads point into the router's memory: copy them */
		if ((st = oxr_cmo_copy(a, obj, &obj)))
			break;
		if (used != rec.len) {
			st = oxr_err(OXR_ERR_PROTO, "oxr_crystal: a record from rank %d has %llu bytes "
				     "after its object", rec.source, (unsigned long long)(rec.len - used));
			break;
		}
		if (!(pair = oxr_cmo_new_list(a, 2)) ||
		    !(pair->kids[0] = oxr_cmo_new_zz_si(a, rec.source)) ||
		    !(grown = realloc(got, (n + 1) * sizeof(*got)))) {
			st = oxr_err(OXR_ERR_NOMEM, "oxr_crystal: out of memory");
			break;
		}
		pair->kids[1] = obj;
		got = grown;
		got[n++] = pair;
	}
	if (!st && !(l = oxr_cmo_new_list(a, n)))
		st = oxr_err(OXR_ERR_NOMEM, "oxr_crystal: out of memory");
	if (!st) {
		if (n) /* no records: got is NULL */
			memcpy(l->kids, got, n * sizeof(*got));
		*out = l;
	}
	free(got);
	oxr_crystal_destroy(cr);
	return st;
}

oxr_status_t eng_group_call(oxr_engine *e, const char *name, int argc, oxr_cmo **v,
			    oxr_arena *a, oxr_cmo **out, int *found)
{
	long x;
	oxr_status_t st;

	*found = 1;
	if (!strcmp(name, "oxr_set_token")) {
		if (argc != 1 || v[0]->tag != OXR_CMO_DATUM || v[0]->len != sizeof(e->token))
			return oxr_err(OXR_ERR_INVAL, "oxr_set_token: one CMO_DATUM of %zu bytes",
				       sizeof(e->token));
		if (e->g)
			return oxr_err(OXR_ERR_INVAL, "oxr_set_token: call it before SM_set_rank_102");
		memcpy(e->token, v[0]->data, sizeof(e->token));
		e->have_token = 1;
		*out = oxr_cmo_null();
		return OXR_OK;
	}
	if (strncmp(name, "ox_", 3) && strncmp(name, "oxr_", 4)) {
		*found = 0;
		return OXR_OK;
	}
	if ((st = need_group(e, name)))
		return st;
	if (!strcmp(name, "ox_get_rank_102") && argc == 0) {
		oxr_cmo *l = oxr_cmo_new_list(a, 2);
		if (!l || !(l->kids[0] = oxr_cmo_new_zz_si(a, oxr_group_size(e->g))) ||
		    !(l->kids[1] = oxr_cmo_new_zz_si(a, oxr_group_rank(e->g))))
			return OXR_ERR_NOMEM;
		*out = l;
		return OXR_OK;
	}
	if (!strcmp(name, "oxr_listen_102") && argc == 1) {
		int bound;
		if ((st = arg_int(v, 0, name, &x)) || x < 0 || x > 65535)
			return st ? st : oxr_err(OXR_ERR_INVAL, "oxr_listen_102: bad port %ld", x);
		if ((st = oxr_link_listen(e->g, (int)x, &bound)))
			return st;
		*out = oxr_cmo_new_zz_si(a, bound);
		return *out ? OXR_OK : OXR_ERR_NOMEM;
	}
	if (!strcmp(name, "ox_send_102") && argc == 2) {
		oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = v[1] };
		if ((st = arg_int(v, 0, name, &x)) || (st = need_rank(e, x, name)) ||
		    (st = oxr_send(e->g, (int)x, &m)))
			return st;
		*out = oxr_cmo_null();
		return OXR_OK;
	}
	if (!strcmp(name, "ox_recv_102") && argc == 1)
		return (st = arg_int(v, 0, name, &x)) || (st = need_rank(e, x, name))
			       ? st : fn_recv(e, x, a, out);
	if (!strcmp(name, "ox_bcast_102") && (argc == 1 || argc == 2)) {
		if ((st = arg_int(v, 0, name, &x)) || (st = need_rank(e, x, name)))
			return st;
		if (x == oxr_group_rank(e->g)) {
			if (argc != 2)
				return oxr_err(OXR_ERR_INVAL, "ox_bcast_102: the root needs the data");
			if ((st = oxr_cmo_copy(a, v[1], out)))
				return st;
		}
		return bcast(e, x, out, a);
	}
	if (!strcmp(name, "ox_reduce_102") && argc == 3) {
		char op[32];
		if ((st = arg_int(v, 0, name, &x)))
			return st;
		if (v[1]->tag != OXR_CMO_STRING || v[1]->len >= sizeof(op))
			return oxr_err(OXR_ERR_INVAL, "ox_reduce_102: argument 2 is not an op name");
		if (v[1]->len)
			memcpy(op, v[1]->data, v[1]->len);
		op[v[1]->len] = 0;
		return reduce(e, x, op, v[2], a, out);
	}
	if ((!strcmp(name, "oxr_barrier") || !strcmp(name, "oxr_crystal")) && !all_oxr(e))
		return oxr_err(OXR_ERR_UNSUPPORTED, "%s: the barrier and the crystal router need oxr "
			       "links (one-sided windows) to every rank; this group has OpenXM links: "
			       "the master calls oxr_set_token before SM_set_rank_102 (oxr-master "
			       "does), and no rank may be a plain OpenXM engine", name);
	if (!strcmp(name, "oxr_plain_102") && argc == 1) {
		if ((st = arg_int(v, 0, name, &x)) || (st = need_rank(e, x, name)))
			return st;
		if (oxr_link_is_open(e->g, (int)x))
			return oxr_err(OXR_ERR_INVAL, "oxr_plain_102: the link to rank %ld is open "
				       "already", x);
		e->nplain += !e->plain[x];
		e->plain[x] = 1;
		*out = oxr_cmo_null();
		return OXR_OK;
	}
	if (!strcmp(name, "oxr_barrier") && argc == 0) {
		if (!e->barrier && (st = oxr_barrier_create(e->g, OXR_BARRIER_DEFAULT, &e->barrier)))
			return st;
		if ((st = oxr_barrier(e->barrier, e->timeout_ms)))
			return st;
		*out = oxr_cmo_null();
		return OXR_OK;
	}
	if (!strcmp(name, "oxr_crystal") && argc == 1)
		return fn_crystal(e, v[0], a, out);
	if (!strcmp(name, "oxr_link_transport") && argc == 1) {
		const char *t;
		if ((st = arg_int(v, 0, name, &x)) || (st = need_rank(e, x, name)))
			return st;
		if (!(t = oxr_link_transport(e->g, (int)x)))
			return oxr_err(OXR_ERR_INVAL, "oxr_link_transport: no link to rank %ld", x);
		*out = oxr_cmo_new_string(a, t);
		return *out ? OXR_OK : OXR_ERR_NOMEM;
	}
	if (!strcmp(name, "oxr_epoch") && argc == 0) {
		*out = oxr_cmo_new_zz_si(a, (long)oxr_group_epoch(e->g));
		return *out ? OXR_OK : OXR_ERR_NOMEM;
	}
	*found = 0;
	return OXR_OK;
}
