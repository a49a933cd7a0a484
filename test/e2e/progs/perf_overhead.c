/* The workload of libprof's own performance check (make perf-check): libprof's cost as a
 * profiled program sees it. Each round runs every phase once, each phase a range around
 * a loop of what libprof intercepts or records, so a slower wrapper, ring write or range
 * makes its phase's range slower; the "compute" phases call nothing libprof sees and
 * anchor the common-mode estimate of prof diff.
 *   perf_overhead [ROUNDS [LOOPS]]   (default 40 rounds of 1000 loops) */
#include "e2e.h"

static volatile unsigned long sink;

static void compute(long n)
{
	unsigned long x = sink;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

int main(int argc, char **argv)
{
	long rounds = arg(argc, argv, 1, 40), loops = arg(argc, argv, 2, 1000);
	void *keepers[64];

	if (!prof_range_push)
		return 0;
	for (long r = 0; r < rounds; r++) {
		prof_range_push("compute a");
		compute(20 * loops);
		prof_range_pop();

		prof_range_push("malloc+free 64 B");
		for (long i = 0; i < loops; i++) {
			void *p = malloc(64);
			keep(p);
			free(p);
		}
		prof_range_pop();

		prof_range_push("compute b");
		compute(30 * loops);
		prof_range_pop();

		prof_range_push("calloc, realloc, free");
		for (long i = 0; i < loops; i++) {
			void *p = calloc(1, 32 + (size_t)(i & 255));
			p = realloc(p, 512 + (size_t)(i & 1023));
			keep(p);
			free(p);
		}
		prof_range_pop();

		prof_range_push("compute c");
		compute(40 * loops);
		prof_range_pop();

		prof_range_push("64 live blocks");
		for (long i = 0; i < loops; i++) {
			int k = (int)(i & 63);
			if (i >= 64)
				free(keepers[k]);
			keepers[k] = malloc(16 + (size_t)k * 8);
			keep(keepers[k]);
		}
		for (long i = 0; i < 64 && i < loops; i++)
			free(keepers[i]);
		prof_range_pop();

		prof_range_push("compute d");
		compute(25 * loops);
		prof_range_pop();

		prof_range_push("nested ranges");
		for (long i = 0; i < loops; i++) {
			prof_range_push("inner range");
			prof_range_pop();
		}
		prof_range_pop();

		prof_range_push("marks and counters");
		for (long i = 0; i < loops; i++) {
			prof_mark("mark");
			prof_counter("counter", (double)i);
		}
		prof_range_pop();

		prof_range_push("compute e");
		compute(35 * loops);
		prof_range_pop();
		prof_step();
	}
	printf("sink=%lu\n", sink & 0xff);
	return 0;
}
