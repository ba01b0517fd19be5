/* SPDX-License-Identifier: MIT */
/*
 * mpi_barrier: bench_barrier's measurement over MPI_Barrier, to compare
 * with in the same run (bench/run_barrier.sh).
 *
 *   mpirun -np N mpi_barrier [ITERS [WARMUP]]
 *
 * Rank 0 prints the median and mean time per barrier on rank 0 (us).
 * Open MPI does not say how many messages its barrier sent.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_stats.h"

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 2000, warm = argc > 2 ? atol(argv[2]) : 200, i;
	double *t, sum = 0, t0;
	int rank, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (iters < 1)
		iters = 1;
	t = malloc((size_t)iters * sizeof(*t));
	if (!t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (i = 0; i < warm; i++)
		MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < iters; i++) {
		t0 = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		t[i] = 1e6 * (MPI_Wtime() - t0);
		sum += t[i];
	}
	if (rank == 0) {
		struct oxr_bench_row row = { .bench = "barrier", .impl = "mpi", .ranks = n,
					     .unit = "us", .warmup = (unsigned)warm };
		if (oxr_bench_emit(&row, t, (size_t)iters))
			MPI_Abort(MPI_COMM_WORLD, 1);
		qsort(t, (size_t)iters, sizeof(*t), oxr_bench_cmp_double);
		printf("mpi MPI_Barrier n=%d iters=%ld median_us=%.2f mean_us=%.2f min_us=%.2f\n", n,
		       iters, t[iters / 2], sum / (double)iters, t[0]);
	}
	free(t);
	MPI_Finalize();
	return 0;
}
