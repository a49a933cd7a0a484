/* A program with nothing of CUDA: libprof must load none of it (checked from inside,
 * in /proc/self/maps, at the end). Prints key=value lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mapped(const char *name)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	for (int i = 0; i < 100; i++) {
		void *p = malloc(777);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	printf("cupti_mapped=%d\ncuda_mapped=%d\n", mapped("libcupti"), mapped("libcuda"));
	return 0;
}
