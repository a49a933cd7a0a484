/* A do-nothing interposer of malloc/free: the floor any LD_PRELOAD tool pays (the extra
 * call through the PLT and RTLD_NEXT), to compare libprof's wrapper with.
 *
 * Built with -DRECORD (min_recorder.so): the least an interposer that records each call
 * can do, for the same comparison: one TSC read and a 48-byte record into a per-thread
 * ring, the ring's head published, nothing else (no reader, no checks, no flags). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <x86intrin.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static char boot[4096];
static size_t boot_used;

#ifdef RECORD
struct record {
	uint64_t t0, t1, block, bytes, released;
	uint32_t name;
	uint8_t cat, type, flags, depth;
};
/* 12 MiB, as libprof's default ring; one ring (the benchmark has one thread). Exported,
 * so that the compiler cannot drop stores nothing in this file reads. */
#define RING_EVENTS (1u << 18)
struct record min_recorder_ring[RING_EVENTS];
_Atomic uint64_t min_recorder_head;
static __thread uint64_t head __attribute__((tls_model("initial-exec")));

static inline void put(uint64_t t, void *block, size_t bytes, void *released)
{
	struct record *r = &min_recorder_ring[head & (RING_EVENTS - 1)];
	*r = (struct record){t, t, (uint64_t)(uintptr_t)block, bytes, (uint64_t)(uintptr_t)released,
			     1, 2, 3, block ? 1 : 2, 0};
	__atomic_store_n(&min_recorder_head, ++head, __ATOMIC_RELEASE);
}
#endif

void *malloc(size_t n)
{
	if (!real_malloc) {
		static int resolving;
		if (resolving) { /* dlsym's own allocation */
			void *p = boot + boot_used;
			boot_used += (n + 15) & ~(size_t)15;
			return p;
		}
		resolving = 1;
		real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
		real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	}
#ifdef RECORD
	void *p = real_malloc(n);
	put(__rdtsc(), p, n, 0);
	return p;
#else
	return real_malloc(n);
#endif
}

void free(void *p)
{
	if ((char *)p >= boot && (char *)p < boot + sizeof boot)
		return;
	if (!real_free)
		real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
#ifdef RECORD
	uint64_t t = __rdtsc();
	real_free(p);
	put(t, 0, 0, p);
#else
	real_free(p);
#endif
}
