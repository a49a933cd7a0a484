/* One rank of a job without collectives: MS milliseconds of CPU work in 1 ms "work"
 * ranges, a malloc in each, then exit. usage: rank_work MS */
#include "e2e.h"

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double until = cpu_ms() + (double)arg(argc, argv, 1, 100);
	long ranges = 0;
	while (cpu_ms() < until) {
		if (prof_range_push)
			prof_range_push("work");
		double end = cpu_ms() + 1;
		while (cpu_ms() < end)
			spin(1000);
		many(256, 1);
		if (prof_range_pop)
			prof_range_pop();
		ranges++;
	}
	printf("ranges=%ld\n", ranges);
	return 0;
}
