/* SPDX-License-Identifier: MIT */
/* The oxr-run rendezvous wire format, shared by its two ends
 * (transport/boot_run.c, tools/oxr_run.c); described in boot_run.c. */
#ifndef OXR_BOOT_RUN_PROTO_H
#define OXR_BOOT_RUN_PROTO_H
#define RUN_VERSION 1
#define RUN_HELLO_BYTES 44
#define RUN_HDR_BYTES 16
#define RUN_OP_ALLGATHER 1
#define RUN_MAX_BLOB (64ull << 20)
#define RUN_MAX_ROUND (1ull << 30)
#define RUN_MAX_MSG 1024
#define RUN_MAX_SIZE 4096
#endif
