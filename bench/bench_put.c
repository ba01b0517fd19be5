/* SPDX-License-Identifier: MIT */
/*
 * bench_put: the ping-pong driver of bench_pingpong.c over one-sided puts.
 *
 *   oxr-run -n 2 bench_put [--quick] [--json FILE] [--sizes N,...]
 *
 * Each rank creates a 4 MiB window; a "message" of N bytes is oxr_put of N
 * bytes into the peer's window at offset 0, and its receipt is the
 * notification at the target (oxr_win_wait), so a round trip is what
 * perftest's ib_write_lat measures plus oxr's notification.  On verbs the
 * bytes go by RDMA WRITE into the registered window (up to
 * OXR_VERBS_PUT_INLINE bytes in the stream, with their note); on shm by a
 * memcpy into the peer's window (memory from oxr_win_alloc) and a note in
 * the link's ring; on TCP by the emulated put.  Control messages are ordinary OX messages.
 *
 * --polled: what ib_write_lat measures, no more.  oxr_put_nonotify (no note)
 * with a sequence byte last in the payload, and the target polls that byte
 * in its window, calling oxr_group_progress in the loop (needed on TCP, a CQ poll
 * on verbs).  The put returns once the target's HCA has the bytes, as
 * ib_write_lat waits for each write's completion.
 */
#define PP_OTHER_BACKEND 1 /* the put backend, below */
#include "bench_pingpong.c"

#include "oxr/oxr.h"
#include "oxr/transport.h"

static oxr_boot *boot;
static oxr_ctx *ctx;
static oxr_group *grp;
static oxr_win *win;
static uint8_t *winmem;
static oxr_arena *small;
static uint8_t *pattern;
static int polled;                /* --polled */
static uint8_t sent_seq, got_seq; /* --polled: the last byte of each put */

#include "bench_oxr_common.h"

static void be_init(int *argc, char ***argv, int *rank, int *size)
{
	size_t i;
	void *win_v = NULL;

	int i_arg, o_arg;

	for (i_arg = o_arg = 1; i_arg < *argc; i_arg++)
		if (strcmp((*argv)[i_arg], "--polled") == 0)
			polled = 1;
		else
			(*argv)[o_arg++] = (*argv)[i_arg];
	*argc = o_arg;
	be_impl = polled ? "oxr-put-polled" : "oxr-put";
	be_lat_name = polled ? "put_polled" : "put";
	be_bw_name = polled ? "put_polled_bw" : "put_bw";
	be_overhead = 0;
	check(oxr_boot_open(&boot), "bootstrap");
	check(oxr_ctx_create(&ctx), "context");
	check(oxr_group_boot(ctx, boot, &grp), "group");
	check(oxr_arena_create(&small), "arena");
	pattern = malloc(PP_MAX_BYTES);
	if (!pattern)
		die("out of memory");
	/* the window's memory as a user would take it for puts: near the HCA
	 * on verbs, shared with the ranks of this host on shm */
	check(oxr_win_alloc(grp, PP_MAX_BYTES, &win_v), "window memory");
	winmem = win_v;
	for (i = 0; i < PP_MAX_BYTES; i++)
		pattern[i] = (uint8_t)(i * 7 + 1);
	check(oxr_win_create(grp, 1, winmem, PP_MAX_BYTES, -1, &win), "window");
	*rank = oxr_group_rank(grp);
	*size = oxr_group_size(grp);
}

static void be_fini(void)
{
	oxr_win_destroy(win);
	oxr_arena_destroy(small);
	free(pattern);
	oxr_win_free(grp, winmem, PP_MAX_BYTES);
	oxr_group_destroy(grp);
	oxr_ctx_destroy(ctx);
	oxr_boot_close(boot);
}

static void be_describe(char *buf, size_t n)
{
	const char *spin = getenv("OXR_SPIN_US");

	snprintf(buf, n, "%s into a window, transport %s, %d ranks from %s, OXR_SPIN_US=%s",
		 polled ? "oxr_put_nonotify, target polling its memory," : "oxr_put",
		 oxr_ctx_transport(ctx), oxr_group_size(grp), oxr_boot_name(boot),
		 spin ? spin : "50 (default)");
}

static void be_prepare(size_t n) { (void)n; }

/* --polled: the next sequence byte, never 0 (the window starts zeroed) */
static uint8_t next_seq(uint8_t s) { return s == 255 ? 1 : (uint8_t)(s + 1); }

static void be_send(int peer, size_t n)
{
	if (!polled) {
		check(oxr_put(grp, peer, 1, 0, pattern, n, (uint32_t)n), "put");
		return;
	}
	if (!n)
		die("--polled needs puts of at least 1 byte");
	sent_seq = next_seq(sent_seq);
	pattern[n - 1] = sent_seq;
	check(oxr_put_nonotify(grp, peer, 1, 0, pattern, n), "put without a note");
}

static void be_recv(int peer, size_t n)
{
	oxr_win_note note;

	if (polled) {
		volatile uint8_t *last = winmem + n - 1;

		got_seq = next_seq(got_seq);
		while (*last != got_seq)
			check(oxr_group_progress(grp), "progress");
		if (winmem[0] != pattern[0])
			die("a %zu-byte put landed with other bytes", n);
		return;
	}
	check(oxr_win_wait(win, -1, &note), "window wait");
	if (note.peer != peer || note.len != n || note.value != (uint32_t)n)
		die("expected a %zu-byte put from rank %d, got %zu bytes from rank %d", n, peer,
		    note.len, note.peer);
	if (n && (winmem[0] != pattern[0] || winmem[n - 1] != pattern[n - 1]))
		die("a %zu-byte put landed with other bytes", n);
}

static void be_stream_send(int peer, size_t n, int w)
{
	int i;

	for (i = 0; i < w; i++)
		be_send(peer, n);
}

static void be_stream_recv(int peer, size_t n, int w)
{
	int i;

	if (polled) { /* puts land in order: the last one's byte says all are in */
		for (i = 0; i < w - 1; i++)
			got_seq = next_seq(got_seq);
		be_recv(peer, n);
		return;
	}
	for (i = 0; i < w; i++)
		be_recv(peer, n);
}
