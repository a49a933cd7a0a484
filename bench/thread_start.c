/* Thread start cost: N threads, one after the other, each making one malloc/free pair
 * (its first event, so a profiler's per-thread set-up is paid) and exiting; prints
 * microseconds per thread, created to joined. With a second argument W (up to 1024), W
 * threads at a time (each wave joined before the next); with a third P, P pairs per
 * thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs = 1;

static void *one(void *arg)
{
	for (long i = 0; i < pairs; i++) {
		void *volatile p = malloc(32 + (size_t)(i % 64));
		free(p);
	}
	return arg;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, wave = argc > 2 ? atol(argv[2]) : 1;
	pairs = argc > 3 ? atol(argv[3]) : 1;
	pthread_t t[1024];
	if (wave < 1 || wave > 1024)
		return 2;
	one(0); /* the main thread's own first event */
	double t0 = now_us();
	for (long i = 0; i < n; i += wave) {
		for (long k = 0; k < wave; k++)
			pthread_create(&t[k], 0, one, 0);
		for (long k = 0; k < wave; k++)
			pthread_join(t[k], 0);
	}
	printf("%.2f\n", (now_us() - t0) / (double)n);
	return 0;
}
