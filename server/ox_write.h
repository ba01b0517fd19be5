/* SPDX-License-Identifier: MIT */
#ifndef OXR_OX_WRITE_H
#define OXR_OX_WRITE_H

#include "oxr/ox.h"

/* Encodes m (serial included) in order and writes it all to the blocking
 * fd; `to` names the other end in the error. */
oxr_status_t oxr_ox_write(int fd, const oxr_ox_msg *m, int order, const char *to);

#endif
