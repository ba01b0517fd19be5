/* SPDX-License-Identifier: MIT */
/* oxr: everything public. */
#ifndef OXR_OXR_H
#define OXR_OXR_H
#include "oxr/status.h"
#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr/cmo_text.h"
#include "oxr/params.h"
#endif
