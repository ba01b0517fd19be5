/* SPDX-License-Identifier: MIT */
/*
 * CHECK for the rank programs the multi-process tests start (group_child,
 * bcast_child, ...): a failed check says which rank, where, what and the
 * last oxr error, and exits 1 (oxr-run then names the rank).  The including
 * file defines `static int rank`.
 */
#ifndef OXR_TEST_CHILD_CHECK_H
#define OXR_TEST_CHILD_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "oxr/status.h"

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

#endif
