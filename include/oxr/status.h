/* SPDX-License-Identifier: MIT */
/*
 * oxr status codes.  Every oxr call returns one of these (constructors
 * that return a pointer return NULL instead); the detail of the most
 * recent failure on the calling thread, with the cause and where it
 * happened, is kept by oxr_errmsg().
 */
#ifndef OXR_STATUS_H
#define OXR_STATUS_H

#include "oxr/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int oxr_status_t;

enum {
	OXR_OK = 0,
	OXR_AGAIN = 1,            /* not an error: more input needed / would block */

	OXR_ERR_INVAL = -1,       /* bad argument from the caller */
	OXR_ERR_NOMEM = -2,       /* allocation failed */
	OXR_ERR_PROTO = -3,       /* malformed bytes from outside */
	OXR_ERR_LIMIT = -4,       /* a configured limit would be exceeded */
	OXR_ERR_TRUNCATED = -5,   /* the input ended inside an object */
	OXR_ERR_IO = -6,          /* a system call failed */
	OXR_ERR_CLOSED = -7,      /* the peer closed the connection */
	OXR_ERR_UNSUPPORTED = -8, /* valid, but not implemented here */
	OXR_ERR_SPACE = -9,       /* the caller's output buffer is too small */
	OXR_ERR_REVOKED = -10,    /* the group was revoked */
	OXR_ERR_TIMEOUT = -11,    /* a bounded wait ran out */
	OXR_ERR_AUTH = -12,       /* a peer failed authentication */
	OXR_ERR_PEER = -13,       /* a peer failed or its link broke */
	OXR_ERR_INTR = -14,       /* a wait was interrupted on purpose (oxr_ctx_set_interrupt) */
};

/* Short fixed text for a status code ("malformed input", ...). */
OXR_API const char *oxr_strerror(oxr_status_t status);

/*
 * Detail of the most recent failing oxr call on this thread: what was wrong,
 * where (byte offset, rank, ...) and, where there is one, how to fix it.
 * Valid until the next failing oxr call on this thread.
 */
OXR_API const char *oxr_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif
