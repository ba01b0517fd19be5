/* SPDX-License-Identifier: MIT */
/* What a bootstrap implementation provides to boot.c (not installed). */
#ifndef OXR_BOOT_IMPL_H
#define OXR_BOOT_IMPL_H

#include "oxr/boot.h"

struct oxr_boot_ops {
	const char *name;
	oxr_status_t (*allgather)(oxr_boot *b, const void *mine, size_t len, void *all);
	oxr_status_t (*barrier)(oxr_boot *b);
	void (*close)(oxr_boot *b);
	/* optional, a store each rank reads one peer from (PMIx's direct
	 * modex): publish puts this rank's bytes and returns once every rank
	 * has (*seq names the round); lookup reads n ranks' (1 to
	 * OXR_BOOT_LOOKUP_MAX, out: n x len bytes in their order), when needed */
	oxr_status_t (*publish)(oxr_boot *b, const void *mine, size_t len, uint64_t *seq);
	oxr_status_t (*lookup)(oxr_boot *b, const int *ranks, int n, uint64_t seq, void *out,
			       size_t len);
	/* 1: a lookup of n ranks costs one round trip to a central store
	 * (oxr-run), so a rank fetches its likely partners in one go at boot */
	int batch;
};

#define OXR_BOOT_LOOKUP_MAX 64

struct oxr_boot {
	const struct oxr_boot_ops *ops;
	int kind, rank, size;
	uint8_t token[OXR_TOKEN_BYTES];
	void *impl; /* the implementation's own state */
	int refs;   /* groups that still look endpoints up in it */
	int closed; /* oxr_boot_close came while refs > 0: the last release closes */
};

/* boot.c, for groups that look their peers up on first use: whether b can,
 * its publish and lookup, and a reference that keeps b open (an
 * oxr_boot_close before the group ends then waits for the release). */
int oxr_boot_can_lookup(const oxr_boot *b);
oxr_status_t oxr_boot_publish(oxr_boot *b, const void *mine, size_t len, uint64_t *seq);
oxr_status_t oxr_boot_lookup(oxr_boot *b, int rank, uint64_t seq, void *out, size_t len);
/* n ranks' bytes at once where that is one round trip (ops->batch), else an
 * error: the caller then looks up each rank when it needs it. */
oxr_status_t oxr_boot_lookup_batch(oxr_boot *b, const int *ranks, int n, uint64_t seq, void *out,
				   size_t len);
void oxr_boot_hold(oxr_boot *b);
void oxr_boot_release(oxr_boot *b);

/* Each fills b (ops, rank, size, token, impl) or returns an error saying why
 * it cannot run here.  boot.c chooses which to call. */
oxr_status_t oxr_boot_run_open(oxr_boot *b);  /* boot_run.c */
oxr_status_t oxr_boot_pmix_open(oxr_boot *b); /* boot_pmix.c; OXR_ERR_UNSUPPORTED without PMIx */
#endif
