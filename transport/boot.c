/* SPDX-License-Identifier: MIT */
/*
 * oxr_boot_open chooses the bootstrap and boot.c dispatches to it; the
 * singleton (a group of one, for a program started without a launcher)
 * lives here too, being too small for a file of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "boot_impl.h"
#include "oxr/params.h"
#include "oxr_internal.h"

static oxr_status_t single_allgather(oxr_boot *b, const void *mine, size_t len, void *all)
{
	if (len)
		memmove(all, mine, len);
	return OXR_OK;
}

static oxr_status_t single_barrier(oxr_boot *b)
{
	return OXR_OK;
}

static void single_close(oxr_boot *b)
{
}

static const struct oxr_boot_ops single_ops = {
	.name = "singleton",
	.allgather = single_allgather,
	.barrier = single_barrier,
	.close = single_close,
};

static oxr_status_t single_open(oxr_boot *b)
{
	size_t got = 0;

	/* A fresh secret even alone: whatever links it guards must not be
	 * guessable by another process of the same user. */
	while (got < OXR_TOKEN_BYTES) {
		ssize_t n = getrandom(b->token + got, OXR_TOKEN_BYTES - got, 0);

		if (n < 0 && errno != EINTR)
			return oxr_err(OXR_ERR_IO, "singleton bootstrap: getrandom: %s",
				       strerror(errno));
		if (n > 0)
			got += (size_t)n;
	}
	b->ops = &single_ops;
	b->rank = 0;
	b->size = 1;
	return OXR_OK;
}

static oxr_status_t pmix_open(oxr_boot *b)
{
#ifdef OXR_HAVE_PMIX
	return oxr_boot_pmix_open(b);
#else
	return oxr_err(OXR_ERR_UNSUPPORTED, "oxr was built without PMIx (install libpmix-dev and "
		       "rebuild), so it cannot join this mpirun/srun job; OXR_BOOT=singleton "
		       "runs it alone");
#endif
}

static int is_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

/* OXR_BOOT decides if set; else the launcher's variables do. */
static oxr_status_t choose(int *kind)
{
	oxr_ctx_params p;
	oxr_status_t st;

	if ((st = oxr_ctx_params_read(OXR_CTX_PARAM_BOOT, &p)))
		return st;
	if (p.boot >= 0) {
		*kind = p.boot;
	} else if (is_set("PMIX_NAMESPACE") && is_set("PMIX_RANK")) {
		*kind = OXR_BOOT_PMIX;
	} else if (is_set("OXR_RUN_ADDR")) {
		*kind = OXR_BOOT_RUN;
	} else {
		*kind = OXR_BOOT_SINGLETON;
	}
	return OXR_OK;
}

oxr_status_t oxr_boot_open(oxr_boot **out)
{
	oxr_status_t st;
	oxr_boot *b;
	int kind = OXR_BOOT_SINGLETON;

	if (!out)
		return oxr_err(OXR_ERR_INVAL, "oxr_boot_open: out is NULL");
	*out = NULL;
	st = choose(&kind);
	if (st)
		return st;
	b = calloc(1, sizeof(*b));
	if (!b)
		return oxr_err(OXR_ERR_NOMEM, "oxr_boot_open: out of memory");
	b->kind = kind;
	if (kind == OXR_BOOT_PMIX)
		st = pmix_open(b);
	else if (kind == OXR_BOOT_RUN)
		st = oxr_boot_run_open(b);
	else
		st = single_open(b);
	if (st) {
		free(b);
		return st;
	}
	*out = b;
	return OXR_OK;
}

void oxr_boot_close(oxr_boot *b)
{
	if (!b)
		return;
	if (b->refs > 0) { /* a group still looks peers up in it */
		b->closed = 1;
		return;
	}
	b->ops->close(b);
	explicit_bzero(b->token, sizeof(b->token));
	free(b);
}

int oxr_boot_kind(const oxr_boot *b)
{
	return b ? b->kind : -1;
}

const char *oxr_boot_name(const oxr_boot *b)
{
	return b ? b->ops->name : "none";
}

int oxr_boot_rank(const oxr_boot *b)
{
	return b ? b->rank : -1;
}

int oxr_boot_size(const oxr_boot *b)
{
	return b ? b->size : -1;
}

void oxr_boot_token(const oxr_boot *b, uint8_t token[OXR_TOKEN_BYTES])
{
	if (!token)
		return;
	if (b)
		memcpy(token, b->token, OXR_TOKEN_BYTES);
	else
		memset(token, 0, OXR_TOKEN_BYTES);
}

oxr_status_t oxr_boot_allgather(oxr_boot *b, const void *mine, size_t len, void *all)
{
	if (!b)
		return oxr_err(OXR_ERR_INVAL, "oxr_boot_allgather: b is NULL");
	if (len && (!mine || !all))
		return oxr_err(OXR_ERR_INVAL, "oxr_boot_allgather: %s is NULL with len %zu",
			       mine ? "all" : "mine", len);
	if (len > SIZE_MAX / (size_t)b->size)
		return oxr_err(OXR_ERR_LIMIT, "oxr_boot_allgather: %zu bytes from each of %d "
			       "ranks do not fit in memory", len, b->size);
	return b->ops->allgather(b, mine, len, all);
}

oxr_status_t oxr_boot_barrier(oxr_boot *b)
{
	if (!b)
		return oxr_err(OXR_ERR_INVAL, "oxr_boot_barrier: b is NULL");
	return b->ops->barrier(b);
}

int oxr_boot_can_lookup(const oxr_boot *b)
{
	return b && b->ops->publish && b->ops->lookup;
}

oxr_status_t oxr_boot_publish(oxr_boot *b, const void *mine, size_t len, uint64_t *seq)
{
	return b->ops->publish(b, mine, len, seq);
}

oxr_status_t oxr_boot_lookup(oxr_boot *b, int rank, uint64_t seq, void *out, size_t len)
{
	if (rank < 0 || rank >= b->size)
		return oxr_err(OXR_ERR_INVAL, "bootstrap lookup: rank %d of %d", rank, b->size);
	return b->ops->lookup(b, &rank, 1, seq, out, len);
}

oxr_status_t oxr_boot_lookup_batch(oxr_boot *b, const int *ranks, int n, uint64_t seq, void *out,
				   size_t len)
{
	int i;

	if (!b->ops->batch)
		return oxr_err(OXR_ERR_UNSUPPORTED, "bootstrap %s: no batched lookup", b->ops->name);
	if (n < 1 || n > OXR_BOOT_LOOKUP_MAX)
		return oxr_err(OXR_ERR_INVAL, "bootstrap lookup: %d ranks (1 to %d)", n,
			       OXR_BOOT_LOOKUP_MAX);
	for (i = 0; i < n; i++)
		if (ranks[i] < 0 || ranks[i] >= b->size)
			return oxr_err(OXR_ERR_INVAL, "bootstrap lookup: rank %d of %d", ranks[i],
				       b->size);
	return b->ops->lookup(b, ranks, n, seq, out, len);
}

void oxr_boot_hold(oxr_boot *b)
{
	b->refs++;
}

void oxr_boot_release(oxr_boot *b)
{
	if (b && --b->refs == 0 && b->closed) {
		b->closed = 0;
		oxr_boot_close(b);
	}
}
