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
};

struct oxr_boot {
	const struct oxr_boot_ops *ops;
	int kind, rank, size;
	uint8_t token[OXR_TOKEN_BYTES];
	void *impl; /* the implementation's own state */
};

/* Each fills b (ops, rank, size, token, impl) or returns an error saying why
 * it cannot run here.  boot.c chooses which to call. */
oxr_status_t oxr_boot_run_open(oxr_boot *b);  /* boot_run.c */
oxr_status_t oxr_boot_pmix_open(oxr_boot *b); /* boot_pmix.c; OXR_ERR_UNSUPPORTED without PMIx */
#endif
