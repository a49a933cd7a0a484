/* The calling thread's Python stack, read straight from CPython's frame structures (3.11,
 * 3.12, 3.13; x86-64, GIL builds): no GIL, lock, system call or allocation per call. */
#ifndef PROF_PRELOAD_PYFRAMES_H
#define PROF_PRELOAD_PYFRAMES_H

#include <stdint.h>

/* Bit 63 set: a Python frame in a captured stack; the low 32 bits are the string id
 * (prof_intern) of "function (file:line)", function being the code's co_qualname. */
#define PROF_PYFRAME_TAG (1ull << 63)

/* Detects a CPython in the process (dlsym in the global scope). Call at start-up; calling
 * again is cheap (nothing is looked up unless an object was loaded since the last try)
 * and is how a libpython that the program dlopens later is found: call it from a point
 * outside the allocator, such as the dlsym wrapper, never from inside malloc. */
void prof_py_init(void);

/* Writes up to max tagged frames of the calling thread's Python stack, innermost first;
 * returns how many (0 when the thread runs no Python, no string id could be had, or no
 * supported interpreter was found). */
int prof_py_stack(uint64_t *out, int max);
/* The same, and a 64-bit hash of the frames written (of none when it returns 0 or less):
 * two calls that return the same frames give the same hash. */
int prof_py_stack_hashed(uint64_t *out, int max, uint64_t *hash);
/* The count and hash prof_py_stack_hashed would give, when its walk would be the
 * thread's last one given again (inside the GIL release it was made in, gil.h), without
 * writing the frames; -1 otherwise (then walk). */
int prof_py_kept(int max, uint64_t *hash);
/* Asks for the lines the thread's next walk most likely reads (its last walk's frames and
 * code objects): call early in a capture, before other work. Loads nothing. */
void prof_py_prefetch(void);
/* Counting, from count(1) on, the walks given again because their thread was still in
 * the GIL release they were made in (PROFILER_DEBUG=stack). */
void prof_py_count_kept(int on);
uint64_t prof_py_kept_walks(void);
/* The ending thread's frame cache unmapped. */
void prof_py_thread_exit(void);

#endif
