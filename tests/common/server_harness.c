/* SPDX-License-Identifier: MIT */
/*
 * oxr-server tests' master side: servers started by oxr_master_launch (fds
 * 3/4 and a control channel), objects written in the bconv notation, and
 * assertions on what comes back.  One master (M) and one arena (A) per test.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "oxr/cmo_text.h"
#include "oxr/master.h"
#include "oxr_internal.h"
#include "server_harness.h"

oxr_master *M;
oxr_arena *A;

void up(int n)
{
	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
	cr_assert_eq(oxr_master_launch(SERVER, n, &M), OXR_OK, "launch: %s", oxr_errmsg());
}

/* Every server still running ends by SM_shutdown, with status 0: no
 * crash, and in the Sanitize build no leak (LeakSanitizer fails the exit). */
void down(void)
{
	int i, status;

	for (i = 0; i < oxr_master_size(M); i++) {
		(void)oxr_master_cmd(M, i, OXR_SM_shutdown);
		if (oxr_master_wait(M, i, TMO, &status) == OXR_ERR_INVAL)
			continue; /* the test waited for it already */
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "server %d ended with status %#x", i, status);
	}
	oxr_master_destroy(M, 2000);
	oxr_arena_destroy(A);
	M = NULL;
}

oxr_cmo *T(const char *text)
{
	oxr_text_item it;
	size_t used;

	cr_assert_eq(oxr_text_parse(text, strlen(text), A, &it, &used), OXR_OK, "%s: %s", text,
		     oxr_errmsg());
	return it.msg.cmo;
}

void push(int i, const char *text)
{
	cr_assert_eq(oxr_master_push(M, i, T(text)), OXR_OK, "%s", oxr_errmsg());
}

void cmd(int i, int32_t sm)
{
	cr_assert_eq(oxr_master_cmd(M, i, sm), OXR_OK, "%s", oxr_errmsg());
}

char *text_of(const oxr_cmo *o)
{
	char *t;
	size_t n;

	cr_assert_eq(oxr_text_print_cmo(o, &t, &n), OXR_OK);
	return t;
}

/* Pops server i's top and checks its text. */
void pop_is(int i, const char *want)
{
	oxr_cmo *o;
	char *t;

	cr_assert_eq(oxr_master_pop(M, i, TMO, A, &o), OXR_OK, "pop: %s", oxr_errmsg());
	t = text_of(o);
	cr_assert(!strcmp(t, want), "server %d: got %s, want %s", i, t, want);
	free(t);
}

/* Pops an error and checks that its message holds `part`. */
void pop_error(int i, const char *part)
{
	oxr_cmo *o;
	const oxr_cmo *msg;
	char *t;

	cr_assert_eq(oxr_master_pop(M, i, TMO, A, &o), OXR_OK, "pop: %s", oxr_errmsg());
	t = text_of(o);
	cr_assert_eq(o->tag, OXR_CMO_ERROR2, "server %d: expected an error, got %s", i, t);
	cr_assert(o->kids[0]->tag == OXR_CMO_LIST && o->kids[0]->nkids == 3, "%s", t);
	msg = o->kids[0]->kids[2];
	cr_assert_eq(msg->tag, OXR_CMO_STRING);
	cr_assert(memmem(msg->data, msg->len, part, strlen(part)),
		  "server %d: the error should say \"%s\": %s", i, part, t);
	free(t);
}

void call(int i, const char *fn, int argc, const char *const *args)
{
	const oxr_cmo *v[8] = { 0 };
	int k;

	for (k = 0; k < argc; k++)
		v[k] = T(args[k]);
	cr_assert_eq(oxr_master_call(M, i, fn, argc, v), OXR_OK, "%s", oxr_errmsg());
}


long zz(const oxr_cmo *o)
{
	mpz_t z;
	long v;

	mpz_init(z);
	cr_assert_eq(oxr_cmo_get_mpz(o, z), OXR_OK);
	v = mpz_get_si(z);
	mpz_clear(z);
	return v;
}

void depth_is(int i, int d)
{
	char want[64];

	cmd(i, OXR_SM_getsp);
	snprintf(want, sizeof(want), "(CMO_INT32,%d)", d);
	pop_is(i, want);
}

void raw(int i, const void *p, size_t n)
{
	cr_assert_eq(write(oxr_master_data_fd(M, i), p, n), (ssize_t)n);
}

/* A frame in server i's order: ox tag, serial, then words. */
void raw_words(int i, const uint32_t *w, size_t n)
{
	uint8_t buf[64];
	size_t k;

	for (k = 0; k < n; k++)
		oxr_store32(buf + 4 * k, w[k], oxr_master_order(M, i));
	raw(i, buf, 4 * n);
}

oxr_ox_msg ox_recv(int fd, int order)
{
	return ox_recv_within(fd, order, A, TMO);
}
