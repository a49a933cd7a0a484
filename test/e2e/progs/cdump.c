/* For continuous dumps. Phase 1: ranges "phase1" each around one malloc/free pair of
 * 57001, with a sleep of SLEEP us every EVERY of them, for at least MS1 ms and until
 * libprof.txt exists (a dump was written while the program worked; at most 20 s). Prints
 * "phase1=K txt_seen=0|1" and waits (at most 60 s) for a file "go" in the working
 * directory, made by whoever checks the dumps. Phase 2: ranges "phase2" around pairs of
 * 57002, for MS2 milliseconds. Prints "phase2=K waited_go=0|1 pid=" at the end.
 * usage: cdump MS1 MS2 EVERY SLEEP */
#include <sys/stat.h>
#include <time.h>
#include "e2e.h"

static long EVERY, SLEEP;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static long work(const char *range, size_t size, double ms, int until_txt, int *seen)
{
	double t0 = now_ms();
	long k = 0;
	struct stat st;
	for (;;) {
		double el = now_ms() - t0;
		if (el >= ms) {
			if (!until_txt)
				break;
			if (stat("libprof.txt", &st) == 0) {
				*seen = 1;
				break;
			}
			if (el >= 20000)
				break;
		}
		prof_range_push(range);
		void *p = malloc(size);
		keep(p);
		free(p);
		prof_range_pop();
		if (++k % EVERY == 0)
			usleep((useconds_t)SLEEP);
	}
	return k;
}

int main(int argc, char **argv)
{
	long MS1 = arg(argc, argv, 1, 750), MS2 = arg(argc, argv, 2, 750);
	EVERY = arg(argc, argv, 3, 10);
	SLEEP = arg(argc, argv, 4, 1000);
	if (EVERY < 1)
		return 2;
	if (!prof_range_push)
		return 2;
	int seen = 0;
	long k1 = work("phase1", 57001, (double)MS1, 1, &seen);
	printf("phase1=%ld txt_seen=%d\n", k1, seen);
	fflush(stdout);
	struct stat st;
	double t0 = now_ms();
	int go = 0;
	while (!(go = stat("go", &st) == 0) && now_ms() - t0 < 60000)
		usleep(2000);
	long k2 = work("phase2", 57002, (double)MS2, 0, &seen);
	printf("phase2=%ld waited_go=%d pid=%d\n", k2, go, (int)getpid());
	return 0;
}
