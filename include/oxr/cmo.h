/* SPDX-License-Identifier: MIT */
/*
 * CMO objects (OpenXM Common Mathematical Objects): the in-memory form, the
 * builders, and the binary codec in both byte orders.
 *
 * An object is a tagged node.  Scalars live in `v`, byte and word payloads in
 * `data`/`len` (stored in the byte order `order` they arrived in, so a decoder
 * can point straight into a receive buffer), sub-objects in `kids`.  Which
 * fields a tag uses:
 *
 *   NULL, ZERO, DMS_GENERIC, ERROR        nothing (shared immutable singletons)
 *   INT32                                 v.i32
 *   IEEE_DOUBLE_FLOAT, 64BIT_MACHINE_DOUBLE  v.f64
 *   STRING, DATUM                         data/len (bytes; no NUL added)
 *   ZZ                                    v.i32 = signed word count f, data = |f|
 *                                         32-bit words, least significant first;
 *                                         always minimal (no zero top word)
 *   QQ                                    kids[0], kids[1]: numerator and
 *                                         denominator, each a ZZ
 *   LIST                                  kids[0..nkids)
 *   MATHCAP, INDETERMINATE, RING_BY_NAME, ERROR2   kids[0]
 *   RATIONAL, COMPLEX                     kids[0], kids[1]
 *   MONOMIAL32                            data = nexp int32 exponents (len = 4*nexp),
 *                                         kids[0] = coefficient
 *   DISTRIBUTED_POLYNOMIAL                kids[0] = ring definition,
 *                                         kids[1..] = MONOMIAL32 or ZERO terms
 *   TREE                                  kids[0] STRING name, kids[1] LIST
 *                                         attributes, kids[2] LIST leaves
 *   LAMBDA                                kids[0] LIST args, kids[1] TREE body
 *   RECURSIVE_POLYNOMIAL                  kids[0] LIST vars, kids[1] polynomial
 *   POLYNOMIAL_IN_ONE_VARIABLE            v.i32 = variable index, kids = pairs
 *                                         (INT32 exponent, coefficient)
 *   ARRAY_OF_64BIT_MACHINE_DOUBLE         data = 8-byte doubles (len = 8*m)
 *   BIGFLOAT32                            kids[0..2] INT32 prec, sign, exp;
 *                                         data = words
 *
 * Objects are allocated from an arena and freed all at once with it.
 */
#ifndef OXR_CMO_H
#define OXR_CMO_H

#include <stddef.h>
#include <stdint.h>
#include <gmp.h>

#include "oxr/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum oxr_cmo_tag {
	OXR_CMO_ERROR = 0x7f000001, /* asir's bare error */
	OXR_CMO_ERROR2 = 0x7f000002,
	OXR_CMO_NULL = 1,
	OXR_CMO_INT32 = 2,
	OXR_CMO_DATUM = 3,
	OXR_CMO_STRING = 4,
	OXR_CMO_MATHCAP = 5,
	OXR_CMO_LIST = 17,
	OXR_CMO_MONOMIAL32 = 19,
	OXR_CMO_ZZ = 20,
	OXR_CMO_QQ = 21,
	OXR_CMO_ZERO = 22,
	OXR_CMO_DMS_GENERIC = 24,
	OXR_CMO_DMS_OF_N_VARIABLES = 25,
	OXR_CMO_RING_BY_NAME = 26,
	OXR_CMO_RECURSIVE_POLYNOMIAL = 27,
	OXR_CMO_DISTRIBUTED_POLYNOMIAL = 31,
	OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE = 33,
	OXR_CMO_RATIONAL = 34,
	OXR_CMO_COMPLEX = 35,
	OXR_CMO_64BIT_MACHINE_DOUBLE = 40,
	OXR_CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE = 41,
	OXR_CMO_IEEE_DOUBLE_FLOAT = 51,
	OXR_CMO_BIGFLOAT32 = 52,
	OXR_CMO_INDETERMINATE = 60,
	OXR_CMO_TREE = 61,
	OXR_CMO_LAMBDA = 62,
};

/* The byte order of a connection (protocol doc section 2). */
enum oxr_order {
	OXR_ORDER_NETWORK = 0, /* big-endian */
	OXR_ORDER_LITTLE = 1,
};
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define OXR_ORDER_HOST OXR_ORDER_LITTLE
#else
#define OXR_ORDER_HOST OXR_ORDER_NETWORK
#endif

typedef struct oxr_cmo {
	int32_t tag;
	uint8_t order;          /* byte order of the elements in data */
	uint32_t nkids;
	struct oxr_cmo **kids;
	const uint8_t *data;
	size_t len;             /* bytes in data */
	union {
		int32_t i32;
		double f64;
	} v;
} oxr_cmo;

/* ---- arena ---------------------------------------------------------- */

typedef struct oxr_arena oxr_arena;

/* An empty arena, the caller's (OXR_ERR_NOMEM). */
OXR_API oxr_status_t oxr_arena_create(oxr_arena **out);
/* Frees the arena and every object allocated from it (NULL: nothing). */
OXR_API void oxr_arena_destroy(oxr_arena *a);
/* Frees every object allocated from the arena; the arena stays usable. */
OXR_API void oxr_arena_reset(oxr_arena *a);
/* Bytes currently held by the arena (for memory accounting). */
OXR_API size_t oxr_arena_bytes(const oxr_arena *a);
/* Raw allocation, 16-byte aligned; NULL (and oxr_errmsg) when out of memory. */
OXR_API void *oxr_arena_alloc(oxr_arena *a, size_t n);

/* ---- builders ------------------------------------------------------- */
/* Each returns NULL with oxr_errmsg() set when memory runs out. */

/* Immutable shared objects for the tags without a body (never NULL, never
 * freed, never to be changed). */
OXR_API oxr_cmo *oxr_cmo_null(void);
/* CMO_ZERO, shared as oxr_cmo_null. */
OXR_API oxr_cmo *oxr_cmo_zero(void);
/* CMO_DMS_GENERIC, shared as oxr_cmo_null. */
OXR_API oxr_cmo *oxr_cmo_dms_generic(void);
/* CMO_ERROR (asir's bare error), shared as oxr_cmo_null. */
OXR_API oxr_cmo *oxr_cmo_error(void);

/* CMO_INT32 v. */
OXR_API oxr_cmo *oxr_cmo_new_int32(oxr_arena *a, int32_t v);
/* tag: OXR_CMO_IEEE_DOUBLE_FLOAT or OXR_CMO_64BIT_MACHINE_DOUBLE */
OXR_API oxr_cmo *oxr_cmo_new_double(oxr_arena *a, int32_t tag, double v);
/* tag: OXR_CMO_STRING or OXR_CMO_DATUM; the bytes are copied. */
OXR_API oxr_cmo *oxr_cmo_new_bytes(oxr_arena *a, int32_t tag, const void *p, size_t n);
/* CMO_STRING of the NUL-terminated s, copied (the NUL is not). */
OXR_API oxr_cmo *oxr_cmo_new_string(oxr_arena *a, const char *s);
/* CMO_ZZ of z, its words copied (z stays the caller's). */
OXR_API oxr_cmo *oxr_cmo_new_zz(oxr_arena *a, mpz_srcptr z);
/* CMO_ZZ of v. */
OXR_API oxr_cmo *oxr_cmo_new_zz_si(oxr_arena *a, long v);
/* Canonicalised first (mpq_canonicalize semantics are the caller's). */
OXR_API oxr_cmo *oxr_cmo_new_qq(oxr_arena *a, mpq_srcptr q);
/* A container of any tag that holds only kids (LIST, MATHCAP, TREE, ...);
 * the kids start NULL and must be set before encoding. */
OXR_API oxr_cmo *oxr_cmo_new_node(oxr_arena *a, int32_t tag, uint32_t nkids);
/* CMO_LIST of n kids, as oxr_cmo_new_node. */
OXR_API oxr_cmo *oxr_cmo_new_list(oxr_arena *a, uint32_t n);
/* nexp exponents copied; coef becomes kids[0]. */
OXR_API oxr_cmo *oxr_cmo_new_monomial32(oxr_arena *a, uint32_t nexp, const int32_t *exps,
					oxr_cmo *coef);
/* An array payload object: ARRAY_OF_64BIT_MACHINE_DOUBLE (n doubles). */
OXR_API oxr_cmo *oxr_cmo_new_double_array(oxr_arena *a, const double *v, uint32_t n);

/* A deep copy of o into a (the shared singletons stay shared). */
OXR_API oxr_status_t oxr_cmo_copy(oxr_arena *a, const oxr_cmo *o, oxr_cmo **out);

/* ---- accessors ------------------------------------------------------ */

/* ZZ (or INT32) value into z. */
OXR_API oxr_status_t oxr_cmo_get_mpz(const oxr_cmo *o, mpz_ptr z);
/* QQ, ZZ or INT32 value into q. */
OXR_API oxr_status_t oxr_cmo_get_mpq(const oxr_cmo *o, mpq_ptr q);
/* i-th int32 element of data (MONOMIAL32 exponents, ZZ words), host order. */
OXR_API int32_t oxr_cmo_word(const oxr_cmo *o, size_t i);
/* i-th double of an ARRAY_OF_64BIT_MACHINE_DOUBLE, host order. */
OXR_API double oxr_cmo_double_at(const oxr_cmo *o, size_t i);
/* Number of int32 exponents of a MONOMIAL32. */
static inline uint32_t oxr_cmo_nexp(const oxr_cmo *o) { return (uint32_t)(o->len / 4); }

/* Structural equality (values, not stored byte orders); 1 if equal. */
OXR_API int oxr_cmo_equal(const oxr_cmo *x, const oxr_cmo *y);

/* "CMO_ZZ" for OXR_CMO_ZZ; NULL for a tag oxr does not know. */
OXR_API const char *oxr_cmo_tag_name(int32_t tag);
/* Tag of a name ("CMO_ZZ"), or 0 when unknown. */
OXR_API int32_t oxr_cmo_tag_of(const char *name, size_t len);

/* ---- limits --------------------------------------------------------- */

/* Everything that arrives from outside is checked against these before
 * anything is allocated for it. */
typedef struct oxr_cmo_limits {
	uint32_t max_depth;        /* nesting of objects */
	uint64_t max_object_bytes; /* one string/datum/ZZ/array payload */
	uint64_t max_total_bytes;  /* one whole object or message on the wire */
	uint64_t max_objects;      /* nodes in one object */
	/* A payload claimed up to this size is allocated whole when its length
	 * arrives (one copy, at memcpy speed); a larger one grows as its bytes
	 * really come, so a peer's claim alone never costs more than this. */
	uint64_t prealloc_bytes;
} oxr_cmo_limits;

#define OXR_CMO_DEFAULT_MAX_DEPTH 512u
#define OXR_CMO_DEFAULT_MAX_OBJECT_BYTES (1ull << 30)
#define OXR_CMO_DEFAULT_MAX_TOTAL_BYTES (1ull << 31)
#define OXR_CMO_DEFAULT_MAX_OBJECTS (1ull << 26)
#define OXR_CMO_DEFAULT_PREALLOC_BYTES (16ull << 20)

/* The OXR_CMO_DEFAULT_* limits into *lim. */
OXR_API void oxr_cmo_limits_default(oxr_cmo_limits *lim);
/* Defaults overridden by OXR_CMO_MAX_DEPTH, OXR_CMO_MAX_OBJECT_BYTES,
 * OXR_CMO_MAX_TOTAL_BYTES, OXR_CMO_MAX_OBJECTS, OXR_CMO_PREALLOC_BYTES; a
 * malformed value is an
 * error naming the variable. */
OXR_API oxr_status_t oxr_cmo_limits_from_env(oxr_cmo_limits *lim);

/* ---- encoder -------------------------------------------------------- */

/* Bytes the object takes on the wire (tag included). */
OXR_API oxr_status_t oxr_cmo_size(const oxr_cmo *o, size_t *size);
/* Canonical encoding into buf[0..cap); *len gets the bytes written.
 * OXR_ERR_SPACE (nothing useful written) if cap is too small. */
OXR_API oxr_status_t oxr_cmo_encode(const oxr_cmo *o, int order, void *buf, size_t cap,
				    size_t *len);
/* Same into a malloc'ed buffer the caller frees. */
OXR_API oxr_status_t oxr_cmo_encode_alloc(const oxr_cmo *o, int order, uint8_t **buf,
					  size_t *len);

/* ---- decoder -------------------------------------------------------- */

/*
 * One-shot decode of one object from buf[0..len).  Strings, datums and words
 * of the result point into buf, which must outlive the object; the nodes come
 * from the arena.  *used gets the bytes the object took.  An object that
 * does not end inside buf is OXR_ERR_TRUNCATED.  lim NULL: the defaults.
 */
OXR_API oxr_status_t oxr_cmo_decode(const void *buf, size_t len, int order,
				    const oxr_cmo_limits *lim, oxr_arena *a,
				    oxr_cmo **out, size_t *used);

/*
 * Incremental decoder: feed the bytes of a stream in pieces of any size.
 * Each feed returns OXR_AGAIN (all of the piece consumed, the object not
 * finished yet), OXR_OK (an object is finished; *used says how much of the
 * piece it took, the rest belongs to the next object), or an error (the
 * decoder stays failed until oxr_decoder_reset).  Payloads are copied into
 * the arena unless OXR_FEED_BORROW says the piece outlives the objects, in
 * which case payloads lying wholly inside it are pointed at.
 */
typedef struct oxr_decoder oxr_decoder;

enum oxr_decode_what {
	OXR_DECODE_CMO = 0, /* one CMO: tag + body */
	OXR_DECODE_OX = 1,  /* one OX message: ox tag + serial + body */
};
enum { OXR_FEED_BORROW = 1 };

/* A decoder of what (enum oxr_decode_what) in byte order order, checking
 * lim (NULL: the defaults, copied), allocating the objects from a (the
 * caller's, to outlive them).  *out is the caller's: oxr_decoder_destroy.
 * Errors: OXR_ERR_INVAL (a bad argument), OXR_ERR_NOMEM. */
OXR_API oxr_status_t oxr_decoder_create(oxr_decoder **out, int what, int order,
					const oxr_cmo_limits *lim, oxr_arena *a);
/* Frees d (NULL: nothing); the objects it made stay in their arena. */
OXR_API void oxr_decoder_destroy(oxr_decoder *d);
/* Forget any partial object and any error; keep what, order and limits. */
OXR_API void oxr_decoder_reset(oxr_decoder *d);
/* The byte order of the objects to come (after a byte-order exchange). */
OXR_API void oxr_decoder_set_order(oxr_decoder *d, int order);
/* The arena the objects to come are allocated from. */
OXR_API void oxr_decoder_set_arena(oxr_decoder *d, oxr_arena *a);
/* Feeds piece[0..len) as described above (flags: OXR_FEED_BORROW or 0).
 * Errors: OXR_ERR_PROTO (malformed bytes), OXR_ERR_LIMIT (beyond the
 * limits), OXR_ERR_NOMEM; oxr_decoder_error() and oxr_errmsg() say where. */
OXR_API oxr_status_t oxr_decoder_feed(oxr_decoder *d, const void *piece, size_t len,
				      unsigned flags, size_t *used);
/* The finished object of the last OXR_OK (OXR_DECODE_CMO). */
OXR_API oxr_cmo *oxr_decoder_cmo(const oxr_decoder *d);
/* Bytes of the current (or just finished) object consumed so far. */
OXR_API uint64_t oxr_decoder_offset(const oxr_decoder *d);
/*
 * Reading straight into a payload: while the decoder copies a payload (not
 * in a borrowed piece), oxr_decoder_direct gives where its next bytes go and
 * how many fit there (0: nothing to offer); the caller reads at most that
 * many bytes into it, reports them with oxr_decoder_advance, and then feeds
 * the rest of the stream as usual (a feed of 0 bytes finishes the object).
 * This saves the copy out of a socket buffer for large payloads.
 */
OXR_API size_t oxr_decoder_direct(oxr_decoder *d, void **dst);
/* n bytes were read into what oxr_decoder_direct offered (n at most that). */
OXR_API void oxr_decoder_advance(oxr_decoder *d, size_t n);
/* Bytes of an object begun but not finished (0 between objects). */
OXR_API uint64_t oxr_decoder_pending(const oxr_decoder *d);
/* The message of the decoder's error ("" if none). */
OXR_API const char *oxr_decoder_error(const oxr_decoder *d);

#ifdef __cplusplus
}
#endif
#endif
