/* SPDX-License-Identifier: MIT */
/*
 * Registration cache (see verbs_rcache.h for what may be cached and why).
 *
 * A small array of regions, each [lo, hi) page-aligned with its MR, a hold
 * count and a last-use stamp.  A get takes the first live region that
 * covers the request, else registers the request's pages and keeps them,
 * evicting unheld regions, least recently used first, while the cache is
 * over its byte budget or its slot count.
 *
 * Invariant: a region is in the lookup set only while the memory under it
 * is still the arena's; the release hook takes every overlapping region
 * out before the memory goes, and one still held (a READ in flight into a
 * block its link is freeing) is deregistered when its holder puts it back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "verbs_dev.h"
#include "verbs_rcache.h"

#define MAX_REGIONS 64

struct region {
	uintptr_t lo, hi;
	struct ibv_mr *mr;
	unsigned holds;
	int dead;          /* its memory went back to libc: never found again */
	uint64_t used;
};

struct oxr_rcache {
	struct oxr_rcache *next; /* every cache of the process, for the hook */
	struct ibv_pd *pd;
	size_t max_bytes, bytes;
	struct region r[MAX_REGIONS];
	int n;
	uint64_t clock, hits, misses;
};

/* The release hook may run on any thread that frees an arena. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct oxr_rcache *caches;

static void drop(struct oxr_rcache *rc, int i)
{
	oxr_vdereg_mr(rc->r[i].mr);
	rc->bytes -= rc->r[i].hi - rc->r[i].lo;
	rc->r[i] = rc->r[--rc->n];
}

static void forget(const void *base, size_t len)
{
	uintptr_t lo = (uintptr_t)base, hi = lo + len;
	struct oxr_rcache *rc;
	int i;

	pthread_mutex_lock(&mu);
	for (rc = caches; rc; rc = rc->next)
		for (i = rc->n - 1; i >= 0; i--) {
			struct region *r = &rc->r[i];
			if (r->lo >= hi || r->hi <= lo)
				continue;
			if (r->holds)
				r->dead = 1;
			else
				drop(rc, i);
		}
	pthread_mutex_unlock(&mu);
}

oxr_status_t oxr_rcache_create(struct ibv_pd *pd, size_t max_bytes, struct oxr_rcache **out)
{
	struct oxr_rcache *rc = calloc(1, sizeof(*rc));

	if (!rc)
		return oxr_err(OXR_ERR_NOMEM, "verbs registration cache: out of memory");
	rc->pd = pd;
	rc->max_bytes = max_bytes;
	pthread_mutex_lock(&mu);
	rc->next = caches;
	caches = rc;
	oxr_arena_set_release_hook(forget);
	pthread_mutex_unlock(&mu);
	*out = rc;
	return OXR_OK;
}

void oxr_rcache_destroy(struct oxr_rcache *rc)
{
	struct oxr_rcache **pp;

	if (!rc)
		return;
	pthread_mutex_lock(&mu);
	for (pp = &caches; *pp; pp = &(*pp)->next)
		if (*pp == rc) {
			*pp = rc->next;
			break;
		}
	if (!caches)
		oxr_arena_set_release_hook(NULL);
	/* held regions belong to links already gone: their QPs are destroyed */
	while (rc->n)
		drop(rc, rc->n - 1);
	pthread_mutex_unlock(&mu);
	free(rc);
}

/* Unheld regions go, oldest first, until `need` more bytes and a slot fit. */
static void make_room(struct oxr_rcache *rc, size_t need)
{
	while (rc->n && (rc->n >= MAX_REGIONS || rc->bytes + need > rc->max_bytes)) {
		int i, old = -1;
		for (i = 0; i < rc->n; i++)
			if (!rc->r[i].holds && (old < 0 || rc->r[i].used < rc->r[old].used))
				old = i;
		if (old < 0)
			return; /* all held: the new one is registered beside them */
		drop(rc, old);
	}
}

struct ibv_mr *oxr_rcache_get(struct oxr_rcache *rc, void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p & ~(page - 1);
	uintptr_t hi = ((uintptr_t)p + len + page - 1) & ~(page - 1);
	struct ibv_mr *mr;
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < rc->n; i++) {
		struct region *r = &rc->r[i];
		if (!r->dead && r->lo <= (uintptr_t)p && (uintptr_t)p + len <= r->hi) {
			r->holds++;
			r->used = ++rc->clock;
			rc->hits++;
			mr = r->mr;
			pthread_mutex_unlock(&mu);
			return mr;
		}
	}
	rc->misses++;
	make_room(rc, hi - lo);
	mr = oxr_vreg_mr(rc->pd, (void *)lo, hi - lo, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		int e = errno;
		pthread_mutex_unlock(&mu);
		oxr_err(OXR_ERR_IO, "verbs: registering %zu bytes to read into: %s (memlock limit? "
			"ulimit -l)", (size_t)(hi - lo), strerror(e));
		return NULL;
	}
	if (rc->n < MAX_REGIONS) {
		rc->r[rc->n++] = (struct region){ lo, hi, mr, 1, 0, ++rc->clock };
		rc->bytes += hi - lo;
	}
	/* else every slot is held: the MR is the caller's alone (put deregisters it) */
	pthread_mutex_unlock(&mu);
	return mr;
}

void oxr_rcache_put(struct oxr_rcache *rc, struct ibv_mr *mr)
{
	int i;

	if (!mr)
		return;
	pthread_mutex_lock(&mu);
	for (i = 0; i < rc->n; i++)
		if (rc->r[i].mr == mr) {
			struct region *r = &rc->r[i];
			r->holds--;
			if (!r->holds && (r->dead || rc->bytes > rc->max_bytes))
				drop(rc, i);
			pthread_mutex_unlock(&mu);
			return;
		}
	pthread_mutex_unlock(&mu);
	oxr_vdereg_mr(mr); /* one that found no slot */
}

void oxr_rcache_stats(const struct oxr_rcache *rc, uint64_t *hits, uint64_t *misses)
{
	*hits = rc->hits;
	*misses = rc->misses;
}
