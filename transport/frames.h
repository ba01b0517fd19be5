/* SPDX-License-Identifier: MIT */
/*
 * The library's own frames: tags in the OX_PRIVATE range the codec passes
 * through (oxr/ox.h), each with one CMO body, only on OXR_LINK_AUTH links.
 * frames.c maps each to its handler; a provider may own one more
 * (struct oxr_provider's frame_tag).
 */
#ifndef OXR_FRAMES_H
#define OXR_FRAMES_H

#include "oxr/ox.h"

enum {
	OXR_OX_PRIVATE_WIN = OXR_OX_PRIVATE_FIRST + 1,    /* a window's descriptor */
	OXR_OX_PRIVATE_PUT = OXR_OX_PRIVATE_FIRST + 2,    /* a put in the stream */
	OXR_OX_PRIVATE_REVOKE = OXR_OX_PRIVATE_FIRST + 3, /* a group's revoke */
	OXR_OX_PRIVATE_BYE = OXR_OX_PRIVATE_FIRST + 4,    /* a rank leaves the group on purpose */
	OXR_OX_PRIVATE_SHRINK = OXR_OX_PRIVATE_FIRST + 5, /* a shrink round */
	OXR_OX_PRIVATE_BEAT = OXR_OX_PRIVATE_FIRST + 6,   /* "still here" (OXR_HEARTBEAT_MS) */
	/* + 7: retired (a put fence, before puts on verbs left the stream) */
	OXR_OX_PRIVATE_WQP = OXR_OX_PRIVATE_FIRST + 8,    /* verbs: a window QP's offer or readiness */
	OXR_OX_PRIVATE_RESET = OXR_OX_PRIVATE_FIRST + 9,  /* a round of a reset's agreement */
};

#endif
