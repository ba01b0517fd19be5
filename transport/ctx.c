/* SPDX-License-Identifier: MIT */
/* The context: configuration from the environment, and logging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "transport_impl.h"
#ifdef OXR_HAVE_VERBS
#include "verbs_dev.h"
#include "verbs_rcache.h"
#endif

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

/* Ranks of this job on this node, from the launcher (0: unknown): oxr-run
 * (OXR_RUN_SIZE), Open MPI (OMPI_COMM_WORLD_LOCAL_SIZE), Slurm
 * (SLURM_NTASKS_PER_NODE). */
static long local_ranks(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE",
					    "OXR_RUN_SIZE", NULL };
	long local = 0;
	int i;

	for (i = 0; vars[i] && local <= 0; i++) {
		const char *s = getenv(vars[i]);
		if (s)
			local = strtol(s, NULL, 10);
	}
	return local;
}

/* OXR_SPIN_US's default.  Oversubscribed (more ranks than cores): a
 * spinning rank only delays the peer queued behind it, so waits sleep at
 * once (the crystal router at 16 ranks on 2 cores: 1.7-2.1x faster than
 * MPI_Alltoallv with 50 us, 2.1-2.4x with 0).  Known to fit: spinning never
 * needs to yield.  Unknown: spin, and yield now and then. */
static long default_spin(long cores, long local)
{
	return cores > 0 && local > cores ? 0 : 50;
}

static int default_yield(long cores, long local)
{
	return !(cores > 0 && local > 0 && local <= cores);
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

/*
 * auto: verbs when a device opens, else tcp; verbs: a device or an error;
 * tcp: never touches the verbs stack.  One log line says which and why.
 */
static oxr_status_t choose_transport(oxr_ctx *c, int tr)
{
#ifdef OXR_HAVE_VERBS
	static const char *const cms[] = { "tcp", "rdmacm", NULL };
	long slots, slot_bytes, tmo, retry, gid, put_inline, rndv, rcache_mb;
	oxr_status_t st;

	if (tr == 1) {
		oxr_log(c, OXR_LOG_INFO, "transport tcp (OXR_TRANSPORT=tcp)");
		return OXR_OK;
	}
	if ((st = env_int("OXR_VERBS_SLOTS", 4, 4096, 64, &slots)) ||
	    (st = env_int("OXR_VERBS_SLOT_BYTES", 256, 1 << 20, 8192, &slot_bytes)) ||
	    (st = env_int("OXR_VERBS_TIMEOUT", 1, 31, 14, &tmo)) ||
	    (st = env_int("OXR_VERBS_RETRY", 0, 7, 7, &retry)) ||
	    (st = env_int("OXR_GID_INDEX", -1, 255, -1, &gid)) ||
	    (st = env_word("OXR_VERBS_CM", cms, 0, &c->vcm)) ||
	    (st = env_int("OXR_VERBS_PUT_INLINE", 0, 1 << 20, 256, &put_inline)) ||
	    (st = env_int("OXR_VERBS_RNDV", 0, 1L << 30, 65536, &rndv)) ||
	    (st = env_int("OXR_VERBS_RCACHE_MB", 0, 1L << 20, 256, &rcache_mb)))
		return st;
	c->vrndv = (size_t)rndv;
	c->vput_inline = (size_t)put_inline;
	c->vslots = (uint32_t)slots;
	c->vslot_bytes = (uint32_t)slot_bytes;
	c->vtimeout = (int)tmo;
	c->vretry = (int)retry;
	c->verbs_required = tr == 2;
	c->vdev = calloc(1, sizeof(*c->vdev));
	if (!c->vdev)
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	st = oxr_vdev_open(getenv("OXR_DEVICE"), (int)gid, c->vdev);
	if (st == OXR_OK && (st = oxr_rcache_create(c->vdev->pd, (size_t)rcache_mb << 20,
						   &c->rcache)))
		oxr_vdev_close(c->vdev);
	if (st == OXR_OK) {
		c->transport = "verbs";
		oxr_log(c, OXR_LOG_INFO, "transport verbs on %s port %u (%s)", c->vdev->name,
			c->vdev->port, c->vdev->why);
		return OXR_OK;
	}
	free(c->vdev);
	c->vdev = NULL;
	if (tr == 2)
		return oxr_err(st, "OXR_TRANSPORT=verbs: %s; use OXR_TRANSPORT=tcp or auto to run "
			       "over tcp", oxr_errmsg());
	oxr_log(c, OXR_LOG_INFO, "transport tcp (auto: %s)", oxr_errmsg());
	return OXR_OK;
#else
	if (tr == 2)
		return oxr_err(OXR_ERR_UNSUPPORTED,
			       "OXR_TRANSPORT=verbs: this oxr was built without the verbs backend "
			       "(it needs libibverbs-dev, librdmacm-dev and libhwloc-dev at build "
			       "time); use OXR_TRANSPORT=tcp or auto");
	oxr_log(c, OXR_LOG_INFO, "transport tcp (%s)",
		tr == 1 ? "OXR_TRANSPORT=tcp" : "auto: built without the verbs backend");
	return OXR_OK;
#endif
}

/* OXR_TCP_LOCAL_CC: an algorithm's name, or "system" (see oxr_tcp_tune_link) */
static oxr_status_t local_cc(oxr_ctx *c)
{
	const char *s = getenv("OXR_TCP_LOCAL_CC");

	if (!s || !*s)
		s = "reno";
	if (strlen(s) >= sizeof(c->local_cc))
		return oxr_err(OXR_ERR_INVAL, "OXR_TCP_LOCAL_CC=%s: not a congestion control's name",
			       s);
	if (strcasecmp(s, "system"))
		strcpy(c->local_cc, s);
	return OXR_OK;
}

oxr_status_t oxr_ctx_create(oxr_ctx **out)
{
	static const char *const levels[] = { "error", "warn", "info", "debug", NULL };
	static const char *const transports[] = { "auto", "tcp", "verbs", NULL };
	static const char *const orders[] = { "network", "little", NULL };
	oxr_ctx *c = calloc(1, sizeof(*c));
	long spin, tmo, rq, beat, cores = sysconf(_SC_NPROCESSORS_ONLN), local = local_ranks();
	int tr;
	oxr_status_t st;

	if (!c)
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	if ((st = env_word("OXR_LOG_LEVEL", levels, OXR_LOG_WARN, &c->log_level)) ||
	    (st = env_word("OXR_TRANSPORT", transports, 0, &tr)) ||
	    (st = env_word("OXR_ORDER", orders, OXR_ORDER_HOST, &c->order)) ||
	    (st = env_int("OXR_SPIN_US", 0, 10000000, default_spin(cores, local), &spin)) ||
	    (st = env_int("OXR_LINK_TIMEOUT_MS", 1, 86400000, 30000, &tmo)) ||
	    (st = env_int("OXR_HEARTBEAT_MS", 0, 86400000, 0, &beat)) ||
	    (st = env_int("OXR_RECV_QUEUE_BYTES", 4096, 1L << 40, 64L << 20, &rq)) ||
	    (st = oxr_cmo_limits_from_env(&c->limits))) {
		free(c);
		return st;
	}
	c->spin_us = (int)spin;
	c->spin_yield = default_yield(cores, local);
	c->link_timeout_ms = (int)tmo;
	c->heartbeat_ms = (int)beat;
	c->recv_queue_bytes = (size_t)rq;
	if ((st = local_cc(c))) {
		free(c);
		return st;
	}
	c->transport = "tcp";
	if ((st = choose_transport(c, tr))) {
		free(c);
		return st;
	}
	*out = c;
	return OXR_OK;
}

void oxr_ctx_destroy(oxr_ctx *c)
{
	if (!c)
		return;
#ifdef OXR_HAVE_VERBS
	if (c->vdev) {
		oxr_rcache_destroy(c->rcache);
		oxr_vdev_close(c->vdev);
		free(c->vdev);
	}
#endif
	free(c);
}

const char *oxr_ctx_transport(const oxr_ctx *c)
{
	return c->transport;
}

void oxr_verbs_objects(uint64_t *qps, uint64_t *mrs)
{
#ifdef OXR_HAVE_VERBS
	oxr_vdev_counts(qps, mrs);
#else
	*qps = *mrs = 0;
#endif
}

void oxr_ctx_set_interrupt(oxr_ctx *c, volatile sig_atomic_t *flag)
{
	c->intr = flag;
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
