/* SPDX-License-Identifier: MIT */
/*
 * Links opened on first use.  A booted group knows every rank's endpoint
 * (the bootstrap's allgather) and opens nothing: the first send, receive,
 * put or frame naming a peer starts the handshake (link_open.c) inside the
 * progress engine, and the group's listener, in the same epoll set, takes
 * the handshakes peers start.  So a rank holds links to the peers it talks
 * to (the collectives' partners: O(log P)), not P - 1.
 *
 * Simultaneous opens: both ends may start at once.  The connector with the
 * lower rank goes on: an acceptor that has its own open in flight to a
 * higher claimed rank refuses it (RACE) and waits for its own; one whose
 * open goes to a lower rank drops its own and accepts.  Both ends apply the
 * same rule, so exactly one handshake opens the link.  Only a verified
 * handshake (past the token proof) can displace another, so a stranger
 * cannot cancel a rank's open.
 *
 * Invariant: a link is OPENING while a handshake that will open it runs
 * (l->hs), or while it waits with a bound: for a retry after BUSY (the
 * peer was in another epoch), or for the peer's open after RACE.  Whatever
 * fails with a bound ends as a failed link, which revokes the group as any
 * broken link does: no wait hangs on a dead peer.
 *
 * Per rank: a handshake in flight costs one fd and ~0.5 KiB until it ends;
 * a waiting link nothing; the endpoint table 64 bytes x P.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "link.h"
#include "link_open.h"
#include "bmg.h"
#include "provider.h"
#include "tcp/tcp_socket.h"
#include "boot_impl.h"

#define RETRY_MS 10    /* after BUSY: a reset ends in a few round trips */
#define ACCEPT_BURST 64 /* connects taken per listener event */

static void watch(oxr_group *g, struct oxr_hs *h, int op)
{
	struct epoll_event ev = { .events = h->events ? h->events : EPOLLIN,
				  .data.u32 = OXR_EPOLL_HS | (uint32_t)h->slot };

	epoll_ctl(g->epfd, op, h->fd, &ev);
}

/* when is a deadline of the engine's: a sleep ends by then. */
static void due_by(oxr_group *g, int64_t when)
{
	if (!g->demand_due || when < g->demand_due)
		g->demand_due = when;
}

static oxr_status_t slot_add(oxr_group *g, struct oxr_hs *h)
{
	int i;

	for (i = 0; i < g->hs_cap && g->hs[i]; i++)
		;
	if (i == g->hs_cap) {
		int cap = g->hs_cap ? 2 * g->hs_cap : 16;
		struct oxr_hs **n = realloc(g->hs, (size_t)cap * sizeof(*n));
		if (!n)
			return oxr_err(OXR_ERR_NOMEM, "handshake: out of memory");
		memset(n + g->hs_cap, 0, (size_t)(cap - g->hs_cap) * sizeof(*n));
		g->hs = n;
		g->hs_cap = cap;
	}
	g->hs[i] = h;
	h->slot = i;
	h->demand = 1;
	g->nhs++;
	due_by(g, h->deadline);
	h->events = h->connecting ? EPOLLOUT : EPOLLIN;
	watch(g, h, EPOLL_CTL_ADD);
	return OXR_OK;
}

void oxr_demand_forget(oxr_group *g, struct oxr_hs *h)
{
	if (h->slot < 0)
		return;
	if (h->fd >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, h->fd, NULL);
	g->hs[h->slot] = NULL;
	h->slot = -1;
	g->nhs--;
}

int oxr_overlay_partners(const oxr_group *g, int *out, int max)
{
	return oxr_bmg_partners(g->rank, g->size, out, max);
}

static struct link *driven(oxr_group *g, struct oxr_hs *h)
{
	struct link *l = h->peer >= 0 ? g->links[h->peer] : NULL;

	return l && l->hs == h ? l : NULL;
}

/* The peer's endpoint: in the table, or looked up in the bootstrap the
 * first time (port 0: not yet; a listener's port is never 0). */
int oxr_endpoint_ok(const struct oxr_endpoint *e)
{
	return oxr_load32(e->port, OXR_ORDER_LITTLE) && memchr(e->host, 0, sizeof(e->host));
}

static oxr_status_t endpoint(oxr_group *g, int peer, const struct oxr_endpoint **out)
{
	struct oxr_endpoint *e = &g->eps[peer];
	oxr_status_t st;

	*out = e;
	if (oxr_load32(e->port, OXR_ORDER_LITTLE) || !g->boot)
		return OXR_OK;
	st = oxr_boot_lookup(g->boot, g->boot_rank ? g->boot_rank[peer] : peer, g->boot_seq, e,
			     sizeof(*e));
	if (st == OXR_OK && !oxr_endpoint_ok(e)) {
		memset(e, 0, sizeof(*e));
		st = oxr_err(OXR_ERR_PROTO, "the endpoint rank %d published is malformed", peer);
	}
	if (st)
		return oxr_err(st, "rank %d: looking up rank %d's endpoint: %s", g->rank, peer,
			       oxr_errmsg());
	oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: looked up rank %d's endpoint in the bootstrap",
		g->rank, peer);
	return OXR_OK;
}

/* The link's byte order as its handshake will settle it (both ends' bytes
 * are known from the endpoints): sends queue before it opens.  An endpoint
 * that cannot be looked up leaves the host's order, which the handshake's
 * order bytes then confirm or the link fails. */
static void opening(oxr_group *g, struct link *l, int peer)
{
	const struct oxr_endpoint *e;

	l->peer = peer;
	l->mode = OXR_LINK_AUTH;
	if (endpoint(g, peer, &e) == OXR_OK)
		(void)oxr_order_resolve(oxr_order_byte(g->ctx->order), e->order, &l->order);
	oxr_link_to(l, LINK_OPENING);
}

static void set_waiting(oxr_group *g, struct link *l, int64_t *at, int64_t when)
{
	if (!l->retry_at && !l->open_by)
		g->nwaiting++;
	*at = when;
	due_by(g, when);
}

static void clear_waiting(oxr_group *g, struct link *l)
{
	if (l->retry_at || l->open_by)
		g->nwaiting--;
	l->retry_at = l->open_by = 0;
}

/* h ended with st: the link it was to open fails, waits, or does not care. */
static void hs_end(oxr_group *g, struct oxr_hs *h, oxr_status_t st)
{
	struct link *l = driven(g, h);
	char why[256];

	snprintf(why, sizeof(why), "%s", oxr_errmsg());
	oxr_demand_forget(g, h);
	if (!l) { /* an incoming one not verified, or displaced: nothing waits on it */
		oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: a handshake with %s ended: %s", g->rank,
			h->addr, why);
	} else if (h->refused == OXR_REF_RACE) {
		l->hs = NULL;
		set_waiting(g, l, &l->open_by, oxr_now_ms() + g->ctx->link_timeout_ms);
	} else if (h->refused == OXR_REF_BUSY) {
		l->hs = NULL;
		set_waiting(g, l, &l->retry_at, oxr_now_ms() + RETRY_MS);
	} else {
		l->hs = NULL;
		oxr_link_fail(g, l, st == OXR_ERR_AUTH ? OXR_ERR_AUTH : OXR_ERR_PEER,
			      "link to rank %d (%s) could not be opened: %s", l->peer, h->addr, why);
	}
	oxr_hs_free(h);
}

static void run(oxr_group *g, struct oxr_hs *h)
{
	uint32_t was = h->events;
	struct link *l;
	oxr_status_t st;
	int done;

	if ((st = oxr_hs_step(h, &done))) {
		hs_end(g, h, st);
		return;
	}
	if (!done) {
		if (h->events != was)
			watch(g, h, EPOLL_CTL_MOD);
		return;
	}
	l = driven(g, h);
	oxr_demand_forget(g, h);
	if (!l) { /* cannot happen: a done handshake was verified and claimed */
		oxr_hs_free(h);
		return;
	}
	l->hs = NULL;
	(void)oxr_hs_attach(h); /* a failure fails the link (oxr_link_attach) */
	oxr_hs_free(h);
}

static oxr_status_t start_out(oxr_group *g, struct link *l, int peer)
{
	const struct oxr_endpoint *e;
	char host[sizeof(e->host) + 1], addr[80];
	int port, fd;
	struct oxr_hs *h;
	oxr_status_t st;

	if (l->state == LINK_NONE)
		opening(g, l, peer);
	if ((st = endpoint(g, peer, &e))) {
		oxr_link_fail(g, l, st, "%s", oxr_errmsg());
		return oxr_err(st, "%s", l->errmsg);
	}
	port = (int)oxr_load32(e->port, OXR_ORDER_LITTLE);
	memcpy(host, e->host, sizeof(e->host));
	host[sizeof(e->host)] = 0;
	snprintf(addr, sizeof(addr), "%s:%d", host, port);
	st = oxr_tcp_connect_start(host, port, &fd);
	if (st == OXR_OK)
		st = oxr_hs_start(g, fd, OXR_LINK_AUTH, 0, peer, addr, 1, g->ctx->link_timeout_ms, &h);
	if (st == OXR_OK && (st = slot_add(g, h)))
		oxr_hs_free(h);
	if (st) {
		oxr_link_fail(g, l, st, "link to rank %d (%s) could not be opened: %s", peer, addr,
			      oxr_errmsg());
		return oxr_err(st, "%s", l->errmsg);
	}
	l->hs = h;
	oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: opens its link to rank %d (%s)", g->rank, peer,
		addr);
	run(g, h);
	return OXR_OK;
}

oxr_status_t oxr_link_want(oxr_group *g, int peer)
{
	oxr_status_t st;
	struct link *l;

	if (peer < 0 || peer >= g->size || peer == g->rank)
		return oxr_err(OXR_ERR_INVAL, "rank %d is not a peer of rank %d (group of %d)", peer,
			       g->rank, g->size);
	l = g->links[peer];
	if (l && (link_up(l) || l->state == LINK_OPENING))
		return OXR_OK;
	if (!l || !link_down(l)) {
		if (!g->eps)
			return oxr_err(OXR_ERR_INVAL, "no link from rank %d to rank %d is open (this "
				       "group's links are opened by oxr_link_connect / "
				       "oxr_link_accept)", g->rank, peer);
		if (!(l = oxr_link_slot(g, peer)))
			return OXR_ERR_NOMEM;
		if ((st = start_out(g, l, peer)))
			return st;
	}
	/* down before, or now: the handshake may have ended at once (a dead
	 * peer refuses on this host), and nothing may be queued on a link that
	 * will never carry it */
	if (link_down(l)) {
		oxr_err_keep(l->errmsg);
		return l->err;
	}
	return OXR_OK;
}

int oxr_demand_claim(oxr_group *g, struct oxr_hs *h, int claimed)
{
	struct link *l = oxr_link_slot(g, claimed);

	if (!l || link_up(l))
		return OXR_REF_RANK; /* the other open of a race won already */
	if (l->hs && l->hs != h) {
		if (l->hs->acceptor)
			return OXR_REF_RANK; /* a second verified open from one rank */
		if (claimed > g->rank)
			return OXR_REF_RACE; /* ours goes on */
		oxr_demand_forget(g, l->hs); /* theirs goes on */
		oxr_hs_free(l->hs);
		l->hs = NULL;
	}
	clear_waiting(g, l);
	if (link_down(l)) /* a rank restarted in the place of a dead one */
		oxr_link_close(g, l);
	if (l->state == LINK_NONE)
		opening(g, l, claimed);
	l->hs = h;
	return 0;
}

static void take_connects(oxr_group *g)
{
	int i;

	for (i = 0; i < ACCEPT_BURST; i++) {
		struct oxr_hs *h;
		char addr[64];
		int fd = accept4(g->demand_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: accept: %s", g->rank,
					strerror(errno));
			return;
		}
		oxr_tcp_tune_fd(fd);
		oxr_tcp_peer_name(fd, addr, sizeof(addr));
		if (oxr_hs_start(g, fd, OXR_LINK_AUTH, 1, -1, addr, 0, g->ctx->link_timeout_ms, &h))
			continue;
		if (slot_add(g, h)) {
			oxr_hs_free(h);
			continue;
		}
		run(g, h);
	}
}

void oxr_demand_event(oxr_group *g, uint32_t key, uint32_t events)
{
	uint32_t slot = key & ~OXR_EPOLL_HS;

	(void)events;
	if (key == OXR_EPOLL_LISTEN) {
		take_connects(g);
		return;
	}
	if (slot < (uint32_t)g->hs_cap && g->hs[slot])
		run(g, g->hs[slot]);
}

/*
 * What is due: handshakes past their deadline fail, links whose retry or
 * whose peer's open is due move on.  The engine calls it when the first
 * deadline (g->demand_due) has come, and sleeps until the next one: the
 * deadlines are seconds away, so a rank waiting on a slow handshake
 * sleeps instead of waking every few ms (1,024 ranks on 2 cores woken
 * every 20 ms spent the cores on their wake-ups alone).
 */
void oxr_demand_tick(oxr_group *g)
{
	int64_t now = oxr_now_ms();
	int i;

	g->demand_due = 0;
	for (i = 0; i < g->hs_cap && g->nhs; i++) {
		struct oxr_hs *h = g->hs[i];
		if (h && now > h->deadline)
			hs_end(g, h, oxr_err(OXR_ERR_TIMEOUT, "handshake with %s: no answer within "
					     "%d ms (OXR_LINK_TIMEOUT_MS)", h->addr,
					     g->ctx->link_timeout_ms));
	}
	for (i = 0; i < g->hs_cap && g->nhs; i++)
		if (g->hs[i])
			due_by(g, g->hs[i]->deadline);
	for (i = 0; i < g->nused && g->nwaiting; i++) {
		struct link *l = g->links[g->used[i]];
		if (l->retry_at && now >= l->retry_at) {
			clear_waiting(g, l);
			if (l->state == LINK_OPENING && !l->hs)
				(void)start_out(g, l, l->peer);
		} else if (l->open_by && now >= l->open_by) {
			clear_waiting(g, l);
			if (l->state == LINK_OPENING && !l->hs)
				oxr_link_fail(g, l, OXR_ERR_TIMEOUT, "rank %d did not open its link "
					      "within %d ms (OXR_LINK_TIMEOUT_MS)", l->peer,
					      g->ctx->link_timeout_ms);
		}
	}
	for (i = 0; i < g->nused && g->nwaiting; i++) {
		struct link *l = g->links[g->used[i]];
		if (l->retry_at || l->open_by)
			due_by(g, l->retry_at ? l->retry_at : l->open_by);
	}
}

void oxr_demand_drop_link(oxr_group *g, struct link *l)
{
	clear_waiting(g, l);
	if (l->hs) {
		oxr_demand_forget(g, l->hs);
		oxr_hs_free(l->hs);
		l->hs = NULL;
	}
}

void oxr_link_opened(oxr_group *g, struct link *l)
{
	clear_waiting(g, l);
	if (l->mode == OXR_LINK_AUTH) {
		oxr_reset_link_opened(g, l);
		oxr_windows_link_opened(g, l);
	}
	if (l->sq_head)
		oxr_link_write(g, l);
}

int oxr_demand_committed(const oxr_group *g)
{
	int i;

	for (i = 0; i < g->hs_cap && g->nhs; i++)
		if (g->hs[i] && g->hs[i]->committed)
			return 1;
	return 0;
}

void oxr_demand_cancel_all(oxr_group *g)
{
	int i;

	for (i = 0; i < g->hs_cap; i++)
		if (g->hs[i]) {
			struct link *l = driven(g, g->hs[i]);
			if (l)
				l->hs = NULL;
			oxr_demand_forget(g, g->hs[i]);
			oxr_hs_free(g->hs[i]);
		}
}

void oxr_demand_renumbered(oxr_group *g)
{
	int i;

	for (i = 0; i < g->nused; i++) {
		struct link *l = g->links[g->used[i]];
		if (l->state != LINK_OPENING || l->hs)
			continue;
		clear_waiting(g, l);
		(void)start_out(g, l, l->peer); /* a failure fails the link */
	}
}

void oxr_demand_free(oxr_group *g)
{
	oxr_demand_cancel_all(g);
	free(g->hs);
	g->hs = NULL;
	g->hs_cap = g->nhs = 0;
	free(g->eps);
	g->eps = NULL;
	free(g->boot_rank);
	g->boot_rank = NULL;
	oxr_boot_release(g->boot);
	g->boot = NULL;
}
