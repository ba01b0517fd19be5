/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap over PMIx, for processes started by mpirun/prterun or
 * srun --mpi=pmix.  The launcher's PMIx server already knows the group, so
 * PMIx gives us all of it without a socket of our own: PMIx_Init names the
 * process (namespace + rank), PMIX_JOB_SIZE on the namespace's wildcard rank
 * is the size, and Put + Commit + Fence(PMIX_COLLECT_DATA) + Get is an
 * allgather through the launcher's key-value store.  PMIx has no secret per
 * launch (the namespace is guessable), so rank 0 draws the token and hands it
 * out the same way.
 *
 * Each allgather uses fresh keys, "oxr.ag.<seq>.<chunk>".  A key cannot be
 * deleted and a re-Put replaces it, and a fast rank may Put and Commit its
 * next blob while a slow one is still reading the last round: a local peer's
 * re-Put is visible before the next fence (libpmix 4.2 under mpirun), so with
 * one key the slow rank could read the wrong round.  Ranks make the same
 * calls in the same order, so seq names the same round everywhere.
 *
 * Blobs go in chunks of at most 1 MiB because the server's shared-memory
 * store (gds ds21) cannot hold one value above 4 MiB and then aborts the
 * launcher itself.  Chunk 0 starts with the blob's length, so ranks that
 * disagree on len fail with a clear error instead of waiting for a chunk
 * that does not exist.  PMIx keeps every key until the job ends: the
 * allgathers are for endpoint blobs, not bulk data.
 *
 * libpmix is loaded (dlopen) when a PMIx launcher started the process, not
 * linked: it and what it pulls in (libevent, munge) cost every exec of an
 * oxr program 1.3-1.7 ms here (docs/performance.md), and ranks that
 * oxr-run starts, or oxr-server under asir, never call it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <pmix.h>

#include "boot_impl.h"
#include "oxr_internal.h"

#define TOKEN_KEY "oxr.token"

/* Where CMake found libpmix (its soname in that folder); else the
 * loader's search path */
#ifndef OXR_PMIX_LIBRARY
#define OXR_PMIX_LIBRARY "libpmix.so.2"
#endif

/* The calls this file makes, pmix.h's macros' included (PMIX_INFO_LOAD,
 * PMIX_VALUE_RELEASE): after the #defines below every use goes through
 * here. */
static struct {
	int loaded;
	__typeof__(PMIx_Init) *init;
	__typeof__(PMIx_Finalize) *finalize;
	__typeof__(PMIx_Put) *put;
	__typeof__(PMIx_Commit) *commit;
	__typeof__(PMIx_Fence) *fence;
	__typeof__(PMIx_Get) *get;
	__typeof__(PMIx_Error_string) *error_string;
	__typeof__(PMIx_Info_load) *info_load;
	__typeof__(PMIx_Value_destruct) *value_destruct;
} pmx;

static oxr_status_t load_pmix(void)
{
#define CALL(f, slot) { #f, (void **)&pmx.slot }
	static const struct { const char *name; void **slot; } calls[] = {
		CALL(PMIx_Init, init), CALL(PMIx_Finalize, finalize), CALL(PMIx_Put, put),
		CALL(PMIx_Commit, commit), CALL(PMIx_Fence, fence), CALL(PMIx_Get, get),
		CALL(PMIx_Error_string, error_string), CALL(PMIx_Info_load, info_load),
		CALL(PMIx_Value_destruct, value_destruct),
	};
#undef CALL
	const char *path = OXR_PMIX_LIBRARY;
	void *h;
	size_t i;

	if (pmx.loaded)
		return OXR_OK;
	/* GLOBAL, as a linked library would be: PMIx's own plugins bind to it */
	h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h && strchr(path, '/'))
		h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return oxr_err(OXR_ERR_UNSUPPORTED, "PMIx: started by a PMIx launcher "
			       "(PMIX_NAMESPACE is set) but libpmix cannot be loaded: %s; install "
			       "the PMIx library oxr was built with (Debian: libpmix2), or start "
			       "the program with oxr-run", dlerror());
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!(*calls[i].slot = dlsym(h, calls[i].name)))
			/* h stays open: PMIx may hold threads in it */
			return oxr_err(OXR_ERR_UNSUPPORTED, "PMIx: %s has no %s (a PMIx older "
				       "than the 4.x oxr was built with?)", path, calls[i].name);
	pmx.loaded = 1;
	return OXR_OK;
}

#define PMIx_Init pmx.init
#define PMIx_Finalize pmx.finalize
#define PMIx_Put pmx.put
#define PMIx_Commit pmx.commit
#define PMIx_Fence pmx.fence
#define PMIx_Get pmx.get
#define PMIx_Error_string pmx.error_string
#define PMIx_Info_load pmx.info_load
#define PMIx_Value_destruct pmx.value_destruct

struct boot_pmix {
	pmix_proc_t me;
	uint64_t seq; /* allgathers made so far: names the next key */
};

/* The oxr status for a failed PMIx call, with the call and PMIx's reason. */
static oxr_status_t pmix_fail(pmix_status_t rc, const char *what)
{
	oxr_status_t status = OXR_ERR_IO;
	const char *hint = "";

	if (rc == PMIX_ERR_TIMEOUT) {
		status = OXR_ERR_TIMEOUT;
	} else if (rc == PMIX_ERR_NOMEM) {
		status = OXR_ERR_NOMEM;
	} else if (rc == PMIX_ERR_PARTIAL_SUCCESS) {
		/* What a fence says when a rank of the job already ended. */
		status = OXR_ERR_PEER;
		hint = ": a rank left the job without joining";
	} else if (rc == PMIX_ERR_LOST_CONNECTION || rc == PMIX_ERR_UNREACH) {
		hint = ": the launcher's PMIx server is gone";
	}
	return oxr_err(status, "%s failed: %s (%d)%s", what, PMIx_Error_string(rc), (int)rc,
		       hint);
}

/* Fence over the whole namespace, collecting the Put data when collect. */
static oxr_status_t fence(struct boot_pmix *p, bool collect)
{
	pmix_proc_t all;
	pmix_info_t info;
	pmix_status_t rc;

	PMIX_PROC_LOAD(&all, p->me.nspace, PMIX_RANK_WILDCARD);
	PMIX_INFO_CONSTRUCT(&info);
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	rc = PMIx_Fence(&all, 1, &info, 1);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS)
		return pmix_fail(rc, "PMIx_Fence");
	return OXR_OK;
}

/* Puts bytes under key; the caller commits. */
static oxr_status_t put_bytes(const char *key, const void *bytes, size_t len)
{
	pmix_value_t val;
	pmix_status_t rc;
	char what[64 + PMIX_MAX_KEYLEN];

	/* PMIx_Put copies the value, so it may point at the caller's bytes. */
	PMIX_VALUE_CONSTRUCT(&val);
	val.type = PMIX_BYTE_OBJECT;
	val.data.bo.bytes = (char *)bytes;
	val.data.bo.size = len;
	rc = PMIx_Put(PMIX_GLOBAL, key, &val);
	if (rc != PMIX_SUCCESS) {
		snprintf(what, sizeof(what), "PMIx_Put(%s)", key);
		return pmix_fail(rc, what);
	}
	return OXR_OK;
}

static oxr_status_t commit(void)
{
	pmix_status_t rc = PMIx_Commit();

	if (rc != PMIX_SUCCESS)
		return pmix_fail(rc, "PMIx_Commit");
	return OXR_OK;
}

/*
 * Rank's bytes under key, after a collecting fence; the caller releases
 * *out with PMIX_VALUE_RELEASE.  A key that is missing comes back as
 * PMIX_ERR_TIMEOUT after the server's direct-modex wait (2 s here), not as a
 * hang.  (PMIX_OPTIONAL would fail faster but finds nothing at all when the
 * server runs gds=hash.)
 */
static oxr_status_t get_bytes(struct boot_pmix *p, int rank, const char *key,
			      pmix_value_t **out)
{
	pmix_proc_t peer;
	pmix_value_t *val = NULL;
	pmix_status_t rc;
	char what[64 + PMIX_MAX_KEYLEN];

	PMIX_PROC_LOAD(&peer, p->me.nspace, (pmix_rank_t)rank);
	rc = PMIx_Get(&peer, key, NULL, 0, &val);
	if (rc != PMIX_SUCCESS) {
		snprintf(what, sizeof(what), "PMIx_Get(rank %d, %s)", rank, key);
		return pmix_fail(rc, what);
	}
	if (val == NULL || val->type != PMIX_BYTE_OBJECT) {
		oxr_status_t status = oxr_err(OXR_ERR_PROTO,
					      "PMIx key %s of rank %d: type %d, want bytes",
					      key, rank, val ? (int)val->type : -1);
		if (val)
			PMIX_VALUE_RELEASE(val);
		return status;
	}
	*out = val;
	return OXR_OK;
}

#define CHUNK_BYTES ((size_t)1 << 20)
#define LEN_BYTES 8 /* chunk 0's prefix: the blob's length, little-endian */

/* Bytes of blob in chunk i (chunk 0 also has the prefix). */
static size_t chunk_len(size_t len, size_t i)
{
	size_t off = i * CHUNK_BYTES;

	return len - off < CHUNK_BYTES ? len - off : CHUNK_BYTES;
}

/* Chunks of a blob of len bytes: at least one, to carry the length. */
static size_t chunk_count(size_t len)
{
	return len ? (len + CHUNK_BYTES - 1) / CHUNK_BYTES : 1;
}

static void ag_key(char *key, size_t size, uint64_t seq, size_t i)
{
	snprintf(key, size, "oxr.ag.%" PRIu64 ".%zu", seq, i);
}

static oxr_status_t put_blob(uint64_t seq, const uint8_t *mine, size_t len)
{
	char key[PMIX_MAX_KEYLEN + 1];
	size_t n = chunk_count(len), first = chunk_len(len, 0), i;
	uint8_t *c0 = malloc(LEN_BYTES + first);
	oxr_status_t status;

	if (!c0)
		return oxr_err(OXR_ERR_NOMEM, "PMIx allgather: %zu bytes", LEN_BYTES + first);
	oxr_store64(c0, len, 1);
	if (first)
		memcpy(c0 + LEN_BYTES, mine, first);
	ag_key(key, sizeof(key), seq, 0);
	status = put_bytes(key, c0, LEN_BYTES + first);
	free(c0);
	for (i = 1; !status && i < n; i++) {
		ag_key(key, sizeof(key), seq, i);
		status = put_bytes(key, mine + i * CHUNK_BYTES, chunk_len(len, i));
	}
	return status;
}

/* Checks chunk 0 of rank's blob: its length prefix must say len. */
static oxr_status_t check_len(const pmix_value_t *val, int rank, int me, size_t len)
{
	uint64_t theirs;

	if (val->data.bo.size < LEN_BYTES)
		return oxr_err(OXR_ERR_PROTO, "PMIx allgather: chunk 0 of rank %d has %zu "
			       "bytes, no length", rank, val->data.bo.size);
	theirs = oxr_load64(val->data.bo.bytes, 1);
	if (theirs != len)
		return oxr_err(OXR_ERR_PROTO, "PMIx allgather: rank %d gave %" PRIu64 " bytes, "
			       "rank %d %zu (len must be the same on every rank)", rank, theirs,
			       me, len);
	return OXR_OK;
}

/* Copies rank's blob of round seq to dst: exactly len bytes, else OXR_ERR_PROTO. */
static oxr_status_t get_blob(oxr_boot *b, int rank, uint64_t seq, uint8_t *dst, size_t len)
{
	char key[PMIX_MAX_KEYLEN + 1];
	size_t n = chunk_count(len), i, skip, want;
	oxr_status_t status;
	pmix_value_t *val;

	for (i = 0; i < n; i++) {
		ag_key(key, sizeof(key), seq, i);
		status = get_bytes(b->impl, rank, key, &val);
		if (status)
			return status;
		skip = i ? 0 : LEN_BYTES;
		want = chunk_len(len, i);
		if (i == 0)
			status = check_len(val, rank, b->rank, len);
		if (!status && val->data.bo.size != skip + want)
			status = oxr_err(OXR_ERR_PROTO, "PMIx key %s of rank %d: %zu bytes, "
					 "want %zu", key, rank, val->data.bo.size, skip + want);
		if (!status && want)
			memcpy(dst + i * CHUNK_BYTES, val->data.bo.bytes + skip, want);
		PMIX_VALUE_RELEASE(val);
		if (status)
			return status;
	}
	return OXR_OK;
}

static oxr_status_t pmix_allgather(oxr_boot *b, const void *mine, size_t len, void *all)
{
	struct boot_pmix *p = b->impl;
	uint64_t seq = p->seq++;
	oxr_status_t status;
	int r;

	status = put_blob(seq, mine, len);
	if (!status)
		status = commit();
	if (!status)
		status = fence(p, true);
	for (r = 0; !status && r < b->size; r++) {
		uint8_t *dst = (uint8_t *)all + (size_t)r * len;

		if (r != b->rank)
			status = get_blob(b, r, seq, dst, len);
		else if (len)
			memcpy(dst, mine, len);
	}
	return status;
}

/* Direct modex: each rank puts its blob and a fence without data makes
 * sure all have; a peer's blob is fetched by PMIx_Get when a link to it
 * opens, so a rank reads the endpoints it uses, not all P. */
static oxr_status_t pmix_publish(oxr_boot *b, const void *mine, size_t len, uint64_t *seq)
{
	struct boot_pmix *p = b->impl;
	oxr_status_t status;

	*seq = p->seq++;
	status = put_blob(*seq, mine, len);
	if (!status)
		status = commit();
	return status ? status : fence(p, false);
}

/* One PMIx_Get a rank: each may go to that rank's server (direct modex). */
static oxr_status_t pmix_lookup(oxr_boot *b, const int *ranks, int n, uint64_t seq, void *out,
				size_t len)
{
	oxr_status_t st = OXR_OK;
	int i;

	for (i = 0; i < n && st == OXR_OK; i++)
		st = get_blob(b, ranks[i], seq, (uint8_t *)out + (size_t)i * len, len);
	return st;
}

static oxr_status_t pmix_barrier(oxr_boot *b)
{
	return fence(b->impl, false);
}

static void pmix_close(oxr_boot *b)
{
	PMIx_Finalize(NULL, 0);
	free(b->impl);
	b->impl = NULL;
}

static const struct oxr_boot_ops pmix_ops = {
	.name = "pmix",
	.allgather = pmix_allgather,
	.barrier = pmix_barrier,
	.close = pmix_close,
	.publish = pmix_publish,
	.lookup = pmix_lookup,
};

static oxr_status_t job_size(struct boot_pmix *p, int *size)
{
	pmix_proc_t job;
	pmix_value_t *val = NULL;
	pmix_status_t rc;
	oxr_status_t status = OXR_OK;

	/* Job-level facts live on the namespace's wildcard rank. */
	PMIX_PROC_LOAD(&job, p->me.nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &val);
	if (rc != PMIX_SUCCESS)
		return pmix_fail(rc, "PMIx_Get(PMIX_JOB_SIZE)");
	if (val == NULL || val->type != PMIX_UINT32)
		status = oxr_err(OXR_ERR_PROTO, "PMIX_JOB_SIZE has type %d, want uint32",
				 val ? (int)val->type : -1);
	else if (val->data.uint32 == 0 || val->data.uint32 > INT32_MAX)
		status = oxr_err(OXR_ERR_PROTO, "PMIX_JOB_SIZE is %" PRIu32,
				 val->data.uint32);
	else
		*size = (int)val->data.uint32;
	if (val)
		PMIX_VALUE_RELEASE(val);
	return status;
}

/* Rank 0 draws the launch's token; everyone else reads it from rank 0. */
static oxr_status_t share_token(oxr_boot *b)
{
	struct boot_pmix *p = b->impl;
	pmix_value_t *val;
	oxr_status_t status;
	size_t got = 0;

	if (b->rank == 0) {
		while (got < OXR_TOKEN_BYTES) {
			ssize_t n = getrandom(b->token + got, OXR_TOKEN_BYTES - got, 0);

			if (n < 0 && errno != EINTR)
				return oxr_err(OXR_ERR_IO, "getrandom for the group token: %s",
					       strerror(errno));
			if (n > 0)
				got += (size_t)n;
		}
		status = put_bytes(TOKEN_KEY, b->token, OXR_TOKEN_BYTES);
		if (!status)
			status = commit();
		if (status)
			return status;
	}
	status = fence(p, true);
	if (status || b->rank == 0)
		return status;
	status = get_bytes(p, 0, TOKEN_KEY, &val);
	if (status)
		return status;
	if (val->data.bo.size != OXR_TOKEN_BYTES)
		status = oxr_err(OXR_ERR_PROTO, "PMIx key %s of rank 0: %zu bytes, want %d",
				 TOKEN_KEY, val->data.bo.size, OXR_TOKEN_BYTES);
	else
		memcpy(b->token, val->data.bo.bytes, OXR_TOKEN_BYTES);
	PMIX_VALUE_RELEASE(val);
	return status;
}

oxr_status_t oxr_boot_pmix_open(oxr_boot *b)
{
	struct boot_pmix *p;
	pmix_status_t rc;
	oxr_status_t status;
	int size = 0;

	/* Without a launcher PMIx 4 sets up a singleton, starts its progress
	 * thread and then reports UNREACH: nothing to gain, so do not start it. */
	if (!getenv("PMIX_NAMESPACE"))
		return oxr_err(OXR_ERR_UNSUPPORTED,
			       "PMIx: not started by a PMIx launcher (no PMIX_NAMESPACE in the "
			       "environment); start it with mpirun, prterun or srun --mpi=pmix");
	if ((status = load_pmix()))
		return status;
	p = calloc(1, sizeof(*p));
	if (!p)
		return oxr_err(OXR_ERR_NOMEM, "PMIx bootstrap state");
	rc = PMIx_Init(&p->me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		/* No PMIx_Finalize: after a failed connect it crashes (libpmix
		 * 4.2), so the half-initialised library and its thread stay. */
		free(p);
		return oxr_err(OXR_ERR_IO, "PMIx_Init failed: %s (%d): PMIX_NAMESPACE is set "
			       "but its server cannot be reached (launcher gone, or a stale "
			       "environment?)", PMIx_Error_string(rc), (int)rc);
	}
	b->impl = p;
	status = job_size(p, &size);
	if (status)
		goto err;
	if (p->me.rank >= (pmix_rank_t)size) {
		status = oxr_err(OXR_ERR_PROTO, "PMIx rank %" PRIu32 " outside job size %d",
				 p->me.rank, size);
		goto err;
	}
	b->ops = &pmix_ops;
	b->kind = OXR_BOOT_PMIX;
	b->rank = (int)p->me.rank;
	b->size = size;
	status = share_token(b);
	if (status)
		goto err;
	return OXR_OK;
err:
	PMIx_Finalize(NULL, 0);
	free(p);
	b->impl = NULL;
	b->ops = NULL;
	return status;
}
