/* The intercepted-call benchmark: N malloc/free pairs of 64 bytes in a tight loop on one
 * thread; prints nanoseconds per call (two calls per pair). The pointer goes through a
 * volatile so the compiler cannot drop the pair.
 * usage: alloc_loop N [W]   W: steps of dependent arithmetic after each pair (0), so a
 *                           profiler's collector keeps up and its ring stays resident:
 *                           what a call costs in a program that does some work */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	long w = argc > 2 ? atol(argv[2]) : 0;
	void *volatile sink;
	volatile unsigned long work = 1;
	for (long i = 0; i < 10000; i++) { /* warm the allocator and the ring */
		sink = malloc(64);
		free(sink);
	}
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		sink = malloc(64);
		free(sink);
		unsigned long x = work;
		for (long k = 0; k < w; k++)
			x = x * 31 + (unsigned long)k;
		work = x;
	}
	double t1 = now_ns();
	printf("%.2f\n", (t1 - t0) / (2.0 * n));
	return 0;
}
