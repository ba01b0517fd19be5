/* SPDX-License-Identifier: MIT */
/*
 * The step after the token proof on an OXR_LINK_AUTH link: both sides offer
 * their provider's link over the socket (a verbs QP, say), and when both
 * can, the link's stream moves there.  OpenXM links never come here, so an
 * ox_asir peer sees plain RFC-102 TCP.  Both sides write first (the
 * messages are small), then read (all integers little-endian):
 *   "OXRU" u32 n, OXR_OFFER_MAX bytes of which n are the offer
 *          (n = 0: this side stays on TCP)
 *   "OXRR" u32 status (0: my side is ready to receive)  -- only when both offered
 * The second exchange keeps either side from writing into a QP that the
 * other has not moved to RTR yet.  A provider's connect may use the socket
 * between the two (verbs with OXR_VERBS_CM=rdmacm does).  Between ranks of
 * one host the host provider (shm) has a round of its own first; when
 * either side declines it, the network provider's round follows.
 */
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "provider.h"
#include "tcp/tcp_socket.h"

#define TAG_OFFER 0x5552584fu /* "OXRU" */
#define TAG_READY 0x5252584fu /* "OXRR" */

static oxr_status_t swap(int fd, const uint8_t *mine, uint8_t *theirs, size_t n, int64_t deadline,
			 const char *addr)
{
	oxr_status_t st = oxr_tcp_io(fd, (void *)mine, n, 1, deadline, addr);

	return st ? st : oxr_tcp_io(fd, theirs, n, 0, deadline, addr);
}

/* One offer round with provider p (NULL: this side offers nothing).  Sets
 * *ops and *priv when both sides took p; leaves them when either declined
 * (the caller tries the next provider); fails when p was required. */
static oxr_status_t offer_round(oxr_group *g, const struct oxr_provider *p, int required, int fd,
				int peer, int acceptor, const char *addr, int64_t deadline,
				const struct oxr_link_ops **ops, void **priv)
{
	const char *name = p ? p->name : "none";
	uint8_t mine[8 + OXR_OFFER_MAX] = { 0 }, theirs[8 + OXR_OFFER_MAX];
	uint8_t ok[8], peer_ok[8];
	uint32_t n_mine = 0, n_theirs;
	oxr_status_t st, cst = OXR_OK;
	void *pv = NULL;

	if (p && p->offer) {
		st = p->offer(g, peer, &pv, mine + 8);
		if (st == OXR_OK)
			n_mine = (uint32_t)p->offer_bytes;
		else if (required)
			return st;
		else
			oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: link to rank %d not on %s: %s",
				g->rank, peer, name, oxr_errmsg());
	}
	oxr_store32(mine, TAG_OFFER, OXR_ORDER_LITTLE);
	oxr_store32(mine + 4, n_mine, OXR_ORDER_LITTLE);
	/* the fixed size keeps the exchange one write and one read */
	if ((st = swap(fd, mine, theirs, sizeof(mine), deadline, addr)))
		goto fail;
	n_theirs = oxr_load32(theirs + 4, OXR_ORDER_LITTLE);
	if (oxr_load32(theirs, OXR_ORDER_LITTLE) != TAG_OFFER || n_theirs > OXR_OFFER_MAX ||
	    (n_mine && n_theirs && n_theirs != n_mine)) {
		st = oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed transport offer", peer,
			     addr);
		goto fail;
	}
	if (!n_mine || !n_theirs) {
		if (n_mine && required) {
			st = oxr_err(OXR_ERR_UNSUPPORTED, "link to rank %d (%s): the peer has no %s "
				     "device, and OXR_TRANSPORT=%s here (use auto to allow tcp)",
				     peer, addr, name, name);
			goto fail;
		}
		if (n_mine)
			oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: rank %d has no %s", g->rank, peer,
				name);
		goto declined;
	}
	cst = p->connect(g, pv, theirs + 8, acceptor, fd, addr, deadline);
	if (cst)
		oxr_log(g->ctx, required ? OXR_LOG_ERROR : OXR_LOG_WARN, "rank %d: %s link to rank "
			"%d: %s", g->rank, name, peer, oxr_errmsg());
	oxr_store32(ok, TAG_READY, OXR_ORDER_LITTLE);
	oxr_store32(ok + 4, cst ? 1 : 0, OXR_ORDER_LITTLE);
	if ((st = swap(fd, ok, peer_ok, sizeof(ok), deadline, addr)))
		goto fail;
	if (oxr_load32(peer_ok, OXR_ORDER_LITTLE) != TAG_READY) {
		st = oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed ready message", peer, addr);
		goto fail;
	}
	if (cst == OXR_OK && oxr_load32(peer_ok + 4, OXR_ORDER_LITTLE) == 0) {
		*ops = p->link_ops;
		*priv = pv;
		return OXR_OK;
	}
	if (required) {
		st = cst ? cst : oxr_err(OXR_ERR_IO, "link to rank %d (%s): the peer could not "
					 "connect its side (its log says why)", peer, addr);
		goto fail;
	}
declined:
	if (pv)
		p->link_ops->destroy(g, pv);
	return OXR_OK;
fail:
	if (pv)
		p->link_ops->destroy(g, pv);
	return st;
}

oxr_status_t oxr_link_upgrade(oxr_group *g, int fd, int peer, int acceptor, const char *addr,
			      int same_host, int timeout_ms, const struct oxr_link_ops **ops,
			      void **priv)
{
	const oxr_ctx *c = g->ctx;
	int64_t deadline = oxr_now_ms() + timeout_ms;
	oxr_status_t st;

	*ops = &oxr_tcp_link_ops;
	*priv = NULL;
	/* both sides know whether they share a host (the handshake compared
	 * host ids), so both run this round or neither; a side without a host
	 * provider (OXR_SHM=0) takes part with an empty offer */
	if (same_host > 0) {
		st = offer_round(g, c->hprov, c->hprov_required, fd, peer, acceptor, addr, deadline,
				 ops, priv);
		if (st || *ops != &oxr_tcp_link_ops)
			return st;
	}
	return offer_round(g, c->prov, c->prov_required, fd, peer, acceptor, addr, deadline, ops,
			   priv);
}
