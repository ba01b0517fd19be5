/* SPDX-License-Identifier: MIT */
/*
 * The shm provider beyond what every provider's suite checks on it
 * (test_link_tcp, test_revoke, test_fault, the collectives run on shm too):
 * which links it takes, a ring far smaller than the messages, a peer that
 * writes a counter out of bounds, and that no ring outlives its link.
 * Pairs of one process (common/link_pair.h): both rings of a link are
 * mapped here twice, once by their owner and once by their writer.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_pair.h"
#include "oxr/cmo.h"
#include "shm/shm_ring.h"
#include "test_util.h"

/* Lines of /proc/self/maps that map a ring, their start addresses in at[]. */
static int ring_maps(uintptr_t *at, int max)
{
	int n = maps_named("memfd:oxr-shm-ring", at, max);

	cr_assert_geq(n, 0, "/proc/self/maps");
	return n;
}

/* Descriptors of this process that are ring memfds. */
static int ring_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], to[256];
	int n = 0;

	cr_assert(d);
	while ((e = readdir(d))) {
		ssize_t k;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, to, sizeof(to) - 1);
		if (k > 0) {
			to[k] = 0;
			n += strstr(to, "memfd:oxr-shm-ring") != NULL;
		}
	}
	closedir(d);
	return n;
}

/* Entries of /dev/shm named for oxr (other programs, as an mpirun of a
 * test running beside this one, come and go there). */
static int dev_shm_oxr_entries(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strstr(e->d_name, "oxr") != NULL;
	closedir(d);
	return n;
}

/* A pair made under the environment given (NULL values unset). */
static void pair_with(struct pair *p, const char *transport, const char *shm, const char *ring)
{
	const char *vars[] = { "OXR_TRANSPORT", "OXR_SHM", "OXR_SHM_RING_BYTES" };
	const char *vals[] = { transport, shm, ring };
	int i;

	for (i = 0; i < 3; i++) {
		if (vals[i])
			setenv(vars[i], vals[i], 1);
		else
			unsetenv(vars[i]);
	}
	make_pair(p, 2, "little", "little");
	for (i = 0; i < 3; i++)
		unsetenv(vars[i]);
	cr_assert_eq(link_up(p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
}

/* Sends n bytes of a pattern from s to d's rank and checks they came whole
 * (both groups driven here: a ring smaller than the message needs both). */
static void send_checked(oxr_group *s, int to, oxr_group *d, int from, size_t n, unsigned seed)
{
	oxr_arena *ar;
	uint8_t *buf = malloc(n ? n : 1);
	oxr_req *sr, *rr;
	oxr_rmsg *m;
	int done_s = 0, done_r = 0;
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)(seed + i * 31);
	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	oxr_ox_msg msg = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_bytes(ar, OXR_CMO_DATUM, buf, n) };
	cr_assert_eq(oxr_irecv(d, from, &rr), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_isend(s, to, &msg, &sr), OXR_OK, "%s", oxr_errmsg());
	while (!done_s || !done_r) {
		oxr_group_progress(s);
		oxr_group_progress(d);
		cr_assert_geq(oxr_req_test(sr, &done_s), 0, "%s", oxr_errmsg());
		cr_assert_geq(oxr_req_test(rr, &done_r), 0, "%s", oxr_errmsg());
	}
	cr_assert_eq(oxr_req_wait(rr, 1000), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_req_wait(sr, 1000), OXR_OK, "%s", oxr_errmsg());
	m = oxr_req_take(rr);
	cr_assert_eq(m->msg.cmo->tag, OXR_CMO_DATUM);
	cr_assert_eq(m->msg.cmo->len, n);
	cr_assert(n == 0 || !memcmp(m->msg.cmo->data, buf, n), "%zu bytes came changed", n);
	oxr_rmsg_free(m);
	oxr_arena_destroy(ar);
	free(buf);
}

static const struct provider shm_pv = { .name = "shm" };

Test(shm, who_takes_the_links)
{
	static const struct {
		const char *transport, *shm, *want;
	} t[] = {
		{ NULL, NULL, "shm" },      /* auto: shared memory on this host */
		{ "shm", NULL, "shm" },
		{ NULL, "0", "tcp" },       /* OXR_SHM=0 turns it off */
		{ "tcp", NULL, "tcp" },     /* a named transport carries every link */
		{ "tcp", "1", "shm" },      /* unless OXR_SHM=1 says otherwise */
		{ "shm", "0", "tcp" },
	};
	struct pair p;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		pair_with(&p, t[i].transport, t[i].shm, NULL);
		cr_assert_str_eq(oxr_link_transport(p.a, 1), t[i].want,
				 "OXR_TRANSPORT=%s OXR_SHM=%s", t[i].transport ? t[i].transport : "",
				 t[i].shm ? t[i].shm : "");
		cr_assert_str_eq(oxr_link_transport(p.b, 0), t[i].want);
		send_checked(p.b, 0, p.a, 1, 100, (unsigned)i);
		free_pair(&p);
	}
	/* ranks that say they are on two hosts never share memory */
	make_pair_env(&p, &shm_pv, "OXR_HOST_ID", "node-a", "node-b");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(oxr_link_transport(p.a, 1), "tcp");
	cr_assert_eq(oxr_link_same_host(p.a, 1), 0);
	send_checked(p.b, 0, p.a, 1, 100, 9);
	free_pair(&p);
}

Test(shm, a_bad_ring_size_is_refused_with_the_fix)
{
	oxr_ctx *c = NULL;

	setenv("OXR_SHM_RING_BYTES", "12288", 1);
	cr_assert_eq(oxr_ctx_create(&c), OXR_ERR_INVAL);
	cr_assert(strstr(oxr_errmsg(), "not a power of two"), "%s", oxr_errmsg());
	setenv("OXR_SHM_RING_BYTES", "1000", 1);
	cr_assert_neq(oxr_ctx_create(&c), OXR_OK, "below 4096 and no multiple of it");
	unsetenv("OXR_SHM_RING_BYTES");
}

Test(shm, a_small_ring_carries_messages_far_larger_both_ways)
{
	static const size_t sizes[] = { 0, 1, 4000, 4096, 4097, 12345, 65536, 1u << 20, 3u << 20 };
	struct pair p;
	size_t i;

	pair_with(&p, "shm", NULL, "4096");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		send_checked(p.b, 0, p.a, 1, sizes[i], (unsigned)i);
		send_checked(p.a, 1, p.b, 0, sizes[i], (unsigned)i + 100);
	}
	free_pair(&p);
}

/* Pieces of 64 KiB and more go by single copy (the receiver reads the
 * sender's memory); a receiver that refuses it (here OXR_SHM_CMA_BYTES=0 on
 * its side, as where the kernel forbids process_vm_readv) gets them through
 * the ring, and the sender copies from then on. */
Test(shm, single_copy_and_its_refusal_deliver_the_same_bytes)
{
	static const char *const cma[][2] = { { "65536", "65536" }, { "0", "65536" },
					      { "65536", "0" }, { "4096", "4096" } };
	static const size_t sizes[] = { 65535, 65536, 65537, 1u << 20, 5u << 20, 100 };
	struct pair p;
	size_t i, j;

	for (i = 0; i < sizeof(cma) / sizeof(cma[0]); i++) {
		make_pair_env(&p, &shm_pv, "OXR_SHM_CMA_BYTES", cma[i][0], cma[i][1]);
		cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			send_checked(p.b, 0, p.a, 1, sizes[j], (unsigned)(i * 10 + j));
			send_checked(p.a, 1, p.b, 0, sizes[j], (unsigned)(i * 10 + j + 5));
		}
		free_pair(&p);
	}
}

Test(shm, a_counter_out_of_bounds_fails_the_link_and_nothing_else)
{
	struct pair p;
	uintptr_t at[8];
	oxr_rmsg *m;
	oxr_status_t st;
	int n, i;

	pair_with(&p, "shm", NULL, NULL);
	send_checked(p.b, 0, p.a, 1, 10, 1);
	n = ring_maps(at, 8);
	cr_assert_eq(n, 4, "two rings, each mapped by its owner and its writer: %d maps", n);
	/* what a broken or hostile writer could store: a tail past the ring */
	for (i = 0; i < n; i++)
		atomic_store((_Atomic uint64_t *)(at[i] + offsetof(struct oxr_shm_ring, tail)),
			     UINT64_C(1) << 40);
	st = oxr_recv(p.a, 1, 2000, &m);
	cr_assert(st != OXR_OK && st != OXR_ERR_TIMEOUT, "%d %s", st, oxr_errmsg());
	cr_assert(strstr(oxr_errmsg(), "broke the receive ring"), "%s", oxr_errmsg());
	cr_assert(!oxr_link_is_open(p.a, 1));
	free_pair(&p);
	cr_assert_eq(ring_maps(at, 8), 0, "the broken link's rings are unmapped");
}

Test(shm, no_ring_outlives_its_link)
{
	struct pair p;
	uintptr_t at[8];
	int shm0 = dev_shm_oxr_entries();

	pair_with(&p, "shm", NULL, NULL);
	cr_assert_eq(ring_maps(at, 8), 4);
	send_checked(p.b, 0, p.a, 1, 1000, 2);
	send_checked(p.a, 1, p.b, 0, 1000, 3);
	/* once both sides moved traffic each knows the peer mapped its ring */
	cr_assert_eq(ring_fds(), 0, "the memfds are closed once the peer mapped them");
	free_pair(&p);
	cr_assert_eq(ring_maps(at, 8), 0, "unmapped when the groups go");
	cr_assert_eq(ring_fds(), 0);
	cr_assert_eq(dev_shm_oxr_entries(), shm0, "nothing left in /dev/shm (memfds have no name)");
}

/* Mappings of window memfds (oxr_win_alloc's on a shm context). */
static int win_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:oxr-win-") != NULL;
	fclose(f);
	return n;
}

/* Window memory from oxr_win_alloc on both ranks of a shm pair: window 5. */
static void alloc_windows(struct pair *p, struct win_arg *wa, struct win_arg *wb, size_t len)
{
	void *ma = NULL, *mb = NULL;

	cr_assert_eq(oxr_win_alloc(p->a, len, &ma), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_alloc(p->b, len, &mb), OXR_OK, "%s", oxr_errmsg());
	pair_windows(p, 5, wa, ma, len, wb, mb, len);
}

static void free_windows(struct pair *p, struct win_arg *wa, struct win_arg *wb)
{
	oxr_win_destroy(wa->w);
	oxr_win_destroy(wb->w);
	oxr_win_free(p->a, wa->base, wa->len);
	oxr_win_free(p->b, wb->base, wb->len);
}

struct drain {
	oxr_win *w;
	int want, got, out_of_order;
	char err[256];
};

/* Takes d->want notes in order (values 0, 1, ...). */
static void *drain_notes(void *arg)
{
	struct drain *d = arg;
	oxr_win_note n;

	while (d->got < d->want && oxr_win_wait(d->w, 5000, &n) == OXR_OK)
		d->out_of_order += n.value != (uint32_t)d->got++;
	snprintf(d->err, sizeof(d->err), "%s", oxr_errmsg());
	return NULL;
}

/* A put into memory from oxr_win_alloc is a store into the target's pages,
 * mapped by the origin at its first put; the notes keep their place among
 * the messages: a message sent after a put finds the put's note taken, one
 * sent before it is received before the note. */
Test(shm, puts_into_window_memory_are_stores_and_notes_keep_their_place)
{
	struct pair p;
	struct win_arg wa, wb;
	oxr_win_note n;
	int i;

	pair_with(&p, "shm", NULL, NULL);
	alloc_windows(&p, &wa, &wb, 8192);
	cr_assert_eq(win_maps(), 2, "each rank maps its own window memory");
	cr_assert_eq(oxr_put(p.b, 0, 5, 100, "hello", 5, 7), OXR_OK, "%s", oxr_errmsg());
	/* the store is there before the target runs any oxr code */
	cr_assert(!memcmp((char *)wa.base + 100, "hello", 5));
	cr_assert_eq(win_maps(), 3, "the origin mapped the target's window at its first put");
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.peer, 1);
	cr_assert_eq(n.value, 7);
	cr_assert_eq(n.offset, 100);
	cr_assert_eq(n.len, 5);
	cr_assert_eq(oxr_win_landed(wa.w), 1);

	/* message, put, message: when the note is taken the message sent ahead
	 * of it is there, and the one sent after it finds the note taken */
	pair_send_int(p.b, 0, 1);
	cr_assert_eq(oxr_put(p.b, 0, 5, 200, "x", 1, 8), OXR_OK);
	pair_send_int(p.b, 0, 2);
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 8);
	{
		oxr_rmsg *m = NULL;
		cr_assert_eq(oxr_recv(p.a, 1, 0, &m), OXR_OK, "message 1 came before the note");
		cr_assert_eq(m->msg.cmo->v.i32, 1);
		oxr_rmsg_free(m);
	}
	cr_assert_eq(pair_recv_int(p.a, 1), 2);
	cr_assert_eq(oxr_put(p.b, 0, 5, 201, "y", 1, 9), OXR_OK);
	pair_send_int(p.b, 0, 3);
	cr_assert_eq(pair_recv_int(p.a, 1), 3);
	cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_OK, "the note came before message 3");
	cr_assert_eq(n.value, 9);

	/* more notes than the ring holds (64): the origin waits for room while
	 * the target takes them, in order, in a thread */
	{
		struct drain d = { .w = wa.w, .want = 300 };
		pthread_t t;
		pthread_create(&t, NULL, drain_notes, &d);
		for (i = 0; i < 300; i++) {
			uint8_t b = (uint8_t)i;
			cr_assert_eq(oxr_put(p.b, 0, 5, 1000 + (uint64_t)i, &b, 1, (uint32_t)i),
				     OXR_OK, "%s", oxr_errmsg());
		}
		pthread_join(t, NULL);
		cr_assert_eq(d.got, 300, "notes lost (%d came, %s)", d.got, d.err);
		cr_assert_eq(d.out_of_order, 0);
		for (i = 0; i < 300; i++)
			cr_assert_eq(((uint8_t *)wa.base)[1000 + i], (uint8_t)i);
	}
	free_windows(&p, &wa, &wb);
	free_pair(&p);
	cr_assert_eq(win_maps(), 0, "no window memory outlives its context");
}

/* The epoch invariant on shared memory: a store the origin makes before
 * it has seen the target's revoke lands in pages the target no longer
 * uses, never in its window, before or after the reset; the window keeps
 * what it held, and the new epoch's puts land. */
Test(shm, a_late_store_after_the_revoke_never_shows_in_the_window)
{
	struct pair p;
	struct win_arg wa, wb;
	oxr_win_note n;
	uint8_t *w;

	pair_with(&p, "shm", NULL, NULL);
	alloc_windows(&p, &wa, &wb, 8192);
	w = wa.base;
	cr_assert_eq(oxr_put(p.b, 0, 5, 100, "before", 6, 1), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_group_revoke(p.a), OXR_OK);
	/* rank 1 has not looked at its links yet: to it, epoch 0 is live */
	cr_assert(!oxr_group_revoked(p.b, NULL));
	cr_assert_eq(oxr_put(p.b, 0, 5, 200, "LATE!", 5, 2), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 5, 300, "LATE!", 5), OXR_OK, "%s", oxr_errmsg());
	cr_assert(memcmp(w + 200, "LATE!", 5) && memcmp(w + 300, "LATE!", 5),
		  "a store after the revoke landed in the window");
	cr_assert(!memcmp(w + 100, "before", 6), "the window kept what it held");
	reset_both(&p);
	cr_assert(memcmp(w + 200, "LATE!", 5) && memcmp(w + 300, "LATE!", 5),
		  "the late store shows after the reset");
	cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_ERR_TIMEOUT, "no note of the old epoch");
	cr_assert_eq(oxr_put(p.b, 0, 5, 400, "fresh", 5, 3), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 3);
	cr_assert(!memcmp(w + 400, "fresh", 5));
	cr_assert(!memcmp(w + 100, "before", 6));
	cr_assert_eq(win_maps(), 3, "the origin dropped its mapping of the old pages");
	free_windows(&p, &wa, &wb);
	free_pair(&p);
}

/* A window over memory of the caller's own takes the ring (as on tcp), and
 * a second window over the same oxr_win_alloc memory too: both still land,
 * with their notes in order. */
Test(shm, windows_over_other_memory_take_the_ring)
{
	struct pair p;
	struct win_arg wa, wb, xa, xb;
	oxr_win_note n;

	pair_with(&p, "shm", NULL, NULL);
	alloc_windows(&p, &wa, &wb, 4096);
	pair_windows(&p, 6, &xa, calloc(1, 4096), 4096, &xb, calloc(1, 4096), 4096);
	cr_assert_eq(oxr_put(p.b, 0, 6, 10, "ring", 4, 1), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_put(p.b, 0, 5, 10, "store", 5, 2), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(xa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert(!memcmp((char *)xa.base + 10, "ring", 4));
	cr_assert_eq(oxr_win_wait(wa.w, 5000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert(!memcmp((char *)wa.base + 10, "store", 5));
	cr_assert_eq(win_maps(), 3, "only the oxr_win_alloc window was mapped by the origin");
	oxr_win_destroy(xa.w);
	oxr_win_destroy(xb.w);
	free(xa.base);
	free(xb.base);
	free_windows(&p, &wa, &wb);
	free_pair(&p);
}
