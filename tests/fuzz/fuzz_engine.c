/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the OX engine's whole input path: the bytes a
 * master writes on the data channel after the byte-order exchange, framed,
 * decoded, pushed and run as commands (oxr-server's stack machine, its
 * built-ins, the RFC-102 commands with networking off).  Input: one
 * control byte (bit 0 byte order, bits 1-7 piece size), then the stream.
 *
 * Properties, beyond "no crash, no leak, no UB": the engine never holds
 * more than its stack bound, and a stream that failed to frame stays
 * failed (nothing after it is run).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "oxr/server.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)
#define MAX_STACK 64

static int devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* small bounds, so that the limit paths are reached, not the RSS cap */
	setenv("OXR_SERVER_MAX_STACK", "64", 1);
	setenv("OXR_CMO_MAX_TOTAL_BYTES", "1048576", 1);
	setenv("OXR_CMO_PREALLOC_BYTES", "65536", 1);
	devnull = open("/dev/null", O_WRONLY);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oxr_engine *e;
	size_t piece, off = 1;
	oxr_status_t st = OXR_OK;

	if (size < 1)
		return 0;
	piece = 1 + (size_t)(data[0] >> 1) * 3;
	CHECK(oxr_engine_create(NULL, devnull, data[0] & 1, OXR_ENGINE_NO_NET, &e) == OXR_OK);
	while (off < size && st == OXR_OK && !oxr_engine_finished(e)) {
		size_t k = size - off < piece ? size - off : piece;
		st = oxr_engine_input(e, data + off, k);
		CHECK(oxr_engine_depth(e) <= MAX_STACK);
		off += k;
	}
	oxr_engine_destroy(e);
	return 0;
}
