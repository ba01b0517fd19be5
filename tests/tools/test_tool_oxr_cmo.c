/* SPDX-License-Identifier: MIT */
/* oxr-cmo as a user runs it: spawned, stdin fed, stdout/stderr captured. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden_vectors.h"
#include "run_child.h"

#define TOOL OXR_BIN_DIR "/oxr-cmo"

/* Runs the tool with args (NULL-terminated) and input on stdin. */
static struct run run_tool(const char *input, const char *arg, ...)
{
	const char *argv[32] = { TOOL };
	va_list ap;
	int i = 1;

	va_start(ap, arg);
	for (; arg && i < 31; arg = va_arg(ap, const char *))
		argv[i++] = arg;
	va_end(ap);
	argv[i] = NULL;
	return spawn_run(argv, NULL, input, 30);
}

/* Runs and checks exit 0, the exact stdout and an empty stderr. */
#define expect_ok(want_out, input, ...)                                                    \
	do {                                                                               \
		struct run r_ = run_tool(input, __VA_ARGS__, NULL);                         \
		cr_assert_eq(r_.rc, 0, "exit %d, stderr: %s", r_.rc, r_.err);               \
		cr_assert_str_eq(r_.out, want_out);                                        \
		cr_assert_str_eq(r_.err, "");                                              \
		run_free(&r_);                                                             \
	} while (0)

/* Runs and checks the exit status, no stdout, and a piece of stderr. */
#define expect_fail(want_rc, want_err, input, ...)                                              \
	do {                                                                               \
		struct run r_ = run_tool(input, __VA_ARGS__, NULL);                         \
		cr_assert_eq(r_.rc, want_rc, "exit %d, stderr: %s", r_.rc, r_.err);         \
		cr_assert(strstr(r_.err, want_err), "stderr '%s' lacks '%s'", r_.err, want_err); \
		run_free(&r_);                                                             \
	} while (0)

#define N_GOLDEN (sizeof(golden) / sizeof(golden[0]))

static char *line(const char *s)
{
	char *l = malloc(strlen(s) + 2);

	strcpy(l, s);
	strcat(l, "\n");
	return l;
}

TestSuite(tool, .timeout = 120);

Test(tool, encode_golden)
{
	size_t i;

	for (i = 0; i < N_GOLDEN; i++) {
		char *want = line(golden[i][1]);

		expect_ok(want, NULL, "encode", golden[i][0]);
		expect_ok(want, NULL, "encode", "--order", "network", golden[i][0]);
		free(want);
	}
}

Test(tool, encode_little_and_serial)
{
	expect_ok("1400000001000000f3e00100\n", NULL, "encode", "--order", "little",
		  "(CMO_ZZ,123123)");
	expect_ok("1400000001000000f3e00100\n", NULL, "encode", "--order=little", "(CMO_ZZ,123123)");
	expect_ok("000002020000000700000001\n", NULL, "encode", "--serial", "7",
		  "(OX_DATA,(CMO_NULL))");
	expect_ok("020200000700000001000000\n", NULL, "encode", "--serial", "7",
		  "--order", "little", "(OX_DATA,(CMO_NULL))");
	expect_ok("0000020200000001\n", NULL, "encode", "(OX_DATA,(CMO_NULL))");
}

Test(tool, decode_golden)
{
	size_t i;

	for (i = 0; i < N_GOLDEN; i++) {
		char *want = line(golden[i][0]);
		int frame = golden[i][0][1] == 'O';

		if (frame)
			expect_ok(want, NULL, "decode", "--frame", golden[i][1]);
		else
			expect_ok(want, NULL, "decode", golden[i][1]);
		free(want);
	}
	expect_ok("(OX_COMMAND,(SM_mathcap))\n", NULL, "decode", "--frame", "0000020100000108");
	expect_ok("(CMO_ZZ,123123)\n", NULL, "decode", "--order", "little",
		  "1400000001000000f3e00100");
}

Test(tool, decode_white_space_and_several_items)
{
	expect_ok("(CMO_ZZ,123123)\n", NULL, "decode", "00000014 00000001 0001e0f3");
	expect_ok("(CMO_ZZ,123123)\n", NULL, "decode", "00 00 00 14\n00000001\t0001E0F3\n");
	expect_ok("(CMO_ZZ,123123)\n", NULL, "decode", "00000014", "00000001", "0001e0f3");
	expect_ok("(CMO_INT32,5)\n(CMO_NULL)\n(CMO_ZZ,0)\n", NULL, "decode",
		  "0000000200000005 00000001", "0000001400000000");
	expect_ok("(CMO_ZZ,123123)\n", "00000014 00000001\n0001e0f3\n", "decode");
	expect_ok("(CMO_ZZ,123123)\n", "00000014 00000001\n0001e0f3\n", "decode", "-");
	expect_ok("", NULL, "decode", "  ");
}

Test(tool, decode_frames_and_serials)
{
	expect_ok("(OX_DATA,(CMO_NULL))\n", NULL, "decode", "--serial", "7",
		  "000002020000000700000001");
	expect_ok("(OX_DATA,(CMO_NULL))\n", NULL, "decode", "--serial", "any",
		  "000002020000000700000001");
	expect_ok("(OX_DATA,(CMO_NULL))\n(OX_SYNC_BALL)\n(OX_COMMAND,(1234))\n", NULL, "decode",
		  "--frame", "0000020200000001 00000203 00000201000004d2");
	expect_fail(1, "serial 7, not 8", NULL, "decode", "--serial", "8",
		    "000002020000000700000001");
}

Test(tool, encode_several_items_and_stdin)
{
	expect_ok("0000000200000001\n00000001\n0000000200000002\n", NULL, "encode",
		  "(CMO_INT32,1) (CMO_NULL)", "(CMO_INT32,2)");
	expect_ok("000000140000000100000005\n00000203\n", "(CMO_ZZ,5)\n(OX_SYNC_BALL)\n", "encode");
	expect_ok("000000140000000100000005\n", "(CMO_ZZ,5)", "encode", "-");
}

Test(tool, bad_input)
{
	/* input ends 9 bytes in, inside the ZZ's word */
	expect_fail(1, "oxr-cmo: decode error at byte 9", NULL, "decode", "000000140000000100");
	expect_fail(1, "oxr-cmo: decode error at byte 0: unknown CMO tag 153", NULL, "decode",
		    "00000099");
	expect_fail(1, "item at byte 8: decode error at byte 0", NULL, "decode",
		    "0000000200000001 00000099");
	expect_fail(1, "decode error at byte 18: the input ends inside the frame that starts at byte 8",
		    NULL, "decode", "--frame", "0000020200000001", "0000020200000002", "0000");
	expect_fail(1, "odd number of hex digits", NULL, "decode", "000000020000000");
	expect_fail(1, "odd number of hex digits", NULL, "decode", "0000000 200000001");
	expect_fail(1, "character 3 is not a hex digit", NULL, "decode", "00zz");
	expect_fail(1, "oxr-cmo: text: column 12: expected an int32", NULL, "encode",
		    "(CMO_INT32,x)");
	expect_fail(1, "oxr-cmo: item at character 15: text: column 12", NULL, "encode",
		    "(CMO_INT32,1) (CMO_INT32,x)");
	expect_fail(1, "unknown name 'CMO_NOPE'", NULL, "encode", "(CMO_NOPE)");
}

Test(tool, usage)
{
	struct run r = run_tool(NULL, "--help", NULL);

	cr_assert_eq(r.rc, 0);
	cr_assert(strstr(r.out, "usage: oxr-cmo encode"), "%s", r.out);
	cr_assert_str_eq(r.err, "");
	run_free(&r);
	r = run_tool(NULL, "decode", "--help", NULL);
	cr_assert_eq(r.rc, 0);
	cr_assert(strstr(r.out, "usage:"), "%s", r.out);
	run_free(&r);

	expect_fail(2, "usage:", NULL, NULL);
	expect_fail(2, "unknown command", NULL, "frobnicate");
	expect_fail(2, "unknown option", NULL, "encode", "--bogus", "(CMO_NULL)");
	expect_fail(2, "--order wants network or little", NULL, "encode", "--order", "big",
		    "(CMO_NULL)");
	expect_fail(2, "lacks its value", NULL, "decode", "--order");
	expect_fail(2, "--serial wants", NULL, "encode", "--serial", "x", "(CMO_NULL)");
	expect_fail(2, "--serial wants", NULL, "encode", "--serial", "any", "(CMO_NULL)");
	expect_fail(2, "--serial wants", NULL, "decode", "--serial", "4294967296", "00");
	expect_fail(2, "unknown option", NULL, "encode", "--frame", "(CMO_NULL)");
}

/* The OXR_CMO_* limits bound decode as they bound a server's decoders; a
 * malformed one fails either command, naming it. */
Test(tool, decoder_limits_from_the_environment)
{
	/* three lists deep: (CMO_LIST,1,(CMO_LIST,1,(CMO_LIST,1,(CMO_NULL)))) */
	static const char deep[] = "00000011000000010000001100000001000000110000000100000001";
	const char *dec[] = { TOOL, "decode", deep, NULL };
	const char *enc[] = { TOOL, "encode", "(CMO_NULL)", NULL };
	const char *shallow[] = { "OXR_CMO_MAX_DEPTH=2", NULL };
	const char *bad_env[] = { "OXR_CMO_MAX_DEPTH=abc", NULL };
	struct run r = spawn_run(dec, shallow, NULL, 30);

	cr_assert_eq(r.rc, 1, "exit %d, stdout: %s", r.rc, r.out);
	cr_assert(strstr(r.err, "nesting deeper than 2 (raise OXR_CMO_MAX_DEPTH)"), "%s", r.err);
	run_free(&r);
	expect_ok("(CMO_LIST,1,(CMO_LIST,1,(CMO_LIST,1,(CMO_NULL))))\n", NULL, "decode", deep);
	r = spawn_run(dec, bad_env, NULL, 30);
	cr_assert_eq(r.rc, 1, "exit %d", r.rc);
	cr_assert(strstr(r.err, "oxr-cmo: OXR_CMO_MAX_DEPTH=abc"), "%s", r.err);
	run_free(&r);
	r = spawn_run(enc, bad_env, NULL, 30);
	cr_assert_eq(r.rc, 1, "exit %d", r.rc);
	cr_assert(strstr(r.err, "OXR_CMO_MAX_DEPTH=abc"), "%s", r.err);
	run_free(&r);
}

/* Text -> bytes -> text in both orders reproduces the canonical text. */
Test(tool, long_round_trip)
{
	static const char text[] =
		"(CMO_LIST,9,(CMO_MATHCAP,(CMO_LIST,3,(CMO_LIST,2,(CMO_INT32,199901160),"
		"(CMO_STRING,\"ox_asir\")),(CMO_LIST,2,(CMO_INT32,262),(CMO_INT32,264)),"
		"(CMO_LIST,1,(CMO_LIST,2,(CMO_INT32,514),(CMO_LIST,2,(CMO_INT32,2),(CMO_INT32,20)))))),"
		"(CMO_ZZ,-123456789012345678901234567890123456789),(CMO_QQ,-1,3),"
		"(CMO_DATUM,\"\\x00\\xff\\\"\\\\\"),"
		"(CMO_DISTRIBUTED_POLYNOMIAL,2,(CMO_DMS_GENERIC),(CMO_MONOMIAL32,2,1,0,(CMO_ZZ,3)),"
		"(CMO_ZERO)),"
		"(CMO_ARRAY_OF_64BIT_MACHINE_DOUBLE,4,-0,inf,0.10000000000000001,-1.5000000000000001e-300),"
		"(CMO_POLYNOMIAL_IN_ONE_VARIABLE,1,0,2,(CMO_INT32,-7)),"
		"(CMO_BIGFLOAT32,53,1,-3,2,0,-2147483648),"
		"(CMO_TREE,(CMO_STRING,\"f\"),(CMO_LIST,0),(CMO_LIST,1,(CMO_INDETERMINATE,"
		"(CMO_STRING,\"x\")))))";
	static const char *const orders[] = { "network", "little" };
	char want[sizeof(text) + 1];
	size_t i;

	snprintf(want, sizeof(want), "%s\n", text);
	for (i = 0; i < 2; i++) {
		struct run e = run_tool(NULL, "encode", "--order", orders[i], text, NULL), d;

		cr_assert_eq(e.rc, 0, "%s", e.err);
		cr_assert_eq(strspn(e.out, "0123456789abcdef"), strlen(e.out) - 1, "%s", e.out);
		d = run_tool(e.out, "decode", "--order", orders[i], NULL);
		cr_assert_eq(d.rc, 0, "%s", d.err);
		cr_assert_str_eq(d.out, want);
		run_free(&d);
		run_free(&e);
	}
}
