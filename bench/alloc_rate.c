/* A steady allocator load: RATE malloc/free pairs a second for SECONDS, in chunks of a
 * thousand (each chunk a burst, then a sleep to the schedule), on one thread; prints the
 * pairs made. What a long training run's allocator looks like to a continuous dump. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double rate = argc > 1 ? atof(argv[1]) : 1e6, seconds = argc > 2 ? atof(argv[2]) : 10;
	void *volatile sink;
	long pairs = 0;
	double t0 = now_s();
	for (;;) {
		double now = now_s();
		if (now - t0 >= seconds)
			break;
		long due = (long)((now - t0) * rate);
		if (pairs >= due) {
			struct timespec d = {0, 200000};
			nanosleep(&d, 0);
			continue;
		}
		for (int i = 0; i < 1000; i++, pairs++) {
			sink = malloc(64);
			free(sink);
		}
	}
	printf("%ld\n", pairs);
	return 0;
}
