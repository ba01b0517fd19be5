/* SPDX-License-Identifier: MIT */
/*
 * The master: an RFC-100 client of each server (data and control
 * channels, as asir's ox_launch opens them) and the RFC-102 driver of the
 * group.  Links are opened one pair at a time, the acceptor's command
 * before the connector's, and each pair is checked before the next: an
 * acceptor takes whoever connects to its port, so two connectors racing
 * to one port could otherwise swap ranks on an OpenXM link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oxr/master.h"
#include "oxr/params.h"
#include "oxr_internal.h"

#define HANDSHAKE_MS 30000

#include "master_impl.h"
#include "ox_write.h"

int oxr_master_size(const oxr_master *m) { return m->n; }

/* Closes a server's channels and frees its decoder: the slot is empty. */
static void srv_close(struct srv *s)
{
	if (s->dfd >= 0)
		close(s->dfd);
	if (s->cfd >= 0)
		close(s->cfd);
	oxr_decoder_destroy(s->dec);
	if (s->scratch)
		oxr_arena_destroy(s->scratch);
	memset(s, 0, sizeof(*s));
	s->dfd = s->cfd = -1;
}
int oxr_master_data_fd(const oxr_master *m, int i) { return m->s[i].dfd; }
int oxr_master_order(const oxr_master *m, int i) { return m->s[i].order; }

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *server_path(const char *server, char *buf, size_t n)
{
	ssize_t k;
	char *slash;

	if (server)
		return server;
	/* next to the calling program (build/bin/ holds both) */
	if ((k = readlink("/proc/self/exe", buf, n - 16)) > 0) {
		buf[k] = 0;
		if ((slash = strrchr(buf, '/'))) {
			strcpy(slash + 1, "oxr-server");
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	return "oxr-server";
}

/* The child's end: data on 3 and 4, control on 5; nothing else inherited
 * (every socket here is close-on-exec). */
static void exec_server(const char *path, int data, int ctl)
{
	int d = fcntl(data, F_DUPFD, 10), c = fcntl(ctl, F_DUPFD, 10);

	if (d < 0 || c < 0 || dup2(d, 3) < 0 || dup2(d, 4) < 0 || dup2(c, 5) < 0)
		_exit(126);
	execlp(path, path, "--control-fd", "5", (char *)NULL);
	fprintf(stderr, "oxr-master: cannot run %s: %s (set OXR_SERVER)\n", path, strerror(errno));
	_exit(127);
}

oxr_status_t oxr_master_attach(struct srv *s, const char *who)
{
	int ord;
	oxr_status_t st;

	/* a server that failed to start closes the channels: an error here */
	if ((st = oxr_order_exchange(s->cfd, s->cfd, OXR_ROLE_CLIENT, oxr_order_byte(OXR_ORDER_HOST),
				     HANDSHAKE_MS, &ord)) ||
	    (st = oxr_order_exchange(s->dfd, s->dfd, OXR_ROLE_CLIENT, oxr_order_byte(OXR_ORDER_HOST),
				     HANDSHAKE_MS, &s->order)))
		return oxr_err(st, "server %s did not start: %s", who, oxr_errmsg());
	if ((st = oxr_arena_create(&s->scratch)) ||
	    (st = oxr_decoder_create(&s->dec, OXR_DECODE_OX, s->order, NULL, s->scratch)))
		return st;
	return OXR_OK;
}

static oxr_status_t start_one(struct srv *s, const char *path)
{
	int d[2], c[2];
	char who[PATH_MAX + 32];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d) < 0)
		return oxr_err(OXR_ERR_IO, "socketpair: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c) < 0) {
		close(d[0]), close(d[1]);
		return oxr_err(OXR_ERR_IO, "socketpair: %s", strerror(errno));
	}
	if ((s->pid = fork()) < 0) {
		close(d[0]), close(d[1]), close(c[0]), close(c[1]);
		return oxr_err(OXR_ERR_IO, "fork: %s", strerror(errno));
	}
	if (s->pid == 0)
		exec_server(path, d[1], c[1]);
	close(d[1]);
	close(c[1]);
	s->dfd = d[0];
	s->cfd = c[0];
	snprintf(s->host, sizeof(s->host), "127.0.0.1");
	snprintf(who, sizeof(who), "%s (pid %d)", path, (int)s->pid);
	return oxr_master_attach(s, who);
}

oxr_status_t oxr_master_alloc(int n, const char *server, oxr_master **out)
{
	char buf[PATH_MAX];
	const char *path;
	oxr_ctx_params p;
	oxr_master *m;
	int i;
	oxr_status_t st;

	if ((st = oxr_ctx_params_read(OXR_CTX_PARAM_SERVER, &p)))
		return st;
	path = server_path(server ? server : p.server, buf, sizeof(buf));
	if (n < 1 || n > 4096)
		return oxr_err(OXR_ERR_INVAL, "launch: %d servers (1 to 4096)", n);
	if (!(m = calloc(1, sizeof(*m))) || !(m->s = calloc((size_t)n, sizeof(*m->s)))) {
		free(m);
		return oxr_err(OXR_ERR_NOMEM, "launch: out of memory");
	}
	for (i = 0; i < n; i++)
		m->s[i].dfd = m->s[i].cfd = -1;
	m->n = n;
	snprintf(m->path, sizeof(m->path), "%s", path);
	signal(SIGPIPE, SIG_IGN); /* a dead server is an error, not the master's death */
	*out = m;
	return OXR_OK;
}

/* The binary of server i. */
static const char *path_of(const oxr_master *m, int i)
{
	return m->paths && m->paths[i] ? m->paths[i] : m->path;
}

static oxr_status_t start_all(oxr_master *m, oxr_master **out)
{
	int i;
	oxr_status_t st = OXR_OK;

	for (i = 0; i < m->n && !st; i++)
		if ((st = start_one(&m->s[i], path_of(m, i))))
			oxr_master_destroy(m, 0);
	if (!st)
		*out = m;
	return st;
}

oxr_status_t oxr_master_launch(const char *server, int n, oxr_master **out)
{
	oxr_master *m;
	oxr_status_t st = oxr_master_alloc(n, server, &m);

	return st ? st : start_all(m, out);
}

oxr_status_t oxr_master_launch_each(const char *const *servers, int n, oxr_master **out)
{
	oxr_master *m;
	int i;
	oxr_status_t st;

	if (!servers)
		return oxr_master_launch(NULL, n, out);
	if ((st = oxr_master_alloc(n, NULL, &m)))
		return st;
	if (!(m->paths = calloc((size_t)n, sizeof(*m->paths)))) {
		oxr_master_destroy(m, 0);
		return oxr_err(OXR_ERR_NOMEM, "launch: out of memory");
	}
	for (i = 0; i < n; i++)
		if (servers[i] && !(m->paths[i] = strdup(servers[i]))) {
			oxr_master_destroy(m, 0);
			return oxr_err(OXR_ERR_NOMEM, "launch: out of memory");
		}
	return start_all(m, out);
}

static oxr_status_t send_msg(struct srv *s, int fd, int32_t tag, int32_t sm, const oxr_cmo *o)
{
	oxr_ox_msg msg = { .tag = tag, .serial = s->serial++, .sm = sm, .cmo = (oxr_cmo *)o };

	return oxr_ox_write(fd, &msg, s->order, "a server");
}

static oxr_status_t check_index(const oxr_master *m, int i)
{
	return i >= 0 && i < m->n ? OXR_OK
				  : oxr_err(OXR_ERR_INVAL, "server %d: the master has %d", i, m->n);
}

oxr_status_t oxr_master_push(oxr_master *m, int i, const oxr_cmo *o)
{
	oxr_status_t st = check_index(m, i);

	return st ? st : send_msg(&m->s[i], m->s[i].dfd, OXR_OX_DATA, 0, o);
}

oxr_status_t oxr_master_cmd(oxr_master *m, int i, int32_t sm)
{
	oxr_status_t st = check_index(m, i);

	return st ? st : send_msg(&m->s[i], m->s[i].dfd, OXR_OX_COMMAND, sm, NULL);
}

/* Feeds what is buffered; OXR_OK with *out once a message is complete. */
static oxr_status_t feed(struct srv *s, const oxr_ox_msg **out)
{
	while (s->roff < s->rlen) {
		size_t used;
		oxr_status_t st = oxr_decoder_feed(s->dec, s->rbuf + s->roff, s->rlen - s->roff, 0,
						   &used);
		if (st == OXR_AGAIN) {
			s->roff = s->rlen;
			break;
		}
		if (st)
			return oxr_err(st, "server pid %d sent bytes that are no OX message: %s",
				       (int)s->pid, oxr_decoder_error(s->dec));
		s->roff += used;
		*out = oxr_decoder_msg(s->dec);
		return OXR_OK;
	}
	return OXR_AGAIN;
}

/* The next message from server i's data channel; it lives in s->scratch
 * until the next call. */
static oxr_status_t read_msg(struct srv *s, int timeout_ms, const oxr_ox_msg **out)
{
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;
	oxr_status_t st;

	oxr_arena_reset(s->scratch);
	while ((st = feed(s, out)) == OXR_AGAIN) {
		struct pollfd p = { .fd = s->dfd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t k;
		int r;
		if (left <= 0)
			return oxr_err(OXR_ERR_TIMEOUT, "no reply from server pid %d within %d ms",
				       (int)s->pid, timeout_ms);
		r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r <= 0)
			continue;
		k = read(s->dfd, s->rbuf, sizeof(s->rbuf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return oxr_err(OXR_ERR_CLOSED, "server pid %d closed its data channel",
				       (int)s->pid);
		s->roff = 0;
		s->rlen = (size_t)k;
	}
	return st;
}

oxr_status_t oxr_master_recv(oxr_master *m, int i, int timeout_ms, oxr_arena *a, oxr_cmo **out)
{
	const oxr_ox_msg *msg;
	oxr_status_t st = check_index(m, i);

	if (st || (st = read_msg(&m->s[i], timeout_ms, &msg)))
		return st;
	if (msg->tag != OXR_OX_DATA)
		return oxr_err(OXR_ERR_PROTO, "server %d sent OX tag %d where an OX_DATA reply was "
			       "due", i, msg->tag);
	return oxr_cmo_copy(a, msg->cmo, out);
}

oxr_status_t oxr_master_pop(oxr_master *m, int i, int timeout_ms, oxr_arena *a, oxr_cmo **out)
{
	oxr_status_t st = oxr_master_cmd(m, i, OXR_SM_popCMO);

	return st ? st : oxr_master_recv(m, i, timeout_ms, a, out);
}

oxr_status_t oxr_master_call(oxr_master *m, int i, const char *fn, int argc,
			     const oxr_cmo *const *args)
{
	oxr_arena *a;
	oxr_cmo *n, *name;
	int k;
	oxr_status_t st = check_index(m, i);

	if (st || (st = oxr_arena_create(&a)))
		return st;
	n = oxr_cmo_new_int32(a, argc);
	name = oxr_cmo_new_string(a, fn);
	if (!n || !name)
		st = OXR_ERR_NOMEM;
	for (k = argc - 1; k >= 0 && !st; k--)
		st = oxr_master_push(m, i, args[k]);
	if (!st && !(st = oxr_master_push(m, i, n)) && !(st = oxr_master_push(m, i, name)))
		st = oxr_master_cmd(m, i, OXR_SM_executeFunction);
	oxr_arena_destroy(a);
	return st;
}

/* The message of a CMO_ERROR2 as the status of the call. */
static oxr_status_t server_error(int i, const oxr_cmo *o)
{
	const oxr_cmo *l = o->kids[0];

	if (l->tag == OXR_CMO_LIST && l->nkids >= 3 && l->kids[2]->tag == OXR_CMO_STRING)
		return oxr_err(OXR_ERR_PEER, "server %d: %.*s", i, (int)l->kids[2]->len,
			       (const char *)l->kids[2]->data);
	return oxr_err(OXR_ERR_PEER, "server %d returned an error object", i);
}

oxr_status_t oxr_master_result(oxr_master *m, int i, int timeout_ms, oxr_arena *a, oxr_cmo **out)
{
	oxr_arena *tmp = NULL;
	oxr_cmo *o;
	oxr_status_t st;

	if (!a && (st = oxr_arena_create(&tmp)))
		return st;
	st = oxr_master_pop(m, i, timeout_ms, a ? a : tmp, &o);
	if (st == OXR_OK && o->tag == OXR_CMO_ERROR2)
		st = server_error(i, o);
	if (st == OXR_OK && out)
		*out = o;
	if (tmp)
		oxr_arena_destroy(tmp);
	return st;
}

oxr_status_t oxr_master_reset(oxr_master *m, int i, int timeout_ms)
{
	struct srv *s;
	const oxr_ox_msg *msg;
	oxr_status_t st = check_index(m, i);

	if (st)
		return st;
	s = &m->s[i];
	if ((st = send_msg(s, s->cfd, OXR_OX_COMMAND, OXR_SM_control_reset_connection, NULL)))
		return st;
	do { /* everything before the server's ball is dropped */
		if ((st = read_msg(s, timeout_ms, &msg)))
			return st;
	} while (msg->tag != OXR_OX_SYNC_BALL);
	return send_msg(s, s->dfd, OXR_OX_SYNC_BALL, 0, NULL);
}

/* SM_getsp's answer: an INT32 (oxr-server) or an integer (ox_asir pushes a
 * ZZ, 0 as CMO_NULL). */
static int depth_of(const oxr_cmo *o, int32_t *d)
{
	if (o->tag == OXR_CMO_INT32)
		*d = o->v.i32;
	else if (o->tag == OXR_CMO_NULL || o->tag == OXR_CMO_ZERO ||
		 (o->tag == OXR_CMO_ZZ && o->v.i32 == 0))
		*d = 0;
	else if (o->tag == OXR_CMO_ZZ && o->v.i32 == 1)
		*d = oxr_cmo_word(o, 0);
	else
		return 0;
	return 1;
}

/* Waits until server i has run everything sent so far; fails with the
 * server's message when the top of its stack is an error that a message
 * since the last sync caused (popped then; an older one is left alone). */
static oxr_status_t sync_one(oxr_master *m, int i, int timeout_ms)
{
	struct srv *s = &m->s[i];
	int32_t since = s->mark, depth;
	oxr_arena *a;
	oxr_cmo *o;
	oxr_status_t st;

	if ((st = oxr_arena_create(&a)))
		return st;
	s->mark = s->serial;
	if ((st = oxr_master_cmd(m, i, OXR_SM_getsp)) == OXR_OK &&
	    (st = oxr_master_pop(m, i, timeout_ms, a, &o)) == OXR_OK && depth_of(o, &depth) &&
	    depth > 0 && (st = oxr_master_cmd(m, i, OXR_SM_pushCMOtag)) == OXR_OK &&
	    (st = oxr_master_pop(m, i, timeout_ms, a, &o)) == OXR_OK && o->tag == OXR_CMO_INT32 &&
	    o->v.i32 == OXR_CMO_ERROR2 && (st = oxr_master_pop(m, i, timeout_ms, a, &o)) == OXR_OK) {
		const oxr_cmo *l = o->kids[0];
		if (l->tag == OXR_CMO_LIST && l->nkids && l->kids[0]->tag == OXR_CMO_INT32 &&
		    l->kids[0]->v.i32 < since)
			st = oxr_master_push(m, i, o); /* not ours: back where it was */
		else
			st = server_error(i, o);
	}
	oxr_arena_destroy(a);
	return st;
}

oxr_status_t oxr_master_sync(oxr_master *m, int timeout_ms)
{
	oxr_status_t st, first = OXR_OK;
	char msg[1024] = "";
	int i;

	for (i = 0; i < m->n; i++)
		if ((st = sync_one(m, i, timeout_ms)) && !first) {
			first = st;
			snprintf(msg, sizeof(msg), "%s", oxr_errmsg());
		}
	if (first)
		oxr_err_keep(msg);
	return first;
}

/* Pushes o, made in a for this push only, and frees a. */
static oxr_status_t push_made(oxr_master *m, int i, oxr_arena *a, const oxr_cmo *o)
{
	oxr_status_t st = o ? oxr_master_push(m, i, o) : oxr_err(OXR_ERR_NOMEM, "out of memory");

	oxr_arena_destroy(a);
	return st;
}

static oxr_status_t push_int(oxr_master *m, int i, long v)
{
	oxr_arena *a;
	oxr_status_t st = oxr_arena_create(&a);

	return st ? st : push_made(m, i, a, oxr_cmo_new_zz_si(a, v));
}

static oxr_status_t push_str(oxr_master *m, int i, const char *s)
{
	oxr_arena *a;
	oxr_status_t st = oxr_arena_create(&a);

	return st ? st : push_made(m, i, a, oxr_cmo_new_string(a, s));
}

/* Gives server i the group's token (oxr_set_token): oxr links. */
static oxr_status_t give_token(oxr_master *m, int i, int timeout_ms)
{
	oxr_arena *a;
	const oxr_cmo *d;
	oxr_status_t st;

	if ((st = oxr_arena_create(&a)))
		return st;
	if (!(d = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, m->token, sizeof(m->token))))
		st = oxr_err(OXR_ERR_NOMEM, "out of memory");
	if (!st && !(st = oxr_master_call(m, i, "oxr_set_token", 1, &d)))
		st = oxr_master_result(m, i, timeout_ms, NULL, NULL);
	oxr_arena_destroy(a);
	return st;
}

/* Ranks, token and a listening port for server i. */
/* Whether server i is an oxr-server: its mathcap's system name.  Any other
 * engine (ox_asir) is driven with RFC-102's plain commands only. */
static oxr_status_t probe(oxr_master *m, int i, int timeout_ms)
{
	struct srv *s = &m->s[i];
	oxr_arena *a;
	oxr_cmo *mc;
	const oxr_cmo *sys, *name;
	oxr_status_t st;

	if (s->probed)
		return OXR_OK;
	if ((st = oxr_arena_create(&a)))
		return st;
	if (!(st = oxr_master_cmd(m, i, OXR_SM_mathcap)) &&
	    !(st = oxr_master_result(m, i, timeout_ms, a, &mc))) {
		sys = mc->tag == OXR_CMO_MATHCAP && mc->kids[0]->tag == OXR_CMO_LIST &&
			      mc->kids[0]->nkids && mc->kids[0]->kids[0]->tag == OXR_CMO_LIST
			      ? mc->kids[0]->kids[0] : NULL;
		name = sys && sys->nkids > 1 ? sys->kids[1] : NULL;
		s->foreign = !(name && name->tag == OXR_CMO_STRING && name->len == 10 &&
			       !memcmp(name->data, "oxr-server", 10));
		s->probed = 1;
	}
	oxr_arena_destroy(a);
	return st;
}

void oxr_master_set_plain(oxr_master *m, int i)
{
	if (i >= 0 && i < m->n)
		m->s[i].foreign = m->s[i].probed = 1;
}

/* A TCP port that was free a moment ago, for an engine that cannot say
 * which one it bound (ox_asir accepts on the port it is given). */
static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &sl))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Ranks, token and a listening port for server i; an oxr-server also hears
 * which of its peers are plain OpenXM engines, to which its links stay
 * plain RFC-102. */
static oxr_status_t join(oxr_master *m, int i, int timeout_ms)
{
	struct srv *s = &m->s[i];
	oxr_arena *a;
	oxr_cmo *zero = oxr_cmo_null(), *p;
	oxr_status_t st;
	int j;

	if ((st = probe(m, i, timeout_ms)))
		return st;
	if (!m->plain && !s->foreign && (st = give_token(m, i, timeout_ms)))
		return st;
	if ((st = push_int(m, i, m->n)) || (st = push_int(m, i, i)) ||
	    (st = oxr_master_cmd(m, i, OXR_SM_set_rank_102)))
		return st;
	if (s->foreign) /* its ports are chosen pair by pair (link_pair) */
		return sync_one(m, i, timeout_ms);
	for (j = 0; j < m->n; j++) {
		const oxr_cmo *rank;
		if (j == i || m->plain || !m->s[j].foreign)
			continue;
		if ((st = oxr_arena_create(&a)))
			return st;
		st = (rank = oxr_cmo_new_zz_si(a, j)) ? oxr_master_call(m, i, "oxr_plain_102", 1, &rank)
						      : OXR_ERR_NOMEM;
		if (!st)
			st = oxr_master_result(m, i, timeout_ms, NULL, NULL);
		oxr_arena_destroy(a);
		if (st)
			return st;
	}
	if (m->unix_dir) /* each pair's acceptor binds the pair's path */
		return sync_one(m, i, timeout_ms);
	if ((st = oxr_arena_create(&a)))
		return st;
	if (!(st = oxr_master_call(m, i, "oxr_listen_102", 1, (const oxr_cmo *const *)&zero)) &&
	    !(st = oxr_master_result(m, i, timeout_ms, a, &p))) {
		if (p->tag == OXR_CMO_ZZ && p->v.i32 == 1)
			m->port[i] = oxr_cmo_word(p, 0);
		else
			st = oxr_err(OXR_ERR_PROTO, "server %d: oxr_listen_102 gave no port", i);
	}
	oxr_arena_destroy(a);
	return st;
}

/* Both ends of a link have run their command.  An acceptor whose
 * connector failed waits for ever (ox_asir's accept blocks): when lo does
 * not answer, hi's error, if it has one, says why. */
static oxr_status_t sync_pair(oxr_master *m, int lo, int hi, int timeout_ms)
{
	char msg[1024];
	oxr_status_t st = sync_one(m, lo, timeout_ms);

	if (st == OXR_ERR_TIMEOUT) {
		snprintf(msg, sizeof(msg), "%s", oxr_errmsg());
		if (sync_one(m, hi, timeout_ms) == OXR_ERR_PEER)
			return OXR_ERR_PEER;
		oxr_err_keep(msg);
		return st;
	}
	return st ? st : sync_one(m, hi, timeout_ms);
}

/* The link between servers lo < hi over a Unix socket: a new path, the
 * acceptor's port and the connector's (its host CMO_NULL, as asir's
 * spawn102_local sends it), removed once both have run their command. */
static oxr_status_t link_pair_unix(oxr_master *m, int lo, int hi, int timeout_ms)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	oxr_status_t st;

	if ((size_t)snprintf(path, sizeof(path), "%s/%d.%d", m->unix_dir, lo, hi) >= sizeof(path))
		return oxr_err(OXR_ERR_INVAL, "group: the socket path %s/%d.%d is too long",
			       m->unix_dir, lo, hi);
	(void)unlink(path); /* a restart links the pair again */
	if (!(st = push_str(m, lo, path)) && !(st = push_int(m, lo, hi)) &&
	    !(st = oxr_master_cmd(m, lo, OXR_SM_tcp_accept_102)) &&
	    !(st = oxr_master_push(m, hi, oxr_cmo_null())) && !(st = push_str(m, hi, path)) &&
	    !(st = push_int(m, hi, lo)) && !(st = oxr_master_cmd(m, hi, OXR_SM_tcp_connect_102)))
		st = sync_pair(m, lo, hi, timeout_ms);
	(void)unlink(path);
	return st;
}

/* The link between servers lo < hi: hi connects to lo's port, lo accepts
 * it as rank hi; both checked before the next pair.  An oxr-server keeps
 * one listening port; another engine (ox_asir) binds the port it is given
 * for one accept and closes it, and the accepted connection keeps the port
 * busy: a new free port for each of its pairs, as asir's spawn102 takes a
 * generate_port() for each. */
static oxr_status_t link_pair(oxr_master *m, int lo, int hi, int timeout_ms)
{
	oxr_status_t st;
	int port;

	if (m->unix_dir)
		return link_pair_unix(m, lo, hi, timeout_ms);
	if ((port = m->s[lo].foreign ? free_port() : m->port[lo]) < 0)
		return oxr_err(OXR_ERR_IO, "no free port for server %d", lo);
	if ((st = push_int(m, lo, port)) || (st = push_int(m, lo, hi)) ||
	    (st = oxr_master_cmd(m, lo, OXR_SM_tcp_accept_102)) ||
	    (st = push_str(m, hi, m->s[lo].host)) || (st = push_int(m, hi, port)) ||
	    (st = push_int(m, hi, lo)) || (st = oxr_master_cmd(m, hi, OXR_SM_tcp_connect_102)))
		return st;
	return sync_pair(m, lo, hi, timeout_ms);
}

oxr_status_t oxr_master_set_unix(oxr_master *m, const char *dir)
{
	char buf[PATH_MAX];
	const char *tmp = getenv("TMPDIR");

	if (m->port)
		return oxr_err(OXR_ERR_INVAL, "set_unix: the group is formed already");
	if (!dir) {
		if ((size_t)snprintf(buf, sizeof(buf), "%s/oxr-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
		    sizeof(buf))
			return oxr_err(OXR_ERR_INVAL, "set_unix: $TMPDIR is too long");
		if (!mkdtemp(buf))
			return oxr_err(OXR_ERR_IO, "set_unix: mkdtemp %s: %s", buf, strerror(errno));
		dir = buf;
	}
	/* room for "/LO.HI" with two ranks of up to 4 digits */
	if (strlen(dir) + 11 >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		if (dir == buf)
			rmdir(buf);
		return oxr_err(OXR_ERR_INVAL, "set_unix: %s is too long for a socket path", dir);
	}
	if (m->unix_own)
		rmdir(m->unix_dir);
	free(m->unix_dir);
	if (!(m->unix_dir = strdup(dir))) {
		if (dir == buf)
			rmdir(buf);
		return oxr_err(OXR_ERR_NOMEM, "set_unix: out of memory");
	}
	m->unix_own = dir == buf;
	return OXR_OK;
}

oxr_status_t oxr_master_group(oxr_master *m, int plain, int timeout_ms)
{
	oxr_status_t st = OXR_OK;
	int i, j;

	m->plain = plain;
	if (!plain && getrandom(m->token, sizeof(m->token), 0) != (ssize_t)sizeof(m->token))
		return oxr_err(OXR_ERR_IO, "getrandom: %s", strerror(errno));
	if (!m->port && !(m->port = calloc((size_t)m->n, sizeof(*m->port))))
		return oxr_err(OXR_ERR_NOMEM, "group: out of memory");
	/* all probed first: each oxr-server hears of every plain peer in join */
	for (i = 0; i < m->n && !st; i++)
		st = probe(m, i, timeout_ms);
	for (i = 0; i < m->n && !st; i++)
		st = join(m, i, timeout_ms);
	for (i = 0; i < m->n && !st; i++)
		for (j = i + 1; j < m->n && !st; j++)
			st = link_pair(m, i, j, timeout_ms);
	return st;
}

oxr_status_t oxr_master_kill(oxr_master *m, int i)
{
	struct srv *s;
	oxr_status_t st = check_index(m, i);

	if (st)
		return st;
	s = &m->s[i];
	/* the control process kills the engine, then ends */
	(void)send_msg(s, s->cfd, OXR_OX_COMMAND, OXR_SM_control_kill, NULL);
	if (s->pid > 0 && waitpid(s->pid, NULL, 0) == s->pid)
		s->pid = 0;
	return OXR_OK;
}

oxr_status_t oxr_master_restart(oxr_master *m, int i, int timeout_ms)
{
	struct srv *s;
	oxr_status_t st = check_index(m, i);
	int j;

	if (st)
		return st;
	if (!m->port)
		return oxr_err(OXR_ERR_INVAL, "restart: the servers are in no group yet");
	s = &m->s[i];
	if (s->pid > 0)
		(void)oxr_master_kill(m, i);
	srv_close(s);
	if ((st = start_one(s, path_of(m, i))) || (st = join(m, i, timeout_ms)))
		return st;
	for (j = 0; j < m->n && !st; j++)
		if (j != i)
			st = link_pair(m, j < i ? j : i, j < i ? i : j, timeout_ms);
	return st;
}

oxr_status_t oxr_master_bcast(oxr_master *m, int root, const oxr_cmo *o)
{
	oxr_status_t st = check_index(m, root);
	int i;

	if (st || (o && (st = oxr_master_push(m, root, o))))
		return st;
	for (i = 0; i < m->n && !st; i++)
		if (!(st = push_int(m, i, root)))
			st = oxr_master_cmd(m, i, OXR_SM_bcast_102);
	return st;
}

oxr_status_t oxr_master_reduce(oxr_master *m, int root, const char *op)
{
	oxr_status_t st = check_index(m, root);
	int i;

	for (i = 0; i < m->n && !st; i++)
		if (!(st = push_int(m, i, root)) && !(st = push_str(m, i, op)))
			st = oxr_master_cmd(m, i, OXR_SM_reduce_102);
	return st;
}

oxr_status_t oxr_master_reset_102(oxr_master *m, int timeout_ms)
{
	oxr_status_t st = OXR_OK;
	int i;

	for (i = 0; i < m->n && !st; i++)
		st = oxr_master_reset(m, i, timeout_ms);
	/* the abandoned work's errors stay on the stacks; the sync below is
	 * about SM_reset_102's own */
	for (i = 0; i < m->n; i++)
		m->s[i].mark = m->s[i].serial;
	for (i = 0; i < m->n && !st; i++)
		st = oxr_master_cmd(m, i, OXR_SM_reset_102);
	return st ? st : oxr_master_sync(m, timeout_ms);
}

oxr_status_t oxr_master_wait(oxr_master *m, int i, int timeout_ms, int *status)
{
	int64_t deadline = now_ms() + timeout_ms;
	oxr_status_t st = check_index(m, i);

	if (st)
		return st;
	if (m->s[i].pid <= 0)
		return oxr_err(OXR_ERR_INVAL, "server %d was waited for already", i);
	for (;;) {
		pid_t r = waitpid(m->s[i].pid, status, WNOHANG);
		if (r == m->s[i].pid) {
			m->s[i].pid = 0;
			return OXR_OK;
		}
		if (r < 0)
			return oxr_err(OXR_ERR_IO, "waitpid: %s", strerror(errno));
		if (now_ms() >= deadline)
			return oxr_err(OXR_ERR_TIMEOUT, "server %d is still running after %d ms", i,
				       timeout_ms);
		usleep(2000);
	}
}

void oxr_master_destroy(oxr_master *m, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int i, left;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		if (m->s[i].cfd >= 0)
			(void)send_msg(&m->s[i], m->s[i].cfd, OXR_OX_COMMAND, OXR_SM_shutdown, NULL);
	do {
		left = 0;
		for (i = 0; i < m->n; i++)
			if (m->s[i].pid > 0) {
				if (waitpid(m->s[i].pid, NULL, WNOHANG) == m->s[i].pid)
					m->s[i].pid = 0;
				else
					left++;
			}
		if (left)
			usleep(2000);
	} while (left && now_ms() < deadline);
	for (i = 0; i < m->n; i++) {
		struct srv *s = &m->s[i];
		if (s->pid > 0) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
		}
		srv_close(s);
	}
	if (m->launcher > 0) { /* its servers are gone: it ends too, or is ended */
		int64_t until = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
		while (waitpid(m->launcher, NULL, WNOHANG) == 0 && now_ms() < until)
			usleep(5000);
		if (kill(m->launcher, 0) == 0) {
			kill(m->launcher, SIGTERM);
			waitpid(m->launcher, NULL, 0);
		}
	}
	if (m->unix_own) { /* ours: whatever a failed link left, then the directory */
		DIR *d = opendir(m->unix_dir);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				(void)unlinkat(dirfd(d), e->d_name, 0);
		if (d)
			closedir(d);
		rmdir(m->unix_dir);
	}
	free(m->unix_dir);
	if (m->paths)
		for (i = 0; i < m->n; i++)
			free(m->paths[i]);
	free(m->paths);
	free(m->s);
	free(m->port);
	free(m);
}
