/* Allocations under a call chain of chosen depth: what recording a stack per allocation
 * costs (libprof's PROFILER_STACK=alloc against heaptrack), and whether both tools agree
 * on the peak and the top call sites.
 *
 * usage: alloc_stacks N D      N malloc/free pairs made D frames below main, from four
 *                              call sites in turn (four distinct stacks per loop, deduped
 *                              like a real program's hot sites); prints ns per allocator
 *                              call (two calls per pair), like alloc_loop
 *        alloc_stacks varied N D   the same, but each pair from 0..31 frames deeper
 *                              in turn (128 distinct stacks cycling: no tool can count
 *                              on having just seen the stack it is asked for)
 *        alloc_stacks peak D   a pattern with known sites, D frames below main (see
 *                              peak_pattern); prints what the program itself holds at
 *                              its peak
 *        alloc_stacks unwind N D   the floor under any libunwind-based tool: N calls of
 *                              unw_backtrace (libunwind loaded and set up as libprof does)
 *                              from the same place as the sites' malloc; prints ns per
 *                              backtrace and the frames it found */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The frames must really exist: no inlining, and work after every call (the empty asm)
 * so no call becomes a tail call or a loop. */
#define KEEP(p) __asm__ volatile("" ::"r"(p) : "memory")

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static void *site_a(void)
{
	void *p = malloc(32);
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void *site_b(void)
{
	void *p = malloc(64);
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void *site_c(void)
{
	void *p = malloc(96);
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void *site_d(void)
{
	void *p = malloc(128);
	KEEP(p);
	return p;
}

static void *(*const sites[4])(void) = {site_a, site_b, site_c, site_d};

__attribute__((noinline)) static void timed_loop(long n)
{
	void *volatile sink;
	for (long i = 0; i < 10000; i++) { /* warm the allocator, the ring, the stack table */
		sink = sites[i & 3]();
		free(sink);
	}
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		sink = sites[i & 3]();
		free(sink);
	}
	double t1 = now_ns();
	printf("%.2f\n", (t1 - t0) / (2.0 * n));
	KEEP(n);
}

__attribute__((noinline)) static void *deeper(int k, long i)
{
	void *p = k ? deeper(k - 1, i) : sites[i & 3]();
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void varied_loop(long n)
{
	void *volatile sink;
	for (long i = 0; i < 10000; i++) {
		sink = deeper((int)((i >> 2) & 31), i);
		free(sink);
	}
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		sink = deeper((int)((i >> 2) & 31), i);
		free(sink);
	}
	double t1 = now_ns();
	printf("%.2f\n", (t1 - t0) / (2.0 * n));
	KEEP(n);
}

#define UNWIND_MAX 68 /* libprof asks for PROFILER_STACK_DEPTH + 4 (its own frames) */

static int (*backtrace_fn)(void **, int);

static int load_libunwind(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	void *as = dlsym(h, "_ULx86_64_local_addr_space");
	int (*policy)(void *, int) = (int (*)(void *, int))dlsym(h, "_ULx86_64_set_caching_policy");
	if (as && policy)
		policy(*(void **)as, 2); /* UNW_CACHE_PER_THREAD, as libprof and heaptrack */
	backtrace_fn = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	return backtrace_fn ? 0 : -1;
}

/* In place of a site's malloc: one frame for the call, like the allocator's wrapper. */
__attribute__((noinline)) static int site_unwind(void **buf)
{
	int got = backtrace_fn(buf, UNWIND_MAX);
	KEEP(buf);
	return got;
}

__attribute__((noinline)) static void unwind_loop(long n)
{
	void *buf[UNWIND_MAX];
	int got = 0;
	for (long i = 0; i < 10000; i++) /* fill libunwind's per-thread cache */
		got = site_unwind(buf);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		got = site_unwind(buf);
	double t1 = now_ns();
	printf("%.2f %d\n", (t1 - t0) / (double)n, got);
	KEEP(n);
}

/* The known sites. By bytes at the peak: keep_big, then temp_big, then leak_small; by
 * number of calls: many_small, then keep_big, then leak_small. */
#define KEEP_N 64
#define KEEP_SIZE 100000
#define TEMP_N 10
#define TEMP_SIZE 200000
#define LEAK_N 16
#define LEAK_SIZE 1000
#define MANY_N 20000
#define MANY_SIZE 48

__attribute__((noinline)) static void *keep_big(void)
{
	void *p = malloc(KEEP_SIZE);
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void *temp_big(void)
{
	void *p = calloc(1, TEMP_SIZE);
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void *leak_small(void)
{
	void *p = malloc(LEAK_SIZE);
	KEEP(p);
	return p;
}

__attribute__((noinline)) static void *many_small(void)
{
	void *p = malloc(MANY_SIZE);
	KEEP(p);
	return p;
}

/* The peak comes while one temp_big block is live on top of every keep_big and
 * leak_small block; many_small's blocks never outlive their call. */
__attribute__((noinline)) static void peak_pattern(long unused)
{
	(void)unused;
	static void *leaks[LEAK_N], *kept[KEEP_N];
	void *volatile sink;
	for (int i = 0; i < LEAK_N; i++)
		leaks[i] = leak_small();
	for (int i = 0; i < KEEP_N; i++)
		kept[i] = keep_big();
	for (int i = 0; i < MANY_N; i++) {
		sink = many_small();
		free(sink);
	}
	for (int i = 0; i < TEMP_N; i++) {
		sink = temp_big();
		free(sink);
	}
	for (int i = 0; i < KEEP_N; i++)
		free(kept[i]);
	printf("program_peak_bytes=%ld\nleaked_bytes=%ld\n",
	       (long)KEEP_N * KEEP_SIZE + TEMP_SIZE + (long)LEAK_N * LEAK_SIZE,
	       (long)LEAK_N * LEAK_SIZE);
	KEEP(leaks); /* after printf: its stdout buffer is then peak_pattern's, not descend's */
}

__attribute__((noinline)) static void descend(int d, void (*leaf)(long), long n)
{
	if (d > 1)
		descend(d - 1, leaf, n);
	else
		leaf(n);
	KEEP(d);
}

int main(int argc, char **argv)
{
	if (argc < 3 || ((!strcmp(argv[1], "unwind") || !strcmp(argv[1], "varied")) && argc < 4)) {
		fprintf(stderr, "usage: alloc_stacks N|peak DEPTH | alloc_stacks unwind|varied N "
				"DEPTH\n");
		return 2;
	}
	if (!strcmp(argv[1], "unwind")) {
		if (load_libunwind()) {
			fprintf(stderr, "alloc_stacks: no libunwind.so.8\n");
			return 1;
		}
		int depth = atoi(argv[3]);
		descend(depth < 1 ? 1 : depth, unwind_loop, atol(argv[2]));
		return 0;
	}
	int depth = atoi(argv[2]);
	if (depth < 1)
		depth = 1;
	if (!strcmp(argv[1], "peak"))
		descend(depth, peak_pattern, 0);
	else if (!strcmp(argv[1], "varied") && argc > 3)
		descend(atoi(argv[3]) < 1 ? 1 : atoi(argv[3]), varied_loop, atol(argv[2]));
	else
		descend(depth, timed_loop, atol(argv[1]));
	return 0;
}
