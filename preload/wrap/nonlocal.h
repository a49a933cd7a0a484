/* longjmp, _longjmp, siglongjmp, __longjmp_chk: a jump out of libprof's own code (from a
 * signal handler) leaves the thread recording (nonlocal.c). */
#ifndef PROF_PRELOAD_NONLOCAL_H
#define PROF_PRELOAD_NONLOCAL_H

/* The real functions, looked up once at start-up. */
void prof_nonlocal_setup(void);

/* Whether f is one of these wrappers: PROFILER_TRACE still records the program's jumps,
 * though they resolve to libprof (got.c traces nothing else of libprof's). */
int prof_nonlocal_is_wrapper(const void *f);

#endif
