/* A steady loop: N ticks, each a range "tick" of about 2 ms holding one malloc/free
 * pair, then a sleep, PERIOD_MS apart in all. usage: ticks N PERIOD_MS */
#include "e2e.h"

int main(int argc, char **argv)
{
	long n = arg(argc, argv, 1, 60), period = arg(argc, argv, 2, 50);
	uint64_t start = mono_ns();
	for (long i = 0; i < n; i++) {
		if (prof_range_push)
			prof_range_push("tick");
		uint64_t t0 = mono_ns();
		void *p = malloc(100);
		keep(p);
		free(p);
		while (mono_ns() - t0 < 2000000)
			;
		if (prof_range_pop)
			prof_range_pop();
		uint64_t next = start + (uint64_t)(i + 1) * (uint64_t)period * 1000000u, now;
		while ((now = mono_ns()) < next) {
			struct timespec d = {0, (long)(next - now)};
			nanosleep(&d, 0);
		}
	}
	printf("ticks=%ld\n", n);
	return 0;
}
