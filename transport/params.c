/* SPDX-License-Identifier: MIT */
/*
 * Every user-facing OXR_* variable: its field, what it may be, its default
 * (as docs/environment.md's users' table says it), and the one strict
 * parser that reads them all.  The launcher's OXR_RUN_* and the tests'
 * variables are not here (boot_run.c and the tests read those).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "oxr_internal.h"
#include "transport_impl.h"

enum kind { K_INT, K_SIZE, K_WORD, K_STR };

struct knob {
	const char *name;         /* OXR_... */
	const char *field;        /* its oxr_ctx_params field */
	uint64_t bit;
	enum kind kind;
	size_t off;
	long lo, hi, def;         /* K_INT (def may lie outside: "the default"), K_WORD def */
	uint64_t ulo, uhi, udef;  /* K_SIZE; uhi: K_STR's longest length */
	uint64_t mult;            /* K_SIZE: a multiple of this */
	const char *const *words; /* K_WORD */
	const char *sdef;         /* K_STR */
	const char *def_text;     /* docs/environment.md's default column */
	const char *doc;
};

#define ROW(X, f, k) .name = "OXR_" #X, .field = #f, .bit = OXR_CTX_PARAM_##X, .kind = k, \
		     .off = offsetof(oxr_ctx_params, f)
#define INT(X, f, l, h, d, text, what) \
	{ ROW(X, f, K_INT), .lo = l, .hi = h, .def = d, .def_text = text, .doc = what }
#define SIZE(X, f, l, h, m, d, text, what) \
	{ ROW(X, f, K_SIZE), .ulo = l, .uhi = h, .mult = m, .udef = d, .def_text = text, .doc = what }
#define WORD(X, f, w, d, text, what) \
	{ ROW(X, f, K_WORD), .words = w, .def = d, .def_text = text, .doc = what }
#define STR(X, f, len, d, text, what) \
	{ ROW(X, f, K_STR), .uhi = len, .sdef = d, .def_text = text, .doc = what }

static const char *const levels[] = { "error", "warn", "info", "debug", NULL };
static const char *const transports[] = { "auto", "tcp", "verbs", "shm", NULL };
static const char *const orders[] = { "network", "little", NULL };
static const char *const cms[] = { "tcp", "rdmacm", NULL };
static const char *const boots[] = { "singleton", "run", "pmix", NULL };
static const char *const links[] = { "auto", "ondemand", "eager", NULL };
static const char *const barriers[] = { "bitmap", "dissemination", "auto", NULL };

#define DAY_MS 86400000L

static const struct knob knobs[] = {
	SIZE(CMO_MAX_DEPTH, cmo_max_depth, 1, 1u << 20, 1, OXR_CMO_DEFAULT_MAX_DEPTH, "512",
	     "deepest nesting of objects a decoder accepts"),
	SIZE(CMO_MAX_OBJECT_BYTES, cmo_max_object_bytes, 0, INT32_MAX * 8ull, 1,
	     OXR_CMO_DEFAULT_MAX_OBJECT_BYTES, "1 GiB", "largest single payload"),
	SIZE(CMO_MAX_TOTAL_BYTES, cmo_max_total_bytes, 8, UINT64_MAX, 1,
	     OXR_CMO_DEFAULT_MAX_TOTAL_BYTES, "2 GiB", "largest whole object or message"),
	SIZE(CMO_MAX_OBJECTS, cmo_max_objects, 1, UINT64_MAX, 1, OXR_CMO_DEFAULT_MAX_OBJECTS,
	     "2^26", "most nodes in one object"),
	SIZE(CMO_PREALLOC_BYTES, cmo_prealloc_bytes, 0, UINT64_MAX, 1,
	     OXR_CMO_DEFAULT_PREALLOC_BYTES, "16 MiB", "a claimed payload allocated whole up to this"),
	WORD(TRANSPORT, transport, transports, 0, "auto",
	     "auto, tcp, verbs or shm (shm on this host, tcp to others)"),
	INT(SHM, shm, 0, 1, -1, "1 under auto and shm, else 0",
	    "links to ranks on this host through shared memory"),
	SIZE(SHM_RING_BYTES, shm_ring_bytes, 4096, 1u << 30, 4096, 256u << 10, "256 KiB",
	     "bytes of a shm link's ring, each way (a power of two)"),
	SIZE(SHM_CMA_BYTES, shm_cma_bytes, 0, 1u << 30, 1, 0, "0 (never)",
	     "message pieces this big go by single copy (process_vm_readv; 0: never)"),
	INT(SHM_RINGS, shm_rings, 0, 65536, 16, "16",
	    "shm links a rank receives on through rings of their own; the rest share its FIFO"),
	SIZE(SHM_FIFO_BYTES, shm_fifo_bytes, 32u << 10, 255u << 20, 4096, 256u << 10, "256 KiB",
	     "a rank's receive FIFO that its other shm links share (4 KiB cells)"),
	WORD(LINKS, links, links, 0, "auto",
	     "a booted group's links: opened on first use (ondemand), or all at boot (eager); auto: "
	     "eager up to 64 ranks, on demand above; rdmacm always eager"),
	STR(DEVICE, device, 63, NULL, "nearest", "RDMA device name or name:port"),
	INT(GID_INDEX, gid_index, 0, 65535, -1, "IPv4-mapped", "GID table index"),
	INT(VERBS_SLOTS, verbs_slots, 4, 4096, 64, "64", "slots of a verbs link's receive ring"),
	INT(VERBS_RINGS, verbs_rings, 0, 4096, 2, "2",
	    "verbs links of a group a rank receives on through a ring of its own"),
	INT(VERBS_SRQ_BUFS, verbs_srq_bufs, 16, 65536, 128, "128",
	    "receive buffers (OXR_VERBS_SLOT_BYTES each) a rank's other verbs links share"),
	INT(VERBS_SRQ_CREDITS, verbs_srq_credits, 1, 4096, 16, "16",
	    "messages a link without a ring may have unread in the shared buffers"),
	INT(VERBS_STAGE_SLOTS, verbs_stage_slots, 4, 65536, 128, "128",
	    "send staging slots (OXR_VERBS_SLOT_BYTES each) a rank's verbs links share"),
	INT(VERBS_SLOT_BYTES, verbs_slot_bytes, 256, 1 << 20, 8192, "8192",
	    "bytes of a receive ring slot"),
	INT(VERBS_PUT_INLINE, verbs_put_inline, 0, 65536, 256, "256",
	    "puts with a note up to this size are copied through the target's inbox"),
	SIZE(VERBS_RNDV, verbs_rndv, 0, 1u << 30, 1, 65536, "65536",
	     "message pieces this big go by rendezvous"),
	INT(VERBS_RCACHE_MB, verbs_rcache_mb, 0, 1L << 20, 256, "256",
	    "MiB of receive memory kept registered"),
	WORD(VERBS_CM, verbs_cm, cms, 0, "tcp", "how QPs are connected"),
	STR(RDMA_ADDR, rdma_addr, 127, NULL, "GID's IPv4", "with rdmacm, this rank's RDMA address"),
	INT(VERBS_TIMEOUT, verbs_timeout, 1, 31, 14, "14", "QP ACK timeout exponent"),
	INT(VERBS_RETRY, verbs_retry, 0, 7, 7, "7", "QP retries"),
	WORD(LOG_LEVEL, log_level, levels, 1, "warn", "error, warn, info or debug"),
	INT(SPIN_US, spin_us, 0, 10000000, -1, "50, or 0 when the node runs more ranks than cores",
	    "microseconds a blocking wait polls before it sleeps"),
	INT(LINK_TIMEOUT_MS, link_timeout_ms, 1, DAY_MS, 30000, "30000",
	    "bound on connect, accept and the link handshake"),
	INT(HEARTBEAT_MS, heartbeat_ms, 0, DAY_MS, 0, "0 (off)",
	    "the rank watched (the next live one below) heard nothing from for this long has failed"),
	STR(TCP_LOCAL_CC, tcp_local_cc, 15, "reno", "reno",
	    "TCP congestion control of same-host links (system: the system's)"),
	SIZE(RECV_QUEUE_BYTES, recv_queue_bytes, 4096, 1ull << 40, 1, 64u << 20, "64 MiB",
	     "received messages a link holds before it stops reading"),
	WORD(ORDER, order, orders, OXR_ORDER_HOST, "host's", "little or network"),
	STR(HOST, host, 55, "127.0.0.1", "127.0.0.1", "the address other ranks connect to"),
	STR(HOST_ID, host_id, 255, NULL, "boot id + host name",
	    "ranks with the same id are on one host (shared memory); set it to tell apart "
	    "containers on one kernel"),
	WORD(BOOT, boot, boots, -1, "detected", "pmix, run or singleton"),
	INT(BOOT_TIMEOUT, boot_timeout, 0, 1000000000, 60, "60",
	    "seconds a rank waits for oxr-run (0: no limit)"),
	SIZE(BCAST_PIPELINE_BYTES, bcast_pipeline_bytes, 1, 1ull << 40, 1, 4u << 20, "4 MiB",
	     "where bcast's pipelined chain starts"),
	SIZE(BCAST_CHUNK_BYTES, bcast_chunk_bytes, 64, 1ull << 40, 1, 256u << 10, "256 KiB",
	     "the chain's chunk"),
	INT(COLL_SPIN_US, coll_spin_us, 0, 10000000, -1, "1000 / 2000",
	    "how long a collective polls before it sleeps (barrier / bcast and reduce)"),
	WORD(BARRIER, barrier, barriers, 2, "auto", "the barrier algorithm (auto: dissemination at 2 ranks, bitmap above)"),
	INT(BARRIER_RADIX, barrier_radix, 2, 64, 16, "16", "the fan-out of the barrier's tree"),
	SIZE(CRYSTAL_REGION_BYTES, crystal_region_bytes, 64, 1u << 30, 8, 65536u, "64 KiB",
	     "crystal router landing region: first size"),
	SIZE(CRYSTAL_REGION_MAX, crystal_region_max, 64, 1u << 30, 8, 8u << 20, "8 MiB",
	     "crystal router landing region: cap"),
	SIZE(SERVER_MAX_STACK, server_max_stack, 1, 1ull << 40, 1, 1u << 20, "2^20",
	     "oxr-server: stack bound"),
	INT(SERVER_TIMEOUT_MS, server_timeout_ms, 0, DAY_MS, -1, "none",
	    "oxr-server: bound of one RFC-102 call"),
	STR(SERVER, server, 4095, NULL, "next to the program", "the oxr-server binary"),
	STR(MASTER_HOST, master_host, 255, NULL, "host name",
	    "with oxr-master --launcher: the address the servers connect back to"),
};

#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))

static void *at(const oxr_ctx_params *p, const struct knob *k)
{
	return (char *)p + k->off;
}

/* "expected ..." for k, into buf. */
static const char *allowed(const struct knob *k, char *buf, size_t n)
{
	size_t used;
	int i;

	switch (k->kind) {
	case K_INT:
		snprintf(buf, n, "a whole number from %ld to %ld", k->lo, k->hi);
		break;
	case K_SIZE:
		snprintf(buf, n, "a whole number%s from %llu to %llu", k->mult > 1 ?
			 " (a multiple of 8)" : "", (unsigned long long)k->ulo,
			 (unsigned long long)k->uhi);
		break;
	case K_WORD:
		used = (size_t)snprintf(buf, n, "one of");
		for (i = 0; k->words[i] && used < n; i++)
			used += (size_t)snprintf(buf + used, n - used, "%s %s", i ? "," : "",
						 k->words[i]);
		break;
	case K_STR:
		snprintf(buf, n, "at most %llu characters", (unsigned long long)k->uhi);
		break;
	}
	return buf;
}

static oxr_status_t bad(const struct knob *k, const char *who, const char *value)
{
	char what[160];

	return oxr_err(OXR_ERR_INVAL, "%s%s=%.64s%s: expected %s", who, who[0] ? k->field : k->name,
		       value, strlen(value) > 64 ? "..." : "", allowed(k, what, sizeof(what)));
}

static void set_default(const struct knob *k, oxr_ctx_params *p)
{
	switch (k->kind) {
	case K_INT:
		*(long *)at(p, k) = k->def;
		break;
	case K_SIZE:
		*(uint64_t *)at(p, k) = k->udef;
		break;
	case K_WORD:
		*(int *)at(p, k) = (int)k->def;
		break;
	case K_STR:
		*(const char **)at(p, k) = k->sdef;
		break;
	}
}

/* The environment's value of k into p: its default when unset or empty. */
static oxr_status_t from_env(const struct knob *k, oxr_ctx_params *p)
{
	const char *s = getenv(k->name);
	char *end;
	int i;

	set_default(k, p);
	if (!s || !*s)
		return OXR_OK;
	errno = 0;
	switch (k->kind) {
	case K_INT: {
		long v = strtol(s, &end, 10);

		if (errno || *end || end == s || isspace((unsigned char)s[0]) || v < k->lo || v > k->hi)
			return bad(k, "", s);
		*(long *)at(p, k) = v;
		return OXR_OK;
	}
	case K_SIZE: {
		int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
		unsigned long long v = strtoull(s, &end, hex ? 16 : 10);

		if (errno || *end || s[0] == '-' || s[0] == '+' || isspace((unsigned char)s[0]) || end == s ||
		    v < k->ulo || v > k->uhi || v % k->mult)
			return bad(k, "", s);
		*(uint64_t *)at(p, k) = v;
		return OXR_OK;
	}
	case K_WORD:
		for (i = 0; k->words[i]; i++)
			if (!strcasecmp(s, k->words[i])) {
				*(int *)at(p, k) = i;
				return OXR_OK;
			}
		return bad(k, "", s);
	case K_STR:
		if (strlen(s) > k->uhi)
			return bad(k, "", s);
		*(const char **)at(p, k) = s;
		return OXR_OK;
	}
	return OXR_OK;
}

static size_t fsize(const struct knob *k)
{
	return k->kind == K_INT ? sizeof(long) : k->kind == K_SIZE ? sizeof(uint64_t)
	       : k->kind == K_WORD ? sizeof(int) : sizeof(const char *);
}

/* A value a program set: the same bounds, or k's "default" value. */
static oxr_status_t check(const struct knob *k, const oxr_ctx_params *p)
{
	char num[32];
	long v, n = 0;
	uint64_t u;
	const char *s;

	switch (k->kind) {
	case K_INT:
		v = *(long *)at(p, k);
		snprintf(num, sizeof(num), "%ld", v);
		return v == k->def || (v >= k->lo && v <= k->hi) ? OXR_OK
		       : bad(k, "oxr_ctx_params.", num);
	case K_WORD:
		v = *(int *)at(p, k);
		while (k->words[n])
			n++;
		snprintf(num, sizeof(num), "%ld", v);
		return v == k->def || (v >= 0 && v < n) ? OXR_OK : bad(k, "oxr_ctx_params.", num);
	case K_SIZE:
		u = *(uint64_t *)at(p, k);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)u);
		return u >= k->ulo && u <= k->uhi && u % k->mult == 0 ? OXR_OK
		       : bad(k, "oxr_ctx_params.", num);
	case K_STR:
		s = *(const char **)at(p, k);
		return s && strlen(s) > k->uhi ? bad(k, "oxr_ctx_params.", s) : OXR_OK;
	}
	return OXR_OK;
}

oxr_status_t oxr_ctx_params_read(uint64_t fields, oxr_ctx_params *p)
{
	oxr_status_t st;
	size_t i;

	if (!p)
		return oxr_err(OXR_ERR_INVAL, "oxr_ctx_params_read: p is NULL");
	for (i = 0; i < NKNOBS; i++)
		if ((fields & knobs[i].bit) && (st = from_env(&knobs[i], p)))
			return st;
	p->field_mask = fields;
	return OXR_OK;
}

oxr_status_t oxr_params_resolve(const oxr_ctx_params *over, oxr_ctx_params *out)
{
	uint64_t mask = over ? over->field_mask : 0;
	oxr_status_t st;
	size_t i;

	if (mask & ~OXR_CTX_PARAM_ALL)
		return oxr_err(OXR_ERR_INVAL, "oxr_ctx_params.field_mask: unknown bits %#llx",
			       (unsigned long long)(mask & ~OXR_CTX_PARAM_ALL));
	for (i = 0; i < NKNOBS; i++) {
		const struct knob *k = &knobs[i];

		if (!(mask & k->bit)) {
			st = from_env(k, out);
		} else if (!(st = check(k, over))) {
			memcpy(at(out, k), at(over, k), fsize(k));
			if (k->kind == K_STR && !*(const char **)at(out, k))
				set_default(k, out);
		}
		if (st)
			return st;
	}
	out->field_mask = OXR_CTX_PARAM_ALL;
	return OXR_OK;
}

char *oxr_params_own(oxr_ctx_params *p)
{
	size_t i, n = 1;
	char *block, *w;

	for (i = 0; i < NKNOBS; i++)
		if (knobs[i].kind == K_STR && *(const char **)at(p, &knobs[i]))
			n += strlen(*(const char **)at(p, &knobs[i])) + 1;
	if (!(block = w = malloc(n)))
		return NULL;
	for (i = 0; i < NKNOBS; i++) {
		const char **s = at(p, &knobs[i]);

		if (knobs[i].kind != K_STR || !*s)
			continue;
		strcpy(w, *s);
		*s = w;
		w += strlen(w) + 1;
	}
	return block;
}

oxr_status_t oxr_ctx_modify(oxr_ctx *c, const oxr_ctx_params *p)
{
	oxr_status_t st;
	size_t i;

	if (!c || !p)
		return oxr_err(OXR_ERR_INVAL, "oxr_ctx_modify: NULL argument");
	if (p->field_mask & ~OXR_CTX_PARAM_LIVE)
		return oxr_err(OXR_ERR_INVAL, "oxr_ctx_modify: field_mask %#llx names fields fixed "
			       "at oxr_ctx_create", (unsigned long long)(p->field_mask &
								  ~OXR_CTX_PARAM_LIVE));
	for (i = 0; i < NKNOBS; i++)
		if ((p->field_mask & knobs[i].bit) && (st = check(&knobs[i], p)))
			return st;
	for (i = 0; i < NKNOBS; i++)
		if (p->field_mask & knobs[i].bit)
			memcpy(at(&c->params, &knobs[i]), at(p, &knobs[i]), fsize(&knobs[i]));
	oxr_cmo_limits_from_params(&c->params, &c->limits);
	return OXR_OK;
}

void oxr_cmo_limits_from_params(const oxr_ctx_params *p, oxr_cmo_limits *lim)
{
	lim->max_depth = (uint32_t)p->cmo_max_depth;
	lim->max_object_bytes = p->cmo_max_object_bytes;
	lim->max_total_bytes = p->cmo_max_total_bytes;
	lim->max_objects = p->cmo_max_objects;
	lim->prealloc_bytes = p->cmo_prealloc_bytes;
}

oxr_status_t oxr_cmo_limits_from_env(oxr_cmo_limits *lim)
{
	oxr_ctx_params p;
	oxr_status_t st;

	if ((st = oxr_ctx_params_read(OXR_CTX_PARAM_CMO_LIMITS, &p)))
		return st;
	oxr_cmo_limits_from_params(&p, lim);
	return OXR_OK;
}

int oxr_ctx_param_describe(size_t i, oxr_param_desc *d)
{
	static const char *const kinds[] = { "int", "size", "word", "string" };
	const struct knob *k;

	if (i >= NKNOBS || !d)
		return 0;
	k = &knobs[i];
	d->name = k->name;
	d->field = k->bit;
	d->kind = kinds[k->kind];
	d->def = k->def_text;
	d->def_is_number = k->kind == K_SIZE || (k->kind == K_INT && k->def >= k->lo);
	d->def_value = k->kind == K_SIZE ? k->udef : (uint64_t)k->def;
	d->doc = k->doc;
	return 1;
}

const char *oxr_params_transport_name(int transport)
{
	return transport >= 0 && transport < (int)(sizeof(transports) / sizeof(transports[0])) - 1
		       ? transports[transport]
		       : "auto";
}
