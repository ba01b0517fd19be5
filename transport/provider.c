/* SPDX-License-Identifier: MIT */
/*
 * The registry of link providers, and the choice of one for a context.
 * The only file that knows which providers this build holds.
 *
 * A context has a network provider, for links to other hosts, and may have
 * a host provider (shm) for links to ranks on this host.
 *   auto: shm for this host (unless OXR_SHM=0), and the first network
 *         provider that opens, in the order below (a hardware HCA, else
 *         soft-RoCE or siw: the verbs provider ranks devices itself), else tcp;
 *   shm:  shm for this host, required; tcp to other hosts;
 *   tcp, verbs: that provider for every link (as UCX_TLS names them), shm
 *         too only with OXR_SHM=1.
 * A named provider opens, or an error says why and what to do.  One log
 * line says which provider carries the links and why.
 */
#include <stdio.h>
#include <string.h>

#include "oxr_internal.h"
#include "provider.h"

#ifdef OXR_HAVE_VERBS
extern const struct oxr_provider oxr_verbs_provider;
#endif

/* in the order auto tries them; tcp, which always opens, last */
static const struct oxr_provider *const providers[] = {
#ifdef OXR_HAVE_VERBS
	&oxr_verbs_provider,
#endif
	&oxr_tcp_provider,
};

#define NPROV (sizeof(providers) / sizeof(providers[0]))

/* What a build without a provider lacks. */
static const char *missing(const char *name)
{
	if (!strcmp(name, "verbs"))
		return "built without the verbs backend (it needs libibverbs-dev, librdmacm-dev "
		       "and libhwloc-dev at build time)";
	return "no such provider";
}

const struct oxr_provider *oxr_provider_find(const char *name)
{
	size_t i;

	for (i = 0; i < NPROV; i++)
		if (!strcmp(providers[i]->name, name))
			return providers[i];
	return NULL;
}

static oxr_status_t open_one(oxr_ctx *c, const struct oxr_provider *p, int required)
{
	oxr_status_t st = p->ctx_open(c, &c->params, required, &c->pctx);

	if (st == OXR_OK) {
		c->prov = p;
		c->transport = p->name;
		c->prov_required = required;
	}
	return st;
}

static oxr_status_t choose_net(oxr_ctx *c, const char *want);

oxr_status_t oxr_provider_choose(oxr_ctx *c, const char *want)
{
	long shm = c->params.shm;
	int named_shm = want && !strcmp(want, "shm");
	oxr_status_t st;

	if ((st = choose_net(c, named_shm ? "tcp" : want)))
		return st;
	if (named_shm) {
		c->transport = "shm";
		c->prov_required = 0;
	}
	if (shm == 0 || (shm < 0 && want && !named_shm))
		return OXR_OK;
	st = oxr_shm_provider.ctx_open(c, &c->params, named_shm || shm > 0, &c->hctx);
	if (st) {
		oxr_provider_release(c);
		return oxr_err(st, "shared memory: %s", oxr_errmsg());
	}
	c->hprov = &oxr_shm_provider;
	c->hprov_required = named_shm;
	oxr_log(c, OXR_LOG_INFO, "transport shm for ranks on this host (%s)",
		named_shm ? "OXR_TRANSPORT=shm" : shm > 0 ? "OXR_SHM=1" : "OXR_SHM=0 turns it off");
	return OXR_OK;
}

static oxr_status_t choose_net(oxr_ctx *c, const char *want)
{
	const struct oxr_provider *p;
	char why[256] = "";
	oxr_status_t st;
	size_t i;

	if (want) {
		if (!(p = oxr_provider_find(want)))
			return oxr_err(OXR_ERR_UNSUPPORTED, "OXR_TRANSPORT=%s: this oxr was %s; use "
				       "OXR_TRANSPORT=tcp or auto", want, missing(want));
		if ((st = open_one(c, p, p != &oxr_tcp_provider)))
			return oxr_err(st, "OXR_TRANSPORT=%s: %s; use OXR_TRANSPORT=tcp or "
				       "auto to run over tcp", want, oxr_errmsg());
		if (p == &oxr_tcp_provider)
			oxr_log(c, OXR_LOG_INFO, "transport tcp (OXR_TRANSPORT=tcp)");
		return OXR_OK;
	}
	for (i = 0; i < NPROV; i++) {
		if (providers[i] == &oxr_tcp_provider)
			break;
		if (open_one(c, providers[i], 0) == OXR_OK)
			return OXR_OK;
		snprintf(why, sizeof(why), "%s", oxr_errmsg());
	}
	(void)open_one(c, &oxr_tcp_provider, 0);
	oxr_log(c, OXR_LOG_INFO, "transport tcp (auto: %s)",
		why[0] ? why : "built without the verbs backend");
	return OXR_OK;
}

void oxr_provider_release(oxr_ctx *c)
{
	if (c->prov && c->prov->ctx_close)
		c->prov->ctx_close(c->pctx);
	c->pctx = NULL;
	if (c->hprov && c->hprov->ctx_close)
		c->hprov->ctx_close(c->hctx);
	c->hctx = NULL;
	c->hprov = NULL;
}
