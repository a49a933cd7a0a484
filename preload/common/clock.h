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

/* The process's CPU time (user + system, every thread; a forked child's from 0). */
static inline uint64_t prof_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
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

/* Tick-to-nanosecond mapping, kept by the collector. A pure function of the tick: the
 * same tick gives the same nanoseconds whenever it is drained, and later ticks never
 * give earlier nanoseconds. Each update (a fresh pair read every 100 ms) begins a
 * segment where the previous one is at that tick, with a slope that closes the gap to
 * the pair over the next period, as NTP slews a clock. Re-anchoring at each pair
 * instead moved the timeline by the pair's noise (~10 ns here) between drain passes:
 * a thread's free could land before the malloc just ahead of it. */
#define PROF_CLOCK_SEGMENTS 256 /* ~25 s of updates: older ticks use the oldest */
struct prof_clock_segment {
	uint64_t tsc, ns; /* where the segment begins */
	uint64_t mult;    /* nanoseconds per tick << 32: a multiply, not a division or a
			   * double, per event drained */
};
struct prof_clock_map {
	enum prof_clock_kind kind;
	uint64_t first_tsc, first_ns; /* the first pair: the rate's baseline */
	uint32_t nseg, newest;        /* segments kept (a ring), the newest's index */
	struct prof_clock_segment seg[PROF_CLOCK_SEGMENTS];
};

/* Reads a (tsc, ns) pair with the smallest gap between two TSC reads. */
void prof_clock_pair(uint64_t *tsc, uint64_t *ns);
/* first_tsc/first_ns: a pair read earlier (when the session was made), so the slope
 * has a baseline at once; the call waits only while that baseline is under 2 ms. */
void prof_clock_map_init(struct prof_clock_map *m, enum prof_clock_kind kind,
			 uint64_t first_tsc, uint64_t first_ns);
void prof_clock_map_update(struct prof_clock_map *m);
/* The segment a tick falls in (the oldest for ticks before it). */
const struct prof_clock_segment *prof_clock_segment_of(const struct prof_clock_map *m,
						       uint64_t t);

static inline uint64_t prof_clock_segment_ns(const struct prof_clock_segment *g, uint64_t t)
{
	if (__builtin_expect(t >= g->tsc, 1))
		return g->ns + (uint64_t)(((unsigned __int128)(t - g->tsc) * g->mult) >> 32);
	/* before the oldest segment kept: extended back */
	return g->ns - (uint64_t)(((unsigned __int128)(g->tsc - t) * g->mult) >> 32);
}

static inline uint64_t prof_clock_to_ns(const struct prof_clock_map *m, uint64_t t)
{
	if (m->kind != PROF_CLOCK_TSC)
		return t;
	const struct prof_clock_segment *g = &m->seg[m->newest];
	if (__builtin_expect((int64_t)(t - g->tsc) < 0, 0))
		g = prof_clock_segment_of(m, t);
	return prof_clock_segment_ns(g, t);
}

#endif
