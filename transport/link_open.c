/* SPDX-License-Identifier: MIT */
/*
 * The handshake that opens a link, as a state machine over a non-blocking
 * socket: one step reads or writes what the socket takes now, so the
 * progress engine can run any number of them at once (link_demand.c) and
 * the blocking calls run one to its end (oxr_hs_run).
 *
 * Every link starts as RFC-102 does it in asir: both sides write their
 * byte-order byte first.  An OXR_LINK_OPENXM link is open after that.  On
 * an OXR_LINK_AUTH link the connector's byte comes with its hello, and the
 * token is proved both ways without being sent (integers little-endian):
 *   C -> A  order, "OXRC" u32 version, nserver, C's rank, A's rank,
 *           nonce_c[16], u32 epoch, u32 flags, host id[16]
 *   A -> C  order, then "OXRA" u32 version, nserver, A's rank, nonce_a[16],
 *           HMAC(token, "oxr-a" nonce_c nonce_a ranks nserver), u32 epoch,
 *           u32 flags, host id[16]           (or "OXRN" u32 reason)
 *   C -> A  "OXRK" HMAC(token, "oxr-c" nonce_a nonce_c ranks nserver),
 *           "OXRU" u32 round, u32 n, offer[64]   (C's transport offer)
 *   A -> C  "OXRU" u32 round, u32 n, offer[64]   (or "OXRN" u32 reason)
 *   both    "OXRR" u32 status, when both offered (after each connected
 *           its half, so neither writes into a QP not yet at RTR)
 * The connector can send after two round trips.  Each nonce is fresh from
 * the side that checks the proof over it, so no proof can be replayed; the
 * acceptor checks the rank the connector claims, so a member of the group
 * cannot pose as another rank either.  The host ids say which peers share
 * this host (shared memory first: round 0 is the host provider's, round 1
 * the network provider's, which follows when round 0 was not taken).  A
 * peer can lie about its host; it proved the token, so the lie only moves
 * its own link to another provider.
 *
 * Epochs: both sides must be in one epoch (a rank restarted in the place of
 * a dead one, with no window yet, takes the group's).  A side that finds
 * the other in another epoch (a reset between them) refuses with BUSY and
 * the connector tries again; once past that check a handshake is
 * "committed" and a reset does not end before it has (revoke.c), so a link
 * never opens across an epoch's end.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#include "oxr_internal.h"
#include "sha256.h"
#include "link.h"
#include "link_open.h"
#include "provider.h"
#include "tcp/tcp_socket.h"

#define HS_VERSION 4 /* 3: a socket dialog of 4.5 round trips; 4: two */

#define HELLO_C 60   /* without the order byte */
#define HELLO_A 88
#define PROOF 36
#define OFFER (12 + OXR_OFFER_MAX)
#define READY 8

enum step {
	S_ORDER,      /* OpenXM: the peer's order byte */
	S_C_CONNECT,  /* connector: the socket connects */
	S_C_HELLO,    /* connector: the acceptor's order and hello */
	S_C_ANSWER,   /* connector: the answer to its offer */
	S_C_READY,    /* connector: the acceptor's ready */
	S_A_HELLO,    /* acceptor: the connector's order and hello */
	S_A_PROOF,    /* acceptor: the proof and the first offer */
	S_A_OFFER,    /* acceptor: the network round's offer */
	S_A_CONNECT,  /* acceptor: its answer went out, its half connects */
	S_A_READY,    /* acceptor: the connector's ready */
	S_DONE,       /* what is written out, then attach */
	S_REFUSED,    /* a refusal is written out, then the error */
};

static const char *refusal_text(uint32_t r)
{
	switch (r) {
	case OXR_REF_TOKEN: return "wrong token (not a member of this group?)";
	case OXR_REF_RANK: return "unexpected rank";
	case OXR_REF_SIZE: return "different group size";
	case OXR_REF_VERSION: return "handshake version mismatch";
	case OXR_REF_RACE: return "both ends opened the link at once (the lower rank's goes on)";
	case OXR_REF_BUSY: return "in another epoch or group size (a reset or a shrink between "
				  "them): try again";
	}
	return "refused";
}

static void put_u32(uint8_t *p, uint32_t v) { oxr_store32(p, v, OXR_ORDER_LITTLE); }
static uint32_t get_u32(const uint8_t *p) { return oxr_load32(p, OXR_ORDER_LITTLE); }

static void mac(const oxr_group *g, const char *label, const uint8_t *n1, const uint8_t *n2,
		uint32_t from, uint32_t to, uint8_t out[32])
{
	uint8_t ranks[12];
	const void *parts[4] = { label, n1, n2, ranks };
	size_t lens[4] = { strlen(label), 16, 16, sizeof(ranks) };

	put_u32(ranks, from);
	put_u32(ranks + 4, to);
	put_u32(ranks + 8, (uint32_t)g->size);
	oxr_hmac_sha256(g->token, sizeof(g->token), parts, lens, 4, out);
}

static void out_add(struct oxr_hs *h, const void *p, size_t n)
{
	memcpy(h->out + h->out_len, p, n);
	h->out_len += n;
}

static void out_u32(struct oxr_hs *h, uint32_t v)
{
	put_u32(h->out + h->out_len, v);
	h->out_len += 4;
}

static void expect(struct oxr_hs *h, size_t n, int step)
{
	h->in_want = n;
	h->in_off = 0;
	h->step = step;
}

/* A refusal goes out in place of the message the peer waits for (padded to
 * its size, so the peer reads it whole), then the handshake ends. */
static oxr_status_t refuse(struct oxr_hs *h, uint32_t reason, size_t size, int claimed)
{
	oxr_group *g = h->g;
	uint8_t pad[HELLO_A] = { 0 };

	h->out_len = h->out_off = 0;
	out_add(h, "OXRN", 4);
	out_u32(h, reason);
	out_add(h, pad, size - 8);
	h->step = S_REFUSED;
	h->in_want = h->in_off = 0;
	g->handshakes_refused++;
	snprintf(h->why, sizeof(h->why), "refused a link from %s claiming rank %d: %s", h->addr,
		 claimed, refusal_text(reason));
	/* a stranger or a broken peer is news; the races of opening are not */
	oxr_log(g->ctx, reason == OXR_REF_RACE || reason == OXR_REF_BUSY ||
		(reason == OXR_REF_RANK && h->demand) ? OXR_LOG_DEBUG : OXR_LOG_WARN,
		"rank %d refused a link from %s claiming rank %d: %s", g->rank, h->addr, claimed,
		refusal_text(reason));
	return OXR_OK; /* the refusal goes out first (S_REFUSED) */
}

static int can_adopt(const oxr_group *g)
{
	return !g->wins && !oxr_group_in_reset(g);
}

/* A rank that joins a group past epoch 0 (restarted in the place of a dead
 * one, no window yet) takes the group's epoch, so that the reset that
 * follows brings every rank to one new epoch. */
static void adopt(struct oxr_hs *h, uint32_t e)
{
	oxr_group *g = h->g;

	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: joins the group in epoch %u (rank %d's)", g->rank,
		e, h->peer);
	g->epoch = e;
}

static void hello_tail(struct oxr_hs *h)
{
	h->told_epoch = h->g->epoch;
	out_u32(h, h->g->epoch);
	out_u32(h, 0); /* flags: none yet */
	out_add(h, h->g->ctx->host_id, 16);
}

/* ---- transport offers (after the proof) ------------------------------ */

static const struct oxr_provider *round_prov(const oxr_ctx *c, int round, int *required)
{
	*required = round ? c->prov_required : c->hprov_required;
	return round ? c->prov : c->hprov;
}

static void drop_offer(struct oxr_hs *h)
{
	if (h->pv)
		h->p->link_ops->destroy(h->g, h->pv);
	h->pv = NULL;
	h->offered = 0;
}

/* This side's offer for round h->round into out ("OXRU" round n offer). */
static oxr_status_t make_offer(struct oxr_hs *h)
{
	oxr_group *g = h->g;
	int required;
	const struct oxr_provider *p = round_prov(g->ctx, h->round, &required);
	uint8_t offer[OXR_OFFER_MAX] = { 0 };

	h->p = p;
	h->pv = NULL;
	h->offered = 0;
	if (p && p->offer) {
		oxr_status_t st = p->offer(g, h->peer, &h->pv, offer);
		if (st == OXR_OK)
			h->offered = 1;
		else if (required)
			return st;
		else
			oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: link to rank %d not on %s: %s",
				g->rank, h->peer, p->name, oxr_errmsg());
	}
	out_add(h, "OXRU", 4);
	out_u32(h, (uint32_t)h->round);
	out_u32(h, h->offered ? (uint32_t)p->offer_bytes : 0);
	out_add(h, offer, sizeof(offer));
	return OXR_OK;
}

/* The peer's offer (or answer) in m: 1 when both offered (connect next),
 * 0 when the round is declined, an error when it is malformed or a
 * required provider was declined. */
static oxr_status_t take_offer(struct oxr_hs *h, const uint8_t *m, int *both)
{
	oxr_group *g = h->g;
	uint32_t n = get_u32(m + 8);
	int required;
	const char *name = h->p ? h->p->name : "none";

	(void)round_prov(g->ctx, h->round, &required);
	*both = 0;
	if (memcmp(m, "OXRU", 4) || get_u32(m + 4) != (uint32_t)h->round || n > OXR_OFFER_MAX ||
	    (h->offered && n && n != h->p->offer_bytes))
		return oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed transport offer",
			       h->peer, h->addr);
	if (h->offered && n) {
		*both = 1;
		return OXR_OK;
	}
	if (h->offered && required)
		return oxr_err(OXR_ERR_UNSUPPORTED, "link to rank %d (%s): the peer has no %s "
			       "device, and OXR_TRANSPORT=%s here (use auto to allow tcp)", h->peer,
			       h->addr, name, name);
	if (h->offered)
		oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: rank %d has no %s", g->rank, h->peer, name);
	drop_offer(h);
	return OXR_OK;
}

/* Connects this side's half with the peer's offer; its status goes in a ready. */
static void connect_half(struct oxr_hs *h, const uint8_t *theirs)
{
	oxr_group *g = h->g;
	int required;
	oxr_status_t cst;

	(void)round_prov(g->ctx, h->round, &required);
	cst = h->p->connect(g, h->pv, theirs, h->acceptor, h->fd, h->addr, h->deadline);
	h->cfail[0] = 0;
	if (cst) {
		snprintf(h->cfail, sizeof(h->cfail), ": %s", oxr_errmsg());
		oxr_log(g->ctx, required ? OXR_LOG_ERROR : OXR_LOG_WARN, "rank %d: %s link to rank "
			"%d%s", g->rank, h->p->name, h->peer, h->cfail);
	}
	out_add(h, "OXRR", 4);
	out_u32(h, cst ? 1 : 0);
}

/* Both readies known: the provider carries the stream, or the next round. */
static oxr_status_t settle(struct oxr_hs *h, const uint8_t *peer_ready)
{
	int required, mine_ok = get_u32(h->out + h->out_len - 4) == 0;

	(void)round_prov(h->g->ctx, h->round, &required);
	if (memcmp(peer_ready, "OXRR", 4))
		return oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed ready message",
			       h->peer, h->addr);
	if (mine_ok && get_u32(peer_ready + 4) == 0) {
		h->ops = h->p->link_ops;
		h->priv = h->pv;
		h->pv = NULL;
		h->step = S_DONE;
		return OXR_OK;
	}
	drop_offer(h);
	if (required)
		return oxr_err(OXR_ERR_IO, "link to rank %d (%s): the %s link could not be "
			       "connected%s", h->peer, h->addr, h->p->name,
			       h->cfail[0] ? h->cfail : " (the peer's log says why)");
	return OXR_OK;
}

/* A round ended without a provider: the network's round, or tcp. */
static oxr_status_t next_round(struct oxr_hs *h)
{
	h->out_len = h->out_off = 0;
	if (h->round == 1) {
		h->step = S_DONE;
		return OXR_OK;
	}
	h->round = 1;
	if (h->acceptor) {
		expect(h, OFFER, S_A_OFFER);
		return OXR_OK;
	}
	expect(h, OFFER, S_C_ANSWER);
	return make_offer(h);
}

/* ---- the connector --------------------------------------------------- */

static oxr_status_t c_hello(struct oxr_hs *h)
{
	oxr_group *g = h->g;
	const uint8_t *a = h->in + 1;
	uint8_t want[32];
	oxr_status_t st;

	if ((st = oxr_order_resolve(oxr_order_byte(g->ctx->order), h->in[0], &h->order)))
		return st;
	if (!memcmp(a, "OXRN", 4)) {
		h->refused = (int)get_u32(a + 4);
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s refused the link: %s", h->peer, h->addr,
			       refusal_text(get_u32(a + 4)));
	}
	if (memcmp(a, "OXRA", 4) || get_u32(a + 4) != HS_VERSION)
		return oxr_err(OXR_ERR_PROTO, "handshake with %s: not an oxr peer, or another "
			       "version (an OpenXM peer needs OXR_LINK_OPENXM)", h->addr);
	if (get_u32(a + 8) != (uint32_t)g->size)
		return oxr_err(OXR_ERR_AUTH, "handshake with %s: its group has %u ranks, this one %d",
			       h->addr, get_u32(a + 8), g->size);
	if (get_u32(a + 12) != (uint32_t)h->peer)
		return oxr_err(OXR_ERR_AUTH, "handshake with %s: it is rank %u, not rank %d", h->addr,
			       get_u32(a + 12), h->peer);
	memcpy(h->peer_nonce, a + 16, 16);
	mac(g, "oxr-a", h->nonce, h->peer_nonce, (uint32_t)h->peer, (uint32_t)g->rank, want);
	if (!oxr_mac_equal(a + 32, want, 32)) {
		/* the proof of this side still goes (with no offer), so the
		 * acceptor, too, finds out that the tokens differ */
		uint8_t none[OFFER] = { 0 };
		h->out_len = h->out_off = 0;
		out_add(h, "OXRK", 4);
		mac(g, "oxr-c", h->peer_nonce, h->nonce, (uint32_t)g->rank, (uint32_t)h->peer,
		    h->out + h->out_len);
		h->out_len += 32;
		out_add(h, none, sizeof(none));
		snprintf(h->why, sizeof(h->why), "rank %d at %s failed to prove the group token "
			 "(refused the link: wrong token)", h->peer, h->addr);
		h->step = S_REFUSED;
		h->in_want = h->in_off = 0;
		return OXR_OK;
	}
	h->peer_epoch = get_u32(a + 64);
	h->same_host = !memcmp(a + 72, g->ctx->host_id, 16);
	/* a peer behind takes this epoch or refuses (a_proof); but one that
	 * checked this rank's hello while it told an epoch this rank has left
	 * since (a reset ended meanwhile) would open the link across that
	 * reset, owing a ball this rank never sends: it waits for the peer's
	 * reset to end, and tries again */
	if ((h->peer_epoch < g->epoch && g->epoch != h->told_epoch) ||
	    (h->peer_epoch > g->epoch && !can_adopt(g))) {
		h->refused = OXR_REF_BUSY;
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s is in epoch %u, this rank in %u",
			       h->peer, h->addr, h->peer_epoch, g->epoch);
	}
	if (h->peer_epoch > g->epoch)
		adopt(h, h->peer_epoch);
	h->committed = 1;
	h->out_len = h->out_off = 0;
	out_add(h, "OXRK", 4);
	mac(g, "oxr-c", h->peer_nonce, h->nonce, (uint32_t)g->rank, (uint32_t)h->peer,
	    h->out + h->out_len);
	h->out_len += 32;
	h->round = h->same_host > 0 ? 0 : 1;
	expect(h, OFFER, S_C_ANSWER);
	return make_offer(h);
}

static oxr_status_t c_answer(struct oxr_hs *h)
{
	int both;
	oxr_status_t st;

	if (!memcmp(h->in, "OXRN", 4)) {
		h->refused = (int)get_u32(h->in + 4);
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s refused the link: %s", h->peer, h->addr,
			       refusal_text(get_u32(h->in + 4)));
	}
	if ((st = take_offer(h, h->in, &both)))
		return st;
	if (!both)
		return next_round(h);
	h->out_len = h->out_off = 0;
	connect_half(h, h->in + 12);
	expect(h, READY, S_C_READY);
	return OXR_OK;
}

/* ---- the acceptor ---------------------------------------------------- */

/* Whether the claimed rank may open this link now (0), or why not. */
static int rank_wanted(struct oxr_hs *h, uint32_t claimed)
{
	oxr_group *g = h->g;

	if (claimed >= (uint32_t)g->size || (int)claimed == g->rank)
		return OXR_REF_RANK;
	if (h->want >= 0)
		return (int)claimed == h->want ? 0 : OXR_REF_RANK;
	if (h->demand)
		return oxr_demand_claim(g, h, (int)claimed);
	return (int)claimed > g->rank && !link_up(link_peek(g, (int)claimed)) ? 0 : OXR_REF_RANK;
}

static oxr_status_t a_hello(struct oxr_hs *h)
{
	oxr_group *g = h->g;
	const uint8_t *c = h->in + 1;
	uint32_t claimed = get_u32(c + 12);
	oxr_status_t st;

	if ((st = oxr_order_resolve(oxr_order_byte(g->ctx->order), h->in[0], &h->order)))
		return st;
	if (memcmp(c, "OXRC", 4) || get_u32(c + 4) != HS_VERSION)
		return refuse(h, OXR_REF_VERSION, HELLO_A, (int)claimed);
	/* a shrink renumbers the ranks: a connector of a smaller group may be
	 * past one this rank has not ended yet, one of a larger group behind
	 * one this rank ended; both try again once the shrink is over here */
	if (get_u32(c + 8) != (uint32_t)g->size)
		return refuse(h, get_u32(c + 8) < (uint32_t)g->size || g->sh.gen ? OXR_REF_BUSY :
			      OXR_REF_SIZE, HELLO_A, (int)claimed);
	/* a connector that came to the wrong rank learns it from the hello
	 * (and its proof would not match this rank anyway) */
	if (claimed >= (uint32_t)g->size || (int)claimed == g->rank)
		return refuse(h, OXR_REF_RANK, HELLO_A, (int)claimed);
	h->peer = (int)claimed; /* a claim until the proof */
	memcpy(h->peer_nonce, c + 20, 16);
	h->peer_epoch = get_u32(c + 36);
	h->same_host = !memcmp(c + 44, g->ctx->host_id, 16);
	if (h->peer_epoch > g->epoch && !can_adopt(g))
		return refuse(h, OXR_REF_BUSY, HELLO_A, (int)claimed);
	h->out_len = h->out_off = 0;
	out_add(h, "OXRA", 4);
	out_u32(h, HS_VERSION);
	out_u32(h, (uint32_t)g->size);
	out_u32(h, (uint32_t)g->rank);
	out_add(h, h->nonce, 16);
	mac(g, "oxr-a", h->peer_nonce, h->nonce, (uint32_t)g->rank, claimed, h->out + h->out_len);
	h->out_len += 32;
	hello_tail(h);
	h->round = h->same_host > 0 ? 0 : 1;
	expect(h, PROOF + OFFER, S_A_PROOF);
	return OXR_OK;
}

/* The connector's offer of this round: this side's answer goes out. */
static oxr_status_t a_offer(struct oxr_hs *h, const uint8_t *m)
{
	uint8_t theirs[OFFER];
	int both;
	oxr_status_t st;

	memcpy(theirs, m, OFFER); /* in is read again below */
	h->out_len = h->out_off = 0;
	if (memcmp(theirs, "OXRU", 4) || get_u32(theirs + 4) != (uint32_t)h->round)
		return oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed transport offer",
			       h->peer, h->addr);
	if ((st = make_offer(h)) || (st = take_offer(h, theirs, &both)))
		return st;
	if (!both) {
		/* the answer goes out (n = 0 when this side declined), then the
		 * next round's offer is awaited or the link is done */
		uint8_t answer[OFFER];
		memcpy(answer, h->out, OFFER);
		if ((st = next_round(h)))
			return st;
		out_add(h, answer, OFFER);
		return OXR_OK;
	}
	memcpy(h->in, theirs, OFFER); /* S_A_CONNECT takes it from here */
	h->step = S_A_CONNECT;
	h->in_want = h->in_off = 0;
	return OXR_OK;
}

static oxr_status_t a_proof(struct oxr_hs *h)
{
	oxr_group *g = h->g;
	uint8_t want[32];
	int why;

	mac(g, "oxr-c", h->nonce, h->peer_nonce, (uint32_t)h->peer, (uint32_t)g->rank, want);
	if (memcmp(h->in, "OXRK", 4) || !oxr_mac_equal(h->in + 4, want, 32))
		return refuse(h, OXR_REF_TOKEN, OFFER, h->peer);
	/* the epoch told in the hello must still be this rank's (a reset may
	 * have ended meanwhile), or the peer's to take; a peer that was behind
	 * has taken it (c_hello) */
	if (g->epoch != h->told_epoch || (h->peer_epoch > g->epoch && !can_adopt(g)))
		return refuse(h, OXR_REF_BUSY, OFFER, h->peer);
	if ((why = rank_wanted(h, (uint32_t)h->peer)))
		return refuse(h, (uint32_t)why, OFFER, h->peer);
	if (h->peer_epoch > g->epoch)
		adopt(h, h->peer_epoch);
	h->committed = 1;
	return a_offer(h, h->in + PROOF);
}

/* ---- the machine ----------------------------------------------------- */

static oxr_status_t process(struct oxr_hs *h)
{
	oxr_status_t st;

	switch (h->step) {
	case S_ORDER:
		st = oxr_order_resolve(oxr_order_byte(h->g->ctx->order), h->in[0], &h->order);
		h->step = S_DONE;
		return st;
	case S_C_HELLO:
		return c_hello(h);
	case S_C_ANSWER:
		return c_answer(h);
	case S_C_READY:
	case S_A_READY:
		if ((st = settle(h, h->in)))
			return st;
		return h->step == S_DONE ? OXR_OK : next_round(h);
	case S_A_HELLO:
		return a_hello(h);
	case S_A_PROOF:
		return a_proof(h);
	case S_A_OFFER:
		return a_offer(h, h->in);
	}
	return oxr_err(OXR_ERR_PROTO, "handshake with %s: internal step %d", h->addr, h->step);
}

/* The socket's connect finished (connector on demand): its hello goes out. */
static oxr_status_t connected(struct oxr_hs *h, int *wait)
{
	struct pollfd pf = { .fd = h->fd, .events = POLLOUT };
	socklen_t sl = sizeof(int);
	int err = 0;

	*wait = 0;
	if (poll(&pf, 1, 0) == 0) {
		*wait = 1;
		return OXR_OK;
	}
	getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &sl);
	if (err)
		return oxr_err(OXR_ERR_PEER, "connect to rank %d at %s: %s", h->peer, h->addr,
			       strerror(err));
	oxr_tcp_tune_fd(h->fd);
	h->connecting = 0;
	return OXR_OK;
}

static void begin(struct oxr_hs *h)
{
	oxr_group *g = h->g;
	uint8_t order = oxr_order_byte(g->ctx->order);

	h->out_len = h->out_off = 0;
	out_add(h, &order, 1);
	if (h->mode == OXR_LINK_OPENXM) {
		expect(h, 1, S_ORDER);
	} else if (h->acceptor) {
		expect(h, 1 + HELLO_C, S_A_HELLO);
	} else {
		out_add(h, "OXRC", 4);
		out_u32(h, HS_VERSION);
		out_u32(h, (uint32_t)g->size);
		out_u32(h, (uint32_t)g->rank);
		out_u32(h, (uint32_t)h->peer);
		out_add(h, h->nonce, 16);
		hello_tail(h);
		expect(h, 1 + HELLO_A, S_C_HELLO);
	}
}

oxr_status_t oxr_hs_step(struct oxr_hs *h, int *done)
{
	oxr_status_t st;
	ssize_t k;

	*done = 0;
	if (h->connecting) {
		int wait;
		if ((st = connected(h, &wait)))
			return st;
		if (wait) {
			h->events = EPOLLOUT;
			return OXR_OK;
		}
		begin(h);
	}
	for (;;) {
		if (h->out_off < h->out_len) {
			k = send(h->fd, h->out + h->out_off, h->out_len - h->out_off, MSG_NOSIGNAL);
			if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
				h->events = EPOLLOUT;
				return OXR_OK;
			}
			if (k <= 0)
				return oxr_err(OXR_ERR_PEER, "handshake with %s: %s", h->addr,
					       strerror(errno));
			h->out_off += (size_t)k;
			continue;
		}
		if (h->step == S_DONE) {
			*done = 1;
			return OXR_OK;
		}
		if (h->step == S_REFUSED)
			return oxr_err(OXR_ERR_AUTH, "%s", h->why);
		if (h->step == S_A_CONNECT) {
			h->out_len = h->out_off = 0;
			connect_half(h, h->in + 12); /* the peer's offer, kept by a_offer */
			expect(h, READY, S_A_READY);
			continue;
		}
		if (h->in_off < h->in_want) {
			k = recv(h->fd, h->in + h->in_off, h->in_want - h->in_off, 0);
			if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
				h->events = EPOLLIN;
				return OXR_OK;
			}
			if (k == 0)
				return oxr_err(OXR_ERR_CLOSED, "handshake with %s: the peer closed "
					       "the link", h->addr);
			if (k < 0)
				return oxr_err(OXR_ERR_PEER, "handshake with %s: %s", h->addr,
					       strerror(errno));
			h->in_off += (size_t)k;
			if (h->in_off < h->in_want)
				continue;
		}
		if ((st = process(h)))
			return st;
	}
}

oxr_status_t oxr_hs_start(oxr_group *g, int fd, int mode, int acceptor, int peer,
			  const char *addr, int connecting, int timeout_ms, struct oxr_hs **out)
{
	struct oxr_hs *h;

	if (mode == OXR_LINK_AUTH && !g->have_token) {
		close(fd);
		return oxr_err(OXR_ERR_INVAL, "an OXR_LINK_AUTH link needs the group token: call "
			       "oxr_group_set_token (or build the group with oxr_group_boot)");
	}
	if (!(h = calloc(1, sizeof(*h)))) {
		close(fd);
		return oxr_err(OXR_ERR_NOMEM, "handshake: out of memory");
	}
	h->g = g;
	h->fd = fd;
	h->mode = mode;
	h->acceptor = acceptor;
	/* an OpenXM acceptor cannot learn its peer's rank: it is the one expected */
	h->peer = acceptor && mode == OXR_LINK_AUTH ? -1 : peer;
	h->want = acceptor ? peer : -1;
	h->slot = -1;
	h->same_host = -1;
	h->connecting = connecting;
	h->deadline = oxr_now_ms() + timeout_ms;
	snprintf(h->addr, sizeof(h->addr), "%s", addr);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (mode == OXR_LINK_AUTH && getrandom(h->nonce, 16, 0) != 16) {
		oxr_hs_free(h);
		return oxr_err(OXR_ERR_IO, "handshake: getrandom: %s", strerror(errno));
	}
	if (!connecting)
		begin(h);
	*out = h;
	return OXR_OK;
}

void oxr_hs_free(struct oxr_hs *h)
{
	if (!h)
		return;
	drop_offer(h);
	if (h->priv && h->ops && h->ops->destroy)
		h->ops->destroy(h->g, h->priv);
	if (h->fd >= 0)
		close(h->fd);
	free(h);
}

oxr_status_t oxr_hs_attach(struct oxr_hs *h)
{
	struct oxr_link_hs hs = { .order = h->order, .same_host = h->same_host };
	const struct oxr_link_ops *ops = h->ops ? h->ops : &oxr_tcp_link_ops;
	void *priv = h->priv;
	int fd = h->fd;

	h->fd = -1;
	h->priv = NULL;
	h->g->handshakes++;
	return oxr_link_attach(h->g, h->peer, fd, h->mode, &hs, h->addr, ops, priv);
}

oxr_status_t oxr_hs_run(struct oxr_hs *h)
{
	oxr_status_t st;
	int done = 0;

	for (;;) {
		struct pollfd pf = { .fd = h->fd };
		int64_t left;
		if ((st = oxr_hs_step(h, &done)) || done)
			break;
		left = h->deadline - oxr_now_ms();
		pf.events = h->events == EPOLLOUT ? POLLOUT : POLLIN;
		if (left <= 0 || poll(&pf, 1, (int)(left > 1000000 ? 1000000 : left)) == 0) {
			st = oxr_err(OXR_ERR_TIMEOUT, "handshake with %s: timed out%s", h->addr,
				     h->acceptor && h->mode == OXR_LINK_AUTH && h->step == S_A_HELLO
				     ? " (no oxr answer: a plain OpenXM peer? its link needs "
				       "OXR_LINK_OPENXM)" : "");
			break;
		}
	}
	if (st == OXR_OK)
		st = oxr_hs_attach(h);
	oxr_hs_free(h);
	return st;
}
