/* T threads each do one malloc/free pair of 64 bytes, set a pthread_key whose destructor
 * does one malloc/free pair of SIZE, and wait for the file GO2. The key is made after the
 * first allocation of the process (when libprof makes its own thread key), so the
 * destructor runs after libprof's thread-exit hook: its events go to a second ring of
 * the thread (an orphan), the first one retired. Once the file GO1 exists, a flood thread
 * (its ring after the T threads') does FLOOD pairs of 64 bytes and ends; the runner lets
 * the collector start on that backlog, then makes GO2: the T threads end, their
 * destructors run, the process exits.
 * usage: key_dtor T SIZE FLOOD GO1 GO2 */
#include <sys/stat.h>
#include <time.h>
#include "e2e.h"

static pthread_key_t key;
static long SIZE, FLOOD;
static const char *GO1, *GO2;
static pthread_barrier_t started;

static void dtor(void *v)
{
	(void)v;
	many((size_t)SIZE, 1);
}

/* no allocation while waiting; at most a minute */
static int wait_file(const char *path)
{
	struct stat st;
	struct timespec d = {0, 200000};
	for (long i = 0; i < 300000 && stat(path, &st); i++)
		nanosleep(&d, 0);
	return stat(path, &st) == 0;
}

static void *work(void *a)
{
	(void)a;
	many(64, 1);
	pthread_setspecific(key, (void *)1);
	pthread_barrier_wait(&started);
	wait_file(GO2);
	return 0;
}

static void *flood(void *a)
{
	(void)a;
	many(64, FLOOD);
	return 0;
}

int main(int argc, char **argv)
{
	long T = arg(argc, argv, 1, 16);
	SIZE = arg(argc, argv, 2, 777);
	FLOOD = arg(argc, argv, 3, 0);
	GO1 = argc > 4 ? argv[4] : "go1";
	GO2 = argc > 5 ? argv[5] : "go2";
	if (T > 256)
		T = 256;
	keep(malloc(1)); /* libprof's key is made at this first event */
	if (pthread_key_create(&key, dtor))
		die("pthread_key_create");
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	pthread_barrier_init(&started, 0, (unsigned)T + 1);
	pthread_t t[256], f;
	for (long i = 0; i < T; i++)
		if (pthread_create(&t[i], 0, work, 0))
			die("pthread_create");
	pthread_barrier_wait(&started);
	printf("ready=1\n");
	fflush(stdout);
	if (FLOOD) {
		printf("go1=%d\n", wait_file(GO1));
		fflush(stdout);
		if (pthread_create(&f, 0, flood, 0))
			die("pthread_create");
		pthread_join(f, 0);
		printf("flooded=%ld\n", FLOOD);
		fflush(stdout);
	}
	for (long i = 0; i < T; i++)
		pthread_join(t[i], 0);
	printf("joined=%ld\n", T);
	fflush(stdout);
	return 0;
}
