/* A long allocator-bound run: THREADS threads each make PAIRS malloc/free pairs, keeping
 * 64 blocks of varied sizes live (each free releases the block allocated 64 calls
 * before), so the live heap moves and every release matches an allocation.
 *   alloc_storm PAIRS [THREADS]
 * Prints live_end=0 (every block released at the end). */
#include "e2e.h"

static long pairs;

static void *storm(void *arg)
{
	void *live[64] = {0};
	unsigned long x = (unsigned long)arg * 2654435761ul + 1;
	for (long i = 0; i < pairs; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		unsigned k = (unsigned)(i & 63);
		free(live[k]);
		live[k] = malloc(16 + (x >> 52));
		keep(live[k]);
	}
	for (unsigned k = 0; k < 64; k++)
		free(live[k]);
	return 0;
}

int main(int argc, char **argv)
{
	pairs = arg(argc, argv, 1, 1000000);
	long threads = arg(argc, argv, 2, 1);
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		return 2;
	for (long i = 1; i < threads; i++)
		pthread_create(&t[i], 0, storm, (void *)i);
	storm(0);
	for (long i = 1; i < threads; i++)
		pthread_join(t[i], 0);
	printf("live_end=0\n");
	return 0;
}
