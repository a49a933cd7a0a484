/* Many short-lived threads: TOTAL threads in waves of WAVE, each PER marked mallocs of
 * SIZE (freed). usage: threads_many TOTAL WAVE PER SIZE */
#include "e2e.h"

static long PER, SIZE;

static void *worker(void *arg)
{
	(void)arg;
	void *b[256];
	for (long i = 0; i < PER; i++)
		keep(b[i] = malloc((size_t)SIZE));
	for (long i = 0; i < PER; i++)
		free(b[i]);
	return 0;
}

int main(int argc, char **argv)
{
	long total = arg(argc, argv, 1, 300), wave = arg(argc, argv, 2, 30);
	PER = arg(argc, argv, 3, 10);
	SIZE = arg(argc, argv, 4, 23457);
	pthread_t th[256];
	if (wave > 256 || PER > 256)
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
