/* SPDX-License-Identifier: MIT */
/* include/oxr/device.h: the public face of verbs_dev.c's device choice. */
#include <stdio.h>
#include <string.h>

#include "oxr/device.h"
#include "oxr_internal.h"
#ifdef OXR_HAVE_VERBS
#include "verbs_dev.h"
#endif

int oxr_verbs_built_in(void)
{
#ifdef OXR_HAVE_VERBS
	return 1;
#else
	return 0;
#endif
}

int oxr_device_describe_all(FILE *f)
{
#ifdef OXR_HAVE_VERBS
	return oxr_vdev_describe_all(f);
#else
	(void)f;
	return 0;
#endif
}

oxr_status_t oxr_device_query(oxr_device_info *out)
{
#ifdef OXR_HAVE_VERBS
	struct oxr_vdev d;
	const char *want;
	int gid_index;
	oxr_status_t st;

	if ((st = oxr_vdev_env(&want, &gid_index)) || (st = oxr_vdev_open(want, gid_index, &d)))
		return st;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", d.name);
	snprintf(out->kind, sizeof(out->kind), "%s", d.kind);
	snprintf(out->link_layer, sizeof(out->link_layer), "%s",
		 d.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "Ethernet");
	snprintf(out->why, sizeof(out->why), "%s", d.why);
	oxr_vdev_gid_str(&d.gid, out->gid, sizeof(out->gid));
	out->port = d.port;
	out->mtu = oxr_vdev_mtu_bytes(d.mtu);
	out->max_inline = d.max_inline;
	out->lid = d.lid;
	out->numa_node = d.numa_node;
	out->gid_index = d.gid_index;
	oxr_vdev_close(&d);
	return OXR_OK;
#else
	(void)out;
	return oxr_err(OXR_ERR_UNSUPPORTED, "built without the verbs backend (needs libibverbs-dev "
		       "librdmacm-dev libhwloc-dev)");
#endif
}
