/* STEPS steps (prof_step), each making ALLOCS allocations of 64 bytes and freeing them:
 * prof html's small-allocations advice fires on many per step, not on a few.
 * usage: advice_allocs STEPS ALLOCS */
#include "e2e.h"

int main(int argc, char **argv)
{
	long steps = arg(argc, argv, 1, 20), allocs = arg(argc, argv, 2, 5000);
	void **held = calloc((size_t)allocs, sizeof *held);
	if (!prof_step || !held)
		return 2;
	for (long s = 0; s < steps; s++) {
		for (long i = 0; i < allocs; i++)
			held[i] = malloc(64);
		for (long i = 0; i < allocs; i++)
			free(held[i]);
		prof_step();
	}
	free(held);
	printf("steps=%ld\n", steps);
	return 0;
}
