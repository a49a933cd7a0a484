/* Live-heap analysis of one process image: its allocations and releases in time order
 * (threads interleave in the capture, so they are sorted first), matched by pointer. */
#ifndef PROF_FORMATS_MEMTRACK_H
#define PROF_FORMATS_MEMTRACK_H

#include "formats/model/model.h"

/* Called for every operation that changes the live bytes, in time order. 0 or -1. */
typedef int (*mem_curve_fn)(void *ctx, uint64_t t, uint64_t live);

/* Sorts mi->ops, sets peak, peak_t and live_end, calls fn (when not NULL) for each
 * change, and releases the operations. A release of an unknown pointer changes nothing;
 * an allocation at a pointer still live replaces the old block (its release was lost).
 * 0, or -1 when out of memory. */
int memtrack_analyze(struct mem_image *mi, mem_curve_fn fn, void *ctx);

/* Per call stack: allocations, bytes, bytes live at the peak (after ops[peak_i]) and at
 * the end, into mi->sites. ops sorted. 0 or -1. */
int memsites_analyze(struct mem_image *mi, size_t peak_i);

/* Stable sort by time, releases before allocations at equal times. 0 or -1. */
int memtrack_sort(struct mem_op *ops, size_t n);

#endif
