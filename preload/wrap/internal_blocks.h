/* Heap blocks libprof's own code (its unwinder, its helpers) obtained while busy: their
 * releases, wherever they happen later (glibc frees a thread's dynamic TLS blocks from
 * the next pthread_create or join, and its pthread key data at thread exit), are not
 * the program's and must not become events. */
#ifndef PROF_PRELOAD_INTERNAL_BLOCKS_H
#define PROF_PRELOAD_INTERNAL_BLOCKS_H

#include <stdint.h>

/* Blocks noted and not yet released: 0 keeps release wrappers on their fast path. */
extern int prof_internal_live;
/* Per hash bucket, the blocks noted there (saturating): a release whose bucket is empty
 * (almost all of them) is decided by one byte that stays in the L1 cache. */
#define PROF_INTERNAL_FILTER 4096
extern uint8_t prof_internal_filter[PROF_INTERNAL_FILTER];

static inline unsigned prof_internal_bucket(const void *p)
{
	return (unsigned)((((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull) >> 52) &
	       (PROF_INTERNAL_FILTER - 1);
}

/* Remembers a block allocated inside libprof (a full table forgets it: its release is
 * then an unmatched free, as before). */
void prof_internal_note(void *p);
/* Whether p was noted; forgets it. */
int prof_internal_forget(void *p);

static inline int prof_internal_release(void *p)
{
	return __builtin_expect(__atomic_load_n(&prof_internal_live, __ATOMIC_RELAXED) != 0, 0) &&
	       __builtin_expect(__atomic_load_n(&prof_internal_filter[prof_internal_bucket(p)],
						__ATOMIC_RELAXED) != 0, 0) &&
	       prof_internal_forget(p);
}

#endif
