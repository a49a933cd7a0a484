/* N marks "cm", each between two clock_gettime(CLOCK_MONOTONIC) reads, spaced by SPIN
 * iterations of an empty loop. Prints "pair=i before_ns after_ns" for each, after the
 * loop (no stdio inside it), and pid=.
 * usage: clock_marks N SPIN */
#include "e2e.h"

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 100), SPIN = arg(argc, argv, 2, 20000);
	if (!prof_mark || N > 100000)
		return 2;
	uint64_t *before = malloc(N * sizeof *before), *after = malloc(N * sizeof *after);
	if (!before || !after)
		die("malloc");
	for (long i = 0; i < N; i++) {
		spin(SPIN);
		before[i] = mono_ns();
		prof_mark("cm");
		after[i] = mono_ns();
	}
	printf("pid=%d\n", (int)getpid());
	for (long i = 0; i < N; i++)
		printf("pair=%ld %llu %llu\n", i, (unsigned long long)before[i],
		       (unsigned long long)after[i]);
	free(before);
	free(after);
	return 0;
}
