/* SPDX-License-Identifier: MIT */
/*
 * Device discovery of the verbs backend, on whatever machine runs it: the
 * test asks libibverbs itself whether there are devices and asserts the
 * matching behaviour.  Without any (a kernel without RDMA): the automatic
 * choice fails with OXR_ERR_UNSUPPORTED and the hint, a named device is an
 * error naming it, oxr-info says "no RDMA device, using tcp".  With devices:
 * the chosen one really opens, its MTU, GID and inline data are what the
 * device says, named ports work and missing ones fail clearly; inside
 * ci/rxe-guest (rxe0 on dummy0, 127.0.0.2) the exact rxe0 facts as well.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_child.h"
#include "verbs/verbs_dev.h"
#include "verbs/verbs_group.h"
#include "oxr/oxr.h"

#define TOOL OXR_BIN_DIR "/oxr-info"
#define GUEST_DEV "rxe0"
#define GUEST_GID "::ffff:127.0.0.2"

TestSuite(vdev, .timeout = 300);

/* The devices libibverbs finds (0 when the list itself fails). */
static int ndevices(void)
{
	struct ibv_device **l;
	int n = 0;

	l = ibv_get_device_list(&n);
	if (!l)
		return 0;
	ibv_free_device_list(l);
	return n;
}

static int has_device(const char *name)
{
	struct ibv_device **l;
	int n = 0, i, found = 0;

	l = ibv_get_device_list(&n);
	for (i = 0; l && i < n; i++)
		found |= !strcmp(ibv_get_device_name(l[i]), name);
	if (l)
		ibv_free_device_list(l);
	return found;
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	int n = ndevices();

	(void)set;
	fprintf(stderr, "\n######## test_verbs_dev: %s ########\n\n",
		!n ? "NO-DEVICE case (ibv_get_device_list found none): asserting the fallback"
		: has_device(GUEST_DEV) ? "DEVICE case, rxe guest (rxe0 found): asserting rxe0's facts"
					: "DEVICE case (devices found, no rxe0): asserting generic facts");
}

static const char *last_line(const char *s)
{
	static char buf[1024];
	size_t n = strlen(s);
	const char *p;

	while (n && s[n - 1] == '\n')
		n--;
	for (p = s + n; p > s && p[-1] != '\n'; p--)
		;
	snprintf(buf, sizeof(buf), "%.*s", (int)(s + n - p), p);
	return buf;
}

static struct run run_info(const char *env0, const char *env1)
{
	const char *argv[] = { TOOL, NULL };
	const char *env[] = { env0, env1, NULL };

	return spawn_run(argv, env, NULL, 120);
}

/* Opens automatically and checks against what libibverbs says directly. */
static void open_auto(struct oxr_vdev *d)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	char txt[64];

	/* "" is what getenv gives for OXR_DEVICE=: automatic too */
	cr_assert_eq(oxr_vdev_open("", -1, d), OXR_OK, "%s", oxr_errmsg());
	cr_assert_not_null(d->verbs);
	cr_assert_not_null(d->pd);
	cr_assert(d->port >= 1);
	cr_assert_eq(ibv_query_port(d->verbs, d->port, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_eq(d->mtu, pa.active_mtu, "mtu %d, port says %d", d->mtu, pa.active_mtu);
	cr_assert_eq(d->link_layer, pa.link_layer);
	cr_assert_eq(d->lid, pa.lid);
	cr_assert_eq(ibv_query_gid(d->verbs, d->port, d->gid_index, &gid), 0);
	cr_assert_eq(memcmp(gid.raw, d->gid.raw, 16), 0);
	cr_assert_gt(d->max_inline, 0);
	cr_assert_gt(strlen(d->why), 10);
	fprintf(stderr, "vdev: %s port %u kind %s soft %d GID[%d] %s type %d link layer %d "
		"MTU %d LID %u max_inline %u NUMA %d vendor 0x%x part %u\n  why: %s\n",
		d->name, d->port, d->kind, d->soft, d->gid_index,
		oxr_vdev_gid_str(&d->gid, txt, sizeof(txt)), d->gid_type, d->link_layer,
		oxr_vdev_mtu_bytes(d->mtu), d->lid, d->max_inline, d->numa_node,
		d->attr.vendor_id, d->attr.vendor_part_id, d->why);
}

Test(vdev, automatic_choice)
{
	struct oxr_vdev d;
	char txt[64];

	if (!ndevices()) {
		cr_assert_eq(oxr_vdev_open("", -1, &d), OXR_ERR_UNSUPPORTED);
		memset(&d, 0x55, sizeof(d));
		cr_assert_eq(oxr_vdev_open(NULL, -1, &d), OXR_ERR_UNSUPPORTED);
		cr_assert(strstr(oxr_errmsg(), "no RDMA device (ibv_get_device_list found none; "
					       "the kernel has no RDMA or no provider is installed"),
			  "%s", oxr_errmsg());
		cr_assert(strstr(oxr_errmsg(), "load rdma_rxe"), "%s", oxr_errmsg());
		cr_assert_null(d.verbs);
		cr_assert_null(d.pd);
		oxr_vdev_close(&d); /* a failed open leaves something closeable */
		return;
	}
	open_auto(&d);
	if (has_device(GUEST_DEV)) {
		cr_assert_str_eq(d.name, GUEST_DEV);
		cr_assert_eq(d.soft, 1);
		cr_assert_str_eq(d.kind, "rxe");
		cr_assert_eq(d.port, 1);
		cr_assert_eq(d.gid_index, 1);
		cr_assert_str_eq(oxr_vdev_gid_str(&d.gid, txt, sizeof(txt)), GUEST_GID);
		cr_assert_eq(d.gid_type, IBV_GID_TYPE_ROCE_V2);
		cr_assert_eq(d.link_layer, IBV_LINK_LAYER_ETHERNET);
		cr_assert(strstr(d.why, "IPv4-mapped RoCE v2"), "%s", d.why);
	}
	oxr_vdev_close(&d);
	cr_assert_null(d.verbs);
}

Test(vdev, named_device_missing)
{
	struct oxr_vdev d;

	cr_assert_eq(oxr_vdev_open("nonexistent", -1, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_DEVICE=nonexistent"), "%s", oxr_errmsg());
	if (!ndevices()) {
		cr_assert(strstr(oxr_errmsg(), "ibv_get_device_list found none"), "%s",
			  oxr_errmsg());
		/* with no device at all, naming one is still an error, not tcp */
		cr_assert_eq(oxr_vdev_open(GUEST_DEV ":1", -1, &d), OXR_ERR_INVAL);
		cr_assert(strstr(oxr_errmsg(), "OXR_DEVICE=" GUEST_DEV ":1"), "%s", oxr_errmsg());
	} else {
		cr_assert(strstr(oxr_errmsg(), "no RDMA device nonexistent (there are: "), "%s",
			  oxr_errmsg());
		if (has_device(GUEST_DEV))
			cr_assert(strstr(oxr_errmsg(), GUEST_DEV " (port 1 active)"), "%s",
				  oxr_errmsg());
	}
	/* malformed values say what is expected, on either machine */
	cr_assert_eq(oxr_vdev_open(":1", -1, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "expected a device name or name:port"), "%s",
		  oxr_errmsg());
	cr_assert_eq(oxr_vdev_open("x:0", -1, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "from 1 to 255"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_vdev_open("x:1a", -1, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "from 1 to 255"), "%s", oxr_errmsg());
}

Test(vdev, named_ports)
{
	struct oxr_vdev a, d;
	char want[96];

	if (!ndevices()) {
		cr_assert_eq(oxr_vdev_open(GUEST_DEV, -1, &d), OXR_ERR_INVAL);
		cr_assert(strstr(oxr_errmsg(), "OXR_DEVICE=" GUEST_DEV ": no RDMA device"), "%s",
			  oxr_errmsg());
		return;
	}
	open_auto(&a);
	/* name:port of the automatic choice gives the same port and GID */
	snprintf(want, sizeof(want), "%s:%u", a.name, a.port);
	cr_assert_eq(oxr_vdev_open(want, -1, &d), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(d.name, a.name);
	cr_assert_eq(d.port, a.port);
	cr_assert_eq(d.gid_index, a.gid_index);
	cr_assert(strstr(d.why, want), "%s", d.why);
	cr_assert_gt(d.max_inline, 0);
	oxr_vdev_close(&d);
	/* the bare name too */
	cr_assert_eq(oxr_vdev_open(a.name, -1, &d), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(d.name, a.name);
	oxr_vdev_close(&d);
	/* a port it lacks */
	snprintf(want, sizeof(want), "%s:7", a.name);
	cr_assert_eq(oxr_vdev_open(want, -1, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), want), "%s", oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "has no port 7 (its ports: 1 to"), "%s", oxr_errmsg());
	cr_assert_null(d.verbs);
	oxr_vdev_close(&a);
}

Test(vdev, gid_index)
{
	struct oxr_vdev a, d;
	union ibv_gid gid;
	const char *want;
	int gi;

	/* the environment, on either machine */
	setenv("OXR_DEVICE", "", 1);
	unsetenv("OXR_GID_INDEX");
	cr_assert_eq(oxr_vdev_env(&want, &gi), OXR_OK);
	cr_assert_null(want);
	cr_assert_eq(gi, -1);
	setenv("OXR_DEVICE", "rxe0:1", 1);
	setenv("OXR_GID_INDEX", "3", 1);
	cr_assert_eq(oxr_vdev_env(&want, &gi), OXR_OK);
	cr_assert_str_eq(want, "rxe0:1");
	cr_assert_eq(gi, 3);
	setenv("OXR_GID_INDEX", "one", 1);
	cr_assert_eq(oxr_vdev_env(&want, &gi), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_GID_INDEX=one"), "%s", oxr_errmsg());
	unsetenv("OXR_DEVICE");
	unsetenv("OXR_GID_INDEX");

	if (!ndevices()) {
		cr_assert_eq(oxr_vdev_open(NULL, 0, &d), OXR_ERR_UNSUPPORTED);
		return;
	}
	open_auto(&a);
	cr_assert_eq(oxr_vdev_open(a.name, 0, &d), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(d.gid_index, 0);
	cr_assert_eq(ibv_query_gid(d.verbs, d.port, 0, &gid), 0);
	cr_assert_eq(memcmp(gid.raw, d.gid.raw, 16), 0);
	cr_assert(strstr(d.why, "GID 0 is the one OXR_GID_INDEX names"), "%s", d.why);
	if (has_device(GUEST_DEV)) {
		cr_assert_eq(d.gid.raw[0], 0xfe); /* GID[0]: the link-local fe80:: */
		cr_assert_eq(d.gid.raw[1], 0x80);
	}
	oxr_vdev_close(&d);
	/* automatic device, explicit index no device has: an error, not tcp */
	cr_assert_eq(oxr_vdev_open(NULL, 999, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_GID_INDEX=999"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_vdev_open(a.name, 999, &d), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_GID_INDEX=999"), "%s", oxr_errmsg());
	if (has_device(GUEST_DEV))
		cr_assert(strstr(oxr_errmsg(), "(valid: 0, 1)"), "%s", oxr_errmsg());
	oxr_vdev_close(&a);
}

Test(vdev, memory)
{
	size_t len = 1 << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
	struct oxr_vdev d;
	struct ibv_mr *mr;
	char *p;

	if (!ndevices()) {
		/* no topology: plain page-aligned memory */
		memset(&d, 0, sizeof(d));
		d.numa_node = -1;
		p = oxr_vdev_alloc(&d, len);
		cr_assert_not_null(p);
		cr_assert_eq((uintptr_t)p % pg, 0);
		memset(p, 0xa5, len);
		oxr_vdev_free(&d, p, len);
		return;
	}
	open_auto(&d);
	p = oxr_vdev_alloc(&d, len);
	cr_assert_not_null(p);
	cr_assert_eq((uintptr_t)p % pg, 0);
	memset(p, 0xa5, len);
	/* what rings and windows are for: the device can register it */
	mr = ibv_reg_mr(d.pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", strerror(errno));
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	oxr_vdev_free(&d, p, len);
	oxr_vdev_close(&d);
}

Test(vdev, describe_all)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n = ndevices(), got;

	cr_assert_not_null(f);
	got = oxr_vdev_describe_all(f);
	fclose(f);
	cr_assert_eq(got, n, "%d devices described, libibverbs has %d:\n%s", got, n, buf);
	if (!n) {
		cr_assert(strstr(buf, "RDMA devices: none"), "%s", buf);
	} else {
		fprintf(stderr, "---- oxr_vdev_describe_all ----\n%s-------------------------------\n",
			buf);
		cr_assert(strstr(buf, "RDMA devices: "), "%s", buf);
		cr_assert(strstr(buf, "  port 1: "), "%s", buf);
		cr_assert(strstr(buf, "max inline: "), "%s", buf);
		cr_assert(strstr(buf, "<- oxr's choice"), "%s", buf);
		cr_assert(strstr(buf, "locality: NUMA node "), "%s", buf);
	}
	if (has_device(GUEST_DEV)) {
		cr_assert(strstr(buf, GUEST_DEV ": software, rxe\n"), "%s", buf);
		cr_assert(strstr(buf, "port 1: active, link layer Ethernet, active MTU 1024 (max 4096), LID 0"),
			  "%s", buf);
		cr_assert(strstr(buf, "GID[1] " GUEST_GID), "%s", buf);
		cr_assert(strstr(buf, "RoCE v2  <- oxr's choice"), "%s", buf);
		cr_assert(strstr(buf, "oxr would pick GID 1: the IPv4-mapped RoCE v2 GID"), "%s",
			  buf);
	}
	free(buf);
}

Test(vdev, oxr_info)
{
	struct run r;
	char want[160];
	struct oxr_vdev d;

	r = run_info(NULL, NULL);
	cr_assert_eq(r.rc, 0, "exit %d\n%s%s", r.rc, r.out, r.err);
	cr_assert(strstr(r.out, "oxr " /* version */), "%s", r.out);
	cr_assert(strstr(r.out, "verbs backend: built in"), "%s", r.out);
	if (!ndevices()) {
		cr_assert_str_eq(last_line(r.out), "no RDMA device, using tcp", "%s", r.out);
		cr_assert(strstr(r.out, "load rdma_rxe"), "%s", r.out);
	} else {
		fprintf(stderr, "---- oxr-info ----\n%s------------------\n", r.out);
		open_auto(&d);
		snprintf(want, sizeof(want), "oxr would use: verbs on %s port %u (GID index %d, ",
			 d.name, d.port, d.gid_index);
		oxr_vdev_close(&d);
		cr_assert(!strncmp(last_line(r.out), want, strlen(want)), "'%s' lacks '%s'",
			  last_line(r.out), want);
	}
	if (has_device(GUEST_DEV)) {
		cr_assert(strstr(last_line(r.out), "oxr would use: verbs on rxe0 port 1 "
						   "(GID index 1, ::ffff:127.0.0.2) \xe2\x80\x94 "),
			  "%s", r.out);
		cr_assert(strstr(r.out, "rxe0: software, rxe"), "%s", r.out);
	}
	run_free(&r);

	r = run_info("OXR_TRANSPORT=tcp", NULL);
	cr_assert_eq(r.rc, 0, "exit %d\n%s%s", r.rc, r.out, r.err);
	cr_assert_str_eq(last_line(r.out), "OXR_TRANSPORT=tcp: using tcp", "%s", r.out);
	cr_assert(strstr(r.out, "ranks on this host: as to other hosts (OXR_TRANSPORT=tcp;"), "%s",
		  r.out);
	run_free(&r);

	/* what links between ranks of this host use */
	r = run_info("OXR_TRANSPORT=auto", NULL);
	cr_assert(strstr(r.out, "\nranks on this host: shm, shared memory"), "%s", r.out);
	run_free(&r);
	r = run_info("OXR_SHM=0", NULL);
	cr_assert(strstr(r.out, "ranks on this host: as to other hosts (OXR_SHM=0;"), "%s", r.out);
	run_free(&r);
	r = run_info("OXR_TRANSPORT=shm", NULL);
	cr_assert_eq(r.rc, 0, "exit %d\n%s%s", r.rc, r.out, r.err);
	cr_assert(strstr(r.out, "ranks on this host: shm"), "%s", r.out);
	cr_assert_str_eq(last_line(r.out), "OXR_TRANSPORT=shm: using tcp to other hosts", "%s",
			 r.out);
	run_free(&r);

	r = run_info("OXR_DEVICE=nonexistent", NULL);
	cr_assert_eq(r.rc, 1, "exit %d\n%s%s", r.rc, r.out, r.err);
	cr_assert(strstr(last_line(r.out), "oxr would fail: OXR_DEVICE=nonexistent: "), "%s",
		  r.out);
	run_free(&r);

	r = run_info("OXR_DEVICE=" GUEST_DEV ":7", NULL);
	cr_assert_eq(r.rc, 1, "exit %d\n%s%s", r.rc, r.out, r.err);
	cr_assert(strstr(last_line(r.out), "OXR_DEVICE=" GUEST_DEV ":7: "), "%s", r.out);
	if (has_device(GUEST_DEV))
		cr_assert(strstr(last_line(r.out), "rxe0 has no port 7"), "%s", r.out);
	run_free(&r);

	r = run_info("OXR_DEVICE=" GUEST_DEV ":1", NULL);
	if (has_device(GUEST_DEV)) {
		cr_assert_eq(r.rc, 0, "exit %d\n%s%s", r.rc, r.out, r.err);
		cr_assert(strstr(last_line(r.out), "oxr would use: verbs on rxe0 port 1 "
						   "(GID index 1, ::ffff:127.0.0.2) \xe2\x80\x94 "
						   "OXR_DEVICE=rxe0:1; rxe port 1"),
			  "%s", r.out);
	} else {
		cr_assert_eq(r.rc, 1, "exit %d\n%s%s", r.rc, r.out, r.err);
	}
	run_free(&r);

	r = run_info("OXR_TRANSPORT=bogus", NULL);
	cr_assert_eq(r.rc, 1, "exit %d\n%s%s", r.rc, r.out, r.err);
	cr_assert(strstr(r.out, "OXR_TRANSPORT=bogus: expected one of auto, tcp, verbs"), "%s",
		  r.out);
	run_free(&r);

	{
		const char *argv[] = { TOOL, "--help", NULL };

		r = spawn_run(argv, NULL, NULL, 30);
		cr_assert_eq(r.rc, 0);
		cr_assert(strstr(r.out, "usage: oxr-info"), "%s", r.out);
		run_free(&r);
	}
}

/* The stream QPs by number (verbs_group.c: open addressing, linear probing)
 * under random adds and deletes, checked against a plain array: a delete
 * moves entries back into its hole, and every entry must stay findable,
 * nothing deleted found.  The keys collide in bunches (50 apart by 4096:
 * the same home slot in every table up to 4096 slots).  No device needed. */
Test(vdev, qp_table_finds_every_entry_through_adds_and_deletes)
{
	enum { N = 2000 };
	static uint32_t key[N];
	static int in[N];
	struct vgroup vg = { 0 };
	const char *seed = getenv("OXR_TEST_SEED");
	uint64_t s = seed ? strtoull(seed, NULL, 0) | 1 : 0x9e3779b97f4a7c15ull;
	int i, j, step, n = 0;

	for (i = 0; i < N; i++)
		key[i] = 1 + (uint32_t)(i % 50) + 4096u * (uint32_t)(i / 50);
	for (step = 0; step < 200000; step++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		i = (int)(s % N);
		if (in[i]) {
			oxr_vqtab_del(&vg, key[i]);
			n--;
		} else {
			cr_assert_eq(oxr_vqtab_add(&vg, key[i], &key[i]), 0, "out of memory");
			n++;
		}
		in[i] = !in[i];
		if (step % 997)
			continue;
		for (j = 0; j < N; j++)
			cr_assert_eq(oxr_vqtab_find(&vg, key[j]), in[j] ? &key[j] : NULL,
				     "step %d: qpn %u %s", step, key[j], in[j] ? "lost" : "still found");
		cr_assert_eq(vg.qn, (uint32_t)n, "step %d: %u entries counted, %d in", step, vg.qn, n);
		cr_assert_leq(2 * vg.qn, vg.qcap, "at most half full");
	}
	cr_assert_null(oxr_vqtab_find(&vg, 0), "qpn 0 is never an entry");
	free(vg.qk);
	free(vg.qv);
}
