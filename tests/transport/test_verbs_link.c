/* SPDX-License-Identifier: MIT */
/*
 * Verbs links on a real RDMA device (rxe0 in the ci/rxe-guest VM): the
 * upgrade after the token proof, one-sided puts at random offsets and sizes,
 * window bounds enforced by the target's HCA, ring wrap-around and credit
 * exhaustion, a long stream checked by hash, large messages by rendezvous
 * (with and without the registration cache), old-epoch rkeys dead after a
 * reset, and the fall back to tcp.
 *
 * These run only where a device exists; ctest labels them "verbs" and the
 * host run leaves them to the guest (ci/test says how many ran where).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxr/oxr.h"
#include "link_pair.h"
#include "test_util.h"
#include "verbs/verbs_link.h"
#include "verbs/verbs_rcache.h"

TestSuite(verbs, .timeout = 600);


static void windows(struct pair *p, struct win_arg *wa, struct win_arg *wb, void *abase,
		    size_t alen)
{
	pair_windows(p, 3, wa, abase, alen, wb, calloc(1, 4096), 4096);
}

struct puts_arg {
	oxr_group *g;
	uint8_t *shadow; /* what the window must hold afterwards */
	size_t wlen;
	int n;
	oxr_status_t st;
	char err[256];
};

/* Random puts, small (inline, staging) and large (from registered caller memory). */
static void *random_puts(void *arg)
{
	struct puts_arg *x = arg;
	unsigned seed = 12345;
	uint8_t *src = malloc(x->wlen);
	int i;

	for (i = 0; i < x->n && x->st == OXR_OK; i++) {
		size_t len = (size_t)rand_r(&seed) % (i % 10 == 0 ? x->wlen : 300);
		size_t off = (size_t)rand_r(&seed) % (x->wlen - len + 1), j;
		for (j = 0; j < len; j++)
			src[j] = (uint8_t)rand_r(&seed);
		x->st = oxr_put(x->g, 0, 3, off, src, len, (uint32_t)i);
		memcpy(x->shadow + off, src, len);
		memset(src, 0xee, len); /* the put must not need src after it returned */
	}
	if (x->st)
		snprintf(x->err, sizeof(x->err), "%s", oxr_errmsg());
	free(src);
	return NULL;
}

static void random_puts_test(int near_hca);

Test(verbs, puts_at_random_offsets_and_sizes_land_exactly)
{
	random_puts_test(0);
}

/* every put straight into the window (OXR_VERBS_PUT_INLINE=0: no put's
 * bytes go through the target's inbox), into memory oxr_win_alloc takes
 * near the device */
Test(verbs, puts_all_by_rdma_write_land_exactly)
{
	setenv("OXR_VERBS_PUT_INLINE", "0", 1);
	random_puts_test(1);
	unsetenv("OXR_VERBS_PUT_INLINE");
}

static void random_puts_test(int near_hca)
{
	struct pair p;
	struct win_arg wa, wb;
	size_t wlen = 1u << 20;
	struct puts_arg x = { 0 };
	oxr_win_note n;
	pthread_t t;
	int i;

	void *abase = NULL;

	verbs_pair(&p);
	if (near_hca) {
		cr_assert_eq(oxr_win_alloc(p.a, wlen, &abase), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq((uintptr_t)abase % 4096, 0, "window memory is page-aligned");
	} else {
		abase = calloc(1, wlen);
	}
	windows(&p, &wa, &wb, abase, wlen);
	x = (struct puts_arg){ .g = p.b, .shadow = calloc(1, wlen), .wlen = wlen, .n = 400 };
	pthread_create(&t, NULL, random_puts, &x);
	for (i = 0; i < x.n; i++) {
		cr_assert_eq(oxr_win_wait(wa.w, 30000, &n), OXR_OK, "put %d: %s", i, oxr_errmsg());
		cr_assert_eq(n.value, (uint32_t)i, "notes arrive in put order");
		cr_assert_eq(n.peer, 1);
	}
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_OK, "%s", x.err);
	cr_assert(!memcmp(wa.base, x.shadow, wlen), "the window holds exactly what was put");
	cr_assert_eq(oxr_win_landed(wa.w), (uint64_t)x.n);
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	if (near_hca)
		oxr_win_free(p.a, wa.base, wlen);
	else
		free(wa.base);
	free(wb.base);
	free(x.shadow);
	free_pair(&p);
}

struct two_puts {
	oxr_group *g;
	int nonotify; /* the second put is oxr_put_nonotify's */
	uint8_t small[16], big[1024];
	int done;
	oxr_status_t st;
	char err[256];
};

/* 16 bytes through the target's inbox, then 1024 by RDMA WRITE over them */
static void *inbox_then_direct(void *arg)
{
	struct two_puts *x = arg;

	x->st = oxr_put(x->g, 0, 3, 0, x->small, sizeof(x->small), 1);
	if (x->st == OXR_OK)
		x->st = x->nonotify ? oxr_put_nonotify(x->g, 0, 3, 0, x->big, sizeof(x->big))
				 : oxr_put(x->g, 0, 3, 0, x->big, sizeof(x->big), 2);
	if (x->st)
		snprintf(x->err, sizeof(x->err), "%s", oxr_errmsg());
	__atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A small put's bytes are copied in from the inbox when the target takes
 * its record, a direct put lands when it arrives: with the target not
 * reading, the direct put behind the small one would land first and be
 * overwritten.  The inbox fence keeps them in order: the window ends with
 * the second put's bytes.
 */
static void no_overtaking(int nonotify)
{
	struct pair p;
	struct win_arg wa, wb;
	struct two_puts x = { .nonotify = nonotify };
	oxr_win_note n;
	pthread_t t;

	verbs_pair(&p);
	windows(&p, &wa, &wb, calloc(1, 4096), 4096);
	x.g = p.b;
	memset(x.small, 0xaa, sizeof(x.small));
	memset(x.big, 0x55, sizeof(x.big));
	pthread_create(&t, NULL, inbox_then_direct, &x);
	usleep(300000); /* the target reads nothing meanwhile */
	cr_assert_eq(oxr_win_wait(wa.w, 30000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 1);
	if (!nonotify) {
		cr_assert_eq(oxr_win_wait(wa.w, 30000, &n), OXR_OK, "%s", oxr_errmsg());
		cr_assert_eq(n.value, 2);
	}
	while (!__atomic_load_n(&x.done, __ATOMIC_ACQUIRE)) /* the fence needs our reading */
		cr_assert_eq(oxr_group_progress(p.a), OXR_OK, "%s", oxr_errmsg());
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_OK, "%s", x.err);
	cr_assert(!memcmp(wa.base, x.big, sizeof(x.big)), "the later put's bytes are there "
		  "(first byte 0x%02x)", ((uint8_t *)wa.base)[0]);
	cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_ERR_TIMEOUT, "no note more than the puts'");
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(wa.base);
	free(wb.base);
	free_pair(&p);
}

Test(verbs, a_direct_put_never_overtakes_an_earlier_inbox_put)
{
	no_overtaking(0);
}

Test(verbs, a_nonotify_put_never_overtakes_an_earlier_inbox_put)
{
	no_overtaking(1);
}

/* Every put record rank 0 took from rank 1, as rank 0 counts them. */
static uint64_t refused_after(struct pair *p, uint64_t before)
{
	int i;

	for (i = 0; i < 20000 && oxr_group_puts_refused(p->a) == before; i++) {
		cr_assert_eq(oxr_group_progress(p->a), OXR_OK, "%s", oxr_errmsg());
		usleep(100);
	}
	return oxr_group_puts_refused(p->a);
}

/*
 * A put record the origin's own checks would never send (a lying peer):
 * past the window's end, an offset that wraps around, a window that does
 * not exist.  (A record has no epoch to lie about: it is the QP's, and each
 * epoch has its own; the note says the QP's even when the origin was given
 * another.)  The target
 * refuses each before a byte lands (counted), the link and the window QP
 * go on, and an honest put still lands with its note.
 */
Test(verbs, a_put_record_the_origin_did_not_check_is_refused_by_the_target)
{
	struct pair p;
	struct win_arg wa, wb;
	uint8_t *mem = calloc(1, 2 * 4096), zero[4096] = { 0 }, junk[64];
	struct oxr_put_note bad;
	struct link *l;
	oxr_win_note n;
	uint64_t addr, before;
	uint32_t rkey, e;

	verbs_pair(&p);
	windows(&p, &wa, &wb, mem, 4096);
	memset(junk, 0x5a, sizeof(junk));
	l = oxr_link_at(p.b, 0);
	cr_assert_eq(oxr_put(p.b, 0, 3, 0, junk, 8, 1), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa.w, 10000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert(oxr_win_remote(p.b, 0, 3, &addr, &rkey));
	memset(mem, 0, 4096);
	e = oxr_group_epoch(p.b);
	before = oxr_group_puts_refused(p.a);
	bad = (struct oxr_put_note){ .id = 3, .epoch = e, .value = 2, .offset = 4096 - 8 };
	cr_assert_eq(oxr_vlink_put_note(p.b, l, addr, rkey, junk, 16, &bad), OXR_OK);
	cr_assert_eq(before = refused_after(&p, before), 1, "past the end: refused");
	bad = (struct oxr_put_note){ .id = 3, .epoch = e, .value = 3, .offset = UINT64_MAX - 4 };
	cr_assert_eq(oxr_vlink_put_note(p.b, l, addr, rkey, junk, 16, &bad), OXR_OK);
	cr_assert_eq(before = refused_after(&p, before), 2, "an offset that wraps: refused");
	bad = (struct oxr_put_note){ .id = 99, .epoch = e, .value = 4, .offset = 0 };
	cr_assert_eq(oxr_vlink_put_note(p.b, l, addr, rkey, junk, 16, &bad), OXR_OK);
	cr_assert_eq(before = refused_after(&p, before), 3, "no such window: refused");
	cr_assert(!memcmp(mem, zero, 4096), "not a byte landed");
	cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_ERR_TIMEOUT, "and no note came");
	cr_assert(oxr_link_is_open(p.a, 1) && oxr_link_is_open(p.b, 0), "the link goes on");
	cr_assert(!oxr_group_revoked(p.a, NULL) && !oxr_group_revoked(p.b, NULL));
	cr_assert_eq(oxr_put(p.b, 0, 3, 100, junk, 16, 5), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa.w, 10000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 5);
	cr_assert_eq(n.offset, 100);
	cr_assert(!memcmp(mem + 100, junk, 16), "an honest put still lands");
	bad = (struct oxr_put_note){ .id = 3, .epoch = e + 1, .value = 6, .offset = 200 };
	cr_assert_eq(oxr_vlink_put_note(p.b, l, addr, rkey, junk, 16, &bad), OXR_OK);
	cr_assert_eq(oxr_win_wait(wa.w, 10000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert(n.value == 6 && !memcmp(mem + 200, junk, 16), "the QP's epoch, not the origin's");
	cr_assert_eq(oxr_group_puts_refused(p.a), before, "and nothing more refused");
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(mem);
	free(wb.base);
	free_pair(&p);
}

/* Rank 1's side: put i, then a message; the next only once rank 0 checked. */
struct put_then_send {
	oxr_group *g;
	size_t wlen;
	int n, go;
	oxr_status_t st;
	char err[256];
};

static size_t pts_len(int i, size_t wlen)
{
	return i % 4 == 3 ? wlen : 8 + (size_t)i; /* direct, else through the inbox */
}

static void *put_then_send(void *arg)
{
	struct put_then_send *x = arg;
	uint8_t *src = malloc(x->wlen);
	oxr_arena *ar = NULL;
	int i;

	x->st = src ? oxr_arena_create(&ar) : OXR_ERR_NOMEM;
	for (i = 0; i < x->n && x->st == OXR_OK; i++) {
		size_t len = pts_len(i, x->wlen);
		oxr_ox_msg m = { .tag = OXR_OX_DATA };
		while (__atomic_load_n(&x->go, __ATOMIC_ACQUIRE) < i)
			usleep(50);
		memset(src, (uint8_t)(i + 1), len);
		x->st = oxr_put(x->g, 0, 3, 0, src, len, (uint32_t)i);
		oxr_arena_reset(ar);
		if (x->st == OXR_OK && !(m.cmo = oxr_cmo_new_int32(ar, i)))
			x->st = OXR_ERR_NOMEM;
		if (x->st == OXR_OK)
			x->st = oxr_send(x->g, 0, &m);
	}
	if (x->st)
		snprintf(x->err, sizeof(x->err), "put or send %d: %s", i - 1, oxr_errmsg());
	oxr_arena_destroy(ar);
	free(src);
	return NULL;
}

/*
 * A put returns once its write completed; what the origin sends after it
 * must not overtake it: when the target has the message, the put's bytes
 * are in its window and its note is queued.  Small puts (through the
 * inbox) and large ones (direct, each behind a fence), many times.
 */
Test(verbs, a_message_after_a_put_never_overtakes_it)
{
	struct pair p;
	struct win_arg wa, wb;
	struct put_then_send x = { .wlen = 1u << 16, .n = 120 };
	oxr_win_note n;
	pthread_t t;
	int i;

	verbs_pair(&p);
	windows(&p, &wa, &wb, calloc(1, x.wlen), x.wlen);
	x.g = p.b;
	pthread_create(&t, NULL, put_then_send, &x);
	for (i = 0; i < x.n; i++) {
		size_t len = pts_len(i, x.wlen);
		oxr_rmsg *r = NULL;
		cr_assert_eq(oxr_recv(p.a, 1, 30000, &r), OXR_OK, "message %d: %s (%s)", i,
			     oxr_errmsg(), x.err);
		cr_assert_eq(r->msg.cmo->v.i32, i);
		oxr_rmsg_free(r);
		cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_OK, "put %d: its note is there with the "
			     "message after it", i);
		cr_assert_eq(n.value, (uint32_t)i);
		cr_assert_eq(((uint8_t *)wa.base)[len - 1], (uint8_t)(i + 1), "put %d's bytes", i);
		__atomic_store_n(&x.go, i + 1, __ATOMIC_RELEASE);
	}
	pthread_join(t, NULL);
	cr_assert_eq(x.st, OXR_OK, "%s", x.err);
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(wa.base);
	free(wb.base);
	free_pair(&p);
}

/*
 * oxr_put_nonotify is one-sided: rank 0 runs no oxr code at all while rank 1
 * puts, yet the call returns and the bytes are in rank 0's window, every
 * size by RDMA (8 B inline, 4 KiB staged, 1 MiB from the caller's memory),
 * and no note is queued for them.
 */
Test(verbs, a_nonotify_put_lands_while_the_target_runs_no_oxr_code)
{
	static const size_t sizes[] = { 8, 4096, 1u << 20 };
	struct pair p;
	struct win_arg wa, wb;
	size_t wlen = 2u << 20, k;
	uint8_t *src = malloc(1u << 20);
	oxr_win_note n;

	verbs_pair(&p);
	windows(&p, &wa, &wb, calloc(1, wlen), wlen);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		fill_pattern(src, sizes[k], 13, k + 1);
		cr_assert_eq(oxr_put_nonotify(p.b, 0, 3, 4096 * k + 1, src, sizes[k]), OXR_OK, "%s",
			     oxr_errmsg());
		cr_assert(!memcmp((uint8_t *)wa.base + 4096 * k + 1, src, sizes[k]),
			  "%zu bytes are in the target's window when the put returns", sizes[k]);
	}
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 3, wlen - 4, src, 8), OXR_ERR_INVAL, "bounds");
	cr_assert_eq(oxr_win_wait(wa.w, 0, &n), OXR_ERR_TIMEOUT, "a put without a note leaves none");
	cr_assert_eq(oxr_group_progress(p.a), OXR_OK, "%s", oxr_errmsg());
	free(src);
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(wa.base);
	free(wb.base);
	free_pair(&p);
}

static void *reset_thread(void *arg)
{
	return (void *)(intptr_t)oxr_group_reset(arg, 20000);
}

/* Both ranks of the pair reset; then a put lands again, on a new window QP. */
static void reset_and_put_again(struct pair *p, struct win_arg *wa, uint64_t off)
{
	uint8_t buf[300];
	oxr_win_note n;
	pthread_t t;
	void *ra;

	pthread_create(&t, NULL, reset_thread, p->a);
	cr_assert_eq(oxr_group_reset(p->b, 20000), OXR_OK, "%s", oxr_errmsg());
	pthread_join(t, &ra);
	cr_assert_eq((oxr_status_t)(intptr_t)ra, OXR_OK, "rank 0's reset");
	memset(buf, 0x77, sizeof(buf));
	cr_assert_eq(oxr_put(p->b, 0, 3, off, buf, sizeof(buf), 9), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa->w, 10000, &n), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(n.value, 9);
	cr_assert_eq(((uint8_t *)wa->base)[off], 0x77, "the put after the reset landed");
}

/* A refused write: the writer's call fails with the cause, its group is
 * revoked (the window QP is dead until a reset), its link stays up. */
static void assert_refused(struct pair *p, oxr_status_t st)
{
	const char *why;

	cr_assert_neq(st, OXR_OK, "the write was refused");
	cr_assert(oxr_group_revoked(p->b, &why), "the writer's group is revoked");
	cr_assert(strstr(why, "refused"), "and says why: %s", why);
	cr_assert(oxr_link_is_open(p->b, 0), "the writer's link stays up");
	cr_assert(oxr_link_is_open(p->a, 1), "and so does the target's");
}

/*
 * A write past the window, built below oxr_put's own check: the target's
 * HCA refuses it (the window's memory region ends where the window does),
 * not a byte lands beside it, and a reset brings puts back.
 */
Test(verbs, a_write_outside_the_window_is_refused_by_the_target)
{
	struct pair p;
	struct win_arg wa, wb;
	uint8_t *mem = calloc(1, 3 * 4096), zero[4096] = { 0 }, junk[64];
	struct link *l;
	uint64_t addr;
	uint32_t rkey;

	verbs_pair(&p);
	/* the window is the middle page; the pages around it are guards */
	windows(&p, &wa, &wb, mem + 4096, 4096);
	memset(junk, 0x5a, sizeof(junk));
	l = oxr_link_at(p.b, 0);
	cr_assert(vl(l), "a verbs link");
	/* learn the rkey the honest way: a put in bounds works (without a note:
	 * a direct write after a note's inbox put would wait for rank 0 to take
	 * it, and rank 0 runs no oxr code meanwhile) */
	cr_assert_eq(oxr_put_nonotify(p.b, 0, 3, 0, junk, 8), OXR_OK, "%s", oxr_errmsg());
	cr_assert(oxr_win_remote(p.b, 0, 3, &addr, &rkey), "rank 1 has rank 0's address and rkey");
	cr_assert_eq(addr, (uintptr_t)(mem + 4096));
	assert_refused(&p, oxr_vlink_write(p.b, l, addr + 4096 - 8, rkey, junk, sizeof(junk)));
	cr_assert(!memcmp(mem + 8192, zero, 4096), "nothing landed past the window");
	cr_assert(!memcmp(mem + 8, zero, 4096 - 8), "nothing landed before it");
	reset_and_put_again(&p, &wa, 100);
	oxr_win_destroy(wa.w);
	oxr_win_destroy(wb.w);
	free(mem);
	free(wb.base);
	free_pair(&p);
}

/* A pair with window 3 over mem on rank 0, after one RDMA put from rank 1:
 * the address and rkey rank 1 has for it. */
static void rdma_window_pair(struct pair *p, struct win_arg *wa, struct win_arg *wb, uint8_t *mem,
			     uint64_t *addr, uint32_t *rkey)
{
	uint8_t junk[300];
	oxr_win_note n;

	verbs_pair(p);
	windows(p, wa, wb, mem, 4096);
	memset(junk, 0x5a, sizeof(junk));
	cr_assert_eq(oxr_put(p->b, 0, 3, 0, junk, sizeof(junk), 1), OXR_OK, "%s", oxr_errmsg());
	cr_assert_eq(oxr_win_wait(wa->w, 10000, &n), OXR_OK);
	cr_assert(oxr_win_remote(p->b, 0, 3, addr, rkey), "rank 1 has the address and rkey");
	memset(mem, 0, 4096);
}

static void rdma_window_pair_free(struct pair *p, struct win_arg *wa, struct win_arg *wb,
				  uint8_t *mem)
{
	oxr_win_destroy(wa->w);
	oxr_win_destroy(wb->w);
	free(mem);
	free(wb->base);
	free_pair(p);
}

/* A reset re-registers every window: a write aimed with the old epoch's
 * rkey is refused by the target's HCA and not a byte of it lands. */
Test(verbs, a_write_with_the_old_epochs_rkey_never_lands_after_a_reset)
{
	struct pair p;
	struct win_arg wa, wb;
	uint8_t *mem = calloc(1, 4096), zero[4096] = { 0 }, junk[300];
	uint64_t addr, addr2;
	uint32_t rkey, rkey2;

	rdma_window_pair(&p, &wa, &wb, mem, &addr, &rkey);
	memset(junk, 0x5a, sizeof(junk));
	reset_and_put_again(&p, &wa, 1000);
	cr_assert(oxr_win_remote(p.b, 0, 3, &addr2, &rkey2), "the epoch 1 rkey");
	cr_assert_eq(addr2, addr);
	cr_assert_neq(rkey2, rkey, "a new registration, a new rkey");
	memset(mem, 0, 4096);
	assert_refused(&p, oxr_vlink_write(p.b, oxr_link_at(p.b, 0), addr, rkey, junk, sizeof(junk)));
	cr_assert(!memcmp(mem, zero, 4096), "and nothing of it landed");
	rdma_window_pair_free(&p, &wa, &wb, mem);
}

/*
 * Between a revoke and the reset: the target revoked, the writer has not
 * heard of it yet and writes with the rkey of the epoch that is still
 * current.  The revoke deregistered the window, so the HCA refuses the
 * write, not a byte lands, both links stay up, and the reset that follows
 * works (new window QPs, new rkeys).
 */
Test(verbs, a_late_write_between_revoke_and_reset_never_lands)
{
	struct pair p;
	struct win_arg wa, wb;
	uint8_t *mem = calloc(1, 4096), zero[4096] = { 0 }, junk[1000];
	uint64_t addr;
	uint32_t rkey;

	rdma_window_pair(&p, &wa, &wb, mem, &addr, &rkey);
	memset(junk, 0x5a, sizeof(junk));
	cr_assert_eq(oxr_group_revoke(p.a), OXR_OK);
	cr_assert(!oxr_group_revoked(p.b, NULL), "the writer has not read the revoke yet");
	cr_assert_neq(oxr_vlink_write(p.b, oxr_link_at(p.b, 0), addr, rkey, junk, sizeof(junk)),
		      OXR_OK, "the late write failed");
	cr_assert(oxr_group_revoked(p.b, NULL), "the writer's group is revoked now");
	cr_assert(oxr_link_is_open(p.b, 0) && oxr_link_is_open(p.a, 1), "both links are up");
	cr_assert(!memcmp(mem, zero, 4096), "not a byte of the late write landed");
	cr_assert_neq(oxr_put(p.b, 0, 3, 0, junk, 300, 2), OXR_OK, "a put in a revoked group fails");
	reset_and_put_again(&p, &wa, 2000);
	cr_assert(!memcmp(mem, zero, 2000), "only the new epoch's put is there");
	rdma_window_pair_free(&p, &wa, &wb, mem);
}

struct stream_arg {
	oxr_group *g;
	int peer, count;
	size_t max_len;
	int fixed; /* every message max_len bytes, not a random length up to it */
	uint64_t hash;
	oxr_status_t st;
	char err[256];
};

static size_t msg_len(const struct stream_arg *x, int i)
{
	return x->fixed ? x->max_len : (size_t)(((unsigned)i * 2654435761u) % (x->max_len + 1));
}

static void *send_stream(void *arg)
{
	struct stream_arg *x = arg;
	uint8_t *buf = malloc(x->max_len + 1);
	oxr_arena *a;
	int i;

	oxr_arena_create(&a);
	for (i = 0; i < x->count && x->st == OXR_OK; i++) {
		size_t len = msg_len(x, i), j;
		oxr_ox_msg m = { .tag = OXR_OX_DATA };
		for (j = 0; j < len; j++)
			buf[j] = (uint8_t)(i + j * 31);
		oxr_arena_reset(a);
		m.cmo = oxr_cmo_new_bytes(a, OXR_CMO_DATUM, buf, len);
		x->st = oxr_send(x->g, x->peer, &m);
		x->hash = fnv1a64(x->hash, buf, len);
	}
	if (x->st)
		snprintf(x->err, sizeof(x->err), "%s", oxr_errmsg());
	oxr_arena_destroy(a);
	free(buf);
	return NULL;
}

/* Takes x->count messages from x->peer, checking order and hashing them; errors into x. */
static void take_stream(struct stream_arg *x)
{
	int i;

	for (i = 0; i < x->count && x->st == OXR_OK; i++) {
		oxr_rmsg *m;
		x->st = oxr_recv(x->g, x->peer, 60000, &m);
		if (x->st) {
			snprintf(x->err, sizeof(x->err), "message %d: %s", i, oxr_errmsg());
			break;
		}
		if (m->msg.cmo->tag != OXR_CMO_DATUM || m->msg.cmo->len != msg_len(x, i)) {
			x->st = OXR_ERR_PROTO;
			snprintf(x->err, sizeof(x->err), "message %d: %zu bytes, not %zu: out of order",
				 i, m->msg.cmo->len, msg_len(x, i));
		}
		x->hash = fnv1a64(x->hash, m->msg.cmo->data, m->msg.cmo->len);
		oxr_rmsg_free(m);
	}
}

static void recv_stream(struct stream_arg *x, int pause_first_ms)
{
	if (pause_first_ms)
		usleep((useconds_t)pause_first_ms * 1000); /* the sender runs out of credits */
	take_stream(x);
	cr_assert_eq(x->st, OXR_OK, "%s", x->err);
}

/* One rank's side of a two-way stream: all its sends, then all its receives.
 * A rank's engine only moves while its thread is in oxr_*, as in any program,
 * so each side keeps taking until it has had everything. */
struct duplex {
	struct stream_arg out, in;
};

static void *duplex(void *arg)
{
	struct duplex *d = arg;

	send_stream(&d->out);
	if (d->out.st == OXR_OK)
		take_stream(&d->in);
	return NULL;
}

/* The knobs of tiny_duplex's shared pools: no ring, 24 credits but 16
 * shared receive buffers (a paused receiver makes the sender's RNR retries
 * wait for its buffers), 4 staging slots (sends wait for the pool). */
static const char *const srq_knobs[][2] = {
	{ "OXR_VERBS_RINGS", "0" }, { "OXR_VERBS_SRQ_CREDITS", "24" },
	{ "OXR_VERBS_SRQ_BUFS", "16" }, { "OXR_VERBS_STAGE_SLOTS", "4" },
};

/* Both ways at once over 256-byte slots: 4-slot rings (srq 0) or the
 * shared pools above (srq 1); every message wraps and credits run out
 * often; rank 0 sends count messages of up to big bytes, rank 1 up to
 * small.  rndv: OXR_VERBS_RNDV for both, or NULL. */
static void tiny_duplex(const char *rndv, int srq, int count, size_t big, size_t small)
{
	struct pair p;
	struct duplex a, b;
	const uint64_t h0 = FNV1A64_INIT;
	oxr_group_counters ca, cb;
	pthread_t t;
	size_t k;

	setenv("OXR_VERBS_SLOTS", "4", 1);
	setenv("OXR_VERBS_SLOT_BYTES", "256", 1);
	if (rndv)
		setenv("OXR_VERBS_RNDV", rndv, 1);
	for (k = 0; srq && k < sizeof(srq_knobs) / sizeof(srq_knobs[0]); k++)
		setenv(srq_knobs[k][0], srq_knobs[k][1], 1);
	verbs_pair(&p);
	unsetenv("OXR_VERBS_SLOTS");
	unsetenv("OXR_VERBS_SLOT_BYTES");
	unsetenv("OXR_VERBS_RNDV");
	for (k = 0; k < sizeof(srq_knobs) / sizeof(srq_knobs[0]); k++)
		unsetenv(srq_knobs[k][0]);
	a.out = (struct stream_arg){ .g = p.a, .peer = 1, .count = count, .max_len = big, .hash = h0 };
	a.in = (struct stream_arg){ .g = p.a, .peer = 1, .count = count, .max_len = small, .hash = h0 };
	b.out = (struct stream_arg){ .g = p.b, .peer = 0, .count = count, .max_len = small, .hash = h0 };
	b.in = (struct stream_arg){ .g = p.b, .peer = 0, .count = count, .max_len = big, .hash = h0 };
	pthread_create(&t, NULL, duplex, &a);
	duplex(&b);
	pthread_join(t, NULL);
	cr_assert_eq(a.out.st, OXR_OK, "a sends: %s", a.out.err);
	cr_assert_eq(b.out.st, OXR_OK, "b sends: %s", b.out.err);
	cr_assert_eq(a.in.st, OXR_OK, "a receives: %s", a.in.err);
	cr_assert_eq(b.in.st, OXR_OK, "b receives: %s", b.in.err);
	cr_assert_eq(b.in.hash, a.out.hash, "a -> b intact");
	cr_assert_eq(a.in.hash, b.out.hash, "b -> a intact");
	cr_assert_eq(oxr_group_stats(p.a, &ca), OXR_OK);
	cr_assert_eq(oxr_group_stats(p.b, &cb), OXR_OK);
	cr_assert(ca.links_verbs == 1 && cb.links_verbs == 1, "both ends on verbs");
	cr_assert(ca.links_shared_rx == (uint32_t)srq && cb.links_shared_rx == (uint32_t)srq,
		  "both ends receive %s (shared: %u, %u)", srq ? "through the SRQ" : "into rings",
		  ca.links_shared_rx, cb.links_shared_rx);
	free_pair(&p);
}

static void tiny_ring_duplex(const char *rndv, int count, size_t big, size_t small)
{
	tiny_duplex(rndv, 0, count, big, small);
}

/* a -> b messages up to 3000 bytes (12 slots), b -> a up to 700 */
Test(verbs, tiny_ring_wraps_and_runs_out_of_credits_both_ways)
{
	tiny_ring_duplex(NULL, 3000, 3000, 700);
}

/* count messages of up to (fixed: of) max_len bytes from rank 1 to rank 0
 * of p, the receiver starting pause_ms late; both sides' hashes must agree. */
static void one_way(struct pair *p, int count, size_t max_len, int fixed, int pause_ms,
		    const char *what)
{
	struct stream_arg tx = { .g = p->b, .peer = 0, .count = count, .max_len = max_len,
				 .fixed = fixed, .hash = FNV1A64_INIT };
	struct stream_arg rx = tx;
	pthread_t t;

	rx.g = p->a;
	rx.peer = 1;
	pthread_create(&t, NULL, send_stream, &tx);
	recv_stream(&rx, pause_ms);
	pthread_join(t, NULL);
	cr_assert_eq(tx.st, OXR_OK, "%s: %s", what, tx.err);
	cr_assert_eq(rx.hash, tx.hash, "%s: intact and in order", what);
}

/* shared: the receiver has no ring (OXR_VERBS_RINGS=0), so every
 * message comes through its SRQ. */
static void stream_test(size_t total, size_t max_len, int shared)
{
	struct pair p;
	oxr_group_counters c;

	if (shared)
		setenv("OXR_VERBS_RINGS", "0", 1);
	verbs_pair(&p);
	unsetenv("OXR_VERBS_RINGS");
	cr_assert_eq(oxr_group_stats(p.a, &c), OXR_OK);
	cr_assert_eq(c.links_shared_rx, (uint32_t)shared, "the receiver %s",
		     shared ? "has no ring" : "has a ring");
	one_way(&p, (int)(2 * total / (max_len ? max_len : 1)), max_len, 0, 200,
		shared ? "the long stream through the SRQ" : "the long stream");
	free_pair(&p);
}

/* OXR_VERBS_STREAM_MIB (default 1024) of messages up to 16 MiB, checked by hash. */
Test(verbs, a_long_stream_arrives_intact)
{
	const char *s = getenv("OXR_VERBS_STREAM_MIB");
	size_t mib = s ? (size_t)atol(s) : 1024;

	stream_test(mib << 20, 16u << 20, 0);
}

/* Messages of up to 4 MiB: every payload of OXR_VERBS_RNDV (64 KiB) or more
 * goes by rendezvous (RDMA READ into the decoder's place); then 1 MiB
 * messages, where the receiver's registration cache finds the arena block
 * it read the previous one into (the arena keeps big blocks for reuse). */
Test(verbs, large_messages_go_by_rendezvous_through_the_registration_cache)
{
	struct pair p;
	uint64_t hits = 0, misses = 0;

	verbs_pair(&p);
	one_way(&p, 200, 4u << 20, 0, 100, "messages up to 4 MiB");
	oxr_rcache_stats(oxr_vctx(p.a)->rcache, &hits, &misses);
	cr_log_info("receiver's registration cache: %llu hits, %llu misses",
		    (unsigned long long)hits, (unsigned long long)misses);
	cr_assert_gt(hits + misses, 0, "the receiver read payloads by rendezvous");

	one_way(&p, 100, 1u << 20, 1, 0, "1 MiB messages");
	{
		uint64_t h0 = hits, m0 = misses;
		oxr_rcache_stats(oxr_vctx(p.a)->rcache, &hits, &misses);
		cr_log_info("100 x 1 MiB: %llu hits, %llu misses", (unsigned long long)(hits - h0),
			    (unsigned long long)(misses - m0));
		cr_assert_geq(hits - h0, 90, "1 MiB reads find their registration (%llu hits, "
			      "%llu misses)", (unsigned long long)(hits - h0),
			      (unsigned long long)(misses - m0));
	}
	free_pair(&p);
}

/* The same with the cache off (a registration per read), and with the
 * rendezvous off (every byte copied through the ring). */
Test(verbs, rendezvous_without_cache_and_copies_without_rendezvous)
{
	const char *knob[][2] = { { "OXR_VERBS_RCACHE_MB", "0" }, { "OXR_VERBS_RNDV", "0" } };
	int k;

	for (k = 0; k < 2; k++) {
		struct pair p;
		uint64_t hits = 0, misses = 0;

		setenv(knob[k][0], knob[k][1], 1);
		verbs_pair(&p);
		unsetenv(knob[k][0]);
		one_way(&p, 60, 2u << 20, 0, 50, knob[k][0]);
		oxr_rcache_stats(oxr_vctx(p.a)->rcache, &hits, &misses);
		if (k == 0)
			cr_assert(hits == 0 && misses > 0, "no cache: every read registers (%llu, %llu)",
				  (unsigned long long)hits, (unsigned long long)misses);
		else
			cr_assert(hits + misses == 0, "no rendezvous: nothing read by RDMA READ");
		free_pair(&p);
	}
}

/* A rendezvous threshold below the slot size on a 4 x 256-byte ring: pieces
 * the decoder does not read in place land in the descriptor's own slot and
 * are copied from there, while credits run out both ways. */
Test(verbs, small_rendezvous_pieces_bounce_through_the_ring)
{
	tiny_ring_duplex("300", 1000, 40000, 3000);
}

/* The same two through the shared receive queue and staging pool instead
 * of rings: no link has a ring (OXR_VERBS_RINGS=0), each may have 24
 * messages unread in 16 shared buffers, and 4 staging slots serve both
 * directions of a rank, so sends wait for the pool and for RNR retries. */
Test(verbs, tiny_shared_pools_wrap_and_run_out_both_ways)
{
	tiny_duplex(NULL, 1, 3000, 3000, 700);
}

Test(verbs, small_rendezvous_pieces_bounce_through_shared_buffers)
{
	tiny_duplex("300", 1, 1000, 40000, 3000);
}

/* A long stream (a quarter of OXR_VERBS_STREAM_MIB) through the SRQ at the
 * default pools: SENDs into shared buffers, rendezvous READs beside them. */
Test(verbs, a_long_stream_through_the_shared_receive_queue)
{
	const char *s = getenv("OXR_VERBS_STREAM_MIB");
	size_t mib = (s ? (size_t)atol(s) : 1024) / 4;

	stream_test(mib << 20, 1u << 20, 1);
}

/* Small messages go unsignaled, without a completion of their own; a rank
 * that sends a few and ends its group at once waits for a flush behind them
 * before its QP goes.  The peer gets every one, in order, then the end. */
Test(verbs, small_messages_sent_just_before_the_end_all_arrive)
{
	struct pair p;
	oxr_arena *ar;
	oxr_rmsg *m = NULL;
	int i;

	verbs_pair(&p);
	cr_assert_eq(oxr_arena_create(&ar), OXR_OK);
	for (i = 0; i < 5; i++) {
		oxr_ox_msg out = { .tag = OXR_OX_DATA, .cmo = oxr_cmo_new_int32(ar, i) };
		cr_assert_eq(oxr_send(p.b, 0, &out), OXR_OK, "%s", oxr_errmsg());
	}
	oxr_group_destroy(p.b);
	p.b = NULL;
	for (i = 0; i < 5; i++) {
		cr_assert_eq(oxr_recv(p.a, 1, 10000, &m), OXR_OK, "message %d: %s", i, oxr_errmsg());
		cr_assert_eq(m->msg.cmo->v.i32, i, "message %d out of order", i);
		oxr_rmsg_free(m);
	}
	cr_assert_neq(oxr_recv(p.a, 1, 10000, &m), OXR_OK, "after them, the end");
	oxr_arena_destroy(ar);
	free_pair(&p);
}

/* auto on one side, tcp on the other: the link works over tcp; verbs on one
 * side and tcp on the other: a clear error, not a hang. */
Test(verbs, a_peer_without_verbs_gets_tcp_or_a_clear_error)
{
	struct pair p;

	make_pair_tr(&p, 2, "auto", "tcp");
	cr_assert_eq(link_up(&p, OXR_LINK_AUTH), OXR_OK, "%s", oxr_errmsg());
	cr_assert_str_eq(oxr_ctx_transport(p.ca), "verbs");
	cr_assert_str_eq(oxr_link_transport(p.a, 1), "tcp");
	cr_assert_str_eq(oxr_link_transport(p.b, 0), "tcp");
	free_pair(&p);

	make_pair_tr(&p, 2, "verbs", "tcp");
	(void)link_up(&p, OXR_LINK_AUTH);
	cr_assert_neq(p.st_accept, OXR_OK, "the verbs-only side refuses a tcp-only peer");
	cr_assert(strstr(p.err_accept, "no verbs device"), "%s", p.err_accept);
	{
		oxr_rmsg *m = NULL;
		cr_assert_neq(oxr_recv(p.b, 0, 5000, &m), OXR_OK, "and the other side sees it go");
	}
	unsetenv("OXR_TRANSPORT");
	free_pair(&p);
}

/* GID 0 of the device (link-local, fe80::...) as "fe80::...%netdev". */
static void link_local_addr(char *out, size_t n)
{
	char path[256], gid[64], ndev[32];
	struct in6_addr a;
	FILE *f;
	size_t i, j;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/0",
		 getenv("OXR_DEVICE") ? getenv("OXR_DEVICE") : "rxe0");
	f = fopen(path, "r");
	cr_assert(f, "%s", path);
	cr_assert(fgets(gid, sizeof(gid), f));
	fclose(f);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0",
		 getenv("OXR_DEVICE") ? getenv("OXR_DEVICE") : "rxe0");
	f = fopen(path, "r");
	cr_assert(f, "%s", path);
	cr_assert(fgets(ndev, sizeof(ndev), f));
	fclose(f);
	ndev[strcspn(ndev, "\n")] = 0;
	/* sysfs writes all eight groups with leading zeros: let inet_ntop shorten it */
	for (i = j = 0; gid[i] && gid[i] != '\n'; i++)
		gid[j++] = gid[i];
	gid[j] = 0;
	cr_assert_eq(inet_pton(AF_INET6, gid, &a), 1, "%s", gid);
	inet_ntop(AF_INET6, &a, gid, sizeof(gid));
	snprintf(out, n, "%s%%%s", gid, ndev);
}

/* The second way to set a QP up: librdmacm on the device's IPv6 link-local address. */
Test(verbs, links_connect_by_rdma_cm_on_an_ip_address)
{
	struct pair p;
	struct duplex a, b;
	const uint64_t h0 = FNV1A64_INIT;
	char addr[128];
	pthread_t t;

	link_local_addr(addr, sizeof(addr));
	setenv("OXR_VERBS_CM", "rdmacm", 1);
	setenv("OXR_RDMA_ADDR", addr, 1);
	verbs_pair(&p);
	a.out = (struct stream_arg){ .g = p.a, .peer = 1, .count = 300, .max_len = 20000, .hash = h0 };
	a.in = (struct stream_arg){ .g = p.a, .peer = 1, .count = 300, .max_len = 300, .hash = h0 };
	b.out = (struct stream_arg){ .g = p.b, .peer = 0, .count = 300, .max_len = 300, .hash = h0 };
	b.in = (struct stream_arg){ .g = p.b, .peer = 0, .count = 300, .max_len = 20000, .hash = h0 };
	pthread_create(&t, NULL, duplex, &a);
	duplex(&b);
	pthread_join(t, NULL);
	cr_assert_eq(a.in.st, OXR_OK, "%s", a.in.err);
	cr_assert_eq(b.in.st, OXR_OK, "%s", b.in.err);
	cr_assert_eq(b.in.hash, a.out.hash);
	cr_assert_eq(a.in.hash, b.out.hash);
	free_pair(&p);

	/* an address whose route is not on the device: a clear error, no hang */
	setenv("OXR_RDMA_ADDR", "127.0.0.2", 1);
	setenv("OXR_TRANSPORT", "verbs", 1);
	make_pair(&p, 2, "little", "little");
	cr_assert_neq(link_up(&p, OXR_LINK_AUTH), OXR_OK);
	cr_assert(strstr(oxr_errmsg(), "rdma_cm") || strstr(p.err_accept, "rdma_cm"), "%s / %s",
		  oxr_errmsg(), p.err_accept);
	free_pair(&p);
	unsetenv("OXR_VERBS_CM");
	unsetenv("OXR_RDMA_ADDR");
}
