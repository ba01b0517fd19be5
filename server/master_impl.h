/* SPDX-License-Identifier: MIT */
/* The insides of the master, shared by server/master*.c. */
#ifndef OXR_MASTER_IMPL_H
#define OXR_MASTER_IMPL_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "oxr/master.h"

struct srv {
	pid_t pid;      /* 0 when a launcher started it (its pid is not ours) */
	int dfd, cfd, order;
	char host[64];  /* where the others reach it (RFC-102 links) */
	int foreign;    /* 1: not an oxr-server (its mathcap, or oxr_master_set_plain) */
	int probed;     /* its mathcap was asked for */
	int32_t serial;
	int32_t mark; /* our serial at the last sync */
	oxr_arena *scratch;
	oxr_decoder *dec;
	uint8_t rbuf[1 << 16]; /* bytes read, not yet decoded: rbuf[roff..rlen) */
	size_t roff, rlen;
};

struct oxr_master {
	int n;
	pid_t launcher; /* oxr_master_launch_with: the launcher's process */
	struct srv *s;
	int *port;      /* each server's RFC-102 listening port (oxr_master_group) */
	int plain;
	uint8_t token[32];
	char path[PATH_MAX];
	char **paths;   /* oxr_master_launch_each: server i's binary (NULL: path) */
	char *unix_dir; /* oxr_master_set_unix: the RFC-102 links' socket paths go here */
	int unix_own;   /* the master made unix_dir: removed with the master */
};

/* The byte-order exchange on a server's two channels, and its decoder. */
oxr_status_t oxr_master_attach(struct srv *s, const char *who);
/* A master of n servers, none started yet. */
oxr_status_t oxr_master_alloc(int n, const char *path, oxr_master **out);

#endif
