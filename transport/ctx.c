/* SPDX-License-Identifier: MIT */
/* The context: its configuration (params.c reads it), and logging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "provider.h"
#include "sha256.h"

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

/* OXR_TCP_LOCAL_CC: an algorithm's name, or "system" (see oxr_tcp_tune_link) */
static oxr_status_t local_cc(oxr_ctx *c)
{
	const char *s = c->params.tcp_local_cc;

	if (strlen(s) >= sizeof(c->local_cc))
		return oxr_err(OXR_ERR_INVAL, "OXR_TCP_LOCAL_CC=%s: not a congestion control's name",
			       s);
	if (strcasecmp(s, "system"))
		strcpy(c->local_cc, s);
	return OXR_OK;
}

oxr_status_t oxr_ctx_create(oxr_ctx **out)
{
	return oxr_ctx_create_with(NULL, out);
}

/* Which host this rank is on, as the links compare it: OXR_HOST_ID, or
 * this kernel's boot id and the host name.  The boot id alone would join
 * containers of one kernel, the host name alone two machines that share a
 * name; a hash keeps the handshake's field one size. */
/* A link holds a descriptor or more (its socket; on shm a doorbell and,
 * until mapped, a memfd): the default soft limit of 1,024 stops a group
 * near 1,000 ranks with the hard limit far above.  Raised once a process,
 * as Open MPI does, and said at debug level. */
static void raise_fd_limit(oxr_ctx *c)
{
	static int done;
	struct rlimit r;
	rlim_t was;

	if (done++ || getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur >= r.rlim_max)
		return;
	was = r.rlim_cur;
	r.rlim_cur = r.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &r))
		oxr_log(c, OXR_LOG_DEBUG, "the fd soft limit stays %llu: %s", (unsigned long long)was,
			strerror(errno));
	else
		oxr_log(c, OXR_LOG_DEBUG, "raised the fd soft limit from %llu to the hard limit, "
			"%llu (a link holds one or more)", (unsigned long long)was,
			(unsigned long long)r.rlim_max);
}

static void host_identity(oxr_ctx *c)
{
	const char *id = c->params.host_id;
	char buf[320], boot[64] = "", name[256] = "";
	struct oxr_sha256 h;
	uint8_t d[32];
	FILE *f;

	if (!id || !*id) {
		if ((f = fopen("/proc/sys/kernel/random/boot_id", "r"))) {
			if (!fgets(boot, sizeof(boot), f))
				boot[0] = 0;
			fclose(f);
		}
		boot[strcspn(boot, "\n")] = 0;
		if (gethostname(name, sizeof(name) - 1))
			name[0] = 0;
		snprintf(buf, sizeof(buf), "%s/%s", boot, name);
		id = buf;
	}
	oxr_sha256_init(&h);
	oxr_sha256_update(&h, "oxr-host:", 9);
	oxr_sha256_update(&h, id, strlen(id));
	oxr_sha256_final(&h, d);
	memcpy(c->host_id, d, sizeof(c->host_id));
}

oxr_status_t oxr_ctx_create_with(const oxr_ctx_params *params, oxr_ctx **out)
{
	oxr_ctx *c = calloc(1, sizeof(*c));
	long cores = sysconf(_SC_NPROCESSORS_ONLN), local = local_ranks();
	const oxr_ctx_params *p;
	oxr_status_t st;

	if (!c)
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	p = &c->params;
	if ((st = oxr_params_resolve(params, &c->params))) {
		free(c);
		return st;
	}
	if (!(c->param_strs = oxr_params_own(&c->params))) {
		free(c);
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	}
	c->log_level = p->log_level;
	c->order = p->order;
	c->spin_us = (int)(p->spin_us >= 0 ? p->spin_us : default_spin(cores, local));
	c->spin_yield = default_yield(cores, local);
	c->link_timeout_ms = (int)p->link_timeout_ms;
	c->heartbeat_ms = (int)p->heartbeat_ms;
	c->recv_queue_bytes = (size_t)p->recv_queue_bytes;
	oxr_cmo_limits_from_params(p, &c->limits);
	raise_fd_limit(c);
	host_identity(c);
	if ((st = local_cc(c)) ||
	    (st = oxr_provider_choose(c, p->transport ? oxr_params_transport_name(p->transport)
						      : NULL))) {
		free(c->param_strs);
		free(c);
		return st;
	}
	*out = c;
	return OXR_OK;
}

const oxr_ctx_params *oxr_ctx_get_params(const oxr_ctx *c)
{
	return &c->params;
}

oxr_ctx *oxr_group_ctx(const oxr_group *g)
{
	return g->ctx;
}

void oxr_ctx_destroy(oxr_ctx *c)
{
	if (!c)
		return;
	oxr_provider_release(c);
	free(c->param_strs);
	free(c);
}

const char *oxr_ctx_transport(const oxr_ctx *c)
{
	return c->transport;
}

void oxr_verbs_pinned(uint64_t *qps, uint64_t *mrs, uint64_t *pinned)
{
	const struct oxr_provider *p = oxr_provider_find("verbs");

	*qps = *mrs = *pinned = 0;
	if (p && p->objects)
		p->objects(qps, mrs, pinned);
}

void oxr_verbs_objects(uint64_t *qps, uint64_t *mrs)
{
	uint64_t pinned;

	oxr_verbs_pinned(qps, mrs, &pinned);
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
