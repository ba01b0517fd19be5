/* SPDX-License-Identifier: MIT */
/*
 * The body layout of every CMO tag as a short list of field operations.
 * The decoder, the encoder and the text notation all walk these lists, so
 * a layout is written down exactly once (shared/docs/openxm-protocol.md §6).
 */
#ifndef OXR_CMO_SPEC_H
#define OXR_CMO_SPEC_H
#include <stdint.h>

enum cmo_op_kind {
	OP_END = 0,
	OP_I32,      /* int32 into v.i32 */
	OP_F64,      /* 8-byte double into v.f64 */
	OP_BYTES,    /* int32 n >= 0, n bytes into data */
	OP_ZZ,       /* int32 f, |f| words into data, f into v.i32 */
	OP_WORDS,    /* int32 n >= 0, n int32 words into data */
	OP_DOUBLES,  /* int32 n >= 0, n 8-byte doubles into data */
	OP_KID,      /* one tagged CMO, appended to kids */
	OP_BARE_ZZ,  /* a ZZ body without its tag, appended to kids */
	OP_BARE_I32, /* an int32 without a tag, appended to kids as INT32 */
	OP_COUNT,    /* int32 n >= 0: the number of kids the next op reads */
	OP_KIDS,     /* n tagged CMOs (n from the preceding OP_COUNT) */
	OP_PAIRS,    /* n pairs (bare int32, tagged CMO) */
};

/* Which tags a kid may have. */
enum cmo_want {
	W_ANY = 0,
	W_STRING,
	W_LIST,
	W_TREE,
	W_RINGDEF, /* DMS_GENERIC, RING_BY_NAME, DMS_OF_N_VARIABLES */
	W_TERM,    /* MONOMIAL32 or ZERO */
};

struct cmo_op {
	uint8_t kind;
	uint8_t want;
};

#define CMO_MAX_OPS 6

struct cmo_spec {
	int32_t tag;
	const char *name;
	uint8_t fixed_kids; /* kids that are not counted by an OP_COUNT */
	struct cmo_op ops[CMO_MAX_OPS];
};

/* NULL when the tag is not one oxr decodes. */
const struct cmo_spec *oxr_cmo_spec(int32_t tag);
/* The op that reads the kids counted by OP_COUNT: OP_KIDS or OP_PAIRS. */
uint8_t oxr_cmo_counted_op(const struct cmo_spec *s);
/* 1 if a kid with this tag is allowed where `want` is asked. */
int oxr_cmo_want_ok(uint8_t want, int32_t tag);
const char *oxr_cmo_want_name(uint8_t want);
#endif
