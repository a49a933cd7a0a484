/* One thread that does nothing but PAIRS malloc(SIZE)/free pairs, then waits for the end
 * of the process without exiting (so no thread-exit code of libc runs on it): it produces
 * exactly 2*PAIRS events. The main thread prints the worker's tid and exits.
 * usage: overload PAIRS SIZE */
#include <semaphore.h>
#include "e2e.h"

static long PAIRS, SIZE;
static long tid;
static sem_t done;

static void *worker(void *arg)
{
	(void)arg;
	tid = e2e_tid();
	for (long i = 0; i < PAIRS; i++) {
		void *p = malloc((size_t)SIZE);
		keep(p);
		free(p);
	}
	sem_post(&done);
	for (;;)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	PAIRS = arg(argc, argv, 1, 200000);
	SIZE = arg(argc, argv, 2, 71001);
	sem_init(&done, 0, 0);
	pthread_t th;
	if (pthread_create(&th, 0, worker, 0))
		die("pthread_create");
	while (sem_wait(&done))
		;
	printf("pid=%d tid=%ld\n", (int)getpid(), tid);
	return 0;
}
