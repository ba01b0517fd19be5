/* SPDX-License-Identifier: MIT */
/*
 * The bytes of the crystal router (crystal.c), written down once for it and
 * for the test that plays a lying peer.  All integers little-endian.
 *
 * Landing window of rank r: 2 x nslots(r) regions of `region` bytes, parity
 * (transfer seq & 1) major, then r's receive slots in stage order (stage k:
 * its partner's slot, then the odd-range offload slot of rank lo).
 *
 * A stage: [stage header][record]...  put whole into the slot when it fits
 * the region, else the header alone is put and the records follow as
 * OX_DATA messages of CMO_DATUM chunks (of at most CR_CHUNK bytes).
 *
 * The window's id is the group's object number when the router made it
 * (coll_win.h).
 */
#ifndef OXR_CRYSTAL_WIRE_H
#define OXR_CRYSTAL_WIRE_H

#define CR_MAGIC 0x31595243u    /* "CRY1" */

/* stage header: u32 magic, u32 seq, u64 region, u64 total (record bytes
 * that follow), u64 want (largest stage any rank has seen; see crystal.c) */
#define CR_HDR 32
/* record: u32 dest, u32 source, u64 len, payload, zeros to 8 bytes */
#define CR_REC 16

#define CR_CHUNK (8u << 20)
#define CR_REGION_DEFAULT 65536u
#define CR_REGION_MAX_DEFAULT (8u << 20)

/* notify value of a stage put: which transfer, stage and slot */
#define CR_NOTE(seq, stage, j) (((uint32_t)(seq) & 0xffffu) << 16 | (uint32_t)(stage) << 8 | (uint32_t)(j))

#endif
