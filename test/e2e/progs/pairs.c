/* The plainest long run: N malloc(64)/free pairs on one thread (events that compress
 * well, so 200 M of them fit a test's disk). Prints ns_per_call. usage: pairs N */
#include "e2e.h"

int main(int argc, char **argv)
{
	long n = arg(argc, argv, 1, 1000000);
	uint64_t t0 = mono_ns();
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);
		keep(p);
		free(p);
	}
	printf("ns_per_call=%.2f\n", (double)(mono_ns() - t0) / (2.0 * (double)n));
	return 0;
}
