#ifndef PROF_PRELOAD_ALLOC_H
#define PROF_PRELOAD_ALLOC_H
/* Finds the real allocator (RTLD_NEXT). Safe to call more than once. */
void prof_alloc_resolve(void);
/* For an allocator function's name: libprof's wrapper and the real function it calls.
 * -1 for other names. */
int prof_alloc_targets(const char *name, void **ours, void **real);
#endif
