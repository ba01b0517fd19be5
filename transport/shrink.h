/* SPDX-License-Identifier: MIT */
/*
 * Between shrink.c (the driver: the agreement's waits, the renumbering)
 * and shrink_frame.c (its frames on the links: sent, taken, kept for an
 * agreement not started, the fences).  Not installed.
 */
#ifndef OXR_SHRINK_H
#define OXR_SHRINK_H

#include <stdint.h>

#include "oxr_internal.h"
#include "agree.h"

/* A frame's kind: agree.h's two, and the fence a rank sends on its links
 * when it leaves the old epoch for a shrink (what it sent before is old). */
enum { SH_UP = OXR_AGREE_UP, SH_DECIDE = OXR_AGREE_DECIDE, SH_FENCE = 3 };

/* A frame kept for an agreement this rank has not started (its sender is
 * one agreement ahead): its list names the ranks of that agreement. */
struct sh_frame {
	struct sh_frame *next;
	uint32_t gen, epoch, objs;
	int32_t kind, len;
	int32_t list[];
};

/* Frames kept per link at most: a rank sends one other rank at most an
 * UP, a DECIDE and a fence per agreement, and one rank can be at most one
 * agreement ahead. */
#define SH_PEND_MAX 8

/* Sends peer a frame of the running agreement (kind, list[0..len)),
 * fencing the link first if this agreement has not yet. */
oxr_status_t oxr_shrink_send(oxr_group *g, int peer, int kind, const int32_t *list, int len,
			     uint32_t epoch, uint32_t objs);
/* Fences the link to peer for the agreement g->sh.gen (once). */
oxr_status_t oxr_shrink_fence(oxr_group *g, int peer);
/* The frames kept for the agreement now started go into it. */
oxr_status_t oxr_shrink_replay(oxr_group *g);

#endif
