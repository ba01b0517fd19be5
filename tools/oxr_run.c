/* SPDX-License-Identifier: MIT */
/*
 * oxr-run -n N [--timeout SECONDS] [--survive] [--ranks A-B --publish FILE |
 *         --ranks A-B --join FILE] [--] PROGRAM ARGS...
 *
 * Starts N copies of PROGRAM on this machine as ranks 0..N-1 and is their
 * rendezvous.  Split over hosts: one oxr-run starts ranks A..B and serves
 * the rendezvous for all N, writing its address and the token to FILE
 * (--publish); on each other host an oxr-run starts its ranks, which join
 * that rendezvous with what FILE says (--join), so the token travels by a
 * file only the two hosts' user can read, never by argv or the environment for the oxr-run bootstrap (environment and protocol: the top
 * of transport/boot_run.c).  The rendezvous keeps the blobs the ranks
 * publish for their lookups, so it lives in the --publish oxr-run alone,
 * which serves until the other hosts' ranks are done with it.  Ranks start
 * while it serves: the first ones' hellos and rounds do not wait for the
 * last fork.  One thread, one epoll loop: it serves every
 * rank's connection, reaps the ranks, and stops the whole run as soon as
 * one of them fails, so that no other rank waits for it forever (with
 * --survive it only says so: programs that recover from a failure go on).
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <oxr/boot.h>
#include <oxr/boot_run.h>

#define KILL_GRACE_MS 2000 /* from SIGTERM to SIGKILL */
#define EXIT_GRACE_MS 500  /* from a rank's link closing to "it left" */
#define TOLD_GRACE_MS 1000 /* from a rank's failure to SIGTERM to the others */

static const char usage_text[] =
	"usage: oxr-run -n N [--timeout SECONDS] [--survive] [--addr IP] [--] PROGRAM [ARGS...]\n"
	"       oxr-run -n N --ranks A-B --addr IP --publish FILE [...] [--] PROGRAM [ARGS...]\n"
	"       oxr-run -n N --ranks A-B --join FILE [...] [--] PROGRAM [ARGS...]\n"
	"\n"
	"Runs N copies of PROGRAM on this machine, ranks 0 to N-1 (N from 1 to 1048576),\n"
	"and serves their oxr bootstrap: oxr_boot_open() in each copy joins the group.\n"
	"If one rank fails (exits non-zero or is killed), oxr-run stops the others.\n"
	"\n"
	"  -n N               how many ranks\n"
	"  --timeout SECONDS  stop everything after this long (default: no limit)\n"
	"  --survive          a failed rank is reported, the others go on (for programs\n"
	"                     that recover: oxr_group_shrink); the exit status is still\n"
	"                     the first failure's\n"
	"  --addr IP          the rendezvous listens on IP (default 127.0.0.1): ranks in\n"
	"                     other network namespaces reach it there; each rank's\n"
	"                     OXR_HOST says where the others reach it\n"
	"  --ranks A-B        start only ranks A to B here; the others are started on\n"
	"                     other hosts by an oxr-run with --join\n"
	"  --publish FILE     serve the rendezvous for all N ranks and write its address\n"
	"                     and the one-time token to FILE (new, mode 0600), for the\n"
	"                     --join of the other hosts (a file both can read); it\n"
	"                     holds what the ranks publish, so it serves until the\n"
	"                     other hosts' ranks have closed their bootstrap too, or\n"
	"                     their host stopped answering (TCP keepalive, 25 s)\n"
	"  --join FILE        serve no rendezvous: this host's ranks join the one FILE\n"
	"                     names (written by --publish)\n"
	"  -h, --help         print this help and exit\n"
	"\n"
	"Exit status: 0 every rank exited 0; 1 a rank or the rendezvous failed;\n"
	"128+SIG a rank was killed by signal SIG (or oxr-run was); 124 --timeout ran\n"
	"out; 127 PROGRAM could not be started; 2 usage error.\n";

/*
 * A connection's place in the protocol.  Between rounds a rank's is C_HDR;
 * a lookup passes through C_ASK and C_ANSWER back to C_HDR, never touching
 * the round; a round's request read while the last round's replies still go
 * out waits in C_PARKED (the round's buffer is in use) until they are out.
 */
enum { C_HELLO, C_HDR, C_BODY, C_ASK, C_PARKED, C_READY, C_REPLY, C_ANSWER };

struct conn {
	int fd, rank, state;     /* rank -1 until the hello passed */
	int version;             /* of its hello: 1 only allgathers */
	int discard;             /* its length is not the round's: the body is dropped */
	int slot;                /* its index in conns[] */
	uint32_t events;         /* what epoll watches on it */
	int queued;              /* on the dirty list: its events may have to change */
	struct conn *next_dirty, *next_dead;
	/* the hello, or a header and a lookup's body (the longer) */
	uint8_t in[OXR_RUN_HDR_BYTES + OXR_RUN_LOOKUP_BYTES + 4 * OXR_RUN_LOOKUP_MAX];
	uint8_t *ans;            /* a lookup's answer: the blobs it named, in its order */
	size_t got;              /* bytes of in[] (of the lookup's body in C_ASK), or of the body */
	uint64_t len;            /* of its request */
	uint8_t out[OXR_RUN_HDR_BYTES];  /* its reply: this header, then body_len bytes */
	const uint8_t *body;
	uint64_t body_len, sent; /* of its reply; sent so far, header included */
	char peer[32];
};

/* A publish round's table: rank r's blob at buf + r * len, kept to the end. */
struct pub {
	uint32_t seq;
	uint64_t len;
	uint8_t *buf;
};

/*
 * The costs, so that start-up stays linear in the ranks P: epoll watches
 * each connection, registered once and changed only when its state moves
 * between reading and writing, so an event costs O(1) (poll would scan all
 * P each time); a round costs O(P) once, when it completes (P replies) and
 * when its replies are out (the parked requests of the next one); a lookup
 * of k ranks is O(k + log publishes).  Memory: O(P) for the connections
 * and the rank tables, plus each publish's P blobs.
 */
struct oxrun {
	int n, lfd, sfd, epfd;
	uint8_t token[OXR_TOKEN_BYTES];
	pid_t *pids;             /* by rank; 0 once reaped */
	int running;
	struct conn **conns;     /* every open connection, hello or not */
	int nconns, cap;
	struct conn *dirty;      /* whose state changed this turn */
	struct conn *dead;       /* closed this turn, freed at its end */
	struct conn **by_rank;
	uint8_t *gone;           /* by rank: its connection or its process ended */
	int ngone;
	/* the round: request seq, its op and length a rank, the blobs in rank order */
	uint32_t seq, op;
	uint64_t len;
	int op_rank;             /* the rank whose request started it */
	int started, ready, left, scatter;
	uint8_t *buf;
	struct pub *pubs;        /* every publish round's table, by seq */
	int npubs, pubcap;
	int answering;           /* lookup replies under way */
	int broken;              /* the rendezvous failed: all closed */
	int stopping, code;      /* the ranks are being stopped, and the exit status */
	int termed, killed;      /* SIGTERM, SIGKILL sent */
	int64_t term_at, kill_at, deadline, grace_at;
	long timeout_s;
	int survive;             /* --survive: a failure is reported, the rest go on */
	int failed_code;         /* with --survive: the first failure's status */
	struct in_addr addr;     /* --addr: where the rendezvous listens */
	int first, last;         /* --ranks: the ranks started here */
	const char *publish;     /* --publish FILE */
	const char *join;        /* --join FILE */
	int others;              /* connections of ranks started on other hosts */
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- the rendezvous ---- */

/* The wire's integers: little-endian, at any alignment. */
static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load64(const uint8_t *p)
{
	return load32(p) | (uint64_t)load32(p + 4) << 32;
}

static void store32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void put_hdr(uint8_t *h, uint32_t status, uint32_t seq, uint64_t len)
{
	store32(h, status);
	store32(h + 4, seq);
	store32(h + 8, (uint32_t)len);
	store32(h + 12, (uint32_t)(len >> 32));
}

/*
 * A short reply at once, for a connection that owes nothing half-sent: its
 * socket buffer is empty, so the reply goes out whole or the link is dead.
 */
static int send_now(int fd, uint32_t status, uint32_t seq, const char *msg)
{
	size_t n = msg ? strlen(msg) : 0; /* our own NUL-terminated texts */
	uint8_t h[OXR_RUN_HDR_BYTES];
	struct iovec iov[2] = { { h, sizeof(h) },
				{ (void *)msg, n < OXR_RUN_MAX_MSG ? n : OXR_RUN_MAX_MSG } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

	n = iov[1].iov_len;

	put_hdr(h, status, seq, n);
	return sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)(sizeof(h) + n) ? 0 : -1;
}

static void mark_gone(struct oxrun *o, int rank)
{
	if (!o->gone[rank]) {
		o->gone[rank] = 1;
		o->ngone++;
	}
}

/* What epoll is to watch on a connection in state: nothing is read from a
 * rank that waits for a reply (only its hang-up is), nothing while its
 * reply goes out. */
static uint32_t conn_events(int state)
{
	if (state == C_REPLY || state == C_ANSWER)
		return EPOLLOUT;
	if (state == C_PARKED || state == C_READY)
		return EPOLLRDHUP;
	return EPOLLIN | EPOLLRDHUP;
}

/* Moves c to state; its epoll events follow at the end of the turn (flush),
 * once however often it moved. */
static void set_state(struct oxrun *o, struct conn *c, int state)
{
	c->state = state;
	if (!c->queued) {
		c->queued = 1;
		c->next_dirty = o->dirty;
		o->dirty = c;
	}
}

static void on_writable(struct oxrun *o, struct conn *c);
static void on_header(struct oxrun *o, struct conn *c);

/* The requests of the next round that came while this one's replies went
 * out join it now: its buffer is free. */
static void resume_parked(struct oxrun *o)
{
	int r;

	for (r = 0; r < o->n && !o->broken; r++)
		if (o->by_rank[r] && o->by_rank[r]->state == C_PARKED)
			on_header(o, o->by_rank[r]);
}

/* One reply of the round is out (or its rank gone); after the last, the
 * next round may start. */
static void end_reply(struct oxrun *o)
{
	if (--o->left)
		return;
	free(o->buf);
	o->buf = NULL;
	o->scatter = o->started = o->ready = 0;
	o->seq++;
	if (!o->broken)
		resume_parked(o);
}

/* Closes c; flush() frees it at the end of the turn, so that the events
 * of this turn that name it still find it.  A rank that goes cannot come
 * back. */
static void drop(struct oxrun *o, struct conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(o->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->next_dead = o->dead;
	o->dead = c;
	if (c->rank < 0)
		return;
	o->by_rank[c->rank] = NULL;
	o->others -= c->rank < o->first || c->rank > o->last;
	mark_gone(o, c->rank);
	if (c->state == C_ANSWER)
		o->answering--;
	if (c->state == C_REPLY)
		end_reply(o);
}

/*
 * The rendezvous is over: every rank that waits gets why, and every
 * connection closes, so no rank blocks on it any more.
 */
static void fail(struct oxrun *o, const char *why)
{
	int i;

	if (o->broken)
		return;
	o->broken = 1;
	for (i = 0; i < o->nconns; i++) {
		struct conn *c = o->conns[i];
		int half_sent = (c->state == C_REPLY || c->state == C_ANSWER) && c->sent;

		if (c->fd >= 0 && c->rank >= 0 && !half_sent)
			send_now(c->fd, 1, o->seq, why);
		drop(o, c);
	}
	if (o->lfd >= 0) {
		epoll_ctl(o->epfd, EPOLL_CTL_DEL, o->lfd, NULL);
		close(o->lfd);
	}
	o->lfd = -1;
	free(o->buf);
	o->buf = NULL;
}

static void rv_error(struct oxrun *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rv_error(struct oxrun *o, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "oxr-run: %s\n", msg);
	fail(o, msg);
}

/* Names a rank whose length differs from what most ranks gave (a majority
 * vote), and one rank that gave the common length. */
static void len_mismatch(struct oxrun *o)
{
	uint64_t common = 0;
	int votes = 0, odd = 0, same = 0, r;

	for (r = 0; r < o->n; r++) {
		if (!votes)
			common = o->by_rank[r]->len;
		votes += o->by_rank[r]->len == common ? 1 : -1;
	}
	while (o->by_rank[odd]->len == common)
		odd++;
	while (o->by_rank[same]->len != common)
		same++;
	rv_error(o, "request %u: rank %d gave a length of %llu bytes, rank %d gave %llu; the "
		 "length must be the same on every rank", o->seq, odd,
		 (unsigned long long)o->by_rank[odd]->len, same, (unsigned long long)common);
}

/* The table of publish seq, or NULL: a binary search, as rounds only grow. */
static const struct pub *find_pub(const struct oxrun *o, uint32_t seq)
{
	int lo = 0, hi = o->npubs;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (o->pubs[mid].seq == seq)
			return &o->pubs[mid];
		if (o->pubs[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A complete publish round: its blobs become its table, for lookups until
 * oxr-run exits (a publish a group: few, and a rank may look up late). */
static int keep_round(struct oxrun *o)
{
	if (o->npubs == o->pubcap) {
		int cap = o->pubcap ? 2 * o->pubcap : 8;
		struct pub *p = realloc(o->pubs, (size_t)cap * sizeof(*p));

		if (!p) {
			rv_error(o, "out of memory keeping publish %u", o->seq);
			return -1;
		}
		o->pubs = p;
		o->pubcap = cap;
	}
	o->pubs[o->npubs++] = (struct pub){ .seq = o->seq, .len = o->len, .buf = o->buf };
	o->buf = NULL;
	return 0;
}

/* Starts c's reply of the round, and sends what the socket takes now. */
static void start_reply(struct oxrun *o, struct conn *c, uint64_t body_len)
{
	put_hdr(c->out, 0, o->seq, body_len);
	c->body = o->buf;
	c->body_len = body_len;
	c->sent = 0;
	set_state(o, c, C_REPLY);
	on_writable(o, c);
}

/*
 * After any change: fails a round that lost a rank, answers a complete one.
 * A rank whose link closed but whose process is not reaped yet most likely
 * is dying; its exit status, due any moment, tells the others more than
 * "it left", so that waits a little.
 */
static void progress(struct oxrun *o)
{
	uint64_t body_len;
	int r;

	if (o->broken || o->scatter || !o->started)
		return;
	for (r = 0; o->ngone && r < o->n; r++) {
		if (!o->gone[r])
			continue;
		if (o->pids[r] > 0 && !o->grace_at)
			o->grace_at = now_ms() + EXIT_GRACE_MS;
		if (o->pids[r] > 0 && now_ms() < o->grace_at)
			return;
		rv_error(o, "rank %d left before request %u was complete (it exited or closed "
			 "its bootstrap)", r, o->seq);
		return;
	}
	if (o->ready < o->n)
		return;
	for (r = 0; r < o->n; r++) {
		if (o->by_rank[r]->discard) {
			len_mismatch(o);
			return;
		}
	}
	body_len = (uint64_t)o->n * o->len;
	if (o->op == OXR_RUN_OP_PUBLISH) {
		if (keep_round(o))
			return;
		body_len = 0;
	}
	o->scatter = 1;
	o->left = o->n;
	for (r = 0; r < o->n && !o->broken; r++)
		if (o->by_rank[r])
			start_reply(o, o->by_rank[r], body_len);
}

static int token_eq(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	int i;

	for (i = 0; i < OXR_TOKEN_BYTES; i++)
		d |= a[i] ^ b[i];
	return !d;
}

static void on_hello(struct oxrun *o, struct conn *c)
{
	uint32_t version = load32(c->in + 4), rank = load32(c->in + 8);
	char why[96] = "";

	/* The token before the rank, so a stranger learns nothing about the group. */
	if (memcmp(c->in, "OXRB", 4))
		snprintf(why, sizeof(why), "not an oxr bootstrap (bad magic)");
	else if (version < OXR_RUN_VERSION_MIN || version > OXR_RUN_VERSION)
		snprintf(why, sizeof(why), "protocol version %u; this oxr-run speaks %d to %d",
			 version, OXR_RUN_VERSION_MIN, OXR_RUN_VERSION);
	else if (!token_eq(c->in + 12, o->token))
		snprintf(why, sizeof(why), "wrong token");
	else if (rank >= (uint32_t)o->n)
		snprintf(why, sizeof(why), "rank %u out of range (-n %d)", rank, o->n);
	else if (o->gone[rank] || o->by_rank[rank])
		snprintf(why, sizeof(why), "rank %u has joined already", rank);
	if (*why) {
		fprintf(stderr, "oxr-run: refused a connection from %s: %s\n", c->peer, why);
		send_now(c->fd, 1, 0, why);
		drop(o, c);
		return;
	}
	if (send_now(c->fd, 0, 0, NULL)) {
		drop(o, c);
		return;
	}
	c->rank = (int)rank;
	c->version = (int)version;
	c->got = 0;
	o->others += c->rank < o->first || c->rank > o->last;
	set_state(o, c, C_HDR);
	o->by_rank[rank] = c;
}

static const char *op_name(uint32_t op)
{
	return op == OXR_RUN_OP_PUBLISH ? "publish" : "allgather";
}

/* c's request joins the round (which its request may start). */
static void join_round(struct oxrun *o, struct conn *c, uint32_t op, uint64_t len)
{
	if (!o->started++) {
		o->op = op;
		o->op_rank = c->rank;
		o->len = len;
		o->buf = len ? malloc(len * (uint64_t)o->n) : NULL;
		if (len && !o->buf) {
			rv_error(o, "out of memory for request %u (%d x %llu bytes)", o->seq, o->n,
				 (unsigned long long)len);
			return;
		}
	} else if (op != o->op) {
		rv_error(o, "request %u: rank %d asked for a %s, rank %d for a %s; every rank "
			 "must make the same call", o->seq, c->rank, op_name(op), o->op_rank,
			 op_name(o->op));
		return;
	}
	c->len = len;
	c->discard = len != o->len;
	c->got = 0;
	set_state(o, c, len ? C_BODY : C_READY);
	o->ready += !len;
}

/* A whole header in c->in: a lookup's body comes next; a round's request
 * joins the round, or waits while the last round's replies go out. */
static void on_header(struct oxrun *o, struct conn *c)
{
	uint32_t op = load32(c->in), seq = load32(c->in + 4);
	uint64_t len = load64(c->in + 8);
	int v2 = c->version >= 2;

	if (op == OXR_RUN_OP_LOOKUP && v2) {
		if (len < OXR_RUN_LOOKUP_BYTES + 4 ||
		    len > OXR_RUN_LOOKUP_BYTES + 4 * OXR_RUN_LOOKUP_MAX ||
		    (len - OXR_RUN_LOOKUP_BYTES) % 4) {
			rv_error(o, "rank %d sent a malformed lookup (%llu bytes: 1 to %d ranks)",
				 c->rank, (unsigned long long)len, OXR_RUN_LOOKUP_MAX);
			return;
		}
		c->len = len;
		c->got = 0;
		set_state(o, c, C_ASK);
		return;
	}
	if (op != OXR_RUN_OP_ALLGATHER && !(op == OXR_RUN_OP_PUBLISH && v2)) {
		rv_error(o, "rank %d sent a malformed request (op %u, %llu bytes, protocol "
			 "version %d)", c->rank, op, (unsigned long long)len, c->version);
		return;
	}
	if (o->scatter) {
		set_state(o, c, C_PARKED);
		return;
	}
	if (seq != o->seq) {
		rv_error(o, "rank %d sent a malformed request (op %u, seq %u; expected seq %u)",
			 c->rank, op, seq, o->seq);
		return;
	}
	if (len > OXR_RUN_MAX_BLOB || len * (uint64_t)o->n > OXR_RUN_MAX_ROUND) {
		rv_error(o, "rank %d gave %llu bytes to request %u: over the limit of 64 MiB a "
			 "rank and 1 GiB for all ranks", c->rank, (unsigned long long)len, seq);
		return;
	}
	join_round(o, c, op, len);
}

/* Why the lookup's ranks cannot be answered from p, in why ("": they can). */
static void check_ranks(const struct oxrun *o, const struct pub *p, const uint8_t *body,
			uint32_t count, uint64_t len, char *why, size_t n)
{
	uint32_t i, rank;

	if ((uint64_t)count * len > OXR_RUN_MAX_BLOB) {
		snprintf(why, n, "%u blobs of %llu bytes: over the 64 MiB one lookup may take",
			 count, (unsigned long long)len);
		return;
	}
	for (i = 0; i < count; i++) {
		rank = load32(body + OXR_RUN_LOOKUP_BYTES + 4 * i);
		if (rank >= (uint32_t)o->n) {
			snprintf(why, n, "rank %u is out of range (-n %d)", rank, o->n);
			return;
		}
	}
	if (len != p->len)
		snprintf(why, n, "rank %u published %llu bytes in #%u, not the %llu asked for",
			 load32(body + OXR_RUN_LOOKUP_BYTES), (unsigned long long)p->len, p->seq,
			 (unsigned long long)len);
}

/*
 * A whole lookup in c->in: the blobs of the ranks it names (up to
 * OXR_RUN_LOOKUP_MAX: a rank's partners at once), or status 1 and why, to c
 * alone; the round and the other ranks are not touched.  c waits for
 * nothing else, so its socket is empty and the short error goes at once.
 */
static void on_lookup(struct oxrun *o, struct conn *c)
{
	const uint8_t *body = c->in + OXR_RUN_HDR_BYTES;
	uint32_t seq = load32(c->in + 4), count = load32(body + 8), i;
	uint64_t len = load64(body);
	const struct pub *p = find_pub(o, seq);
	char why[200] = "";

	if (count != (c->len - OXR_RUN_LOOKUP_BYTES) / 4)
		snprintf(why, sizeof(why), "the lookup names %u ranks in %llu bytes", count,
			 (unsigned long long)(c->len - OXR_RUN_LOOKUP_BYTES));
	else if (!p && o->npubs)
		snprintf(why, sizeof(why), "publish #%u is unknown: no publish round of that "
			 "number has completed (the last was #%u)", seq, o->pubs[o->npubs - 1].seq);
	else if (!p)
		snprintf(why, sizeof(why), "publish #%u is unknown: no publish round has "
			 "completed", seq);
	else
		check_ranks(o, p, body, count, len, why, sizeof(why));
	if (!*why && len && !(c->ans = malloc(count * len)))
		snprintf(why, sizeof(why), "oxr-run is out of memory for %u blobs of %llu bytes",
			 count, (unsigned long long)len);
	c->got = 0;
	if (*why) {
		set_state(o, c, C_HDR);
		if (send_now(c->fd, 1, seq, why))
			drop(o, c);
		return;
	}
	for (i = 0; i < count; i++)
		memcpy(c->ans + i * len, p->buf + (uint64_t)load32(body + OXR_RUN_LOOKUP_BYTES + 4 * i)
			   * len, len);
	put_hdr(c->out, 0, seq, count * len);
	c->body = c->ans;
	c->body_len = count * len;
	c->sent = 0;
	o->answering++;
	set_state(o, c, C_ANSWER);
	on_writable(o, c);
}

/* Where c's next bytes go and how many it may take, or 0: c reads nothing now. */
static size_t read_into(struct oxrun *o, struct conn *c, uint8_t **dst)
{
	static uint8_t scratch[65536];
	size_t want;

	switch (c->state) {
	case C_HELLO:
		*dst = c->in + c->got;
		return OXR_RUN_HELLO_BYTES - c->got;
	case C_HDR:
		*dst = c->in + c->got;
		return OXR_RUN_HDR_BYTES - c->got;
	case C_ASK:
		*dst = c->in + OXR_RUN_HDR_BYTES + c->got;
		return c->len - c->got;
	case C_BODY:
		want = (size_t)(c->len - c->got);
		*dst = o->buf + (uint64_t)c->rank * o->len + c->got;
		if (c->discard) {
			*dst = scratch;
			want = want < sizeof(scratch) ? want : sizeof(scratch);
		}
		return want;
	default:
		return 0;
	}
}

/* c->got grew: acts on what is whole. */
static void on_bytes(struct oxrun *o, struct conn *c)
{
	if (c->state == C_BODY && c->got == c->len) {
		set_state(o, c, C_READY);
		o->ready++;
	} else if (c->state == C_HELLO && c->got == OXR_RUN_HELLO_BYTES) {
		on_hello(o, c);
	} else if (c->state == C_HDR && c->got == OXR_RUN_HDR_BYTES) {
		on_header(o, c);
	} else if (c->state == C_ASK && c->got == c->len) {
		on_lookup(o, c);
	}
}

static void on_readable(struct oxrun *o, struct conn *c)
{
	while (c->fd >= 0 && !o->broken) {
		uint8_t *dst = NULL;
		size_t want = read_into(o, c, &dst);
		ssize_t k;

		if (!want)
			return;
		k = recv(c->fd, dst, want, MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			drop(o, c);
			return;
		}
		c->got += (size_t)k;
		on_bytes(o, c);
	}
}

/* Sends what the socket takes of c's reply; when it is all out, c reads its
 * next request. */
static void on_writable(struct oxrun *o, struct conn *c)
{
	uint64_t total = OXR_RUN_HDR_BYTES + c->body_len;

	if (c->fd < 0 || (c->state != C_REPLY && c->state != C_ANSWER))
		return;
	while (c->sent < total) {
		struct iovec iov[2] = { { (void *)c->body, c->body_len },
					{ (void *)c->body, c->body_len } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 1 };
		ssize_t k;

		if (c->sent < OXR_RUN_HDR_BYTES) {
			iov[0] = (struct iovec){ c->out + c->sent, OXR_RUN_HDR_BYTES - c->sent };
			m.msg_iovlen = c->body_len ? 2 : 1;
		} else {
			iov[0].iov_base = (void *)(c->body + (c->sent - OXR_RUN_HDR_BYTES));
			iov[0].iov_len = total - c->sent;
		}
		k = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k < 0 && errno != EINTR) {
			drop(o, c);
			return;
		}
		if (k > 0)
			c->sent += (uint64_t)k;
	}
	c->got = 0;
	if (c->state == C_ANSWER) {
		o->answering--;
		free(c->ans);
		c->ans = NULL;
		set_state(o, c, C_HDR);
		return;
	}
	set_state(o, c, C_HDR);
	end_reply(o);
}

/*
 * A --publish oxr-run serves the other hosts' ranks until they close their
 * bootstrap (their lookups need the tables here).  A host that is powered
 * off closes nothing: its connections would keep oxr-run up until
 * --timeout.  Keepalive probes end them: after KEEP_IDLE_S quiet seconds,
 * KEEP_CNT unanswered probes KEEP_INTVL_S apart (25 s in all); a live rank's
 * kernel answers them however long its program computes.
 */
#define KEEP_IDLE_S 10
#define KEEP_INTVL_S 5
#define KEEP_CNT 3

static void keep_alive(int fd)
{
	int on = 1, idle = KEEP_IDLE_S, intvl = KEEP_INTVL_S, cnt = KEEP_CNT;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static struct conn *new_conn(struct oxrun *o, int fd, const struct sockaddr_in *sa)
{
	struct epoll_event ev = { .events = conn_events(C_HELLO) };
	char ip[INET_ADDRSTRLEN];
	struct conn *c;
	int one = 1;

	if (o->nconns == o->cap) {
		int cap = o->cap ? 2 * o->cap : 64;
		struct conn **p = realloc(o->conns, (size_t)cap * sizeof(*p));

		if (!p)
			return NULL;
		o->conns = p;
		o->cap = cap;
	}
	c = calloc(1, sizeof(*c));
	ev.data.ptr = c;
	if (!c || epoll_ctl(o->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->rank = -1;
	c->state = C_HELLO;
	c->events = ev.events;
	c->slot = o->nconns;
	inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip));
	snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, ntohs(sa->sin_port));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	keep_alive(fd);
	o->conns[o->nconns++] = c;
	return c;
}

static void accept_all(struct oxrun *o)
{
	for (;;) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(o->lfd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				fprintf(stderr, "oxr-run: accept: %s\n", strerror(errno));
			return;
		}
		if (!new_conn(o, fd, &sa)) {
			fprintf(stderr, "oxr-run: cannot serve a connection: %s\n", strerror(errno));
			close(fd);
		}
	}
}

/* The end of a turn: epoll follows the states that changed, and what
 * drop() closed is freed (its slot in conns[] taken by the last). */
static void flush(struct oxrun *o)
{
	while (o->dirty) {
		struct conn *c = o->dirty;
		struct epoll_event ev = { .events = conn_events(c->state), .data.ptr = c };

		o->dirty = c->next_dirty;
		c->queued = 0;
		if (c->fd >= 0 && ev.events != c->events) {
			if (epoll_ctl(o->epfd, EPOLL_CTL_MOD, c->fd, &ev))
				drop(o, c);
			else
				c->events = ev.events;
		}
	}
	while (o->dead) {
		struct conn *c = o->dead;

		o->dead = c->next_dead;
		o->conns[c->slot] = o->conns[--o->nconns];
		o->conns[c->slot]->slot = c->slot;
		free(c->ans);
		free(c);
	}
}

static void on_conn(struct oxrun *o, struct conn *c, uint32_t ev)
{
	if (c->fd < 0)
		return;
	if ((c->events & EPOLLOUT) && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		on_writable(o, c);
	else if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
		if (c->events & EPOLLIN)
			on_readable(o, c);
		else
			drop(o, c);
	}
	progress(o);
}

/* ---- the ranks ---- */

static void signal_all(struct oxrun *o, int sig)
{
	int r;

	for (r = 0; r < o->n; r++)
		if (o->pids[r] > 0)
			kill(o->pids[r], sig);
}

/* Sends a stop's SIGTERM and SIGKILL when due; returns when the next one
 * is due, or -1. */
static int64_t stop_clock(struct oxrun *o, int64_t now)
{
	if (!o->stopping || o->killed)
		return -1;
	if (!o->termed && now >= o->term_at) {
		signal_all(o, SIGTERM);
		o->termed = 1;
	}
	if (o->termed && now >= o->kill_at) {
		signal_all(o, SIGKILL);
		o->killed = 1;
		return -1;
	}
	return o->termed ? o->kill_at : o->term_at;
}

/* Ends the run with code: the rendezvous fails with why, the ranks get
 * SIGTERM after grace_ms, and SIGKILL if they are still there after that. */
static void stop(struct oxrun *o, int code, const char *why, int grace_ms)
{
	int64_t now = now_ms();

	if (o->stopping)
		return;
	o->stopping = 1;
	o->code = code;
	fail(o, why);
	o->term_at = now + grace_ms;
	o->kill_at = o->term_at + KILL_GRACE_MS;
	stop_clock(o, now);
}

static void reap(struct oxrun *o)
{
	int stopping = o->stopping, code = 0, st, r;
	char first[128] = "";
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		char msg[128];

		for (r = 0; r < o->n && o->pids[r] != pid; r++)
			;
		if (r == o->n)
			continue;
		o->pids[r] = 0;
		o->running--;
		mark_gone(o, r);
		/* Once the run is being stopped, exits are its echo, not news. */
		if (stopping || (WIFEXITED(st) && !WEXITSTATUS(st)))
			continue;
		if (WIFEXITED(st))
			snprintf(msg, sizeof(msg), "rank %d (pid %d) exited with status %d", r,
				 (int)pid, WEXITSTATUS(st));
		else
			snprintf(msg, sizeof(msg), "rank %d (pid %d) killed by signal %d (%s)", r,
				 (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
		fprintf(stderr, "oxr-run: %s\n", msg);
		if (!code) {
			code = WIFEXITED(st) ? 1 : 128 + WTERMSIG(st);
			memcpy(first, msg, sizeof(first));
		}
	}
	/* The others learn of it from the rendezvous or from their broken links
	 * and are on their way out: a moment for them to say what they saw. */
	if (code && o->survive && !o->failed_code)
		o->failed_code = code;
	else if (code && !o->survive)
		stop(o, code, first, TOLD_GRACE_MS);
	progress(o);
}

static void on_signals(struct oxrun *o)
{
	struct signalfd_siginfo si;

	while (read(o->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD)
			continue;
		if (o->stopping) {
			signal_all(o, SIGKILL); /* asked twice: no more grace */
			o->killed = 1;
			continue;
		}
		fprintf(stderr, "oxr-run: got signal %d (%s); stopping the ranks\n", sig,
			strsignal(sig));
		stop(o, 128 + sig, "oxr-run was interrupted", 0);
	}
	reap(o);
}

/*
 * Starts rank r.  The token goes through a pipe that only this child
 * inherits; a second pipe, closed by a successful exec, brings back the
 * errno of a failed one, so a bad PROGRAM is said once, not N times.
 */
/* The ranks' environment: oxr-run's (OXR_RUN_ADDR, OXR_RUN_SIZE in it),
 * then OXR_RUN_RANK and OXR_RUN_TOKEN_FD, which each spawn rewrites. */
struct rank_env {
	char **envp;
	char rank[32], fd[32];
};

static int env_make(struct rank_env *e)
{
	extern char **environ;
	int i, n = 0;

	for (i = 0; environ[i]; i++)
		;
	if (!(e->envp = calloc((size_t)i + 3, sizeof(*e->envp))))
		return -1;
	for (i = 0; environ[i]; i++)
		if (strncmp(environ[i], "OXR_RUN_RANK=", 13) &&
		    strncmp(environ[i], "OXR_RUN_TOKEN_FD=", 17))
			e->envp[n++] = environ[i];
	e->envp[n++] = e->rank;
	e->envp[n] = e->fd;
	return 0;
}

/*
 * vfork, not fork: the parent sleeps until the child has exec'd, and the
 * child runs at once on the parent's core.  A fork copied oxr-run's page
 * tables, and its parent then waited for the child to be scheduled among
 * the ranks already running: 8 ms a rank at 1,024 ranks on 2 cores,
 * most of the start-up.  The child only makes system calls and writes err,
 * which lives in the parent's frame (how posix_spawn reports exec errors).
 */
static int spawn(struct oxrun *o, int r, char **argv, const sigset_t *mask,
		 const struct rlimit *nofile, struct rank_env *e)
{
	volatile int err = 0;
	int tp[2];
	char hex[2 * OXR_TOKEN_BYTES + 1];
	ssize_t k;
	pid_t pid;
	int i;

	if (pipe2(tp, O_CLOEXEC)) {
		fprintf(stderr, "oxr-run: pipe: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < OXR_TOKEN_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", o->token[i]);
	k = write(tp[1], hex, 2 * OXR_TOKEN_BYTES);
	explicit_bzero(hex, sizeof(hex));
	close(tp[1]);
	snprintf(e->rank, sizeof(e->rank), "OXR_RUN_RANK=%d", r);
	snprintf(e->fd, sizeof(e->fd), "OXR_RUN_TOKEN_FD=%d", tp[0]);
	pid = k == 2 * OXR_TOKEN_BYTES ? vfork() : -1;
	if (pid == 0) {
		fcntl(tp[0], F_SETFD, 0); /* the child's descriptor table is its own */
		sigprocmask(SIG_SETMASK, mask, NULL);
		setrlimit(RLIMIT_NOFILE, nofile);
		execvpe(argv[0], argv, e->envp);
		err = errno;
		_exit(127);
	}
	close(tp[0]);
	if (pid < 0) {
		fprintf(stderr, "oxr-run: cannot start rank %d: %s\n", r, strerror(errno));
		return 1;
	}
	o->pids[r] = pid;
	o->running++;
	if (err) {
		fprintf(stderr, "oxr-run: cannot run %s: %s\n", argv[0], strerror(err));
		return 127;
	}
	return 0;
}

/* ---- main ---- */

static int parse_num(const char *v, long max, long *out)
{
	char *end;

	errno = 0;
	*out = v && *v >= '0' && *v <= '9' ? strtol(v, &end, 10) : 0;
	return *out >= 1 && *out <= max && !errno && !*end ? 0 : -1;
}

/* Options up to PROGRAM; returns the index of PROGRAM, or -1 after a usage
 * message (-2 for --help). */
static int parse_args(int argc, char **argv, struct oxrun *o)
{
	long n = 0;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return -2;
		if (!strcmp(a, "--survive")) {
			o->survive = 1;
			continue;
		}
		if (!strcmp(a, "--ranks")) {
			char *end = NULL;

			v = argv[++i];
			o->first = v ? (int)strtol(v, &end, 10) : -1;
			o->last = end && *end == '-' ? (int)strtol(end + 1, &end, 10) : -1;
			if (!v || !isdigit((unsigned char)*v) || *end || o->first < 0 ||
			    o->last < o->first) {
				fprintf(stderr, "oxr-run: --ranks wants A-B (0 <= A <= B), not '%s'\n",
					v ? v : "");
				return -1;
			}
			continue;
		}
		if (!strcmp(a, "--publish") || !strcmp(a, "--join")) {
			if (!argv[i + 1]) {
				fprintf(stderr, "oxr-run: %s lacks its FILE\n", a);
				return -1;
			}
			*(a[2] == 'p' ? &o->publish : &o->join) = argv[++i];
			continue;
		}
		if (!strcmp(a, "--addr")) {
			if (!argv[i + 1] || inet_pton(AF_INET, argv[i + 1], &o->addr) != 1) {
				fprintf(stderr, "oxr-run: --addr wants an IPv4 address of this host, not "
					"'%s'\n", argv[i + 1] ? argv[i + 1] : "");
				return -1;
			}
			i++;
			continue;
		}
		if (!strncmp(a, "--timeout=", 10)) {
			v = a + 10;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--timeout")) {
			v = argv[++i]; /* argv[argc] is NULL */
		} else {
			fprintf(stderr, "oxr-run: unknown option %s\n", a);
			return -1;
		}
		if (!v) {
			fprintf(stderr, "oxr-run: %s lacks its value\n", a);
			return -1;
		}
		if (a[1] == 'n' && parse_num(v, OXR_RUN_MAX_SIZE, &n)) {
			fprintf(stderr, "oxr-run: -n wants a number of ranks from 1 to %d, "
				"not '%s'\n", OXR_RUN_MAX_SIZE, v);
			return -1;
		}
		if (a[1] == '-' && parse_num(v, INT_MAX / 1000, &o->timeout_s)) {
			fprintf(stderr, "oxr-run: --timeout wants whole seconds, at least 1, not "
				"'%s'\n", v);
			return -1;
		}
	}
	if (!n || i >= argc) {
		fprintf(stderr, "oxr-run: %s\n", n ? "no PROGRAM to run" : "-n N is required");
		return -1;
	}
	o->n = (int)n;
	if (o->last < 0)
		o->last = o->n - 1;
	if (o->last >= o->n) {
		fprintf(stderr, "oxr-run: --ranks %d-%d: ranks go from 0 to %d\n", o->first,
			o->last, o->n - 1);
		return -1;
	}
	if (o->publish && o->join) {
		fprintf(stderr, "oxr-run: --publish and --join exclude each other\n");
		return -1;
	}
	if ((o->first > 0 || o->last < o->n - 1) && !o->publish && !o->join) {
		fprintf(stderr, "oxr-run: --ranks %d-%d leaves ranks to other hosts: serve them "
			"with --publish FILE, or join with --join FILE\n", o->first, o->last);
		return -1;
	}
	return i;
}

/*
 * --publish: "IP:PORT\n" and the token's 64 hex digits, written under a
 * temporary name and renamed, so a --join never reads half a file.  O_EXCL:
 * a file left by an earlier run is refused, not trusted.
 */
static int publish(struct oxrun *o, const char *addr)
{
	char tmp[PATH_MAX], text[96];
	int fd, len, i, ok;

	len = snprintf(text, sizeof(text), "%s\n", addr);
	for (i = 0; i < OXR_TOKEN_BYTES; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len, "%02x", o->token[i]);
	text[len++] = '\n';
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", o->publish) >= (int)sizeof(tmp)) {
		fprintf(stderr, "oxr-run: --publish %s: name too long\n", o->publish);
		return -1;
	}
	errno = 0;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ok = fd >= 0 && write(fd, text, (size_t)len) == len;
	ok = fd >= 0 && !close(fd) && ok && !link(tmp, o->publish); /* link: never replaces */
	explicit_bzero(text, sizeof(text));
	if (!ok)
		fprintf(stderr, "oxr-run: --publish %s: cannot write it as a new file: %s\n",
			o->publish, errno ? strerror(errno) : "short write");
	if (fd >= 0)
		unlink(tmp);
	return ok ? 0 : -1;
}

/* --join: the address and the token a --publish wrote. */
static int join(struct oxrun *o)
{
	char text[128], *nl;
	ssize_t k = -1;
	int fd = open(o->join, O_RDONLY | O_CLOEXEC), i, bad;

	if (fd >= 0) {
		k = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	if (k < 0) {
		fprintf(stderr, "oxr-run: --join %s: %s\n", o->join, strerror(errno));
		return -1;
	}
	text[k] = 0;
	nl = strchr(text, '\n');
	bad = !nl || strlen(nl + 1) != 2 * OXR_TOKEN_BYTES + 1 ||
	      nl[1 + 2 * OXR_TOKEN_BYTES] != '\n';
	for (i = 0; !bad && i < OXR_TOKEN_BYTES; i++) {
		unsigned v = 0;

		bad = !isxdigit((unsigned char)nl[1 + 2 * i]) ||
		      !isxdigit((unsigned char)nl[2 + 2 * i]) ||
		      sscanf(nl + 1 + 2 * i, "%2x", &v) != 1;
		o->token[i] = (uint8_t)v;
	}
	if (!bad) {
		*nl = 0;
		/* The ranks check the address's form themselves (OXR_RUN_ADDR). */
		setenv("OXR_RUN_ADDR", text, 1);
	}
	explicit_bzero(text, sizeof(text));
	if (bad) {
		fprintf(stderr, "oxr-run: --join %s: not a file written by oxr-run --publish "
			"(IP:PORT, then 64 hex digits of the token)\n", o->join);
		return -1;
	}
	return 0;
}

/* Adds fd to the epoll set, its events telling which it is by tag. */
static int watch(struct oxrun *o, int fd, void *tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tag };

	return epoll_ctl(o->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int listen_local(struct oxrun *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char addr[48], ip[INET_ADDRSTRLEN];

	/* Port 0: the OS picks a free one, so runs never collide. */
	sa.sin_addr = o->addr;
	inet_ntop(AF_INET, &o->addr, ip, sizeof(ip));
	o->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (o->lfd < 0 || bind(o->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(o->lfd, SOMAXCONN) || getsockname(o->lfd, (struct sockaddr *)&sa, &sl)) {
		fprintf(stderr, "oxr-run: cannot listen on %s: %s\n", ip, strerror(errno));
		return -1;
	}
	if (watch(o, o->lfd, &o->lfd)) {
		fprintf(stderr, "oxr-run: epoll: %s\n", strerror(errno));
		return -1;
	}
	snprintf(addr, sizeof(addr), "%s:%u", ip, ntohs(sa.sin_port));
	setenv("OXR_RUN_ADDR", addr, 1);
	return o->publish ? publish(o, addr) : 0;
}

static int setup(struct oxrun *o, sigset_t *old, struct rlimit *nofile)
{
	struct rlimit more;
	sigset_t set;
	char v[16];
	size_t got = 0;

	o->pids = calloc((size_t)o->n, sizeof(*o->pids));
	o->by_rank = calloc((size_t)o->n, sizeof(*o->by_rank));
	o->gone = calloc((size_t)o->n, 1);
	if (!o->pids || !o->by_rank || !o->gone) {
		fprintf(stderr, "oxr-run: out of memory\n");
		return -1;
	}
	while (got < sizeof(o->token)) {
		ssize_t k = getrandom(o->token + got, sizeof(o->token) - got, 0);

		if (k < 0 && errno != EINTR) {
			fprintf(stderr, "oxr-run: getrandom: %s\n", strerror(errno));
			return -1;
		}
		got += k > 0 ? (size_t)k : 0;
	}
	/* A socket a rank and a few more; the ranks get the limit they had. */
	getrlimit(RLIMIT_NOFILE, nofile);
	more = *nofile;
	if (more.rlim_cur < (rlim_t)o->n + 64 && more.rlim_cur < more.rlim_max) {
		more.rlim_cur = more.rlim_max;
		setrlimit(RLIMIT_NOFILE, &more);
		getrlimit(RLIMIT_NOFILE, &more);
	}
	/* the rendezvous' server, else accept() fails with EMFILE half-way through
	 * a start of thousands */
	if (!o->join && more.rlim_cur < (rlim_t)o->n + 64) {
		fprintf(stderr, "oxr-run: %d ranks need %d file descriptors here (one socket a rank), "
			"the limit is %llu: raise the hard limit (ulimit -Hn, limits.conf) or use "
			"fewer ranks\n", o->n, o->n + 64, (unsigned long long)more.rlim_cur);
		return -1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, old);
	o->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	o->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (o->sfd < 0 || o->epfd < 0 || watch(o, o->sfd, &o->sfd)) {
		fprintf(stderr, "oxr-run: %s: %s\n", o->sfd < 0 ? "signalfd" : "epoll",
			strerror(errno));
		return -1;
	}
	snprintf(v, sizeof(v), "%d", o->n);
	setenv("OXR_RUN_SIZE", v, 1);
	/* An mpirun around oxr-run must not make the ranks pick PMIx. */
	setenv("OXR_BOOT", "run", 1);
	return o->join ? join(o) : listen_local(o);
}

/*
 * Ranks on other hosts (--publish) may still need the rendezvous when the
 * last rank here exits: the last round's replies, and lookups in the
 * publish tables that live here only, until they close their bootstrap.
 * A round that lost our ranks fails (progress), so none waits on one.
 */
static int serving_others(const struct oxrun *o)
{
	return !o->broken && !o->stopping && o->others > 0;
}

#define EVENTS 256        /* epoll events taken a turn */
#define SPAWN_BATCH 32    /* ranks started between two turns while starting them */

/* When the next clock (a stop's signals, --timeout, a grace)
 * is due, or -1. */
static int64_t next_wake(struct oxrun *o, int64_t now)
{
	int64_t wake = stop_clock(o, now);

	if (o->deadline && !o->stopping)
		wake = o->deadline;
	if (o->grace_at && !o->broken && (wake < 0 || o->grace_at < wake))
		wake = o->grace_at;
	return wake;
}

/* One turn: waits up to wait_ms (-1: until the next clock) for events and
 * serves them.  O(1) a connection's event; see struct oxrun for a round's. */
static void serve_once(struct oxrun *o, int wait_ms)
{
	struct epoll_event ev[EVENTS];
	int64_t now = now_ms(), wake = next_wake(o, now);
	int i, k;

	if (wait_ms < 0 && wake >= 0)
		wait_ms = wake <= now ? 0 : wake - now > INT_MAX ? INT_MAX : (int)(wake - now);
	k = epoll_wait(o->epfd, ev, EVENTS, wait_ms);
	if (k < 0 && errno != EINTR)
		stop(o, 1, "oxr-run: epoll_wait failed", 0);
	for (i = 0; i < k; i++) {
		if (ev[i].data.ptr == &o->sfd)
			on_signals(o);
		else if (ev[i].data.ptr == &o->lfd)
			accept_all(o);
		else
			on_conn(o, ev[i].data.ptr, ev[i].events);
	}
	progress(o);
	flush(o);
	now = now_ms();
	if (o->deadline && !o->stopping && now >= o->deadline) {
		fprintf(stderr, "oxr-run: --timeout %ld s ran out; stopping the %d ranks "
			"left\n", o->timeout_s, o->running);
		stop(o, 124, "the run took longer than oxr-run --timeout", 0);
		flush(o);
	}
}

/* Until the last rank here is reaped: serve, reap, and watch the clocks. */
static void serve(struct oxrun *o)
{
	while (o->running > 0 || serving_others(o))
		serve_once(o, -1);
}

/*
 * Starts ranks first..last, serving a turn without waiting after every
 * SPAWN_BATCH of them: the early ranks' hellos and rounds go on while the
 * later ones start, rather than all waiting for the last fork.
 */
static int spawn_all(struct oxrun *o, char **argv, const sigset_t *mask,
		     const struct rlimit *nofile)
{
	struct rank_env e;
	int r, code = 0;

	if (env_make(&e)) {
		fprintf(stderr, "oxr-run: out of memory for the ranks' environment\n");
		return 1;
	}
	for (r = o->first; r <= o->last && !code && !o->stopping; r++) {
		code = spawn(o, r, argv, mask, nofile, &e);
		if (!code && (r - o->first) % SPAWN_BATCH == SPAWN_BATCH - 1)
			serve_once(o, 0);
	}
	free(e.envp);
	return code;
}

static void cleanup(struct oxrun *o)
{
	int i;

	flush(o);
	for (i = 0; i < o->nconns; i++) {
		if (o->conns[i]->fd >= 0)
			close(o->conns[i]->fd);
		free(o->conns[i]);
	}
	for (i = 0; i < o->npubs; i++)
		free(o->pubs[i].buf);
	if (o->lfd >= 0)
		close(o->lfd);
	if (o->sfd >= 0)
		close(o->sfd);
	if (o->epfd >= 0)
		close(o->epfd);
	free(o->conns);
	free(o->pubs);
	free(o->buf);
	free(o->pids);
	free(o->by_rank);
	free(o->gone);
}

int main(int argc, char **argv)
{
	struct oxrun o = { .lfd = -1, .sfd = -1, .epfd = -1, .seq = 1,
			   .addr.s_addr = htonl(INADDR_LOOPBACK), .last = -1 };
	struct rlimit nofile;
	sigset_t old;
	int prog, code;

	prog = parse_args(argc, argv, &o);
	if (prog == -2) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (prog < 0) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (setup(&o, &old, &nofile)) {
		cleanup(&o);
		return 1;
	}
	if (o.timeout_s)
		o.deadline = now_ms() + (int64_t)o.timeout_s * 1000;
	code = spawn_all(&o, argv + prog, &old, &nofile);
	if (code)
		stop(&o, code, "oxr-run could not start every rank", 0);
	serve(&o);
	cleanup(&o);
	return o.stopping ? o.code : o.failed_code ? o.failed_code : o.broken;
}
