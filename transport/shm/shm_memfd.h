/* SPDX-License-Identifier: MIT */
/*
 * Sealed memfds, the one way shm shares memory: made by their owner, sized
 * and sealed before any peer sees them, opened by a peer of the same user
 * through /proc/<pid>/fd/<fd> (shm_ring.c says why).
 */
#ifndef OXR_SHM_MEMFD_H
#define OXR_SHM_MEMFD_H

#include <stddef.h>
#include <sys/types.h>

#include "oxr/status.h"

#define OXR_SHM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* A new memfd called name of len bytes, sealed. */
oxr_status_t oxr_shm_memfd_new(const char *name, size_t len, int *fd);
/* Opens the memfd process pid holds as fd, checked to be sealed and of len
 * bytes (len 0: any size, *got says which); what names it in errors. */
oxr_status_t oxr_shm_memfd_open(pid_t pid, int fd, size_t len, const char *what, int *out,
				size_t *got);
/* Maps fd shared over len bytes at at (NULL: anywhere), never inherited by
 * a fork; MAP_FAILED as mmap. */
void *oxr_shm_map(void *at, size_t len, int fd);

#endif
