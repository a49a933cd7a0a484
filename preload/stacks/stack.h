/* Call stacks on events (PROFILER_STACK), deduplicated into the process segment. */
#ifndef PROF_PRELOAD_STACK_H
#define PROF_PRELOAD_STACK_H

#include <stdint.h>

#include "preload/common/shm_layout.h"

extern int prof_stack_alloc_on;        /* stacks on allocations */
extern int prof_stack_calls_on;        /* and on traced calls */
extern uint64_t prof_stack_min_ticks;  /* traced calls shorter than this go without */

/* Applies prof_cfg's stack settings (loads libunwind when stacks are wanted). */
void prof_stack_setup(void);
/* The calling thread's stack id (0: none), from the innermost frame outside libprof:
 * the one that returns to caller_ip with its stack pointer at caller_sp (the interposed
 * function's CFA) and its %rbp at caller_bp (0: not known), recognised without
 * unwinding when taken from there before, walked by frame pointers through code that
 * keeps them. */
uint32_t prof_stack_capture(uint64_t caller_ip, uint64_t caller_sp, uint64_t caller_bp);
/* The id of a stack of given return addresses (innermost first; 0: none). */
uint32_t prof_stack_of(const uint64_t *frames, unsigned n);
void prof_stack_reset(void);
/* The ending thread's remembered stacks unmapped; it takes stacks without them after. */
void prof_stack_thread_exit(void);
/* PROFILER_DEBUG=stack: one line saying how this process's stacks were found. */
void prof_stack_say_counts(void);
/* Where a forked child's copy of the parent's stack area ends: before the first entry
 * another thread was still writing (read through the parent's chunks, still mapped). */
uint64_t prof_stack_complete_end(const struct prof_proc_shm *from);
/* The child's area (copied by prof_area_inherit) ends at end. */
void prof_stack_inherit(struct prof_proc_shm *to, uint64_t end);

/* trace.c: traced frames' real return addresses put back while the unwinder walks the
 * stack, and replaced again after. */
void prof_trace_unshadow(void);
void prof_trace_reshadow(void);

#endif
