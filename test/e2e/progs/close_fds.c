/* A daemon-like program: closes descriptors 0..1023 first, then allocates N marked blocks
 * (61001) on the main thread and N (61002) on a new thread.
 * usage: close_fds N */
#include "e2e.h"

static long N;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < N; i++) {
		void *p = malloc(61002);
		keep(p);
		free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	N = arg(argc, argv, 1, 100);
	for (int fd = 0; fd < 1024; fd++)
		close(fd);
	for (long i = 0; i < N; i++) {
		void *p = malloc(61001);
		keep(p);
		free(p);
	}
	pthread_t th;
	if (pthread_create(&th, 0, worker, 0))
		return 3;
	pthread_join(th, 0);
	return 0;
}
