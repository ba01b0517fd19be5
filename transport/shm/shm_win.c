/* SPDX-License-Identifier: MIT */
/*
 * Windows on shared memory: a put to a rank of this host is a memcpy into
 * its window, mapped here, and a note in the link's ring.
 *
 * Memory: on a context with the shm provider, oxr_win_alloc hands out pages
 * of a memfd of their own, named "oxr-win-<nonce>" and mapped shared.  A
 * window over such memory is registered (one window per memfd at a time;
 * windows over other memory, or a second one, take the stream as on tcp).
 * Its descriptor names the memfd (addr = fd << 40 | offset, rkey = the
 * nonce); a peer maps it through /proc/<pid>/fd/<fd> at its first put and
 * checks that the name carries the nonce, so a stale descriptor never maps
 * another file.
 *
 * Invariant (the epoch): no store of epoch e lands after the target has
 * seen the revoke of e.  Seeing it (oxr_windows_revoked) moves each
 * registered window onto a fresh memfd: a new one, the contents copied,
 * mapped over the same addresses (MAP_FIXED), the old fd closed.  The
 * peers' mappings still reach the old pages, which nobody reads any more:
 * a late store lands there and is lost with them.  The reset registers the
 * window anew (its new fd and nonce go out in the descriptor) and a peer
 * drops its old mappings (new_epoch) and maps the new memfd at its first
 * put of the new epoch.  A put racing with the move may land in part, as
 * an RDMA write racing with a deregistration; none of it lands after.
 * Notes carry the origin's epoch and are checked like every put
 * (oxr_put_landed).
 *
 * Order: a put's bytes are in the window when oxr_put returns; its note
 * goes into the link's note ring marked with the stream position reached
 * (shm_ring.h), and the reader takes it exactly there, so notes and
 * messages arrive in the order they were made.  Puts into windows over
 * other memory travel in the stream: across two windows of the two kinds,
 * bytes may show in another order than the puts; notes never do.
 *
 * Cost: a window from oxr_win_alloc holds one fd on its owner; each peer
 * that puts to it maps it (address space; the pages are the owner's).  A
 * revoke copies each registered window once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_impl.h"
#include "shm_memfd.h"

#define FD_SHIFT 40
#define OFF_MASK ((UINT64_C(1) << FD_SHIFT) - 1)

struct shm_mem {
	struct shm_mem *next;
	uint8_t *base;
	size_t len; /* mapped: the request rounded up to pages */
	int fd;
	uint32_t nonce;
	int registered;
	int stuck; /* a revoke could not move it: the stream carries its puts */
};

/* What win_reg hands the generic layer as its struct oxr_prov_mr. */
struct shm_reg {
	oxr_ctx *c;
	struct shm_mem *m;
};

static oxr_status_t new_memfd(size_t len, int *fd, uint32_t *nonce)
{
	char name[32];

	if (getrandom(nonce, sizeof(*nonce), 0) != (ssize_t)sizeof(*nonce))
		return oxr_err(OXR_ERR_IO, "shm: getrandom: %s", strerror(errno));
	snprintf(name, sizeof(name), "oxr-win-%08x", *nonce);
	return oxr_shm_memfd_new(name, len, fd);
}

void *oxr_shm_mem_alloc(oxr_ctx *c, size_t len)
{
	struct shm_ctx *x = c->hctx;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = len ? (len + pg - 1) / pg * pg : pg;
	struct shm_mem *m = calloc(1, sizeof(*m));

	if (!m || n < len || new_memfd(n, &m->fd, &m->nonce)) {
		free(m);
		return NULL;
	}
	if ((m->base = oxr_shm_map(NULL, n, m->fd)) == MAP_FAILED) {
		close(m->fd);
		free(m);
		return NULL;
	}
	m->len = n;
	m->next = x->mems;
	x->mems = m;
	return m->base;
}

void oxr_shm_mem_free(oxr_ctx *c, void *p, size_t len)
{
	struct shm_ctx *x = c->hctx;
	struct shm_mem **pp, *m;

	(void)len;
	for (pp = &x->mems; (m = *pp); pp = &m->next)
		if (m->base == p) {
			*pp = m->next;
			munmap(m->base, m->len);
			close(m->fd);
			free(m);
			return;
		}
}

/* The context goes: its fds close; memory still mapped stays the caller's. */
void oxr_shm_mems_free(struct shm_ctx *x)
{
	struct shm_mem *m, *n;

	for (m = x->mems; m; m = n) {
		n = m->next;
		close(m->fd);
		free(m);
	}
	x->mems = NULL;
}

oxr_status_t oxr_shm_win_reg(oxr_group *g, void *base, size_t len, struct oxr_prov_mr **mr,
			     uint64_t *addr, uint32_t *rkey)
{
	struct shm_ctx *x = g->ctx->hctx;
	struct shm_mem *m;
	struct shm_reg *r;
	uint8_t *b = base;

	*mr = NULL;
	for (m = x->mems; m; m = m->next)
		if (b >= m->base && (size_t)(b - m->base) <= m->len && len <= m->len - (size_t)(b - m->base))
			break;
	/* not ours, or taken: the stream carries its puts */
	if (!m || m->registered || m->stuck || m->fd >= (1 << 23) || m->len > OFF_MASK)
		return OXR_OK;
	if (!(r = malloc(sizeof(*r))))
		return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
	*r = (struct shm_reg){ g->ctx, m };
	m->registered = 1;
	*addr = (uint64_t)m->fd << FD_SHIFT | (uint64_t)(b - m->base);
	*rkey = m->nonce;
	*mr = (struct oxr_prov_mr *)r;
	return OXR_OK;
}

/* The revoke is seen: the window moves to fresh pages (see the top). */
void oxr_shm_win_revoke(struct oxr_prov_mr *mr)
{
	struct shm_reg *r = (struct shm_reg *)mr;
	struct shm_mem *m = r->m;
	uint32_t nonce;
	void *tmp;
	int fd;

	if (m->stuck || new_memfd(m->len, &fd, &nonce))
		goto stuck;
	if ((tmp = oxr_shm_map(NULL, m->len, fd)) == MAP_FAILED) {
		close(fd);
		goto stuck;
	}
	memcpy(tmp, m->base, m->len);
	munmap(tmp, m->len);
	if (oxr_shm_map(m->base, m->len, fd) == MAP_FAILED) {
		close(fd);
		goto stuck;
	}
	close(m->fd);
	m->fd = fd;
	m->nonce = nonce;
	return;
stuck:
	if (!m->stuck)
		oxr_log(r->c, OXR_LOG_ERROR, "shm: a revoked window's %zu bytes could not move to "
			"fresh pages (%s): a put of the revoked epoch from this host racing with "
			"the revoke may still land in it; its puts take the stream from now on",
			m->len, strerror(errno));
	m->stuck = 1;
}

void oxr_shm_win_dereg(struct oxr_prov_mr *mr)
{
	struct shm_reg *r = (struct shm_reg *)mr;

	r->m->registered = 0;
	free(r);
}

void oxr_shm_atts_free(struct shm_link *sl)
{
	int i;

	for (i = 0; i < sl->natt; i++)
		munmap(sl->atts[i].base, sl->atts[i].len);
	free(sl->atts);
	sl->atts = NULL;
	sl->natt = sl->maxatt = 0;
}

/* A new epoch: the peers' windows of the old one are never written again. */
void oxr_shm_new_epoch(oxr_group *g)
{
	struct shm_group *sg = g->hgroup;
	int i;

	for (i = 0; sg && i < sg->n; i++)
		oxr_shm_atts_free(sg->links[i]);
}

/* Maps the peer's window memfd fd, checked to be the one named by nonce. */
static oxr_status_t attach(struct shm_link *sl, int fd, uint32_t nonce, struct shm_att **out)
{
	char path[64], want[40], got[96];
	struct shm_att a = { .fd = fd, .nonce = nonce };
	oxr_status_t st;
	ssize_t k;
	size_t wl;
	int f;

	if (sl->natt == sl->maxatt) {
		int max = sl->maxatt ? 2 * sl->maxatt : 4;
		struct shm_att *na = realloc(sl->atts, (size_t)max * sizeof(*na));
		if (!na)
			return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
		sl->atts = na;
		sl->maxatt = max;
	}
	if ((st = oxr_shm_memfd_open(sl->peer_pid, fd, 0, "window", &f, &a.len)))
		return oxr_err(st, "put to rank %d: %s (a descriptor of another epoch?)", sl->peer,
			       oxr_errmsg());
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f);
	k = readlink(path, got, sizeof(got) - 1);
	got[k > 0 ? k : 0] = 0;
	wl = (size_t)snprintf(want, sizeof(want), "/memfd:oxr-win-%08x", nonce);
	if (strncmp(got, want, wl) || (got[wl] && got[wl] != ' ')) {
		close(f);
		return oxr_err(OXR_ERR_PROTO, "put to rank %d: its fd %d is not the window it "
			       "described (%s)", sl->peer, fd, got);
	}
	a.base = oxr_shm_map(NULL, a.len, f);
	close(f);
	if (a.base == MAP_FAILED)
		return oxr_err(OXR_ERR_NOMEM, "put to rank %d: mapping its %zu-byte window: %s",
			       sl->peer, a.len, strerror(errno));
	sl->atts[sl->natt] = a;
	*out = &sl->atts[sl->natt++];
	return OXR_OK;
}

static int can_note(void *arg)
{
	struct link *l = arg;
	struct shm_link *sl = oxr_shm_link_of(l);

	if (!oxr_link_up(l))
		return 1;
	if (oxr_link_sending(l))
		return 0;
	return sl->out_slot >= 0 ? oxr_shm_fifo_can_send(sl) : oxr_shm_note_room(&sl->tx) != 0;
}

/* Drives the group until a note may go on l (or l is down: its error). */
static oxr_status_t wait_note_room(oxr_group *g, struct link *l, struct shm_link *sl)
{
	oxr_status_t st;

	sl->note_wait = 1;
	st = oxr_progress_until(g, can_note, l, -1);
	sl->note_wait = 0;
	if (st)
		return st;
	if (!oxr_link_up(l)) {
		oxr_err_keep(oxr_link_error(l));
		return oxr_link_err(l) ? oxr_link_err(l) : OXR_ERR_PEER;
	}
	return OXR_OK;
}

oxr_status_t oxr_shm_put_note(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			      const void *src, size_t len, const struct oxr_put_note *n)
{
	struct shm_link *sl = oxr_shm_link_of(l);
	int fd = (int)(raddr >> FD_SHIFT), i, k;
	uint64_t off = raddr & OFF_MASK;
	struct shm_att *a = NULL;
	struct oxr_shm_note note;
	oxr_status_t st;

	for (i = 0; i < sl->natt && !a; i++)
		if (sl->atts[i].fd == fd && sl->atts[i].nonce == rkey)
			a = &sl->atts[i];
	if (!a && (st = attach(sl, fd, rkey, &a)))
		return st;
	if (off > a->len || len > a->len - off)
		return oxr_err(OXR_ERR_INVAL, "put to rank %d: %zu bytes at %llu past its window "
			       "memory (%zu bytes)", sl->peer, len, (unsigned long long)off, a->len);
	/* the note goes behind every message sent before the put */
	if (n && !can_note(l) && (st = wait_note_room(g, l, sl)))
		return st;
	memcpy(a->base + off, src, len);
	if (!n)
		return OXR_OK;
	note = (struct oxr_shm_note){ .id = n->id, .epoch = n->epoch, .value = n->value,
				      .notify = 1, .offset = n->offset, .len = len };
	/* through the FIFO, can_note saw a free cell another sender may have
	 * taken since: wait again */
	while (!(k = sl->out_slot >= 0 ? oxr_shm_fifo_note(sl, &note)
				       : oxr_shm_note_push(&sl->tx, &note)))
		if ((st = wait_note_room(g, l, sl)))
			return st;
	if (k < 0) {
		oxr_shm_broken(g, l, sl->out_slot >= 0 ? "the receive FIFO (its refs)"
						       : "the send ring (a counter out of bounds)");
		return oxr_err(OXR_ERR_PROTO, "put to rank %d: it broke %s", sl->peer,
			       sl->out_slot >= 0 ? "its receive FIFO" : "the notes ring");
	}
	/* the FIFO's note rang the bell itself */
	if (sl->out_slot < 0 && oxr_shm_ring_must_wake(&sl->tx, 0))
		oxr_shm_ring_bell(sl->bell);
	return OXR_OK;
}

oxr_status_t oxr_shm_put(oxr_group *g, struct link *l, uint64_t raddr, uint32_t rkey,
			 const void *src, size_t len)
{
	return oxr_shm_put_note(g, l, raddr, rkey, src, len, NULL);
}

size_t oxr_shm_take_notes(oxr_group *g, struct link *l, struct shm_link *sl, int *broke)
{
	struct oxr_shm_note n;
	int k, took = 0;

	*broke = 0;
	while ((k = oxr_shm_note_peek(&sl->rx, &n)) > 0 && n.pos <= sl->rx.mine) {
		struct oxr_put_note pn = { .id = n.id, .epoch = n.epoch, .value = n.value,
					   .offset = n.offset };
		oxr_shm_note_taken(&sl->rx);
		took = 1;
		oxr_put_landed(g, l, &pn, n.len, NULL, n.notify != 0);
	}
	if (took && oxr_shm_ring_must_wake(&sl->rx, 1))
		oxr_shm_ring_bell(sl->bell);
	if (k < 0) {
		*broke = 1;
		oxr_shm_broken(g, l, "the notes ring (a counter out of bounds)");
		return 0;
	}
	return k > 0 ? (size_t)(n.pos - sl->rx.mine) : SIZE_MAX;
}
