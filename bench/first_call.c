/* The first allocator call of a program, timed from main: what a profiler's set-up costs
 * inside whatever call comes first (the ring of libprof's main thread, once committed
 * there). Prints microseconds of the first malloc, then of a second one. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void)
{
	double t0 = now_us();
	void *volatile p = malloc(10);
	double t1 = now_us();
	free(p);
	double t2 = now_us();
	void *volatile q = malloc(10);
	double t3 = now_us();
	free(q);
	printf("%.2f %.2f\n", t1 - t0, t3 - t2);
	return 0;
}
