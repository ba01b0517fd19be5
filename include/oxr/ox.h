/* SPDX-License-Identifier: MIT */
/*
 * OX messages: the frame (int32 ox tag, int32 serial, body), the SM command
 * numbers, and the one-byte byte-order exchange that opens every connection
 * (shared/docs/openxm-protocol.md sections 1, 2, 5 and 8).
 */
#ifndef OXR_OX_H
#define OXR_OX_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/cmo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum oxr_ox_tag {
	OXR_OX_COMMAND = 513,
	OXR_OX_DATA = 514,
	OXR_OX_SYNC_BALL = 515,
	OXR_OX_NOTIFY = 516,
	OXR_OX_DATA_WITH_SIZE = 521,
	OXR_OX_LOCAL_OBJECT_ASIR = 0x7fcdef30,
	/* A range of the OX_PRIVATE space the codec passes through, each frame
	 * with one CMO body as OX_DATA: the transport's own frames, only on
	 * OXR_LINK_AUTH links (transport/frames.h names them; the codec knows
	 * none of them). */
	OXR_OX_PRIVATE_FIRST = 0x7fff0100,
	OXR_OX_PRIVATE_LAST = 0x7fff01ff,
};

/* 1 if tag is in the transport's private range. */
static inline int oxr_ox_is_private(int32_t tag)
{
	return tag >= OXR_OX_PRIVATE_FIRST && tag <= OXR_OX_PRIVATE_LAST;
}

/* 1 if frames with this tag carry one CMO body (OX_DATA and the private range). */
static inline int oxr_ox_has_cmo(int32_t tag)
{
	return tag == OXR_OX_DATA || oxr_ox_is_private(tag);
}

enum oxr_sm {
	OXR_SM_popSerializedLocalObject = 258,
	OXR_SM_popCMO = 262,
	OXR_SM_popString = 263,
	OXR_SM_mathcap = 264,
	OXR_SM_pops = 265,
	OXR_SM_setName = 266,
	OXR_SM_evalName = 267,
	OXR_SM_executeStringByLocalParser = 268,
	OXR_SM_executeFunction = 269,
	OXR_SM_beginBlock = 270,
	OXR_SM_endBlock = 271,
	OXR_SM_shutdown = 272,
	OXR_SM_setMathcap = 273,
	OXR_SM_executeStringByLocalParserInBatchMode = 274,
	OXR_SM_getsp = 275,
	OXR_SM_dupErrors = 276,
	OXR_SM_pushCMOtag = 277,
	/* RFC-102, as numbered by asir (they clash with other tables). */
	OXR_SM_set_rank_102 = 278,
	OXR_SM_tcp_accept_102 = 279,
	OXR_SM_tcp_connect_102 = 280,
	OXR_SM_reset_102 = 281,
	OXR_SM_bcast_102 = 282,
	OXR_SM_reduce_102 = 283,
	OXR_SM_nop = 300,
	OXR_SM_executeFunctionSync = 400,
	OXR_SM_control_kill = 1024,
	OXR_SM_control_intr = 1025,
	OXR_SM_control_reset_connection = 1030,
};

/* "SM_popCMO" for 262; NULL for a code oxr does not know. */
OXR_API const char *oxr_sm_name(int32_t sm);
/* Code of a name ("SM_popCMO"), or -1 when unknown. */
OXR_API int32_t oxr_sm_of(const char *name, size_t len);
/* "OX_DATA" for 514; NULL when unknown. */
OXR_API const char *oxr_ox_tag_name(int32_t tag);
/* Tag of a name ("OX_DATA"), or 0 when unknown. */
OXR_API int32_t oxr_ox_tag_of(const char *name, size_t len);

/* One OX message.  cmo is set for OX_DATA, sm for OX_COMMAND. */
typedef struct oxr_ox_msg {
	int32_t tag;
	int32_t serial;
	int32_t sm;
	oxr_cmo *cmo;
} oxr_ox_msg;

/* Frame bytes of a message; has_serial 0 leaves the serial out, as the old
 * spec examples and bconv's text do (real links always carry it). */
OXR_API oxr_status_t oxr_ox_size(const oxr_ox_msg *m, int has_serial, size_t *size);
/* The frame into buf[0..cap), as oxr_cmo_encode (OXR_ERR_SPACE if cap is
 * too small). */
OXR_API oxr_status_t oxr_ox_encode(const oxr_ox_msg *m, int has_serial, int order,
				   void *buf, size_t cap, size_t *len);
/* The same into a malloc'ed buffer the caller frees. */
OXR_API oxr_status_t oxr_ox_encode_alloc(const oxr_ox_msg *m, int has_serial, int order,
					 uint8_t **buf, size_t *len);

/* One-shot decode of a framed message (serial included), like oxr_cmo_decode. */
OXR_API oxr_status_t oxr_ox_decode(const void *buf, size_t len, int order,
				   const oxr_cmo_limits *lim, oxr_arena *a,
				   oxr_ox_msg *out, size_t *used);
/* The finished message of the last OXR_OK of an OXR_DECODE_OX decoder. */
OXR_API const oxr_ox_msg *oxr_decoder_msg(const oxr_decoder *d);
/* Decode frames without a serial (bconv text, old spec examples). */
OXR_API void oxr_decoder_set_serial(oxr_decoder *d, int has_serial);

/* ---- byte-order exchange ------------------------------------------- */

enum oxr_order_byte {
	OXR_ORDER_BYTE_NETWORK = 0x00,
	OXR_ORDER_BYTE_LITTLE = 0x01,
	OXR_ORDER_BYTE_BIG = 0xff,
};

enum oxr_order_role {
	OXR_ROLE_ENGINE = 0, /* writes its byte first, then reads (RFC-100 server) */
	OXR_ROLE_CLIENT = 1, /* reads first, then writes (RFC-100 client) */
	OXR_ROLE_PEER = 2,   /* both sides write first (RFC-102 links, asir) */
};

/* The byte that asks for `order` (OXR_ORDER_LITTLE -> 1, NETWORK -> 0). */
OXR_API uint8_t oxr_order_byte(int order);
/* Both bytes equal: that order (0xff = big = network); else network order.
 * A byte other than 0, 1, 0xff is OXR_ERR_PROTO (asir's launcher writes 2
 * when the engine failed to start). */
OXR_API oxr_status_t oxr_order_resolve(uint8_t mine, uint8_t theirs, int *order);
/* Runs the exchange on a connected socket or pipe pair (rfd may equal wfd),
 * waiting at most timeout_ms (< 0: forever) for the peer's byte. */
OXR_API oxr_status_t oxr_order_exchange(int rfd, int wfd, int role, uint8_t mine,
					int timeout_ms, int *order);

#ifdef __cplusplus
}
#endif
#endif
