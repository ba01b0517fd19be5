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
	int p;

	if (!g || !out)
		return oxr_err(OXR_ERR_INVAL, "group_stats: NULL argument");
	memset(out, 0, sizeof(*out));
	for (p = 0; p < g->size; p++) {
		const struct link *l = &g->links[p];
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
	}
	out->fds += 1 + (uint32_t)g->nlis + g->nhs; /* epoll, listeners, handshakes */
	out->handshakes = g->handshakes;
	out->handshakes_refused = g->handshakes_refused;
	out->revokes_sent = g->revokes_sent;
	oxr_verbs_objects(&out->qps, &out->mrs);
	return OXR_OK;
}
