/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oxr/device.h"
#include "oxr/params.h"
#include "providers.h"

static void free_params(struct criterion_test_params *crp)
{
	cr_free(crp->params);
}

static void add(struct provider *list, size_t *n, const char *name, size_t len)
{
	struct provider *p = &list[*n];

	if (*n >= PROVIDERS_MAX)
		return;
	if (len >= sizeof(p->label))
		len = sizeof(p->label) - 1;
	memcpy(p->label, name, len);
	p->label[len] = 0;
	snprintf(p->name, sizeof(p->name), "%s", p->label);
	/* shm with every link through the receivers' shared FIFOs */
	if (!strcmp(p->label, "shm-fifo")) {
		snprintf(p->name, sizeof(p->name), "shm");
		snprintf(p->env, sizeof(p->env), "OXR_SHM_RINGS=0");
	}
	(*n)++;
}

struct criterion_test_params test_providers(void)
{
	/* in Criterion's shared memory: the workers read it */
	struct provider *list = cr_calloc(PROVIDERS_MAX, sizeof(*list));
	const char *want = getenv("OXR_TEST_PROVIDERS");
	size_t n = 0;

	if (want) {
		const char *s = want;

		while (*s) {
			size_t len = strcspn(s, ",");

			if (len)
				add(list, &n, s, len);
			s += len + (s[len] == ',');
		}
		/* an empty list must not pass as "nothing to run" */
		if (!n)
			add(list, &n, "(OXR_TEST_PROVIDERS is empty)", 29);
	} else {
		oxr_device_info d;

		add(list, &n, "tcp", 3);
		add(list, &n, "shm", 3);
		add(list, &n, "shm-fifo", 8);
		if (oxr_device_query(&d) == OXR_OK)
			add(list, &n, "verbs", 5);
	}
	return cr_make_param_array(struct provider, list, n, free_params);
}

int provider_transport(const struct provider *pv)
{
	/* oxr_ctx_params.transport: 0..3 = auto, tcp, verbs, shm */
	if (!strcmp(pv->name, "tcp"))
		return 1;
	if (!strcmp(pv->name, "verbs"))
		return 2;
	if (!strcmp(pv->name, "shm"))
		return 3;
	cr_assert_fail("OXR_TEST_PROVIDERS names \"%s\": no such provider (tcp, shm, shm-fifo, "
		       "verbs)",
		       pv->name);
	return -1;
}

const char *provider_env(const struct provider *pv)
{
	static char env[64];

	snprintf(env, sizeof(env), "OXR_TRANSPORT=%s", pv->name);
	return env;
}

void provider_begin(const struct provider *pv, const char *suite, const char *name)
{
	fprintf(stderr, "[----] %s/%s on %s\n", suite, name, pv->label);
	provider_transport(pv);
	/* each test runs in a worker of its own: this reaches its contexts and
	 * the ranks it starts, and nothing after it */
	if (pv->env[0] && putenv((char *)pv->env))
		cr_assert_fail("putenv: out of memory");
}
