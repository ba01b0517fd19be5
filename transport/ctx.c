/* SPDX-License-Identifier: MIT */
/* The context: configuration from the environment, and logging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "transport_impl.h"

static oxr_status_t env_int(const char *name, long lo, long hi, long def, long *out)
{
	const char *s = getenv(name);
	char *end;
	long v;

	*out = def;
	if (!s || !*s)
		return OXR_OK;
	v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return oxr_err(OXR_ERR_INVAL, "%s=%s: expected a whole number from %ld to %ld", name,
			       s, lo, hi);
	*out = v;
	return OXR_OK;
}

/* A word from a fixed list; returns its index. */
static oxr_status_t env_word(const char *name, const char *const *words, int def, int *out)
{
	const char *s = getenv(name);
	int i;

	*out = def;
	if (!s || !*s)
		return OXR_OK;
	for (i = 0; words[i]; i++)
		if (!strcasecmp(s, words[i])) {
			*out = i;
			return OXR_OK;
		}
	return oxr_err(OXR_ERR_INVAL, "%s=%s: expected one of %s%s%s%s%s", name, s, words[0],
		       words[1] ? ", " : "", words[1] ? words[1] : "", words[2] ? ", " : "",
		       words[2] ? words[2] : "");
}

oxr_status_t oxr_ctx_create(oxr_ctx **out)
{
	static const char *const levels[] = { "error", "warn", "info", "debug", NULL };
	static const char *const transports[] = { "auto", "tcp", "verbs", NULL };
	static const char *const orders[] = { "network", "little", NULL };
	oxr_ctx *c = calloc(1, sizeof(*c));
	long spin, tmo, rq;
	int tr;
	oxr_status_t st;

	if (!c)
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	if ((st = env_word("OXR_LOG_LEVEL", levels, OXR_LOG_WARN, &c->log_level)) ||
	    (st = env_word("OXR_TRANSPORT", transports, 0, &tr)) ||
	    (st = env_word("OXR_ORDER", orders, OXR_ORDER_HOST, &c->order)) ||
	    (st = env_int("OXR_SPIN_US", 0, 10000000, 50, &spin)) ||
	    (st = env_int("OXR_LINK_TIMEOUT_MS", 1, 86400000, 30000, &tmo)) ||
	    (st = env_int("OXR_RECV_QUEUE_BYTES", 4096, 1L << 40, 64L << 20, &rq)) ||
	    (st = oxr_cmo_limits_from_env(&c->limits))) {
		free(c);
		return st;
	}
	if (tr == 2) {
		free(c);
		return oxr_err(OXR_ERR_UNSUPPORTED,
			       "OXR_TRANSPORT=verbs: this oxr has no verbs backend yet; "
			       "use OXR_TRANSPORT=tcp or auto");
	}
	c->spin_us = (int)spin;
	c->link_timeout_ms = (int)tmo;
	c->recv_queue_bytes = (size_t)rq;
	c->transport = "tcp";
	oxr_log(c, OXR_LOG_INFO, "transport tcp (%s)",
		tr == 1 ? "OXR_TRANSPORT=tcp" : "auto: no RDMA backend in this build");
	*out = c;
	return OXR_OK;
}

void oxr_ctx_destroy(oxr_ctx *c)
{
	free(c);
}

const char *oxr_ctx_transport(const oxr_ctx *c)
{
	return c->transport;
}

void oxr_log(const oxr_ctx *c, int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	char line[512];
	va_list ap;

	if (level > c->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one write, so lines of ranks sharing a terminal do not interleave */
	fprintf(stderr, "oxr[%d] %s: %s\n", (int)getpid(), names[level], line);
}
