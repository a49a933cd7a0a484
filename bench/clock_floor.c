/* The floor under any timed wrapper on this machine: two TSC reads plus a 48-byte store
 * into a ring that stays in cache, the same with clock_gettime, and one TSC read plus
 * the store (an allocator call without a duration). Prints ns per iteration:
 * "<two rdtsc + store> <two clock_gettime + store> <one rdtsc + store>". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

struct rec {
	uint64_t t0, t1, a, b, c, d;
};

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	size_t cap = 1 << 12;
	struct rec *ring = calloc(cap, sizeof *ring);
	volatile uint64_t head = 0;
	uint64_t t0 = mono();
	for (long i = 0; i < n; i++) {
		uint64_t a = __rdtsc(), b = __rdtsc();
		struct rec *r = &ring[i & (cap - 1)];
		*r = (struct rec){a, b, (uint64_t)i, 64, 0, 1};
		head = (uint64_t)i;
	}
	uint64_t t1 = mono();
	for (long i = 0; i < n; i++) {
		uint64_t a = mono(), b = mono();
		struct rec *r = &ring[i & (cap - 1)];
		*r = (struct rec){a, b, (uint64_t)i, 64, 0, 1};
		head = (uint64_t)i;
	}
	uint64_t t2 = mono();
	for (long i = 0; i < n; i++) {
		uint64_t a = __rdtsc();
		struct rec *r = &ring[i & (cap - 1)];
		*r = (struct rec){a, a, (uint64_t)i, 64, 0, 1};
		head = (uint64_t)i;
	}
	uint64_t t3 = mono();
	printf("%.2f %.2f %.2f\n", (double)(t1 - t0) / n, (double)(t2 - t1) / n,
	       (double)(t3 - t2) / n);
	free(ring);
	return (int)(head & 0);
}
