/* SPDX-License-Identifier: MIT */
/*
 * The step after the token proof on an OXR_LINK_AUTH link: both sides offer
 * an RC queue pair over the socket, and when both can, the link's stream
 * moves to verbs.  OpenXM links never come here, so an ox_asir peer sees
 * plain RFC-102 TCP.  Both sides write first (the messages are small), then
 * read (all integers little-endian):
 *   "OXRU" u32 n, n bytes of offer (n = 0: this side stays on TCP)
 *   "OXRR" u32 status (0: my QP is ready to receive)  -- only when both offered
 * The second exchange keeps either side from writing into a QP that the
 * other has not moved to RTR yet.  With OXR_VERBS_CM=rdmacm the QPs are
 * connected by librdmacm between the two exchanges (verbs_cm.c).
 */
#include <stdlib.h>
#include <string.h>

#include "oxr_internal.h"
#include "transport_impl.h"
#ifdef OXR_HAVE_VERBS
#include "verbs_link.h"
#else
#define OXR_VOFFER_BYTES 64
#endif

#define TAG_OFFER 0x5552584fu /* "OXRU" */
#define TAG_READY 0x5252584fu /* "OXRR" */

static oxr_status_t swap(int fd, const uint8_t *mine, uint8_t *theirs, size_t n, int64_t deadline,
			 const char *addr)
{
	oxr_status_t st = oxr_tcp_io(fd, (void *)mine, n, 1, deadline, addr);

	return st ? st : oxr_tcp_io(fd, theirs, n, 0, deadline, addr);
}

oxr_status_t oxr_link_upgrade(oxr_group *g, int fd, int peer, int acceptor, const char *addr,
			      int timeout_ms, struct vlink **v)
{
	int64_t deadline = oxr_now_ms() + timeout_ms;
	uint8_t mine[8 + OXR_VOFFER_BYTES] = { 0 }, theirs[8 + OXR_VOFFER_BYTES];
	uint8_t ok[8], peer_ok[8];
	uint32_t n_mine = 0, n_theirs;
	oxr_status_t st, cst = OXR_OK;

	*v = NULL;
#ifdef OXR_HAVE_VERBS
	if (g->ctx->vdev) {
		st = oxr_vlink_create(g, peer, v, mine + 8);
		if (st == OXR_OK)
			n_mine = OXR_VOFFER_BYTES;
		else if (g->ctx->verbs_required)
			return st;
		else
			oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: link to rank %d stays on tcp: %s",
				g->rank, peer, oxr_errmsg());
	}
#endif
	oxr_store32(mine, TAG_OFFER, OXR_ORDER_LITTLE);
	oxr_store32(mine + 4, n_mine, OXR_ORDER_LITTLE);
	/* the fixed size keeps the exchange one write and one read */
	if ((st = swap(fd, mine, theirs, sizeof(mine), deadline, addr)))
		goto fail;
	n_theirs = oxr_load32(theirs + 4, OXR_ORDER_LITTLE);
	if (oxr_load32(theirs, OXR_ORDER_LITTLE) != TAG_OFFER ||
	    (n_theirs != 0 && n_theirs != OXR_VOFFER_BYTES)) {
		st = oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed transport offer", peer,
			     addr);
		goto fail;
	}
	if (!n_mine || !n_theirs) {
		if (n_mine && g->ctx->verbs_required) {
			st = oxr_err(OXR_ERR_UNSUPPORTED, "link to rank %d (%s): the peer has no verbs "
				     "device, and OXR_TRANSPORT=verbs here (use auto to allow tcp)",
				     peer, addr);
			goto fail;
		}
		if (n_mine)
			oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: rank %d has no verbs: tcp link",
				g->rank, peer);
		goto tcp;
	}
#ifdef OXR_HAVE_VERBS
	cst = g->ctx->vcm ? oxr_vlink_connect_cm(g, *v, theirs + 8, acceptor, fd, addr, deadline)
			  : oxr_vlink_connect(g, *v, theirs + 8);
	if (cst)
		oxr_log(g->ctx, g->ctx->verbs_required ? OXR_LOG_ERROR : OXR_LOG_WARN,
			"rank %d: verbs link to rank %d: %s", g->rank, peer, oxr_errmsg());
#endif
	oxr_store32(ok, TAG_READY, OXR_ORDER_LITTLE);
	oxr_store32(ok + 4, cst ? 1 : 0, OXR_ORDER_LITTLE);
	if ((st = swap(fd, ok, peer_ok, sizeof(ok), deadline, addr)))
		goto fail;
	if (oxr_load32(peer_ok, OXR_ORDER_LITTLE) != TAG_READY) {
		st = oxr_err(OXR_ERR_PROTO, "link to rank %d (%s): malformed ready message", peer, addr);
		goto fail;
	}
	if (cst == OXR_OK && oxr_load32(peer_ok + 4, OXR_ORDER_LITTLE) == 0)
		return OXR_OK;
	if (g->ctx->verbs_required) {
		st = cst ? cst : oxr_err(OXR_ERR_IO, "link to rank %d (%s): the peer could not "
					 "connect its QP (its log says why)", peer, addr);
		goto fail;
	}
tcp:
#ifdef OXR_HAVE_VERBS
	oxr_vlink_destroy(g, *v);
#endif
	*v = NULL;
	return OXR_OK;
fail:
#ifdef OXR_HAVE_VERBS
	oxr_vlink_destroy(g, *v);
#endif
	*v = NULL;
	return st;
}
