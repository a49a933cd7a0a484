/* STEPS steps of an MPI job: each rank computes, the last rank SLOW_MS longer (a planted
 * straggler), then an MPI_Allreduce of N doubles, a ring exchange (MPI_Sendrecv of N
 * floats to the next rank) and a prof_step() mark; an MPI_Bcast, an MPI_Barrier, and an
 * in-place MPI_Allgather, MPI_Scatter and MPI_Gather with the ignored arguments NULL at
 * the start. usage: mpi_steps STEPS N SLOW_MS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "prof.h"
#pragma weak prof_step /* runs unprofiled too */

static void busy_ms(long ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int steps = argc > 1 ? atoi(argv[1]) : 5, n = argc > 2 ? atoi(argv[2]) : 1000;
	long slow = argc > 3 ? atol(argv[3]) : 100;
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	double *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
	float *out = calloc((size_t)n, sizeof *out), *in = calloc((size_t)n, sizeof *in);
	int seed = rank == 0 ? 42 : 0;
	MPI_Bcast(&seed, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	/* arguments MPI ignores, as programs pass them: MPI_IN_PLACE, MPI_DATATYPE_NULL */
	int *all = calloc((size_t)size, sizeof *all), piece = 0;
	all[rank] = rank;
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD);
	if (rank == 0)
		MPI_Scatter(all, 1, MPI_INT, &piece, 1, MPI_INT, 0, MPI_COMM_WORLD);
	else
		MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, &piece, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0)
		MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
	else
		MPI_Gather(&piece, 1, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
	free(all);
	if (prof_step)
		prof_step();
	for (int s = 0; s < steps; s++) {
		busy_ms(10 + (rank == size - 1 ? slow : 0));
		for (int i = 0; i < n; i++)
			a[i] = seed + s + i;
		MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		MPI_Sendrecv(out, n, MPI_FLOAT, (rank + 1) % size, 7, in, n, MPI_FLOAT,
			     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (prof_step)
			prof_step();
	}
	printf("rank=%d sum=%.0f\n", rank, b[n - 1]);
	free(a);
	free(b);
	free(out);
	free(in);
	MPI_Finalize();
	return 0;
}
