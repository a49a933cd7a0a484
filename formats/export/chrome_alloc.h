/* Allocator calls in the Chrome trace (PROFILER_TRACE_ALLOC). By default the timeline
 * shows the calls that matter — an allocation of at least CHROME_ALLOC_LARGE bytes and
 * the release of that block, a failed allocation, any allocator call that took at least
 * CHROME_ALLOC_SLOW_NS — and the rest as counter tracks: the live heap bytes
 * (chrome_heap.c) and "allocator calls/s" per process. "all": every call, as the tables
 * and the capture always have them. */
#ifndef PROF_FORMATS_CHROME_ALLOC_H
#define PROF_FORMATS_CHROME_ALLOC_H

#include <stdint.h>

#include "formats/util/u64map.h"

#define CHROME_ALLOC_LARGE (1ull << 20)
#define CHROME_ALLOC_SLOW_NS 20000ull
#define CHROME_RATE_BUCKETS 1024

struct prof_event;
struct chrome;

/* Allocator calls per time bucket of one process image (the width doubles as the run
 * goes on, pairs merging: bounded). */
struct alloc_rate {
	uint64_t origin, width; /* ns; width 0: no call yet */
	uint32_t used;          /* buckets up to the last one with calls */
	uint32_t cur;           /* the bucket counted last, from cur_from to cur_to (ns): */
	uint64_t cur_from, cur_to; /* the next call is mostly there (no division) */
	uint64_t counts[CHROME_RATE_BUCKETS];
};

struct alloc_view {
	int all;                 /* PROFILER_TRACE_ALLOC=all */
	struct u64map large[2];  /* per pass: large blocks shown, for their releases */
	uint64_t hidden;         /* pass 2: allocator calls left to the counter tracks */
	struct alloc_rate **rate; /* per image of the pass-1 model (NULL: no call) */
	size_t nrate;
};

void alloc_view_init(struct alloc_view *v, int all);
void alloc_view_free(struct alloc_view *v);
/* Whether a memory-category event is shown in pass (0: plan, 1: write); pass 0 also
 * counts it for its image's rate, whose buckets start at origin (the trace's). 1, 0, or
 * -1 when out of memory. */
int alloc_view_shown(struct alloc_view *v, int pass, uint32_t image, const struct prof_event *e,
		     uint64_t origin);
/* Points the rate tracks will write (for the size rule's budget). */
uint64_t alloc_view_points(const struct alloc_view *v);
/* The "allocator calls/s" counter events. */
void chrome_write_alloc_rate(struct chrome *c);

#endif
