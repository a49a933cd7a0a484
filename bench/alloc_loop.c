/* The intercepted-call benchmark: N malloc/free pairs of 64 bytes in a tight loop on one
 * thread; prints nanoseconds per call (two calls per pair). The pointer goes through a
 * volatile so the compiler cannot drop the pair.
 * usage: alloc_loop N [W] [floor]
 *   W: steps of dependent arithmetic after each pair (0), so a profiler's collector keeps
 *      up and its ring stays resident: what a call costs in a program that does some work
 *   floor: each call also reads the TSC and stores a 48-byte record into a ring that
 *      stays in cache, inline: the least that recording a call can add in this same loop
 *      (a tight loop of rdtsc alone reads less: there the reads overlap each other) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

struct rec {
	uint64_t t0, t1, a, b, c, d;
};
/* not static: stores nothing in this file reads must not be dropped by the compiler */
struct rec ring[4096];
volatile uint64_t ring_head;

static inline void note(uint64_t i, uint64_t block)
{
	uint64_t t = __rdtsc();
	ring[i & 4095] = (struct rec){t, t, block, 64, 0, 1};
	ring_head = i;
}

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
	int floor = argc > 3 && !strcmp(argv[3], "floor");
	void *volatile sink;
	volatile unsigned long work = 1;
	for (long i = 0; i < 10000; i++) { /* warm the allocator and the ring */
		sink = malloc(64);
		free(sink);
	}
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		sink = malloc(64);
		void *p = sink;
		if (floor)
			note(2 * (uint64_t)i, (uint64_t)(uintptr_t)p);
		if (floor) /* a release is stamped before the block is given back */
			note(2 * (uint64_t)i + 1, (uint64_t)(uintptr_t)p);
		free(p);
		unsigned long x = work;
		for (long k = 0; k < w; k++)
			x = x * 31 + (unsigned long)k;
		work = x;
	}
	double t1 = now_ns();
	printf("%.2f\n", (t1 - t0) / (2.0 * n));
	return 0;
}
