/* SPDX-License-Identifier: MIT */
/*
 * A group's state as data.  Two facts make it up:
 *   - whether the current epoch is revoked (a revoke ends it for every
 *     rank: waits fail, what the epoch sent is dropped); only a reset's new
 *     epoch clears it;
 *   - what the group is doing: nothing, a reset, a shrink's agreement, or
 *     closing.
 * Together they are the state a user sees: open, revoked, resetting,
 * shrinking, closing (oxr_group_state).  Every change goes through this
 * file, and the activities follow the table below; the engine asks the
 * predicates here instead of combining flags.
 *
 * Invariant: a reset or a shrink runs its own waits and frames through a
 * revoked epoch (that is what it is for); anything else in a revoked epoch
 * fails with OXR_ERR_REVOKED.
 */
#include "oxr_internal.h"
#include "transport_impl.h"

/* which activity may follow which (a shrink ends, then resets; a close
 * may come whenever, and nothing after it) */
static const unsigned char allowed[OXR_GA_N][OXR_GA_N] = {
	/* to:              NONE RESETTING SHRINKING CLOSING */
	[OXR_GA_NONE]      = { 0, 1, 1, 1 },
	[OXR_GA_RESETTING] = { 1, 0, 0, 1 },
	[OXR_GA_SHRINKING] = { 1, 0, 0, 1 },
	[OXR_GA_CLOSING]   = { 0, 0, 0, 0 },
};

static const char *const act_names[OXR_GA_N] = { "none", "resetting", "shrinking", "closing" };

oxr_status_t oxr_group_enter(oxr_group *g, enum oxr_gact to)
{
	if (!allowed[g->act][to])
		return oxr_err(OXR_ERR_INVAL, "rank %d: the group is %s, it cannot start %s now",
			       g->rank, act_names[g->act], act_names[to]);
	oxr_log(g->ctx, OXR_LOG_DEBUG, "rank %d: group %s -> %s", g->rank, act_names[g->act],
		act_names[to]);
	g->act = to;
	return OXR_OK;
}

void oxr_group_leave(oxr_group *g)
{
	if (g->act != OXR_GA_CLOSING)
		g->act = OXR_GA_NONE;
}

void oxr_group_mark_revoked(oxr_group *g)
{
	g->epoch_revoked = 1;
}

void oxr_group_next_epoch(oxr_group *g)
{
	g->epoch++;
	g->epoch_revoked = 0;
}

enum oxr_gstate oxr_group_state(const oxr_group *g)
{
	switch (g->act) {
	case OXR_GA_RESETTING: return OXR_GS_RESETTING;
	case OXR_GA_SHRINKING: return OXR_GS_SHRINKING;
	case OXR_GA_CLOSING: return OXR_GS_CLOSING;
	default: return g->epoch_revoked ? OXR_GS_REVOKED : OXR_GS_OPEN;
	}
}

int oxr_group_in_reset(const oxr_group *g)
{
	return g->act == OXR_GA_RESETTING || g->act == OXR_GA_SHRINKING;
}

int oxr_group_stopped(const oxr_group *g)
{
	return g->epoch_revoked && !oxr_group_in_reset(g);
}

int oxr_group_closing(const oxr_group *g)
{
	return g->act == OXR_GA_CLOSING;
}
