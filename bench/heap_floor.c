/* The floor of the exact live-heap analysis: what formats/model/memtrack.c costs per
 * allocator operation alone, fed as the live tables feed it (a drain pass's operations,
 * then the capture's CAP_DRAINED mark), for alloc_loop's pattern (one block allocated and
 * released again and again) and for a heap of many live blocks (a pointer map that leaves
 * the cache). Prints ns per operation: "<one block> <many blocks>".
 *   heap_floor [PAIRS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/model/memcurve.h"
#include "formats/model/memtrack.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t block(long i, long live)
{
	return 0x100000 + (uint64_t)(i % (2 * live)) * 64;
}

/* ns per operation over pairs allocations and releases, live blocks live at once (each
 * released live allocations after it was made) */
static double run(long pairs, long live)
{
	struct mem_image mi;
	memset(&mi, 0, sizeof mi);
	const long pass = 4096; /* operations a drain pass hands over, about */
	uint64_t t = 1000;
	double t0 = now_s();
	for (long i = 0; i < pairs; i++) {
		struct mem_op a = {.t = t++, .ptr = block(i, live), .size = 64};
		if (memtrack_push(&mi, 0, &a, 1))
			return -1;
		if (i + 1 >= live) {
			struct mem_op f = {.t = t++, .ptr = block(i + 1 - live, live),
					   .size = MEM_OP_FREE};
			if (memtrack_push(&mi, 0, &f, 1))
				return -1;
		}
		if (i % (pass / 2) == 0 && memtrack_drained(&mi, t - 2 * pass))
			return -1;
	}
	if (memtrack_finish(&mi))
		return -1;
	double s = now_s() - t0;
	memcurve_free(mi.curve);
	free(mi.sites);
	return s * 1e9 / (2.0 * (double)pairs);
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 4000000;
	printf("%.2f %.2f\n", run(pairs, 1), run(pairs, 1 << 20));
	return 0;
}
