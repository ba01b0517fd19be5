/* SPDX-License-Identifier: MIT */
/*
 * Links inside one process (two groups, two threads, real sockets on
 * 127.0.0.1): the handshake in both modes, refusals, an asir-style raw peer,
 * bad bytes from a peer, timeouts, the non-blocking calls and puts.  The
 * suite link_per_provider runs once per provider this machine has (tcp, and
 * verbs where there is an RDMA device; OXR_TEST_PROVIDERS picks:
 * common/providers.h); link holds what only a tcp link does (OpenXM mode, a
 * raw socket peer) and the environment checks.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "frames.h" /* the transport's private frame tags: forged frames */
#include "oxr/transport.h"
#include "link_pair.h"
#include "test_util.h"

TestSuite(link, .timeout = 60);
TestSuite(link_per_provider, .timeout = 60);

static void exchange(struct pair *p)
{
	oxr_arena *ar;
	oxr_rmsg *m;
	oxr_ox_msg out;

	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	out = (oxr_ox_msg){ .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_zz_si(ar, -123123) };
	cr_assert_eq(oxr_send(p->b, 0, &out), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_recv(p->a, 1, 5000, &m), OXR_OK, "%s", oxr_errmsg());
	cr_assert(oxr_cmo_equal(m->msg.cmo, out.cmo));
	cr_assert_eq(m->peer, 1);
	oxr_rmsg_free(m);
	out = (oxr_ox_msg){ .tag = OXR_OX_COMMAND, .sm = OXR_SM_reset_102 };
	cr_assert_eq(oxr_send(p->a, 1, &out), OXR_OK);
	cr_assert_eq(oxr_recv(p->b, 0, 5000, &m), OXR_OK);
	cr_assert_eq(m->msg.tag, OXR_OX_COMMAND);
	cr_assert_eq(m->msg.sm, OXR_SM_reset_102);
	oxr_rmsg_free(m);
	oxr_arena_destroy(ar);
}

PROVIDER_TEST(link, auth_link_both_orders)
{
	static const char *const orders[][3] = {
		{ "little", "little", "1" }, { "little", "network", "0" }, { "network", "network", "0" },
	};
	struct pair p;
	int i, oa, ob;

	for (i = 0; i < 3; i++) {
		make_pair_on(&p, pv, 2, orders[i][0], orders[i][1]);
		cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(p.st_accept, OXR_OK, "%s", p.err_accept);
		cr_assert(oxr_link_is_open(p.a, 1) && oxr_link_is_open(p.b, 0));
		cr_assert_eq(oxr_link_order(p.a, 1, &oa), OXR_OK);
		cr_assert_eq(oxr_link_order(p.b, 0, &ob), OXR_OK);
		cr_assert_eq(oa, atoi(orders[i][2]));
		cr_assert_eq(ob, oa);
		exchange(&p);
		free_pair(&p);
	}
}

/* The handshake tells each side whether its peer is on this host (what
 * shared memory needs): by default both ends here are; OXR_HOST_ID set
 * apart (containers on one kernel) makes them two hosts; set alike, one. */
PROVIDER_TEST(link, the_handshake_says_whether_the_peer_is_on_this_host)
{
	static const char *const ids[][3] = {
		{ NULL, NULL, "1" }, { "node-a", "node-b", "0" }, { "rack7", "rack7", "1" },
	};
	struct pair p;
	int i;

	for (i = 0; i < 3; i++) {
		if (ids[i][0])
			make_pair_env(&p, pv, "OXR_HOST_ID", ids[i][0], ids[i][1]);
		else
			make_pair_on(&p, pv, 2, "little", "little");
		cr_assert_eq(oxr_link_same_host(p.a, 1), -1, "no link yet: unknown");
		cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(p.st_accept, OXR_OK, "%s", p.err_accept);
		cr_assert_eq(oxr_link_same_host(p.a, 1), atoi(ids[i][2]), "OXR_HOST_ID %s / %s",
			     ids[i][0] ? ids[i][0] : "(default)", ids[i][1] ? ids[i][1] : "(default)");
		cr_assert_eq(oxr_link_same_host(p.b, 0), atoi(ids[i][2]), "and the same both ways");
		cr_assert_eq(oxr_link_same_host(p.a, 7), -1, "no such rank: unknown");
		exchange(&p);
		free_pair(&p);
	}
}

PROVIDER_TEST(link, wrong_token_is_refused_both_ways)
{
	struct pair p;
	uint8_t other[32];

	make_pair_on(&p, pv, 2, "little", "little");
	memset(other, 8, sizeof(other));
	oxr_group_set_token(p.b, other, 32);
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_ERR_AUTH);
	cr_assert(strstr(oxr_errmsg(), "refused the link: wrong token"), "%s", oxr_errmsg());
	cr_assert_eq(p.st_accept, OXR_ERR_AUTH);
	cr_assert(strstr(p.err_accept, "from 127.0.0.1:"), "names the address: %s", p.err_accept);
	cr_assert(strstr(p.err_accept, "wrong token"), "%s", p.err_accept);
	cr_assert(!oxr_link_is_open(p.a, 1) && !oxr_link_is_open(p.b, 0));
	free_pair(&p);
}

PROVIDER_TEST(link, wrong_rank_is_refused)
{
	struct pair p;
	uint8_t tok[32];
	oxr_group *b2;

	/* a member of the group, rank 2, knocks where rank 1 is expected */
	make_pair_on(&p, pv, 3, "little", "little");
	memset(tok, 7, sizeof(tok));
	cr_assert_eq(oxr_group_create(p.cb, 3, 2, &b2), OXR_OK);
	oxr_group_set_token(b2, tok, 32);
	{
		pthread_t t;
		p.mode = OXR_LINK_AUTH;
		pthread_create(&t, NULL, acceptor, &p);
		cr_assert_eq(oxr_link_connect(b2, "127.0.0.1", p.port, 0, OXR_LINK_AUTH, 5000),
			     OXR_ERR_AUTH);
		pthread_join(t, NULL);
	}
	cr_assert(strstr(oxr_errmsg(), "unexpected rank"), "%s", oxr_errmsg());
	cr_assert_eq(p.st_accept, OXR_ERR_AUTH);
	cr_assert(strstr(p.err_accept, "claiming rank 2"), "%s", p.err_accept);
	oxr_group_destroy(b2);
	free_pair(&p);
}

PROVIDER_TEST(link, connect_checks_the_acceptors_rank)
{
	struct pair p;

	make_pair_on(&p, pv, 3, "little", "little");
	/* b (rank 1) thinks the port belongs to rank 2, but rank 0 listens there */
	p.mode = OXR_LINK_AUTH;
	{
		pthread_t t;
		pthread_create(&t, NULL, acceptor, &p);
		cr_assert_eq(oxr_link_connect(p.b, "127.0.0.1", p.port, 2, OXR_LINK_AUTH, 5000),
			     OXR_ERR_AUTH);
		pthread_join(t, NULL);
	}
	cr_assert(strstr(oxr_errmsg(), "it is rank 0, not rank 2"), "%s", oxr_errmsg());
	free_pair(&p);
}

/* An asir-style peer: a plain socket writing its order byte first. */
static int raw_peer(int port, uint8_t order_byte, uint8_t *theirs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(write(fd, &order_byte, 1), 1);
	cr_assert_eq(read(fd, theirs, 1), 1);
	return fd;
}

struct accept_arg {
	oxr_group *g;
	int port, mode;
	oxr_status_t st;
};

static void *accept_openxm(void *arg)
{
	struct accept_arg *x = arg;

	x->st = oxr_link_accept(x->g, x->port, 1, x->mode, 1000);
	return NULL;
}

Test(link, openxm_mode_talks_to_an_asir_style_peer)
{
	struct pair p;
	struct accept_arg x;
	pthread_t t;
	uint8_t theirs, b[64], in[64];
	size_t n, used, got = 0;
	oxr_rmsg *m;
	oxr_arena *ar;
	oxr_ox_msg reply, back;
	int fd;

	make_pair(&p, 2, "little", "little");
	x = (struct accept_arg){ .g = p.a, .port = p.port, .mode = OXR_LINK_OPENXM };
	pthread_create(&t, NULL, accept_openxm, &x);
	fd = raw_peer(p.port, 1, &theirs);
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(theirs, 1, "oxr asks for little-endian on this host");
	cr_assert_eq(oxr_link_same_host(p.a, 1), -1, "RFC-102's handshake cannot say the host");

	/* asir sends OX_DATA (CMO_ZZ 123123) with its global serial, little-endian */
	n = unhex("02020000 2a000000 14000000 01000000 f3e00100", b);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(m->msg.serial, 42);
	cr_assert_eq(m->msg.cmo->tag, OXR_CMO_ZZ);
	oxr_rmsg_free(m);

	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	reply = (oxr_ox_msg){ .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_string(ar, "ok") };
	cr_assert_eq(oxr_send(p.a, 1, &reply), OXR_OK);
	while (got < 18) {
		ssize_t k = read(fd, in + got, sizeof(in) - got);
		cr_assert_gt(k, 0);
		got += (size_t)k;
	}
	cr_assert_eq(oxr_ox_decode(in, got, OXR_ORDER_LITTLE, NULL, ar, &back, &used), OXR_OK);
	cr_assert_eq(back.tag, OXR_OX_DATA);
	cr_assert(oxr_cmo_equal(back.cmo, reply.cmo));
	oxr_arena_destroy(ar);
	close(fd);
	free_pair(&p);
}

Test(link, bad_bytes_from_a_peer_fail_that_link_only)
{
	struct pair p;
	struct accept_arg x;
	pthread_t t;
	uint8_t theirs, b[64];
	size_t n;
	oxr_rmsg *m;
	int fd;

	make_pair(&p, 2, "little", "little");
	x = (struct accept_arg){ .g = p.a, .port = p.port, .mode = OXR_LINK_OPENXM };
	pthread_create(&t, NULL, accept_openxm, &x);
	fd = raw_peer(p.port, 0, &theirs); /* network order */
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_OK);
	/* OX_DATA, serial 1, CMO_STRING of length -1 */
	n = unhex("00000202 00000001 00000004 ffffffff", b);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_ERR_PROTO);
	cr_assert(strstr(oxr_errmsg(), "bad data from rank 1"), "%s", oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "negative length -1"), "%s", oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "at byte 12"), "%s", oxr_errmsg());
	/* the error stays with the link; the process and the group go on */
	cr_assert_eq(oxr_recv(p.a, 1, 100, &m), OXR_ERR_PROTO);
	cr_assert(!oxr_link_is_open(p.a, 1));
	close(fd);
	free_pair(&p);
}

Test(link, auth_acceptor_against_a_plain_openxm_peer)
{
	struct pair p;
	struct accept_arg x;
	pthread_t t;
	uint8_t theirs, junk[100];
	int fd;

	make_pair(&p, 2, "little", "little");
	x = (struct accept_arg){ .g = p.a, .port = p.port, .mode = OXR_LINK_AUTH };
	pthread_create(&t, NULL, accept_openxm, &x);
	fd = raw_peer(p.port, 1, &theirs);
	memset(junk, 0x41, sizeof(junk)); /* anything but a proof */
	cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_ERR_AUTH, "%d %s", x.st, oxr_errmsg());
	cr_assert(!oxr_link_is_open(p.a, 1));
	close(fd);
	/* a peer that says nothing after its order byte, as asir would */
	x.mode = OXR_LINK_AUTH;
	pthread_create(&t, NULL, accept_openxm, &x);
	fd = raw_peer(p.port, 1, &theirs);
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_ERR_TIMEOUT);
	close(fd);
	free_pair(&p);
}

PROVIDER_TEST(link, timeouts_and_bad_arguments)
{
	struct pair p;
	oxr_rmsg *m;
	oxr_ox_msg msg = { .tag = OXR_OX_SYNC_BALL };

	make_pair_on(&p, pv, 2, "little", "little");
	cr_assert_eq(oxr_link_accept(p.a, p.port, 1, OXR_LINK_AUTH, 50), OXR_ERR_TIMEOUT);
	cr_assert_eq(oxr_recv(p.a, 1, 10, &m), OXR_ERR_INVAL, "no link yet");
	cr_assert(strstr(oxr_errmsg(), "no link"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_send(p.a, 5, &msg), OXR_ERR_INVAL);
	cr_assert_eq(oxr_send(p.a, 0, &msg), OXR_ERR_INVAL, "not to itself");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	cr_assert_eq(oxr_recv(p.a, 1, 50, &m), OXR_ERR_TIMEOUT);
	cr_assert_eq(oxr_link_connect(p.b, "127.0.0.1", p.port, 0, OXR_LINK_AUTH, 50), OXR_ERR_INVAL,
		     "a second link to the same rank");
	free_pair(&p);
}

PROVIDER_TEST(link, nonblocking_calls)
{
	struct pair p;
	oxr_arena *ar;
	oxr_req *s[10], *r[10];
	int i, done;
	char *big = malloc(3u << 20);

	make_pair_on(&p, pv, 2, "little", "network");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	memset(big, 'x', 3u << 20);
	for (i = 0; i < 10; i++) {
		oxr_ox_msg m = { .tag = OXR_OX_DATA,
				 .cmo = i == 3 ? oxr_cmo_new_bytes(ar, OXR_CMO_DATUM, big, 3u << 20)
					       : oxr_cmo_new_int32(ar, i) };
		cr_assert_eq(oxr_irecv(p.a, 1, &r[i]), OXR_OK);
		cr_assert_eq(oxr_isend(p.b, 0, &m, &s[i]), OXR_OK, "%s", oxr_errmsg());
	}
	for (i = 0; i < 10; i++) {
		oxr_rmsg *m;
		/* the receiver's progress alone cannot finish a 3 MiB send: drive both */
		do {
			cr_assert_geq(oxr_req_test(s[i], &done), 0);
			oxr_group_progress(p.a);
		} while (!done);
		cr_assert_eq(oxr_req_wait(r[i], 5000), OXR_OK, "%s", oxr_errmsg());
		m = oxr_req_take(r[i]);
		cr_assert_eq(m->msg.cmo->tag, i == 3 ? OXR_CMO_DATUM : OXR_CMO_INT32);
		if (i == 3)
			cr_assert_eq(m->msg.cmo->len, 3u << 20);
		else
			cr_assert_eq(m->msg.cmo->v.i32, i);
		oxr_rmsg_free(m);
		oxr_req_free(r[i]);
		oxr_req_free(s[i]);
	}
	oxr_arena_destroy(ar);
	free(big);
	free_pair(&p);
}

static oxr_status_t send_int(oxr_group *g, int peer, oxr_arena *ar, int32_t v)
{
	oxr_ox_msg m = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_int32(ar, v) };

	return oxr_send(g, peer, &m);
}

static void expect_int(oxr_rmsg *m, int32_t v, const char *what)
{
	cr_assert_not_null(m, "%s: no message", what);
	cr_assert_eq(m->msg.cmo->tag, OXR_CMO_INT32, "%s", what);
	cr_assert_eq(m->msg.cmo->v.i32, v, "%s: got %d, want %d", what, m->msg.cmo->v.i32, v);
	oxr_rmsg_free(m);
}

/* MPI's non-overtaking rule: receives posted for one peer take its messages
 * in the order they were posted, whichever is tested or waited on first; a
 * blocking receive comes after the posted ones, and a freed one takes none. */
PROVIDER_TEST(link, posted_receives_match_in_posting_order)
{
	struct pair p;
	oxr_arena *ar;
	oxr_req *r[4], *late;
	oxr_rmsg *m;
	int i, done;

	make_pair_on(&p, pv, 2, "little", "little");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	for (i = 0; i < 4; i++)
		cr_assert_eq(oxr_irecv(p.a, 1, &r[i]), OXR_OK);
	for (i = 0; i < 4; i++)
		cr_assert_eq(send_int(p.b, 0, ar, i), OXR_OK, "%s", oxr_errmsg());
	do
		cr_assert_geq(oxr_req_test(r[3], &done), 0, "%s", oxr_errmsg());
	while (!done);
	expect_int(oxr_req_take(r[3]), 3, "the fourth receive, tested first");
	for (i = 2; i >= 0; i--) {
		cr_assert_eq(oxr_req_wait(r[i], 5000), OXR_OK, "%s", oxr_errmsg());
		expect_int(oxr_req_take(r[i]), i, "a receive waited on in reverse");
	}
	for (i = 0; i < 4; i++)
		oxr_req_free(r[i]);

	cr_assert_eq(oxr_irecv(p.a, 1, &late), OXR_OK);
	cr_assert_eq(send_int(p.b, 0, ar, 4), OXR_OK);
	cr_assert_eq(send_int(p.b, 0, ar, 5), OXR_OK);
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_OK, "%s", oxr_errmsg());
	expect_int(m, 5, "a blocking receive after a posted one");
	cr_assert_eq(oxr_req_wait(late, 5000), OXR_OK, "%s", oxr_errmsg());
	expect_int(oxr_req_take(late), 4, "the posted receive");
	oxr_req_free(late);

	cr_assert_eq(oxr_irecv(p.a, 1, &late), OXR_OK);
	oxr_req_free(late);
	cr_assert_eq(send_int(p.b, 0, ar, 6), OXR_OK);
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_OK, "%s", oxr_errmsg());
	expect_int(m, 6, "a receive freed unmatched takes nothing");
	cr_assert_eq(oxr_irecv(p.a, 1, &late), OXR_OK);
	oxr_arena_destroy(ar);
	free_pair(&p);
	oxr_req_free(late); /* still posted when its group went */
}

Test(link, context_rejects_bad_environment)
{
	oxr_ctx *c;

	setenv("OXR_SPIN_US", "fast", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "OXR_SPIN_US=fast"), "%s", oxr_errmsg());
	unsetenv("OXR_SPIN_US");
	setenv("OXR_TRANSPORT", "carrier-pigeon", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	setenv("OXR_TRANSPORT", "tcp", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_OK);
	cr_assert_str_eq(oxr_ctx_transport(c), "tcp");
	oxr_ctx_destroy(c);
	/* auto takes verbs where a device works; where none does, verbs is an
	 * error that says what to do instead */
	setenv("OXR_TRANSPORT", "auto", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_OK);
	if (!strcmp(oxr_ctx_transport(c), "tcp")) {
		oxr_ctx_destroy(c);
		setenv("OXR_TRANSPORT", "verbs", 1);
		cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_UNSUPPORTED);
		cr_assert(strstr(oxr_errmsg(), "OXR_TRANSPORT=tcp"), "%s", oxr_errmsg());
	} else {
		cr_assert_str_eq(oxr_ctx_transport(c), "verbs");
		oxr_ctx_destroy(c);
	}
	unsetenv("OXR_TRANSPORT");
}

/* The congestion control of this process's sockets to or from port:
 * "a|b" for the two ends of the pair's link. */
static void link_cc(int port, char *out, size_t n)
{
	int fd;

	out[0] = 0;
	for (fd = 3; fd < 1024; fd++) {
		struct sockaddr_in me, peer;
		socklen_t ml = sizeof(me), pl = sizeof(peer), cl = 16;
		char cc[16] = "";
		if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
		    getpeername(fd, (struct sockaddr *)&peer, &pl) ||
		    (ntohs(me.sin_port) != port && ntohs(peer.sin_port) != port) ||
		    getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cl))
			continue;
		snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? "|" : "", cc);
	}
}

/* Links inside the host get OXR_TCP_LOCAL_CC (reno unless told), the
 * system's algorithm with "system".  A link that went to verbs or shm keeps
 * the system's on its socket: that socket only ever tells the peer's end. */
PROVIDER_TEST(link, links_inside_the_host_choose_their_congestion_control)
{
	char sys[16] = "", got[64], want[40];
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
	struct pair p;
	oxr_ctx *c;

	cr_assert(f && fscanf(f, "%15s", sys) == 1);
	fclose(f);
	make_pair_on(&p, pv, 2, "little", "little");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	link_cc(p.port, got, sizeof(got));
	if (!strcmp(oxr_ctx_transport(p.ca), "tcp"))
		snprintf(want, sizeof(want), "reno|reno");
	else
		snprintf(want, sizeof(want), "%s|%s", sys, sys);
	cr_assert_str_eq(got, want);
	exchange(&p);
	free_pair(&p);
	setenv("OXR_TCP_LOCAL_CC", "system", 1);
	make_pair_on(&p, pv, 2, "little", "little");
	unsetenv("OXR_TCP_LOCAL_CC");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	link_cc(p.port, got, sizeof(got));
	snprintf(want, sizeof(want), "%s|%s", sys, sys);
	cr_assert_str_eq(got, want);
	free_pair(&p);
	setenv("OXR_TCP_LOCAL_CC", "a-name-too-long-for-tcp", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	unsetenv("OXR_TCP_LOCAL_CC");
}

/* Both ranks create window 7 (a: 4 KiB, b: 1 MiB). */
static void windows(struct pair *p, struct win_arg *wa, struct win_arg *wb)
{
	pair_windows(p, 7, wa, calloc(1, 4096), 4096, wb, calloc(1, 1u << 20), 1u << 20);
}

struct put_arg {
	oxr_group *g;
	uint8_t *big;
	oxr_status_t st;
};

static void *big_put(void *arg)
{
	struct put_arg *x = arg;

	x->st = oxr_put(x->g, 1, 7, 0, x->big, 1u << 20, 99);
	return NULL;
}

PROVIDER_TEST(link, puts_land_in_order_with_notifications)
{
	struct pair p;
	struct win_arg wa, wb;
	oxr_win_note n;
	uint8_t *big = malloc(1u << 20);
	oxr_rmsg *m;
	oxr_ox_msg msg = { .tag = OXR_OX_SYNC_BALL };

	make_pair_on(&p, pv, 2, "little", "network");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	windows(&p, &wa, &wb);
	cr_assert_eq(oxr_put(p.b, 0, 7, 100, "hello", 5, 11), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_put(p.b, 0, 7, 4091, "world", 5, 12), OXR_OK);
	cr_assert_eq(oxr_send(p.b, 0, &msg), OXR_OK);
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK);
	cr_assert_eq(n.peer, 1);
	cr_assert_eq(n.value, 11);
	cr_assert_eq(n.offset, 100);
	cr_assert_eq(n.len, 5);
	cr_assert(!memcmp((char *)wa.base + 100, "hello", 5));
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK);
	cr_assert_eq(n.value, 12);
	cr_assert(!memcmp((char *)wa.base + 4091, "world", 5));
	/* the message sent after the puts arrives after them */
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_OK);
	cr_assert_eq(m->msg.tag, OXR_OX_SYNC_BALL);
	oxr_rmsg_free(m);
	cr_assert_eq(oxr_win_landed(wa.w), 2);

	/* a big put the other way, written by reference */
	fill_pattern(big, 1u << 20, 7, 0);
	{
		struct put_arg x = { p.a, big, OXR_OK };
		pthread_t t;
		/* 1 MiB does not fit the socket buffers: the target must read meanwhile */
		pthread_create(&t, NULL, big_put, &x);
		cr_assert_eq(oxr_win_wait(wb.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
		pthread_join(t, NULL);
		cr_assert_eq(x.st, OXR_OK);
	}
	cr_assert_eq(n.len, 1u << 20);
	cr_assert_eq(n.value, 99);
	cr_assert(!memcmp(wb.base, big, 1u << 20));

	/* the origin checks bounds before anything leaves */
	cr_assert_eq(oxr_put(p.b, 0, 7, 4092, "world", 5, 0), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "do not fit window 7"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_put(p.b, 0, 8, 0, "x", 1, 0), OXR_ERR_INVAL, "no window 8");
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(wa.base);
	free(wb.base);
	free(big);
	free_pair(&p);
}

/* oxr_put_nonotify on TCP: in the stream like a put, landed by the target's
 * progress, in order with puts and messages, and no note for it. */
PROVIDER_TEST(link, a_nonotify_put_lands_in_order_without_a_note)
{
	struct pair p;
	struct win_arg wa, wb;
	oxr_win_note n;
	oxr_rmsg *m;
	oxr_ox_msg msg = { .tag = OXR_OX_SYNC_BALL };
	int spins = 0;

	make_pair_on(&p, pv, 2, "little", "network");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	windows(&p, &wa, &wb);
	/* (puts without a note first: on verbs one after a stream put waits for a fence
	 * this one-threaded target would never answer) */
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 7, 10, "plain", 5), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 7, 4092, "tail", 4), OXR_OK);
	cr_assert_eq(oxr_put(p.b, 0, 7, 12, "LOUD", 4, 3), OXR_OK);
	cr_assert_eq(oxr_send(p.b, 0, &msg), OXR_OK);
	/* a target that polls its memory drives the engine itself */
	while (memcmp((char *)wa.base + 4092, "tail", 4) && spins++ < 1000000)
		cr_assert_eq(oxr_group_progress(p.a), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK);
	cr_assert(!memcmp((char *)wa.base + 10, "plLOUD", 6), "the later put wrote over the first");
	cr_assert_eq(n.value, 3);
	cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_ERR_TIMEOUT, "one note only: the loud put's");
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_OK);
	oxr_rmsg_free(m);
	/* the target's engine counts what it lands itself: on verbs the HCA
	 * lands puts without a note, and only the loud one passes through the engine */
	cr_assert_eq(oxr_win_landed(wa.w), strcmp(oxr_ctx_transport(p.ca), "verbs") ? 3 : 1);
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 7, 4093, "tail", 4), OXR_ERR_INVAL, "bounds");
	cr_assert(strstr(oxr_errmsg(), "do not fit window 7"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_group_revoke(p.b), OXR_OK);
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 7, 0, "x", 1), OXR_ERR_REVOKED);
	cr_assert_eq(oxr_group_progress(p.b), OXR_ERR_REVOKED);
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(wa.base);
	free(wb.base);
	free_pair(&p);
}

/* Frames a peer builds itself, past the origin's checks: the target refuses. */
static void forge_put(oxr_group *g, uint32_t id, uint32_t epoch, uint64_t off, size_t len)
{
	oxr_arena *a;
	oxr_cmo *l;
	static char junk[8192];
	int i;
	uint32_t v[5] = { id, epoch, (uint32_t)(off >> 32), (uint32_t)off, 5 };
	oxr_ox_msg m = { .tag = OXR_OX_PRIVATE_PUT };

	cr_assert_eq(oxr_arena_create(&a), OXR_OK);
	l = oxr_cmo_new_list(a, 6);
	for (i = 0; i < 5; i++)
		l->kids[i] = oxr_cmo_new_int32(a, (int32_t)v[i]);
	l->kids[5] = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, junk, len);
	m.cmo = l;
	cr_assert_eq(oxr_send(g, 0, &m), OXR_OK);
	oxr_arena_destroy(a);
}

PROVIDER_TEST(link, forged_puts_never_land)
{
	struct pair p;
	struct win_arg wa, wb;
	oxr_win_note n;
	oxr_rmsg *m;
	oxr_ox_msg sync = { .tag = OXR_OX_SYNC_BALL };
	uint8_t zero[4096] = { 0 };

	make_pair_on(&p, pv, 2, "little", "little");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	windows(&p, &wa, &wb);
	forge_put(p.b, 7, 0, 4000, 200);            /* past the end */
	forge_put(p.b, 7, 0, 1ull << 40, 1);        /* far past the end */
	forge_put(p.b, 7, 1, 0, 10);                /* an epoch that is not the group's */
	forge_put(p.b, 9, 0, 0, 10);                /* no such window */
	cr_assert_eq(oxr_send(p.b, 0, &sync), OXR_OK);
	cr_assert_eq(oxr_recv(p.a, 1, 5000, &m), OXR_OK, "the link survives forged frames");
	oxr_rmsg_free(m);
	cr_assert_eq(oxr_group_puts_refused(p.a), 4);
	cr_assert_eq(oxr_win_landed(wa.w), 0);
	cr_assert(!memcmp(wa.base, zero, 4096), "not a byte landed");
	cr_assert_eq(oxr_win_wait(wa.w, 50, &n), OXR_ERR_TIMEOUT);
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(wa.base);
	free(wb.base);
	free_pair(&p);
}

/* oxr_win_alloc: zeroed, page-aligned memory that serves as a window (on
 * verbs it comes from the device's NUMA node; test_verbs_link puts into it) */
PROVIDER_TEST(link, window_memory_from_oxr_win_alloc)
{
	struct pair p;
	struct win_arg wa, wb;
	const size_t len = 3 * 4096 + 100;
	uint8_t *mem, msg[64];
	void *v = NULL;
	oxr_win_note n;
	size_t i;

	make_pair_on(&p, pv, 2, "network", "little");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_alloc(NULL, len, &v), OXR_ERR_INVAL);
	cr_assert_eq(oxr_win_alloc(p.a, len, NULL), OXR_ERR_INVAL);
	cr_assert_eq(oxr_win_alloc(p.a, len, &v), OXR_OK, "%s", oxr_errmsg());
	mem = v;
	cr_assert_eq((uintptr_t)mem % 4096, 0, "page-aligned");
	for (i = 0; i < len && !mem[i]; i++)
		;
	cr_assert_eq(i, len, "zeroed: byte %zu is %u", i, i < len ? mem[i] : 0);
	pair_windows(&p, 9, &wa, mem, len, &wb, calloc(1, 16), 16);
	fill_pattern(msg, sizeof(msg), 7, 1);
	cr_assert_eq(oxr_put(p.b, 0, 9, len - sizeof(msg), msg, sizeof(msg), 5), OXR_OK, "%s",
		     oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 5);
	cr_assert(!memcmp(mem + len - sizeof(msg), msg, sizeof(msg)), "the put landed at the end");
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	oxr_win_free(p.a, mem, len);
	free(wb.base);
	free_pair(&p);
}
