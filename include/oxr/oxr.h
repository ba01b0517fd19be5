/* SPDX-License-Identifier: MIT */
/* oxr: everything public. */
#ifndef OXR_OXR_H
#define OXR_OXR_H
#include "oxr/api.h"
#include "oxr/status.h"
#include "oxr/cmo.h"
#include "oxr/ox.h"
#include "oxr/cmo_text.h"
#include "oxr/params.h"
#include "oxr/boot.h"
#include "oxr/boot_run.h"
#include "oxr/transport.h"
#include "oxr/device.h"
#include "oxr/bcast.h"
#include "oxr/barrier.h"
#include "oxr/crystal.h"
#include "oxr/server.h"
#include "oxr/master.h"
#endif
