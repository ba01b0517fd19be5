/* SPDX-License-Identifier: MIT */
/* Groups, their links, and the send / receive calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "link.h"
#include "link_open.h"
#include "provider.h"
#include "sha256.h"
#include "tcp/tcp_socket.h"

oxr_status_t oxr_group_create(oxr_ctx *c, int nserver, int rank, oxr_group **out)
{
	oxr_group *g;

	if (!c || !out || nserver < 1 || nserver > (1 << 20) || rank < 0 || rank >= nserver)
		return oxr_err(OXR_ERR_INVAL, "group: bad nserver %d or rank %d", nserver, rank);
	g = calloc(1, sizeof(*g));
	if (g)
		g->revoke_failed = -1;
	/* one pointer a rank: untouched pages of it cost nothing */
	if (!g || !(g->links = calloc((size_t)nserver, sizeof(*g->links)))) {
		free(g);
		return oxr_err(OXR_ERR_NOMEM, "group: out of memory for %d ranks", nserver);
	}
	g->demand_lfd = -1;
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (g->epfd < 0 || oxr_arena_create(&g->scratch)) {
		if (g->epfd >= 0)
			close(g->epfd);
		free(g->links);
		free(g);
		return oxr_err(OXR_ERR_IO, "group: epoll_create1 or arena failed");
	}
	g->ctx = c;
	g->size = nserver;
	g->rank = rank;
	*out = g;
	return OXR_OK;
}

void oxr_group_destroy(oxr_group *g)
{
	int i;

	if (!g)
		return;
	oxr_group_log_stats(g);
	/* receives still posted end here, so freeing them later is safe */
	for (; g->posted; g->posted = g->posted->next_posted) {
		g->posted->st = OXR_ERR_CLOSED;
		g->posted->done = 1;
	}
	oxr_say_bye(g);
	oxr_demand_free(g); /* links still opening stay closed */
	for (i = 0; i < g->nused; i++)
		oxr_link_drain(g, g->links[g->used[i]]);
	for (i = 0; i < g->nused; i++)
		oxr_link_close(g, g->links[g->used[i]]);
	oxr_link_engine_free(g);
	for (i = 0; i < g->nlis; i++)
		close(g->lis[i].fd);
	free(g->lis);
	oxr_windows_free(g);
	oxr_shrink_group_free(g);
	oxr_arena_destroy(g->scratch);
	close(g->epfd);
	for (i = 0; i < g->nused; i++)
		free(g->links[g->used[i]]);
	free(g->links);
	free(g->used);
	free(g->spare_op);
	free(g);
}

int oxr_group_size(const oxr_group *g) { return g->size; }
int oxr_group_rank(const oxr_group *g) { return g->rank; }
uint32_t oxr_group_epoch(const oxr_group *g) { return g->epoch; }

uint32_t oxr_group_next_object(oxr_group *g) { return g->objs++; }

int oxr_rank_list(const oxr_group *g, int (*owes)(const oxr_group *, int, const void *),
		  const void *arg, char *buf, size_t len)
{
	size_t at = 0;
	int i, n = 0;

	buf[0] = 0;
	for (i = 0; i < g->nused; i++)
		if (owes(g, g->used[i], arg) && n++ < 8)
			at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%d",
					       n == 1 ? "" : ", ", g->used[i]);
	if (n > 8)
		snprintf(buf + at, at < len ? len - at : 0, " (%d in all)", n);
	return n;
}

oxr_status_t oxr_group_set_token(oxr_group *g, const uint8_t *token, size_t len)
{
	if (!token || len != sizeof(g->token))
		return oxr_err(OXR_ERR_INVAL, "group token: %zu bytes given, %zu needed", len,
			       sizeof(g->token));
	memcpy(g->token, token, len);
	g->have_token = 1;
	{ /* the id revokes name: from the token, which it must not reveal */
		struct oxr_sha256 h;
		uint8_t d[32];
		int i;
		oxr_sha256_init(&h);
		oxr_sha256_update(&h, "oxr group id", 12);
		oxr_sha256_update(&h, token, len);
		oxr_sha256_final(&h, d);
		for (g->gid = 0, i = 0; i < 8; i++)
			g->gid = g->gid << 8 | d[i];
	}
	return OXR_OK;
}

static struct listener *find_listener(oxr_group *g, int port)
{
	int i;

	for (i = 0; i < g->nlis; i++)
		if (g->lis[i].port == port)
			return &g->lis[i];
	return NULL;
}

oxr_status_t oxr_link_listen(oxr_group *g, int port, int *bound)
{
	struct listener *l = port ? find_listener(g, port) : NULL, *nl;
	int fd, b;
	oxr_status_t st;

	if (l) {
		if (bound)
			*bound = l->port;
		return OXR_OK;
	}
	if ((st = oxr_tcp_listen(port, &fd, &b)))
		return st;
	nl = realloc(g->lis, (size_t)(g->nlis + 1) * sizeof(*nl));
	if (!nl) {
		close(fd);
		return oxr_err(OXR_ERR_NOMEM, "listen: out of memory");
	}
	g->lis = nl;
	g->lis[g->nlis++] = (struct listener){ .fd = fd, .port = b };
	if (bound)
		*bound = b;
	return OXR_OK;
}

/* The handshake (with the transport offers of authenticated links) run to
 * its end on this thread, then the engine. */
static oxr_status_t open_link(oxr_group *g, int fd, int mode, int acceptor, int peer,
			      const char *addr, int timeout_ms)
{
	struct oxr_hs *h;
	oxr_status_t st = oxr_hs_start(g, fd, mode, acceptor, peer, addr, 0, timeout_ms, &h);

	return st ? st : oxr_hs_run(h);
}

static int check_mode(int mode)
{
	return mode == OXR_LINK_AUTH || mode == OXR_LINK_OPENXM;
}

/* What an accept or a connect checks first (acceptor: peer_rank may be -1
 * on authenticated links: any higher rank not yet linked). */
static oxr_status_t check_link(oxr_group *g, int peer_rank, int mode, int acceptor,
			       int *timeout_ms)
{
	const char *what = acceptor ? "accept" : "connect";

	if (!check_mode(mode) || peer_rank >= g->size || peer_rank == g->rank ||
	    (peer_rank < 0 && (!acceptor || mode == OXR_LINK_OPENXM)))
		return oxr_err(OXR_ERR_INVAL, "%s: bad peer rank %d or mode %d (rank %d of %d)",
			       what, peer_rank, mode, g->rank, g->size);
	if (peer_rank >= 0 && link_up(link_peek(g, peer_rank)))
		return oxr_err(OXR_ERR_INVAL, "%s: a link to rank %d is already open", what,
			       peer_rank);
	if (*timeout_ms < 0)
		*timeout_ms = g->ctx->link_timeout_ms;
	return OXR_OK;
}

oxr_status_t oxr_link_accept(oxr_group *g, int port, int peer_rank, int mode, int timeout_ms)
{
	struct listener *l;
	char addr[64];
	int fd;
	oxr_status_t st;

	if ((st = check_link(g, peer_rank, mode, 1, &timeout_ms)) ||
	    (st = oxr_link_listen(g, port, &port)))
		return st;
	l = find_listener(g, port);
	if ((st = oxr_tcp_accept(l->fd, timeout_ms, &fd, addr, sizeof(addr))))
		return st;
	return open_link(g, fd, mode, 1, peer_rank, addr, timeout_ms);
}

oxr_status_t oxr_link_connect(oxr_group *g, const char *host, int port, int peer_rank,
			      int mode, int timeout_ms)
{
	char addr[64];
	int fd;
	oxr_status_t st;

	if ((st = check_link(g, peer_rank, mode, 0, &timeout_ms)) ||
	    (st = oxr_tcp_connect(host, port, timeout_ms, &fd)))
		return st;
	snprintf(addr, sizeof(addr), "%s:%d", host, port);
	return open_link(g, fd, mode, 0, peer_rank, addr, timeout_ms);
}

oxr_status_t oxr_link_accept_path(oxr_group *g, const char *path, int peer_rank, int mode,
				  int timeout_ms)
{
	char addr[64];
	int lfd, fd;
	oxr_status_t st;

	if ((st = check_link(g, peer_rank, mode, 1, &timeout_ms)) ||
	    (st = oxr_unix_listen(path, &lfd)))
		return st;
	st = oxr_tcp_accept(lfd, timeout_ms, &fd, addr, sizeof(addr));
	/* one peer per path, as in asir; the file goes with the listener */
	close(lfd);
	unlink(path);
	if (st)
		return oxr_err(st, "accept on unix socket %s: %s", path, oxr_errmsg());
	snprintf(addr, sizeof(addr), "unix:%s", path);
	return open_link(g, fd, mode, 1, peer_rank, addr, timeout_ms);
}

oxr_status_t oxr_link_connect_path(oxr_group *g, const char *path, int peer_rank, int mode,
				   int timeout_ms)
{
	char addr[64];
	int fd;
	oxr_status_t st;

	if ((st = check_link(g, peer_rank, mode, 0, &timeout_ms)) ||
	    (st = oxr_unix_connect(path, timeout_ms, &fd)))
		return st;
	snprintf(addr, sizeof(addr), "unix:%s", path);
	return open_link(g, fd, mode, 0, peer_rank, addr, timeout_ms);
}

int oxr_link_is_open(const oxr_group *g, int peer)
{
	return peer >= 0 && peer < g->size && link_up(link_peek(g, peer));
}

int oxr_group_links_on_demand(const oxr_group *g)
{
	return g && g->eps;
}

int oxr_link_lost(oxr_group *g, int peer)
{
	if (peer < 0 || peer >= g->size || peer == g->rank)
		return 0;
	if (link_peek(g, peer)->state == LINK_NONE)
		(void)oxr_link_want(g, peer); /* a failure to open leaves it down */
	return link_down(link_peek(g, peer));
}

const char *oxr_link_transport(const oxr_group *g, int peer)
{
	if (!oxr_link_is_open(g, peer))
		return NULL;
	return g->links[peer]->ops->name;
}

int oxr_link_same_host(const oxr_group *g, int peer)
{
	return oxr_link_is_open(g, peer) ? g->links[peer]->same_host : -1;
}

oxr_status_t oxr_link_order(const oxr_group *g, int peer, int *order)
{
	if (!oxr_link_is_open(g, peer))
		return oxr_err(OXR_ERR_INVAL, "no open link to rank %d", peer);
	*order = g->links[peer]->order;
	return OXR_OK;
}

/* ---- messages ------------------------------------------------------- */

void oxr_rmsg_free(oxr_rmsg *m)
{
	if (m) /* m itself is in its arena (progress.c, enqueue_msg) */
		oxr_arena_destroy(m->arena);
}

static int send_done(void *arg)
{
	struct sendop *op = arg;

	return op->done;
}

oxr_status_t oxr_send(oxr_group *g, int peer, const oxr_ox_msg *m)
{
	struct sendop *op;
	oxr_status_t st = oxr_queue_send(g, peer, m, NULL, &op);

	if (st)
		return st;
	/* a revoke meanwhile drops the send, or, begun, lets it finish: it
	 * completes either way, with OXR_ERR_REVOKED */
	g->hold_revoke++;
	st = oxr_progress_until(g, send_done, op, -1);
	g->hold_revoke--;
	/* most sends complete at once, without a wait that reads the links: a
	 * rank that only sends looks at them now and then, or it would never
	 * hear of a failure or a revoke */
	if (st == OXR_OK && !(++g->quiet_sends & 15))
		(void)oxr_progress_once(g, 0);
	if (st && !op->done) /* the engine itself failed: give up the link, not the memory */
		oxr_link_fail(g, g->links[peer], st, "send to rank %d: %s", peer, oxr_errmsg());
	if (st == OXR_OK)
		st = op->st;
	/* a revoke that dropped the send leaves this link's message empty: say
	 * who revoked, or which rank failed, as a receive would */
	if (st == OXR_ERR_REVOKED && g->epoch_revoked && !g->links[peer]->errmsg[0])
		st = oxr_err(OXR_ERR_REVOKED, "send to rank %d: %s", peer, g->revoke_msg);
	else if (st)
		oxr_err_keep(g->links[peer]->errmsg);
	free(op->mem);
	/* kept for the next send: a blocking send's op never outlives it, and
	 * a small message's path is short enough for a calloc to show */
	if (g->spare_op)
		free(op);
	else
		g->spare_op = op;
	return st;
}

/* Takes the first queued message of the link, or its error. */
static oxr_status_t pop_msg(oxr_group *g, struct link *l, oxr_rmsg **out)
{
	if (!l->rq_head) {
		oxr_err_keep(link_down(l) ? l->errmsg : "no link");
		return link_down(l) ? l->err : OXR_ERR_INVAL;
	}
	*out = oxr_link_take(l);
	/* Below the bound again: bytes already buffered must be decoded now,
	 * since epoll will not report them a second time. */
	if (link_up(l) && oxr_link_buffered(l))
		oxr_link_read(g, l);
	else
		oxr_link_update_events(g, l);
	return OXR_OK;
}

/* Receives posted for one peer take its messages in the order they were
 * posted, whichever is tested first (MPI's non-overtaking rule): every
 * message there is goes to the oldest unmatched receive of that peer. */
static void match_posted(oxr_group *g, int peer)
{
	struct link *l = g->links[peer]; /* check_peer made it */
	oxr_req **pp = &g->posted, *r;

	while (*pp && (l->rq_head || link_gone(l))) {
		r = *pp;
		if (r->peer != peer) {
			pp = &r->next_posted;
			continue;
		}
		*pp = r->next_posted;
		r->st = pop_msg(g, l, &r->m);
		r->done = 1;
	}
}

static void unpost(oxr_req *r)
{
	oxr_req **pp;

	for (pp = &r->g->posted; *pp && *pp != r; pp = &(*pp)->next_posted)
		;
	if (*pp)
		*pp = r->next_posted;
}

struct recv_wait {
	oxr_group *g;
	int peer;
};

/* A blocking receive comes after the receives already posted. */
static int have_msg(void *arg)
{
	struct recv_wait *w = arg;
	struct link *l = w->g->links[w->peer];

	match_posted(w->g, w->peer);
	return l->rq_head || link_gone(l);
}

static oxr_status_t check_peer(oxr_group *g, int peer, const char *what)
{
	if (oxr_group_stopped(g))
		return oxr_revoked_err(g, what);
	if (peer < 0 || peer >= g->size || peer == g->rank)
		return oxr_err(OXR_ERR_INVAL, "%s: rank %d is not a peer of rank %d (group of %d)",
			       what, peer, g->rank, g->size);
	/* a receive opens the link too: a peer that died before it sent
	 * anything shows as a failed open, not as a wait that never ends */
	if (!oxr_link_slot(g, peer))
		return OXR_ERR_NOMEM;
	return g->links[peer]->state == LINK_NONE ? oxr_link_want(g, peer) : OXR_OK;
}

oxr_status_t oxr_recv(oxr_group *g, int peer, int timeout_ms, oxr_rmsg **out)
{
	struct recv_wait w = { g, peer };
	struct link *l;
	oxr_status_t st = check_peer(g, peer, "recv");

	if (st)
		return st;
	l = g->links[peer];
	if (!have_msg(&w)) {
		st = oxr_progress_until(g, have_msg, &w, timeout_ms);
		if (st)
			return st;
	}
	return pop_msg(g, l, out);
}

oxr_status_t oxr_isend(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req **req)
{
	oxr_req *r = calloc(1, sizeof(*r));
	struct sendop *op;
	oxr_status_t st;

	if (!r)
		return oxr_err(OXR_ERR_NOMEM, "isend: out of memory");
	r->g = g;
	r->peer = peer;
	r->is_send = 1;
	st = oxr_queue_send(g, peer, m, r, &op);
	if (st) {
		free(r);
		return st;
	}
	*req = r;
	return OXR_OK;
}

oxr_status_t oxr_irecv(oxr_group *g, int peer, oxr_req **req)
{
	oxr_status_t st = check_peer(g, peer, "irecv");
	oxr_req *r, **pp;

	if (st)
		return st;
	r = calloc(1, sizeof(*r));
	if (!r)
		return oxr_err(OXR_ERR_NOMEM, "irecv: out of memory");
	r->g = g;
	r->peer = peer;
	for (pp = &g->posted; *pp; pp = &(*pp)->next_posted)
		;
	*pp = r;
	*req = r;
	return OXR_OK;
}

/* A receive completes when its link has a message for it (or has failed). */
static void try_recv(oxr_req *r)
{
	if (r->done || r->is_send)
		return;
	if (r->g->epoch_revoked) {
		unpost(r);
		r->st = oxr_revoked_err(r->g, "irecv");
		r->done = 1;
	} else {
		match_posted(r->g, r->peer);
	}
}

static int req_done(void *arg)
{
	oxr_req *r = arg;

	try_recv(r);
	return r->done;
}

/* A request that a revoke ended says who revoked or which rank failed, as
 * the blocking calls do; the message of the moment may be anyone's. */
static oxr_status_t req_status(oxr_req *r)
{
	char what[48];

	if (r->st == OXR_ERR_REVOKED && r->g->epoch_revoked) {
		snprintf(what, sizeof(what), "%s rank %d", r->is_send ? "send to" : "receive from",
			 r->peer);
		return oxr_revoked_err(r->g, what);
	}
	if (r->st && r->g->links[r->peer]->errmsg[0])
		oxr_err_keep(r->g->links[r->peer]->errmsg);
	return r->st;
}

oxr_status_t oxr_req_test(oxr_req *r, int *done)
{
	oxr_status_t st = oxr_progress_once(r->g, 0);

	try_recv(r);
	*done = r->done;
	return r->done ? req_status(r) : st;
}

oxr_status_t oxr_req_wait(oxr_req *r, int timeout_ms)
{
	oxr_status_t st = oxr_progress_until(r->g, req_done, r, timeout_ms);

	return st ? st : req_status(r);
}

oxr_rmsg *oxr_req_take(oxr_req *r)
{
	oxr_rmsg *m = r->m;

	r->m = NULL;
	return m;
}

static int req_is_done(void *arg)
{
	return ((oxr_req *)arg)->op == NULL;
}

void oxr_req_free(oxr_req *r)
{
	if (!r)
		return;
	if (r->op && !r->op->started) {
		/* not begun: it leaves the queue, so the caller's memory it points
		 * at may go as soon as this returns */
		struct link *l = r->g->links[r->peer];
		struct sendop **pp;
		for (pp = &l->sq_head; *pp && *pp != r->op; pp = &(*pp)->next)
			;
		if (*pp) {
			*pp = r->op->next;
			for (l->sq_tail = l->sq_head; l->sq_tail && l->sq_tail->next;)
				l->sq_tail = l->sq_tail->next;
			free(r->op->mem);
			free(r->op);
			r->op = NULL;
		}
	}
	if (r->op) {
		/* begun (bytes out, or announced to a verbs peer that reads them):
		 * it is finished from the caller's memory before that may go; a
		 * link that fails ends it too */
		r->g->hold_revoke++;
		(void)oxr_progress_until(r->g, req_is_done, r, -1);
		r->g->hold_revoke--;
		if (r->op) { /* the engine itself failed: the op must not outlive us */
			oxr_link_fail(r->g, r->g->links[r->peer], OXR_ERR_IO,
				      "a send freed half written");
			if (r->op) {
				r->op->req = NULL;
				r->op->orphan = 1;
			}
		}
	}
	if (!r->is_send && !r->done)
		unpost(r);
	oxr_rmsg_free(r->m);
	free(r);
}

oxr_status_t oxr_group_progress(oxr_group *g)
{
	oxr_status_t st = oxr_progress_once(g, 0);

	/* a loop that polls memory and calls this learns of a revoke here; the
	 * links still moved (a reset's balls and frames must get through) */
	if (st == OXR_OK && oxr_group_stopped(g))
		return oxr_revoked_err(g, "progress");
	return st;
}
