/* The traced-call benchmark: N calls of a tiny function in a shared library, through the
 * PLT; prints nanoseconds per call.
 * usage: trace_loop N [W]   W: steps of dependent arithmetic after each call (0), so a
 *                           profiler's collector keeps up and its ring stays resident:
 *                           what a call costs in a program that does some work */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int bench_fn(int x);

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
	volatile int sink = 0;
	volatile unsigned long work = 1;
	for (long i = 0; i < 10000; i++)
		sink = bench_fn(sink);
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		sink = bench_fn(sink);
		unsigned long x = work;
		for (long k = 0; k < w; k++)
			x = x * 31 + (unsigned long)k;
		work = x;
	}
	double t1 = now_ns();
	printf("%.2f\n", (t1 - t0) / n);
	return 0;
}
