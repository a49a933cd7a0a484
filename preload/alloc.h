#ifndef PROF_PRELOAD_ALLOC_H
#define PROF_PRELOAD_ALLOC_H
/* Finds the real allocator (RTLD_NEXT). Safe to call more than once. */
void prof_alloc_resolve(void);
#endif
