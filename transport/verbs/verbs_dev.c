/* SPDX-License-Identifier: MIT */
/*
 * Device discovery of the verbs backend: which device, port and GID to use,
 * where the device sits (hwloc), what it really grants (inline data), and a
 * description of all of it for oxr-info.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc/openfabrics-verbs.h>

#include "oxr/params.h"
#include "oxr_internal.h"
#include "verbs_dev.h"

#define NO_DEVICE_MSG                                                                    \
	"no RDMA device (ibv_get_device_list found none; the kernel has no RDMA or no "   \
	"provider is installed: install rdma-core / ibverbs-providers, or load rdma_rxe)"

/* Vendor IDs the kernel's software drivers report (drivers/infiniband/sw/
 * rxe/rxe_param.h RXE_VENDOR_ID, siw/siw.h SIW_VENDOR_ID, ascii "bmt"). */
#define RXE_VENDOR_ID 0xffffffu
#define SIW_VENDOR_ID 0x626d74u

/* What we learn of one device before choosing. */
struct devinfo {
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_port_attr *pa;       /* [attr.phys_port_cnt], port p at pa[p - 1] */
	struct ibv_gid_entry *gids;     /* every valid GID of every port */
	int ngid;
	int soft;                       /* 0 hardware, 1 rxe, 2 siw, 3 other software */
	int numa;
	int near;                       /* 3 holds our CPUs, 2 shares some, 1 unknown, 0 far */
	char cpus[64];                  /* its cpuset, as a list ("0-7") */
};

/* The GID chosen on a port, and why. */
struct gid_pick {
	int index, type;
	union ibv_gid gid;
	const char *why;
};

static const char *const kinds[] = { "hardware", "rxe", "siw", "software" };

int oxr_vdev_mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

const char *oxr_vdev_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

static const char *gid_type_str(int t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	}
	return "?";
}

static const char *link_layer_str(int ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	}
	return "unspecified";
}

static int gid_is_zero(const union ibv_gid *g)
{
	static const uint8_t zero[16];

	return !memcmp(g->raw, zero, 16);
}

/* ::ffff:a.b.c.d, what RoCE v2 gives a netdev's IPv4 address. */
static int gid_is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pre, 12);
}

/* A small sysfs attribute of the device, without its newline; -1 if absent. */
static int sysfs_read(const char *dev, const char *attr, char *buf, size_t len)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int dev_numa_node(const char *dev)
{
	char buf[32];

	if (sysfs_read(dev, "device/numa_node", buf, sizeof(buf)))
		return -1;
	return atoi(buf) < 0 ? -1 : atoi(buf);
}

/* The bus driver behind the device (mlx5_core, ...); -1 if there is none. */
static int driver_of(const char *name, char *buf, size_t len)
{
	char path[256], link[256];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver", name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -1;
	link[n] = 0;
	base = strrchr(link, '/');
	snprintf(buf, len, "%s", base ? base + 1 : link);
	return 0;
}

/*
 * Software or hardware.  rxe and siw report their own vendor IDs whatever
 * name `rdma link add` gave the device (the name is the admin's choice, so
 * prefixes like "rxe" prove nothing).  Any other device without a bus driver
 * behind it in sysfs is software too: every hardware HCA has one (mlx5_core,
 * bnxt_en, ... behind /sys/class/infiniband/NAME/device/driver), while a
 * device that sits on a netdev (rxe on dummy0) has none.
 */
static int soft_kind(const char *name, const struct ibv_device_attr *a)
{
	char drv[256];

	if (a->vendor_id == RXE_VENDOR_ID)
		return 1;
	if (a->vendor_id == SIW_VENDOR_ID)
		return 2;
	return driver_of(name, drv, sizeof(drv)) ? 3 : 0;
}

/* hwloc of this machine, NULL if it fails (then locality is unknown). */
static hwloc_topology_t topo_load(void)
{
	hwloc_topology_t t;

	if (hwloc_topology_init(&t))
		return NULL;
	if (hwloc_topology_load(t)) {
		hwloc_topology_destroy(t);
		return NULL;
	}
	return t;
}

/* The CPUs this process runs on: its binding, else what it may use. */
static hwloc_bitmap_t our_cpus(hwloc_topology_t t)
{
	hwloc_bitmap_t s = hwloc_bitmap_alloc();

	if (!s)
		return NULL;
	if (hwloc_get_cpubind(t, s, 0) || hwloc_bitmap_iszero(s))
		hwloc_bitmap_copy(s, hwloc_topology_get_allowed_cpuset(t));
	return s;
}

/*
 * How near the device is to ours: its cpuset (sysfs local_cpus through hwloc,
 * the whole machine when the kernel does not know, as for rxe) holds all our
 * CPUs, or some of them or of its NUMA node's, or it is unknown, or far.
 */
static void locality(hwloc_topology_t t, hwloc_const_bitmap_t ours, struct devinfo *di)
{
	hwloc_bitmap_t set;
	hwloc_obj_t node;
	char *s = NULL;

	di->near = 1;
	snprintf(di->cpus, sizeof(di->cpus), "?");
	if (!t || !ours || !(set = hwloc_bitmap_alloc()))
		return;
	if (!hwloc_ibv_get_device_cpuset(t, di->dev, set)) {
		if (hwloc_bitmap_list_asprintf(&s, set) >= 0) {
			snprintf(di->cpus, sizeof(di->cpus), "%s", s);
			free(s);
		}
		if (hwloc_bitmap_isequal(set, hwloc_topology_get_complete_cpuset(t)))
			di->near = 1;
		else if (hwloc_bitmap_isincluded(ours, set))
			di->near = 3;
		else if (hwloc_bitmap_intersects(ours, set))
			di->near = 2;
		else
			di->near = 0;
	}
	if (di->near < 2 && di->numa >= 0 &&
	    (node = hwloc_get_numanode_obj_by_os_index(t, (unsigned)di->numa)) &&
	    hwloc_bitmap_intersects(ours, node->cpuset))
		di->near = 2;
	hwloc_bitmap_free(set);
}

static void dev_unload(struct devinfo *di)
{
	free(di->pa);
	free(di->gids);
	if (di->ctx)
		ibv_close_device(di->ctx);
	memset(di, 0, sizeof(*di));
}

/* Opens dev and reads its attributes, ports and GID table. */
static oxr_status_t dev_load(struct ibv_device *dev, hwloc_topology_t t,
			     hwloc_const_bitmap_t ours, struct devinfo *di)
{
	const char *name = ibv_get_device_name(dev);
	size_t total = 0;
	oxr_status_t st;
	ssize_t n;
	int p;

	memset(di, 0, sizeof(*di));
	di->dev = dev;
	di->ctx = ibv_open_device(dev);
	if (!di->ctx)
		return oxr_err(OXR_ERR_IO, "ibv_open_device(%s): %s", name, strerror(errno));
	if ((errno = ibv_query_device(di->ctx, &di->attr))) {
		st = oxr_err(OXR_ERR_IO, "ibv_query_device(%s): %s", name, strerror(errno));
		goto fail;
	}
	di->pa = calloc(di->attr.phys_port_cnt ? di->attr.phys_port_cnt : 1, sizeof(*di->pa));
	if (!di->pa) {
		st = oxr_err(OXR_ERR_NOMEM, "oxr_vdev: out of memory");
		goto fail;
	}
	for (p = 1; p <= di->attr.phys_port_cnt; p++) {
		if ((errno = ibv_query_port(di->ctx, (uint8_t)p, &di->pa[p - 1]))) {
			st = oxr_err(OXR_ERR_IO, "ibv_query_port(%s, %d): %s", name, p,
				     strerror(errno));
			goto fail;
		}
		total += (size_t)di->pa[p - 1].gid_tbl_len;
	}
	/* One call for the whole table: it holds only valid entries, with their
	 * type (rdma-core reads sysfs itself on kernels without the ioctl). */
	if (total) {
		di->gids = calloc(total, sizeof(*di->gids));
		if (!di->gids) {
			st = oxr_err(OXR_ERR_NOMEM, "oxr_vdev: out of memory");
			goto fail;
		}
		n = ibv_query_gid_table(di->ctx, di->gids, total, 0);
		if (n < 0) {
			st = oxr_err(OXR_ERR_IO, "ibv_query_gid_table(%s): %s", name,
				     strerror(errno ? errno : (int)-n));
			goto fail;
		}
		di->ngid = (int)n;
	}
	di->soft = soft_kind(name, &di->attr);
	di->numa = dev_numa_node(name);
	locality(t, ours, di);
	return OXR_OK;
fail:
	dev_unload(di);
	return st;
}

/* The automatic GID of a port, or want; fails naming what exists. */
static oxr_status_t pick_gid(const struct devinfo *di, int port, int want, struct gid_pick *g)
{
	const struct ibv_gid_entry *first = NULL, *v2 = NULL, *v4 = NULL, *e;
	char list[160] = "";
	size_t at = 0;
	int i;

	for (i = 0; i < di->ngid; i++) {
		e = &di->gids[i];
		if (e->port_num != (uint32_t)port || gid_is_zero(&e->gid))
			continue;
		if (want >= 0 && e->gid_index == (uint32_t)want) {
			first = e;
			g->why = "the one OXR_GID_INDEX names";
			goto found;
		}
		if (at < sizeof(list))
			at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%u", at ? ", " : "",
					       e->gid_index);
		if (!first || e->gid_index < first->gid_index)
			first = e;
		if (e->gid_type == IBV_GID_TYPE_ROCE_V2) {
			if (!v2 || e->gid_index < v2->gid_index)
				v2 = e;
			if (gid_is_v4mapped(&e->gid) && (!v4 || e->gid_index < v4->gid_index))
				v4 = e;
		}
	}
	if (want >= 0)
		return oxr_err(OXR_ERR_INVAL, "OXR_GID_INDEX=%d: %s port %d has no such GID "
			       "(valid: %s)", want, ibv_get_device_name(di->dev), port,
			       *list ? list : "none");
	if (v4) {
		first = v4;
		g->why = "the IPv4-mapped RoCE v2 GID";
	} else if (v2) {
		first = v2;
		g->why = "the first RoCE v2 GID";
	} else if (first) {
		g->why = "the first GID";
	} else {
		return oxr_err(OXR_ERR_UNSUPPORTED, "%s port %d has no GID (on RoCE: its netdev "
			       "has no IP address?)", ibv_get_device_name(di->dev), port);
	}
found:
	g->index = (int)first->gid_index;
	g->type = (int)first->gid_type;
	g->gid = first->gid;
	return OXR_OK;
}

/* Whether port p can carry traffic: ACTIVE with a GID; the message says why not. */
static oxr_status_t port_usable(const struct devinfo *di, int p, int want_gid, struct gid_pick *g)
{
	const char *name = ibv_get_device_name(di->dev);
	const struct ibv_port_attr *pa = &di->pa[p - 1];

	if (pa->state != IBV_PORT_ACTIVE)
		return oxr_err(OXR_ERR_UNSUPPORTED, "%s port %d is %s, not active", name, p,
			       ibv_port_state_str(pa->state));
	return pick_gid(di, p, want_gid, g);
}

/* "rxe0 (port 1 ACTIVE), mlx5_0 (port 1 DOWN)" for messages. */
static void list_devices(struct ibv_device **l, int n, char *buf, size_t len)
{
	struct devinfo di;
	size_t at = 0;
	int i, p;

	buf[0] = 0;
	for (i = 0; i < n && at < len; i++) {
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
				       ibv_get_device_name(l[i]));
		if (at >= len || dev_load(l[i], NULL, NULL, &di))
			continue;
		for (p = 1; p <= di.attr.phys_port_cnt && at < len; p++)
			at += (size_t)snprintf(buf + at, len - at, "%sport %d %s", p > 1 ? ", " : " (",
					       p, ibv_port_state_str(di.pa[p - 1].state));
		if (at < len && di.attr.phys_port_cnt)
			at += (size_t)snprintf(buf + at, len - at, ")");
		dev_unload(&di);
	}
}

/* "name" or "name:port". */
static oxr_status_t parse_want(const char *want, char *name, size_t len, int *port)
{
	const char *colon = strrchr(want, ':');
	size_t n = colon ? (size_t)(colon - want) : strlen(want);
	char *end;
	long v;

	*port = 0;
	if (!n || n >= len)
		return oxr_err(OXR_ERR_INVAL, "OXR_DEVICE=%s: expected a device name or name:port "
			       "(as ibv_devices lists them)", want);
	memcpy(name, want, n);
	name[n] = 0;
	if (colon) {
		v = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || v < 1 || v > 255)
			return oxr_err(OXR_ERR_INVAL, "OXR_DEVICE=%s: the port after ':' must be a "
				       "number from 1 to 255", want);
		*port = (int)v;
	}
	return OXR_OK;
}

oxr_status_t oxr_vdev_env(const char **want, int *gid_index)
{
	oxr_ctx_params p;
	oxr_status_t st;

	if ((st = oxr_ctx_params_read(OXR_CTX_PARAM_DEVICE | OXR_CTX_PARAM_GID_INDEX, &p)))
		return st;
	*want = p.device;
	*gid_index = (int)p.gid_index;
	return OXR_OK;
}

/*
 * Asks for an RC QP with OXR_VDEV_INLINE bytes of inline data and reads back
 * what the provider granted (it may grant more, or refuse and take less).
 * Returns -1 when no RC QP can be created at all (errno set).
 */
static int probe_inline(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static const uint32_t asks[] = { OXR_VDEV_INLINE, 128, 64, 32, 0 };
	struct ibv_qp_init_attr ia;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int got = -1, e = 0;
	size_t i;

	cq = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	if (!cq)
		return -1;
	for (i = 0; i < sizeof(asks) / sizeof(asks[0]) && got < 0; i++) {
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 1;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = asks[i];
		qp = oxr_vcreate_qp(pd, &ia);
		if (!qp) {
			e = errno;
			continue;
		}
		got = (int)ia.cap.max_inline_data;
		oxr_vdestroy_qp(qp);
	}
	ibv_destroy_cq(cq);
	if (got < 0)
		errno = e;
	return got;
}

/* Best first: hardware, then rxe, then siw; nearer; then the list's order. */
static int better(const struct devinfo *a, const struct devinfo *b)
{
	if (a->soft != b->soft)
		return a->soft < b->soft;
	return a->near > b->near;
}

static const char *near_str(int near)
{
	static const char *const s[] = { "far from this process's CPUs",
					 "locality unknown",
					 "shares CPUs or a NUMA node with this process",
					 "its cpuset holds this process's CPUs" };

	return s[near];
}

/* Finishes out from di (which it takes over, and closes), port p and GID g:
 * the protection domain, the inline probe.  out->topo is the caller's. */
static oxr_status_t finish(struct devinfo *di, int p, const struct gid_pick *g,
			   const char *how, struct oxr_vdev *out)
{
	const struct ibv_port_attr *pa = &di->pa[p - 1];
	char txt[INET6_ADDRSTRLEN];
	oxr_status_t st;
	int inl;

	memset(out, 0, sizeof(*out));
	out->verbs = di->ctx;
	snprintf(out->name, sizeof(out->name), "%s", ibv_get_device_name(di->dev));
	out->port = (uint8_t)p;
	out->gid_index = g->index;
	out->gid_type = g->type;
	out->gid = g->gid;
	out->lid = pa->lid;
	out->link_layer = pa->link_layer;
	out->mtu = pa->active_mtu;
	out->soft = di->soft != 0;
	out->kind = kinds[di->soft];
	out->numa_node = di->numa;
	out->attr = di->attr;
	di->ctx = NULL;
	dev_unload(di);

	out->pd = ibv_alloc_pd(out->verbs);
	if (!out->pd) {
		st = oxr_err(OXR_ERR_IO, "ibv_alloc_pd(%s): %s", out->name, strerror(errno));
		goto fail;
	}
	inl = probe_inline(out->verbs, out->pd);
	if (inl < 0) {
		st = oxr_err(OXR_ERR_IO, "%s: cannot create an RC queue pair: %s (locked memory "
			     "limit? see ulimit -l)", out->name, strerror(errno));
		goto fail;
	}
	out->max_inline = (uint32_t)inl;
	snprintf(out->why, sizeof(out->why), "%s; %s port %d ACTIVE, %s; GID %d is %s (%s %s)",
		 how, out->kind, p, link_layer_str(out->link_layer), g->index, g->why,
		 gid_type_str(g->type), oxr_vdev_gid_str(&g->gid, txt, sizeof(txt)));
	return OXR_OK;
fail:
	oxr_vdev_close(out);
	return st;
}

/* The device and port OXR_DEVICE names. */
static oxr_status_t open_named(struct ibv_device **l, int n, const char *want, const char *name,
			       int port, int gid_index, hwloc_topology_t t,
			       hwloc_const_bitmap_t ours, struct oxr_vdev *out)
{
	char have[200], how[128], why[300];
	struct devinfo di;
	struct gid_pick g;
	oxr_status_t st;
	int i, p;

	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			break;
	if (i == n) {
		list_devices(l, n, have, sizeof(have));
		return oxr_err(OXR_ERR_INVAL, "OXR_DEVICE=%s: no RDMA device %s (there are: %s)",
			       want, name, have);
	}
	if ((st = dev_load(l[i], t, ours, &di))) {
		snprintf(why, sizeof(why), "%s", oxr_errmsg());
		return oxr_err(st, "OXR_DEVICE=%s: %s", want, why);
	}
	if (port > di.attr.phys_port_cnt) {
		st = oxr_err(OXR_ERR_INVAL, "OXR_DEVICE=%s: %s has no port %d (its ports: 1 to %d)",
			     want, name, port, di.attr.phys_port_cnt);
		goto fail;
	}
	st = oxr_err(OXR_ERR_INVAL, "%s has no port", name);
	for (p = port ? port : 1; p <= (port ? port : di.attr.phys_port_cnt); p++) {
		st = port_usable(&di, p, gid_index, &g);
		if (!st)
			break;
	}
	if (st) {
		snprintf(why, sizeof(why), "%s", oxr_errmsg());
		list_devices(l, n, have, sizeof(have));
		st = oxr_err(OXR_ERR_INVAL, "OXR_DEVICE=%s: %s (there are: %s)", want, why, have);
		goto fail;
	}
	snprintf(how, sizeof(how), "OXR_DEVICE=%s", want);
	return finish(&di, p, &g, how, out);
fail:
	dev_unload(&di);
	return st;
}

oxr_status_t oxr_vdev_open(const char *want, int gid_index, struct oxr_vdev *out)
{
	struct devinfo best, di;
	struct gid_pick g, bg;
	struct ibv_device **l;
	hwloc_topology_t t;
	hwloc_bitmap_t ours = NULL;
	char how[128], notes[200] = "", name[IBV_SYSFS_NAME_MAX];
	size_t at = 0;
	int n = 0, i, p, bp = 0, usable = 0, port = 0;
	oxr_status_t st;

	memset(out, 0, sizeof(*out));
	if (want && !*want)
		want = NULL; /* OXR_DEVICE= (set but empty) means automatic */
	if (want && (st = parse_want(want, name, sizeof(name), &port)))
		return st;
	errno = 0;
	l = ibv_get_device_list(&n);
	if (!l || n == 0) {
		if (l)
			ibv_free_device_list(l);
		if (want)
			return oxr_err(OXR_ERR_INVAL, "OXR_DEVICE=%s: %s", want, NO_DEVICE_MSG);
		return oxr_err(OXR_ERR_UNSUPPORTED, NO_DEVICE_MSG);
	}
	t = topo_load();
	if (t)
		ours = our_cpus(t);
	if (want) {
		st = open_named(l, n, want, name, port, gid_index, t, ours, out);
		goto done;
	}
	memset(&best, 0, sizeof(best));
	for (i = 0; i < n; i++) {
		if ((st = dev_load(l[i], t, ours, &di)))
			goto note;
		st = oxr_err(OXR_ERR_UNSUPPORTED, "%s has no port", ibv_get_device_name(l[i]));
		for (p = 1; p <= di.attr.phys_port_cnt; p++)
			if (!(st = port_usable(&di, p, gid_index, &g)))
				break;
		if (st) {
			dev_unload(&di);
			goto note;
		}
		usable++;
		if (!best.dev || better(&di, &best)) {
			dev_unload(&best);
			best = di;
			bp = p;
			bg = g;
		} else {
			dev_unload(&di);
		}
		continue;
note:
		if (at < sizeof(notes))
			at += (size_t)snprintf(notes + at, sizeof(notes) - at, "%s%s", at ? "; " : "",
					       oxr_errmsg());
	}
	if (!best.dev) {
		/* an OXR_GID_INDEX no device has is the user's mistake, not a
		 * reason to fall back to TCP quietly */
		st = oxr_err(gid_index >= 0 ? OXR_ERR_INVAL : OXR_ERR_UNSUPPORTED,
			     "no usable RDMA device (%d found: %s)", n, notes);
		goto done;
	}
	if (usable == 1)
		snprintf(how, sizeof(how), "automatic: the only usable device of %d", n);
	else
		snprintf(how, sizeof(how), "automatic: best of %d usable (%s first, %s)", usable,
			 best.soft ? "software" : "hardware", near_str(best.near));
	st = finish(&best, bp, &bg, how, out);
done:
	if (!st)
		out->topo = t;
	else if (t)
		hwloc_topology_destroy(t);
	hwloc_bitmap_free(ours);
	ibv_free_device_list(l);
	return st;
}

void oxr_vdev_close(struct oxr_vdev *d)
{
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->verbs)
		ibv_close_device(d->verbs);
	if (d->topo)
		hwloc_topology_destroy(d->topo);
	d->pd = NULL;
	d->verbs = NULL;
	d->topo = NULL;
}

void *oxr_vdev_alloc(const struct oxr_vdev *d, size_t len)
{
	hwloc_obj_t node;
	void *p = NULL;

	if (!len)
		len = 1;
	if (!d->topo) {
		if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), len))
			return NULL;
		return memset(p, 0, len);
	}
	/* Both from hwloc (its mmap on Linux: zeroed pages, touched only when
	 * used), so one hwloc_free fits both. */
	if (d->numa_node >= 0 &&
	    (node = hwloc_get_numanode_obj_by_os_index(d->topo, (unsigned)d->numa_node)))
		p = hwloc_alloc_membind(d->topo, len, node->nodeset, HWLOC_MEMBIND_BIND,
					HWLOC_MEMBIND_BYNODESET);
	if (!p)
		p = hwloc_alloc(d->topo, len);
	return p;
}

void oxr_vdev_free(const struct oxr_vdev *d, void *p, size_t len)
{
	if (!p)
		return;
	if (!len)
		len = 1;
	if (d->topo)
		hwloc_free(d->topo, p, len);
	else
		free(p);
}

/* ---- oxr-info ---- */

static void describe_port(FILE *f, const struct devinfo *di, int p)
{
	const struct ibv_port_attr *pa = &di->pa[p - 1];
	char txt[INET6_ADDRSTRLEN];
	struct gid_pick g;
	int i, have = 0, picked;

	fprintf(f, "  port %d: %s, link layer %s, active MTU %d (max %d), LID %u", p,
		ibv_port_state_str(pa->state), link_layer_str(pa->link_layer),
		oxr_vdev_mtu_bytes(pa->active_mtu), oxr_vdev_mtu_bytes(pa->max_mtu), pa->lid);
	fprintf(f, ", GID table of %d\n", pa->gid_tbl_len);
	picked = pick_gid(di, p, -1, &g) ? -1 : g.index;
	for (i = 0; i < di->ngid; i++) {
		const struct ibv_gid_entry *e = &di->gids[i];

		if (e->port_num != (uint32_t)p || gid_is_zero(&e->gid))
			continue;
		have++;
		fprintf(f, "    GID[%u] %-40s %s%s\n", e->gid_index,
			oxr_vdev_gid_str(&e->gid, txt, sizeof(txt)), gid_type_str((int)e->gid_type),
			(int)e->gid_index == picked ? "  <- oxr's choice" : "");
	}
	if (!have)
		fprintf(f, "    no GID (on RoCE: the netdev has no IP address?)\n");
	else if (picked >= 0)
		fprintf(f, "    oxr would pick GID %d: %s\n", picked, g.why);
}

static void describe(FILE *f, struct devinfo *di, int numa_nodes)
{
	const char *name = ibv_get_device_name(di->dev);
	uint64_t guid = be64toh(di->attr.node_guid);
	char drv[256] = "", parent[64] = "";
	struct ibv_pd *pd;
	int p, inl = -1, e = 0;

	fprintf(f, "%s: %s%s\n", name, di->soft ? "software, " : "hardware HCA",
		di->soft ? kinds[di->soft] : "");
	fprintf(f, "  vendor 0x%x part %u hw_ver %u, fw %s, node GUID %04x:%04x:%04x:%04x\n",
		di->attr.vendor_id, di->attr.vendor_part_id, di->attr.hw_ver,
		*di->attr.fw_ver ? di->attr.fw_ver : "-", (unsigned)(guid >> 48) & 0xffff,
		(unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
		(unsigned)guid & 0xffff);
	driver_of(name, drv, sizeof(drv));
	sysfs_read(name, "parent", parent, sizeof(parent));
	fprintf(f, "  driver %s%s%s, node type %s, transport %s\n", *drv ? drv : "none (no bus device)",
		*parent ? ", on netdev " : "", parent, ibv_node_type_str(di->dev->node_type),
		di->dev->transport_type == IBV_TRANSPORT_IB      ? "IB"
		: di->dev->transport_type == IBV_TRANSPORT_IWARP ? "iWARP"
								 : "other");
	fprintf(f, "  locality: NUMA node %d%s, cpuset %s (%s)\n", di->numa,
		di->numa < 0 ? " (unknown)" : "", di->cpus,
		di->near == 1 && numa_nodes <= 1 ? "one NUMA node: all near" : near_str(di->near));
	fprintf(f, "  limits: max QP %d, max QP WR %d, max SGE %d, max CQ %d, max CQE %d, "
		"max MR %d, max MR size %llu, max QP read/atomic %d\n",
		di->attr.max_qp, di->attr.max_qp_wr, di->attr.max_sge, di->attr.max_cq,
		di->attr.max_cqe, di->attr.max_mr, (unsigned long long)di->attr.max_mr_size,
		di->attr.max_qp_rd_atom);
	pd = ibv_alloc_pd(di->ctx);
	if (pd) {
		inl = probe_inline(di->ctx, pd);
		e = errno;
		ibv_dealloc_pd(pd);
	} else {
		e = errno;
	}
	if (inl >= 0)
		fprintf(f, "  max inline: %d (an RC QP asking for %d got it)\n", inl, OXR_VDEV_INLINE);
	else
		fprintf(f, "  max inline: ? (%s failed: %s)\n", pd ? "creating an RC QP" : "ibv_alloc_pd",
			strerror(e));
	for (p = 1; p <= di->attr.phys_port_cnt; p++)
		describe_port(f, di, p);
}

int oxr_vdev_describe_all(FILE *f)
{
	struct ibv_device **l;
	hwloc_topology_t t;
	hwloc_bitmap_t ours = NULL;
	struct devinfo di;
	char *s = NULL;
	int n = 0, i, nodes = 0;

	errno = 0;
	l = ibv_get_device_list(&n);
	if (!l || !n) {
		fprintf(f, "RDMA devices: none (ibv_get_device_list: %s)\n",
			l ? "empty list" : strerror(errno));
		if (l)
			ibv_free_device_list(l);
		return 0;
	}
	t = topo_load();
	if (t && (ours = our_cpus(t))) {
		nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
		if (hwloc_bitmap_list_asprintf(&s, ours) >= 0) {
			fprintf(f, "this process: CPUs %s, %d NUMA node%s\n", s, nodes,
				nodes == 1 ? "" : "s");
			free(s);
		}
	}
	fprintf(f, "RDMA devices: %d\n", n);
	for (i = 0; i < n; i++) {
		if (dev_load(l[i], t, ours, &di)) {
			fprintf(f, "%s: %s\n", ibv_get_device_name(l[i]), oxr_errmsg());
			continue;
		}
		describe(f, &di, nodes);
		dev_unload(&di);
	}
	hwloc_bitmap_free(ours);
	if (t)
		hwloc_topology_destroy(t);
	ibv_free_device_list(l);
	return n;
}

/* ---- counted verbs objects ------------------------------------------ */

static uint64_t n_qps, n_mrs, n_pinned; /* pinned: the registrations' bytes */

struct ibv_mr *oxr_vreg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (mr) {
		__atomic_add_fetch(&n_mrs, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&n_pinned, (uint64_t)mr->length, __ATOMIC_RELAXED);
	}
	return mr;
}

int oxr_vdereg_mr(struct ibv_mr *mr)
{
	uint64_t len = (uint64_t)mr->length;
	int r = ibv_dereg_mr(mr);

	if (!r) {
		__atomic_sub_fetch(&n_mrs, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&n_pinned, len, __ATOMIC_RELAXED);
	}
	return r;
}

struct ibv_qp *oxr_vcreate_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp = ibv_create_qp(pd, attr);

	if (qp)
		__atomic_add_fetch(&n_qps, 1, __ATOMIC_RELAXED);
	return qp;
}

int oxr_vdestroy_qp(struct ibv_qp *qp)
{
	int r = ibv_destroy_qp(qp);

	if (!r)
		__atomic_sub_fetch(&n_qps, 1, __ATOMIC_RELAXED);
	return r;
}

void oxr_vdev_counts(uint64_t *qps, uint64_t *mrs, uint64_t *pinned)
{
	*qps = __atomic_load_n(&n_qps, __ATOMIC_RELAXED);
	*mrs = __atomic_load_n(&n_mrs, __ATOMIC_RELAXED);
	*pinned = __atomic_load_n(&n_pinned, __ATOMIC_RELAXED);
}
