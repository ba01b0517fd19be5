/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap of a whole group for SPMD programs: who am I, how many are we,
 * and an out-of-band allgather + barrier to swap endpoint blobs before any
 * link exists.  One interface, chosen at run time:
 *   - PMIx, when the process was started by mpirun/prterun or srun --mpi=pmix
 *     (PMIX_NAMESPACE and PMIX_RANK set, oxr built with libpmix);
 *   - oxr-run's rendezvous, when started by `oxr-run -n N PROGRAM` (OXR_RUN_ADDR set);
 *   - else a singleton group of one.
 * OXR_BOOT=pmix|run|singleton forces one (an error if it is not available).
 */
#ifndef OXR_BOOT_H
#define OXR_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum oxr_boot_kind {
	OXR_BOOT_SINGLETON = 0,
	OXR_BOOT_RUN = 1,
	OXR_BOOT_PMIX = 2,
};

#define OXR_TOKEN_BYTES 32

typedef struct oxr_boot oxr_boot;

/* Joins this launch's group through the bootstrap chosen as above; *out is
 * the caller's, closed with oxr_boot_close.  Errors: OXR_ERR_UNSUPPORTED
 * (started by mpirun/srun, oxr built without PMIx), OXR_ERR_INVAL (a
 * malformed OXR_BOOT, or a malformed variable of oxr-run's), the
 * rendezvous' failure (refused, timed out: OXR_BOOT_TIMEOUT); oxr_errmsg()
 * says which. */
OXR_API oxr_status_t oxr_boot_open(oxr_boot **out);
/* Leaves the bootstrap and frees b (NULL: nothing).  A group made from it
 * by oxr_group_boot may still look peers up in it: then b lives on until
 * that group is destroyed. */
OXR_API void oxr_boot_close(oxr_boot *b);
/* OXR_BOOT_SINGLETON, OXR_BOOT_RUN or OXR_BOOT_PMIX. */
OXR_API int oxr_boot_kind(const oxr_boot *b);
/* "pmix", "oxr-run" or "singleton" */
OXR_API const char *oxr_boot_name(const oxr_boot *b);
/* This process's rank, 0 to oxr_boot_size() - 1. */
OXR_API int oxr_boot_rank(const oxr_boot *b);
/* How many ranks the launch started. */
OXR_API int oxr_boot_size(const oxr_boot *b);
/* The group's one-time secret, the same on every rank of one launch and new
 * for each launch; links opened by the bootstrap must prove it. */
OXR_API void oxr_boot_token(const oxr_boot *b, uint8_t token[OXR_TOKEN_BYTES]);
/* Everyone contributes len bytes (len must be the same on every rank);
 * all[r * len ...] gets rank r's bytes.  Collective: every rank calls it. */
OXR_API oxr_status_t oxr_boot_allgather(oxr_boot *b, const void *mine, size_t len, void *all);
/* Returns once every rank has called it.  Collective; errors as
 * oxr_boot_allgather's. */
OXR_API oxr_status_t oxr_boot_barrier(oxr_boot *b);

#ifdef __cplusplus
}
#endif
#endif
