/* SPDX-License-Identifier: MIT */
/*
 * What a provider may call (provider.h): the handlers for what happened on
 * its links, and read-only views of a link.  Providers never see struct
 * link itself, so a change of the generic layer's insides stays here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "oxr_internal.h"
#include "link.h"
#include "provider.h"

void oxr_link_ready(oxr_group *g, struct link *l, int readable, int writable)
{
	if (readable && link_up(l))
		oxr_link_read(g, l);
	if (writable && link_up(l) && l->sq_head)
		oxr_link_write(g, l);
}

/* from \ to:  NONE OPEN LEAVING ENDED FAILED OPENING */
static const unsigned char steps[6][6] = {
	[LINK_NONE]    = { 1, 1, 0, 0, 1, 1 }, /* FAILED: announced dead (revoke) */
	[LINK_OPEN]    = { 1, 0, 1, 1, 1, 0 },
	[LINK_LEAVING] = { 1, 0, 0, 1, 1, 0 },
	[LINK_ENDED]   = { 1, 0, 0, 0, 0, 0 },
	[LINK_FAILED]  = { 1, 0, 0, 0, 0, 0 },
	[LINK_OPENING] = { 1, 1, 0, 0, 1, 0 },
};

void oxr_link_to(struct link *l, enum link_state to)
{
	if (!steps[l->state][to]) /* an oxr bug: said loudly, the step is not taken */
		fprintf(stderr, "oxr: internal error: link to rank %d cannot go from state %d "
			"to %d\n", l->peer, l->state, (int)to);
	else
		l->state = to;
}

void oxr_link_socket_end(oxr_group *g, struct link *l, ssize_t k)
{
	int e = errno;

	if (!link_up(l))
		return;
	if (oxr_link_buffered(l)) /* what the stream delivered before the end comes first */
		oxr_link_read(g, l);
	if (!link_up(l))
		return;
	if (k == 0 && oxr_decoder_pending(l->dec) == 0 && !oxr_link_buffered(l)) {
		oxr_link_closed_by_peer(g, l);
	} else {
		oxr_link_fail(g, l, OXR_ERR_PEER, "link to rank %d (%s) broke: %s", l->peer,
			      l->addr, k < 0 ? strerror(e) : k == 0 ? "the peer went away in "
			      "the middle of a message" : "bytes on the socket under its stream");
	}
}

void oxr_link_quiet_socket(oxr_group *g, struct link *l)
{
	uint8_t b;
	ssize_t k;

	if (!link_up(l))
		return;
	k = recv(l->fd, &b, 1, MSG_DONTWAIT);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	oxr_link_socket_end(g, l, k);
}

const struct link oxr_link_none = { .fd = -1, .peer = -1 };

/* Per rank a group holds one pointer (8 bytes x P, untouched pages cost
 * nothing) and, once the rank is used, its struct link and its place in
 * used[]: memory follows the links a rank opens, not P. */
struct link *oxr_link_slot(oxr_group *g, int p)
{
	struct link *l = g->links[p];

	if (l)
		return l;
	if (g->nused == g->used_cap) {
		int cap = g->used_cap ? 2 * g->used_cap : 16;
		int *u = realloc(g->used, (size_t)cap * sizeof(*u));
		if (!u) {
			oxr_err(OXR_ERR_NOMEM, "link to rank %d: out of memory", p);
			return NULL;
		}
		g->used = u;
		g->used_cap = cap;
	}
	if (!(l = calloc(1, sizeof(*l)))) {
		oxr_err(OXR_ERR_NOMEM, "link to rank %d: out of memory", p);
		return NULL;
	}
	l->fd = -1;
	l->peer = p;
	g->used[g->nused++] = p;
	return g->links[p] = l;
}

/* A rank without a link reads as oxr_link_none, which a provider only
 * looks at (no priv, not up). */
struct link *oxr_link_at(oxr_group *g, int peer)
{
	return (struct link *)link_peek(g, peer);
}

int oxr_links_used(const oxr_group *g)
{
	return g->nused;
}

struct link *oxr_link_used(oxr_group *g, int i)
{
	return g->links[g->used[i]];
}

void *oxr_link_priv(const struct link *l)
{
	return l->priv;
}

const struct oxr_link_ops *oxr_link_ops_of(const struct link *l)
{
	return l->ops;
}

int oxr_link_peer(const struct link *l)
{
	return l->peer;
}

int oxr_link_fd(const struct link *l)
{
	return l->fd;
}

const char *oxr_link_addr(const struct link *l)
{
	return l->addr;
}

int oxr_link_up(const struct link *l)
{
	return link_up(l);
}

int oxr_link_is_auth(const struct link *l)
{
	return l->mode == OXR_LINK_AUTH;
}

int oxr_link_sending(const struct link *l)
{
	return l->sq_head != NULL;
}

const char *oxr_link_error(const struct link *l)
{
	return l->errmsg;
}

oxr_status_t oxr_link_err(const struct link *l)
{
	return l->err;
}
