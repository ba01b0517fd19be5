/* SPDX-License-Identifier: MIT */
/*
 * The handshake that opens a link, on the socket every link starts from,
 * whatever provider carries its stream later (link_upgrade.c).
 *
 * Every link starts as RFC-102 does it in asir: both sides write their
 * byte-order byte, then read the other's.  An OXR_LINK_OPENXM link is open
 * after that.  An OXR_LINK_AUTH link then runs a challenge-response on the
 * group's token, so neither side sends the token itself (all integers
 * little-endian):
 *   acceptor  -> "OXRA" u32 version, u32 nserver, u32 acceptor rank, nonce_a[16]
 *   connector -> "OXRC" u32 version, u32 nserver, u32 its rank, u32 target rank,
 *                nonce_c[16], HMAC(token, "oxr-c" nonce_a nonce_c ranks nserver)
 *   acceptor  -> "OXRK" HMAC(token, "oxr-a" nonce_c nonce_a ranks nserver)
 *             or "OXRN" u32 reason, and closes.
 * The acceptor checks the rank the connector claims against the one it
 * expects, so a process of the group cannot pose as another rank either.
 * Then both tell their epoch and host ("OXRE" u32 epoch, host id[16]; see
 * agree_epoch): the host id (a hash of OXR_HOST_ID, or of the boot id and
 * host name) says which peers share this host, which shared memory needs.
 * A peer can lie about it; it proved the token, so the lie only moves its
 * own links to another provider.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "oxr_internal.h"
#include "sha256.h"
#include "link.h"
#include "tcp/tcp_socket.h"

#define HS_VERSION 3 /* 2: the epochs follow the proof; 3: and the host ids */

enum refusal { REF_TOKEN = 1, REF_RANK = 2, REF_SIZE = 3, REF_VERSION = 4 };

static const char *refusal_text(uint32_t r)
{
	switch (r) {
	case REF_TOKEN: return "wrong token (not a member of this group?)";
	case REF_RANK: return "unexpected rank";
	case REF_SIZE: return "different group size";
	case REF_VERSION: return "handshake version mismatch";
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

static int rank_wanted(const oxr_group *g, int want, uint32_t claimed)
{
	if (claimed >= (uint32_t)g->size || (int)claimed == g->rank)
		return 0;
	if (want >= 0)
		return (int)claimed == want;
	return (int)claimed > g->rank && !link_up(&g->links[claimed]);
}

static oxr_status_t auth_acceptor(oxr_group *g, int fd, int *peer, const char *addr,
				  int64_t deadline)
{
	uint8_t a[32], c[68], k[36], want_mac[32];
	uint32_t claimed, reason = 0;
	oxr_status_t st;

	memcpy(a, "OXRA", 4);
	put_u32(a + 4, HS_VERSION);
	put_u32(a + 8, (uint32_t)g->size);
	put_u32(a + 12, (uint32_t)g->rank);
	if (getrandom(a + 16, 16, 0) != 16)
		return oxr_err(OXR_ERR_IO, "handshake: getrandom: %s", strerror(errno));
	if ((st = oxr_tcp_io(fd, a, 32, 1, deadline, addr)))
		return st;
	if ((st = oxr_tcp_io(fd, c, 68, 0, deadline, addr)))
		return st != OXR_ERR_TIMEOUT ? st
		       : oxr_err(st, "handshake with %s: no oxr answer in time (a plain OpenXM peer? "
				 "its link needs OXR_LINK_OPENXM)", addr);
	claimed = get_u32(c + 12);
	mac(g, "oxr-c", a + 16, c + 20, claimed, (uint32_t)g->rank, want_mac);
	if (memcmp(c, "OXRC", 4) || get_u32(c + 4) != HS_VERSION)
		reason = REF_VERSION;
	else if (get_u32(c + 8) != (uint32_t)g->size)
		reason = REF_SIZE;
	else if (!oxr_mac_equal(c + 36, want_mac, 32))
		reason = REF_TOKEN;
	else if (get_u32(c + 16) != (uint32_t)g->rank || !rank_wanted(g, *peer, claimed))
		reason = REF_RANK;
	if (reason) {
		memcpy(k, "OXRN", 4);
		put_u32(k + 4, reason);
		oxr_tcp_io(fd, k, 8, 1, deadline, addr);
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d refused a link from %s claiming rank %u: %s",
			g->rank, addr, claimed, refusal_text(reason));
		return oxr_err(OXR_ERR_AUTH, "refused a link from %s claiming rank %u: %s", addr,
			       claimed, refusal_text(reason));
	}
	memcpy(k, "OXRK", 4);
	mac(g, "oxr-a", c + 20, a + 16, (uint32_t)g->rank, claimed, k + 4);
	if ((st = oxr_tcp_io(fd, k, 36, 1, deadline, addr)))
		return st;
	*peer = (int)claimed;
	return OXR_OK;
}

static oxr_status_t auth_connector(oxr_group *g, int fd, int peer, const char *addr,
				   int64_t deadline)
{
	uint8_t a[32], c[68], k[36], want_mac[32];
	oxr_status_t st;

	if ((st = oxr_tcp_io(fd, a, 32, 0, deadline, addr)))
		return st;
	if (memcmp(a, "OXRA", 4) || get_u32(a + 4) != HS_VERSION)
		return oxr_err(OXR_ERR_PROTO,
			       "handshake with %s: not an oxr peer, or another version (an OpenXM "
			       "peer needs OXR_LINK_OPENXM)", addr);
	if (get_u32(a + 12) != (uint32_t)peer)
		return oxr_err(OXR_ERR_AUTH, "handshake with %s: it is rank %u, not rank %d", addr,
			       get_u32(a + 12), peer);
	memcpy(c, "OXRC", 4);
	put_u32(c + 4, HS_VERSION);
	put_u32(c + 8, (uint32_t)g->size);
	put_u32(c + 12, (uint32_t)g->rank);
	put_u32(c + 16, (uint32_t)peer);
	if (getrandom(c + 20, 16, 0) != 16)
		return oxr_err(OXR_ERR_IO, "handshake: getrandom: %s", strerror(errno));
	mac(g, "oxr-c", a + 16, c + 20, (uint32_t)g->rank, (uint32_t)peer, c + 36);
	if ((st = oxr_tcp_io(fd, c, 68, 1, deadline, addr)) ||
	    (st = oxr_tcp_io(fd, k, 8, 0, deadline, addr)))
		return st;
	if (!memcmp(k, "OXRN", 4))
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s refused the link: %s", peer, addr,
			       refusal_text(get_u32(k + 4)));
	if (memcmp(k, "OXRK", 4) || (st = oxr_tcp_io(fd, k + 8, 28, 0, deadline, addr)))
		return st ? st : oxr_err(OXR_ERR_PROTO, "handshake with %s: bad answer", addr);
	mac(g, "oxr-a", c + 20, a + 16, (uint32_t)peer, (uint32_t)g->rank, want_mac);
	if (!oxr_mac_equal(k + 4, want_mac, 32))
		return oxr_err(OXR_ERR_AUTH, "rank %d at %s failed to prove the group token", peer,
			       addr);
	return OXR_OK;
}

/*
 * After the proof both sides tell their epoch ("OXRE" u32, both write
 * first).  A rank that joins a group already past epoch 0 (a process
 * restarted in the place of a dead one) takes the group's epoch, so that
 * the reset that follows brings every rank to one new epoch.  Only a rank
 * with no window yet may move: a window is of the epoch it was made in.
 */
static oxr_status_t agree_epoch(oxr_group *g, int fd, int peer, const char *addr,
				int64_t deadline, int *same_host)
{
	uint8_t mine[8 + sizeof(g->ctx->host_id)], theirs[sizeof(mine)];
	uint32_t e;
	oxr_status_t st;

	memcpy(mine, "OXRE", 4);
	put_u32(mine + 4, g->epoch);
	memcpy(mine + 8, g->ctx->host_id, sizeof(g->ctx->host_id));
	if ((st = oxr_tcp_io(fd, mine, sizeof(mine), 1, deadline, addr)) ||
	    (st = oxr_tcp_io(fd, theirs, sizeof(theirs), 0, deadline, addr)))
		return st;
	if (memcmp(theirs, "OXRE", 4))
		return oxr_err(OXR_ERR_PROTO, "handshake with %s: no epoch from rank %d", addr, peer);
	*same_host = !memcmp(theirs + 8, g->ctx->host_id, sizeof(g->ctx->host_id));
	e = get_u32(theirs + 4);
	if (e <= g->epoch)
		return OXR_OK;
	if (g->wins)
		return oxr_err(OXR_ERR_INVAL, "rank %d at %s is in epoch %u, this rank in %u with "
			       "windows made: a rank joins a group before it makes windows", peer,
			       addr, e, g->epoch);
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: joins the group in epoch %u (rank %d's)", g->rank,
		e, peer);
	g->epoch = e;
	return OXR_OK;
}

oxr_status_t oxr_link_handshake(oxr_group *g, int fd, int mode, int acceptor, int *peer,
				const char *addr, int timeout_ms, struct oxr_link_hs *hs)
{
	int64_t deadline = oxr_now_ms() + timeout_ms;
	uint8_t mine = oxr_order_byte(g->ctx->order), theirs;
	oxr_status_t st;

	if (mode == OXR_LINK_AUTH && !g->have_token)
		return oxr_err(OXR_ERR_INVAL, "an OXR_LINK_AUTH link needs the group token: call "
			       "oxr_group_set_token (or build the group with oxr_group_boot)");
	/* RFC-102 (asir register_102): both sides write first; one byte cannot block */
	if ((st = oxr_tcp_io(fd, &mine, 1, 1, deadline, addr)) ||
	    (st = oxr_tcp_io(fd, &theirs, 1, 0, deadline, addr)) ||
	    (st = oxr_order_resolve(mine, theirs, &hs->order)))
		return st;
	hs->same_host = -1;
	if (mode == OXR_LINK_OPENXM)
		return OXR_OK;
	if ((st = acceptor ? auth_acceptor(g, fd, peer, addr, deadline)
			   : auth_connector(g, fd, *peer, addr, deadline)))
		return st;
	return agree_epoch(g, fd, *peer, addr, deadline, &hs->same_host);
}
