/* SPDX-License-Identifier: MIT */
/*
 * RFC-102 groups that mix oxr-servers with asir_peer, a test engine that
 * behaves on the wire like Risa/Asir's ox_asir (tests/server/asir_peer.c): its
 * links (TCP ports and Unix socket paths, both ends writing their
 * byte-order byte first), bcast and reduce in asir's binomial orders, and
 * its reset (SM_reset_102: rank i reads from every lower rank until its
 * OX_SYNC_BALL, blocking, then sends one ball to every higher rank, never
 * one down).  Each group, the peer at every rank position: bcast from root
 * 0 and reduce "+" to root 0, the full reset (RFC-100 reset of every
 * server on its control channel, then SM_reset_102 on every member), then
 * bcast from a non-zero root and reduce "*" to another non-zero root, every
 * member's value popped and checked exactly.  A member that does the reset
 * differently leaves a ball or a stale message in a stream, or waits for a
 * ball that never comes; the next bcast or reduce, or the reset's own
 * sync, then fails within the test's time.
 *
 * suites: peer (asir_peer alone: the protocol's details, all-peer groups),
 * mixed (peers beside oxr-servers, TCP and Unix paths), stale (the reset
 * after an abandoned bcast), sockets (the Unix socket files).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "oxr/master.h"
#include "oxr/ox.h"
#include "ox_peer.h"

#define PEER OXR_BIN_DIR "/asir_peer"
#define SERVER OXR_BIN_DIR "/oxr-server"
#define TMO 10000 /* ms, each wait of the master: a hang fails in time */

static oxr_master *M;
static oxr_arena *A;
static char dir[64]; /* a Unix-path group's socket directory */

static void fini(void)
{
	if (M)
		oxr_master_destroy(M, 1000);
	M = NULL;
	if (A)
		oxr_arena_destroy(A);
	A = NULL;
	if (dir[0]) { /* the test failed before it looked: leave nothing behind */
		DIR *d = opendir(dir);
		struct dirent *e;
		char p[512];
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
				unlink(p);
			}
		if (d)
			closedir(d);
		rmdir(dir);
		dir[0] = 0;
	}
}

static void init(void)
{
	cr_assert_eq(oxr_arena_create(&A), OXR_OK);
}

/* ---- values ------------------------------------------------------- */

static oxr_cmo *zz(mpz_srcptr z)
{
	oxr_cmo *o = oxr_cmo_new_zz(A, z);

	cr_assert(o);
	return o;
}

/* base^e * mul + add */
static void val(mpz_ptr z, unsigned long base, unsigned long e, long mul, long add)
{
	mpz_ui_pow_ui(z, base, e);
	mpz_mul_si(z, z, mul);
	if (add >= 0)
		mpz_add_ui(z, z, (unsigned long)add);
	else
		mpz_sub_ui(z, z, (unsigned long)-add);
}

static const char *what(const oxr_cmo *o, char *buf, size_t n)
{
	if (o->tag == OXR_CMO_ERROR2 && o->kids[0]->tag == OXR_CMO_LIST && o->kids[0]->nkids > 2 &&
	    o->kids[0]->kids[2]->tag == OXR_CMO_STRING)
		snprintf(buf, n, "an error: %.*s", (int)o->kids[0]->kids[2]->len,
			 (const char *)o->kids[0]->kids[2]->data);
	else if (o->tag == OXR_CMO_ZZ)
		snprintf(buf, n, "a ZZ of %d words", o->v.i32);
	else
		snprintf(buf, n, "CMO tag %d (%s)", o->tag,
			 oxr_cmo_tag_name(o->tag) ? oxr_cmo_tag_name(o->tag) : "?");
	return buf;
}

/* Pops member i's top: the integer want exactly (0: CMO_NULL, as asir
 * sends its 0). */
static void pop_int(int i, mpz_srcptr want, const char *step)
{
	oxr_cmo *o;
	mpz_t got;
	char buf[256];

	cr_assert_eq(oxr_master_pop(M, i, TMO, A, &o), OXR_OK, "%s: member %d: %s", step, i,
		     oxr_errmsg());
	if (!mpz_sgn(want)) {
		cr_assert_eq(o->tag, OXR_CMO_NULL, "%s: member %d: want CMO_NULL, got %s", step, i,
			     what(o, buf, sizeof(buf)));
		return;
	}
	cr_assert_eq(o->tag, OXR_CMO_ZZ, "%s: member %d: want a ZZ, got %s", step, i,
		     what(o, buf, sizeof(buf)));
	mpz_init(got);
	cr_assert_eq(oxr_cmo_get_mpz(o, got), OXR_OK);
	cr_assert(!mpz_cmp(got, want), "%s: member %d: a ZZ, but not the value (%zu bits, want %zu)",
		  step, i, mpz_sizeinbase(got, 2), mpz_sizeinbase(want, 2));
	mpz_clear(got);
}

/* SM_getsp: an INT32 from oxr-server, a ZZ (0 as CMO_NULL) from ox_asir. */
static int depth(int i)
{
	oxr_cmo *o;
	char buf[256];

	cr_assert_eq(oxr_master_cmd(M, i, OXR_SM_getsp), OXR_OK);
	cr_assert_eq(oxr_master_pop(M, i, TMO, A, &o), OXR_OK, "getsp: member %d: %s", i,
		     oxr_errmsg());
	if (o->tag == OXR_CMO_INT32)
		return o->v.i32;
	if (o->tag == OXR_CMO_NULL)
		return 0;
	cr_assert(o->tag == OXR_CMO_ZZ && o->v.i32 == 1, "getsp: member %d: %s", i,
		  what(o, buf, sizeof(buf)));
	return (int)oxr_cmo_word(o, 0);
}

static void depth_is(int i, int d, const char *step)
{
	int got = depth(i);

	cr_assert_eq(got, d, "%s: member %d has %d objects on its stack, want %d", step, i, got, d);
}

/* ---- groups --------------------------------------------------------- */

/* layout: one letter a member, P an asir_peer, S an oxr-server. */
static int start(const char *layout, int use_unix)
{
	const char *bins[8];
	int n = (int)strlen(layout), i;

	cr_assert(n >= 1 && n <= 8);
	for (i = 0; i < n; i++)
		bins[i] = layout[i] == 'P' ? PEER : SERVER;
	cr_assert_eq(oxr_master_launch_each(bins, n, &M), OXR_OK, "launch %s: %s", layout,
		     oxr_errmsg());
	if (use_unix) {
		snprintf(dir, sizeof(dir), "/tmp/oxr-asir-XXXXXX");
		cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
		cr_assert_eq(oxr_master_set_unix(M, dir), OXR_OK, "%s", oxr_errmsg());
	}
	cr_assert_eq(oxr_master_group(M, 0, TMO), OXR_OK, "group %s over %s: %s", layout,
		     use_unix ? "Unix paths" : "TCP", oxr_errmsg());
	return n;
}

/* No socket file is left, and the directory goes. */
static void dir_is_empty(const char *when)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	cr_assert(d, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		cr_expect(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
			  "%s: %s/%s is left", when, dir, e->d_name);
	closedir(d);
}

static void finish(void)
{
	oxr_master_destroy(M, 2000);
	M = NULL;
	if (dir[0]) {
		dir_is_empty("after the group");
		cr_assert_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
		dir[0] = 0;
	}
}

static void bcast_check(int n, int root, mpz_srcptr x, const char *step)
{
	int i;

	cr_assert_eq(oxr_master_bcast(M, root, zz(x)), OXR_OK, "%s: %s", step, oxr_errmsg());
	for (i = 0; i < n; i++)
		pop_int(i, x, step);
}

/* Member i gives base^(e+i)*(i+1) + i (base^e first); the root gets the
 * sum or the product, every other member 0. */
static void reduce_check(int n, int root, const char *op, unsigned long base, unsigned long e,
			 const char *step)
{
	mpz_t v, acc, zero;
	int i;

	mpz_inits(v, zero, NULL);
	mpz_init_set_ui(acc, *op == '*');
	for (i = 0; i < n; i++) {
		val(v, base, e + (unsigned long)i, i + 1, i);
		cr_assert_eq(oxr_master_push(M, i, zz(v)), OXR_OK);
		(*op == '*' ? mpz_mul : mpz_add)(acc, acc, v);
	}
	cr_assert_eq(oxr_master_reduce(M, root, op), OXR_OK, "%s: %s", step, oxr_errmsg());
	for (i = 0; i < n; i++)
		pop_int(i, i == root ? acc : zero, step);
	mpz_clears(v, acc, zero, NULL);
}

enum { PLAIN = 0, STALE_SENT = 1, STALE_WAITING = 2 };

/* Before the reset, an abandoned bcast: STALE_SENT, only the root (0) runs
 * it, so its data waits in the streams to its children; STALE_WAITING,
 * every member but the root runs it, and waits. */
static void abandoned_bcast(int n, int how)
{
	mpz_t z;
	int i;

	mpz_init(z);
	val(z, 13, 500, 1, 0);
	if (how == STALE_SENT) {
		cr_assert_eq(oxr_master_push(M, 0, zz(z)), OXR_OK);
		cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_null()), OXR_OK);
		cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_bcast_102), OXR_OK);
		pop_int(0, z, "the abandoned bcast's root");
	} else {
		for (i = 1; i < n; i++) {
			cr_assert_eq(oxr_master_push(M, i, oxr_cmo_null()), OXR_OK);
			cr_assert_eq(oxr_master_cmd(M, i, OXR_SM_bcast_102), OXR_OK);
		}
		usleep(200000); /* they wait in it */
	}
	mpz_clear(z);
}

/* The sequence of the file comment. */
static void sequence(const char *layout, int use_unix, int stale)
{
	int n = start(layout, use_unix), i;
	int rb = n - 1, rr = n > 2 ? n - 2 : 1; /* non-zero roots, different where n > 2 */
	mpz_t x, y;

	mpz_inits(x, y, NULL);
	val(x, 3, 3000, 1, 0);
	bcast_check(n, 0, x, "bcast 3^3000 from root 0");
	reduce_check(n, 0, "+", 5, 700, "reduce + to root 0");
	if (stale)
		abandoned_bcast(n, stale);
	cr_assert_eq(oxr_master_reset_102(M, TMO), OXR_OK, "the reset: %s", oxr_errmsg());
	for (i = 0; i < n; i++) {
		/* an abandoned command leaves nothing on an ox_asir's stack;
		 * oxr-server leaves its error there, on purpose */
		if (stale == STALE_WAITING && layout[i] == 'S') {
			cr_assert_eq(oxr_master_push(M, i, oxr_cmo_new_int32(A, 100)), OXR_OK);
			cr_assert_eq(oxr_master_cmd(M, i, OXR_SM_pops), OXR_OK);
		}
		depth_is(i, 0, "after the reset");
	}
	val(y, 7, 2001, -1, 0);
	bcast_check(n, rb, y, "bcast -7^2001 from a non-zero root after the reset");
	reduce_check(n, rr, "*", 11, 50, "reduce * to another non-zero root after the reset");
	for (i = 0; i < n; i++)
		depth_is(i, 0, "at the end");
	mpz_clears(x, y, NULL);
	finish();
}

/* ---- asir_peer alone ---------------------------------------------- */

#define GROUP(suite, name, layout, use_unix, stale)                                                 \
	Test(suite, name, .init = init, .fini = fini, .timeout = 60)                               \
	{                                                                                          \
		sequence(layout, use_unix, stale);                                                 \
	}

GROUP(peer, tcp_PP, "PP", 0, PLAIN)
GROUP(peer, tcp_PPP, "PPP", 0, PLAIN)
GROUP(peer, tcp_PPPP, "PPPP", 0, PLAIN)
GROUP(peer, unix_PP, "PP", 1, PLAIN)
GROUP(peer, unix_PPP, "PPP", 1, PLAIN)
GROUP(peer, unix_PPPP, "PPPP", 1, PLAIN)
GROUP(peer, stale_sent_PPPP, "PPPP", 0, STALE_SENT)
GROUP(peer, stale_waiting_PPPP, "PPPP", 0, STALE_WAITING)

Test(peer, speaks_as_ox_asir, .init = init, .fini = fini, .timeout = 30)
{
	const char *bins[] = { PEER };
	oxr_cmo *o, *sys;
	char buf[256];

	cr_assert_eq(oxr_master_launch_each(bins, 1, &M), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_master_order(M, 0), OXR_ORDER_HOST, "x86 ox_asir talks little-endian");
	/* the mathcap names ox_asir and lists its SM codes, RFC-102's last */
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_mathcap), OXR_OK);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(o->tag, OXR_CMO_MATHCAP);
	sys = o->kids[0]->kids[0];
	cr_assert(sys->kids[0]->tag == OXR_CMO_INT32 && sys->kids[0]->v.i32 == 199901160);
	cr_assert(sys->kids[1]->tag == OXR_CMO_STRING && sys->kids[1]->len == 7 &&
		  !memcmp(sys->kids[1]->data, "ox_asir", 7));
	cr_assert_eq(o->kids[0]->kids[1]->nkids, 25);
	cr_assert_eq(o->kids[0]->kids[1]->kids[24]->v.i32, OXR_SM_reduce_102);
	/* SM_getsp is a ZZ, 0 is CMO_NULL; a popCMO of nothing is CMO_NULL */
	depth_is(0, 0, "empty");
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_int32(A, 5)), OXR_OK);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_getsp), OXR_OK);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert(o->tag == OXR_CMO_ZZ && o->v.i32 == 1 && oxr_cmo_word(o, 0) == 1, "%s",
		  what(o, buf, sizeof(buf)));
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert(o->tag == OXR_CMO_INT32 && o->v.i32 == 5);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_NULL);
	/* ZZ 0 comes back as asir's 0 */
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_zz_si(A, 0)), OXR_OK);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert_eq(o->tag, OXR_CMO_NULL);
	/* INT32 ranks are no asir integers: an error, with the serial of the command */
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_int32(A, 2)), OXR_OK);
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_int32(A, 0)), OXR_OK);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_set_rank_102), OXR_OK);
	cr_assert_eq(oxr_master_sync(M, TMO), OXR_ERR_PEER, "the sync sees ox_asir's error");
	cr_assert(strstr(oxr_errmsg(), "Invalid argument(s) in ox_set_rank_102"), "%s",
		  oxr_errmsg());
	/* an unknown op: an error, the data left where it was */
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_zz_si(A, 9)), OXR_OK);
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_null()), OXR_OK);
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_string(A, "max")), OXR_OK);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_reduce_102), OXR_OK);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert(o->tag == OXR_CMO_ERROR2 && strstr(what(o, buf, sizeof(buf)),
						     "Invalid opration in ox_reduce_102"), "%s", buf);
	cr_assert_eq(oxr_master_pop(M, 0, TMO, A, &o), OXR_OK);
	cr_assert(o->tag == OXR_CMO_ZZ && oxr_cmo_word(o, 0) == 9);
	/* the RFC-100 reset of an idle engine: its ball, ours, and on */
	cr_assert_eq(oxr_master_reset(M, 0, TMO), OXR_OK, "%s", oxr_errmsg());
	depth_is(0, 0, "after an RFC-100 reset");
	oxr_master_destroy(M, 2000);
	M = NULL;
}

/* ---- asir_peer against the test as its RFC-102 partner ------------- */

static int listen_tcp(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* This end of an RFC-102 link: OX messages in this host's order (ox_peer.h). */
static void link_send(int fd, int32_t tag, const oxr_cmo *o)
{
	ox_send(fd, OXR_ORDER_HOST, tag, 0, o);
}

static oxr_ox_msg link_recv(int fd)
{
	return ox_recv_within(fd, OXR_ORDER_HOST, A, TMO);
}

/* The peer's byte comes before ours is sent: it writes first, as asir's
 * register_102 does on both ends. */
static void exchange(int fd)
{
	uint8_t b, mine = OXR_ORDER_HOST == OXR_ORDER_LITTLE ? 1 : 0xff;

	cr_assert(fd_readable(fd, TMO), "the peer did not write its byte-order byte first");
	cr_assert_eq(read(fd, &b, 1), 1);
	cr_assert_eq(b, mine);
	cr_assert_eq(write(fd, &mine, 1), 1);
}

static void push_zz(int i, long v)
{
	cr_assert_eq(oxr_master_push(M, i, v ? oxr_cmo_new_zz_si(A, v) : oxr_cmo_null()), OXR_OK);
}

static void pop_zz(int i, long v, const char *step)
{
	mpz_t z;

	mpz_init_set_si(z, v);
	pop_int(i, z, step);
	mpz_clear(z);
}

/* Rank 0 of 2 (the test is rank 1): a ball sent down to ox_asir is no
 * reset to it; its next bcast takes the ball for 0.  Its reset sends a
 * ball up and reads nothing from above. */
Test(peer, a_ball_sent_down_is_read_as_data, .init = init, .fini = fini, .timeout = 30)
{
	const char *bins[] = { PEER };
	oxr_ox_msg m;
	int lfd, fd, port;

	cr_assert_eq(oxr_master_launch_each(bins, 1, &M), OXR_OK, "%s", oxr_errmsg());
	lfd = listen_tcp(&port);
	push_zz(0, 2);
	push_zz(0, 0);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_set_rank_102), OXR_OK);
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_string(A, "127.0.0.1")), OXR_OK);
	push_zz(0, port);
	push_zz(0, 1);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_tcp_connect_102), OXR_OK);
	cr_assert(fd_readable(lfd, TMO));
	cr_assert((fd = accept(lfd, NULL, NULL)) >= 0);
	exchange(fd);
	cr_assert_eq(oxr_master_sync(M, TMO), OXR_OK, "%s", oxr_errmsg());
	link_send(fd, OXR_OX_SYNC_BALL, NULL);
	link_send(fd, OXR_OX_DATA, oxr_cmo_new_zz_si(A, 5));
	push_zz(0, 1);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_bcast_102), OXR_OK);
	pop_zz(0, 0, "the ball, taken for data");
	push_zz(0, 1);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_bcast_102), OXR_OK);
	pop_zz(0, 5, "the data behind the ball");
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_reset_102), OXR_OK);
	depth_is(0, 0, "after SM_reset_102 at rank 0");
	m = link_recv(fd);
	cr_assert_eq(m.tag, OXR_OX_SYNC_BALL, "rank 0's reset sends a ball up");
	/* reduce + to root 1 from rank 0: it sends, and pushes 0 */
	push_zz(0, 41);
	push_zz(0, 1);
	cr_assert_eq(oxr_master_push(M, 0, oxr_cmo_new_string(A, "+")), OXR_OK);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_reduce_102), OXR_OK);
	pop_zz(0, 0, "reduce at a non-root");
	m = link_recv(fd);
	cr_assert(m.tag == OXR_OX_DATA && m.cmo->tag == OXR_CMO_ZZ && oxr_cmo_word(m.cmo, 0) == 41);
	close(fd);
	close(lfd);
	oxr_master_destroy(M, 2000);
	M = NULL;
}

/* Rank 1 of 2 (the test is rank 0, and connects): SM_reset_102 drops what
 * comes from rank 0 up to its ball and blocks until it comes; no ball goes
 * down.  An RFC-100 reset gets it out of a blocked bcast. */
Test(peer, its_reset_waits_for_the_ball_from_below, .init = init, .fini = fini, .timeout = 30)
{
	const char *bins[] = { PEER };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	oxr_cmo *o;
	int lfd, fd, port, k;

	cr_assert_eq(oxr_master_launch_each(bins, 1, &M), OXR_OK, "%s", oxr_errmsg());
	lfd = listen_tcp(&port);
	close(lfd); /* a port that was free */
	push_zz(0, 2);
	push_zz(0, 1);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_set_rank_102), OXR_OK);
	push_zz(0, port);
	push_zz(0, 0);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_tcp_accept_102), OXR_OK);
	sa.sin_port = htons((uint16_t)port);
	for (k = 0; k < 100; k++) {
		cr_assert((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(fd);
		fd = -1;
		usleep(20000);
	}
	cr_assert(fd >= 0, "the peer did not listen on port %d", port);
	exchange(fd);
	cr_assert_eq(oxr_master_sync(M, TMO), OXR_OK, "%s", oxr_errmsg());
	/* stale data, then the reset: it reads and drops, then waits */
	link_send(fd, OXR_OX_DATA, oxr_cmo_new_zz_si(A, 7));
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_reset_102), OXR_OK);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_getsp), OXR_OK);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_popCMO), OXR_OK);
	cr_assert_eq(oxr_master_recv(M, 0, 300, A, &o), OXR_ERR_TIMEOUT,
		     "SM_reset_102 at rank 1 must wait for rank 0's ball");
	link_send(fd, OXR_OX_SYNC_BALL, NULL);
	cr_assert_eq(oxr_master_recv(M, 0, TMO, A, &o), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(o->tag, OXR_CMO_NULL, "depth 0 after the reset");
	cr_assert(!fd_readable(fd, 200), "rank 1 sent something down to rank 0");
	/* blocked in a bcast from root 0; the RFC-100 reset abandons it */
	push_zz(0, 0);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_bcast_102), OXR_OK);
	usleep(100000);
	cr_assert_eq(oxr_master_reset(M, 0, TMO), OXR_OK, "%s", oxr_errmsg());
	depth_is(0, 0, "after the abandoned bcast");
	link_send(fd, OXR_OX_DATA, oxr_cmo_new_zz_si(A, 9));
	push_zz(0, 0);
	cr_assert_eq(oxr_master_cmd(M, 0, OXR_SM_bcast_102), OXR_OK);
	pop_zz(0, 9, "a bcast after the reset");
	cr_assert(!fd_readable(fd, 100), "rank 1 is a leaf of a bcast from 0: it sends nothing");
	close(fd);
	oxr_master_destroy(M, 2000);
	M = NULL;
}

/* ---- beside oxr-servers -------------------------------------------- */

GROUP(mixed, tcp_PS, "PS", 0, PLAIN)
GROUP(mixed, tcp_SP, "SP", 0, PLAIN)
GROUP(mixed, tcp_PSS, "PSS", 0, PLAIN)
GROUP(mixed, tcp_SPS, "SPS", 0, PLAIN)
GROUP(mixed, tcp_SSP, "SSP", 0, PLAIN)
GROUP(mixed, tcp_PSP, "PSP", 0, PLAIN)
GROUP(mixed, tcp_PSSS, "PSSS", 0, PLAIN)
GROUP(mixed, tcp_SPSS, "SPSS", 0, PLAIN)
GROUP(mixed, tcp_SSPS, "SSPS", 0, PLAIN)
GROUP(mixed, tcp_SSSP, "SSSP", 0, PLAIN)
GROUP(mixed, tcp_PSSP, "PSSP", 0, PLAIN)
GROUP(mixed, tcp_SPPS, "SPPS", 0, PLAIN)
GROUP(mixed, unix_PS, "PS", 1, PLAIN)
GROUP(mixed, unix_SP, "SP", 1, PLAIN)
GROUP(mixed, unix_PSS, "PSS", 1, PLAIN)
GROUP(mixed, unix_SPS, "SPS", 1, PLAIN)
GROUP(mixed, unix_SSP, "SSP", 1, PLAIN)
GROUP(mixed, unix_PSP, "PSP", 1, PLAIN)
GROUP(mixed, unix_PSSS, "PSSS", 1, PLAIN)
GROUP(mixed, unix_SPSS, "SPSS", 1, PLAIN)
GROUP(mixed, unix_SSPS, "SSPS", 1, PLAIN)
GROUP(mixed, unix_SSSP, "SSSP", 1, PLAIN)
GROUP(mixed, unix_PSSP, "PSSP", 1, PLAIN)
GROUP(mixed, unix_SPPS, "SPPS", 1, PLAIN)

/* The reset after an abandoned bcast: stale data in the streams from rank
 * 0 (drained by the reset's reads), or members waiting in a bcast. */
GROUP(stale, sent_PSSS, "PSSS", 0, STALE_SENT)
GROUP(stale, sent_SPSS, "SPSS", 0, STALE_SENT)
GROUP(stale, sent_SSSP, "SSSP", 0, STALE_SENT)
GROUP(stale, waiting_PSSS, "PSSS", 0, STALE_WAITING)
GROUP(stale, waiting_SSPS, "SSPS", 0, STALE_WAITING)
GROUP(stale, waiting_SSSP, "SSSP", 0, STALE_WAITING)

/* ---- the socket files ----------------------------------------------- */

/* asir's servers leave a 102 link's socket file behind (register_102 keeps
 * no path, so free_iofp never unlinks it); the master that made the paths
 * removes each once its link is made, and its own directory at the end. */
Test(sockets, no_socket_file_is_left, .init = init, .fini = fini, .timeout = 60)
{
	mpz_t x;

	start("PPP", 1);
	dir_is_empty("once the links are made");
	mpz_init_set_ui(x, 12345);
	bcast_check(3, 1, x, "a bcast over the links");
	mpz_clear(x);
	finish();
}

/* Without a directory the master makes one under $TMPDIR, and removes it. */
Test(sockets, the_masters_own_directory_goes_with_it, .init = init, .fini = fini, .timeout = 60)
{
	const char *bins[] = { PEER, PEER };
	mpz_t x;

	snprintf(dir, sizeof(dir), "/tmp/oxr-tmpdir-XXXXXX");
	cr_assert(mkdtemp(dir));
	setenv("TMPDIR", dir, 1); /* this test's process only */
	cr_assert_eq(oxr_master_launch_each(bins, 2, &M), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_master_set_unix(M, NULL), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_master_group(M, 0, TMO), OXR_OK, "%s", oxr_errmsg());
	mpz_init_set_ui(x, 678);
	bcast_check(2, 1, x, "a bcast over the links");
	mpz_clear(x);
	finish(); /* dir ($TMPDIR) is empty: the master's oxr-XXXXXX is gone */
}
