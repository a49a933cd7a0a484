/* More threads at once than libprof has rings: TOTAL threads, all alive together (a
 * barrier), each named "bN" and making PER marked malloc/free pairs of SIZE and nothing
 * else: the workers never end (glibc's thread exit makes allocator calls of its own);
 * the process exits under them once all are done. Prints each worker's tid and the
 * events the workers made in all.
 * usage: threads_beyond TOTAL PER SIZE */
#include "e2e.h"

#include <semaphore.h>

static long PER, SIZE;
static pthread_barrier_t all_up, all_done;
static sem_t never;

struct worker {
	pthread_t th;
	long index, tid;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[16];
	snprintf(name, sizeof name, "b%ld", w->index);
	pthread_setname_np(pthread_self(), name);
	w->tid = e2e_tid();
	pthread_barrier_wait(&all_up);
	many((size_t)SIZE, PER);
	pthread_barrier_wait(&all_done);
	while (1)
		sem_wait(&never);
	return 0;
}

int main(int argc, char **argv)
{
	long total = arg(argc, argv, 1, 2000);
	PER = arg(argc, argv, 2, 100);
	SIZE = arg(argc, argv, 3, 5311);
	struct worker *w = calloc((size_t)total, sizeof *w);
	pthread_attr_t attr;
	if (!w || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 128 << 10))
		die("set-up");
	pthread_barrier_init(&all_up, 0, (unsigned)total);
	pthread_barrier_init(&all_done, 0, (unsigned)total + 1);
	sem_init(&never, 0, 0);
	for (long i = 0; i < total; i++) {
		w[i].index = i;
		if (pthread_create(&w[i].th, &attr, work, &w[i]))
			die("pthread_create");
	}
	pthread_barrier_wait(&all_done);
	for (long i = 0; i < total; i++)
		printf("worker=%ld:%ld\n", w[i].index, w[i].tid);
	printf("made=%ld\npid=%d\n", total * PER * 2, (int)getpid());
	fflush(stdout);
	exit(0);
}
