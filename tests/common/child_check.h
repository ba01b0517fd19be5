/* SPDX-License-Identifier: MIT */
/*
 * CHECK for the rank programs the multi-process tests start (group_child,
 * bcast_child, ...): a failed check says which rank, where, what and the
 * last oxr error, and exits 1 (oxr-run then names the rank); die says what
 * failed and the last oxr error, and exits 1.  The including file defines
 * `static int rank`, and CHILD_PREFIX for die's messages if it wants one
 * ("boot_child: ").
 */
#ifndef OXR_TEST_CHILD_CHECK_H
#define OXR_TEST_CHILD_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "oxr/status.h"

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

#endif
