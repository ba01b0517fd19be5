/* SPDX-License-Identifier: MIT */
/*
 * Bump allocator for decoded objects: a list of chunks, freed together.
 * Requests above a quarter chunk get a block of their own so a big payload
 * never wastes the tail of a chunk.  A reset keeps a few chunks for reuse:
 * a server that decodes one small message after another would otherwise
 * hand its chunks back to the kernel and fault them in again every time.
 * For the same reason big blocks (a received 1 MiB payload) go to a small
 * process-wide cache when freed: streaming large messages otherwise spends
 * half its time faulting in pages that glibc trimmed a moment before.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "oxr/cmo.h"
#include "oxr_internal.h"
#include "arena.h"

#define CHUNK (64 * 1024)
#define FIRST_CHUNK 1024
#define ALIGN 16
#define KEEP_CHUNKS 64 /* at most 4 MiB kept across resets */

struct block {
	struct block *next;
	size_t size;
	max_align_t data[];
};

struct oxr_arena {
	struct oxr_arena *pooled; /* next in the pool of small arenas */
	struct block *blocks;
	struct block *spare; /* whole chunks kept by reset */
	unsigned nspare;
	size_t chunk; /* size of the next new chunk */
	char *cur, *end;
	size_t bytes;
};

/* ---- the big-block cache ---- */
#define CACHE_MIN (CHUNK / 4) /* every block of its own: a 64 KiB payload faults too */
#define CACHE_CAP (32u << 20) /* at most this much kept by the whole process */
#define CACHE_BLOCKS 256      /* and at most this many blocks (a short list to search) */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static void (*release_hook)(const void *base, size_t len);

void oxr_arena_set_release_hook(void (*fn)(const void *base, size_t len))
{
	release_hook = fn;
}

/* Every block goes back to libc here, so whoever registered its pages with
 * an RDMA device (the verbs registration cache) forgets them first: memory
 * that libc unmaps and maps again must never be reached by a stale MR. */
static void release(struct block *b)
{
	if (b && release_hook)
		release_hook(b->data, b->size);
	free(b);
}
static struct block *cache;
static size_t cache_bytes;
static unsigned cache_n;

/* A cached block of at least n bytes and not wastefully more, or NULL. */
static struct block *cache_take(size_t n)
{
	struct block **pp, *b = NULL;

	if (n < CACHE_MIN)
		return NULL;
	pthread_mutex_lock(&cache_mu);
	for (pp = &cache; *pp; pp = &(*pp)->next)
		if ((*pp)->size >= n && (*pp)->size - n <= n / 2) {
			b = *pp;
			*pp = b->next;
			cache_bytes -= b->size;
			cache_n--;
			break;
		}
	pthread_mutex_unlock(&cache_mu);
	return b;
}

static void block_free(struct block *b)
{
	if (b->size >= CACHE_MIN) {
		pthread_mutex_lock(&cache_mu);
		if (cache_bytes + b->size <= CACHE_CAP && cache_n < CACHE_BLOCKS) {
			b->next = cache;
			cache = b;
			cache_bytes += b->size;
			cache_n++;
			b = NULL;
		}
		pthread_mutex_unlock(&cache_mu);
	}
	release(b);
}

static struct block *block_alloc(size_t n)
{
	struct block *b = cache_take(n);

	if (b)
		return b;
	if (n > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + n);
	if (b)
		b->size = n;
	return b;
}

/* ---- the pool of small arenas ----
 * Every received message gets an arena of its own, and most messages are
 * small: an arena whose only block is its first small chunk goes back to
 * this pool whole, chunk and all, instead of to libc.  A message then costs
 * no malloc and no free (each is a few hundred instructions, a large share
 * of a small message's path). */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ARENAS 0 /* ASan must see a freed message's memory as freed */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ARENAS 0
#endif
#endif
#ifndef POOL_ARENAS
#define POOL_ARENAS 64
#endif
static const unsigned pool_cap = POOL_ARENAS;
static oxr_arena *pool;
static unsigned npool;
/* A spin lock, not cache_mu: it guards two stores, and a mutex's lock and
 * unlock twice a message cost as much as the pool saves over malloc. */
static char pool_busy;

static void pool_lock(void)
{
	while (__atomic_test_and_set(&pool_busy, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&pool_busy, __ATOMIC_RELAXED))
			sched_yield(); /* the holder may be off its core: never spin long */
}

static void pool_unlock(void) { __atomic_clear(&pool_busy, __ATOMIC_RELEASE); }

oxr_status_t oxr_arena_create(oxr_arena **out)
{
	oxr_arena *a;

	pool_lock();
	if ((a = pool)) {
		pool = a->pooled;
		npool--;
	}
	pool_unlock();
	if (a) {
		a->pooled = NULL;
		*out = a;
		return OXR_OK;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return oxr_err(OXR_ERR_NOMEM, "arena: out of memory");
	a->chunk = FIRST_CHUNK;
	*out = a;
	return OXR_OK;
}

/* a holds one first chunk and nothing else: make it fresh and pool it */
static int pool_put(oxr_arena *a)
{
	struct block *b = a->blocks;

	if (!b || b->next || b->size != FIRST_CHUNK || a->spare || a->chunk != 2 * FIRST_CHUNK)
		return 0;
	a->cur = (char *)b->data;
	a->end = (char *)b->data + b->size;
	a->bytes = b->size;
	pool_lock();
	if (npool < pool_cap) {
		a->pooled = pool;
		pool = a;
		npool++;
		b = NULL;
	}
	pool_unlock();
	return !b;
}

void oxr_arena_reset(oxr_arena *a)
{
	struct block *b, *next;

	for (b = a->blocks; b; b = next) {
		next = b->next;
		if (b->size == CHUNK && a->nspare < KEEP_CHUNKS) {
			b->next = a->spare;
			a->spare = b;
			a->nspare++;
		} else {
			block_free(b);
		}
	}
	a->blocks = NULL;
	a->cur = a->end = NULL;
	a->bytes = 0;
}

void oxr_arena_destroy(oxr_arena *a)
{
	struct block *b, *next;

	if (!a || pool_put(a))
		return;
	oxr_arena_reset(a);
	for (b = a->spare; b; b = next) {
		next = b->next;
		block_free(b); /* a 64 KiB payload's block is a chunk's size */
	}
	free(a);
}

size_t oxr_arena_bytes(const oxr_arena *a)
{
	return a->bytes;
}

static struct block *new_block(oxr_arena *a, size_t n)
{
	struct block *b = block_alloc(n);

	if (b)
		a->bytes += b->size;
	return b;
}

/* Own blocks go behind the head, so the current chunk stays the head. */
static void link_behind_head(oxr_arena *a, struct block *b)
{
	if (a->blocks) {
		b->next = a->blocks->next;
		a->blocks->next = b;
	} else {
		b->next = NULL;
		a->blocks = b;
	}
}

void *oxr_arena_alloc(oxr_arena *a, size_t n)
{
	struct block *b;

	n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (n == 0)
		n = ALIGN;
	if ((size_t)(a->end - a->cur) >= n) {
		void *p = a->cur;
		a->cur += n;
		return p;
	}
	if (n > CHUNK / 4) {
		b = new_block(a, n);
		if (!b)
			goto nomem;
		link_behind_head(a, b);
		return b->data;
	}
	if (a->spare) {
		b = a->spare;
		a->spare = b->next;
		a->nspare--;
		a->bytes += CHUNK;
	} else {
		/* Chunks start small and double: a queue of small received
		 * messages, one arena each, must not cost 64 KiB a message. */
		while (a->chunk < n)
			a->chunk *= 2;
		b = new_block(a, a->chunk);
		if (a->chunk < CHUNK)
			a->chunk *= 2;
	}
	if (!b)
		goto nomem;
	b->next = a->blocks;
	a->blocks = b;
	a->cur = (char *)b->data + n;
	a->end = (char *)b->data + b->size;
	return b->data;
nomem:
	oxr_err(OXR_ERR_NOMEM, "arena: cannot allocate %zu bytes", n);
	return NULL;
}

/* Growable buffers outside the arena, for payloads whose length was claimed
 * by a peer but whose bytes have not arrived: memory follows the bytes that
 * really came, never the claim. */
void *oxr_arena_grow_begin(size_t cap)
{
	struct block *b = block_alloc(cap);

	if (!b)
		return NULL;
	b->next = NULL;
	return b->data;
}

void *oxr_arena_grow(void *data, size_t cap)
{
	struct block *b = (struct block *)((char *)data - offsetof(struct block, data));

	if (b->size >= cap) /* a cached block may be roomier than asked */
		return data;
	if (release_hook) /* the block may move: its old pages are not ours any more */
		release_hook(b->data, b->size);
	b = realloc(b, sizeof(*b) + cap);
	if (!b)
		return NULL;
	b->size = cap;
	return b->data;
}

void oxr_arena_grow_abort(void *data)
{
	if (data)
		block_free((struct block *)((char *)data - offsetof(struct block, data)));
}

void oxr_arena_adopt(oxr_arena *a, void *data)
{
	struct block *b = (struct block *)((char *)data - offsetof(struct block, data));

	a->bytes += b->size;
	link_behind_head(a, b);
}
