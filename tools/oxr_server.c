/* SPDX-License-Identifier: MIT */
/*
 * oxr-server: an OpenXM engine (RFC-100 stack machine, RFC-102 commands)
 * whose server-to-server links are oxr links.  Started like any OpenXM
 * engine:
 *   oxr-server                        the data channel is fds 3 (read) and
 *                                     4 (write), handed over by a launcher
 *   oxr-server --control-fd N         ... and the control channel is fd N
 *   oxr-server --listen PORT          accepts the control, then the data
 *                                     connection on PORT (0: the OS picks,
 *                                     printed as "port P" on stdout)
 *   oxr-server --connect HOST:PORT    connects control, then data, to HOST:PORT
 *   --password PW   the one-time password of OpenXM's ox launcher: the side
 *                   that connects writes PW and a NUL, the other checks it;
 *                   %r in PW is this process's rank from its launcher's
 *                   environment (PMIX_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID)
 *   --no-control    --listen/--connect open the data channel only
 * With a control channel the process splits as OpenXM's launcher does: the
 * parent serves the control channel (SM_control_reset_connection sends the
 * engine SIGUSR1, SM_control_kill and SM_shutdown kill it) and the child is
 * the engine.  Byte order is negotiated on each channel as the engine side.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <oxr/oxr.h>

#define HANDSHAKE_MS 30000

static volatile sig_atomic_t *reset_flag;
/* A reset that comes before the engine exists (a master may send it as
 * soon as its byte-order exchanges are done): kept, and handed to the
 * engine when it starts, or the master would wait for a ball forever. */
static volatile sig_atomic_t early_reset;

static void on_usr1(int sig)
{
	(void)sig;
	early_reset = 1;
	if (reset_flag)
		*reset_flag = 1;
}

static const char usage_text[] =
	"usage: oxr-server [--control-fd N] [--listen PORT | --connect HOST:PORT]\n"
	"                  [--password PW] [--no-control]\n"
	"\n"
	"An OpenXM engine (RFC-100 stack machine, RFC-102 commands) whose links to\n"
	"other servers are oxr links.  Without --listen/--connect the data channel is\n"
	"fds 3 (read) and 4 (write), handed over by the process that started it.\n"
	"\n"
	"  --control-fd N      the control channel is fd N (else: no control channel)\n"
	"  --listen PORT       accept the control, then the data connection on PORT\n"
	"                      (0: the OS picks; printed as \"port P\" on stdout)\n"
	"  --connect HOST:PORT connect the control, then the data channel to HOST:PORT\n"
	"  --password PW       OpenXM's one-time password: the side that connects\n"
	"                      writes PW and a NUL, the other checks it; %r in PW is\n"
	"                      this process's rank from its launcher's environment\n"
	"                      (PMIX_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK,\n"
	"                      OXR_RUN_RANK)\n"
	"  --no-control        --listen/--connect open the data channel only\n"
	"  -h, --help          print this help and exit\n"
	"\n"
	"Exit status: 0 the session ended (the master closed its channels or shut the\n"
	"server down); 1 a channel, the environment or the engine failed; 128+SIG the\n"
	"engine was killed by signal SIG; 2 usage error.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static int die(const char *what)
{
	fprintf(stderr, "oxr-server: %s: %s\n", what, oxr_errmsg());
	return 1;
}

/* %r in a password: this process's rank from its launcher's environment
 * (oxr-master --launcher pairs a server's two channels by it). */
static const char *expand_rank(const char *pw, char *buf, size_t n)
{
	static const char *const vars[] = { "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
					    "PMI_RANK", "OXR_RUN_RANK" };
	const char *at = strstr(pw, "%r"), *r = NULL;
	size_t i;

	if (!at)
		return pw;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]) && !r; i++)
		r = getenv(vars[i]);
	if (!r)
		return NULL;
	snprintf(buf, n, "%.*s%s%s", (int)(at - pw), pw, r, at + 2);
	return buf;
}

static oxr_status_t open_channels(const char *listen_port, const char *connect, const char *pw,
				  int with_control, int *cfd, int *dfd)
{
	int fds[2] = { -1, -1 }, i, n = with_control ? 2 : 1;
	oxr_status_t st = OXR_OK;

	if (listen_port) {
		int lfd, bound;
		if ((st = oxr_channel_listen(atoi(listen_port), &lfd, &bound)))
			return st;
		printf("port %d\n", bound);
		fflush(stdout);
		/* each connection proves the password before the next is taken */
		for (i = 0; i < n && !st; i++)
			st = oxr_channel_accept(lfd, pw, -1, &fds[i]);
		close(lfd);
	} else {
		for (i = 0; i < n && !st; i++)
			st = oxr_channel_connect(connect, pw, HANDSHAKE_MS, &fds[i]);
	}
	if (st) {
		for (i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return st;
	}
	*cfd = with_control ? fds[0] : -1;
	*dfd = fds[n - 1];
	return OXR_OK;
}

static int run_engine(int rfd, int wfd)
{
	oxr_engine *e;
	oxr_ctx *ctx = NULL;
	oxr_ctx_params params;
	int order;
	oxr_status_t st;

	/* a malformed OXR_* variable ends the server, naming it */
	if (oxr_ctx_params_read(OXR_CTX_PARAM_ALL, &params))
		return die("environment");
	/* The context (the RDMA device probe, hwloc) now, while the master
	 * waits for the byte-order byte, not between a later SM_tcp_accept_102
	 * and listen(): an ox_asir peer gives its connect about a second.  If
	 * it fails, SM_set_rank_102 tries again and tells the master why. */
	if (oxr_ctx_create(&ctx))
		ctx = NULL;
	if ((st = oxr_order_exchange(rfd, wfd, OXR_ROLE_ENGINE, oxr_order_byte(OXR_ORDER_HOST),
				     HANDSHAKE_MS, &order)))
		return die("byte order on the data channel");
	if ((st = oxr_engine_create(ctx, wfd, order, 0, &e)))
		return die("engine");
	reset_flag = oxr_engine_reset_flag(e);
	if (early_reset)
		*reset_flag = 1;
	st = oxr_engine_serve(e, rfd);
	if (st && st != OXR_ERR_CLOSED)
		fprintf(stderr, "oxr-server: %s\n", oxr_errmsg());
	reset_flag = NULL;
	oxr_engine_destroy(e);
	oxr_ctx_destroy(ctx);
	return st && st != OXR_ERR_CLOSED ? 1 : 0;
}

/* The control process: relays the control commands to the engine child. */
static int control(int cfd, pid_t engine)
{
	oxr_arena *a;
	oxr_decoder *d;
	uint8_t buf[4096];
	int order, status, rc = -1;

	if (oxr_order_exchange(cfd, cfd, OXR_ROLE_ENGINE, oxr_order_byte(OXR_ORDER_HOST),
			       HANDSHAKE_MS, &order) ||
	    oxr_arena_create(&a) || oxr_decoder_create(&d, OXR_DECODE_OX, order, NULL, a)) {
		kill(engine, SIGKILL);
		waitpid(engine, NULL, 0);
		return die("control channel");
	}
	while (rc < 0) {
		struct pollfd p = { .fd = cfd, .events = POLLIN };
		ssize_t k;
		size_t off = 0;
		if (waitpid(engine, &status, WNOHANG) == engine) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
		if (poll(&p, 1, 200) <= 0)
			continue;
		if ((k = read(cfd, buf, sizeof(buf))) <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			kill(engine, SIGKILL); /* the master is gone */
			break;
		}
		while (off < (size_t)k && rc < 0) {
			size_t used;
			oxr_status_t st = oxr_decoder_feed(d, buf + off, (size_t)k - off, 0, &used);
			const oxr_ox_msg *m;
			if (st == OXR_AGAIN)
				break;
			if (st) {
				fprintf(stderr, "oxr-server: control channel: %s\n", oxr_errmsg());
				kill(engine, SIGKILL);
				rc = 1;
				break;
			}
			off += used;
			m = oxr_decoder_msg(d);
			if (m->tag == OXR_OX_COMMAND && m->sm == OXR_SM_control_reset_connection)
				kill(engine, SIGUSR1);
			else if (m->tag == OXR_OX_COMMAND &&
				 (m->sm == OXR_SM_control_kill || m->sm == OXR_SM_shutdown)) {
				kill(engine, SIGKILL);
				rc = 0;
			}
			oxr_arena_reset(a);
		}
	}
	waitpid(engine, NULL, 0);
	oxr_decoder_destroy(d);
	oxr_arena_destroy(a);
	return rc < 0 ? 0 : rc;
}

int main(int argc, char **argv)
{
	const char *listen_port = NULL, *connect = NULL, *pw = NULL;
	char pwbuf[256];
	int cfd = -1, dfd = -1, with_control = 1, i;
	struct sigaction sa = { .sa_handler = on_usr1 };
	pid_t pid;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--no-control")) {
			with_control = 0;
		} else if (v && !strcmp(a, "--control-fd")) {
			cfd = atoi(v), i++;
		} else if (v && !strcmp(a, "--listen")) {
			listen_port = v, i++;
		} else if (v && !strcmp(a, "--connect")) {
			connect = v, i++;
		} else if (v && !strcmp(a, "--password")) {
			pw = v, i++;
		} else {
			fprintf(stderr, "oxr-server: unknown or incomplete option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (listen_port && connect) {
		fprintf(stderr, "oxr-server: --listen and --connect exclude each other\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL); /* before the fork: no early reset kills the engine */
	if (pw && !(pw = expand_rank(pw, pwbuf, sizeof(pwbuf)))) {
		fprintf(stderr, "oxr-server: --password has %%r but no launcher rank is in the "
			"environment (PMIX_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, "
			"OXR_RUN_RANK)\n");
		return 2;
	}
	if (listen_port || connect) {
		if (open_channels(listen_port, connect, pw, with_control, &cfd, &dfd))
			return die("opening the channels");
	} else {
		dfd = 3;
	}
	if (cfd < 0)
		return run_engine(dfd, dfd == 3 ? 4 : dfd);
	if ((pid = fork()) < 0) {
		perror("oxr-server: fork");
		return 1;
	}
	if (pid == 0) {
		close(cfd);
		_exit(run_engine(dfd, dfd == 3 ? 4 : dfd));
	}
	close(dfd);
	if (dfd == 3)
		close(4);
	return control(cfd, pid);
}
