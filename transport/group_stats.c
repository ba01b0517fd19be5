/* SPDX-License-Identifier: MIT */
/*
 * What a group holds and has done (oxr_group_stats), for the scale checks of
 * on-demand links: a rank's links, descriptors and handshakes should follow
 * the peers it talks to, not the group's size.
 */
#include <string.h>

#include "oxr_internal.h"
#include "link.h"
#include "provider.h"

oxr_status_t oxr_group_stats(const oxr_group *g, oxr_group_counters *out)
{
	int i;

	if (!g || !out)
		return oxr_err(OXR_ERR_INVAL, "group_stats: NULL argument");
	memset(out, 0, sizeof(*out));
	for (i = 0; i < g->nused; i++) {
		const struct link *l = g->links[g->used[i]];
		if (l->state == LINK_OPENING)
			out->links_opening++;
		if (!link_up(l))
			continue;
		out->links_open++;
		if (!strcmp(l->ops->name, "shm"))
			out->links_shm++;
		else if (!strcmp(l->ops->name, "verbs"))
			out->links_verbs++;
		else
			out->links_tcp++;
		out->fds += l->fd >= 0;
		out->links_shared_rx += l->ops->rx_shared && l->ops->rx_shared(l);
	}
	out->fds += 1 + (uint32_t)g->nlis + g->nhs; /* epoll, listeners, handshakes */
	out->handshakes = g->handshakes;
	out->handshakes_refused = g->handshakes_refused;
	out->revokes_sent = g->revokes_sent;
	out->beats_sent = g->beats_sent;
	out->shrink_frames = g->shrinks_sent;
	out->window_descs = oxr_windows_known(g);
	oxr_verbs_pinned(&out->qps, &out->mrs, &out->pinned_bytes);
	return OXR_OK;
}

/* At OXR_LOG_LEVEL=info a rank says what its group cost it, as it ends. */
void oxr_group_log_stats(const oxr_group *g)
{
	oxr_group_counters c;

	if (g->ctx->log_level < OXR_LOG_INFO || oxr_group_stats(g, &c))
		return;
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d of %d: %u links open (tcp %u, shm %u, verbs %u; "
		"%u receiving through a shared pool), %u fds, %llu handshakes (%llu refused), "
		"%llu revokes and %llu heartbeats sent; verbs: %llu QPs, %llu MRs, %llu KiB pinned", g->rank, g->size, c.links_open, c.links_tcp,
		c.links_shm, c.links_verbs, c.links_shared_rx, c.fds, (unsigned long long)c.handshakes,
		(unsigned long long)c.handshakes_refused, (unsigned long long)c.revokes_sent,
		(unsigned long long)c.beats_sent,
		(unsigned long long)c.qps, (unsigned long long)c.mrs,
		(unsigned long long)(c.pinned_bytes >> 10));
}
