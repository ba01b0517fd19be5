/* SPDX-License-Identifier: MIT */
/*
 * mpi_pingpong: bench_pingpong's pattern over MPI, to measure oxr against in
 * the same run (bench/run_pingpong.sh runs both).
 *
 *   mpirun -np 2 mpi_pingpong [--quick] [--json FILE]
 *
 * Latency: MPI_Send / MPI_Recv of N MPI_BYTEs, there and back.  Bandwidth:
 * MPI_Isend of a window into MPI_Waitall, the receiver's MPI_Irecvs into one
 * buffer (as osu_bw does), then a 4-byte ack.  The driver, its statistics
 * and its output are bench_pingpong.c's, included below, so both programs
 * print the same table; only the calls to the transport differ.
 */
#define PP_OTHER_BACKEND 1 /* mpi, below */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_pingpong.c"

#define TAG_DATA 1
#define TAG_CTL 2

static uint8_t *sbuf, *rbuf;

#ifdef MPI_PP_PUT /* mpi_put.c: the data path by MPI_Put, the rest as here */
static void put_init(void);
static void put_fini(void);
#endif

static void be_init(int *argc, char ***argv, int *rank, int *size)
{
	size_t i;

	be_impl = "mpi";
	be_overhead = 0;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	my_rank = *rank;
	sbuf = malloc(PP_MAX_BYTES);
	rbuf = malloc(PP_MAX_BYTES);
	if (!sbuf || !rbuf)
		die("out of memory");
	for (i = 0; i < PP_MAX_BYTES; i++)
		sbuf[i] = (uint8_t)(i * 7 + 1);
	memset(rbuf, 0, PP_MAX_BYTES); /* no first-touch page faults in the timed loops */
#ifdef MPI_PP_PUT
	be_lat_name = "put";
	be_bw_name = "put_bw";
	put_init();
#endif
}

static void be_fini(void)
{
#ifdef MPI_PP_PUT
	put_fini();
#endif
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
}

/* The library's first line (up to its first comma) and the BTLs mpirun asked for. */
static void be_describe(char *buf, size_t n)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	const char *btl = getenv("OMPI_MCA_btl"), *pml = getenv("OMPI_MCA_pml");
	int len;

	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, ",\n")] = 0;
	snprintf(buf, n, "%.100s, btl %.60s, pml %.20s%s", lib, btl ? btl : "(default)",
		 pml ? pml : "(default)",
#ifdef MPI_PP_PUT
		 ", MPI_Put + flush + flag put + flush (osc as mpirun chose)"
#else
		 ""
#endif
	);
}

#ifndef MPI_PP_PUT
static void be_prepare(size_t n)
{
	memset(rbuf, 0, n);
}

static void be_send(int peer, size_t n)
{
	MPI_Send(sbuf, (int)n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
}

static void check_count(const MPI_Status *s, size_t n)
{
	int got;

	MPI_Get_count(s, MPI_BYTE, &got);
	if ((size_t)got != n)
		die("expected %zu bytes, got %d", n, got);
	if (n && (rbuf[0] != sbuf[0] || rbuf[n - 1] != sbuf[n - 1]))
		die("%zu bytes arrived with other bytes", n);
}

static void be_recv(int peer, size_t n)
{
	MPI_Status s;

	MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &s);
	check_count(&s, n);
}

static void be_stream_send(int peer, size_t n, int w)
{
	MPI_Request r[PP_WINDOW];
	int i;

	for (i = 0; i < w; i++)
		MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &r[i]);
	MPI_Waitall(w, r, MPI_STATUSES_IGNORE);
}

static void be_stream_recv(int peer, size_t n, int w)
{
	MPI_Request r[PP_WINDOW];
	MPI_Status s[PP_WINDOW];
	int i;

	for (i = 0; i < w; i++)
		MPI_Irecv(rbuf, (int)n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &r[i]);
	MPI_Waitall(w, r, s);
	check_count(&s[w - 1], n);
}
#endif

static void be_send_u32(int peer, uint32_t v)
{
	MPI_Send(&v, 4, MPI_BYTE, peer, TAG_CTL, MPI_COMM_WORLD);
}

static uint32_t be_recv_u32(int peer)
{
	uint32_t v;

	MPI_Recv(&v, 4, MPI_BYTE, peer, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return v;
}

static void be_barrier(void)
{
	MPI_Barrier(MPI_COMM_WORLD);
}
