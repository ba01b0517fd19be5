/* SPDX-License-Identifier: MIT */
/*
 * oxr-server's command contract, command by command (issue 7's audit):
 * the mathcap names exactly the commands that run; SM_pops, SM_getsp,
 * SM_dupErrors, SM_pushCMOtag, SM_nop and SM_popString as the protocol
 * digest (section 8) defines them; the stack bound; a wrong argument type
 * for every command that takes one is an error that consumes its
 * arguments, and the next request on the same connection is served; the
 * RFC-102 commands take integers as ZZ, INT32 or CMO_NULL; and the two
 * ways of starting an engine that oxr-master does not use (fds 3 and 4
 * with no control channel, --connect with the ox launcher's password),
 * the control channel's reset and shutdown spoken on the wire.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oxr_internal.h"
#include "server_harness.h"

extern char **environ;

/* The request after an error is served: a push and its pop. */
static void serves(int i)
{
	push(i, "(CMO_STRING,\"still here\")");
	pop_is(i, "(CMO_STRING,\"still here\")");
}

static const oxr_cmo *mathcap_of(int i)
{
	oxr_cmo *mc;

	cmd(i, OXR_SM_mathcap);
	cr_assert_eq(oxr_master_pop(M, i, TMO, A, &mc), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(mc->tag, OXR_CMO_MATHCAP);
	cr_assert(mc->kids[0]->tag == OXR_CMO_LIST && mc->kids[0]->nkids == 3);
	return mc->kids[0];
}

static int listed(const oxr_cmo *l, int32_t v)
{
	uint32_t k;

	for (k = 0; k < l->nkids; k++)
		if (l->kids[k]->tag == OXR_CMO_INT32 && l->kids[k]->v.i32 == v)
			return 1;
	return 0;
}

/* No error on server i's stack says that code was refused as unknown;
 * then the stack is emptied. */
static void not_refused(int i, int32_t code)
{
	char refused[64];
	oxr_cmo *errs;
	uint32_t k;

	snprintf(refused, sizeof(refused), "unknown SM code %d", code);
	cmd(i, OXR_SM_dupErrors);
	cr_assert_eq(oxr_master_pop(M, i, TMO, A, &errs), OXR_OK);
	cr_assert_eq(errs->tag, OXR_CMO_LIST);
	for (k = 0; k < errs->nkids; k++) {
		const oxr_cmo *msg = errs->kids[k]->kids[0]->kids[2];
		cr_assert(!memmem(msg->data, msg->len, refused, strlen(refused)),
			  "SM %d is in the mathcap but refused", code);
	}
	push(i, "(CMO_ZZ,1000000)");
	cmd(i, OXR_SM_pops);
	depth_is(i, 0);
}

Test(mathcap, every_listed_command_is_run_and_every_other_refused, .timeout = 120)
{
	static const int32_t far[] = { -1, INT32_MIN, INT32_MAX, 0x7fff0000, 4096, 65536 };
	const oxr_cmo *mc, *sms, *cmos;
	int32_t c;
	size_t k;

	up(1);
	mc = mathcap_of(0);
	cr_assert_eq(mc->kids[0]->kids[1]->tag, OXR_CMO_STRING, "the system name");
	sms = mc->kids[1];
	cr_assert(listed(sms, OXR_SM_shutdown)); /* run last, by down() */
	for (k = 0; k < sms->nkids; k++) {
		c = sms->kids[k]->v.i32;
		if (c == OXR_SM_shutdown)
			continue;
		if (c == OXR_SM_popCMO || c == OXR_SM_popString) {
			oxr_cmo *o;
			push(0, "(CMO_ZZ,5)");
			cmd(0, c);
			cr_assert_eq(oxr_master_recv(M, 0, TMO, A, &o), OXR_OK);
			cr_assert_neq(o->tag, OXR_CMO_ERROR2, "SM %d answers with an error", c);
			continue;
		}
		cmd(0, c); /* on an empty stack: run, it fails for want of arguments at most */
		not_refused(0, c);
	}
	/* every code it does not list, around the listed ones and far off */
	for (c = 0; c <= 1100; c++)
		if (!listed(sms, c)) {
			char want[64];
			cmd(0, c);
			snprintf(want, sizeof(want), "unknown SM code %d", c);
			pop_error(0, want);
		}
	for (k = 0; k < sizeof(far) / sizeof(far[0]); k++) {
		char want[64];
		cmd(0, far[k]);
		snprintf(want, sizeof(want), "unknown SM code %d", far[k]);
		pop_error(0, want);
	}
	/* the data tags it lists are tags its codec knows */
	cmos = mc->kids[2]->kids[0];
	cr_assert_eq(cmos->kids[0]->v.i32, OXR_OX_DATA);
	for (k = 0; k < cmos->kids[1]->nkids; k++)
		cr_assert_not_null(oxr_cmo_tag_name(cmos->kids[1]->kids[k]->v.i32), "CMO tag %d",
				   cmos->kids[1]->kids[k]->v.i32);
	serves(0);
	down();
}

/* ---- the stack commands, as protocol doc section 8 defines them ------ */

Test(sm, pops_takes_every_integer_form_and_refuses_a_negative_count, .timeout = 120)
{
	int k;

	up(1);
	for (k = 1; k <= 5; k++)
		push(0, "(CMO_ZZ,1)");
	push(0, "(CMO_INT32,2)");
	cmd(0, OXR_SM_pops);
	depth_is(0, 3);
	push(0, "(CMO_NULL)"); /* asir's 0 */
	cmd(0, OXR_SM_pops);
	depth_is(0, 3);
	push(0, "(CMO_ZZ,1)");
	cmd(0, OXR_SM_pops);
	depth_is(0, 2);
	push(0, "(CMO_ZZ,-1)");
	cmd(0, OXR_SM_pops);
	pop_error(0, "negative count");
	depth_is(0, 2);
	push(0, "(CMO_ZZ,99)"); /* more than the stack holds: all of it */
	cmd(0, OXR_SM_pops);
	depth_is(0, 0);
	serves(0);
	down();
}

Test(sm, dup_errors_pushes_every_error_in_stack_order_and_leaves_them, .timeout = 120)
{
	oxr_cmo *l;

	up(1);
	cmd(0, OXR_SM_dupErrors); /* none: an empty list */
	pop_is(0, "(CMO_LIST,0)");
	cmd(0, 5000);
	push(0, "(CMO_ZZ,1)");
	cmd(0, 5001);
	cmd(0, OXR_SM_dupErrors);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &l), OXR_OK);
	cr_assert_eq(l->tag, OXR_CMO_LIST);
	cr_assert_eq(l->nkids, 2);
	cr_assert_eq(l->kids[0]->tag, OXR_CMO_ERROR2);
	cr_assert(memmem(l->kids[0]->kids[0]->kids[2]->data, l->kids[0]->kids[0]->kids[2]->len,
			 "5000", 4), "the deepest error first");
	cr_assert(memmem(l->kids[1]->kids[0]->kids[2]->data, l->kids[1]->kids[0]->kids[2]->len,
			 "5001", 4));
	depth_is(0, 3); /* the errors themselves stay */
	pop_error(0, "5001");
	pop_is(0, "(CMO_ZZ,1)");
	pop_error(0, "5000");
	down();
}

Test(sm, push_cmo_tag_names_the_top_and_leaves_it, .timeout = 120)
{
	static const struct { const char *obj; int tag; } c[] = {
		{ "(CMO_ZZ,-7)", OXR_CMO_ZZ }, { "(CMO_STRING,\"s\")", OXR_CMO_STRING },
		{ "(CMO_LIST,0)", OXR_CMO_LIST }, { "(CMO_NULL)", OXR_CMO_NULL },
		{ "(CMO_QQ,1,2)", OXR_CMO_QQ }, { "(CMO_IEEE_DOUBLE_FLOAT,0.25)", OXR_CMO_IEEE_DOUBLE_FLOAT },
	};
	char want[64];
	size_t k;

	up(1);
	for (k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		push(0, c[k].obj);
		cmd(0, OXR_SM_pushCMOtag);
		snprintf(want, sizeof(want), "(CMO_INT32,%d)", c[k].tag);
		pop_is(0, want);
		pop_is(0, c[k].obj);
	}
	cmd(0, 5002); /* an error object's tag is CMO_ERROR2's */
	cmd(0, OXR_SM_pushCMOtag);
	snprintf(want, sizeof(want), "(CMO_INT32,%d)", OXR_CMO_ERROR2);
	pop_is(0, want);
	pop_error(0, "5002");
	depth_is(0, 0);
	down();
}

Test(sm, nop_changes_nothing_and_getsp_counts_before_its_own_push, .timeout = 120)
{
	up(1);
	depth_is(0, 0);
	push(0, "(CMO_ZZ,7)");
	cmd(0, OXR_SM_nop);
	cmd(0, OXR_SM_nop);
	depth_is(0, 1);
	pop_is(0, "(CMO_ZZ,7)");
	down();
}

Test(sm, pop_string_on_an_empty_stack_or_against_the_masters_mathcap_is_an_error, .timeout = 120)
{
	oxr_cmo *o;

	up(1);
	cmd(0, OXR_SM_popString);
	cr_assert_eq(oxr_master_recv(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_ERROR2, "a master waiting for a reply gets one");
	serves(0);
	/* a master that takes no CMO_STRING: the printed form cannot go */
	push(0, "(CMO_MATHCAP,(CMO_LIST,3,(CMO_LIST,2,(CMO_INT32,1),(CMO_STRING,\"m\")),"
		"(CMO_LIST,1,(CMO_INT32,262)),(CMO_LIST,1,(CMO_LIST,2,(CMO_INT32,514),"
		"(CMO_LIST,2,(CMO_INT32,20),(CMO_INT32,2130706434))))))");
	cmd(0, OXR_SM_setMathcap);
	push(0, "(CMO_ZZ,3)");
	cmd(0, OXR_SM_popString);
	cr_assert_eq(oxr_master_recv(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_ERROR2);
	cr_assert(memmem(o->kids[0]->kids[2]->data, o->kids[0]->kids[2]->len, "Mathcap violation",
			 17));
	push(0, "(CMO_ZZ,3)"); /* a ZZ it takes */
	pop_is(0, "(CMO_ZZ,3)");
	down();
}

/* OXR_SERVER_MAX_STACK: a push beyond is an error, and an error still gets
 * onto a full stack (in the top's place), so the master hears of it. */
Test(sm, a_full_stack_refuses_a_push_and_still_reports, .timeout = 120)
{
	setenv("OXR_SERVER_MAX_STACK", "4", 1);
	up(1);
	unsetenv("OXR_SERVER_MAX_STACK");
	push(0, "(CMO_ZZ,1)");
	push(0, "(CMO_ZZ,2)");
	push(0, "(CMO_ZZ,3)");
	depth_is(0, 3);
	push(0, "(CMO_ZZ,4)");
	push(0, "(CMO_ZZ,5)");
	pop_error(0, "OXR_SERVER_MAX_STACK");
	depth_is(0, 3);
	push(0, "(CMO_ZZ,4)");
	cmd(0, OXR_SM_getsp); /* its answer has no room either */
	pop_error(0, "OXR_SERVER_MAX_STACK");
	cmd(0, OXR_SM_mathcap);
	cmd(0, OXR_SM_pushCMOtag);
	pop_error(0, "OXR_SERVER_MAX_STACK");
	pop_is(0, "(CMO_ZZ,3)");
	serves(0);
	down();
}

/* ---- a wrong argument type, command by command ----------------------- */

struct bad_args {
	int32_t sm;
	const char *args[3]; /* pushed in this order: the last is the top */
	const char *says;
};

static void run_bad_args(int i, const struct bad_args *c, size_t n)
{
	size_t k, j;

	for (k = 0; k < n; k++) {
		for (j = 0; j < 3 && c[k].args[j]; j++)
			push(i, c[k].args[j]);
		cmd(i, c[k].sm);
		pop_error(i, c[k].says);
		depth_is(i, 0); /* its arguments went with it */
		serves(i);
	}
}

Test(hostile, every_command_refuses_a_wrong_argument_type_and_the_next_request_is_served, .timeout = 120)
{
	static const struct bad_args rfc100[] = {
		{ OXR_SM_setName, { "(CMO_ZZ,1)", "(CMO_INT32,1)" }, "SM_setName: expected a CMO_STRING" },
		{ OXR_SM_evalName, { "(CMO_ZZ,1)" }, "SM_evalName: expected a CMO_STRING" },
		{ OXR_SM_executeFunction, { "(CMO_LIST,0)" }, "SM_executeFunction: expected a CMO_STRING" },
		{ OXR_SM_executeFunction, { "(CMO_STRING,\"x\")", "(CMO_STRING,\"add\")" },
		  "argument count): expected an integer" },
		{ OXR_SM_pops, { "(CMO_STRING,\"2\")" }, "SM_pops: expected an integer" },
		{ OXR_SM_pops, { "(CMO_ZZ,99999999999999999999)" }, "out of range" },
		{ OXR_SM_setMathcap, { "(CMO_LIST,0)" }, "not a CMO_MATHCAP" },
		{ OXR_SM_set_rank_102, { "(CMO_STRING,\"2\")", "(CMO_ZZ,0)" },
		  "nserver: expected an integer" },
		{ OXR_SM_set_rank_102, { "(CMO_ZZ,2)", "(CMO_IEEE_DOUBLE_FLOAT,1)" },
		  "rank: expected an integer" },
		{ OXR_SM_bcast_102, { "(CMO_STRING,\"0\")" }, "root: expected an integer" },
		{ OXR_SM_reduce_102, { "(CMO_ZZ,1)", "(CMO_ZZ,0)", "(CMO_ZZ,43)" },
		  "op: expected a CMO_STRING" },
	};
	/* in a group (no links yet), so that the argument checks come first */
	static const struct bad_args rfc102[] = {
		{ OXR_SM_tcp_accept_102, { "(CMO_ZZ,4000)", "(CMO_STRING,\"1\")" },
		  "peer rank: expected an integer" },
		{ OXR_SM_tcp_accept_102, { "(CMO_LIST,0)", "(CMO_ZZ,1)" }, "port: expected an integer" },
		{ OXR_SM_tcp_accept_102, { "(CMO_ZZ,70000)", "(CMO_ZZ,1)" }, "not a TCP port" },
		{ OXR_SM_tcp_connect_102, { "(CMO_ZZ,127)", "(CMO_ZZ,4000)", "(CMO_ZZ,1)" },
		  "host: expected a CMO_STRING" },
		{ OXR_SM_tcp_connect_102, { "(CMO_STRING,\"h\")", "(CMO_ZZ,4000)", "(CMO_ZZ,2)" },
		  "rank 2 is not in the group" },
		{ OXR_SM_bcast_102, { "(CMO_ZZ,-1)" }, "rank -1 is not in the group" },
		{ OXR_SM_reduce_102, { "(CMO_ZZ,1)", "(CMO_STRING,\"0\")", "(CMO_STRING,\"+\")" },
		  "root: expected an integer" },
		{ OXR_SM_reduce_102, { "(CMO_ZZ,1)", "(CMO_ZZ,0)", "(CMO_STRING,\"^\")" },
		  "unknown op \"^\"" },
	};

	up(1);
	run_bad_args(0, rfc100, sizeof(rfc100) / sizeof(rfc100[0]));
	push(0, "(CMO_ZZ,2)");
	push(0, "(CMO_ZZ,0)");
	cmd(0, OXR_SM_set_rank_102);
	depth_is(0, 0);
	run_bad_args(0, rfc102, sizeof(rfc102) / sizeof(rfc102[0]));
	down();
}

/* Framed messages that are wrong as a whole: each an error, and the
 * session goes on (bytes that cannot be framed end it: test_server). */
Test(hostile, framed_but_wrong_messages_are_errors_and_the_next_request_is_served, .timeout = 120)
{
	const uint32_t ball[] = { OXR_OX_SYNC_BALL, 9 };
	const uint32_t neg_sm[] = { OXR_OX_COMMAND, 10, 0xffffffff };
	const uint32_t control_sm[] = { OXR_OX_COMMAND, 11, OXR_SM_control_reset_connection };

	up(1);
	raw_words(0, ball, 2); /* a stray ball outside a reset: nothing */
	depth_is(0, 0);
	raw_words(0, neg_sm, 3);
	pop_error(0, "unknown SM code -1");
	serves(0);
	raw_words(0, control_sm, 3); /* a control command on the data channel */
	pop_error(0, "unknown SM code 1030");
	serves(0);
	push(0, "(CMO_ERROR2,(CMO_LIST,3,(CMO_INT32,0),(CMO_INT32,-1),(CMO_STRING,\"forged\")))");
	cmd(0, OXR_SM_evalName); /* an error where a name should be */
	pop_error(0, "expected a CMO_STRING");
	serves(0);
	CALL(0, "nth", "(CMO_LIST,1,(CMO_ZZ,5))", "(CMO_ZZ,-1)");
	pop_error(0, "index out of range");
	serves(0);
	CALL(0, "oxr_set_token", "(CMO_DATUM,\"short\")");
	pop_error(0, "one CMO_DATUM of 32 bytes");
	serves(0);
	down();
}

/* ---- RFC-102's integers: ZZ, INT32 or CMO_NULL (= 0) ------------------- */

/* A group of two linked by hand, every integer argument of 278-283 given
 * as INT32 or CMO_NULL somewhere (oxr_master_group gives ZZs). */
Test(rfc102, integer_arguments_are_taken_as_int32_or_null_as_asir_sends_them, .timeout = 120)
{
	const oxr_cmo *zero;
	oxr_cmo *p;
	char port[64];
	int i;

	up(2);
	push(0, "(CMO_INT32,2)");
	push(0, "(CMO_NULL)"); /* rank 0 */
	cmd(0, OXR_SM_set_rank_102);
	push(1, "(CMO_ZZ,2)");
	push(1, "(CMO_INT32,1)");
	cmd(1, OXR_SM_set_rank_102);
	zero = T("(CMO_NULL)");
	cr_assert_eq(oxr_master_call(M, 1, "oxr_listen_102", 1, &zero), OXR_OK);
	cr_assert_eq(oxr_master_result(M, 1, TMO, A, &p), OXR_OK, "%s", oxr_errmsg());
	/* rank 1 accepts rank 0 (NULL) on an INT32 port; rank 0 connects with a
	 * ZZ port to rank 1 given as INT32 */
	snprintf(port, sizeof(port), "(CMO_INT32,%ld)", zz(p));
	push(1, port);
	push(1, "(CMO_NULL)");
	cmd(1, OXR_SM_tcp_accept_102);
	snprintf(port, sizeof(port), "(CMO_ZZ,%ld)", zz(p));
	push(0, "(CMO_STRING,\"127.0.0.1\")");
	push(0, port);
	push(0, "(CMO_INT32,1)");
	cmd(0, OXR_SM_tcp_connect_102);
	cr_assert_eq(oxr_master_sync(M, TMO), OXR_OK, "%s", oxr_errmsg());
	depth_is(0, 0);
	depth_is(1, 0);
	/* bcast, root NULL then INT32 */
	push(0, "(CMO_STRING,\"from 0\")");
	for (i = 0; i < 2; i++) {
		push(i, "(CMO_NULL)");
		cmd(i, OXR_SM_bcast_102);
	}
	push(1, "(CMO_STRING,\"from 1\")");
	for (i = 0; i < 2; i++) {
		push(i, "(CMO_INT32,1)");
		cmd(i, OXR_SM_bcast_102);
	}
	for (i = 0; i < 2; i++) {
		pop_is(i, "(CMO_STRING,\"from 1\")");
		pop_is(i, "(CMO_STRING,\"from 0\")");
	}
	/* reduce, root NULL then INT32: nothing but the result on the root */
	for (i = 0; i < 2; i++) {
		push(i, i ? "(CMO_ZZ,5)" : "(CMO_ZZ,2)");
		push(i, "(CMO_NULL)");
		push(i, "(CMO_STRING,\"*\")");
		cmd(i, OXR_SM_reduce_102);
		push(i, i ? "(CMO_ZZ,5)" : "(CMO_ZZ,2)");
		push(i, "(CMO_INT32,1)");
		push(i, "(CMO_STRING,\"+\")");
		cmd(i, OXR_SM_reduce_102);
	}
	pop_is(0, "(CMO_NULL)");
	pop_is(0, "(CMO_ZZ,10)");
	pop_is(1, "(CMO_ZZ,7)");
	pop_is(1, "(CMO_NULL)");
	/* reset (no arguments): nothing pushed, a new epoch */
	for (i = 0; i < 2; i++)
		cmd(i, OXR_SM_reset_102);
	cr_assert_eq(oxr_master_sync(M, TMO), OXR_OK, "%s", oxr_errmsg());
	for (i = 0; i < 2; i++) {
		depth_is(i, 0);
		call(i, "oxr_epoch", 0, NULL);
		pop_is(i, "(CMO_ZZ,1)");
	}
	down();
}

/* ---- started by hand ------------------------------------------------- */

/* OpenXM's own launcher: the data socket on fds 3 and 4, nothing else. */
Test(launch, fds_3_and_4_from_a_launcher_without_a_control_channel, .timeout = 120)
{
	char *argv[] = { SERVER, NULL };
	posix_spawn_file_actions_t fa;
	int sp[2], order, status, end;
	pid_t pid;
	oxr_ox_msg m;

	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	/* above 4, so that placing it on 3 and 4 cannot close it first */
	cr_assert((end = fcntl(sp[1], F_DUPFD_CLOEXEC, 10)) >= 10);
	close(sp[1]);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, end, 3);
	posix_spawn_file_actions_adddup2(&fa, end, 4);
	cr_assert_eq(posix_spawn(&pid, SERVER, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(end);
	cr_assert_eq(oxr_order_exchange(sp[0], sp[0], OXR_ROLE_CLIENT, OXR_ORDER_BYTE_LITTLE, TMO,
					&order), OXR_OK);
	ox_send(sp[0], order, OXR_OX_DATA, 0, T("(CMO_ZZ,123123)"));
	ox_send(sp[0], order, OXR_OX_COMMAND, OXR_SM_popString, NULL);
	m = ox_recv(sp[0], order);
	cr_assert_eq(m.tag, OXR_OX_DATA);
	cr_assert(m.cmo->tag == OXR_CMO_STRING && m.cmo->len == 6 && !memcmp(m.cmo->data, "123123", 6));
	ox_send(sp[0], order, OXR_OX_COMMAND, OXR_SM_shutdown, NULL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	close(sp[0]);
	oxr_arena_destroy(A);
}

/* ox -reverse: the engine connects control, then data, each followed by the
 * one-time password and a NUL; then the reset of protocol doc section 4
 * and SM_shutdown, spoken on the wire. */
Test(launch, connect_back_with_a_password_then_reset_and_shutdown_on_the_control_channel, .timeout = 120)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char where[64], pw[16];
	char *argv[] = { SERVER, "--connect", where, "--password", "otp-42", NULL };
	int lfd, fd[2], order[2], status, k, dropped = 0;
	pid_t pid;
	oxr_ox_msg m;

	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
	cr_assert((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 2), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(where, sizeof(where), "127.0.0.1:%d", ntohs(sa.sin_port));
	cr_assert_eq(posix_spawn(&pid, SERVER, NULL, NULL, argv, environ), 0);
	for (k = 0; k < 2; k++) { /* control first, then data */
		cr_assert((fd[k] = accept(lfd, NULL, NULL)) >= 0);
		cr_assert_eq(recv(fd[k], pw, 7, MSG_WAITALL), 7);
		cr_assert_arr_eq(pw, "otp-42", 7, "the password and its NUL");
	}
	close(lfd);
	for (k = 0; k < 2; k++)
		cr_assert_eq(oxr_order_exchange(fd[k], fd[k], OXR_ROLE_CLIENT, OXR_ORDER_BYTE_NETWORK,
						TMO, &order[k]), OXR_OK);
	ox_send(fd[1], order[1], OXR_OX_DATA, 0, T("(CMO_ZZ,14)"));
	/* the reset: the engine's ball (after whatever it was sending), ours */
	ox_send(fd[0], order[0], OXR_OX_COMMAND, OXR_SM_control_reset_connection, NULL);
	while ((m = ox_recv(fd[1], order[1])).tag != OXR_OX_SYNC_BALL)
		dropped++;
	cr_assert_eq(dropped, 0, "the engine sends nothing unasked");
	ox_send(fd[1], order[1], OXR_OX_SYNC_BALL, 0, NULL);
	ox_send(fd[1], order[1], OXR_OX_DATA, 0, T("(CMO_STRING,\"after the reset\")"));
	ox_send(fd[1], order[1], OXR_OX_COMMAND, OXR_SM_popCMO, NULL);
	m = ox_recv(fd[1], order[1]);
	cr_assert(m.tag == OXR_OX_DATA && m.cmo->tag == OXR_CMO_STRING && m.cmo->len == 15,
		  "served after the reset");
	ox_send(fd[0], order[0], OXR_OX_COMMAND, OXR_SM_shutdown, NULL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	close(fd[0]);
	close(fd[1]);
	oxr_arena_destroy(A);
}
