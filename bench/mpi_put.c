/* SPDX-License-Identifier: MIT */
/*
 * mpi_put: bench_put's pattern over MPI-3 one-sided communication, the Open
 * MPI peer of oxr_put in the same run (oxr-bench --bench put --compare).
 *
 *   mpirun -np 2 --mca osc pt2pt mpi_put [--quick] [--json FILE] [--sizes N,...]
 *
 * MPI has no notified put, so a "message" is what an MPI user must write to
 * tell the target that data landed: MPI_Put of N bytes into the peer's
 * window, MPI_Win_flush (remote completion), MPI_Put of a sequence number
 * into a flag word after the data, MPI_Win_flush; the target polls the flag
 * under MPI_Win_sync (passive target, one MPI_Win_lock_all epoch for the
 * whole run).  oxr_put does both in one call, with the note in order behind
 * the bytes.  A stream puts a window of N-byte puts and notifies once.
 * osc pt2pt keeps the puts on the pml's tcp BTL; osc sm would turn them into
 * memcpy between processes of one node, which oxr's TCP puts are not.
 */
#define MPI_PP_PUT 1
#include "mpi_pingpong.c"

static MPI_Win win;
static uint8_t *wbase;           /* PP_MAX_BYTES of landing area, then the flag */
static uint64_t sent_seq, seen_seq; /* notes this rank sent; notes it waited for */

static void put_init(void)
{
	if (MPI_Win_allocate(PP_MAX_BYTES + 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win))
		die("MPI_Win_allocate of %d bytes failed", PP_MAX_BYTES + 8);
	memset(wbase, 0, PP_MAX_BYTES + 8);
	MPI_Barrier(MPI_COMM_WORLD); /* no put before every flag is zero */
	MPI_Win_lock_all(0, win);
}

static void put_fini(void)
{
	MPI_Win_unlock_all(win);
	MPI_Win_free(&win);
}

/* The bytes are complete at the target before the flag that says so goes. */
static void notify(int peer)
{
	sent_seq++;
	MPI_Win_flush(peer, win);
	MPI_Put(&sent_seq, 8, MPI_BYTE, peer, PP_MAX_BYTES, 8, MPI_BYTE, win);
	MPI_Win_flush(peer, win);
}

static void wait_note(void)
{
	volatile uint64_t *flag = (volatile uint64_t *)(wbase + PP_MAX_BYTES);
	int f;

	seen_seq++;
	for (;;) {
		MPI_Win_sync(win);
		if (*flag >= seen_seq)
			break;
		/* pt2pt lands puts inside MPI calls of the target: let it */
		MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE);
	}
}

static void be_prepare(size_t n) { (void)n; }

static void be_send(int peer, size_t n)
{
	if (n)
		MPI_Put(sbuf, (int)n, MPI_BYTE, peer, 0, (int)n, MPI_BYTE, win);
	notify(peer);
}

static void be_recv(int peer, size_t n)
{
	(void)peer;
	wait_note();
	if (n && (wbase[0] != sbuf[0] || wbase[n - 1] != sbuf[n - 1]))
		die("a %zu-byte put landed with other bytes", n);
}

static void be_stream_send(int peer, size_t n, int w)
{
	int i;

	for (i = 0; n && i < w; i++)
		MPI_Put(sbuf, (int)n, MPI_BYTE, peer, 0, (int)n, MPI_BYTE, win);
	notify(peer);
}

static void be_stream_recv(int peer, size_t n, int w)
{
	(void)w;
	be_recv(peer, n);
}
