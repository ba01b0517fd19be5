/* SPDX-License-Identifier: MIT */
/*
 * bench_accept: how soon an oxr-server listens after a master's
 * SM_tcp_accept_102, the window that matters to an ox_asir peer (asir's
 * try_connect gives up after 10 tries 100 ms apart, about 1 s).
 *
 *   bench_accept [--iters N] [--hog K] [--unix]
 *
 * Each iteration starts one oxr-server (OXR_SERVER or the default), takes
 * the time, sends SM_set_rank_102 (rank 0 of 2) and at once the port (TCP,
 * or a Unix socket path with --unix) and SM_tcp_accept_102, as asir's
 * spawn102 does, and tries to connect every 100 us until the server
 * listens; the sample is that time, in us.  --hog K
 * keeps K busy processes running meanwhile (K = the cores: a loaded node).
 * Rows "accept" under impl "oxr-tcp" / "oxr-unix" through bench_stats.h.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"
#include "oxr/master.h"
#include "oxr/ox.h"

#define TMO 30000

static void check(oxr_status_t st, const char *what)
{
	if (st) {
		fprintf(stderr, "bench_accept: %s: %s\n", what, oxr_errmsg());
		exit(1);
	}
}

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl))
		exit(1);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* One connect attempt; the socket when the server listens, else -1. */
static int try_once(int port, const char *path)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(path ? AF_UNIX : AF_INET, SOCK_STREAM, 0);

	if (path)
		snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
	if (fd >= 0 && !(path ? connect(fd, (struct sockaddr *)&un, sizeof(un))
			      : connect(fd, (struct sockaddr *)&in, sizeof(in))))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static oxr_status_t push_made(oxr_master *m, oxr_arena *a, oxr_cmo *o)
{
	return o ? oxr_master_push(m, 0, o) : OXR_ERR_NOMEM;
}

static double once(int use_unix)
{
	oxr_master *m;
	oxr_arena *a;
	char path[64];
	int port = use_unix ? 0 : free_port(), fd, order;
	double t0, t;

	snprintf(path, sizeof(path), "/tmp/oxr-bench-accept-%d.sock", (int)getpid());
	check(oxr_master_launch(NULL, 1, &m), "launch");
	check(oxr_arena_create(&a), "arena");
	check(push_made(m, a, oxr_cmo_new_zz_si(a, 2)), "push");
	check(push_made(m, a, oxr_cmo_new_zz_si(a, 0)), "push");
	/* as asir's spawn102 does: the rank, then at once the accept */
	t0 = oxr_bench_now_us();
	check(oxr_master_cmd(m, 0, OXR_SM_set_rank_102), "set_rank");
	check(push_made(m, a, use_unix ? oxr_cmo_new_string(a, path) : oxr_cmo_new_zz_si(a, port)),
	      "push");
	check(push_made(m, a, oxr_cmo_new_zz_si(a, 1)), "push");
	check(oxr_master_cmd(m, 0, OXR_SM_tcp_accept_102), "accept");
	while ((fd = try_once(port, use_unix ? path : NULL)) < 0) {
		if (oxr_bench_now_us() - t0 > 1e6 * TMO / 1000) {
			fprintf(stderr, "bench_accept: the server never listened\n");
			exit(1);
		}
		usleep(100);
	}
	t = oxr_bench_now_us() - t0;
	/* the link's own start, so the server's accept ends well */
	check(oxr_order_exchange(fd, fd, OXR_ROLE_PEER, oxr_order_byte(OXR_ORDER_HOST), TMO, &order),
	      "byte order");
	check(oxr_master_sync(m, TMO), "sync");
	close(fd);
	oxr_master_destroy(m, TMO);
	oxr_arena_destroy(a);
	return t;
}

int main(int argc, char **argv)
{
	int iters = 20, hog = 0, use_unix = 0, i;
	pid_t hogs[64];
	double *v;
	struct oxr_bench_stats s;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hog") && i + 1 < argc)
			hog = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--unix"))
			use_unix = 1;
		else {
			fprintf(stderr, "usage: bench_accept [--iters N] [--hog K] [--unix]\n");
			return 2;
		}
	}
	if (iters < 1 || hog < 0 || hog > 64 || !(v = calloc((size_t)iters, sizeof(*v))))
		return 2;
	for (i = 0; i < hog; i++)
		if ((hogs[i] = fork()) == 0)
			for (;;)
				;
	for (i = 0; i < iters; i++)
		v[i] = once(use_unix);
	for (i = 0; i < hog; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	oxr_bench_stats_of(v, (size_t)iters, &s);
	printf("SM_set_rank_102 + SM_tcp_accept_102 to listen (%s port, %d busy processes): n %zu, median %.0f us, "
	       "p99 %.0f us, max %.0f us (ox_asir's connect gives up after ~1000000 us)\n",
	       use_unix ? "unix" : "tcp", hog, s.n, s.median, s.p99, s.max);
	if (oxr_bench_emit(&(struct oxr_bench_row){ .bench = "accept",
						    .impl = use_unix ? "oxr-unix" : "oxr-tcp",
						    .ranks = 2, .unit = "us" },
			   v, (size_t)iters))
		perror("bench_accept: OXR_BENCH_SAMPLES");
	free(v);
	return 0;
}
