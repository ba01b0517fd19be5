/* SPDX-License-Identifier: MIT */
/*
 * The window ids of the collectives that land by puts (barriers, crystal
 * routers); not installed.  Each window is named by the group's next
 * object number (oxr_group_next_object): every rank makes a group's
 * collective objects, and a crystal router re-creates its window, in the
 * same order, so the numbers agree across ranks without a word, and two
 * objects alive at once never share one.  The id carries the number's low
 * 16 bits under the block 0x6f78 (oxr/transport.h reserves ids 0x6f780000
 * to 0x6f78ffff): oxr_win_create and every provider carry the whole 32
 * bits, and the upper half keeps the collectives' ids apart from the small
 * ids applications give their own windows.
 */
#ifndef OXR_COLL_WIN_H
#define OXR_COLL_WIN_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/transport.h"

#define OXR_COLL_WIN_BASE 0x6f780000u
#define OXR_COLL_WIN_SPAN 0x10000u /* object numbers before an id comes round again */

/* The window id of object number n. */
static inline uint32_t oxr_coll_win_id(uint32_t n)
{
	return OXR_COLL_WIN_BASE | (n & (OXR_COLL_WIN_SPAN - 1));
}

/* oxr_win_create under the group's next object number (*id gets the id);
 * `what` names the object in errors (collective, as oxr_win_create). */
oxr_status_t oxr_coll_win_create(oxr_group *g, const char *what, void *mem, size_t len,
				 int timeout_ms, uint32_t *id, oxr_win **out);

#endif
