/* Every allocator function, K calls each from T threads, each with its own marked size;
 * every marked block is freed with free(). Sizes are listed in run.py (FAMILY_SIZES).
 * usage: alloc_family T K */
#include <malloc.h>
#include "e2e.h"

#define N_FN 9
static long K;

static void *worker(void *arg)
{
	(void)arg;
	void *blocks[N_FN * 64];
	size_t nb = 0;
	if (K > 64)
		abort();
	for (long i = 0; i < K; i++) {
		void *p;
		p = malloc(12345);
		keep(p), blocks[nb++] = p;
		p = calloc(7, 1777); /* 12439 */
		keep(p), blocks[nb++] = p;
		p = malloc(100);
		keep(p);
		p = realloc(p, 13001);
		keep(p), blocks[nb++] = p;
		p = reallocarray(0, 11, 1201); /* 13211 */
		keep(p), blocks[nb++] = p;
		if (posix_memalign(&p, 64, 13331))
			abort();
		keep(p), blocks[nb++] = p;
		p = aligned_alloc(256, 13568);
		keep(p), blocks[nb++] = p;
		p = memalign(128, 13421);
		keep(p), blocks[nb++] = p;
		p = valloc(13523);
		keep(p), blocks[nb++] = p;
		p = pvalloc(13627);
		keep(p), blocks[nb++] = p;
	}
	for (size_t i = 0; i < nb; i++) {
		if (!blocks[i])
			abort();
		free(blocks[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long T = arg(argc, argv, 1, 4);
	K = arg(argc, argv, 2, 10);
	pthread_t th[64];
	if (T > 64)
		return 2;
	for (long i = 0; i < T; i++)
		if (pthread_create(&th[i], 0, worker, 0))
			die("pthread_create");
	for (long i = 0; i < T; i++)
		pthread_join(th[i], 0);
	printf("pid=%d\n", (int)getpid());
	return 0;
}
