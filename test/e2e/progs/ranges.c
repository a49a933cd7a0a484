/* Nested ranges with no allocation inside them: on T threads, R times
 *   outer { spin; inner { spin } ; spin }   and   sibling { spin }
 * plus "short" ranges (M times). Then marked mallocs so the memory table is not empty.
 * The whole thing is repeated ITER times (fresh threads each time, 2 ms sleep between).
 * With TAIL, each thread's last outer range spins TAIL more times after its inner range
 * ends, so the collector drains the ring between the two, and the thread exits
 * soon after (one short sibling range later). usage: ranges T R M ITER TAIL */
#include "e2e.h"

static long R, M, TAIL;

static void *work(void *arg)
{
	(void)arg;
	for (long i = 0; i < R; i++) {
		prof_range_push("outer");
		spin(20000);
		prof_range_push("inner");
		spin(40000);
		prof_range_pop();
		spin(10000);
		if (i == R - 1 && TAIL)
			spin(TAIL);
		prof_range_pop();
		prof_range_push("sibling");
		spin(5000);
		prof_range_pop();
	}
	for (long i = 0; i < M; i++) {
		prof_range_push("short");
		prof_range_pop();
	}
	return 0;
}

int main(int argc, char **argv)
{
	long T = arg(argc, argv, 1, 2);
	R = arg(argc, argv, 2, 20);
	M = arg(argc, argv, 3, 50);
	long ITER = arg(argc, argv, 4, 1);
	TAIL = arg(argc, argv, 5, 0);
	if (!prof_range_push)
		return 0;
	for (long it = 0; it < ITER; it++) {
		pthread_t th[16];
		for (long i = 0; i < T && i < 16; i++)
			if (pthread_create(&th[i], 0, work, 0))
				die("pthread_create");
		for (long i = 0; i < T && i < 16; i++)
			pthread_join(th[i], 0);
		for (int i = 0; i < 100; i++) {
			void *p = malloc(91001);
			keep(p);
			free(p);
		}
		prof_step();
		prof_mark("iteration done");
		prof_counter("iteration", (double)it);
		if (ITER > 1)
			usleep(2000);
	}
	printf("pid=%d\n", (int)getpid());
	return 0;
}
