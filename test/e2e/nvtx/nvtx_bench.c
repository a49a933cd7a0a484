/* nvtxRangePushA/nvtxRangePop pairs in a loop: ns per pair.
 *   nvtx_bench BATCHES PAIRS  prints pairs=N and ns_per_pair=X (the median batch)
 * Batches are timed apart, with a 20 ms pause between them so a profiler's rings drain
 * (the timing is then of recording, not of a full ring). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int batches = argc > 1 ? atoi(argv[1]) : 20;
	long pairs = argc > 2 ? atol(argv[2]) : 20000;
	double *ns = calloc((size_t)batches, sizeof *ns);
	if (!ns || batches < 1)
		return 2;
	nvtxRangePushA("warm-up"); /* NVTX initializes on its first call */
	nvtxRangePop();
	for (int b = 0; b < batches; b++) {
		double t0 = now_ns();
		for (long i = 0; i < pairs; i++) {
			nvtxRangePushA("bench");
			nvtxRangePop();
		}
		ns[b] = (now_ns() - t0) / (double)pairs;
		usleep(20000);
	}
	qsort(ns, (size_t)batches, sizeof *ns, cmp);
	printf("pairs=%ld\nns_per_pair=%.1f\nns_min=%.1f\n", pairs * batches + 1, ns[batches / 2],
	       ns[0]);
	free(ns);
	return 0;
}
