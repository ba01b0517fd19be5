/* SPDX-License-Identifier: MIT */
/*
 * oxr-info: what this oxr was built with, the RDMA devices it sees, and the
 * transport a context would use here, with the reason.
 *
 * Exit status: 0 (whatever transport that is), 1 when the environment
 * (OXR_TRANSPORT, OXR_DEVICE, OXR_GID_INDEX) names something unusable, so a
 * context would fail, 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <oxr/oxr.h>

#ifndef OXR_VERSION
#define OXR_VERSION "unknown"
#endif

#define NO_VERBS "built without the verbs backend (needs libibverbs-dev librdmacm-dev libhwloc-dev)"

static const char usage_text[] =
	"usage: oxr-info [-h | --help]\n"
	"\n"
	"Prints the oxr version, whether it was built with the verbs (RDMA) backend,\n"
	"every RDMA device with its ports, GIDs (and which one oxr picks), active MTU,\n"
	"max inline data, LID and locality, then the transport a context would use\n"
	"(to ranks on this host, and to other hosts).\n"
	"\n"
	"  -h, --help     print this help and exit\n"
	"\n"
	"It honours what contexts read:\n"
	"  OXR_TRANSPORT  auto | tcp | verbs | shm (default auto)\n"
	"  OXR_SHM        0 | 1: shared memory between ranks of one host (default 1\n"
	"                 under auto and shm)\n"
	"  OXR_DEVICE     name or name:port of the RDMA device (default: automatic)\n"
	"  OXR_GID_INDEX  GID table index (default: automatic)\n"
	"\n"
	"Exit status: 0 ok, 1 the environment names something unusable, 2 usage error.\n";

enum { TR_AUTO, TR_TCP, TR_VERBS, TR_SHM };

/* OXR_TRANSPORT, and the line on links between ranks of this host. */
static int transport_env(int *tr)
{
	oxr_ctx_params p;

	*tr = TR_AUTO;
	if (oxr_ctx_params_read(OXR_CTX_PARAM_TRANSPORT | OXR_CTX_PARAM_SHM, &p)) {
		printf("%s\n", oxr_errmsg());
		return 1;
	}
	*tr = p.transport;
	if (p.shm == 0 || (p.shm < 0 && (*tr == TR_TCP || *tr == TR_VERBS)))
		printf("ranks on this host: as to other hosts (%s; OXR_SHM=1 for shared memory)\n",
		       p.shm == 0 ? "OXR_SHM=0" : *tr == TR_TCP ? "OXR_TRANSPORT=tcp"
							  : "OXR_TRANSPORT=verbs");
	else
		printf("ranks on this host: shm, shared memory (OXR_SHM=0 turns it off)\n");
	return 0;
}

/* The last lines: the device a context would open, or why none. */
static int verbs_choice(int tr, int ndev)
{
	oxr_device_info d;
	oxr_status_t st = oxr_device_query(&d);

	if (st == OXR_ERR_UNSUPPORTED && tr == TR_AUTO) {
		printf("(%s)\n", oxr_errmsg());
		if (ndev)
			printf("no usable RDMA device, using tcp\n");
		else
			printf("no RDMA device, using tcp\n");
		return 0;
	}
	if (st) {
		printf("oxr would fail: %s%s\n", tr == TR_VERBS ? "OXR_TRANSPORT=verbs: " : "",
		       oxr_errmsg());
		return 1;
	}
	printf("device %s port %u: %s, %s link layer, active MTU %d, max inline %u, LID %u, "
	       "NUMA node %d\n", d.name, d.port, d.kind, d.link_layer, d.mtu, d.max_inline, d.lid,
	       d.numa_node);
	printf("oxr would use: verbs on %s port %u (GID index %d, %s) \xe2\x80\x94 %s\n", d.name,
	       d.port, d.gid_index, d.gid, d.why);
	return 0;
}

int main(int argc, char **argv)
{
	int tr, ndev;

	if (argc > 1) {
		if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		}
		fprintf(stderr, "oxr-info: unknown argument '%s'\n", argv[1]);
		fputs(usage_text, stderr);
		return 2;
	}
	printf("oxr %s\n", OXR_VERSION);
	if (transport_env(&tr))
		return 1;
	if (tr == TR_SHM) {
		printf("OXR_TRANSPORT=shm: using tcp to other hosts\n");
		return 0;
	}
	if (oxr_verbs_built_in()) {
		printf("verbs backend: built in (libibverbs, librdmacm, hwloc)\n");
		ndev = oxr_device_describe_all(stdout);
		if (tr == TR_TCP) {
			printf("OXR_TRANSPORT=tcp: using tcp\n");
			return 0;
		}
		return verbs_choice(tr, ndev);
	}
	printf("verbs backend: not built in\n");
	if (tr == TR_TCP) {
		printf("OXR_TRANSPORT=tcp: using tcp\n");
		return 0;
	}
	if (tr == TR_VERBS) {
		printf("oxr would fail: OXR_TRANSPORT=verbs: " NO_VERBS "\n");
		return 1;
	}
	printf(NO_VERBS ", using tcp\n");
	return 0;
}
