/* SPDX-License-Identifier: MIT */
/* Two groups of one process linked to each other: rank 0 (a) accepts in a
 * thread, rank 1 (b) connects; both use the transport the environment picks,
 * or the provider a per-provider test runs on (make_pair_on). */
#ifndef OXR_LINK_PAIR_H
#define OXR_LINK_PAIR_H

#include "oxr/oxr.h"
#include "oxr/transport.h"
#include "providers.h"

struct pair {
	oxr_ctx *ca, *cb;
	oxr_group *a, *b; /* a: rank 0 acceptor, b: rank 1 connector */
	int port;
	int mode;
	oxr_status_t st_accept;
	char err_accept[512];
	const struct provider *pv; /* make_pair_on's, else NULL */
};

/* Like make_pair, with OXR_TRANSPORT tr_a for a's context and tr_b for b's
 * (left as the environment has it afterwards: tr_b). */
void make_pair_tr(struct pair *p, int n, const char *tr_a, const char *tr_b);
/* Contexts (OXR_ORDER order_a / order_b), groups of n, token, a listening port. */
void make_pair(struct pair *p, int n, const char *order_a, const char *order_b);
/* Like make_pair, both contexts on provider pv, set on them (oxr_ctx_params),
 * whatever the environment says; link_up then checks that the link is on pv. */
void make_pair_on(struct pair *p, const struct provider *pv, int n, const char *order_a,
		  const char *order_b);
/* Like make_pair_on (groups of 2, little-endian), with the environment
 * variable var set to va for a's context and vb for b's (unset after). */
void make_pair_env(struct pair *p, const struct provider *pv, const char *var, const char *va,
		   const char *vb);
void free_pair(struct pair *p);
/* Accepts rank 1 on p->port in p->mode (a thread body). */
void *acceptor(void *arg);
/* Runs accept in a thread and connect here; returns connect's status. */
oxr_status_t link_up(struct pair *p, int mode);

/* A pair linked with OXR_TRANSPORT=verbs, checked to be on verbs both ways. */
void verbs_pair(struct pair *p);

/* One rank's side of a call made in a thread: its group, the call's
 * status and oxr_errmsg() after it. */
struct side {
	oxr_group *g;
	int timeout_ms;
	oxr_status_t st;
	char err[512];
};

/* A thread body: a receive from rank 0 on s->g for s->timeout_ms. */
void *blocked_recv(void *arg);

/* Both ranks of the pair reset their groups at once (a in a thread), checked. */
void reset_both(struct pair *p);

/* An INT32 sent from g to peer, checked; one received within 5 s, checked. */
void pair_send_int(oxr_group *g, int peer, int32_t v);
int32_t pair_recv_int(oxr_group *g, int peer);

/* A window being created by one rank of a pair. */
struct win_arg {
	oxr_group *g;
	uint32_t id;
	void *base;
	size_t len;
	oxr_win *w;
	oxr_status_t st;
};

/* Both ranks create window id at once (a in a thread), over the memory given. */
void pair_windows(struct pair *p, uint32_t id, struct win_arg *wa, void *abase, size_t alen,
		  struct win_arg *wb, void *bbase, size_t blen);

#endif
