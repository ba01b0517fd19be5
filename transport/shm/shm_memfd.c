/* SPDX-License-Identifier: MIT */
/*
 * Sealed memfds for rings, receive FIFOs and window memory (shm_memfd.h).
 * Sealing the size before a peer maps the file means the peer cannot
 * truncate it under our loads (a SIGBUS); a memfd has no name in /dev/shm,
 * so a rank killed by -9 leaves nothing behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "shm_memfd.h"

oxr_status_t oxr_shm_memfd_new(const char *name, size_t len, int *fd)
{
	int f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	*fd = -1;
	if (f < 0)
		return oxr_err(OXR_ERR_IO, "shm: memfd_create: %s", strerror(errno));
	if (ftruncate(f, (off_t)len) || fcntl(f, F_ADD_SEALS, OXR_SHM_SEALS)) {
		int err = errno;
		close(f);
		return oxr_err(OXR_ERR_NOMEM, "shm: sizing and sealing %zu bytes of %s: %s", len,
			       name, strerror(err));
	}
	*fd = f;
	return OXR_OK;
}

oxr_status_t oxr_shm_memfd_open(pid_t pid, int fd, size_t len, const char *what, int *out,
				size_t *got)
{
	char path[64];
	struct stat sb;
	int f, seals;

	*out = -1;
	snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)pid, fd);
	if ((f = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return oxr_err(OXR_ERR_IO, "shm: opening the peer's %s %s: %s (ranks in other "
			       "pid namespaces or under other users cannot share memory; set "
			       "OXR_HOST_ID apart for them, or OXR_SHM=0)", what, path,
			       strerror(errno));
	seals = fcntl(f, F_GET_SEALS);
	if (fstat(f, &sb) || sb.st_size <= 0 || (len && (uint64_t)sb.st_size != len) ||
	    seals < 0 || (seals & OXR_SHM_SEALS) != OXR_SHM_SEALS) {
		close(f);
		return oxr_err(OXR_ERR_PROTO, "shm: %s is not the sealed %s the peer offered", path,
			       what);
	}
	if (got)
		*got = (size_t)sb.st_size;
	*out = f;
	return OXR_OK;
}

void *oxr_shm_map(void *at, size_t len, int fd)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);

	if (p != MAP_FAILED)
		(void)madvise(p, len, MADV_DONTFORK);
	return p;
}
