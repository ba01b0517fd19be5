/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link_pair.h"
#include "oxr/cmo.h"
#include "oxr/params.h"

/* A context on pv's transport (the environment's where pv is NULL). */
static void ctx_on(oxr_ctx **c, const struct provider *pv)
{
	oxr_ctx_params cp = { 0 };

	if (!pv) {
		cr_assert_eq(oxr_ctx_create(c), OXR_OK, "%s", oxr_errmsg());
		return;
	}
	cp.field_mask = OXR_CTX_PARAM_TRANSPORT;
	cp.transport = provider_transport(pv);
	cr_assert_eq(oxr_ctx_create_with(&cp, c), OXR_OK, "a context on %s: %s", pv->name,
		     oxr_errmsg());
	cr_assert_str_eq(oxr_ctx_transport(*c), pv->name, "a context asked for %s", pv->name);
}

/* var (when not NULL): va in the environment of a's context, vb in b's */
static void setup(struct pair *p, int n, const char *order_a, const char *order_b,
		  const char *tr_a, const char *tr_b, const struct provider *pv,
		  const char *var, const char *va, const char *vb)
{
	uint8_t tok[32];

	memset(p, 0, sizeof(*p));
	memset(tok, 7, sizeof(tok));
	p->pv = pv;
	setenv("OXR_ORDER", order_a, 1);
	if (tr_a)
		setenv("OXR_TRANSPORT", tr_a, 1);
	if (var)
		setenv(var, va, 1);
	ctx_on(&p->ca, pv);
	setenv("OXR_ORDER", order_b, 1);
	if (tr_b)
		setenv("OXR_TRANSPORT", tr_b, 1);
	if (var)
		setenv(var, vb, 1);
	ctx_on(&p->cb, pv);
	unsetenv("OXR_ORDER");
	if (var)
		unsetenv(var);
	cr_assert_eq(oxr_group_create(p->ca, n, 0, &p->a), OXR_OK);
	cr_assert_eq(oxr_group_create(p->cb, n, 1, &p->b), OXR_OK);
	cr_assert_eq(oxr_group_set_token(p->a, tok, 32), OXR_OK);
	cr_assert_eq(oxr_group_set_token(p->b, tok, 32), OXR_OK);
	cr_assert_eq(oxr_link_listen(p->a, 0, &p->port), OXR_OK);
}

void make_pair(struct pair *p, int n, const char *order_a, const char *order_b)
{
	setup(p, n, order_a, order_b, NULL, NULL, NULL, NULL, NULL, NULL);
}

void make_pair_on(struct pair *p, const struct provider *pv, int n, const char *order_a,
		  const char *order_b)
{
	setup(p, n, order_a, order_b, NULL, NULL, pv, NULL, NULL, NULL);
}

void make_pair_env(struct pair *p, const struct provider *pv, const char *var, const char *va,
		   const char *vb)
{
	setup(p, 2, "little", "little", NULL, NULL, pv, var, va, vb);
}

void make_pair_tr(struct pair *p, int n, const char *tr_a, const char *tr_b)
{
	setup(p, n, "little", "little", tr_a, tr_b, NULL, NULL, NULL, NULL);
}

void free_pair(struct pair *p)
{
	oxr_group_destroy(p->a);
	oxr_group_destroy(p->b);
	oxr_ctx_destroy(p->ca);
	oxr_ctx_destroy(p->cb);
}

void *acceptor(void *arg)
{
	struct pair *p = arg;

	p->st_accept = oxr_link_accept(p->a, p->port, 1, p->mode, 5000);
	snprintf(p->err_accept, sizeof(p->err_accept), "%s", oxr_errmsg());
	return NULL;
}

oxr_status_t link_up(struct pair *p, int mode)
{
	pthread_t t;
	oxr_status_t st;

	p->mode = mode;
	pthread_create(&t, NULL, acceptor, p);
	st = oxr_link_connect(p->b, "127.0.0.1", p->port, 0, mode, 5000);
	pthread_join(t, NULL);
	/* a pair made on a provider links on it, both ways; shm only inside a
	 * host (its contexts reach other hosts over tcp) */
	if (p->pv && st == OXR_OK && p->st_accept == OXR_OK) {
		const char *want = !strcmp(p->pv->name, "shm") && oxr_link_same_host(p->a, 1) == 0
					   ? "tcp"
					   : p->pv->name;
		cr_assert_str_eq(oxr_link_transport(p->a, 1), want, "the link asked for %s",
				 p->pv->name);
		cr_assert_str_eq(oxr_link_transport(p->b, 0), want, "the link asked for %s",
				 p->pv->name);
	}
	return st;
}

void *blocked_recv(void *arg)
{
	struct side *s = arg;
	oxr_rmsg *m = NULL;

	s->st = oxr_recv(s->g, 0, s->timeout_ms, &m);
	snprintf(s->err, sizeof(s->err), "%s", oxr_errmsg());
	oxr_rmsg_free(m);
	return NULL;
}

static void *make_win(void *arg)
{
	struct win_arg *x = arg;

	x->st = oxr_win_create(x->g, x->id, x->base, x->len, 10000, &x->w);
	return NULL;
}

void pair_windows(struct pair *p, uint32_t id, struct win_arg *wa, void *abase, size_t alen,
		  struct win_arg *wb, void *bbase, size_t blen)
{
	pthread_t t;

	*wa = (struct win_arg){ .g = p->a, .id = id, .base = abase, .len = alen };
	*wb = (struct win_arg){ .g = p->b, .id = id, .base = bbase, .len = blen };
	pthread_create(&t, NULL, make_win, wa);
	make_win(wb);
	pthread_join(t, NULL);
	cr_assert_eq(wa->st, OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(wb->st, OXR_OK, "%s", oxr_errmsg());
}

static void *reset_side(void *arg)
{
	struct side *s = arg;

	s->st = oxr_group_reset(s->g, 20000);
	snprintf(s->err, sizeof(s->err), "%s", oxr_errmsg());
	return NULL;
}

void reset_both(struct pair *p)
{
	struct side a = { .g = p->a }, b = { .g = p->b };
	pthread_t t;

	pthread_create(&t, NULL, reset_side, &a);
	reset_side(&b);
	pthread_join(t, NULL);
	cr_assert_eq(a.st, OXR_OK, "rank 0 reset: %s", a.err);
	cr_assert_eq(b.st, OXR_OK, "rank 1 reset: %s", b.err);
}

void verbs_pair(struct pair *p)
{
	setenv("OXR_TRANSPORT", "verbs", 1);
	make_pair(p, 2, "little", "little");
	cr_assert_eq(link_up(p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(p->st_accept, OXR_OK, "%s", p->err_accept);
	cr_assert_str_eq(oxr_ctx_transport(p->ca), "verbs");
	cr_assert_str_eq(oxr_link_transport(p->a, 1), "verbs");
	cr_assert_str_eq(oxr_link_transport(p->b, 0), "verbs");
}

void pair_send_int(oxr_group *g, int peer, int32_t v)
{
	oxr_arena *ar;
	oxr_ox_msg m = { .tag = OXR_OX_DATA };

	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	m.cmo = oxr_cmo_new_int32(ar, v);
	cr_assert_eq(oxr_send(g, peer, &m), OXR_OK, "%s", oxr_errmsg());
	oxr_arena_destroy(ar);
}

int32_t pair_recv_int(oxr_group *g, int peer)
{
	oxr_rmsg *m = NULL;
	int32_t v;

	cr_assert_eq(oxr_recv(g, peer, 5000, &m), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(m->msg.cmo->tag, OXR_CMO_INT32);
	v = m->msg.cmo->v.i32;
	oxr_rmsg_free(m);
	return v;
}
