/* SPDX-License-Identifier: MIT */
/*
 * The progress engine of a group: one epoll set over its links.  A round
 * reads what arrived (each link feeds an incremental decoder, and finished
 * messages queue on the link in order), writes what waits in the links'
 * send queues (writev from gather lists, partial writes resumed), and
 * completes requests.
 *
 * Blocking waits spin on non-blocking rounds for OXR_SPIN_US, then sleep in
 * epoll_wait: spinning keeps a ping-pong off the ~55 us wake-up path, and
 * sleeping lets a group oversubscribed on few cores make progress.  Bytes
 * moving on a socket restart the spin: a large message arrives in pieces
 * over hundreds of us, and sleeping between them costs a wake-up each.
 *
 * Flow control: a link stops reading once OXR_RECV_QUEUE_BYTES of received
 * messages wait to be taken, so TCP pushes back on a fast sender instead of
 * memory growing; sends are bounded by the caller (blocking sends finish
 * writing before they return, non-blocking ones by their requests).
 */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "cmo_encode.h"
#include "link.h"
#include "link_open.h"
#include "provider.h"
#include "tcp/tcp_socket.h"

#define RBUF 65536
#define BIG_PAYLOAD 16384 /* payloads at least this long are written from the object */
#define DIRECT_MIN 16384  /* and read into it */

static void complete_send(struct sendop *op, oxr_status_t st)
{
	if (st == OXR_OK && op->revoked)
		st = OXR_ERR_REVOKED;
	op->st = st;
	op->done = 1;
	if (op->req) {
		op->req->st = st;
		op->req->done = 1;
		op->req->op = NULL;
	}
	/* a blocking send owns its op and frees it after its wait */
	if (op->req || op->orphan) {
		free(op->mem);
		free(op);
	}
}

/* A provider's half of a link that never became one, or that ends. */
static void destroy_priv(oxr_group *g, const struct oxr_link_ops *ops, void *priv)
{
	if (priv && ops && ops->destroy)
		ops->destroy(g, priv);
}

static int fd_stream(const struct link *l)
{
	return l->ops && (l->ops->caps & OXR_LINK_CAP_FD_STREAM);
}

/* l ends (to: ENDED or FAILED) with st and the message already in errmsg. */
static void link_end(oxr_group *g, struct link *l, oxr_status_t st, enum link_state to)
{
	struct sendop *op, *next;
	int leaving = l->state == LINK_LEAVING;

	l->err = st;
	oxr_link_to(l, to);
	if (fd_stream(l))
		g->fd_links--;
	oxr_log(g->ctx, st == OXR_ERR_CLOSED ? OXR_LOG_DEBUG : to == LINK_ENDED ? OXR_LOG_INFO
										: OXR_LOG_WARN,
		"rank %d: %s", g->rank, l->errmsg);
	if (l->fd >= 0) {
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, l->fd, NULL);
		close(l->fd);
		l->fd = -1;
	}
	for (op = l->sq_head; op; op = next) {
		next = op->next;
		complete_send(op, st);
	}
	l->sq_head = l->sq_tail = NULL;
	if (!leaving) /* a rank that did not say BYE failed: the group knows */
		oxr_revoke_failed(g, l);
}

void oxr_link_fail(oxr_group *g, struct link *l, oxr_status_t st, const char *fmt, ...)
{
	va_list ap;

	if (!link_up(l) && l->state != LINK_OPENING)
		return;
	va_start(ap, fmt);
	vsnprintf(l->errmsg, sizeof(l->errmsg), fmt, ap);
	va_end(ap);
	/* one still opening may be failed from outside its handshake (the
	 * heartbeat, a revoke naming the rank): the handshake goes with it */
	if (l->state == LINK_OPENING)
		oxr_demand_drop_link(g, l);
	link_end(g, l, st, LINK_FAILED);
}

void oxr_link_mark_failed(oxr_group *g, int peer, const char *why)
{
	struct link *l = oxr_link_slot(g, peer);

	if (!l || link_down(l))
		return;
	if (l->state != LINK_NONE) {
		oxr_link_fail(g, l, OXR_ERR_PEER, "%s", why);
		return;
	}
	l->err = OXR_ERR_PEER;
	snprintf(l->errmsg, sizeof(l->errmsg), "%s", why);
	oxr_link_to(l, LINK_FAILED);
}

void oxr_link_closed_by_peer(oxr_group *g, struct link *l)
{
	if (!link_up(l))
		return;
	snprintf(l->errmsg, sizeof(l->errmsg), "link to rank %d (%s) closed by the peer", l->peer,
		 l->addr);
	link_end(g, l, OXR_ERR_PEER, LINK_ENDED);
}

oxr_status_t oxr_link_attach(oxr_group *g, int peer, int fd, int mode, const struct oxr_link_hs *hs,
			     const char *addr, const struct oxr_link_ops *ops, void *priv)
{
	struct link *l = oxr_link_slot(g, peer);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)peer };
	oxr_status_t st;

	struct sendop *sq_head = NULL, *sq_tail = NULL;
	uint32_t fenced = 0;

	if (!l) {
		close(fd);
		destroy_priv(g, ops, priv);
		return OXR_ERR_NOMEM;
	}
	if (link_up(l)) {
		close(fd);
		destroy_priv(g, ops, priv);
		return oxr_err(OXR_ERR_INVAL, "a link to rank %d is already open", peer);
	}
	if (l->state == LINK_OPENING && l->sq_head && l->order != hs->order) {
		/* encoded in the order the endpoints promised: cannot go out */
		close(fd);
		destroy_priv(g, ops, priv);
		oxr_link_fail(g, l, OXR_ERR_PROTO, "link to rank %d (%s): opened in another byte "
			      "order than its endpoint said", peer, addr);
		return oxr_err(OXR_ERR_PROTO, "%s", l->errmsg);
	}
	if (l->state == LINK_OPENING) { /* what was sent meanwhile goes out now */
		sq_head = l->sq_head;
		sq_tail = l->sq_tail;
		fenced = l->sh_fenced; /* its fence is in sq */
		l->sq_head = l->sq_tail = NULL;
		l->state = LINK_NONE; /* nothing else of it to free */
	}
	oxr_link_close(g, l);
	l->sq_head = sq_head;
	l->sq_tail = sq_tail;
	l->sh_fenced = fenced;
	if (g->sh.due) /* opened in the reset that ends a shrink: nothing on it is old */
		l->sh_fence = g->sh.gen;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	l->rbuf = malloc(RBUF);
	st = l->rbuf ? oxr_arena_create(&l->arena) : OXR_ERR_NOMEM;
	if (st == OXR_OK)
		st = oxr_decoder_create(&l->dec, OXR_DECODE_OX, hs->order, &g->ctx->limits, l->arena);
	if (st == OXR_OK && epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev))
		st = oxr_err(OXR_ERR_IO, "epoll_ctl: %s", strerror(errno));
	if (st) {
		close(fd);
		destroy_priv(g, ops, priv);
		l->state = sq_head ? LINK_OPENING : LINK_NONE;
		l->peer = peer;
		l->mode = mode;
		oxr_link_fail(g, l, st, "link to rank %d (%s): %s", peer, addr, oxr_errmsg());
		oxr_link_close(g, l);
		return st;
	}
	l->fd = fd;
	l->ops = ops;
	l->priv = priv;
	if (fd_stream(l)) {
		g->fd_links++;
		oxr_tcp_tune_link(g->ctx, fd);
	}
	l->peer = peer;
	l->mode = mode;
	l->order = hs->order;
	l->same_host = hs->same_host;
	l->events = EPOLLIN;
	oxr_link_to(l, LINK_OPEN);
	l->last_rx = oxr_now_ms();
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: link to rank %d (%s, %s order, %s, %s, %s) open",
		g->rank, peer, addr, hs->order ? "little" : "network",
		mode == OXR_LINK_AUTH ? "auth" : "openxm", ops->name,
		hs->same_host > 0 ? "this host" : hs->same_host ? "host unknown" : "another host");
	if (ops->attached)
		ops->attached(g, l);
	oxr_link_opened(g, l);
	/* what arrived before the attach raised its event then, unheard: read it
	 * now, after the link's own frames and queued sends went out */
	if (link_up(l) && oxr_link_buffered(l))
		oxr_link_read(g, l);
	return OXR_OK;
}

void oxr_link_drain(oxr_group *g, struct link *l)
{
	if (link_up(l) && l->ops->drain)
		l->ops->drain(g, l, 1000);
}

void oxr_link_engine_free(oxr_group *g)
{
	if (g->ctx->prov->group_free)
		g->ctx->prov->group_free(g);
	if (g->ctx->hprov && g->ctx->hprov->group_free)
		g->ctx->hprov->group_free(g);
}

int oxr_link_buffered(const struct link *l)
{
	return l->roff < l->rlen || (l->ops && l->ops->buffered && l->ops->buffered(l));
}

/* Frees everything of a link; it goes back to LINK_NONE. */
void oxr_link_close(oxr_group *g, struct link *l)
{
	struct recvq *q, *qn;
	int peer;

	if (l->state != LINK_NONE)
		oxr_link_fail(g, l, OXR_ERR_CLOSED, "link to rank %d closed", l->peer);
	for (q = l->rq_head; q; q = qn) {
		qn = q->next;
		oxr_rmsg_free(q->m); /* q is in the message's arena */
	}
	oxr_decoder_destroy(l->dec);
	oxr_arena_destroy(l->arena);
	free(l->rbuf);
	oxr_shrink_free(l);
	destroy_priv(g, l->ops, l->priv);
	oxr_demand_drop_link(g, l);
	peer = l->peer; /* the slot stays that rank's */
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->peer = peer;
}

void oxr_link_update_events(oxr_group *g, struct link *l)
{
	struct epoll_event ev = { .data.u32 = (uint32_t)l->peer };

	if (!link_up(l))
		return;
	/* the socket under another provider's stream only ever tells the
	 * peer's end; that provider does the flow control */
	ev.events = !fd_stream(l) ? EPOLLIN
			 : (l->rq_bytes < g->ctx->recv_queue_bytes ? EPOLLIN : 0) |
				   (l->sq_head ? EPOLLOUT : 0);
	if (ev.events != l->events) {
		epoll_ctl(g->epfd, EPOLL_CTL_MOD, l->fd, &ev);
		l->events = ev.events;
	}
}

/* A finished message goes to the link's queue; the decoder gets a new arena.
 * The message and its queue entry live in the message's own arena: one
 * oxr_arena_destroy frees all three, and a small message costs no malloc. */
static oxr_status_t enqueue_msg(oxr_group *g, struct link *l)
{
	struct queued {
		oxr_rmsg m;
		struct recvq q;
	} *e;
	oxr_arena *next = NULL;
	int ball = oxr_decoder_msg(l->dec)->tag == OXR_OX_SYNC_BALL;

	/* revoked: this epoch's messages are discarded; a peer's ball starts
	 * what a reset keeps, or, from a peer above on an OpenXM link, the
	 * reset itself (see revoke.c) */
	if (g->epoch_revoked && !ball && !l->ball_queued && !l->ball_seen &&
	    !oxr_link_new_epoch(g, l)) {
		oxr_arena_reset(l->arena);
		return OXR_OK;
	}
	if (ball)
		l->ball_queued = 1;
	if (!(e = oxr_arena_alloc(l->arena, sizeof(*e))) || oxr_arena_create(&next))
		return OXR_ERR_NOMEM;
	e->m.msg = *oxr_decoder_msg(l->dec);
	e->m.peer = l->peer;
	e->m.arena = l->arena;
	e->q.m = &e->m;
	/* what the message really holds, so the queue bound is a memory bound */
	e->q.bytes = oxr_arena_bytes(l->arena);
	e->q.next = NULL;
	if (l->rq_tail)
		l->rq_tail->next = &e->q;
	else
		l->rq_head = &e->q;
	l->rq_tail = &e->q;
	l->rq_bytes += e->q.bytes;
	l->arena = next;
	oxr_decoder_set_arena(l->dec, next);
	return OXR_OK;
}

void oxr_link_read(oxr_group *g, struct link *l)
{
	/* A socket read that came back short emptied the socket: the next one
	 * would only say EAGAIN, a system call a small message pays for nothing
	 * (several us under a syscall-trapping sandbox).  The epoll set is
	 * level-triggered, so whatever arrives later is reported anyway.  A
	 * verbs ring without an arrived slot is as empty, and its completion
	 * calls here again. */
	int drained = 0, big = 0;

	while (link_up(l) && l->rq_bytes < g->ctx->recv_queue_bytes) {
		size_t used;
		oxr_status_t st;

		if (l->roff == l->rlen) {
			/* a large payload is read straight into its place, not via rbuf */
			void *dst = NULL;
			size_t room;
			int direct;
			ssize_t k;

			if (drained)
				break;
			room = oxr_decoder_direct(l->dec, &dst);
			direct = room >= DIRECT_MIN;
			k = direct ? l->ops->recv(g, l, dst, room, 1) : l->ops->recv(g, l, l->rbuf, RBUF, 0);
			if (k < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			drained = fd_stream(l) ? !direct && k > 0 && (size_t)k < RBUF
					       : !(l->ops->buffered && l->ops->buffered(l));
			if (k <= 0) {
				uint64_t at = oxr_decoder_pending(l->dec);
				if (k == 0 && at == 0) {
					/* between messages: how groups end */
					oxr_link_closed_by_peer(g, l);
				} else {
					oxr_link_fail(g, l, OXR_ERR_PEER,
						      "link to rank %d (%s) broke%s%s (after %llu bytes of "
						      "a message)", l->peer, l->addr, k ? ": " : "",
						      k ? strerror(errno) : " in the middle of a message",
						      (unsigned long long)at);
				}
				break;
			}
			g->fd_moved += (uint64_t)k;
			if (g->ctx->heartbeat_ms)
				l->last_rx = oxr_now_ms();
			if (direct) {
				big = fd_stream(l);
				oxr_decoder_advance(l->dec, (size_t)k);
				l->rlen = l->roff = 0; /* then a feed of nothing moves the decoder on */
			} else {
				l->rlen = (size_t)k;
				l->roff = 0;
			}
		}
		st = oxr_decoder_feed(l->dec, l->rbuf + l->roff, l->rlen - l->roff, 0, &used);
		l->roff += used;
		if (st == OXR_OK && oxr_ox_has_cmo(oxr_decoder_msg(l->dec)->tag) &&
		    oxr_decoder_msg(l->dec)->tag != OXR_OX_DATA) {
			/* the library's own frames are handled there, never queued */
			st = oxr_frame_dispatch(g, l, oxr_decoder_msg(l->dec));
			oxr_arena_reset(l->arena);
			if (st < 0) {
				oxr_link_fail(g, l, st, "%s", oxr_errmsg());
				break;
			}
			continue;
		}
		if (st == OXR_OK)
			st = enqueue_msg(g, l);
		if (st < 0) {
			oxr_link_fail(g, l, st, "bad data from rank %d (%s): %s", l->peer, l->addr,
				      st == OXR_ERR_NOMEM ? "out of memory" : oxr_decoder_error(l->dec));
			break;
		}
		/* One large message a round: its taker frees it, and its block
		 * (arena.c's cache) takes the next, still warm.  Reading ahead
		 * would fill fresh memory, faulting every page of it. */
		if (st == OXR_OK && big)
			break;
	}
	oxr_link_update_events(g, l);
}

void oxr_link_write(oxr_group *g, struct link *l)
{
	while (link_up(l) && l->sq_head) {
		struct sendop *op = l->sq_head;
		int niov = op->niov - op->cur;
		ssize_t k;

		/* offered to the transport: a verbs rendezvous may have announced
		 * it even when no byte counts as written yet, so it must finish */
		op->started = 1;
		k = l->ops->sendv(g, l, op->iov + op->cur, niov > 64 ? 64 : niov);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (k < 0) {
			int e = errno;
			/* a peer that said BYE and left: its BYE may still be unread
			 * here, and then this is its end, not a failure (a window
			 * destroyed as the peer leaves tells it so) */
			if (l->state == LINK_OPEN && (e == EPIPE || e == ECONNRESET))
				oxr_link_read(g, l);
			if (l->state == LINK_LEAVING)
				oxr_link_closed_by_peer(g, l);
			else if (link_up(l))
				oxr_link_fail(g, l, OXR_ERR_PEER, "link to rank %d (%s) broke: %s",
					      l->peer, l->addr, strerror(e));
			return;
		}
		op->left -= (size_t)k;
		g->fd_moved += (uint64_t)k;
		while (k > 0) { /* resume inside a partly written iovec next time */
			struct iovec *v = &op->iov[op->cur];
			size_t t = (size_t)k < v->iov_len ? (size_t)k : v->iov_len;
			v->iov_base = (uint8_t *)v->iov_base + t;
			v->iov_len -= t;
			k -= (ssize_t)t;
			if (v->iov_len == 0)
				op->cur++;
		}
		if (op->left == 0) {
			l->sq_head = op->next;
			if (!l->sq_head)
				l->sq_tail = NULL;
			complete_send(op, OXR_OK);
		}
	}
	oxr_link_update_events(g, l);
}

/*
 * The optional heartbeat (OXR_HEARTBEAT_MS = H), a ring failure detector:
 * each rank watches one rank, its predecessor (the next rank below it,
 * cyclically, not known dead), and pings it every H/3 when nothing else
 * went its way; the predecessor answers a ping with a beat.  A watched rank
 * heard nothing from for H has failed: its link fails, which revokes the
 * group naming it, and the revoke tells every live rank (oxr_revoke_frame
 * marks the rank failed there).  The watcher then watches the next rank
 * down.  Each rank sends one ping and one beat per H/3 whatever P is, and
 * checks one link.  It finds a peer that is alive to the kernel but stopped
 * (SIGSTOP, a hung node whose TCP stack still answers), which no link error
 * reports.
 *
 * Detection takes H to H + H/6 after the last answer.  A false positive is
 * a live rank that answered nothing for H: pings are answered only while
 * it is inside oxr calls, so H must exceed the longest stretch a rank
 * computes without one; a watcher that was away itself for H/3 judges
 * nobody on that stretch.  OpenXM peers answer no pings: never watched.
 * Whom a rank watches is ring.c's choice, the function its simulation
 * (ring_sim.c) runs too; this file adds the clock and the links.
 */
/* Not in the ring: a link known down (found dead here or named by a
 * revoke), one that cannot open, an OpenXM peer. */
static int unwatchable(void *arg, int p)
{
	const oxr_group *g = arg;
	const struct link *l = link_peek(g, p);

	return !(link_up(l) ? l->mode == OXR_LINK_AUTH : g->eps && !link_down(l));
}

static void heartbeat(oxr_group *g)
{
	struct oxr_ring_watch *w = &g->beat;
	int h = g->ctx->heartbeat_ms, gap = h / OXR_RING_PINGS, p;
	int64_t now, heard;
	struct link *l;

	if (!h || (now = oxr_now_ms()) < w->check)
		return;
	/* this rank was outside oxr for a while: it did not listen, so its
	 * predecessor is not judged on that stretch (answers may wait unread) */
	if (w->check && now - w->check > gap)
		w->since = now;
	w->check = now + (h >= 6 ? h / 6 : 1);
	if ((p = oxr_ring_watched(g->rank, g->size, 1, unwatchable, g)) < 0)
		return;
	if (p != w->pred || !w->since) {
		w->pred = p;
		w->since = now;
	}
	l = g->links[p];
	heard = l && l->last_rx > w->since ? l->last_rx : w->since;
	if (l && (link_up(l) || l->state == LINK_OPENING) && now - heard > h) {
		oxr_link_fail(g, l, OXR_ERR_PEER, "rank %d (%s) sent nothing for %lld ms "
			      "(OXR_HEARTBEAT_MS=%d): taken as failed", p, l->addr,
			      (long long)(now - heard), h);
		return;
	}
	/* what this rank sends the predecessor earns no answer: ping it */
	if (now - heard >= gap && now - w->pinged >= gap && oxr_beat(g, p, 1) == OXR_OK)
		w->pinged = now;
}

oxr_status_t oxr_beat(oxr_group *g, int peer, int ping)
{
	oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_BEAT, .cmo = oxr_cmo_null() };
	oxr_status_t st;

	if (ping) {
		oxr_arena_reset(g->scratch);
		if (!(m.cmo = oxr_cmo_new_int32(g->scratch, 1)))
			return oxr_err(OXR_ERR_NOMEM, "heartbeat: out of memory");
	}
	if ((st = oxr_queue_internal(g, peer, &m)))
		return st;
	g->beats_sent++;
	return OXR_OK;
}

/* The providers that hold group state (a CQ, a doorbell) move what came. */
static oxr_status_t poll_providers(oxr_group *g, int *got)
{
	int k = 0;
	oxr_status_t st = OXR_OK;

	*got = 0;
	if (g->pgroup && (st = g->ctx->prov->poll(g, got)))
		return st;
	if (g->hgroup && (st = g->ctx->hprov->poll(g, &k)))
		return st;
	*got += k;
	return OXR_OK;
}

/* 1: something came while arming, do not sleep. */
static int arm_providers(oxr_group *g)
{
	return (g->pgroup && g->ctx->prov->arm(g)) || (g->hgroup && g->ctx->hprov->arm(g));
}

oxr_status_t oxr_progress_once(oxr_group *g, int timeout_ms)
{
	struct epoll_event ev[32];
	int n, i;
	unsigned round = timeout_ms == 0 ? ++g->spins : 0;

	/* a spinning round looks at the clock one time in 16: under a
	 * hypervisor whose clock is not the TSC (qemu's HPET) each read is a
	 * system call of about 1 us, more than the rest of the round */
	if (!(round & 15))
		heartbeat(g);
	/* handshakes in flight have deadlines; a sleep must not pass them by
	 * (a spinning round looks at them one time in 16, with the clock) */
	if ((g->nhs || g->nwaiting) && (timeout_ms != 0 || !(round & 15))) {
		int64_t now = oxr_now_ms(), left;
		if (!g->demand_due || now >= g->demand_due)
			oxr_demand_tick(g);
		left = g->demand_due ? g->demand_due - now + 1 : 0;
		if ((g->nhs || g->nwaiting) && timeout_ms != 0 &&
		    (timeout_ms < 0 || timeout_ms > left))
			timeout_ms = left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
	}
	if (g->ctx->heartbeat_ms && (timeout_ms < 0 || timeout_ms > g->ctx->heartbeat_ms / 6))
		timeout_ms = g->ctx->heartbeat_ms / 6 + 1; /* a sleep must not skip a beat */

	if (g->pgroup || g->hgroup) {
		int got;
		oxr_status_t st = poll_providers(g, &got);
		if (st)
			return st;
		/* When no link's stream is a socket, the sockets only ever tell a
		 * peer's end: a spinning poll looks at them one round in 256, not
		 * at each (an epoll_wait is a system call, a CQ poll is not; a
		 * message that lands during one waits for it, about 1 us under
		 * qemu's TCG), which is still every few tens of us. */
		if (timeout_ms == 0 && !g->fd_links && (round & 255))
			return OXR_OK;
		/* a sleep needs the provider armed, and nothing arriving meanwhile */
		if (got || (timeout_ms != 0 && arm_providers(g)))
			timeout_ms = 0;
	}
	/* A spinning round of a pair on TCP reads the one socket itself: when
	 * the message is there, that read is the round's only system call
	 * (epoll_wait then recv would be two), and when it is not, the read
	 * costs what epoll_wait would.  Larger groups need epoll to find the
	 * link that has something.  A link with bytes still to write found its
	 * socket full: a read and a write every round would take the socket's
	 * lock twice while the peer's ACKs wait behind it, and each write would
	 * add what little room came back; epoll_wait takes no lock and says
	 * writable when a third of the buffer is free. */
	if (timeout_ms == 0 && !g->pgroup && !g->hgroup && g->size == 2 && g->fd_links == 1) {
		struct link *l = g->links[1 - g->rank];
		if (l && link_up(l) && !l->sq_head) {
			if (l->events & EPOLLIN)
				oxr_link_read(g, l);
			return OXR_OK;
		}
	}
	n = epoll_wait(g->epfd, ev, 32, timeout_ms);
	if (n < 0)
		return errno == EINTR ? OXR_OK : oxr_err(OXR_ERR_IO, "epoll_wait: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		struct link *l;
		if (ev[i].data.u32 >= OXR_EPOLL_HOST) {
			g->ctx->hprov->event(g, ev[i].data.u32);
			continue;
		}
		if (ev[i].data.u32 >= OXR_EPOLL_PROVIDER) {
			g->ctx->prov->event(g, ev[i].data.u32);
			continue;
		}
		if (ev[i].data.u32 >= OXR_EPOLL_HS) {
			oxr_demand_event(g, ev[i].data.u32, ev[i].events);
			continue;
		}
		l = g->links[ev[i].data.u32]; /* registered: it has its slot */
		if (!fd_stream(l) && (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) {
			if (link_up(l))
				l->ops->fd_event(g, l);
			continue;
		}
		if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			oxr_link_read(g, l);
		if (ev[i].events & EPOLLOUT)
			oxr_link_write(g, l);
	}
	return OXR_OK;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

oxr_status_t oxr_progress_until(oxr_group *g, int (*done)(void *), void *arg, int timeout_ms)
{
	/* the clock is read once the first look found nothing: a wait done
	 * already (most sends) costs no clock read */
	int64_t spin_end = -1, deadline = 0;
	uint64_t moved = g->fd_moved;
	unsigned rounds = 1; /* not 0: no yield right after the first poll */
	int spinning = 0, wait_ms = 0;
	oxr_status_t st;

	for (;;) {
		int64_t t;
		/* a revoke ends every wait of the epoch, even one whose event came
		 * with it (a peer's reset ball right behind its revoke) */
		if (oxr_group_stopped(g) && !g->hold_revoke)
			return oxr_revoked_err(g, "wait");
		/* a send, once offered, finishes (its bytes may be half out) */
		if (g->ctx->intr && *g->ctx->intr && !g->hold_revoke && !done(arg))
			return oxr_err(OXR_ERR_INTR, "rank %d: wait interrupted", g->rank);
		if (done(arg))
			break;
		/* the clock, one spinning round in 16 (see oxr_progress_once) */
		if (spinning && (++rounds & 15))
			goto poll;
		t = now_us();
		if (spin_end < 0) {
			spin_end = t + g->ctx->spin_us;
			deadline = timeout_ms < 0 ? INT64_MAX : t + (int64_t)timeout_ms * 1000;
		}
		/* a poll (0 ms) that found nothing is the common case of a
		 * spinning collective: its message costs no vsnprintf */
		if (t >= deadline)
			return timeout_ms ? oxr_err(OXR_ERR_TIMEOUT, "rank %d: nothing arrived within "
						    "%d ms", g->rank, timeout_ms)
					  : oxr_err_lit(OXR_ERR_TIMEOUT, "nothing had arrived (a poll, "
							"0 ms)");
		if (g->fd_moved != moved) {
			moved = g->fd_moved;
			spin_end = t + g->ctx->spin_us;
		}
		if (t >= spin_end) {
			int64_t left = deadline - t;
			wait_ms = left > 100000000 ? 100000 : (int)((left + 999) / 1000);
		}
		spinning = !wait_ms;
	poll:
		st = oxr_progress_once(g, wait_ms);
		if (st)
			return st;
		/* A spinning wait gives its core away now and then: the peer it
		 * waits for may be queued on this very core (ranks oversubscribed
		 * on few cores), and spinning would only delay it.  Not when the
		 * launcher says the node's ranks fit its cores (ctx.c).  One round in 8
		 * over TCP (each round is an epoll_wait already; a yield in every
		 * one costs a ping-pong about 1 us), one in 64 when every link is
		 * on a provider whose round is a user-space poll (a verbs CQ). */
		if (spinning && g->ctx->spin_yield && !(rounds & (g->fd_links ? 7u : 63u)))
			sched_yield();
	}
	return OXR_OK;
}

/* internal: the library's own frame, which goes in a revoked epoch too */
static oxr_status_t queue(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req *req,
			  struct sendop **out, int internal)
{
	struct link *l;
	struct sendop *op;
	oxr_ox_msg framed;
	oxr_status_t st;

	if (!internal && oxr_group_stopped(g))
		return oxr_revoked_err(g, "send");
	if (peer < 0 || peer >= g->size || peer == g->rank)
		return oxr_err(OXR_ERR_INVAL, "send: rank %d is not a peer of rank %d (group of %d)",
			       peer, g->rank, g->size);
	if (!(l = oxr_link_slot(g, peer)))
		return OXR_ERR_NOMEM;
	if (!link_up(l) && (st = oxr_link_want(g, peer)))
		return st;
	if ((op = g->spare_op)) { /* the one oxr_send kept */
		g->spare_op = NULL;
		memset(op, 0, offsetof(struct sendop, one)); /* small is written over */
	} else if (!(op = calloc(1, sizeof(*op)))) {
		return oxr_err(OXR_ERR_NOMEM, "send: out of memory");
	}
	framed = *m;
	framed.serial = g->serial++;
	st = oxr_ox_encode_iov(&framed, l->order, BIG_PAYLOAD, op->small, sizeof(op->small),
			       &op->one, &op->mem, &op->iov, &op->niov, &op->left);
	if (st) {
		free(op);
		return st;
	}
	op->req = req;
	if (req)
		req->op = op;
	if (l->sq_tail)
		l->sq_tail->next = op;
	else
		l->sq_head = op;
	l->sq_tail = op;
	oxr_link_write(g, l); /* most messages leave right here, without an epoll round */
	*out = op;
	return OXR_OK;
}

oxr_status_t oxr_queue_send(oxr_group *g, int peer, const oxr_ox_msg *m, oxr_req *req,
			    struct sendop **out)
{
	return queue(g, peer, m, req, out, 0);
}

oxr_status_t oxr_queue_internal(oxr_group *g, int peer, const oxr_ox_msg *m)
{
	struct sendop *op = NULL; /* set when st is OXR_OK; gcc cannot tell once inlined */
	oxr_status_t st;

	/* the library's own frames go in a revoked group too, and are never
	 * dropped; nobody waits for them: freed when written */
	st = queue(g, peer, m, NULL, &op, 1);
	if (st)
		return st;
	op->orphan = op->internal = 1;
	if (op->done) {
		free(op->mem);
		free(op);
	}
	return OXR_OK;
}

void oxr_link_note_balls(struct link *l)
{
	struct recvq *q;

	l->ball_queued = 0;
	for (q = l->rq_head; q; q = q->next)
		if (q->m->msg.tag == OXR_OX_SYNC_BALL)
			l->ball_queued = 1;
}

oxr_rmsg *oxr_link_take(struct link *l)
{
	struct recvq *q = l->rq_head;

	if (!q)
		return NULL;
	l->rq_head = q->next;
	if (!l->rq_head)
		l->rq_tail = NULL;
	l->rq_bytes -= q->bytes;
	return q->m; /* q goes with m's arena */
}

void oxr_link_revoke_queues(oxr_group *g, struct link *l)
{
	struct sendop *op, **pp;

	if (!l->ball_seen) /* after the peer's ball everything is of the next epoch */
		while (l->rq_head && l->rq_head->m->msg.tag != OXR_OX_SYNC_BALL)
			oxr_rmsg_free(oxr_link_take(l));
	if (oxr_group_in_reset(g))
		return; /* what we queued before our ball is discarded by the peer anyway */
	for (pp = &l->sq_head; (op = *pp);) {
		if (op->internal) {
			pp = &op->next;
			continue;
		}
		if (op->started) { /* half written: finished, so the stream stays whole */
			op->revoked = 1;
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		complete_send(op, OXR_ERR_REVOKED);
	}
	l->sq_tail = NULL;
	for (op = l->sq_head; op; op = op->next)
		l->sq_tail = op;
	oxr_link_update_events(g, l);
}
