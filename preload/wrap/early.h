/* Allocations made before libprof's constructor has set up the session (other
 * libraries' constructors run first: libstdc++'s emergency exception pool in every C++
 * program). They are kept in a static buffer (no heap: the allocator is what is being
 * interposed) and moved into the main thread's ring, with their own times, when the
 * session is set up. With PROFILER_STACK an early allocation's stack is its caller alone:
 * the unwinder is loaded only later. */
#ifndef PROF_PRELOAD_EARLY_H
#define PROF_PRELOAD_EARLY_H

#include <stddef.h>
#include <stdint.h>

#include "preload/core/state.h"

/* 1 until the constructor has decided: allocator calls then go to the early buffer. */
extern int prof_early_open;

/* One early allocator call (t0, t1: CLOCK_MONOTONIC ns) from caller_ip. */
void prof_early_record(enum prof_name name, uint64_t t0, uint64_t t1, void *ret, size_t bytes,
		       void *released, void *caller_ip);
/* Closes the buffer; with keep, its events go into t's ring first (a full buffer's
 * overflow as a LOST event). */
void prof_early_flush(struct prof_thread *t, int keep);

#endif
