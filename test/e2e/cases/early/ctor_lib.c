/* A library whose constructor allocates a lot, as libmxnet's static initializers do:
 * linked into ctor_main, it is initialized before libprof (preloaded, its constructor
 * runs after those of the libraries the program links). EARLY_ALLOCS blocks (default
 * 200,000) are made, a quarter of them reallocated, half freed; the rest stay live. */
#include <stdlib.h>

static void **blocks;
unsigned long ctor_allocs, ctor_frees, ctor_reallocs;

__attribute__((constructor)) static void allocate_early(void)
{
	const char *s = getenv("EARLY_ALLOCS");
	unsigned long n = s ? strtoul(s, 0, 10) : 200000;
	blocks = malloc(n * sizeof *blocks);
	ctor_allocs = 1;
	for (unsigned long i = 0; i < n; i++) {
		blocks[i] = malloc(16 + i % 200);
		ctor_allocs++;
	}
	for (unsigned long i = 0; i < n; i += 4) {
		void *p = realloc(blocks[i], 300);
		if (p)
			blocks[i] = p;
		ctor_reallocs++;
	}
	for (unsigned long i = 1; i < n; i += 2) {
		free(blocks[i]);
		ctor_frees++;
	}
}
