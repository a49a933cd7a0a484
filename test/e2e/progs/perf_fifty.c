/* Fifty functions f00..f49 of a few microseconds of busy work each, every call marked as
 * a libprof range, called in turn ITERS times: the workload of the prof diff trials.
 *   perf_fifty ITERS [SLOW PCT [MODE K]]
 * Function SLOW does PCT percent more work (PCT may be 0; SLOW 50: every function does).
 * MODE changes function K:
 * 1 it allocates (and frees) one block per call, 2 it is named "fKK_renamed", 3 it is
 * never called. Prints the total work done, so nothing is optimised away. */
#include "e2e.h"

#define NFN 50

static const char *const names[NFN] = {
	"f00", "f01", "f02", "f03", "f04", "f05", "f06", "f07", "f08", "f09",
	"f10", "f11", "f12", "f13", "f14", "f15", "f16", "f17", "f18", "f19",
	"f20", "f21", "f22", "f23", "f24", "f25", "f26", "f27", "f28", "f29",
	"f30", "f31", "f32", "f33", "f34", "f35", "f36", "f37", "f38", "f39",
	"f40", "f41", "f42", "f43", "f44", "f45", "f46", "f47", "f48", "f49",
};

enum { MODE_NONE, MODE_ALLOC, MODE_RENAME, MODE_DROP };

/* A dependent chain the compiler cannot shorten: cost is proportional to n. */
static unsigned long work(long n, unsigned long x)
{
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

int main(int argc, char **argv)
{
	long iters = arg(argc, argv, 1, 200), slow = arg(argc, argv, 2, -1);
	long pct = arg(argc, argv, 3, 0), mode = arg(argc, argv, 4, MODE_NONE);
	long k = arg(argc, argv, 5, -1);
	long amount[NFN];
	char renamed[32];
	unsigned long x = 1;

	if (!prof_range_push)
		return 0;
	for (int i = 0; i < NFN; i++)
		amount[i] = 2000 + 80 * i; /* about 2.5 to 7 us each */
	for (int i = 0; i < NFN; i++)
		if (i == slow || slow == NFN)
			amount[i] += amount[i] * pct / 100;
	snprintf(renamed, sizeof renamed, "f%02ld_renamed", k);
	for (long it = 0; it < iters; it++) {
		for (int i = 0; i < NFN; i++) {
			if (i == k && mode == MODE_DROP)
				continue;
			prof_range_push(i == k && mode == MODE_RENAME ? renamed : names[i]);
			x = work(amount[i], x);
			if (i == k && mode == MODE_ALLOC) {
				void *p = malloc(64);
				keep(p);
				free(p);
			}
			prof_range_pop();
		}
	}
	printf("work=%lu\n", x & 0xffff);
	return 0;
}
