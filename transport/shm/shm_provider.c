/* SPDX-License-Identifier: MIT */
/*
 * The shm provider: the stream of a link between two ranks of one host
 * (the handshake's host id says so) runs through shared memory, each
 * direction in a byte ring (shm_ring.c) or the receive FIFO (shm_fifo.c)
 * of its receiver, in the receiver's memfd.
 * Sending and receiving are memcpy with no system call; the socket the
 * handshake ran on stays open and quiet, and its end is how a dead peer
 * shows (at once: the kernel closes a killed process's sockets).
 *
 * Waiting: each rank of a group has one doorbell, a pipe whose read end is
 * in the group's epoll set.  A rank about to sleep raises the flag of each
 * ring it waits on (arm); the peer that moves that ring writes one byte to
 * the doorbell, and only then (shm_ring.c: one wake per sleep).  A pipe,
 * not an eventfd: the peer opens it through /proc/<pid>/fd, which the
 * kernel refuses for an eventfd.
 *
 * Puts (shm_win.c): into window memory from oxr_win_alloc a put is a store
 * into the peer's mapped window and a note in the ring header's note slots.
 *
 * Rings or the FIFO: a rank receives on up to OXR_SHM_RINGS links of a
 * group through a ring of their own (wants_ring: its collective partners
 * first), on the rest through its receive FIFO (shm_fifo_link.c); its
 * offer says which, and the peer writes there.
 *
 * Per rank and group: one doorbell (2 fds); per link it receives on by
 * ring, the ring (OXR_SHM_RING_BYTES + a 2.8 KiB header with the note
 * slots), its memfd until the peer mapped it; past OXR_SHM_RINGS links,
 * one FIFO (OXR_SHM_FIFO_BYTES + 16 KiB) and its fd; per link, the peer's
 * doorbell fd and a mapping of the peer's ring or FIFO.  Nothing is made
 * for a peer before its link opens.  Memory a rank owns, for L ranks on
 * the node and R = OXR_SHM_RINGS: min(L - 1, R) x (ring + 4 KiB) + (FIFO +
 * 16 KiB when L - 1 > R): at most 16 x 260 KiB + 276 KiB at the defaults.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_impl.h"

#define OFFER_MAGIC 0x5348584fu /* "OXHS" */
#define OFFER_VERSION 3u
/* magic, version, pid, doorbell fd, ring or FIFO fd, the FIFO slot of the
 * peer (OFFER_RING: a ring of its own), ring cap (u64), nonce */
#define OFFER_BYTES 48
#define OFFER_RING 0xffffffffu
#define EPOLL_BELL OXR_EPOLL_HOST
#define RX_BROKEN "the receive ring (a counter or an offer out of bounds)"
#define TX_BROKEN "the send ring (a counter or an offer out of bounds)"

static struct shm_group *sgr(oxr_group *g) { return g->hgroup; }
static struct shm_link *sl_of(const struct link *l) { return oxr_shm_link_of(l); }

static oxr_status_t shm_ctx_open(oxr_ctx *c, const oxr_ctx_params *p, int required, void **pctx)
{
	struct shm_ctx *x;
	uint64_t cap = p->shm_ring_bytes;

	(void)c;
	(void)required;
	if (cap & (cap - 1))
		return oxr_err(OXR_ERR_INVAL, "OXR_SHM_RING_BYTES=%llu: not a power of two (try "
			       "262144)", (unsigned long long)cap);
	if (!(x = calloc(1, sizeof(*x))))
		return oxr_err(OXR_ERR_NOMEM, "oxr_ctx_create: out of memory");
	x->ring_bytes = cap;
	x->fifo_bytes = p->shm_fifo_bytes;
	x->rings = p->shm_rings;
	x->cma_bytes = p->shm_cma_bytes;
	*pctx = x;
	return OXR_OK;
}

static void shm_ctx_close(void *pctx)
{
	oxr_shm_mems_free(pctx);
	free(pctx);
}

static void put32(uint8_t *p, uint32_t x) { oxr_store32(p, x, OXR_ORDER_LITTLE); }
static uint32_t get32(const uint8_t *p) { return oxr_load32(p, OXR_ORDER_LITTLE); }

static oxr_status_t group_get(oxr_group *g, struct shm_group **out)
{
	struct shm_group *sg = g->hgroup;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = EPOLL_BELL };

	if (sg) {
		*out = sg;
		return OXR_OK;
	}
	if (!(sg = calloc(1, sizeof(*sg))))
		return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
	sg->fifo_fd = -1;
	if (pipe2(sg->bell, O_NONBLOCK | O_CLOEXEC)) {
		free(sg);
		return oxr_err(OXR_ERR_IO, "shm: the doorbell pipe: %s", strerror(errno));
	}
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, sg->bell[0], &ev)) {
		int err = errno;
		close(sg->bell[0]);
		close(sg->bell[1]);
		free(sg);
		return oxr_err(OXR_ERR_IO, "shm: epoll_ctl: %s", strerror(err));
	}
	g->hgroup = sg;
	*out = sg;
	return OXR_OK;
}

static void shm_group_free(oxr_group *g)
{
	struct shm_group *sg = g->hgroup;

	if (!sg)
		return;
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, sg->bell[0], NULL);
	close(sg->bell[0]);
	close(sg->bell[1]);
	oxr_shm_fifo_group_free(sg);
	free(sg->links);
	free(sg);
	g->hgroup = NULL;
}

static void link_free(oxr_group *g, struct shm_link *sl)
{
	struct shm_group *sg = sgr(g);
	int i;

	for (i = 0; sg && i < sg->n; i++)
		if (sg->links[i] == sl) {
			sg->links[i] = sg->links[--sg->n];
			break;
		}
	if (sl->rx.r && sg) {
		sg->rings--;
		sg->other_rings -= sl->other_ring;
	}
	oxr_shm_fifo_link_free(g, sl);
	oxr_shm_ring_unmap(&sl->rx);
	oxr_shm_ring_unmap(&sl->tx);
	oxr_shm_atts_free(sl);
	if (sl->rx_fd >= 0)
		close(sl->rx_fd);
	if (sl->bell >= 0)
		close(sl->bell);
	free(sl);
}

/* Which links a rank receives on through a ring of their own (the rest
 * share its FIFO): up to OXR_SHM_RINGS of them, its collective partners
 * first, other peers in the order their links open, at most half. */
static int wants_ring(oxr_group *g, struct shm_group *sg, struct shm_ctx *x, int peer)
{
	if (sg->rings >= x->rings)
		return 0;
	return oxr_rank_is_partner(g->rank, peer, g->size) || sg->other_rings < x->rings / 2;
}

static oxr_status_t shm_offer(oxr_group *g, int peer, void **priv, uint8_t *offer)
{
	struct shm_ctx *x = g->ctx->hctx;
	struct shm_group *sg = NULL;
	struct shm_link *sl;
	uint8_t nonce[OXR_SHM_NONCE];
	uint32_t fifo_fd = 0;
	oxr_status_t st;

	*priv = NULL;
	if ((st = group_get(g, &sg)))
		return st;
	if (sg->n == sg->max) {
		int max = sg->max ? 2 * sg->max : 8;
		struct shm_link **nl = realloc(sg->links, (size_t)max * sizeof(*nl));
		if (!nl)
			return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
		sg->links = nl;
		sg->max = max;
	}
	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
		return oxr_err(OXR_ERR_IO, "shm: getrandom: %s", strerror(errno));
	if (!(sl = calloc(1, sizeof(*sl))))
		return oxr_err(OXR_ERR_NOMEM, "shm: out of memory");
	sl->bell = -1;
	sl->rx_fd = -1;
	sl->in_slot = sl->out_slot = -1;
	sl->peer = peer;
	sl->cma_bytes = x->cma_bytes;
	sl->cma_in = x->cma_bytes != 0;
	if (!wants_ring(g, sg, x, peer) && (st = oxr_shm_fifo_offer(g, sg, sl, &fifo_fd, nonce)))
		oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: shm link to rank %d on a ring of its "
			"own: %s", g->rank, peer, oxr_errmsg());
	if (sl->in_slot < 0) {
		if ((st = oxr_shm_ring_create(x->ring_bytes, nonce, &sl->rx_fd, &sl->rx))) {
			free(sl);
			return st;
		}
		sg->rings++;
		sl->other_ring = !oxr_rank_is_partner(g->rank, peer, g->size);
		sg->other_rings += sl->other_ring;
	}
	sg->links[sg->n++] = sl;
	put32(offer, OFFER_MAGIC);
	put32(offer + 4, OFFER_VERSION);
	put32(offer + 8, (uint32_t)getpid());
	put32(offer + 12, (uint32_t)sg->bell[1]);
	put32(offer + 16, sl->in_slot < 0 ? (uint32_t)sl->rx_fd : fifo_fd);
	put32(offer + 20, sl->in_slot < 0 ? OFFER_RING : (uint32_t)sl->in_slot);
	oxr_store64(offer + 24, x->ring_bytes, OXR_ORDER_LITTLE);
	memcpy(offer + 32, nonce, OXR_SHM_NONCE);
	*priv = sl;
	return OXR_OK;
}

/* The peer's doorbell, opened here; a FIFO or nothing.  Read and write:
 * holding a read end too, a ring at a peer that is gone fills the pipe
 * (then EAGAIN) instead of raising SIGPIPE in a program that never asked
 * for pipes. */
static oxr_status_t open_bell(pid_t pid, int fd, int *out)
{
	char path[64];
	struct stat sb;
	int f;

	snprintf(path, sizeof(path), "/proc/%ld/fd/%d", (long)pid, fd);
	if ((f = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		return oxr_err(OXR_ERR_IO, "shm: opening the peer's doorbell %s: %s", path,
			       strerror(errno));
	if (fstat(f, &sb) || !S_ISFIFO(sb.st_mode)) {
		close(f);
		return oxr_err(OXR_ERR_PROTO, "shm: the peer's doorbell %s is no pipe", path);
	}
	*out = f;
	return OXR_OK;
}

static oxr_status_t shm_connect(oxr_group *g, void *priv, const uint8_t *theirs, int acceptor,
				int sock, const char *addr, int64_t deadline_ms)
{
	struct shm_link *sl = priv;
	uint64_t cap = oxr_load64(theirs + 24, OXR_ORDER_LITTLE);
	pid_t pid = (pid_t)get32(theirs + 8);
	uint32_t slot = get32(theirs + 20);
	int fd = (int)get32(theirs + 16);
	oxr_status_t st;

	(void)acceptor;
	(void)sock;
	(void)deadline_ms;
	if (get32(theirs) != OFFER_MAGIC || get32(theirs + 4) != OFFER_VERSION || pid <= 0 ||
	    cap < 4096 || cap > (1ull << 30) || (cap & (cap - 1)))
		return oxr_err(OXR_ERR_PROTO, "shm: malformed offer from rank %d (%s)", sl->peer,
			       addr);
	st = slot == OFFER_RING ? oxr_shm_ring_attach(pid, fd, cap, theirs + 32, &sl->tx)
				: oxr_shm_fifo_connect(sl, pid, fd, slot, theirs + 32);
	if (st)
		return st;
	if ((st = open_bell(pid, (int)get32(theirs + 12), &sl->bell))) {
		oxr_shm_ring_unmap(&sl->tx);
		oxr_shm_fifo_unmap(&sl->out);
		sl->out_slot = -1;
		return st;
	}
	sl->peer_pid = pid;
	sl->live = 1;
	oxr_log(g->ctx, OXR_LOG_INFO, "rank %d: shm link to rank %d: receives through %s, sends "
		"through %s", g->rank, sl->peer, sl->in_slot < 0 ? "a ring of its own" : "its FIFO",
		sl->out_slot < 0 ? "the peer's ring" : "the peer's FIFO");
	return OXR_OK;
}

void oxr_shm_ring_bell(int bell)
{
	/* a full pipe has wake-ups pending already */
	ssize_t k = write(bell, "", 1);
	(void)k;
}

int oxr_shm_broken(oxr_group *g, struct link *l, const char *which)
{
	oxr_link_fail(g, l, OXR_ERR_PROTO, "shm link to rank %d: the peer broke %s",
		      oxr_link_peer(l), which);
	errno = EPROTO;
	return -1;
}

/* Reads the piece the peer offered by single copy; refuses it for good
 * where the kernel does not let this process read the peer's memory. */
static ssize_t big_recv(oxr_group *g, struct link *l, void *buf, size_t n)
{
	struct shm_link *sl = sl_of(l);
	ssize_t k = oxr_shm_big_read(&sl->rx, sl->peer_pid, buf, n, !sl->cma_in);

	if (k < 0 && (errno == EPERM || errno == ENOSYS || errno == EACCES)) {
		oxr_log(g->ctx, OXR_LOG_WARN, "rank %d: shm link to rank %d: single copy "
			"(process_vm_readv) not allowed here (%s: ptrace rules, a container's "
			"seccomp); large messages take two copies through the ring", g->rank,
			oxr_link_peer(l), strerror(errno));
		sl->cma_in = 0;
		k = oxr_shm_big_read(&sl->rx, sl->peer_pid, buf, n, 1);
	}
	if (k < 0 && errno == ESRCH) {
		oxr_link_fail(g, l, OXR_ERR_PEER, "shm link to rank %d: the peer is gone",
			      oxr_link_peer(l));
		errno = EPIPE;
		return -1;
	}
	if (k < 0)
		return oxr_shm_broken(g, l, RX_BROKEN);
	return k;
}

static ssize_t shm_recv(oxr_group *g, struct link *l, void *buf, size_t n, int arena)
{
	struct shm_link *sl = sl_of(l);
	int64_t avail;
	int big, broke;
	size_t want = n, before;
	ssize_t k;

	(void)arena;
	if (sl->in_slot >= 0)
		return oxr_shm_fifo_recv(g, l, sl, buf, n);
	/* the stream first, then the notes: a note pushed before the bytes
	 * seen here is seen too, and is taken before them (shm_ring.h) */
	avail = oxr_shm_ring_avail(&sl->rx);
	big = avail < 0 ? 0 : oxr_shm_big_waiting(&sl->rx);
	if (avail < 0 || big < 0)
		return oxr_shm_broken(g, l, RX_BROKEN);
	before = oxr_shm_take_notes(g, l, sl, &broke);
	if (broke)
		return -1;
	if (big) {
		k = big_recv(g, l, buf, n);
		if (k < 0)
			return -1;
	} else {
		if ((uint64_t)avail < n)
			n = (size_t)avail;
		if (before < n)
			n = before;
		k = n ? oxr_shm_ring_read(&sl->rx, buf, n) : 0;
		if (k < 0)
			return oxr_shm_broken(g, l, RX_BROKEN);
	}
	/* room came, or the offer's answer: a sleeping writer wants to know */
	if ((k > 0 || big) && oxr_shm_ring_must_wake(&sl->rx, 1))
		oxr_shm_ring_bell(sl->bell);
	if (k == 0 && want) {
		errno = EAGAIN;
		return -1;
	}
	return k;
}

static ssize_t shm_sendv(oxr_group *g, struct link *l, const struct iovec *iov, int niov)
{
	struct shm_link *sl = sl_of(l);
	size_t offered = sl->tx.big_len;
	ssize_t k;
	int n = niov;

	if (sl->out_slot >= 0)
		return oxr_shm_fifo_sendv(g, l, sl, iov, niov);
	if (offered) {
		switch (oxr_shm_big_done(&sl->tx)) {
		case 0:
			errno = EAGAIN;
			return -1;
		case 1:
			return (ssize_t)offered; /* iov[0] is the piece offered, read now */
		default:
			sl->cma_bytes = 0; /* the peer cannot read us: copy from now on */
		}
	}
	if (sl->cma_bytes) {
		for (n = 0; n < niov && iov[n].iov_len < sl->cma_bytes; n++)
			;
		if (n == 0) { /* a large piece first: offer it, write nothing else */
			oxr_shm_big_offer(&sl->tx, iov[0].iov_base, iov[0].iov_len);
			if (oxr_shm_ring_must_wake(&sl->tx, 0))
				oxr_shm_ring_bell(sl->bell);
			errno = EAGAIN;
			return -1;
		}
	}
	k = oxr_shm_ring_write(&sl->tx, iov, n);
	if (k < 0)
		return oxr_shm_broken(g, l, TX_BROKEN);
	if (k > 0 && oxr_shm_ring_must_wake(&sl->tx, 0))
		oxr_shm_ring_bell(sl->bell);
	if (k == 0) {
		errno = EAGAIN;
		return -1;
	}
	return k;
}

/* Bytes, a note or an offer to read (or a broken ring, which recv then reports). */
static int rx_ready(struct shm_link *sl)
{
	struct oxr_shm_note n;

	if (sl->in_slot >= 0)
		return oxr_shm_fifo_rx_ready(sl);
	return oxr_shm_ring_avail(&sl->rx) != 0 || oxr_shm_note_peek(&sl->rx, &n) != 0 ||
	       oxr_shm_big_waiting(&sl->rx) != 0;
}

/* The writer can go on: room in the ring, or its offer answered. */
static int tx_ready(struct shm_link *sl)
{
	if (sl->out_slot >= 0)
		return oxr_shm_fifo_can_send(sl);
	return sl->tx.big_len ? oxr_shm_big_answered(&sl->tx) : oxr_shm_ring_room(&sl->tx) != 0;
}

/* This side waits to write: bytes queued, or a put's note. */
static int tx_waits(oxr_group *g, struct shm_link *sl)
{
	return sl->note_wait || oxr_link_sending(oxr_link_at(g, sl->peer));
}

static int tx_can(struct shm_link *sl)
{
	/* through the FIFO a note takes a cell as bytes do */
	if (sl->note_wait && sl->out_slot < 0)
		return oxr_shm_note_room(&sl->tx) != 0;
	return tx_ready(sl);
}

static int shm_buffered(const struct link *l)
{
	return rx_ready(sl_of(l));
}

/* Moves each live link whose ring has bytes, or room its sender waits for. */
static oxr_status_t shm_poll(oxr_group *g, int *got)
{
	struct shm_group *sg = sgr(g);
	int i;

	*got = 0;
	oxr_shm_fifo_drain(g);
	for (i = 0; sg && i < sg->n; i++) {
		struct shm_link *sl = sg->links[i];
		struct link *l;
		int rd, wr;
		if (!sl->live)
			continue;
		l = oxr_link_at(g, sl->peer);
		if (oxr_link_priv(l) != sl || !oxr_link_up(l))
			continue;
		if (sl->rx_fd >= 0) { /* attached: the peer mapped it before it said ready */
			close(sl->rx_fd);
			sl->rx_fd = -1;
		}
		/* awake: a flag left up from a sleep would only cost the peer a wake-up */
		if (sl->rx.r &&
		    atomic_load_explicit(oxr_shm_ring_my_wait(&sl->rx, 1), memory_order_relaxed))
			atomic_store_explicit(oxr_shm_ring_my_wait(&sl->rx, 1), 0,
					      memory_order_relaxed);
		if (sl->out_slot >= 0 &&
		    atomic_load_explicit(&sl->out.slots[sl->out_slot].waits, memory_order_relaxed))
			atomic_store_explicit(&sl->out.slots[sl->out_slot].waits, 0,
					      memory_order_relaxed);
		rd = rx_ready(sl);
		wr = oxr_link_sending(l) && tx_ready(sl);
		if (rd || wr) {
			(*got)++;
			oxr_link_ready(g, l, rd, wr);
			/* the list may have changed under a failure */
			if (i >= sg->n || sg->links[i] != sl)
				break;
		}
	}
	return OXR_OK;
}

static int shm_arm(oxr_group *g)
{
	struct shm_group *sg = sgr(g);
	int i;

	if (!sg)
		return 0;
	for (i = 0; i < sg->n; i++) {
		struct shm_link *sl = sg->links[i];
		if (!sl->live)
			continue;
		if (sl->rx.r)
			atomic_store_explicit(oxr_shm_ring_my_wait(&sl->rx, 1), 1,
					      memory_order_relaxed);
		if (tx_waits(g, sl) && sl->out_slot >= 0)
			oxr_shm_fifo_writer_sleeps(&sl->out, (uint32_t)sl->out_slot);
		else if (tx_waits(g, sl))
			atomic_store_explicit(oxr_shm_ring_my_wait(&sl->tx, 0), 1,
					      memory_order_relaxed);
	}
	/* the FIFO's flag (it fences for all of them) */
	if (oxr_shm_fifo_arm(g))
		return 1;
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; i < sg->n; i++) {
		struct shm_link *sl = sg->links[i];
		if (!sl->live)
			continue;
		if (rx_ready(sl) || (tx_waits(g, sl) && tx_can(sl)))
			return 1;
	}
	return 0;
}

static void shm_event(oxr_group *g, uint32_t key)
{
	struct shm_group *sg = sgr(g);
	char buf[64];
	int got;

	(void)key;
	while (sg && read(sg->bell[0], buf, sizeof(buf)) > 0)
		;
	(void)shm_poll(g, &got);
}

/* The socket of a shm link carries nothing after the upgrade: a read there
 * is the peer's end.  What its ring holds is delivered first. */
static void shm_fd_event(oxr_group *g, struct link *l)
{
	/* its last cells (a BYE) may still be queued in the FIFO, not taken out */
	oxr_shm_fifo_drain(g);
	if (shm_buffered(l))
		oxr_link_ready(g, l, 1, 0);
	oxr_link_quiet_socket(g, l);
}

static int all_sent(void *arg)
{
	struct link *l = arg;

	return !oxr_link_up(l) || !oxr_link_sending(l);
}

/* What is queued goes out before the link ends (a BYE that found the
 * peer's FIFO full at the time): a ring always takes it at once. */
static void shm_drain(oxr_group *g, struct link *l, int timeout_ms)
{
	if (!all_sent(l))
		(void)oxr_progress_until(g, all_sent, l, timeout_ms);
}

static void shm_destroy(oxr_group *g, void *priv)
{
	link_free(g, priv);
}

static void shm_renumber(void *priv, int peer)
{
	((struct shm_link *)priv)->peer = peer;
}

static int shm_rx_shared(const struct link *l)
{
	const struct shm_link *sl = oxr_link_priv(l);

	return sl && sl->in_slot >= 0;
}

static const struct oxr_link_ops shm_link_ops = {
	.name = "shm",
	.caps = OXR_LINK_CAP_PUT,
	.recv = shm_recv,
	.sendv = shm_sendv,
	.buffered = shm_buffered,
	.fd_event = shm_fd_event,
	.drain = shm_drain,
	.destroy = shm_destroy,
	.renumber = shm_renumber,
	.rx_shared = shm_rx_shared,
	.put = oxr_shm_put,
	.put_note = oxr_shm_put_note,
};

const struct oxr_provider oxr_shm_provider = {
	.name = "shm",
	.ctx_open = shm_ctx_open,
	.ctx_close = shm_ctx_close,
	.offer_bytes = OFFER_BYTES,
	.offer = shm_offer,
	.connect = shm_connect,
	.link_ops = &shm_link_ops,
	.poll = shm_poll,
	.arm = shm_arm,
	.event = shm_event,
	.group_free = shm_group_free,
	.mem_alloc = oxr_shm_mem_alloc,
	.mem_free = oxr_shm_mem_free,
	.win_reg = oxr_shm_win_reg,
	.win_revoke = oxr_shm_win_revoke,
	.win_dereg = oxr_shm_win_dereg,
	.new_epoch = oxr_shm_new_epoch,
};
