/* N steps: step i is a range "sII" holding a malloc/free pair of 1000 + i bytes, then
 * prof_step(). With "pause", prof_pause() first: nothing may be recorded, whatever a
 * schedule says. usage: steps N [pause] */
#include "e2e.h"

int main(int argc, char **argv)
{
	long n = arg(argc, argv, 1, 12);
	char name[16];
	if (!prof_step || !prof_range_push || !prof_pause)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "pause"))
		prof_pause();
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof name, "s%02ld", i);
		prof_range_push(name);
		void *p = malloc(1000 + (size_t)i);
		keep(p);
		free(p);
		prof_range_pop();
		prof_step();
	}
	printf("steps=%ld\n", n);
	return 0;
}
