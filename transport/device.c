/* SPDX-License-Identifier: MIT */
/* include/oxr/device.h: the public face of the device-bearing provider. */
#include "oxr/device.h"
#include "oxr_internal.h"
#include "provider.h"

static const struct oxr_provider *device_provider(void)
{
	return oxr_provider_find("verbs");
}

int oxr_verbs_built_in(void)
{
	return device_provider() != NULL;
}

int oxr_device_describe_all(FILE *f)
{
	const struct oxr_provider *p = device_provider();

	return p && p->describe_all ? p->describe_all(f) : 0;
}

oxr_status_t oxr_device_query(oxr_device_info *out)
{
	const struct oxr_provider *p = device_provider();

	if (!p || !p->query)
		return oxr_err(OXR_ERR_UNSUPPORTED, "built without the verbs backend (needs "
			       "libibverbs-dev librdmacm-dev libhwloc-dev)");
	return p->query(out);
}
