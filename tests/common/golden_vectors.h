/* SPDX-License-Identifier: MIT */
/* The worked bytes of shared/docs/openxm-protocol.md section 6 (network
 * order), in bconv text: (text, hex).  Frames are without the serial. */
#ifndef OXR_TEST_GOLDEN_VECTORS_H
#define OXR_TEST_GOLDEN_VECTORS_H
static const char *const golden[][2] = {
	{ "(CMO_ZZ,123123)", "00000014000000010001e0f3" },
	{ "(CMO_ZZ,14)", "00000014000000010000000e" },
	{ "(CMO_ZZ,-14)", "00000014ffffffff0000000e" },
	{ "(CMO_ZZ,0)", "0000001400000000" },
	{ "(CMO_STRING,\"Hello\")", "000000040000000548656c6c6f" },
	{ "(CMO_INDETERMINATE,(CMO_STRING,\"x\"))", "0000003c000000040000000178" },
	{ "(OX_COMMAND,(SM_mathcap))", "0000020100000108" },
};
#endif
