/* SPDX-License-Identifier: MIT */
/*
 * oxr-server driven by the master API (real processes, real sockets):
 * every SM command and its error paths, hostile input from the master,
 * a group of 4 through every RFC-102 command (OpenXM links and oxr links;
 * in the rxe guest the oxr links run on verbs), a plain RFC-102 peer
 * speaking ox_asir's bytes to a server, and a reset during a long bcast.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oxr/cmo_text.h"
#include "oxr/master.h"
#include "oxr_internal.h"

#include "server_harness.h"
#include "test_util.h"

extern char **environ;

/* ---- RFC-100 commands --------------------------------------------- */

Test(sm, objects_pushed_come_back_unchanged)
{
	static const char *const objs[] = {
		"(CMO_ZZ,123456789012345678901234567890)", "(CMO_QQ,-1,3)", "(CMO_NULL)",
		"(CMO_LIST,2,(CMO_INT32,1),(CMO_STRING,\"ab\"))", "(CMO_IEEE_DOUBLE_FLOAT,0.5)",
		"(CMO_INDETERMINATE,(CMO_STRING,\"x\"))", "(CMO_DATUM,\"abc\")",
	};
	size_t k;

	up(1);
	for (k = 0; k < sizeof(objs) / sizeof(objs[0]); k++)
		push(0, objs[k]);
	for (k = sizeof(objs) / sizeof(objs[0]); k-- > 0;)
		pop_is(0, objs[k]);
	depth_is(0, 0);
	down();
}

Test(sm, pop_string_prints_what_a_user_reads)
{
	static const char *const in[] = { "(CMO_ZZ,-123)", "(CMO_QQ,-1,3)", "(CMO_NULL)",
					  "(CMO_LIST,2,(CMO_INT32,1),(CMO_STRING,\"ab\"))",
					  "(CMO_IEEE_DOUBLE_FLOAT,0.5)", "(CMO_STRING,\"hi\")" };
	static const char *const out[] = { "-123", "-1/3", "0", "[1,\"ab\"]", "0.5", "hi" };
	size_t k;

	up(1);
	for (k = 0; k < sizeof(in) / sizeof(in[0]); k++) {
		oxr_cmo *o;
		push(0, in[k]);
		cmd(0, OXR_SM_popString);
		cr_assert_eq(oxr_master_recv(M, 0, TMO, A, &o), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(o->tag, OXR_CMO_STRING);
		cr_assert(o->len == strlen(out[k]) && !memcmp(o->data, out[k], o->len),
			  "%s printed as %.*s, not %s", in[k], (int)o->len, (const char *)o->data,
			  out[k]);
	}
	down();
}

Test(sm, mathcap_lists_exactly_the_commands_that_run)
{
	static const int32_t runs[] = { 262, 263, 264, 265, 266, 267, 269, 272, 273, 275, 276,
					277, 300, 278, 279, 280, 281, 282, 283 };
	oxr_cmo *mc, *sms;
	uint32_t k;

	up(1);
	cmd(0, OXR_SM_mathcap);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &mc), OXR_OK);
	cr_assert_eq(mc->tag, OXR_CMO_MATHCAP);
	cr_assert_eq(mc->kids[0]->nkids, 3);
	sms = mc->kids[0]->kids[1];
	cr_assert_eq(sms->nkids, sizeof(runs) / sizeof(runs[0]));
	for (k = 0; k < sms->nkids; k++)
		cr_assert_eq(sms->kids[k]->v.i32, runs[k]);
	/* codes it does not list are refused with an error, not run */
	cmd(0, OXR_SM_executeStringByLocalParser);
	pop_error(0, "unknown SM code 268");
	cmd(0, 9999);
	pop_error(0, "unknown SM code 9999");
	depth_is(0, 0);
	down();
}

Test(sm, pops_getsp_pushcmotag_duperrors_nop)
{
	oxr_cmo *o;

	up(1);
	push(0, "(CMO_ZZ,1)");
	push(0, "(CMO_STRING,\"s\")");
	push(0, "(CMO_INT32,3)");
	depth_is(0, 3);
	cmd(0, OXR_SM_pushCMOtag);
	pop_is(0, "(CMO_INT32,2)");
	cmd(0, OXR_SM_nop);
	push(0, "(CMO_INT32,2)");
	cmd(0, OXR_SM_pops);
	depth_is(0, 1);
	cmd(0, 4242);   /* two errors ... */
	cmd(0, OXR_SM_pops); /* ... the second: pops wants a count, gets an error object */
	cmd(0, OXR_SM_dupErrors);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_LIST);
	cr_assert_eq(o->nkids, 1, "one error left on the stack (pops consumed the first)");
	cr_assert_eq(o->kids[0]->tag, OXR_CMO_ERROR2);
	pop_error(0, "SM_pops: expected an integer");
	pop_is(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_pushCMOtag);
	pop_error(0, "the stack is empty");
	cmd(0, OXR_SM_popCMO); /* an empty stack still answers */
	cr_assert_eq(oxr_master_recv(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_ERROR2);
	down();
}

Test(sm, set_name_and_eval_name)
{
	up(1);
	push(0, "(CMO_ZZ,77)");
	push(0, "(CMO_STRING,\"v\")");
	cmd(0, OXR_SM_setName);
	depth_is(0, 0);
	push(0, "(CMO_STRING,\"v\")");
	cmd(0, OXR_SM_evalName);
	push(0, "(CMO_STRING,\"v\")");
	cmd(0, OXR_SM_evalName);
	pop_is(0, "(CMO_ZZ,77)");
	pop_is(0, "(CMO_ZZ,77)");
	push(0, "(CMO_STRING,\"nope\")");
	cmd(0, OXR_SM_evalName);
	pop_error(0, "no object is named \"nope\"");
	push(0, "(CMO_INT32,1)");
	push(0, "(CMO_INT32,1)");
	cmd(0, OXR_SM_setName);
	pop_error(0, "expected a CMO_STRING");
	depth_is(0, 0); /* both arguments consumed */
	down();
}

Test(sm, execute_function_arithmetic_and_lists)
{
	up(1);
	CALL(0, "add", "(CMO_ZZ,99999999999999999999)", "(CMO_INT32,1)");
	pop_is(0, "(CMO_ZZ,100000000000000000000)");
	CALL(0, "sub", "(CMO_QQ,1,2)", "(CMO_QQ,1,3)");
	pop_is(0, "(CMO_QQ,1,6)");
	CALL(0, "div", "(CMO_ZZ,6)", "(CMO_ZZ,4)");
	pop_is(0, "(CMO_QQ,3,2)");
	CALL(0, "div", "(CMO_ZZ,8)", "(CMO_ZZ,4)");
	pop_is(0, "(CMO_ZZ,2)");
	CALL(0, "mul", "(CMO_IEEE_DOUBLE_FLOAT,1.5)", "(CMO_ZZ,2)");
	pop_is(0, "(CMO_IEEE_DOUBLE_FLOAT,3)");
	CALL(0, "neg", "(CMO_INT32,-2147483648)");
	pop_is(0, "(CMO_ZZ,2147483648)");
	CALL(0, "max", "(CMO_ZZ,3)", "(CMO_QQ,7,2)");
	pop_is(0, "(CMO_QQ,7,2)");
	CALL(0, "min", "(CMO_ZZ,3)", "(CMO_NULL)");
	pop_is(0, "(CMO_ZZ,0)");
	CALL(0, "list", "(CMO_ZZ,1)", "(CMO_STRING,\"a\")");
	pop_is(0, "(CMO_LIST,2,(CMO_ZZ,1),(CMO_STRING,\"a\"))");
	CALL(0, "cons", "(CMO_ZZ,0)", "(CMO_LIST,1,(CMO_ZZ,1))");
	pop_is(0, "(CMO_LIST,2,(CMO_ZZ,0),(CMO_ZZ,1))");
	CALL(0, "append", "(CMO_LIST,1,(CMO_ZZ,1))", "(CMO_LIST,1,(CMO_ZZ,2))");
	pop_is(0, "(CMO_LIST,2,(CMO_ZZ,1),(CMO_ZZ,2))");
	CALL(0, "length", "(CMO_LIST,3,(CMO_NULL),(CMO_NULL),(CMO_NULL))");
	pop_is(0, "(CMO_ZZ,3)");
	CALL(0, "nth", "(CMO_LIST,2,(CMO_ZZ,5),(CMO_ZZ,6))", "(CMO_ZZ,1)");
	pop_is(0, "(CMO_ZZ,6)");
	CALL(0, "first", "(CMO_LIST,2,(CMO_ZZ,5),(CMO_ZZ,6))");
	pop_is(0, "(CMO_ZZ,5)");
	CALL(0, "rest", "(CMO_LIST,2,(CMO_ZZ,5),(CMO_ZZ,6))");
	pop_is(0, "(CMO_LIST,1,(CMO_ZZ,6))");
	CALL(0, "reverse", "(CMO_LIST,2,(CMO_ZZ,5),(CMO_ZZ,6))");
	pop_is(0, "(CMO_LIST,2,(CMO_ZZ,6),(CMO_ZZ,5))");
	/* the error paths: each leaves one error and consumes its arguments */
	CALL(0, "div", "(CMO_ZZ,1)", "(CMO_ZZ,0)");
	pop_error(0, "division by zero");
	CALL(0, "add", "(CMO_ZZ,1)");
	pop_error(0, "1 arguments given, it takes 2");
	CALL(0, "add", "(CMO_STRING,\"x\")", "(CMO_ZZ,1)");
	pop_error(0, "argument 1 is CMO_STRING, not a number");
	CALL(0, "nth", "(CMO_LIST,1,(CMO_ZZ,5))", "(CMO_ZZ,1)");
	pop_error(0, "index out of range");
	CALL(0, "first", "(CMO_LIST,0)");
	pop_error(0, "the list is empty");
	CALL(0, "frobnicate", "(CMO_ZZ,1)");
	pop_error(0, "no function \"frobnicate\"");
	/* list(list(...)) without end: bounded like a decoded object's nesting */
	{
		int k;
		push(0, "(CMO_ZZ,1)");
		for (k = 0; k < 513; k++) { /* 512 levels are fine, the 513th is not */
			push(0, "(CMO_INT32,1)");
			push(0, "(CMO_STRING,\"list\")");
			cmd(0, OXR_SM_executeFunction);
		}
		pop_error(0, "nests deeper than 512 levels");
		depth_is(0, 0);
	}
	depth_is(0, 0);
	/* a count larger than the stack */
	push(0, "(CMO_INT32,5)");
	push(0, "(CMO_STRING,\"add\")");
	cmd(0, OXR_SM_executeFunction);
	pop_error(0, "5 arguments asked, the stack holds 0");
	down();
}

Test(sm, set_mathcap_stops_what_the_master_does_not_accept)
{
	up(1);
	push(0, "(CMO_MATHCAP,(CMO_LIST,3,(CMO_LIST,2,(CMO_INT32,1),(CMO_STRING,\"m\")),"
		"(CMO_LIST,1,(CMO_INT32,262)),(CMO_LIST,1,(CMO_LIST,2,(CMO_INT32,514),"
		"(CMO_LIST,3,(CMO_INT32,2),(CMO_INT32,17),(CMO_INT32,2130706434))))))");
	cmd(0, OXR_SM_setMathcap);
	depth_is(0, 0);
	push(0, "(CMO_LIST,1,(CMO_INT32,7))");
	pop_is(0, "(CMO_LIST,1,(CMO_INT32,7))");
	push(0, "(CMO_LIST,1,(CMO_ZZ,7))");
	pop_error(0, "Mathcap violation");
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_setMathcap);
	pop_error(0, "not a CMO_MATHCAP");
	down();
}

Test(sm, shutdown_ends_the_server)
{
	int status;

	up(2);
	cmd(0, OXR_SM_shutdown);
	cr_assert_eq(oxr_master_wait(M, 0, TMO, &status), OXR_OK, "%s", oxr_errmsg());
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %x", status);
	depth_is(1, 0); /* the other server never noticed */
	down();
}

/* ---- hostile input from the master ---------------------------------- */

static void closes_cleanly(int i)
{
	uint8_t c;
	int status;

	ssize_t k = read(oxr_master_data_fd(M, i), &c, 1);

	/* ECONNRESET: it closed with our bytes still unread, as it should */
	cr_assert(k == 0 || (k < 0 && errno == ECONNRESET), "server %d should close (%zd, %s)", i,
		  k, strerror(errno));
	cr_assert_eq(oxr_master_wait(M, i, TMO, &status), OXR_OK, "%s", oxr_errmsg());
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) < 128,
		  "server %d must exit, not crash (status %x)", i, status);
}

Test(hostile, framing_errors_close_the_session_and_nothing_else)
{
	const uint32_t huge_string[] = { OXR_OX_DATA, 1, OXR_CMO_STRING, 0x7fffffff, 0x41414141 };
	const uint32_t huge_list[] = { OXR_OX_DATA, 1, OXR_CMO_LIST, 0x7fffffff, OXR_CMO_NULL };
	const uint32_t bad_tag[] = { 999, 1, 0 };
	const uint32_t bad_cmo[] = { OXR_OX_DATA, 1, 0x12345 };
	const uint32_t deep[] = { OXR_OX_DATA, 1, OXR_CMO_ERROR2, OXR_CMO_ERROR2, OXR_CMO_ERROR2 };
	int i;

	up(6);
	raw_words(0, huge_string, 5);
	raw_words(1, huge_list, 5);
	raw_words(2, bad_tag, 3);
	raw_words(3, bad_cmo, 3);
	raw_words(4, deep, 2);
	for (i = 0; i < 200; i++) /* 600 nested ERROR2s: deeper than the limit */
		raw_words(4, deep + 2, 3);
	for (i = 0; i < 5; i++)
		closes_cleanly(i);
	/* a frame cut short, then the master goes: a clean end too */
	raw_words(5, huge_string, 3);
	shutdown(oxr_master_data_fd(M, 5), SHUT_WR);
	closes_cleanly(5);
	down();
}

Test(hostile, bad_commands_and_arguments_are_errors_and_the_server_goes_on)
{
	const uint32_t big_sm[] = { OXR_OX_COMMAND, 1, 0x7fffffff };
	const uint32_t ball[] = { OXR_OX_SYNC_BALL, 1 };

	up(1);
	raw_words(0, big_sm, 3);
	pop_error(0, "unknown SM code 2147483647");
	raw_words(0, ball, 2); /* a stray ball outside a reset: ignored */
	push(0, "(CMO_STRING,\"two\")");
	push(0, "(CMO_ZZ,0)");
	cmd(0, OXR_SM_set_rank_102);
	pop_error(0, "expected an integer");
	push(0, "(CMO_ZZ,2)");
	push(0, "(CMO_ZZ,5)");
	cmd(0, OXR_SM_set_rank_102);
	pop_error(0, "need 1 <= nserver");
	push(0, "(CMO_ZZ,99999999999999999999999)");
	push(0, "(CMO_ZZ,0)");
	cmd(0, OXR_SM_set_rank_102);
	pop_error(0, "expected an integer");
	push(0, "(CMO_ZZ,0)");
	cmd(0, OXR_SM_bcast_102);
	pop_error(0, "in no group");
	push(0, "(CMO_ZZ,4000)");
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_tcp_accept_102);
	pop_error(0, "in no group");
	/* asir's integers: INT32 and NULL (= 0) are accepted too */
	push(0, "(CMO_INT32,2)");
	push(0, "(CMO_NULL)");
	cmd(0, OXR_SM_set_rank_102);
	depth_is(0, 0);
	/* a String port is a Unix socket path: one too long for sun_path, or
	 * one that exists (never unlinked: it may be someone else's), fails at once */
	{
		char lng[160], fn[] = "/tmp/oxr-test-exists-XXXXXX";
		int f = mkstemp(fn);
		cr_assert(f >= 0);
		close(f);
		snprintf(lng, sizeof(lng), "(CMO_STRING,\"/tmp/%0120d\")", 0);
		push(0, lng);
		push(0, "(CMO_ZZ,1)");
		cmd(0, OXR_SM_tcp_accept_102);
		pop_error(0, "sun_path");
		snprintf(lng, sizeof(lng), "(CMO_STRING,\"%s\")", fn);
		push(0, lng);
		push(0, "(CMO_ZZ,1)");
		cmd(0, OXR_SM_tcp_accept_102);
		pop_error(0, "the path exists");
		cr_assert_eq(access(fn, F_OK), 0, "the existing file is left alone");
		unlink(fn);
	}
	push(0, "(CMO_ZZ,7)");
	push(0, "(CMO_ZZ,0)");
	cmd(0, OXR_SM_reduce_102);
	pop_error(0, "3 arguments needed");
	push(0, "(CMO_ZZ,7)");
	push(0, "(CMO_ZZ,0)");
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_reduce_102);
	pop_error(0, "expected a CMO_STRING");
	push(0, "(CMO_ZZ,7)");
	push(0, "(CMO_ZZ,5)");
	push(0, "(CMO_STRING,\"+\")");
	cmd(0, OXR_SM_reduce_102);
	pop_error(0, "rank 5 is not in the group");
	CALL(0, "ox_send_102", "(CMO_ZZ,-1)", "(CMO_ZZ,1)");
	pop_error(0, "rank -1 is not in the group");
	CALL(0, "ox_recv_102", "(CMO_ZZ,1)");
	pop_error(0, "no link");
	depth_is(0, 0);
	down();
}

/* SM_tcp_connect_102 to a port nobody listens on: an error, in bounded time
 * (OXR_LINK_TIMEOUT_MS), and the server goes on. */
Test(hostile, a_connect_to_nowhere_is_an_error_not_a_hang)
{
	int lfd, port;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char p[32];

	/* a port that was free a moment ago */
	cr_assert((lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	close(lfd);
	setenv("OXR_LINK_TIMEOUT_MS", "300", 1); /* the servers inherit it */
	up(1);
	unsetenv("OXR_LINK_TIMEOUT_MS");
	push(0, "(CMO_ZZ,2)");
	push(0, "(CMO_ZZ,0)");
	cmd(0, OXR_SM_set_rank_102);
	push(0, "(CMO_STRING,\"127.0.0.1\")");
	snprintf(p, sizeof(p), "(CMO_ZZ,%d)", port);
	push(0, p);
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_tcp_connect_102);
	pop_error(0, "SM_tcp_connect_102");
	push(0, "(CMO_STRING,\"no.such.host.invalid\")");
	push(0, p);
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_tcp_connect_102);
	pop_error(0, "SM_tcp_connect_102");
	depth_is(0, 0);
	down();
}

/* ---- RFC-102 over a group of four ------------------------------------ */

static void ranks_are_right(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		char want[96];
		call(i, "ox_get_rank_102", 0, NULL);
		snprintf(want, sizeof(want), "(CMO_LIST,2,(CMO_ZZ,%d),(CMO_ZZ,%d))", n, i);
		pop_is(i, want);
	}
}

static void every_rfc102_command(int n, int plain)
{
	static const char *const ops[] = { "+", "*", "max", "min", "append" };
	int root, i, k;
	char obj[128], want[256];

	cr_assert_eq(oxr_master_group(M, plain, TMO), OXR_OK, "group: %s", oxr_errmsg());
	ranks_are_right(n);
	for (root = 0; root < n; root++) {
		snprintf(obj, sizeof(obj), "(CMO_LIST,2,(CMO_ZZ,%d),(CMO_STRING,\"from %d\"))", root,
			 root);
		cr_assert_eq(oxr_master_bcast(M, root, T(obj)), OXR_OK);
		for (i = 0; i < n; i++)
			pop_is(i, obj);
	}
	for (k = 0; k < 5; k++)
		for (root = 0; root < n; root += 3) {
			for (i = 0; i < n; i++) {
				snprintf(obj, sizeof(obj), k == 4 ? "(CMO_LIST,1,(CMO_ZZ,%d))" : "(CMO_ZZ,%d)",
					 i + 2);
				push(i, obj);
			}
			cr_assert_eq(oxr_master_reduce(M, root, ops[k]), OXR_OK);
			/* 2+3+4+5, 2*3*4*5, 5, 2, [2,3,4,5] for n = 4 */
			if (k < 4)
				snprintf(want, sizeof(want), "(CMO_ZZ,%d)",
					 k == 0 ? 14 : k == 1 ? 120 : k == 2 ? 5 : 2);
			else /* in rank order from the root (asir's order too) */
				snprintf(want, sizeof(want), "(CMO_LIST,4,(CMO_ZZ,%d),(CMO_ZZ,%d),"
					 "(CMO_ZZ,%d),(CMO_ZZ,%d))", 2 + root, 2 + (root + 1) % 4,
					 2 + (root + 2) % 4, 2 + (root + 3) % 4);
			for (i = 0; i < n; i++)
				pop_is(i, i == root ? want : "(CMO_NULL)");
		}
	/* ox_send_102 / ox_recv_102 around the ring */
	for (i = 0; i < n; i++) {
		snprintf(obj, sizeof(obj), "(CMO_ZZ,%d)", (i + 1) % n);
		snprintf(want, sizeof(want), "(CMO_STRING,\"to %d\")", (i + 1) % n);
		CALL(i, "ox_send_102", obj, want);
	}
	for (i = 0; i < n; i++) {
		snprintf(obj, sizeof(obj), "(CMO_ZZ,%d)", (i + n - 1) % n);
		CALL(i, "ox_recv_102", obj);
	}
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "(CMO_STRING,\"to %d\")", i);
		pop_is(i, want);
		pop_is(i, "(CMO_NULL)");
	}
	/* an unknown op fails on every rank, and the group goes on */
	for (i = 0; i < n; i++)
		push(i, "(CMO_ZZ,1)");
	cr_assert_eq(oxr_master_reduce(M, 0, "xor"), OXR_OK);
	for (i = 0; i < n; i++)
		pop_error(i, "unknown op \"xor\"");
	/* reset: a new epoch, and everything works after it */
	call(0, "oxr_epoch", 0, NULL);
	pop_is(0, "(CMO_ZZ,0)");
	cr_assert_eq(oxr_master_reset_102(M, TMO), OXR_OK, "reset: %s", oxr_errmsg());
	for (i = 0; i < n; i++) {
		call(i, "oxr_epoch", 0, NULL);
		pop_is(i, "(CMO_ZZ,1)");
	}
	cr_assert_eq(oxr_master_bcast(M, n - 1, T("(CMO_ZZ,4242)")), OXR_OK);
	for (i = 0; i < n; i++)
		pop_is(i, "(CMO_ZZ,4242)");
}

Test(group, four_servers_through_every_rfc102_command_on_openxm_links, .timeout = 120)
{
	up(4);
	every_rfc102_command(4, 1);
	CALL(0, "oxr_link_transport", "(CMO_ZZ,1)");
	pop_is(0, "(CMO_STRING,\"tcp\")");
	/* the barrier and the router need oxr links (windows): a clear error */
	call(0, "oxr_barrier", 0, NULL);
	pop_error(0, "need oxr links");
	CALL(0, "oxr_crystal", "(CMO_LIST,0)");
	pop_error(0, "need oxr links");
	down();
}

Test(group, four_servers_through_every_rfc102_command_on_oxr_links, .timeout = 120)
{
	const char *want = getenv("OXR_TRANSPORT");
	int i, k;
	oxr_cmo *o;

	up(4);
	every_rfc102_command(4, 0);
	CALL(0, "oxr_link_transport", "(CMO_ZZ,1)");
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_STRING);
	if (want && !strcmp(want, "verbs"))
		cr_assert(o->len == 5 && !memcmp(o->data, "verbs", 5), "OXR_TRANSPORT=verbs");
	printf("server links ran on %.*s\n", (int)o->len, (const char *)o->data);
	for (k = 0; k < 3; k++) {
		for (i = 0; i < 4; i++)
			call(i, "oxr_barrier", 0, NULL);
		for (i = 0; i < 4; i++)
			pop_is(i, "(CMO_NULL)");
	}
	/* crystal router: rank i sends [i, "i->d"] to d = (i+1)%4 and (i+2)%4 */
	for (i = 0; i < 4; i++) {
		char l[256];
		snprintf(l, sizeof(l), "(CMO_LIST,2,(CMO_LIST,2,(CMO_ZZ,%d),(CMO_ZZ,%d)),"
			 "(CMO_LIST,2,(CMO_ZZ,%d),(CMO_ZZ,%d)))", (i + 1) % 4, 10 * i + (i + 1) % 4,
			 (i + 2) % 4, 10 * i + (i + 2) % 4);
		CALL(i, "oxr_crystal", l);
	}
	for (i = 0; i < 4; i++) {
		uint32_t r, seen = 0;
		cr_assert_eq(oxr_master_result(M, i, TMO, A, &o), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(o->nkids, 2, "rank %d gets two records", i);
		for (r = 0; r < 2; r++) {
			int src = (int)zz(o->kids[r]->kids[0]);
			int val = (int)zz(o->kids[r]->kids[1]);
			cr_assert_eq(val, 10 * src + i, "rank %d: record from %d", i, src);
			seen |= 1u << src;
		}
		cr_assert_eq(seen, (1u << ((i + 3) % 4)) | (1u << ((i + 2) % 4)));
	}
	down();
}

static void is_text(const oxr_cmo *o, const char *want)
{
	char *t = text_of(o);

	cr_assert_str_eq(t, want);
	free(t);
}

/* The test is rank `peer` of a group of 2 as ox_asir would be, linked to the
 * server (rank 1 - peer) by a plain RFC-102 link; returns the socket. */
static int plain_peer(int peer, int *order)
{
	int lfd, fd, port;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char p[32];

	cr_assert((lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 1), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	push(0, "(CMO_ZZ,2)");
	push(0, peer ? "(CMO_ZZ,0)" : "(CMO_ZZ,1)");
	cmd(0, OXR_SM_set_rank_102);
	push(0, "(CMO_STRING,\"127.0.0.1\")");
	snprintf(p, sizeof(p), "(CMO_ZZ,%d)", port);
	push(0, p);
	push(0, peer ? "(CMO_ZZ,1)" : "(CMO_ZZ,0)");
	cmd(0, OXR_SM_tcp_connect_102);
	cr_assert((fd = accept(lfd, NULL, NULL)) >= 0);
	close(lfd);
	cr_assert_eq(oxr_order_exchange(fd, fd, OXR_ROLE_PEER, OXR_ORDER_BYTE_NETWORK, TMO, order),
		     OXR_OK);
	depth_is(0, 0);
	return fd;
}

/* The test is a plain RFC-102 peer, as ox_asir is: both sides write their
 * byte-order byte first, then plain OX messages. */
Test(group, a_plain_rfc102_peer_speaks_with_a_server)
{
	int fd, order;
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .serial = 7 };
	uint8_t *buf, got[256];
	size_t len, have = 0;

	up(1);
	fd = plain_peer(1, &order);
	cr_assert_eq(order, OXR_ORDER_NETWORK, "a peer asking for network order gets it");
	/* peer -> server: ox_recv_102(1) on the server */
	m.cmo = T("(CMO_ZZ,123123)");
	cr_assert_eq(oxr_ox_encode_alloc(&m, 1, order, &buf, &len), OXR_OK);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	free(buf);
	CALL(0, "ox_recv_102", "(CMO_ZZ,1)");
	pop_is(0, "(CMO_ZZ,123123)");
	/* server -> peer: the exact bytes of the protocol digest's ZZ 123123 */
	CALL(0, "ox_send_102", "(CMO_ZZ,1)", "(CMO_ZZ,123123)");
	pop_is(0, "(CMO_NULL)");
	while (have < 20) {
		ssize_t k = read(fd, got + have, sizeof(got) - have);
		cr_assert(k > 0);
		have += (size_t)k;
	}
	{
		static const uint8_t want_head[] = { 0, 0, 2, 2 };                      /* OX_DATA */
		static const uint8_t want_body[] = { 0, 0, 0, 0x14, 0, 0, 0, 1, 0, 1, 0xe0, 0xf3 };
		cr_assert_arr_eq(got, want_head, 4);
		cr_assert_arr_eq(got + 8, want_body, 12, "ZZ 123123 = 00000014 00000001 0001e0f3");
	}
	close(fd);
	down();
}

/* Ports as asir's spawn102_local gives them: CMO_STRING paths (Unix-domain
 * sockets), the connector's host CMO_NULL.  The link carries a bcast and a
 * reduce both ways, and the socket file is gone once the link is up. */
Test(group, a_string_port_links_two_servers_over_a_unix_socket, .timeout = 60)
{
	char path[64], port[96];
	int i;

	snprintf(path, sizeof(path), "/tmp/oxr-test-%d.sock", (int)getpid());
	snprintf(port, sizeof(port), "(CMO_STRING,\"%s\")", path);
	up(2);
	for (i = 0; i < 2; i++) {
		push(i, "(CMO_ZZ,2)");
		push(i, i ? "(CMO_ZZ,1)" : "(CMO_NULL)");
		cmd(i, OXR_SM_set_rank_102);
	}
	push(0, port);
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_tcp_accept_102);
	push(1, "(CMO_NULL)");
	push(1, port);
	push(1, "(CMO_NULL)");
	cmd(1, OXR_SM_tcp_connect_102);
	depth_is(0, 0);
	depth_is(1, 0);
	cr_assert_neq(access(path, F_OK), 0, "%s is removed once the link is up", path);
	CALL(1, "oxr_link_transport", "(CMO_ZZ,0)");
	pop_is(1, "(CMO_STRING,\"tcp\")");
	push(1, "(CMO_ZZ,123456789012345678901234567890)");
	push(0, "(CMO_ZZ,1)");
	push(1, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_bcast_102);
	cmd(1, OXR_SM_bcast_102);
	pop_is(0, "(CMO_ZZ,123456789012345678901234567890)");
	pop_is(1, "(CMO_ZZ,123456789012345678901234567890)");
	for (i = 0; i < 2; i++) {
		push(i, i ? "(CMO_ZZ,-5)" : "(CMO_ZZ,12)");
		push(i, "(CMO_ZZ,0)");
		push(i, "(CMO_STRING,\"+\")");
		cmd(i, OXR_SM_reduce_102);
	}
	pop_is(0, "(CMO_ZZ,7)");
	pop_is(1, "(CMO_NULL)");
	down();
}

/* SM_reset_102 on a plain link goes as ox_asir's (asir_reset_102): a rank
 * reads each lower rank's stream up to its OX_SYNC_BALL and sends one ball
 * to each higher rank; no ball ever goes down, and none is waited for from
 * above.  Server at rank 0 below the test: its ball comes up, it waits for
 * none, and the next message is the data.  Server at rank 1: it drops what
 * the test sent before its ball, and sends no ball down, so the test's
 * next read (as asir's ox_recv_102) is the data, not a stale ball. */
Test(group, a_plain_link_resets_in_asirs_order, .timeout = 60)
{
	oxr_ox_msg m;
	int fd, order;

	up(1);
	fd = plain_peer(1, &order);
	cmd(0, OXR_SM_reset_102);
	depth_is(0, 0); /* done without a ball from above */
	m = ox_recv(fd, order);
	cr_assert_eq(m.tag, OXR_OX_SYNC_BALL, "rank 0 sends its ball up");
	CALL(0, "ox_send_102", "(CMO_ZZ,1)", "(CMO_ZZ,5)");
	pop_is(0, "(CMO_NULL)");
	m = ox_recv(fd, order);
	cr_assert_eq(m.tag, OXR_OX_DATA);
	is_text(m.cmo, "(CMO_ZZ,5)");
	close(fd);
	down();

	up(1);
	fd = plain_peer(0, &order);
	ox_send(fd, order, OXR_OX_DATA, 0, T("(CMO_ZZ,99)")); /* stale: before the ball */
	ox_send(fd, order, OXR_OX_SYNC_BALL, 0, NULL);
	ox_send(fd, order, OXR_OX_DATA, 0, T("(CMO_ZZ,8)"));  /* the new epoch's */
	cmd(0, OXR_SM_reset_102);
	depth_is(0, 0);
	CALL(0, "ox_send_102", "(CMO_ZZ,0)", "(CMO_ZZ,6)");
	pop_is(0, "(CMO_NULL)");
	m = ox_recv(fd, order);
	cr_assert_eq(m.tag, OXR_OX_DATA, "no ball goes down to rank 0 (tag %d)", m.tag);
	is_text(m.cmo, "(CMO_ZZ,6)");
	CALL(0, "ox_recv_102", "(CMO_ZZ,0)");
	pop_is(0, "(CMO_ZZ,8)");
	close(fd);
	down();
}

Test(group, reset_during_a_long_bcast_brings_every_server_back, .timeout = 120)
{
	oxr_cmo *big;
	uint8_t *p;
	/* past the pipelined chain's threshold; the bcast cannot end anyway,
	 * since server 3 never joins it (smaller under emulation) */
	size_t n = getenv("OXR_TEST_QUICK") ? 5u << 20 : 32u << 20;
	int i;

	up(4);
	cr_assert_eq(oxr_master_group(M, 0, TMO), OXR_OK, "group: %s", oxr_errmsg());
	cr_assert((p = malloc(n)));
	fill_pattern(p, n, 7, 0);
	big = oxr_cmo_new_bytes(A, OXR_CMO_DATUM, p, n);
	free(p);
	/* servers 0..2 enter the bcast; server 3 never does, so it cannot end */
	cr_assert_eq(oxr_master_push(M, 0, big), OXR_OK);
	for (i = 0; i < 3; i++) {
		push(i, "(CMO_ZZ,0)");
		cmd(i, OXR_SM_bcast_102);
	}
	usleep(300000);
	cr_assert_eq(oxr_master_reset_102(M, TMO), OXR_OK, "reset: %s", oxr_errmsg());
	for (i = 0; i < 4; i++) {
		call(i, "oxr_epoch", 0, NULL);
		pop_is(i, "(CMO_ZZ,1)");
		push(i, "(CMO_ZZ,100)"); /* drop whatever the abandoned bcast left */
		cmd(i, OXR_SM_pops);
		depth_is(i, 0);
	}
	cr_assert_eq(oxr_master_bcast(M, 2, T("(CMO_STRING,\"after\")")), OXR_OK);
	for (i = 0; i < 4; i++)
		pop_is(i, "(CMO_STRING,\"after\")");
	down();
}

/* ---- started by hand: --listen with the ox launcher's password ------- */

static pid_t spawn_listener(const char *pw, int *port)
{
	char *argv[] = { SERVER, "--listen", "0", "--password", (char *)pw, NULL };
	posix_spawn_file_actions_t fa;
	int out[2];
	pid_t pid;
	char line[64] = "";
	size_t n = 0;

	cr_assert_eq(pipe(out), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	cr_assert_eq(posix_spawn(&pid, SERVER, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	while (n < sizeof(line) - 1 && read(out[0], line + n, 1) == 1 && line[n] != '\n')
		n++;
	close(out[0]);
	cr_assert_eq(sscanf(line, "port %d", port), 1, "oxr-server printed \"%s\"", line);
	return pid;
}

static int dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

Test(launch, listen_with_a_one_time_password_then_serve)
{
	pid_t pid;
	int port, cfd, dfd, order, corder, status;
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .serial = 1 };
	uint8_t *buf, got[64];
	size_t len, have = 0;

	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
	pid = spawn_listener("s3cret", &port);
	cfd = dial(port);
	cr_assert_eq(write(cfd, "s3cret", 7), 7); /* the password and its NUL */
	dfd = dial(port);
	cr_assert_eq(write(dfd, "s3cret", 7), 7);
	cr_assert_eq(oxr_order_exchange(cfd, cfd, OXR_ROLE_CLIENT, OXR_ORDER_BYTE_NETWORK, TMO,
					&corder), OXR_OK);
	cr_assert_eq(oxr_order_exchange(dfd, dfd, OXR_ROLE_CLIENT, OXR_ORDER_BYTE_NETWORK, TMO,
					&order), OXR_OK);
	cr_assert_eq(order, OXR_ORDER_NETWORK);
	m.cmo = T("(CMO_ZZ,14)");
	cr_assert_eq(oxr_ox_encode_alloc(&m, 1, order, &buf, &len), OXR_OK);
	cr_assert_eq(write(dfd, buf, len), (ssize_t)len);
	free(buf);
	m = (oxr_ox_msg){ .tag = OXR_OX_COMMAND, .serial = 2, .sm = OXR_SM_popCMO };
	cr_assert_eq(oxr_ox_encode_alloc(&m, 1, order, &buf, &len), OXR_OK);
	cr_assert_eq(write(dfd, buf, len), (ssize_t)len);
	free(buf);
	while (have < 20) {
		ssize_t k = read(dfd, got + have, sizeof(got) - have);
		cr_assert(k > 0);
		have += (size_t)k;
	}
	{ /* OX_DATA, serial, then ZZ 14 = 00000014 00000001 0000000e (network order) */
		static const uint8_t zz14[] = { 0, 0, 0, 0x14, 0, 0, 0, 1, 0, 0, 0, 0xe };
		cr_assert_arr_eq(got + 8, zz14, 12);
	}
	/* SM_control_kill on the control channel ends it */
	m = (oxr_ox_msg){ .tag = OXR_OX_COMMAND, .sm = OXR_SM_control_kill };
	cr_assert_eq(oxr_ox_encode_alloc(&m, 1, corder, &buf, &len), OXR_OK);
	cr_assert_eq(write(cfd, buf, len), (ssize_t)len);
	free(buf);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	close(cfd);
	close(dfd);

	/* a wrong password is refused: the server ends without serving */
	pid = spawn_listener("right", &port);
	cfd = dial(port);
	cr_assert_eq(write(cfd, "wrong", 6), 6);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x", status);
	close(cfd);
	oxr_arena_destroy(A);
}

/* A server dies; the survivors' receives from it fail naming it; a new
 * server is started in its place, linked (it takes the group's epoch, 1),
 * and after the reset the group of the same size works again, every rank
 * in epoch 2. */
Test(group, a_restarted_server_rejoins_and_the_reset_makes_the_group_whole, .timeout = 120)
{
	int i;

	up(3);
	cr_assert_eq(oxr_master_group(M, 0, TMO), OXR_OK, "group: %s", oxr_errmsg());
	cr_assert_eq(oxr_master_bcast(M, 0, T("(CMO_ZZ,1)")), OXR_OK);
	for (i = 0; i < 3; i++)
		pop_is(i, "(CMO_ZZ,1)");
	/* epoch 1 before the failure: the new server must take it over */
	cr_assert_eq(oxr_master_reset_102(M, TMO), OXR_OK, "reset: %s", oxr_errmsg());
	cr_assert_eq(oxr_master_kill(M, 2), OXR_OK);
	/* a receive from the dead server fails, naming it (a bcast from rank 0
	 * need not: on verbs its sends may complete before the failure shows) */
	for (i = 0; i < 2; i++)
		CALL(i, "ox_recv_102", "(CMO_ZZ,2)");
	for (i = 0; i < 2; i++)
		pop_error(i, "rank 2");
	/* SM_reset_102 cannot make a group whole without its dead rank */
	for (i = 0; i < 2; i++) {
		cr_assert_eq(oxr_master_reset(M, i, TMO), OXR_OK, "%s", oxr_errmsg());
		cmd(i, OXR_SM_reset_102);
	}
	for (i = 0; i < 2; i++)
		pop_error(i, "a reset needs every rank");
	cr_assert_eq(oxr_master_restart(M, 2, TMO), OXR_OK, "restart: %s", oxr_errmsg());
	cr_assert_eq(oxr_master_reset_102(M, TMO), OXR_OK, "reset: %s", oxr_errmsg());
	for (i = 0; i < 3; i++) {
		call(i, "oxr_epoch", 0, NULL);
		pop_is(i, "(CMO_ZZ,2)");
		push(i, "(CMO_ZZ,100)");
		cmd(i, OXR_SM_pops);
	}
	cr_assert_eq(oxr_master_bcast(M, 2, T("(CMO_STRING,\"whole again\")")), OXR_OK);
	for (i = 0; i < 3; i++)
		pop_is(i, "(CMO_STRING,\"whole again\")");
	for (i = 0; i < 3; i++)
		push(i, "(CMO_ZZ,7)");
	cr_assert_eq(oxr_master_reduce(M, 1, "+"), OXR_OK);
	pop_is(1, "(CMO_ZZ,21)");
	down();
}

/* A group where server 1 is taken for a plain OpenXM engine (what the
 * master does when a mathcap says ox_asir): the links among the others are
 * oxr links (verbs in the guest), every link to server 1 plain RFC-102 TCP;
 * a link set up the wrong way would fail its handshake.  Collectives run
 * over the mix; the barrier, which needs oxr links to every rank, refuses. */
Test(group, oxr_links_among_oxr_servers_and_plain_links_to_an_openxm_engine, .timeout = 120)
{
	const char *want = getenv("OXR_TRANSPORT");
	oxr_cmo *o;
	int i;

	up(4);
	oxr_master_set_plain(M, 1);
	cr_assert_eq(oxr_master_group(M, 0, TMO), OXR_OK, "group: %s", oxr_errmsg());
	CALL(0, "oxr_link_transport", "(CMO_ZZ,1)");
	pop_is(0, "(CMO_STRING,\"tcp\")");
	CALL(0, "oxr_link_transport", "(CMO_ZZ,2)");
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	if (want && !strcmp(want, "verbs"))
		cr_assert(o->len == 5 && !memcmp(o->data, "verbs", 5), "0-2 is an oxr link on verbs");
	for (i = 0; i < 4; i++) {
		char obj[64];
		cr_assert_eq(oxr_master_bcast(M, i, T("(CMO_LIST,1,(CMO_ZZ,9))")), OXR_OK);
		for (int k = 0; k < 4; k++)
			pop_is(k, "(CMO_LIST,1,(CMO_ZZ,9))");
		for (int k = 0; k < 4; k++) {
			snprintf(obj, sizeof(obj), "(CMO_ZZ,%d)", k + 1);
			push(k, obj);
		}
		cr_assert_eq(oxr_master_reduce(M, i, "+"), OXR_OK);
		for (int k = 0; k < 4; k++)
			pop_is(k, k == i ? "(CMO_ZZ,10)" : "(CMO_NULL)");
	}
	call(0, "oxr_barrier", 0, NULL);
	pop_error(0, "no rank may be a plain OpenXM engine");
	down();
}
