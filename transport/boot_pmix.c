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
 * Each allgather uses a fresh key, "oxr.ag.<seq>".  A key cannot be deleted
 * and a re-Put replaces it, and a fast rank may Put and Commit its next blob
 * while a slow one is still reading the last round; local peers' committed
 * data is visible before the next fence, so with one key the slow rank could
 * read the wrong round.  Ranks make the same calls in the same order, so seq
 * names the same round everywhere.
 */
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

struct boot_pmix {
	pmix_proc_t me;
	uint64_t seq; /* allgathers made so far: names the next key */
};

/* The oxr status for a failed PMIx call, with the call and PMIx's reason. */
static oxr_status_t pmix_fail(pmix_status_t rc, const char *what)
{
	oxr_status_t status = OXR_ERR_IO;

	if (rc == PMIX_ERR_TIMEOUT)
		status = OXR_ERR_TIMEOUT;
	else if (rc == PMIX_ERR_NOMEM)
		status = OXR_ERR_NOMEM;
	return oxr_err(status, "%s failed: %s (%d)", what, PMIx_Error_string(rc), (int)rc);
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
	rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS)
		return pmix_fail(rc, "PMIx_Commit");
	return OXR_OK;
}

/* Copies rank's value of key (exactly len bytes, else OXR_ERR_PROTO) to dst. */
static oxr_status_t get_bytes(struct boot_pmix *p, int rank, const char *key, void *dst,
			      size_t len)
{
	pmix_proc_t peer;
	pmix_info_t info;
	pmix_value_t *val = NULL;
	pmix_status_t rc;
	oxr_status_t status = OXR_OK;
	bool local_only = true;
	char what[64 + PMIX_MAX_KEYLEN];

	/* After a collecting fence every value is already here; asking the
	 * server for a missing one would wait on a direct modex instead of
	 * failing. */
	PMIX_PROC_LOAD(&peer, p->me.nspace, (pmix_rank_t)rank);
	PMIX_INFO_CONSTRUCT(&info);
	PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &local_only, PMIX_BOOL);
	rc = PMIx_Get(&peer, key, &info, 1, &val);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		snprintf(what, sizeof(what), "PMIx_Get(rank %d, %s)", rank, key);
		return pmix_fail(rc, what);
	}
	if (val == NULL || val->type != PMIX_BYTE_OBJECT)
		status = oxr_err(OXR_ERR_PROTO, "PMIx key %s of rank %d: type %d, want bytes",
				 key, rank, val ? (int)val->type : -1);
	else if (val->data.bo.size != len)
		status = oxr_err(OXR_ERR_PROTO,
				 "PMIx key %s of rank %d: %zu bytes, want %zu (len differs "
				 "between ranks?)", key, rank, val->data.bo.size, len);
	else if (len)
		memcpy(dst, val->data.bo.bytes, len);
	if (val)
		PMIX_VALUE_RELEASE(val);
	return status;
}

static oxr_status_t pmix_allgather(oxr_boot *b, const void *mine, size_t len, void *all)
{
	struct boot_pmix *p = b->impl;
	char key[PMIX_MAX_KEYLEN + 1];
	oxr_status_t status;
	int r;

	snprintf(key, sizeof(key), "oxr.ag.%" PRIu64, p->seq++);
	status = put_bytes(key, mine, len);
	if (status)
		return status;
	status = fence(p, true);
	if (status)
		return status;
	for (r = 0; r < b->size; r++) {
		if (r == b->rank) {
			if (len)
				memcpy((uint8_t *)all + (size_t)r * len, mine, len);
			continue;
		}
		status = get_bytes(p, r, key, (uint8_t *)all + (size_t)r * len, len);
		if (status)
			return status;
	}
	return OXR_OK;
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
		if (status)
			return status;
	}
	status = fence(p, true);
	if (status)
		return status;
	if (b->rank == 0)
		return OXR_OK;
	return get_bytes(p, 0, TOKEN_KEY, b->token, OXR_TOKEN_BYTES);
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
