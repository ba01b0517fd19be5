/* SPDX-License-Identifier: MIT */
/*
 * CHECK for the rank programs the multi-process tests start (group_child,
 * bcast_child, ...): a failed check says which rank, where, what and the
 * last oxr error, and exits 1 (oxr-run then names the rank); die says what
 * failed and the last oxr error, and exits 1; child_join and child_leave
 * open and close a rank's group; child_transport names a link's transport.
 * The including file defines `static int rank`, and CHILD_PREFIX for die's
 * messages if it wants one ("boot_child: ").
 */
#ifndef OXR_TEST_CHILD_CHECK_H
#define OXR_TEST_CHILD_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "oxr/oxr.h"

#ifndef CHILD_PREFIX
#define CHILD_PREFIX ""
#endif

#define CHECK(c, ...)                                                                  \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "rank %d: check failed at %s:%d: ", rank, __FILE__, \
				__LINE__);                                             \
			fprintf(stderr, __VA_ARGS__);                                  \
			fprintf(stderr, " [%s]\n", oxr_errmsg());                      \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

/* "[CHILD_PREFIX]rank R: <what>: <last oxr error>" on stderr, and exit 1. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void die(const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* one write: ranks may share the stream */
	fprintf(stderr, CHILD_PREFIX "rank %d: %s: %s\n", rank, what, oxr_errmsg());
	exit(1);
}

/* One rank of a group started by oxr-run or mpirun: its bootstrap, a
 * context as the environment says and the group the bootstrap wires. */
struct child_rank {
	oxr_boot *boot;
	oxr_ctx *ctx;
	oxr_group *g;
};

/* Opens r's bootstrap, sets rank, then its context and group; a step that
 * fails is a failed CHECK. */
static inline void child_join(struct child_rank *r)
{
	CHECK(oxr_boot_open(&r->boot) == OXR_OK, "bootstrap");
	rank = oxr_boot_rank(r->boot);
	CHECK(oxr_ctx_create(&r->ctx) == OXR_OK, "context");
	CHECK(oxr_group_boot(r->ctx, r->boot, &r->g) == OXR_OK, "group");
}

/* The group, the context and the bootstrap, closed in that order. */
static inline void child_leave(struct child_rank *r)
{
	oxr_group_destroy(r->g);
	oxr_ctx_destroy(r->ctx);
	oxr_boot_close(r->boot);
}

/* The transport of one of g's open links, NULL while none is.  Under links
 * on demand nothing is open before its first use, and a rank that is done
 * closes its links: so ask between a unit of work and the next, where the
 * work opened some and no peer can have gone yet. */
static inline const char *child_transport(const oxr_group *g)
{
	int ranks = oxr_group_size(g), me = oxr_group_rank(g), d;
	const char *t = NULL;

	for (d = 1; d < ranks && !t; d++)
		t = oxr_link_transport(g, (me + d) % ranks);
	return t;
}

#endif
