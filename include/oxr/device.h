/* SPDX-License-Identifier: MIT */
/*
 * RDMA devices as oxr sees them (what oxr-info prints): whether this oxr
 * has the verbs backend, every device libibverbs finds, and the device,
 * port and GID a context would use here.  Without the verbs backend every
 * call works and says there is none.
 */
#ifndef OXR_DEVICE_H
#define OXR_DEVICE_H

#include <stdint.h>
#include <stdio.h>

#include "oxr/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxr_device_info {
	char name[64];         /* as libibverbs names it: "mlx5_0", "rxe0" */
	unsigned port;
	char kind[16];         /* "hardware", "rxe", "siw" or "software" */
	char link_layer[16];   /* "InfiniBand" or "Ethernet" */
	int mtu;               /* the port's active MTU in bytes */
	uint32_t max_inline;   /* inline data the provider grants an RC QP */
	unsigned lid;          /* InfiniBand link layer: the port's LID */
	int numa_node;         /* of the device; -1 unknown */
	int gid_index;
	char gid[48];          /* the GID as text: "::ffff:10.0.0.1", "fe80::..." */
	char why[256];         /* one line: why this device, port and GID */
} oxr_device_info;

/* 1 if this oxr was built with the verbs backend, else 0. */
OXR_API int oxr_verbs_built_in(void);
/* Describes every RDMA device to f (kind, limits, locality; per port its
 * state, link layer, LID, active MTU and GIDs, marking the one oxr picks).
 * Returns how many libibverbs found (0, printing nothing, without verbs). */
OXR_API int oxr_device_describe_all(FILE *f);
/* The device, port and GID a context would open, honouring OXR_DEVICE and
 * OXR_GID_INDEX (transport.h).  OXR_ERR_UNSUPPORTED: nothing usable and
 * nothing named (or no verbs backend), so a context would use tcp;
 * OXR_ERR_INVAL: the environment names something unusable.  oxr_errmsg()
 * says which, and lists what exists. */
OXR_API oxr_status_t oxr_device_query(oxr_device_info *out);

#ifdef __cplusplus
}
#endif
#endif
