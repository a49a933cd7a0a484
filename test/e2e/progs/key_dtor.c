/* T threads each do PAIRS malloc/free pairs of 64 bytes, then set a pthread_key whose
 * destructor does one malloc/free pair of SIZE. The key is made after the first
 * allocation of the process (when libprof makes its own thread key), so its destructor
 * runs after libprof's thread-exit hook: those allocations go to an orphan ring.
 * usage: key_dtor T PAIRS SIZE */
#include "e2e.h"

static pthread_key_t key;
static long PAIRS, SIZE;

static void dtor(void *v)
{
	(void)v;
	many((size_t)SIZE, 1);
}

static void *work(void *a)
{
	(void)a;
	many(64, PAIRS);
	pthread_setspecific(key, (void *)1);
	return 0;
}

int main(int argc, char **argv)
{
	long T = arg(argc, argv, 1, 16);
	PAIRS = arg(argc, argv, 2, 20000);
	SIZE = arg(argc, argv, 3, 777);
	if (T > 256)
		T = 256;
	keep(malloc(1)); /* libprof's key is made at this first event */
	if (pthread_key_create(&key, dtor))
		die("pthread_key_create");
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	pthread_t t[256];
	for (long i = 0; i < T; i++)
		if (pthread_create(&t[i], 0, work, 0))
			die("pthread_create");
	for (long i = 0; i < T; i++)
		pthread_join(t[i], 0);
	return 0;
}
