/* The session clock as the hot path reads it: raw TSC ticks where the TSC is invariant,
 * CLOCK_MONOTONIC nanoseconds otherwise. The collector maps ticks to nanoseconds. */
#ifndef PROF_PRELOAD_CLOCK_H
#define PROF_PRELOAD_CLOCK_H

#include <stdint.h>
#include <time.h>
#include <x86intrin.h>

#include "preload/common/shm_layout.h"

extern int prof_clock_is_tsc;

static inline uint64_t prof_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t prof_now(void)
{
	if (__builtin_expect(prof_clock_is_tsc, 1))
		return __rdtsc();
	return prof_mono_ns();
}

/* Picks the clock for a new session: TSC when the CPU says it is invariant and the
 * kernel uses it as its clocksource; PROFILER_CLOCK=tsc|mono overrides. */
enum prof_clock_kind prof_clock_detect(const char *override);
void prof_clock_use(enum prof_clock_kind kind);

/* Tick-to-nanosecond mapping, kept by the collector: anchored at the latest pair read,
 * with the slope measured over the longest baseline so far. */
struct prof_clock_map {
	enum prof_clock_kind kind;
	uint64_t first_tsc, first_ns; /* the first pair: the slope's baseline */
	uint64_t anchor_tsc, anchor_ns;
	double ns_per_tick;
};

/* Reads a (tsc, ns) pair with the smallest gap between two TSC reads. */
void prof_clock_pair(uint64_t *tsc, uint64_t *ns);
/* first_tsc/first_ns: a pair read earlier (when the session was made), so the slope
 * has a baseline at once; the call waits only while that baseline is under 2 ms. */
void prof_clock_map_init(struct prof_clock_map *m, enum prof_clock_kind kind,
			 uint64_t first_tsc, uint64_t first_ns);
void prof_clock_map_update(struct prof_clock_map *m);
static inline uint64_t prof_clock_to_ns(const struct prof_clock_map *m, uint64_t t)
{
	if (m->kind != PROF_CLOCK_TSC)
		return t;
	double d = ((double)(int64_t)(t - m->anchor_tsc)) * m->ns_per_tick;
	return m->anchor_ns + (int64_t)d;
}

#endif
