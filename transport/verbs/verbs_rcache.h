/* SPDX-License-Identifier: MIT */
/*
 * The verbs registration cache: memory regions of oxr's own receive memory
 * (arena blocks a large payload is read into), kept registered between
 * uses, because pinning and registering a megabyte costs about as much as
 * copying it.  Only memory whose end oxr hears about is cached: the arena
 * calls back before a block goes back to libc, and the cache forgets every
 * region inside it first, so a stale MR can never reach pages libc has
 * unmapped and mapped again (the hazard UCX and Open MPI need malloc hooks
 * for).  The caller's memory, whose end oxr cannot see, is registered per
 * message and never cached.  Regions are local-write only: nothing cached
 * is ever reachable by a peer.
 */
#ifndef OXR_VERBS_RCACHE_H
#define OXR_VERBS_RCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "oxr/status.h"

struct oxr_rcache;

/* max_bytes: registered bytes kept (least recently used go first); 0: no
 * caching, every get registers and every put deregisters. */
oxr_status_t oxr_rcache_create(struct ibv_pd *pd, size_t max_bytes, struct oxr_rcache **out);
void oxr_rcache_destroy(struct oxr_rcache *rc);
/* An MR covering [p, p + len) with local write, held until oxr_rcache_put;
 * NULL (and the reason in oxr_errmsg) when registration fails. */
struct ibv_mr *oxr_rcache_get(struct oxr_rcache *rc, void *p, size_t len);
void oxr_rcache_put(struct oxr_rcache *rc, struct ibv_mr *mr);
/* Gets that found a region, and those that registered one. */
void oxr_rcache_stats(const struct oxr_rcache *rc, uint64_t *hits, uint64_t *misses);

#endif
