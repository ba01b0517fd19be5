/* SPDX-License-Identifier: MIT */
/* The collectives' window ids (coll_win.h says how they are made). */
#include "oxr_internal.h"
#include "coll_win.h"

oxr_status_t oxr_coll_win_create(oxr_group *g, const char *what, void *mem, size_t len,
				 int timeout_ms, uint32_t *id, oxr_win **out)
{
	oxr_status_t st;

	*id = oxr_coll_win_id(oxr_group_next_object(g));
	st = oxr_win_create(g, *id, mem, len, timeout_ms, out);
	/* mem is never NULL here, so OXR_ERR_INVAL is an id in use: an object
	 * made OXR_COLL_WIN_SPAN objects earlier on this group still lives */
	if (st == OXR_ERR_INVAL)
		return oxr_err(st, "%s: %s: the group's collective objects take window ids modulo "
			       "%u, and one made %u objects before this one is still alive "
			       "(destroy long-lived barriers or crystal routers and make them "
			       "anew)", what, oxr_errmsg(), OXR_COLL_WIN_SPAN, OXR_COLL_WIN_SPAN);
	return st;
}
