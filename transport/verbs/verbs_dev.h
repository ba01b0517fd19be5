/* SPDX-License-Identifier: MIT */
/*
 * Device discovery of the verbs backend: which RDMA device, port and GID a
 * context uses, opened with its protection domain, and memory near it.
 * Only built with OXR_HAVE_VERBS (libibverbs, librdmacm, hwloc).
 *
 * Environment (read by oxr_vdev_env; a malformed value is an error naming it):
 *   OXR_DEVICE     name or name:port of the device to use (default: automatic)
 *   OXR_GID_INDEX  GID table index to use (default: automatic, see gid_index)
 */
#ifndef OXR_VERBS_DEV_H
#define OXR_VERBS_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hwloc.h>
#include <infiniband/verbs.h>

#include "oxr/status.h"

struct oxr_vdev {                   /* the device, port and GID a context uses */
	struct ibv_context *verbs;
	struct ibv_pd *pd;              /* one protection domain per context */
	hwloc_topology_t topo;          /* for NUMA allocation; NULL if hwloc failed */
	char name[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	/* chosen: OXR_GID_INDEX, else the IPv4-mapped RoCE v2 GID, else a RoCE
	 * v2 GID, else the first valid one (index 0 on InfiniBand) */
	int gid_index;
	int gid_type;                   /* IBV_GID_TYPE_IB, _ROCE_V1, _ROCE_V2 */
	union ibv_gid gid;
	uint16_t lid;                   /* IB link layer: routing by LID */
	int link_layer;                 /* IBV_LINK_LAYER_* */
	enum ibv_mtu mtu;               /* active MTU of the port */
	/* max_inline_data of a probe RC QP that asked for OXR_VDEV_INLINE
	 * (what the provider really grants; 0 if it grants none) */
	uint32_t max_inline;
	int soft;                       /* rxe or siw (software), not a hardware HCA */
	const char *kind;               /* "hardware", "rxe", "siw" or "software" */
	int numa_node;                  /* of the device, -1 unknown */
	struct ibv_device_attr attr;    /* ibv_query_device's limits */
	char why[256];                  /* one line: why this device was chosen */
};

/* What the inline probe asks for. */
#define OXR_VDEV_INLINE 256

/*
 * OXR_DEVICE and OXR_GID_INDEX: *want becomes the value of OXR_DEVICE (NULL
 * when unset or empty), *gid_index that of OXR_GID_INDEX (-1 when unset).
 */
oxr_status_t oxr_vdev_env(const char **want, int *gid_index);

/*
 * Opens the device oxr should use.  want: an OXR_DEVICE value ("name" or
 * "name:port"), or NULL (or "") to choose: hardware HCAs with an ACTIVE port first,
 * among them the one nearest this process's CPU binding (its cpuset holds
 * our CPUs, then it shares CPUs with us, then locality unknown, then any),
 * then soft-RoCE (rxe, then siw); ties go to ibv_get_device_list's order.
 * gid_index: an OXR_GID_INDEX value, or -1 to choose as described above.
 *
 * Fails with OXR_ERR_UNSUPPORTED when want is NULL and there is nothing
 * usable (no device, or no device with an ACTIVE port and a GID): a context
 * may then fall back to TCP.  What the caller named (a device that does not
 * exist, a port it lacks or that is not ACTIVE, a GID index not in the
 * table) fails with OXR_ERR_INVAL naming it and listing what exists, as
 * the user asked for something specific.
 */
oxr_status_t oxr_vdev_open(const char *want, int gid_index, struct oxr_vdev *out);
/* Closes what oxr_vdev_open opened; a zeroed struct is fine. */
void oxr_vdev_close(struct oxr_vdev *d);

/* ibv_reg_mr / ibv_dereg_mr / ibv_create_qp / ibv_destroy_qp, counted, so
 * that a test can prove a failure left no queue pair or registration
 * behind (oxr_verbs_objects). */
struct ibv_mr *oxr_vreg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);
int oxr_vdereg_mr(struct ibv_mr *mr);
struct ibv_qp *oxr_vcreate_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int oxr_vdestroy_qp(struct ibv_qp *qp);
void oxr_vdev_counts(uint64_t *qps, uint64_t *mrs, uint64_t *pinned);

/* Page-aligned zeroed memory on the device's NUMA node for rings and
 * windows (hwloc_alloc_membind; plain hwloc or posix_memalign memory when
 * the node is unknown or binding fails); NULL when out of memory.  Free
 * with oxr_vdev_free, with the same d and len. */
void *oxr_vdev_alloc(const struct oxr_vdev *d, size_t len);
void oxr_vdev_free(const struct oxr_vdev *d, void *p, size_t len);

/*
 * For oxr-info: a human description of every device (kind, limits,
 * locality: NUMA node and cpuset; per port: state, link layer, LID, active
 * MTU, the GIDs with their type and which one oxr would pick; max inline)
 * to f.  Returns the number of devices ibv_get_device_list found.
 */
int oxr_vdev_describe_all(FILE *f);

/* "1024" for IBV_MTU_1024; 0 for a value that is no MTU. */
int oxr_vdev_mtu_bytes(enum ibv_mtu mtu);
/* The GID as text (inet_ntop: "::ffff:127.0.0.2", "fe80::..."); buf >= 46. */
const char *oxr_vdev_gid_str(const union ibv_gid *gid, char *buf, size_t len);

#endif
