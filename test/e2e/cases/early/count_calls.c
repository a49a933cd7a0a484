/* A counting preload (LD_PRELOAD=libcount_calls.so, without libprof): counts the
 * program's malloc, calloc, realloc and free calls from the process's first, through
 * glibc's own functions (no dlsym: it allocates). A program that finds
 * count_calls_say (dlsym) prints them at the end of its main (native_malloc=
 * native_calloc= native_realloc= native_free=): what a profiled run's memory table must
 * reach (the calls made at exit, after libprof's destructor, are no part of it). */
#include <stddef.h>
#include <stdio.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static unsigned long n_malloc, n_calloc, n_realloc, n_free;

void *malloc(size_t n)
{
	__atomic_fetch_add(&n_malloc, 1, __ATOMIC_RELAXED);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	__atomic_fetch_add(&n_calloc, 1, __ATOMIC_RELAXED);
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	__atomic_fetch_add(&n_realloc, 1, __ATOMIC_RELAXED);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		__atomic_fetch_add(&n_free, 1, __ATOMIC_RELAXED);
	__libc_free(p);
}

void count_calls_say(void)
{
	/* counted so far: printing allocates stdout's buffer, which is not the program's */
	unsigned long m = n_malloc, c = n_calloc, r = n_realloc, f = n_free;
	printf("native_malloc=%lu\nnative_calloc=%lu\nnative_realloc=%lu\nnative_free=%lu\n", m,
	       c, r, f);
}
