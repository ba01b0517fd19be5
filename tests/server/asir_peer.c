/* SPDX-License-Identifier: MIT */
/*
 * asir_peer: a test engine that behaves on the wire like Risa/Asir's
 * ox_asir (asir2018: io/ox_asir.c, io/ox.c, io/tcpf.c, io/sio.c,
 * io/ox_launch.c), so that CI can put "an ox_asir" into RFC-102 groups
 * beside oxr-servers without building asir.  Written from reading asir's
 * source; no code of it is copied.  What it reproduces:
 *
 * - started like an oxr-server by oxr_master: the data channel on fds 3/4,
 *   --control-fd N the control channel.  As with asir's ox_launch, one
 *   process serves the control channel (SM_control_reset_connection sends
 *   the engine SIGUSR1, SM_control_kill / SM_shutdown kill it) and its
 *   child is the engine.  Byte order: the engine side writes its byte
 *   first (1 on little-endian hosts), equal bytes keep that order, else
 *   network order.
 * - SIGUSR1 (RFC-100 reset): the engine abandons what it does whenever it
 *   waits for input (asir longjmps out of select; a message already begun
 *   is read whole first, as asir's critical sections do), sends
 *   OX_SYNC_BALL on the data channel and drops OX_DATA/OX_COMMAND until the
 *   master's OX_SYNC_BALL.  The stack and the RFC-102 links are left as
 *   they are, and so are bytes buffered on the links.
 * - one serial counter for every message sent on every stream (ox_serial).
 * - mathcap [[199901160, "ox_asir"], ox_asir's SM list, [[OX_DATA, CMO
 *   tags], [OX_LOCAL_OBJECT_ASIR, [0, 1]]]]; SM_getsp pushes a ZZ (0 as
 *   CMO_NULL); SM_popCMO of an empty stack sends CMO_NULL; integer 0
 *   (CMO_ZZ 0, CMO_ZERO) is stored as asir's 0 and sent as CMO_NULL;
 *   unknown SM codes are ignored; errors are CMO_ERROR2 [INT32 serial,
 *   INT32 -1, STRING message, LIST []] on the stack.
 * - SM_set_rank_102 (nserver, rank: ZZ or CMO_NULL only),
 *   SM_tcp_accept_102 (port, rank: a ZZ port is TCP on INADDR_ANY, a
 *   CMO_STRING port a Unix-domain socket path that is bound and never
 *   removed), SM_tcp_connect_102 (host, port, rank: 10 tries 100 ms apart;
 *   with a String port the host is ignored).  Each link: both sides write
 *   their byte-order byte, then read the other's; then a blocking buffered
 *   stream.
 * - SM_bcast_102 / SM_reduce_102 ("+", "*") in asir's binomial orders; a
 *   receive takes whatever message comes next on the link: a sync ball is
 *   the object 0, a command its INT32 code.
 * - SM_reset_102: for j = 0..rank-1 read from j until its OX_SYNC_BALL
 *   (blocking), then one OX_SYNC_BALL to each j = rank+1..nserver-1.
 *
 * The codec is liboxr's (cmo.h, ox.h); the links are plain sockets here.
 * ASIR_PEER_LOG=1 prints every message on stderr.
 */
#define _GNU_SOURCE /* ppoll */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oxr/cmo.h"
#include "oxr/ox.h"

#define OX_VERSION 199901160
#define MAXRANK 1024 /* asir's MAXIOFP */
#define ASIR_MY_BYTE (OXR_ORDER_HOST == OXR_ORDER_LITTLE ? 0x01 : 0xff)

enum { OK = 0, INTR = 1, FAIL = 2 };

static volatile sig_atomic_t usr1;
static int32_t ox_serial;
static int logging;
static char errbuf[512];

static void on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return FAIL;
}

static void logf_(const char *fmt, ...)
{
	va_list ap;

	if (!logging)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "asir_peer[%d]: ", (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- streams: asir's buffered FILEs on a socket ---------------------- */

struct stream {
	int rfd, wfd;
	int order;
	char *path; /* a Unix socket's path (never removed, as in asir) */
	oxr_arena *a;
	oxr_decoder *dec;
	size_t off, len;
	uint8_t buf[1 << 16];
};

/* Waits until fd can be read; the only place SIGUSR1 gets through (asir's
 * select in wait_for_data), so a reset lands between messages. */
static int wait_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	sigset_t none;

	sigemptyset(&none);
	for (;;) {
		int r;
		if (usr1)
			return INTR;
		r = ppoll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0, timeout_ms < 0 ? NULL : &ts, &none);
		if (r >= 0)
			return r > 0 || timeout_ms >= 0 ? OK : FAIL;
		if (errno != EINTR)
			return fail("poll: %s", strerror(errno));
	}
}

/* Blocking read into the buffer (SIGUSR1 stays blocked: a critical section). */
static int fill(struct stream *s)
{
	ssize_t k;

	do
		k = read(s->rfd, s->buf, sizeof(s->buf));
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return fail("a stream ended (%s)", k < 0 ? strerror(errno) : "end of file");
	s->off = 0;
	s->len = (size_t)k;
	return OK;
}

static int read_byte(struct stream *s, uint8_t *b)
{
	int st;

	if (s->off == s->len && (st = fill(s)))
		return st;
	*b = s->buf[s->off++];
	return OK;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return fail("write: %s", strerror(errno));
		b += k;
		n -= (size_t)k;
	}
	return OK;
}

static struct stream *stream_new(int rfd, int wfd)
{
	struct stream *s = calloc(1, sizeof(*s));

	if (!s || oxr_arena_create(&s->a)) {
		fprintf(stderr, "asir_peer: out of memory\n");
		exit(1);
	}
	s->rfd = rfd;
	s->wfd = wfd;
	return s;
}

static int stream_order(struct stream *s, uint8_t mine, uint8_t theirs)
{
	/* asir: conv = (mine != theirs); no check of the byte */
	s->order = mine == theirs ? (mine == 0x01 ? OXR_ORDER_LITTLE : OXR_ORDER_NETWORK)
				  : OXR_ORDER_NETWORK;
	if (oxr_decoder_create(&s->dec, OXR_DECODE_OX, s->order, NULL, s->a))
		return fail("decoder: out of memory");
	return OK;
}

static void stream_free(struct stream *s)
{
	if (!s)
		return;
	close(s->rfd);
	if (s->wfd != s->rfd)
		close(s->wfd);
	oxr_decoder_destroy(s->dec);
	oxr_arena_destroy(s->a);
	free(s->path);
	free(s);
}

/* The next message; it lives in s->a until the next call.  Only the wait
 * for its first byte can be interrupted. */
static int recv_msg(struct stream *s, const oxr_ox_msg **out)
{
	int st;

	if (s->off == s->len && (st = wait_in(s->rfd, -1)))
		return st;
	oxr_arena_reset(s->a);
	for (;;) {
		size_t used;
		oxr_status_t r;
		if (s->off == s->len && (st = fill(s)))
			return st;
		r = oxr_decoder_feed(s->dec, s->buf + s->off, s->len - s->off, 0, &used);
		if (r == OXR_AGAIN) {
			s->off = s->len;
			continue;
		}
		if (r)
			return fail("a stream sent no OX message: %s", oxr_decoder_error(s->dec));
		s->off += used;
		*out = oxr_decoder_msg(s->dec);
		return OK;
	}
}

static int send_msg(struct stream *s, int32_t tag, int32_t sm, const oxr_cmo *o)
{
	oxr_ox_msg m = { .tag = tag, .serial = ox_serial++, .sm = sm, .cmo = (oxr_cmo *)o };
	uint8_t *buf;
	size_t len;
	int st;

	if (oxr_ox_encode_alloc(&m, 1, s->order, &buf, &len))
		return fail("cannot encode a message");
	st = write_all(s->wfd, buf, len);
	free(buf);
	return st;
}

/* ---- the operand stack --------------------------------------------- */

struct item {
	oxr_cmo *o; /* oxr_cmo_null() is asir's 0 */
	oxr_arena *a;
};

static struct item *stack;
static size_t sp, cap;

/* asir's reading of a CMO: integer 0 (ZZ 0, CMO_ZERO) is its 0, the null
 * object, and so it goes out as CMO_NULL. */
static oxr_cmo *norm(oxr_cmo *o)
{
	uint32_t i;

	if ((o->tag == OXR_CMO_ZZ && o->v.i32 == 0) || o->tag == OXR_CMO_ZERO)
		return oxr_cmo_null();
	if (o->tag == OXR_CMO_LIST)
		for (i = 0; i < o->nkids; i++)
			o->kids[i] = norm(o->kids[i]);
	return o;
}

static void push_own(oxr_cmo *o, oxr_arena *a)
{
	if (sp == cap) {
		cap = cap ? 2 * cap : 64;
		if (!(stack = realloc(stack, cap * sizeof(*stack)))) {
			fprintf(stderr, "asir_peer: out of memory\n");
			exit(1);
		}
	}
	stack[sp++] = (struct item){ o, a };
}

static void push_copy(const oxr_cmo *o)
{
	oxr_arena *a;
	oxr_cmo *c;

	if (oxr_arena_create(&a) || oxr_cmo_copy(a, o, &c)) {
		fprintf(stderr, "asir_peer: out of memory\n");
		exit(1);
	}
	push_own(norm(c), a);
}

/* asir_pop_one: an empty stack gives 0. */
static struct item pop(void)
{
	return sp ? stack[--sp] : (struct item){ oxr_cmo_null(), NULL };
}

static void item_free(struct item *it)
{
	if (it->a)
		oxr_arena_destroy(it->a);
	it->a = NULL;
}

static void push_int32(int32_t v)
{
	oxr_arena *a;

	if (oxr_arena_create(&a))
		exit(1);
	push_own(oxr_cmo_new_int32(a, v), a);
}

static void push_mpz(mpz_srcptr z)
{
	oxr_arena *a;

	if (!mpz_sgn(z)) {
		push_own(oxr_cmo_null(), NULL);
		return;
	}
	if (oxr_arena_create(&a))
		exit(1);
	push_own(oxr_cmo_new_zz(a, z), a);
}

/* create_error: [serial, -1, message, []] */
static void push_error(uint32_t serial, const char *msg)
{
	oxr_arena *a;
	oxr_cmo *e, *l;

	if (oxr_arena_create(&a) || !(e = oxr_cmo_new_node(a, OXR_CMO_ERROR2, 1)) ||
	    !(l = oxr_cmo_new_list(a, 4)) || !(l->kids[0] = oxr_cmo_new_int32(a, (int32_t)serial)) ||
	    !(l->kids[1] = oxr_cmo_new_int32(a, -1)) || !(l->kids[2] = oxr_cmo_new_string(a, msg)) ||
	    !(l->kids[3] = oxr_cmo_new_list(a, 0)))
		exit(1);
	e->kids[0] = l;
	push_own(e, a);
	logf_("error pushed: %s", msg);
}

/* How a command that failed ends: a FAIL (asir's error object, the engine
 * goes on) becomes a CMO_ERROR2 on the stack; anything else ends it. */
static int failed(int st, unsigned serial)
{
	if (st != FAIL)
		return st;
	push_error(serial, errbuf);
	return OK;
}

/* An asir integer (Q with INT): ZZ or 0. */
static int is_int(const oxr_cmo *o)
{
	return o->tag == OXR_CMO_ZZ || o->tag == OXR_CMO_NULL;
}

/* ZTOS of an integer that fits a long; 0 if o is not one. */
static int to_long(const oxr_cmo *o, long *v)
{
	mpz_t z;
	int ok;

	if (o->tag == OXR_CMO_NULL) {
		*v = 0;
		return 1;
	}
	if (o->tag != OXR_CMO_ZZ)
		return 0;
	mpz_init(z);
	ok = oxr_cmo_get_mpz(o, z) == OXR_OK && mpz_fits_slong_p(z);
	if (ok)
		*v = mpz_get_si(z);
	mpz_clear(z);
	return ok;
}

/* ---- RFC-100 commands ------------------------------------------------ */

static struct stream *master; /* the data channel */
static int flushing;          /* ox_flushing */

static const int32_t asir_sm[] = {
	OXR_SM_dupErrors, OXR_SM_getsp, OXR_SM_popSerializedLocalObject, OXR_SM_popCMO,
	OXR_SM_popString, OXR_SM_pushCMOtag, OXR_SM_setName, OXR_SM_evalName,
	OXR_SM_executeStringByLocalParser, OXR_SM_executeStringByLocalParserInBatchMode,
	OXR_SM_executeFunction, OXR_SM_shutdown, OXR_SM_pops, OXR_SM_mathcap,
	OXR_SM_setMathcap, OXR_SM_nop, OXR_SM_beginBlock, OXR_SM_endBlock,
	OXR_SM_executeFunctionSync, OXR_SM_set_rank_102, OXR_SM_tcp_accept_102,
	OXR_SM_tcp_connect_102, OXR_SM_reset_102, OXR_SM_bcast_102, OXR_SM_reduce_102,
};
static const int32_t asir_cmo[] = {
	OXR_CMO_NULL, OXR_CMO_INT32, OXR_CMO_DATUM, OXR_CMO_STRING, OXR_CMO_MATHCAP,
	OXR_CMO_ERROR, OXR_CMO_ERROR2, OXR_CMO_LIST, OXR_CMO_MONOMIAL32, OXR_CMO_ZZ,
	OXR_CMO_QQ, OXR_CMO_ZERO, OXR_CMO_DMS_GENERIC, OXR_CMO_DMS_OF_N_VARIABLES,
	OXR_CMO_RING_BY_NAME, OXR_CMO_DISTRIBUTED_POLYNOMIAL, OXR_CMO_RATIONAL,
	OXR_CMO_RECURSIVE_POLYNOMIAL, OXR_CMO_POLYNOMIAL_IN_ONE_VARIABLE,
	OXR_CMO_INDETERMINATE, OXR_CMO_TREE, OXR_CMO_BIGFLOAT32, OXR_CMO_COMPLEX,
};

static oxr_cmo *int_list(oxr_arena *a, const int32_t *v, size_t n)
{
	oxr_cmo *l = oxr_cmo_new_list(a, (uint32_t)n);
	size_t i;

	for (i = 0; l && i < n; i++)
		if (!(l->kids[i] = oxr_cmo_new_int32(a, v[i])))
			return NULL;
	return l;
}

static void push_mathcap(void)
{
	static const int32_t local[] = { 0, 1 }; /* ASIR_VL, ASIR_OBJ */
	oxr_arena *a;
	oxr_cmo *mc, *top, *sys, *ox, *d, *l;

	if (oxr_arena_create(&a) || !(mc = oxr_cmo_new_node(a, OXR_CMO_MATHCAP, 1)) ||
	    !(top = oxr_cmo_new_list(a, 3)) || !(sys = oxr_cmo_new_list(a, 2)) ||
	    !(ox = oxr_cmo_new_list(a, 2)) || !(d = oxr_cmo_new_list(a, 2)) ||
	    !(l = oxr_cmo_new_list(a, 2)) || !(sys->kids[0] = oxr_cmo_new_int32(a, OX_VERSION)) ||
	    !(sys->kids[1] = oxr_cmo_new_string(a, "ox_asir")) ||
	    !(top->kids[1] = int_list(a, asir_sm, sizeof(asir_sm) / sizeof(asir_sm[0]))) ||
	    !(d->kids[0] = oxr_cmo_new_int32(a, OXR_OX_DATA)) ||
	    !(d->kids[1] = int_list(a, asir_cmo, sizeof(asir_cmo) / sizeof(asir_cmo[0]))) ||
	    !(l->kids[0] = oxr_cmo_new_int32(a, OXR_OX_LOCAL_OBJECT_ASIR)) ||
	    !(l->kids[1] = int_list(a, local, 2)))
		exit(1);
	top->kids[0] = sys;
	ox->kids[0] = d;
	ox->kids[1] = l;
	top->kids[2] = ox;
	mc->kids[0] = top;
	push_own(mc, a);
}

/* SM_popString for the objects the tests use (asir prints any object). */
static int pop_string(void)
{
	struct item it = pop();
	oxr_arena *a;
	oxr_cmo *s;
	char *txt = NULL, num[16];
	mpz_t z;
	int st;

	if (oxr_arena_create(&a))
		exit(1);
	if (it.o->tag == OXR_CMO_ZZ) {
		mpz_init(z);
		(void)oxr_cmo_get_mpz(it.o, z);
		txt = mpz_get_str(NULL, 10, z);
		mpz_clear(z);
		s = oxr_cmo_new_string(a, txt);
		free(txt);
	} else if (it.o->tag == OXR_CMO_STRING) {
		s = oxr_cmo_new_bytes(a, OXR_CMO_STRING, it.o->data, it.o->len);
	} else {
		snprintf(num, sizeof(num), "%d", it.o->tag == OXR_CMO_INT32 ? it.o->v.i32 : 0);
		s = oxr_cmo_new_string(a, it.o->tag == OXR_CMO_INT32 || it.o->tag == OXR_CMO_NULL
						  ? num : "(an object asir_peer does not print)");
	}
	st = send_msg(master, OXR_OX_DATA, 0, s);
	oxr_arena_destroy(a);
	item_free(&it);
	return st;
}

/* ---- RFC-102 --------------------------------------------------------- */

static int nserver, myrank;
static struct stream *link_[MAXRANK]; /* iofp_102 */

/* register_102 with is_master 1: write our byte, then read theirs. */
static int register_102(int fd, long rank, const char *path)
{
	uint8_t mine = ASIR_MY_BYTE, theirs;
	struct stream *s;
	int st;

	if (rank < 0 || rank >= MAXRANK) {
		close(fd);
		return fail("rank %ld is past MAXIOFP", rank);
	}
	s = stream_new(fd, fd);
	if (path)
		s->path = strdup(path);
	if ((st = write_all(fd, &mine, 1)) || (st = read_byte(s, &theirs)) ||
	    (st = stream_order(s, mine, theirs))) {
		stream_free(s);
		return st;
	}
	stream_free(link_[rank]);
	link_[rank] = s;
	logf_("link to rank %ld (%s), order %s", rank, path ? path : "tcp",
	      s->order == OXR_ORDER_LITTLE ? "little" : "network");
	return OK;
}

static int set_rank(uint32_t serial)
{
	struct item r = pop(), n = pop();
	long nv = 0, rv = 0;
	int bad = 0;

	/* asir: 0 (CMO_NULL) is not an nserver; anything not an integer is bad */
	if (n.o->tag == OXR_CMO_NULL || !is_int(n.o) || !is_int(r.o) || !to_long(n.o, &nv) ||
	    !to_long(r.o, &rv)) {
		bad = 1;
	} else {
		if (nv <= 0 || rv < 0 || rv >= nv || nv > MAXRANK)
			bad = 1;
		/* asir sets them even when they are out of range */
		myrank = (int)rv;
		nserver = (int)(nv > MAXRANK ? MAXRANK : nv);
	}
	item_free(&r);
	item_free(&n);
	if (bad)
		push_error(serial, "Invalid argument(s) in ox_set_rank_102");
	return OK;
}

/* A port: TCP (a ZZ, 0 as CMO_NULL) or a Unix path (a CMO_STRING). */
static int port_of(const oxr_cmo *p, char *buf, size_t n, int *use_unix)
{
	long v;

	if (p->tag == OXR_CMO_STRING) {
		if (p->len >= n || p->len >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return 0;
		memcpy(buf, p->data, p->len);
		buf[p->len] = 0;
		*use_unix = 1;
		return 1;
	}
	if (!to_long(p, &v))
		return 0;
	snprintf(buf, n, "%ld", v);
	*use_unix = 0;
	return 1;
}

/* try_bind_listen: bound and listening, or -1. */
static int bind_listen(int use_unix, const char *port)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct sockaddr_in si = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = socket(use_unix ? AF_UNIX : AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (use_unix)
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", port);
	else
		si.sin_port = htons((uint16_t)atoi(port));
	if (bind(fd, use_unix ? (struct sockaddr *)&su : (struct sockaddr *)&si,
		 use_unix ? (socklen_t)sizeof(su) : (socklen_t)sizeof(si)) < 0 ||
	    listen(fd, 5) < 0) {
		logf_("bind/listen on %s: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int tcp_accept(uint32_t serial)
{
	struct item r = pop(), p = pop();
	char port[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int use_unix, lfd, fd = -1, st = OK;
	long rank;

	if (!port_of(p.o, port, sizeof(port), &use_unix) || !to_long(r.o, &rank)) {
		push_error(serial, "failed to bind or accept in ox_tcp_accept_102");
		goto out;
	}
	if ((lfd = bind_listen(use_unix, port)) >= 0) {
		/* try_accept: blocking (a reset gets it out), the listener closed */
		if ((st = wait_in(lfd, -1)) == OK)
			fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (st == INTR)
			goto out;
		st = OK;
	}
	if (fd >= 0 && use_unix == 0) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (fd < 0 || register_102(fd, rank, use_unix ? port : NULL))
		push_error(serial, "failed to bind or accept in ox_tcp_accept_102");
out:
	item_free(&r);
	item_free(&p);
	return st;
}

/* try_connect: 10 tries, 100 ms apart. */
static int try_connect(int use_unix, const char *host, const char *port, int *out)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct sockaddr_in si = { .sin_family = AF_INET };
	int i, st;

	if (use_unix) {
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", port);
	} else {
		si.sin_port = htons((uint16_t)atoi(port));
		if (inet_pton(AF_INET, host, &si.sin_addr) != 1) {
			struct addrinfo hints = { .ai_family = AF_INET }, *res;
			if (getaddrinfo(host, NULL, &hints, &res))
				return fail("unknown host %s", host);
			si.sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
			freeaddrinfo(res);
		}
	}
	for (i = 0; i < 10; i++) {
		int fd = socket(use_unix ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			return fail("socket: %s", strerror(errno));
		if (connect(fd, use_unix ? (struct sockaddr *)&su : (struct sockaddr *)&si,
			    use_unix ? (socklen_t)sizeof(su) : (socklen_t)sizeof(si)) == 0) {
			if (!use_unix) {
				int one = 1;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			}
			*out = fd;
			return OK;
		}
		close(fd);
		if ((st = wait_in(-1, 100)) == INTR) /* usleep(100000), interruptible */
			return st;
	}
	return fail("connect to %s: %s", port, strerror(errno));
}

static int tcp_connect(uint32_t serial)
{
	struct item r = pop(), p = pop(), h = pop();
	char port[sizeof(((struct sockaddr_un *)0)->sun_path)], host[256];
	int use_unix, fd = -1, st = OK;
	long rank;

	if (!port_of(p.o, port, sizeof(port), &use_unix) || !to_long(r.o, &rank) ||
	    (!use_unix && (h.o->tag != OXR_CMO_STRING || h.o->len >= sizeof(host)))) {
		/* asir takes a TCP port's host as a String (and crashes on 0) */
		push_error(serial, "failed to connect in ox_tcp_connect_102");
		goto out;
	}
	if (!use_unix) {
		memcpy(host, h.o->data, h.o->len);
		host[h.o->len] = 0;
	}
	st = try_connect(use_unix, use_unix ? NULL : host, port, &fd);
	if (st == INTR)
		goto out;
	st = OK;
	if (fd < 0 || register_102(fd, rank, NULL))
		push_error(serial, "failed to connect in ox_tcp_connect_102");
out:
	item_free(&r);
	item_free(&p);
	item_free(&h);
	return st;
}

static int need_link(int rank)
{
	if (rank < 0 || rank >= MAXRANK || !link_[rank])
		return fail("asir_peer: no link to rank %d (asir would crash here)", rank);
	return OK;
}

/* ox_recv_102: whatever comes next; asir keeps a command as its USINT code
 * and anything else without an object (a sync ball) as 0. */
static int recv_102(int rank, int32_t *tag, struct item *out)
{
	const oxr_ox_msg *m;
	int st;

	if ((st = need_link(rank)) || (st = recv_msg(link_[rank], &m)))
		return st;
	*tag = m->tag;
	logf_("from rank %d: tag %d", rank, m->tag);
	if (m->tag == OXR_OX_DATA) {
		push_copy(m->cmo);
		*out = pop();
	} else if (m->tag == OXR_OX_COMMAND) {
		push_int32(m->sm);
		*out = pop();
	} else {
		*out = (struct item){ oxr_cmo_null(), NULL };
	}
	return OK;
}

static int send_102(int rank, const oxr_cmo *o)
{
	int st = need_link(rank);

	logf_("to rank %d: tag %d", rank, o ? OXR_OX_DATA : OXR_OX_SYNC_BALL);
	return st ? st : send_msg(link_[rank], o ? OXR_OX_DATA : OXR_OX_SYNC_BALL, 0, o);
}

static int reset_102(uint32_t serial)
{
	int i, st;

	for (i = 0; i < myrank; i++) {
		int32_t tag;
		do {
			struct item it;
			if ((st = recv_102(i, &tag, &it)))
				goto err;
			item_free(&it);
		} while (tag != OXR_OX_SYNC_BALL);
	}
	for (i = myrank + 1; i < nserver; i++)
		if ((st = send_102(i, NULL)))
			goto err;
	return OK;
err:
	return failed(st, serial);
}

static int bcast_102(uint32_t serial)
{
	struct item r = pop(), data = { oxr_cmo_null(), NULL };
	long root = 0;
	int rel, mask, st = OK;

	(void)to_long(r.o, &root); /* ZTOS */
	item_free(&r);
	rel = myrank - (int)root;
	if (rel == 0)
		data = pop();
	if (rel < 0)
		rel += nserver;
	for (mask = 1; mask < nserver; mask <<= 1)
		if (rel & mask) {
			int src = myrank - mask, tag;
			if (src < 0)
				src += nserver;
			if ((st = recv_102(src, &tag, &data)))
				goto err;
			break;
		}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (rel + mask < nserver) {
			int dst = myrank + mask;
			if (dst >= nserver)
				dst -= nserver;
			if ((st = send_102(dst, data.o)))
				goto err;
		}
	push_own(data.o, data.a);
	return OK;
err:
	item_free(&data);
	return failed(st, serial);
}

/* arf_add / arf_mul on what the tests send: integers (0 included), and
 * strings for "+" (asir concatenates). */
static int arith(int mul, struct item *x, struct item *y)
{
	mpz_t a, b;

	if (is_int(x->o) && is_int(y->o)) {
		mpz_inits(a, b, NULL);
		if (x->o->tag == OXR_CMO_ZZ)
			(void)oxr_cmo_get_mpz(x->o, a);
		if (y->o->tag == OXR_CMO_ZZ)
			(void)oxr_cmo_get_mpz(y->o, b);
		(mul ? mpz_mul : mpz_add)(a, a, b);
		item_free(x);
		item_free(y);
		push_mpz(a);
		*x = pop();
		mpz_clears(a, b, NULL);
		return OK;
	}
	if (!mul && x->o->tag == OXR_CMO_STRING && y->o->tag == OXR_CMO_STRING) {
		oxr_arena *na;
		char *s = malloc(x->o->len + y->o->len + 1);
		if (!s || oxr_arena_create(&na))
			exit(1);
		memcpy(s, x->o->data, x->o->len);
		memcpy(s + x->o->len, y->o->data, y->o->len);
		s[x->o->len + y->o->len] = 0;
		push_own(oxr_cmo_new_string(na, s), na);
		free(s);
		item_free(x);
		item_free(y);
		*x = pop();
		return OK;
	}
	item_free(y);
	return fail("asir_peer: %s of CMO tags %d and %d is not implemented",
		    mul ? "product" : "sum", x->o->tag, y->o->tag);
}

static int reduce_102(uint32_t serial)
{
	struct item op = pop(), r = pop(), data, got;
	long root = 0;
	int rel, mask, st = OK, mul;

	if (op.o->tag != OXR_CMO_STRING || op.o->len != 1 ||
	    (op.o->data[0] != '+' && op.o->data[0] != '*')) {
		/* asir pushes an unset object here; the data stays on the stack */
		item_free(&op);
		item_free(&r);
		push_error(serial, "Invalid opration in ox_reduce_102");
		return OK;
	}
	mul = op.o->data[0] == '*';
	item_free(&op);
	(void)to_long(r.o, &root);
	item_free(&r);
	rel = myrank - (int)root;
	if (rel < 0)
		rel += nserver;
	data = pop();
	for (mask = 1; mask < nserver; mask <<= 1)
		if (rel & mask) {
			int dst = rel - mask + (int)root;
			if (dst >= nserver)
				dst -= nserver;
			if ((st = send_102(dst, data.o)))
				goto err;
			break;
		} else if (rel + mask < nserver) {
			int src = rel + mask + (int)root, tag;
			if (src >= nserver)
				src -= nserver;
			if ((st = recv_102(src, &tag, &got)) || (st = arith(mul, &data, &got)))
				goto err;
		}
	if (rel) {
		item_free(&data);
		push_own(oxr_cmo_null(), NULL);
	} else {
		push_own(data.o, data.a);
	}
	return OK;
err:
	item_free(&data);
	return failed(st, serial);
}

/* ---- the engine ------------------------------------------------------ */

static int do_cmd(int32_t cmd, uint32_t serial)
{
	struct item it;
	size_t i, k;

	logf_("command %d (%s)", cmd, oxr_sm_name(cmd) ? oxr_sm_name(cmd) : "?");
	switch (cmd) {
	case OXR_SM_popCMO: {
		int st;
		it = pop();
		st = send_msg(master, OXR_OX_DATA, 0, it.o);
		item_free(&it);
		return st;
	}
	case OXR_SM_popString: return pop_string();
	case OXR_SM_mathcap: push_mathcap(); return OK;
	case OXR_SM_setMathcap: /* asir stores it and checks what it sends */
		it = pop();
		item_free(&it);
		return OK;
	case OXR_SM_getsp: {
		mpz_t z;
		mpz_init_set_ui(z, sp);
		push_mpz(z);
		mpz_clear(z);
		return OK;
	}
	case OXR_SM_pops: {
		long n = 0;
		it = pop();
		if (it.o->tag == OXR_CMO_INT32)
			n = it.o->v.i32;
		else
			(void)to_long(it.o, &n);
		item_free(&it);
		while (n-- > 0 && sp) {
			it = pop();
			item_free(&it);
		}
		return OK;
	}
	case OXR_SM_pushCMOtag:
		push_int32(sp ? stack[sp - 1].o->tag : OXR_CMO_NULL);
		return OK;
	case OXR_SM_dupErrors: {
		oxr_arena *a;
		oxr_cmo *l;
		for (i = k = 0; i < sp; i++)
			k += stack[i].o->tag == OXR_CMO_ERROR2;
		if (oxr_arena_create(&a) || !(l = oxr_cmo_new_list(a, (uint32_t)k)))
			exit(1);
		for (i = k = 0; i < sp; i++)
			if (stack[i].o->tag == OXR_CMO_ERROR2)
				l->kids[k++] = stack[i].o; /* copied by push_copy below */
		push_copy(l);
		oxr_arena_destroy(a);
		return OK;
	}
	case OXR_SM_shutdown: exit(0); /* asir_terminate */
	case OXR_SM_set_rank_102: return set_rank(serial);
	case OXR_SM_tcp_accept_102: return tcp_accept(serial);
	case OXR_SM_tcp_connect_102: return tcp_connect(serial);
	case OXR_SM_reset_102: return reset_102(serial);
	case OXR_SM_bcast_102: return bcast_102(serial);
	case OXR_SM_reduce_102: return reduce_102(serial);
	case OXR_SM_popSerializedLocalObject:
	case OXR_SM_setName:
	case OXR_SM_evalName:
	case OXR_SM_executeStringByLocalParser:
	case OXR_SM_executeStringByLocalParserInBatchMode:
	case OXR_SM_executeFunction:
	case OXR_SM_executeFunctionSync: {
		char msg[96];
		snprintf(msg, sizeof(msg), "asir_peer: %s is not implemented", oxr_sm_name(cmd));
		push_error(serial, msg);
		return OK;
	}
	default: return OK; /* SM_nop and what asir does not know */
	}
}

static int engine(void)
{
	uint8_t mine = ASIR_MY_BYTE, theirs;
	sigset_t blk;
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&blk);
	sigaddset(&blk, SIGUSR1);
	sigprocmask(SIG_BLOCK, &blk, NULL); /* open only while waiting (wait_in) */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	master = stream_new(3, 4);
	/* the engine side: our byte first, then the master's */
	if (write_all(4, &mine, 1) || read_byte(master, &theirs) ||
	    stream_order(master, mine, theirs)) {
		fprintf(stderr, "asir_peer: the data channel: %s\n", errbuf);
		return 1;
	}
	for (;;) {
		const oxr_ox_msg *m;
		int st;
		if (usr1) { /* the RFC-100 reset: our ball, then drop up to the master's */
			usr1 = 0;
			flushing = 1;
			logf_("reset: sync ball sent, flushing");
			if (send_msg(master, OXR_OX_SYNC_BALL, 0, NULL))
				return 1;
			continue;
		}
		if ((st = recv_msg(master, &m)) == INTR)
			continue;
		if (st) /* the master is gone */
			return 0;
		switch (m->tag) {
		case OXR_OX_COMMAND:
			if (flushing)
				break;
			st = do_cmd(m->sm, (uint32_t)m->serial);
			if (st == FAIL) { /* the data channel failed */
				fprintf(stderr, "asir_peer: %s\n", errbuf);
				return 1;
			}
			break;
		case OXR_OX_DATA:
			if (!flushing)
				push_copy(m->cmo);
			break;
		case OXR_OX_SYNC_BALL:
			logf_("master's sync ball: flushing ends");
			flushing = 0;
			break;
		default:
			break;
		}
	}
}

/* The control process (asir's ox_launch after the fork), on stream c. */
static int control_loop(struct stream *c, int cfd, pid_t eng)
{
	uint8_t mine = ASIR_MY_BYTE, theirs;
	int status, rc = -1;

	if (write_all(cfd, &mine, 1) || read_byte(c, &theirs) || stream_order(c, mine, theirs)) {
		kill(eng, SIGKILL);
		waitpid(eng, NULL, 0);
		return 1;
	}
	while (rc < 0) {
		struct pollfd p = { .fd = cfd, .events = POLLIN };
		const oxr_ox_msg *m;
		if (waitpid(eng, &status, WNOHANG) == eng)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (c->off == c->len && poll(&p, 1, 200) <= 0)
			continue;
		if (recv_msg(c, &m)) { /* the master is gone */
			kill(eng, SIGKILL);
			rc = 0;
			break;
		}
		if (m->tag != OXR_OX_COMMAND)
			continue;
		if (m->sm == OXR_SM_control_reset_connection)
			kill(eng, SIGUSR1);
		else if (m->sm == OXR_SM_control_kill || m->sm == OXR_SM_shutdown) {
			kill(eng, SIGKILL);
			rc = 0;
		}
	}
	waitpid(eng, NULL, 0);
	return rc;
}

static int control(int cfd, pid_t eng)
{
	struct stream *c = stream_new(cfd, cfd);
	int rc = control_loop(c, cfd, eng);

	stream_free(c);
	return rc;
}

int main(int argc, char **argv)
{
	int cfd = -1, i;
	pid_t pid;
	sigset_t blk;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--control-fd") && i + 1 < argc)
			cfd = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: asir_peer [--control-fd N] (data channel on fds 3, 4)\n");
			return 2;
		}
	logging = getenv("ASIR_PEER_LOG") && *getenv("ASIR_PEER_LOG") == '1';
	signal(SIGPIPE, SIG_IGN);
	/* a reset before the engine is ready stays pending, not lost */
	sigemptyset(&blk);
	sigaddset(&blk, SIGUSR1);
	sigprocmask(SIG_BLOCK, &blk, NULL);
	if (cfd < 0)
		return engine();
	if ((pid = fork()) < 0) {
		perror("asir_peer: fork");
		return 1;
	}
	if (pid == 0) {
		close(cfd);
		_exit(engine());
	}
	close(3);
	close(4);
	return control(cfd, pid);
}
