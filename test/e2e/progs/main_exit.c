/* The main thread starts a worker and calls pthread_exit: the process lives on with a
 * zombie main thread. The worker waits for the file GO (made by the runner once it has
 * looked at the outputs), then does N marked malloc/free pairs of SIZE and says so.
 * usage: main_exit N SIZE GO */
#include <sys/stat.h>
#include <time.h>
#include "e2e.h"

static long N, SIZE;
static const char *GO;

static void *worker(void *arg)
{
	(void)arg;
	struct stat st;
	struct timespec ms = {0, 1000000};
	/* no allocation while waiting; at most a minute */
	for (long i = 0; i < 60000 && stat(GO, &st); i++)
		nanosleep(&ms, 0);
	printf("worker_go=%d\n", stat(GO, &st) == 0);
	fflush(stdout);
	many((size_t)SIZE, N);
	printf("worker_done=%ld\n", N);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	N = arg(argc, argv, 1, 20000);
	SIZE = arg(argc, argv, 2, 333);
	GO = argc > 3 ? argv[3] : "go";
	many((size_t)SIZE + 1, 1);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	pthread_t th;
	if (pthread_create(&th, 0, worker, 0))
		die("pthread_create");
	pthread_exit(0);
}
