/* Many threads, each PER marked malloc/free pairs of SIZE, in waves of WAVE joined
 * threads (glibc reuses their stacks). With PROFILER_STACK=alloc every thread's first
 * stack makes libunwind allocate its thread-local block, which glibc frees later from
 * another thread: libprof's memory, never an event.
 * usage: threads_stacks TOTAL WAVE PER SIZE */
#include "e2e.h"

static long PER, SIZE;

static void *worker(void *arg)
{
	(void)arg;
	many((size_t)SIZE, PER);
	return 0;
}

int main(int argc, char **argv)
{
	long total = arg(argc, argv, 1, 800), wave = arg(argc, argv, 2, 100);
	PER = arg(argc, argv, 3, 3);
	SIZE = arg(argc, argv, 4, 4321);
	pthread_t th[256];
	if (wave > 256)
		return 2;
	for (long done = 0; done < total;) {
		long n = total - done < wave ? total - done : wave;
		for (long i = 0; i < n; i++)
			if (pthread_create(&th[i], 0, worker, 0))
				die("pthread_create");
		for (long i = 0; i < n; i++)
			pthread_join(th[i], 0);
		done += n;
	}
	printf("pid=%d\n", (int)getpid());
	return 0;
}
