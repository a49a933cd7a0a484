/* Heap blocks libprof's own code (its unwinder, its helpers) obtained while busy: their
 * releases, wherever they happen later (glibc frees a thread's dynamic TLS blocks from
 * the next pthread_create or join, and its pthread key data at thread exit), are not
 * the program's and must not become events. */
#ifndef PROF_PRELOAD_INTERNAL_BLOCKS_H
#define PROF_PRELOAD_INTERNAL_BLOCKS_H

/* Blocks noted and not yet released: 0 keeps release wrappers on their fast path. */
extern int prof_internal_live;

/* Remembers a block allocated inside libprof (a full table forgets it: its release is
 * then an unmatched free, as before). */
void prof_internal_note(void *p);
/* Whether p was noted; forgets it. */
int prof_internal_forget(void *p);

static inline int prof_internal_release(void *p)
{
	return __builtin_expect(__atomic_load_n(&prof_internal_live, __ATOMIC_RELAXED) != 0, 0) &&
	       p && prof_internal_forget(p);
}

#endif
