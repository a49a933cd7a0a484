/* T threads each do one malloc/free pair of 64 bytes, set a pthread_key whose destructor
 * does one malloc/free pair of SIZE, and wait. The key is made after the first
 * allocation of the process (when libprof makes its own thread key), so its destructor
 * runs after libprof's thread-exit hook: those allocations go to a second ring of the
 * thread (an orphan), its first one retired. F flood threads (rings after the T threads')
 * then do 64-byte pairs for MS milliseconds, so that the collector is busy with their
 * backlog when everything stops at once: the T threads end, their destructors run, the
 * process exits, all before the collector's next pass frees the retired rings.
 * usage: key_dtor T SIZE F MS */
#include <stdatomic.h>
#include <time.h>
#include "e2e.h"

static pthread_key_t key;
static long SIZE;
static pthread_barrier_t started;
static atomic_int stop;
static atomic_long flooded;

static void dtor(void *v)
{
	(void)v;
	many((size_t)SIZE, 1);
}

static void wait_stop(void)
{
	struct timespec ms = {0, 200000};
	while (!atomic_load(&stop))
		nanosleep(&ms, 0);
}

static void *work(void *a)
{
	(void)a;
	many(64, 1);
	pthread_setspecific(key, (void *)1);
	pthread_barrier_wait(&started);
	wait_stop();
	return 0;
}

static void *flood(void *a)
{
	(void)a;
	pthread_barrier_wait(&started);
	long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		many(64, 100);
		n += 100;
	}
	atomic_fetch_add(&flooded, n);
	return 0;
}

int main(int argc, char **argv)
{
	long T = arg(argc, argv, 1, 16);
	SIZE = arg(argc, argv, 2, 777);
	long F = arg(argc, argv, 3, 2);
	long MS = arg(argc, argv, 4, 300);
	if (T > 128)
		T = 128;
	if (F > 128)
		F = 128;
	keep(malloc(1)); /* libprof's key is made at this first event */
	if (pthread_key_create(&key, dtor))
		die("pthread_key_create");
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	pthread_barrier_init(&started, 0, (unsigned)(T + F + 1));
	pthread_t t[256];
	for (long i = 0; i < T; i++)
		if (pthread_create(&t[i], 0, work, 0))
			die("pthread_create");
	for (long i = 0; i < F; i++)
		if (pthread_create(&t[T + i], 0, flood, 0))
			die("pthread_create");
	pthread_barrier_wait(&started);
	struct timespec d = {MS / 1000, (MS % 1000) * 1000000};
	nanosleep(&d, 0);
	atomic_store(&stop, 1);
	for (long i = 0; i < T + F; i++)
		pthread_join(t[i], 0);
	printf("flood_pairs=%ld\n", atomic_load(&flooded));
	return 0;
}
