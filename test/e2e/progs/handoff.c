/* Blocks allocated on one thread and released on another a few microseconds later:
 * PAIRS producer/consumer pairs of threads, each pair passing N blocks through a
 * single-producer single-consumer queue. Only a merge of the threads' allocator calls in
 * time order matches every release to its allocation.
 *   handoff N [PAIRS]
 * Prints done=N*PAIRS. */
#include <stdatomic.h>

#include "e2e.h"

#define QUEUE 256

struct pair {
	void *slot[QUEUE];
	_Atomic unsigned long head, tail;
	long n;
};

static void *produce(void *arg)
{
	struct pair *p = arg;
	for (long i = 0; i < p->n; i++) {
		unsigned long h = atomic_load_explicit(&p->head, memory_order_relaxed);
		while (h - atomic_load_explicit(&p->tail, memory_order_acquire) >= QUEUE)
			sched_yield();
		void *b = malloc(16 + (size_t)(i % 200));
		keep(b);
		p->slot[h % QUEUE] = b;
		atomic_store_explicit(&p->head, h + 1, memory_order_release);
	}
	return 0;
}

static void *consume(void *arg)
{
	struct pair *p = arg;
	for (long i = 0; i < p->n; i++) {
		unsigned long t = atomic_load_explicit(&p->tail, memory_order_relaxed);
		while (atomic_load_explicit(&p->head, memory_order_acquire) == t)
			sched_yield();
		free(p->slot[t % QUEUE]);
		atomic_store_explicit(&p->tail, t + 1, memory_order_release);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = arg(argc, argv, 1, 1000000), pairs = arg(argc, argv, 2, 2);
	struct pair p[8];
	pthread_t t[16];
	if (pairs < 1 || pairs > 8)
		return 2;
	for (long i = 0; i < pairs; i++) {
		memset(&p[i], 0, sizeof p[i]);
		p[i].n = n;
		if (pthread_create(&t[2 * i], 0, produce, &p[i]) ||
		    pthread_create(&t[2 * i + 1], 0, consume, &p[i]))
			die("pthread_create");
	}
	for (long i = 0; i < 2 * pairs; i++)
		pthread_join(t[i], 0);
	printf("done=%ld\n", n * pairs);
	return 0;
}
