/* SPDX-License-Identifier: MIT */
/* The crystal router's state, shared by crystal.c and crystal_land.c; not installed. */
#ifndef OXR_CRYSTAL_IMPL_H
#define OXR_CRYSTAL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/crystal.h"

#define MAX_STAGES 32
#define PAD8(x) (((x) + 7) & ~(uint64_t)7)

struct stage {
	int nlo, nhi;         /* this rank's half: its range after the stage */
	int to, to_j;         /* the other half's records go to `to`, its slot j */
	int to_slot, to_nslots;
	int from[2], nfrom;   /* writers of this stage: partner, offloader */
	int slot;             /* this rank's first slot of the stage */
};

struct buf {
	uint8_t *p;
	size_t n, cap;
};

struct oxr_crystal {
	oxr_group *g;
	int rank, size, nstages, nslots, broken;
	struct stage st[MAX_STAGES];
	uint32_t seq;
	uint64_t region, region_max;
	uint64_t want;                   /* biggest stage (bytes) seen this transfer */
	uint64_t know;                   /* biggest any rank saw last transfer, as heard */
	uint8_t *mem;
	size_t memlen;
	oxr_win *win;
	uint32_t win_id;
	struct buf out, cur, next, snd; /* packed; held; being built; to send */
	size_t iter;
	uint64_t npacked;                /* records packed since the last transfer */
	oxr_win_note *stash;             /* puts that came early (a later stage) */
	size_t nstash, capstash;
	oxr_crystal_stats stats;
};

oxr_status_t oxr_cr_reserve(struct buf *b, uint64_t more);
/* ms left until deadline (-1: no deadline) */
int oxr_cr_left_ms(long long deadline);
long long oxr_cr_now_ms(void);
oxr_status_t oxr_cr_make_window(oxr_crystal *cr, uint64_t region, int timeout_ms);
/* Stage k: the other half's records (in snd) to the partner; a writer's into next. */
oxr_status_t oxr_cr_send_stage(oxr_crystal *cr, int k);
oxr_status_t oxr_cr_recv_stage(oxr_crystal *cr, int k, int j, long long deadline);
/* Re-creates the window with larger regions when the agreed size says so. */
oxr_status_t oxr_cr_maybe_grow(oxr_crystal *cr, long long deadline);

#endif
