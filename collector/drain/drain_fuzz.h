/* The collector's drain of process segments already mapped, for the shared-memory fuzzer
 * (test/fuzz): the same code as a session's, without /dev/shm and without a live
 * process. A segment is taken over (unmapped with munmap when finished). */
#ifndef PROF_COLLECTOR_DRAIN_FUZZ_H
#define PROF_COLLECTOR_DRAIN_FUZZ_H

#include <stddef.h>

#include "formats/capture/capture.h"
#include "collector/drain/collector.h"

struct collector;
struct collector *collector_fuzz_new(struct collector_options *o, struct cap_writer *w);
void collector_fuzz_add(struct collector *c, struct prof_proc_shm *shm, size_t size);
void collector_fuzz_drain(struct collector *c); /* one pass over every segment */
void collector_fuzz_end(struct collector *c);   /* finishes every process; frees c */

#endif
