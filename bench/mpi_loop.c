/* N calls of MPI_Allreduce of one int on a single rank (MPI's own cost is small, so what
 * a profiler adds shows); prints ns per call. Built by bench/run.py with mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int x = 1, y = 0;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.2f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) /
				 (double)n);
	MPI_Finalize();
	return y != 1;
}
