/* SPDX-License-Identifier: MIT */
/* Status texts and the per-thread detail of the last failure. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "oxr/status.h"
#include "oxr_internal.h"

static _Thread_local char errmsg[512];

const char *oxr_strerror(oxr_status_t status)
{
	switch (status) {
	case OXR_OK: return "success";
	case OXR_AGAIN: return "more input needed";
	case OXR_ERR_INVAL: return "invalid argument";
	case OXR_ERR_NOMEM: return "out of memory";
	case OXR_ERR_PROTO: return "malformed input";
	case OXR_ERR_LIMIT: return "limit exceeded";
	case OXR_ERR_TRUNCATED: return "input truncated";
	case OXR_ERR_IO: return "i/o error";
	case OXR_ERR_CLOSED: return "connection closed by peer";
	case OXR_ERR_UNSUPPORTED: return "not supported";
	case OXR_ERR_SPACE: return "output buffer too small";
	case OXR_ERR_REVOKED: return "group revoked";
	case OXR_ERR_TIMEOUT: return "timed out";
	case OXR_ERR_AUTH: return "authentication failed";
	case OXR_ERR_PEER: return "peer failed";
	case OXR_ERR_INTR: return "interrupted";
	}
	return "unknown status";
}

const char *oxr_errmsg(void)
{
	return errmsg;
}

oxr_status_t oxr_err(oxr_status_t status, const char *fmt, ...)
{
	char line[sizeof(errmsg)];
	va_list ap;

	/* through a copy: callers wrap the last message, oxr_err(st, "...: %s", oxr_errmsg()) */
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	memcpy(errmsg, line, sizeof(errmsg));
	return status;
}

oxr_status_t oxr_err_lit(oxr_status_t status, const char *msg)
{
	size_t n = strlen(msg);

	if (n >= sizeof(errmsg))
		n = sizeof(errmsg) - 1;
	memmove(errmsg, msg, n);
	errmsg[n] = 0;
	return status;
}

void oxr_err_keep(const char *msg)
{
	if (msg != errmsg)
		snprintf(errmsg, sizeof(errmsg), "%s", msg);
}
