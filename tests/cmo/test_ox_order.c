/* SPDX-License-Identifier: MIT */
/* The one-byte byte-order exchange, over real socket pairs, in the three
 * roles (engine, client, RFC-102 peer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "oxr/ox.h"

TestSuite(order, .timeout = 30);

Test(order, resolve_table)
{
	static const uint8_t b[3] = { 0x00, 0x01, 0xff };
	int i, j, o;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			cr_assert_eq(oxr_order_resolve(b[i], b[j], &o), OXR_OK);
			/* little only when both ask for it; 0xff (big) means network bytes */
			cr_assert_eq(o, i == 1 && j == 1 ? OXR_ORDER_LITTLE : OXR_ORDER_NETWORK,
				     "%02x/%02x", b[i], b[j]);
		}
	cr_assert_eq(oxr_order_resolve(1, 2, &o), OXR_ERR_PROTO);
	cr_assert(strstr(oxr_errmsg(), "failed to start"), "%s", oxr_errmsg());
	cr_assert_eq(oxr_order_resolve(7, 1, &o), OXR_ERR_INVAL);
	cr_assert_eq(oxr_order_byte(OXR_ORDER_LITTLE), 1);
	cr_assert_eq(oxr_order_byte(OXR_ORDER_NETWORK), 0);
}

struct side {
	int fd, role, order;
	uint8_t mine;
	oxr_status_t st;
};

static void *run_side(void *p)
{
	struct side *s = p;

	s->st = oxr_order_exchange(s->fd, s->fd, s->role, s->mine, 5000, &s->order);
	return NULL;
}

static void pair(int role_a, uint8_t a, int role_b, uint8_t b, int want)
{
	int sv[2];
	pthread_t t;
	struct side x, y;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	x = (struct side){ .fd = sv[0], .role = role_a, .mine = a };
	y = (struct side){ .fd = sv[1], .role = role_b, .mine = b };
	pthread_create(&t, NULL, run_side, &y);
	run_side(&x);
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(y.st, OXR_OK);
	cr_assert_eq(x.order, want);
	cr_assert_eq(y.order, want);
	close(sv[0]);
	close(sv[1]);
}

Test(order, engine_and_client)
{
	pair(OXR_ROLE_ENGINE, 1, OXR_ROLE_CLIENT, 1, OXR_ORDER_LITTLE);
	pair(OXR_ROLE_ENGINE, 1, OXR_ROLE_CLIENT, 0, OXR_ORDER_NETWORK);
	pair(OXR_ROLE_CLIENT, 0xff, OXR_ROLE_ENGINE, 0xff, OXR_ORDER_NETWORK);
}

Test(order, rfc102_peers_both_write_first)
{
	pair(OXR_ROLE_PEER, 1, OXR_ROLE_PEER, 1, OXR_ORDER_LITTLE);
	pair(OXR_ROLE_PEER, 1, OXR_ROLE_PEER, 0xff, OXR_ORDER_NETWORK);
}

Test(order, engine_writes_before_it_reads)
{
	int sv[2], o;
	uint8_t got = 0x55;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* nobody answers: the engine's byte is on the wire, then it times out */
	cr_assert_eq(oxr_order_exchange(sv[0], sv[0], OXR_ROLE_ENGINE, 1, 100, &o), OXR_ERR_TIMEOUT);
	cr_assert_eq(read(sv[1], &got, 1), 1);
	cr_assert_eq(got, 1);
	close(sv[0]);
	close(sv[1]);
}

Test(order, peer_closes_or_sends_garbage)
{
	int sv[2], o;
	uint8_t two = 2;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	cr_assert_eq(oxr_order_exchange(sv[0], sv[0], OXR_ROLE_CLIENT, 1, 1000, &o), OXR_ERR_CLOSED);
	close(sv[0]);

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(write(sv[1], &two, 1), 1); /* asir's launcher: exec of the engine failed */
	cr_assert_eq(oxr_order_exchange(sv[0], sv[0], OXR_ROLE_CLIENT, 1, 1000, &o), OXR_ERR_PROTO);
	close(sv[0]);
	close(sv[1]);
}

Test(order, pipes_with_separate_fds)
{
	/* an engine launched by ox_launch reads fd 3 and writes fd 4 */
	int ab[2], ba[2], o;
	uint8_t c;

	cr_assert_eq(pipe(ab), 0);
	cr_assert_eq(pipe(ba), 0);
	c = 1;
	cr_assert_eq(write(ba[1], &c, 1), 1);
	cr_assert_eq(oxr_order_exchange(ba[0], ab[1], OXR_ROLE_ENGINE, 1, 1000, &o), OXR_OK);
	cr_assert_eq(o, OXR_ORDER_LITTLE);
	cr_assert_eq(read(ab[0], &c, 1), 1);
	cr_assert_eq(c, 1);
	close(ab[0]); close(ab[1]); close(ba[0]); close(ba[1]);
}
