/* SPDX-License-Identifier: MIT */
/*
 * The oxr-run rendezvous wire format, for a launcher that serves it as
 * oxr-run does (tools/oxr_run.c); the ranks' side is oxr_boot_open, and
 * the protocol is described at the top of transport/boot_run.c.  Integers
 * are little-endian, fixed width.
 */
#ifndef OXR_BOOT_RUN_H
#define OXR_BOOT_RUN_H

#define OXR_RUN_VERSION 2               /* 2: publish and lookup; oxr-run takes 1 too */
#define OXR_RUN_VERSION_MIN 1           /* the oldest hello oxr-run accepts */
#define OXR_RUN_HELLO_BYTES 44          /* "OXRB", u32 version, u32 rank, token */
#define OXR_RUN_HDR_BYTES 16            /* u32 op or status, u32 seq, u64 len */
#define OXR_RUN_OP_ALLGATHER 1
#define OXR_RUN_OP_PUBLISH 2            /* a round that stores the blobs (version 2) */
#define OXR_RUN_OP_LOOKUP 3             /* one rank's blob of a publish (version 2) */
#define OXR_RUN_LOOKUP_BYTES 12         /* a lookup's body: u64 len, u32 count, then count ranks */
#define OXR_RUN_LOOKUP_MAX 64           /* ranks one lookup may name (u32 each) */
#define OXR_RUN_MAX_BLOB (64ull << 20)  /* one rank's bytes in a round */
#define OXR_RUN_MAX_ROUND (1ull << 30)  /* a round's bytes, all ranks */
#define OXR_RUN_MAX_MSG 1024            /* an error reply's message */
#define OXR_RUN_MAX_SIZE (1 << 20)      /* ranks (the ids of a round fit 32 bits) */

#endif
