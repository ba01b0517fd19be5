/* SPDX-License-Identifier: MIT */
/*
 * mpi_bcast: bench_bcast's driver over MPI_Bcast / MPI_Reduce, to measure
 * oxr against in the same run (bench/run_bcast.sh runs both).
 *
 *   mpirun -np N mpi_bcast [--quick]
 *
 * MPI_Bcast of N MPI_BYTEs from rank 0, MPI_Reduce of one MPI_INT and one
 * MPI_DOUBLE with MPI_SUM to rank 0; MPI_Barrier and MPI_Bcast start the
 * samples.  Open
 * MPI does not say how many messages its collectives send: those columns
 * are 0.
 */
#define BB_OTHER_BACKEND 1 /* mpi, below */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_bcast.c"

static uint8_t *buf;
static size_t buf_len;

static void be_init(int *argc, char ***argv, int *rank, int *size)
{
	be_impl = "mpi";
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
}

static void be_fini(void)
{
	free(buf);
	MPI_Finalize();
}

static void be_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
static void be_bcast_time(double *t) { MPI_Bcast(t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); }

static void be_prepare(size_t n)
{
	size_t i;

	free(buf);
	buf = malloc(n ? n : 1);
	buf_len = n;
	if (!buf)
		die("out of memory");
	for (i = 0; i < n; i++)
		buf[i] = my_rank == 0 ? (uint8_t)(i * 7 + 1) : 0; /* touched: no page faults timed */
}

static void be_bcast(size_t n)
{
	MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (n && buf[n - 1] != (uint8_t)((n - 1) * 7 + 1))
		die("bcast gave wrong bytes");
}

static void be_reduce_int(void)
{
	int v = my_rank, r = 0;

	MPI_Reduce(&v, &r, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (my_rank == 0 && r != nranks * (nranks - 1) / 2)
		die("reduce gave a wrong sum");
}

static void be_reduce_double(void)
{
	double v = 0.5 * my_rank, r = 0;

	MPI_Reduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	if (my_rank == 0 && r != 0.25 * nranks * (nranks - 1))
		die("reduce gave a wrong sum");
}

static void be_gather(const double *mine, double *all, int k)
{
	MPI_Gather(mine, k, MPI_DOUBLE, all, k, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

static void be_counts(double *sent, double *received)
{
	*sent = 0;
	*received = 0;
}
