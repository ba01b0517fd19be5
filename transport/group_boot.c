/* SPDX-License-Identifier: MIT */
/*
 * A group from the bootstrap.  Every rank listens and the endpoints go
 * round in one allgather.  Then, on demand (OXR_LINKS=ondemand), nothing
 * more: links open on first use (link_demand.c), and the listener joins
 * the group's epoll set.  Under PMIx or oxr-run on demand not even the
 * allgather: each rank publishes its endpoint and reads a peer's when its
 * link opens (direct modex), so a rank fetches the endpoints it uses;
 * from oxr-run, whose store is one process, it fetches its collectives'
 * partners in one lookup at boot (prefetch_partners).
 * OXR_LINKS=eager wires every pair now: rank i
 * connects to every lower rank in turn and accepts every higher one, in
 * whatever order they come.  No cycle of waits: a rank accepts as soon as
 * its own connects are done, and rank 0 connects to nobody, so by induction
 * every connect meets an acceptor.  OXR_LINKS=auto is eager up to 64 ranks
 * and on demand above (eager() says why); a provider whose connect blocks
 * on the peer (OXR_VERBS_CM=rdmacm) is always eager.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/epoll.h>

#include "oxr_internal.h"
#include "transport_impl.h"
#include "link_open.h"
#include "provider.h"
#include "boot_impl.h"

#define endpoint oxr_endpoint

enum { LINKS_AUTO, LINKS_ONDEMAND, LINKS_EAGER };

static oxr_status_t wire(oxr_group *g, const struct endpoint *all, int port)
{
	int i, n = g->size, timeout = g->ctx->link_timeout_ms;
	oxr_status_t st;

	for (i = 0; i < g->rank; i++) {
		const struct endpoint *e = &all[i];
		char host[sizeof(e->host) + 1];
		memcpy(host, e->host, sizeof(e->host));
		host[sizeof(e->host)] = 0;
		st = oxr_link_connect(g, host, (int)oxr_load32(e->port, OXR_ORDER_LITTLE), i,
				      OXR_LINK_AUTH, timeout);
		if (st)
			return oxr_err(st, "rank %d: link to rank %d at %s: %s", g->rank, i, host,
				       oxr_errmsg());
	}
	for (i = g->rank + 1; i < n; i++) {
		/* any higher rank not linked yet; a refused stranger does not count */
		st = oxr_link_accept(g, port, -1, OXR_LINK_AUTH, timeout);
		if (st == OXR_ERR_AUTH)
			i--;
		else if (st)
			return oxr_err(st, "rank %d: waiting for %d more ranks to connect: %s", g->rank,
				       n - i, oxr_errmsg());
	}
	return OXR_OK;
}

/*
 * auto: every pair at boot up to this many ranks, on demand above, as
 * MVAPICH2's on-demand threshold does (64 there too).  Up to 64 a full
 * mesh costs each rank 63 links and about 0.4 s more start-up on 2 cores,
 * and spares every first message to a peer its handshake (two round
 * trips) and a later call the news that a peer is unreachable; above, the
 * mesh is what fails: eager boots 256 ranks in 12.0 s against 1.7 s on
 * demand and 1,024 not at all, and its reset at 256 times out on 2 cores
 * (docs/performance.md).
 */
#define LINKS_AUTO_EAGER_MAX 64

static int eager(const oxr_ctx *c, int size)
{
	/* OXR_VERBS_CM=rdmacm needs eager: its connect blocks on the peer */
	if (c->params.verbs_cm == 1 && c->prov != &oxr_tcp_provider)
		return 1;
	if (c->params.links == LINKS_AUTO)
		return size <= LINKS_AUTO_EAGER_MAX;
	return c->params.links == LINKS_EAGER;
}

/*
 * Where a lookup is a round trip to one central store (oxr-run), the
 * endpoints of the ranks 2^k away either way come in one lookup now: they
 * are the partners of the collectives (the dissemination barrier, the
 * binomial trees from rank 0, the ring, the revoke's overlay, the crystal
 * router at a power of 2), and a lookup each when their links open would
 * queue thousands at that store while the ranks wait.  Per rank: one
 * request of 2 ceil(log2 P) ranks, 64 bytes an endpoint back.
 */
static oxr_status_t prefetch_partners(oxr_group *g, struct endpoint *all)
{
	int ranks[OXR_BOOT_LOOKUP_MAX], n = oxr_overlay_partners(g, ranks, OXR_BOOT_LOOKUP_MAX), i;
	struct endpoint *got;
	oxr_status_t st;

	if (!n)
		return OXR_OK;
	if (!(got = calloc((size_t)n, sizeof(*got))))
		return oxr_err(OXR_ERR_NOMEM, "group: out of memory");
	st = oxr_boot_lookup_batch(g->boot, ranks, n, g->boot_seq, got, sizeof(*got));
	for (i = 0; st == OXR_OK && i < n; i++)
		/* a malformed one stays unknown: its link's lookup then says so */
		if (oxr_endpoint_ok(&got[i]))
			all[ranks[i]] = got[i];
	free(got);
	return st == OXR_ERR_UNSUPPORTED ? OXR_OK : st;
}

/* The group keeps the endpoints and takes connects in its progress engine. */
static oxr_status_t listen_on_demand(oxr_group *g, int port, struct endpoint *all)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = OXR_EPOLL_LISTEN };
	int i;

	for (i = 0; i < g->nlis && g->lis[i].port != port; i++)
		;
	g->eps = all;
	g->demand_lfd = g->lis[i].fd;
	fcntl(g->demand_lfd, F_SETFL, fcntl(g->demand_lfd, F_GETFL) | O_NONBLOCK);
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->demand_lfd, &ev))
		return oxr_err(OXR_ERR_IO, "group: epoll_ctl of the listener: %s", strerror(errno));
	return OXR_OK;
}

oxr_status_t oxr_group_boot(oxr_ctx *c, oxr_boot *b, oxr_group **out)
{
	const char *host = c->params.host;
	uint8_t token[OXR_TOKEN_BYTES];
	struct endpoint me, *all;
	oxr_group *g;
	int port;
	oxr_status_t st;

	memset(&me, 0, sizeof(me));
	if (!host || !*host)
		host = "127.0.0.1";
	if (strlen(host) >= sizeof(me.host))
		return oxr_err(OXR_ERR_INVAL, "OXR_HOST=%s: longer than %zu characters", host,
			       sizeof(me.host) - 1);
	if ((st = oxr_group_create(c, oxr_boot_size(b), oxr_boot_rank(b), &g)))
		return st;
	oxr_boot_token(b, token);
	oxr_group_set_token(g, token, sizeof(token));
	/* calloc: untouched pages of it cost nothing, as a lookup fills it */
	all = calloc((size_t)g->size, sizeof(*all));
	st = all ? oxr_link_listen(g, 0, &port) : oxr_err(OXR_ERR_NOMEM, "group: out of memory");
	if (st == OXR_OK) {
		memcpy(me.host, host, strlen(host));
		oxr_store32(me.port, (uint32_t)port, OXR_ORDER_LITTLE);
		me.order = oxr_order_byte(c->order);
		if (!eager(c, g->size) && oxr_boot_can_lookup(b)) {
			st = oxr_boot_publish(b, &me, sizeof(me), &g->boot_seq);
			all[g->rank] = me;
			g->boot = b;
			oxr_boot_hold(b);
			if (st == OXR_OK)
				st = prefetch_partners(g, all);
		} else {
			st = oxr_boot_allgather(b, &me, sizeof(me), all);
		}
	}
	if (st == OXR_OK && eager(c, g->size)) {
		st = wire(g, all, port);
		free(all);
	} else if (st == OXR_OK) {
		st = listen_on_demand(g, port, all);
	} else {
		free(all);
	}
	if (st) {
		oxr_group_destroy(g);
		return st;
	}
	oxr_log(c, OXR_LOG_INFO, "rank %d of %d: group up over %s (bootstrap %s, links %s%s)",
		g->rank, g->size, c->transport, oxr_boot_name(b), eager(c, g->size) ? "eager" : "on demand",
		g->boot ? ", endpoints looked up on first use" : "");
	*out = g;
	return OXR_OK;
}
