/* The true heap figures, kept by the allocator itself: linked into the program ahead of
 * libc, this library is what libprof's RTLD_NEXT finds, so it sees every block libprof
 * passes on, from the process's first allocation. Each block carries its requested size in a
 * header; the live total and its peak are printed at exit (count_pid= true_peak= true_live=).
 * Built by alloc_data.py: cc -shared -fPIC, linked first into the program. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static size_t live, peak;

struct head {
	size_t size;
	size_t offset; /* from the start of the real block to the user's */
};

static void *take(size_t align, size_t n)
{
	if (align < 16)
		align = 16;
	if (n > SIZE_MAX / 2)
		return 0;
	char *raw = align == 16 ? __libc_malloc(n + 16) : __libc_memalign(align, n + align);
	if (!raw)
		return 0;
	char *p = raw + align;
	struct head *h = (struct head *)p - 1;
	h->size = n;
	h->offset = align;
	size_t now = __atomic_add_fetch(&live, n, __ATOMIC_RELAXED);
	for (size_t old = __atomic_load_n(&peak, __ATOMIC_RELAXED); now > old;)
		if (__atomic_compare_exchange_n(&peak, &old, now, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
	return p;
}

void *malloc(size_t n) { return take(16, n); }

void free(void *p)
{
	if (!p)
		return;
	struct head *h = (struct head *)p - 1;
	__atomic_sub_fetch(&live, h->size, __ATOMIC_RELAXED);
	__libc_free((char *)p - h->offset);
}

void *calloc(size_t n, size_t m)
{
	size_t t;
	if (__builtin_mul_overflow(n, m, &t))
		return 0;
	void *p = take(16, t);
	if (p)
		memset(p, 0, t);
	return p;
}

void *realloc(void *old, size_t n)
{
	if (!old)
		return malloc(n);
	if (!n) {
		free(old);
		return 0;
	}
	void *p = malloc(n);
	if (!p)
		return 0;
	size_t was = ((struct head *)old - 1)->size;
	memcpy(p, old, was < n ? was : n);
	free(old);
	return p;
}

void *reallocarray(void *old, size_t n, size_t m)
{
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return 0;
	}
	return realloc(old, t);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = take(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n) { return take(align, n); }
void *memalign(size_t align, size_t n) { return take(align, n); }
void *valloc(size_t n) { return take(4096, n); }
void *pvalloc(size_t n) { return take(4096, (n + 4095) & ~(size_t)4095); }
size_t malloc_usable_size(void *p) { return p ? ((struct head *)p - 1)->size : 0; }

__attribute__((destructor)) static void report(void)
{
	char line[128];
	int n = snprintf(line, sizeof line, "count_pid=%d true_peak=%zu true_live=%zu\n",
			 (int)getpid(), peak, live);
	if (write(1, line, (size_t)n) < 0)
		return;
}
