/* SPDX-License-Identifier: MIT */
/*
 * The text notation of OpenXM ox_toolkit's bconv, e.g.
 *   (CMO_ZZ,123123)   (CMO_LIST,2,(CMO_INT32,1),(CMO_STRING,"ab"))
 *   (OX_DATA,(CMO_NULL))   (OX_COMMAND,(SM_popCMO))   (OX_SYNC_BALL)
 * for people who read captures and write test vectors.
 */
#ifndef OXR_CMO_TEXT_H
#define OXR_CMO_TEXT_H

#include <stddef.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed item: a bare CMO (is_frame 0, object in msg.cmo) or an OX frame. */
typedef struct oxr_text_item {
	int is_frame;
	oxr_ox_msg msg;
} oxr_text_item;

/* Parses one item from s[0..len), skipping leading white space; *used gets
 * the characters taken.  A syntax error is OXR_ERR_PROTO with the column and
 * what was expected in oxr_errmsg(). */
OXR_API oxr_status_t oxr_text_parse(const char *s, size_t len, oxr_arena *a,
				    oxr_text_item *out, size_t *used);

/* Canonical text of an object or a frame, NUL-terminated, malloc'ed (the
 * caller frees it); parsing it gives the same object back. */
OXR_API oxr_status_t oxr_text_print_cmo(const oxr_cmo *o, char **out, size_t *len);
/* The same for an OX frame (oxr_text_print_cmo's rules). */
OXR_API oxr_status_t oxr_text_print_msg(const oxr_ox_msg *m, char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
