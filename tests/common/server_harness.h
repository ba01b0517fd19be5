/* SPDX-License-Identifier: MIT */
/* The master side shared by the oxr-server test files (server_harness.c). */
#ifndef OXR_SERVER_HARNESS_H
#define OXR_SERVER_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "oxr/master.h"
#include "oxr/ox.h"
#include "ox_peer.h"

#define SERVER OXR_BIN_DIR "/oxr-server"
#define TMO 30000

extern oxr_master *M;
extern oxr_arena *A;

/* n servers launched / every one ended by SM_shutdown with status 0. */
void up(int n);
void down(void);
/* An object from its bconv text, in A. */
oxr_cmo *T(const char *text);
void push(int i, const char *text);
void cmd(int i, int32_t sm);
/* The bconv text of o, malloc'ed. */
char *text_of(const oxr_cmo *o);
/* Pops server i's top and checks its text / that it is an error whose
 * message holds part. */
void pop_is(int i, const char *want);
void pop_error(int i, const char *part);
void call(int i, const char *fn, int argc, const char *const *args);
long zz(const oxr_cmo *o);
/* SM_getsp answers d. */
void depth_is(int i, int d);
/* Bytes as they are / 32-bit words in server i's order, on its data channel. */
void raw(int i, const void *p, size_t n);
void raw_words(int i, const uint32_t *w, size_t n);

/* For a server started by hand: ox_send (ox_peer.h) writes to it; this
 * reads the next message from fd in order, its object in A, within TMO. */
oxr_ox_msg ox_recv(int fd, int order);

#define CALL(i, fn, ...)                                                                           \
	do {                                                                                       \
		const char *const a_[] = { __VA_ARGS__ };                                          \
		call(i, fn, (int)(sizeof(a_) / sizeof(a_[0])), a_);                                \
	} while (0)

#endif
