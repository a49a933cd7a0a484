/* Live-heap analysis of one memory domain (a process image's heap, or a device's memory):
 * its allocations and releases in time order, matched by pointer, as they are read.
 *
 * The capture holds each thread's operations in time order, but threads interleave by
 * drain pass, so operations are held per thread and merged: the oldest is applied once
 * the capture says nothing older can come (a CAP_DRAINED record: the collector writes one
 * every few milliseconds, 100 ms behind its drain), else once it is MEMTRACK_WINDOW_NS
 * older than the newest one seen (captures made before CAP_DRAINED; devices' memory,
 * whose CUPTI records come late), or when MEMTRACK_MAX_HELD are waiting (128 MiB of them;
 * at 2 M operations per second a window's worth). Memory is then bounded by that many
 * operations plus the live blocks, whatever the run's length; with CAP_DRAINED, by a
 * tenth of a second of them (holding seconds of fresh memory was a third of the tables
 * child's CPU on a short run). An operation that arrives after a later one was applied
 * — its writer preempted between its stamp and its publishing for longer than
 * CAP_DRAINED's margin, its thread's events drained more than the window late, or a
 * process writing more than MEMTRACK_MAX_HELD operations between two drains of another
 * of its threads — is applied at once, out of order, and counted in mem_image.late,
 * which the tables report. */
#ifndef PROF_FORMATS_MEMTRACK_H
#define PROF_FORMATS_MEMTRACK_H

#include "formats/model/model.h"

#define MEMTRACK_WINDOW_NS 2000000000ull
#define MEMTRACK_MAX_HELD ((4u << 20) - 1)

/* One operation of thread (any id unique in the domain), keeping a curve of live bytes
 * when curve is set. 0, or -1 when out of memory. */
int memtrack_push(struct mem_image *mi, uint32_t thread, const struct mem_op *op, int curve);

/* Applies the operations held that are older than before: the capture says every
 * operation before it was written already (CAP_DRAINED). 0, or -1 when out of memory. */
int memtrack_drained(struct mem_image *mi, uint64_t before);

/* Operations held, not applied yet. */
size_t memtrack_held(const struct mem_image *mi);

/* Applies what is held; sets peak, peak_t, live_end, frees_unmatched and the sites' peak
 * and end bytes; frees the stream (a second call does nothing). A release of an unknown
 * pointer changes nothing; an allocation at a pointer still live replaces the old block
 * (its release was lost). 0, or -1 when out of memory. */
int memtrack_finish(struct mem_image *mi);

/* The stream's memory, for an image dropped unfinished. */
void memtrack_free(struct mem_image *mi);

#endif
