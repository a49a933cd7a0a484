/* The traced-call benchmark: N calls of a tiny function in a shared library, through the
 * PLT; prints nanoseconds per call.
 * usage: trace_loop N [W] [floor]
 *   W: steps of dependent arithmetic after each call (0), so a profiler's collector keeps
 *      up and its ring stays resident: what a call costs in a program that does some work
 *   floor: each call also timed inline, a TSC read before and after it and a 48-byte
 *      record into a ring that stays in cache: the least that recording a call's entry
 *      and exit can add in this same loop */
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
	int floor = argc > 3 && !strcmp(argv[3], "floor");
	volatile int sink = 0;
	volatile unsigned long work = 1;
	for (long i = 0; i < 10000; i++)
		sink = bench_fn(sink);
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (floor) {
			uint64_t a = __rdtsc();
			sink = bench_fn(sink);
			uint64_t b = __rdtsc();
			ring[i & 4095] = (struct rec){a, b, (uint64_t)i, 1, 0, 1};
			ring_head = (uint64_t)i;
		} else {
			sink = bench_fn(sink);
		}
		unsigned long x = work;
		for (long k = 0; k < w; k++)
			x = x * 31 + (unsigned long)k;
		work = x;
	}
	double t1 = now_ns();
	printf("%.2f\n", (t1 - t0) / n);
	return 0;
}
