/* Allocations made before libprof's constructor has set up the session (other
 * libraries' constructors run first: libstdc++'s emergency exception pool in every C++
 * program, libmxnet's 72,000 allocations). They are kept in a buffer that grows by
 * mmap'ed chunks (never the heap: the allocator is what is being interposed) and moved
 * into the main thread's ring, with their own times, when the session is set up. With
 * PROFILER_STACK an early allocation's stack is its caller alone: the unwinder is loaded
 * only later. */
#ifndef PROF_PRELOAD_EARLY_H
#define PROF_PRELOAD_EARLY_H

#include <stddef.h>
#include <stdint.h>

#include "preload/core/state.h"

/* Early events the flush dropped because the collector stopped taking them (said at
 * exit when the collector is gone: no output will). */
extern uint64_t prof_early_given_up;

/* 1 until the constructor has decided: allocator calls then go to the early buffer. */
extern int prof_early_open;

/* One early allocator call (t0, t1: CLOCK_MONOTONIC ns) from caller_ip: 1 when the
 * buffer took (or counted) it, 0 when the flush had closed it (the caller records it). */
int prof_early_record(enum prof_name name, uint64_t t0, uint64_t t1, void *ret, size_t bytes,
		       void *released, void *caller_ip);
/* Closes the buffer; with keep, its events go into t's ring first, waiting for the
 * collector to make room when they are more than the ring holds (what cannot be kept:
 * one LOST event, b = PROF_LOST_STARTUP). Gives the buffer's memory back. */
void prof_early_flush(struct prof_thread *t, int keep);

#endif
