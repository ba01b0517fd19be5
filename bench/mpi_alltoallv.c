/* SPDX-License-Identifier: MIT */
/*
 * mpi_alltoallv: bench_crystal's pattern over MPI, to measure oxr against in
 * the same run (bench/run_crystal.sh runs both).
 *
 *   mpirun -np N mpi_alltoallv [--dests LIST] [--bytes B] [--reps R] [--iters I]
 *
 * mpi-alltoallv:   MPI_Alltoallv with counts every rank already knows
 * mpi-alltoall+v:  MPI_Alltoall of the counts first, then MPI_Alltoallv: what
 *                  the crystal router does, where no receiver knows its senders
 * msgs is -1: what the library sends inside is not visible here; sent is
 * the payload.
 */
#include <mpi.h>

#include "crystal_pattern.h"

static int rank, size;

static void once(const struct cp_opts *o, int d, int with_counts, char *sbuf, char *rbuf,
		 int *sc, int *sd, int *rc, int *rd)
{
	int p, got = 0;

	if (with_counts)
		MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
	for (p = 0, rd[0] = 0; p < size; p++)
		rd[p] = p ? rd[p - 1] + rc[p - 1] : 0;
	MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
	for (p = 0; p < size; p++)
		got += rc[p] == (int)o->bytes && cp_sends_to(p, rank, d, size);
	if (got != d)
		die("rank %d: %d blocks, want %d", rank, got, d);
}

static void run(const char *impl, int d, int with_counts, const struct cp_opts *o)
{
	int *sc = calloc((size_t)size, sizeof(int)), *sd = calloc((size_t)size, sizeof(int));
	int *rc = calloc((size_t)size, sizeof(int)), *rd = calloc((size_t)size, sizeof(int));
	char *sbuf = calloc((size_t)size, o->bytes + 1), *rbuf = calloc((size_t)size, o->bytes + 1);
	double *t = malloc((size_t)o->reps * sizeof(double)), *worst = malloc((size_t)o->reps * sizeof(double));
	int p, rep, i;

	if (!sc || !sd || !rc || !rd || !sbuf || !rbuf || !t || !worst)
		die("out of memory");
	for (p = 0; p < size; p++) {
		sc[p] = cp_sends_to(rank, p, d, size) ? (int)o->bytes : 0;
		sd[p] = p ? sd[p - 1] + sc[p - 1] : 0;
		rc[p] = cp_sends_to(p, rank, d, size) ? (int)o->bytes : 0;
	}
	for (i = 0; i < 3; i++)
		once(o, d, with_counts, sbuf, rbuf, sc, sd, rc, rd);
	for (rep = 0; rep < o->reps; rep++) {
		double t0;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = cp_now_us();
		for (i = 0; i < o->iters; i++)
			once(o, d, with_counts, sbuf, rbuf, sc, sd, rc, rd);
		t[rep] = (cp_now_us() - t0) / o->iters;
	}
	MPI_Reduce(t, worst, o->reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (!rank)
		cp_report(impl, size, d, o, worst, -1, (double)d * (double)o->bytes);
	free(sc); free(sd); free(rc); free(rd); free(sbuf); free(rbuf); free(t); free(worst);
}

int main(int argc, char **argv)
{
	struct cp_opts o;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int i, len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	cp_parse(argc, argv, size, &o);
	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, ",\n")] = 0;
	if (!rank)
		printf("# %s, %d ranks\n", lib, size);
	for (i = 0; i < o.ndests; i++) {
		run("mpi-alltoallv", o.dests[i], 0, &o);
		run("mpi-alltoall+v", o.dests[i], 1, &o);
	}
	MPI_Finalize();
	return 0;
}
