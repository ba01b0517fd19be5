/* SPDX-License-Identifier: MIT */
/*
 * OXR_API marks a function of the public API.  liboxr.so is built with
 * -fvisibility=hidden, so it exports these and nothing else; liboxr.a keeps
 * every symbol, for the tests that reach internals.
 */
#ifndef OXR_API_H
#define OXR_API_H

#if defined(__GNUC__) || defined(__clang__)
#define OXR_API __attribute__((visibility("default")))
#else
#define OXR_API
#endif

#endif
