/* SPDX-License-Identifier: MIT */
/* A test playing an OX peer by hand on a socket: the server tests' master
 * on a channel it opened itself, test_asir_peer's end of an RFC-102 link. */
#ifndef OXR_TEST_OX_PEER_H
#define OXR_TEST_OX_PEER_H

#include <stdint.h>

#include "oxr/ox.h"

/* One OX message with a serial (counted per process) on fd, in order. */
void ox_send(int fd, int order, int32_t tag, int32_t sm, const oxr_cmo *o);
/* The next OX message on fd in order, its object in a, read a byte at a
 * time (nothing of the next message is read); a failed assertion when fd
 * closes, or when a byte takes longer than ms. */
oxr_ox_msg ox_recv_within(int fd, int order, oxr_arena *a, int ms);
/* 1 when fd has something to read (or closed) within ms, else 0. */
int fd_readable(int fd, int ms);

#endif
