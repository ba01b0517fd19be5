/* SPDX-License-Identifier: MIT */
/*
 * Configuration in one place: every user-facing OXR_* variable is a field of
 * oxr_ctx_params, read once when a context is created.  One strict parser
 * reads them all: a malformed value (not a number, out of range, an unknown
 * word, too long) is an error naming the variable, its value and what is
 * allowed.  docs/environment.md's users' table lists them with their
 * defaults (tests/transport/test_params.c checks it against this parser's table).
 *
 * A program can set fields itself, as UCX's ucp_params: the fields that
 * field_mask names override the environment, the rest come from it.
 *
 *     oxr_ctx_params p = { .field_mask = OXR_CTX_PARAM_BARRIER_RADIX,
 *                          .barrier_radix = 4 };
 *     st = oxr_ctx_create_with(&p, &ctx);
 */
#ifndef OXR_PARAMS_H
#define OXR_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/cmo.h"
#include "oxr/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oxr_ctx oxr_ctx;
typedef struct oxr_group oxr_group;

/* One bit per field of oxr_ctx_params. */
#define OXR_CTX_PARAM_LOG_LEVEL (1ull << 0)
#define OXR_CTX_PARAM_TRANSPORT (1ull << 1)
#define OXR_CTX_PARAM_ORDER (1ull << 2)
#define OXR_CTX_PARAM_SPIN_US (1ull << 3)
#define OXR_CTX_PARAM_LINK_TIMEOUT_MS (1ull << 4)
#define OXR_CTX_PARAM_HEARTBEAT_MS (1ull << 5)
#define OXR_CTX_PARAM_RECV_QUEUE_BYTES (1ull << 6)
#define OXR_CTX_PARAM_TCP_LOCAL_CC (1ull << 7)
#define OXR_CTX_PARAM_DEVICE (1ull << 8)
#define OXR_CTX_PARAM_GID_INDEX (1ull << 9)
#define OXR_CTX_PARAM_VERBS_SLOTS (1ull << 10)
#define OXR_CTX_PARAM_VERBS_SLOT_BYTES (1ull << 11)
#define OXR_CTX_PARAM_VERBS_PUT_INLINE (1ull << 12)
#define OXR_CTX_PARAM_VERBS_RNDV (1ull << 13)
#define OXR_CTX_PARAM_VERBS_RCACHE_MB (1ull << 14)
#define OXR_CTX_PARAM_VERBS_CM (1ull << 15)
#define OXR_CTX_PARAM_RDMA_ADDR (1ull << 16)
#define OXR_CTX_PARAM_VERBS_TIMEOUT (1ull << 17)
#define OXR_CTX_PARAM_VERBS_RETRY (1ull << 18)
#define OXR_CTX_PARAM_CMO_MAX_DEPTH (1ull << 19)
#define OXR_CTX_PARAM_CMO_MAX_OBJECT_BYTES (1ull << 20)
#define OXR_CTX_PARAM_CMO_MAX_TOTAL_BYTES (1ull << 21)
#define OXR_CTX_PARAM_CMO_MAX_OBJECTS (1ull << 22)
#define OXR_CTX_PARAM_CMO_PREALLOC_BYTES (1ull << 23)
#define OXR_CTX_PARAM_HOST (1ull << 24)
#define OXR_CTX_PARAM_BOOT (1ull << 25)
#define OXR_CTX_PARAM_BOOT_TIMEOUT (1ull << 26)
#define OXR_CTX_PARAM_BCAST_PIPELINE_BYTES (1ull << 27)
#define OXR_CTX_PARAM_BCAST_CHUNK_BYTES (1ull << 28)
#define OXR_CTX_PARAM_COLL_SPIN_US (1ull << 29)
#define OXR_CTX_PARAM_BARRIER (1ull << 30)
#define OXR_CTX_PARAM_BARRIER_RADIX (1ull << 31)
#define OXR_CTX_PARAM_CRYSTAL_REGION_BYTES (1ull << 32)
#define OXR_CTX_PARAM_CRYSTAL_REGION_MAX (1ull << 33)
#define OXR_CTX_PARAM_SERVER_MAX_STACK (1ull << 34)
#define OXR_CTX_PARAM_SERVER_TIMEOUT_MS (1ull << 35)
#define OXR_CTX_PARAM_SERVER (1ull << 36)
#define OXR_CTX_PARAM_MASTER_HOST (1ull << 37)
#define OXR_CTX_PARAM_HOST_ID (1ull << 38)
#define OXR_CTX_PARAM_SHM (1ull << 39)
#define OXR_CTX_PARAM_SHM_RING_BYTES (1ull << 40)
#define OXR_CTX_PARAM_SHM_CMA_BYTES (1ull << 41)
#define OXR_CTX_PARAM_SHM_RINGS (1ull << 42)
#define OXR_CTX_PARAM_SHM_FIFO_BYTES (1ull << 43)
#define OXR_CTX_PARAM_LINKS (1ull << 44)
#define OXR_CTX_PARAM_VERBS_RINGS (1ull << 45)
#define OXR_CTX_PARAM_VERBS_SRQ_BUFS (1ull << 46)
#define OXR_CTX_PARAM_VERBS_SRQ_CREDITS (1ull << 47)
#define OXR_CTX_PARAM_VERBS_STAGE_SLOTS (1ull << 48)
#define OXR_CTX_PARAM_ALL ((1ull << 49) - 1)
#define OXR_CTX_PARAM_CMO_LIMITS (0x1full << 19)
/* The fields oxr_ctx_modify may change on a live context (what the
 * collectives and the engine read when they run or start). */
#define OXR_CTX_PARAM_LIVE (0x1ffull << 27 | OXR_CTX_PARAM_CMO_LIMITS)

/*
 * The variable each field comes from is its name in capitals after OXR_
 * (cmo_max_depth: OXR_CMO_MAX_DEPTH).  Words are indices: log_level
 * 0..3 = error, warn, info, debug; transport 0..3 = auto, tcp, verbs, shm; order
 * OXR_ORDER_NETWORK or OXR_ORDER_LITTLE; verbs_cm 0 = tcp, 1 = rdmacm; links 0 = auto, 1 = ondemand, 2 = eager; boot
 * OXR_BOOT_SINGLETON, _RUN, _PMIX or -1 (detect); barrier 0 = bitmap,
 * 1 = dissemination, 2 = auto (dissemination at 2 ranks, bitmap above).  -1 in spin_us, gid_index, coll_spin_us,
 * server_timeout_ms and shm and NULL in a string are "the default" (docs/environment.md says
 * what that is).  A context's strings are its own copies.
 */
typedef struct oxr_ctx_params {
	uint64_t field_mask;
	int log_level;
	int transport;
	int order;
	long spin_us;
	long link_timeout_ms;
	long heartbeat_ms;
	uint64_t recv_queue_bytes;
	const char *tcp_local_cc; /* "system": the system's */
	const char *device;
	long gid_index;
	long verbs_slots;
	long verbs_slot_bytes;
	long verbs_put_inline;
	uint64_t verbs_rndv;
	long verbs_rcache_mb;
	int verbs_cm;
	const char *rdma_addr;
	long verbs_timeout;
	long verbs_retry;
	uint64_t cmo_max_depth;
	uint64_t cmo_max_object_bytes;
	uint64_t cmo_max_total_bytes;
	uint64_t cmo_max_objects;
	uint64_t cmo_prealloc_bytes;
	const char *host;
	int boot;
	long boot_timeout;
	uint64_t bcast_pipeline_bytes;
	uint64_t bcast_chunk_bytes;
	long coll_spin_us;
	int barrier;
	long barrier_radix;
	uint64_t crystal_region_bytes;
	uint64_t crystal_region_max;
	uint64_t server_max_stack;
	long server_timeout_ms;
	const char *server;
	const char *master_host;
	const char *host_id; /* which ranks share a host: NULL, this kernel's boot id + host name */
	long shm;            /* links to this host's ranks through shared memory: 0, 1, -1 */
	uint64_t shm_ring_bytes;
	uint64_t shm_cma_bytes;
	long shm_rings;      /* shm links a rank receives on through rings of their own */
	uint64_t shm_fifo_bytes; /* the receive FIFO the other shm links share */
	int links;           /* a booted group's links: 0 auto, 1 on first use, 2 all at boot */
	long verbs_rings;    /* verbs links a rank receives on through rings of their own */
	long verbs_srq_bufs; /* the receive buffers its other verbs links share */
	long verbs_srq_credits; /* a link's messages unread in them at most */
	long verbs_stage_slots; /* send staging slots its verbs links share */
} oxr_ctx_params;

/* oxr_ctx_create(&c) is oxr_ctx_create_with(NULL, &c). */
OXR_API oxr_status_t oxr_ctx_create_with(const oxr_ctx_params *p, oxr_ctx **out);
/* Every field of c's configuration (field_mask: OXR_CTX_PARAM_ALL). */
OXR_API const oxr_ctx_params *oxr_ctx_get_params(const oxr_ctx *c);
/* Sets the fields p->field_mask names, all within OXR_CTX_PARAM_LIVE, on a
 * live context; later collectives and engines use them. */
OXR_API oxr_status_t oxr_ctx_modify(oxr_ctx *c, const oxr_ctx_params *p);
/* The context a group belongs to. */
OXR_API oxr_ctx *oxr_group_ctx(const oxr_group *g);

/* Reads the fields `fields` names from the environment (a default where a
 * variable is unset or empty) into *p and sets p->field_mask to fields.
 * Strings point into the environment or static storage. */
OXR_API oxr_status_t oxr_ctx_params_read(uint64_t fields, oxr_ctx_params *p);

/* p's OXR_CMO_* fields as decoder limits. */
OXR_API void oxr_cmo_limits_from_params(const oxr_ctx_params *p, oxr_cmo_limits *lim);

/* The parser's table, for documentation and tests: entry i (0 past the end). */
typedef struct oxr_param_desc {
	const char *name;     /* "OXR_BARRIER_RADIX" */
	uint64_t field;       /* OXR_CTX_PARAM_BARRIER_RADIX */
	const char *kind;     /* "int", "size", "word" or "string" */
	const char *def;      /* the default as docs/environment.md says it: "16", "64 MiB" */
	int def_is_number;    /* def stands for def_value */
	uint64_t def_value;
	const char *doc;
} oxr_param_desc;
/* Entry i of that table into *d: 1, or 0 past the last. */
OXR_API int oxr_ctx_param_describe(size_t i, oxr_param_desc *d);

#ifdef __cplusplus
}
#endif
#endif
