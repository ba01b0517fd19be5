/* SPDX-License-Identifier: MIT */
/*
 * mpi_startup: bench_startup's measurement over MPI, to compare with in the
 * same run (bench/run_startup.sh, oxr-bench --bench startup --compare).
 *
 *   OXR_BENCH_T0_NS=$(date +%s%N) mpirun -np N [-x OXR_BENCH_T0_NS] mpi_startup
 *
 * MPI_Init, one MPI_Barrier, a ring exchange (MPI_Sendrecv of an int to
 * rank + 1 from rank - 1), then each rank measures itself as bench_startup
 * does and MPI_Gather brings the figures to rank 0, which prints the RESULT
 * line of startup_proc.h (links "-": Open MPI does not say); MPI_Finalize
 * is in the launcher's time, not in ready.
 */
#include <mpi.h>

#include "startup_proc.h"

int main(int argc, char **argv)
{
	double main_ns = su_realtime_ns(), t0 = su_t0_ns(main_ns);
	struct su_rank me, *all = NULL;
	int rank, n, got = -1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % n, 0, &got, 1, MPI_INT, (rank + n - 1) % n, 0,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (got != (rank + n - 1) % n) {
		fprintf(stderr, "mpi_startup: rank %d: the ring brought %d\n", rank, got);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	su_measure(&me, t0, main_ns, -1);
	if (!rank && !(all = malloc((size_t)n * sizeof(*all))))
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Gather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
	if (!rank) {
		su_print("mpi", "mpi", "-", all, n);
		if (su_emit("mpi", all, n))
			MPI_Abort(MPI_COMM_WORLD, 1);
		free(all);
	}
	MPI_Finalize();
	return 0;
}
