/* The allocator family, interposed. Each call becomes one complete event with the
 * requested size and the block it returned or released.
 *
 * dlsym() itself allocates (calloc) before the real functions are known: those early
 * requests are served from a small static arena whose blocks are never freed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>

#include "preload/wrap/alloc.h"
#include "preload/wrap/early.h"
#include "preload/wrap/internal_blocks.h"
#include "preload/stacks/stack.h"
#include "preload/core/state.h"

#define EXPORT __attribute__((visibility("default")))

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

static _Alignas(64) char arena[64 << 10];
static size_t arena_used;
static int resolving;

static int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

static void *arena_alloc(size_t n, size_t align)
{
	size_t at = (__atomic_load_n(&arena_used, __ATOMIC_RELAXED) + align - 1) & ~(align - 1);
	for (;;) {
		size_t cur = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
		at = (cur + align - 1) & ~(align - 1);
		if (at + n > sizeof arena)
			return 0;
		if (__atomic_compare_exchange_n(&arena_used, &cur, at + n, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return arena + at; /* static storage: already zeroed */
	}
}

#define RESOLVE(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)

void prof_alloc_resolve(void)
{
	if (real_malloc)
		return;
	resolving = 1;
	RESOLVE(free);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(reallocarray);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	void *(*m)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
	__atomic_store_n(&real_malloc, m, __ATOMIC_RELEASE);
}

static inline int ready(void)
{
	if (likely(real_malloc != 0))
		return 1;
	if (resolving)
		return 0;
	prof_alloc_resolve();
	return real_malloc != 0;
}

/* busy while a wrapper runs the real function: allocator calls the real one makes (glibc's
 * reallocarray calls realloc) are part of that call, not libprof's own blocks. */
#define BUSY_REAL 0x100

/* Every wrapper: pass through unless recording and not already inside libprof. */
#define TRACED(t) (likely(__atomic_load_n(&prof_memory_on, __ATOMIC_RELAXED)) && !(t)->busy)

/* Not traced, and inside libprof (its block is noted: its release is no event) or
 * before the session is set up (the early buffer): the rare case, out of line. */
#define SPECIAL(t) unlikely((t)->busy | __atomic_load_n(&prof_early_open, __ATOMIC_RELAXED))

/* One clock read per call unless PROFILER_ALLOC_TIMING asks for durations: the second
 * read is half of what recording a call costs, and the memory tables, the peaks and the
 * trace's memory tracks need only when a call happened. Which instant matters when
 * threads pass a block between them: a release is stamped before the real free gives
 * the block up, an allocation after the real malloc got it, so a block freed on one
 * thread and handed out again on another is always released first in time (stamped
 * at its start, malloc would seem to take a block still live). realloc does both, so
 * it always reads the clock twice. */
#define TIMED() unlikely(__atomic_load_n(&prof_alloc_timed, __ATOMIC_RELAXED))
/* an allocation's start: read only when timed (0 otherwise; see ALLOC_T0) */
#define ALLOC_START() (TIMED() ? prof_now() : 0)
#define ALLOC_T0(start, t1) ((start) ? (start) : (t1))
/* a release's end: its start unless timed */
#define FREE_END(t0) (TIMED() ? prof_now() : (t0))

/* The caller's return address, stack pointer (CFA) and frame pointer (saved by the
 * wrapper's frame, which __builtin_frame_address makes it keep): where its stack begins. */
#define CALLER __builtin_return_address(0), __builtin_dwarf_cfa(), __builtin_frame_address(0)

/* An allocation while stacks are on: its stack captured and written with it. Out of line:
 * the wrappers' common path stays a few stores. */
__attribute__((noinline)) static void record_stacked(struct prof_thread *t, enum prof_name name,
						     uint8_t flags, uint64_t t0, uint64_t t1,
						     void *ret, size_t bytes, void *released,
						     void *caller_ip, void *caller_sp, void *frame)
{
	/* where the block was asked for; releases need none (matched by pointer). What the
	 * unwinder allocates is libprof's. */
	t->busy = 1;
	uint32_t id = prof_stack_capture((uintptr_t)caller_ip, (uintptr_t)caller_sp,
					 *(const uint64_t *)frame);
	if (id && !released) {
		prof_emit(t, PROF_CAT_MEMORY, PROF_EV_STACKED_ALLOC, flags, prof_names[name],
			  t->depth, t0, t1, (uint64_t)(uintptr_t)ret, bytes, id);
		return;
	}
	if (id)
		prof_emit(t, PROF_CAT_MEMORY, PROF_EV_STACK, 0, 0, t->depth, t0, t0, id, 0, 0);
	prof_emit(t, PROF_CAT_MEMORY, PROF_EV_COMPLETE, flags, prof_names[name], t->depth, t0, t1,
		  (uint64_t)(uintptr_t)ret, bytes, (uint64_t)(uintptr_t)released);
}

/* Inlined into each wrapper: a call out of line with the stack's three arguments on the
 * stack cost a few ns of a paced allocator call's ~26. */
static inline __attribute__((always_inline)) void
record(struct prof_thread *t, enum prof_name name, uint64_t t0, uint64_t t1, void *ret,
       size_t bytes, void *released, void *caller_ip, void *caller_sp, void *frame)
{
	uint8_t flags = (ret ? PROF_EVF_ALLOCS : 0) | (released ? PROF_EVF_FREES : 0);
	/* a new block where libprof's own was: that one was freed behind libprof's back (a
	 * DEEPBIND library's free): forgotten, or this block's free would be dropped */
	if (ret)
		prof_internal_release(ret);
	if (unlikely(__atomic_load_n(&prof_stack_alloc_on, __ATOMIC_RELAXED)) && ret) {
		record_stacked(t, name, flags, t0, t1, ret, bytes, released, caller_ip, caller_sp,
			       frame);
		return;
	}
	prof_emit(t, PROF_CAT_MEMORY, PROF_EV_COMPLETE, flags, prof_names[name], t->depth, t0, t1,
		  (uint64_t)(uintptr_t)ret, bytes, (uint64_t)(uintptr_t)released);
}

/* An untraced call that is SPECIAL: ret from the real call timed t0..t1. */
static void *special(struct prof_thread *t, enum prof_name name, uint64_t t0, void *ret,
		     size_t bytes, void *released, void *ip)
{
	if (t->busy) {
		if (ret && t->busy != BUSY_REAL)
			prof_internal_note(ret);
	} else if (__atomic_load_n(&prof_early_open, __ATOMIC_ACQUIRE)) {
		uint64_t t1 = prof_mono_ns();
		if (!prof_early_record(name, t0, t1, ret, bytes, released, ip) &&
		    __atomic_load_n(&prof_memory_on, __ATOMIC_ACQUIRE)) {
			/* the flush closed the buffer meanwhile: into this thread's ring,
			 * as the session's calls go (its times already ns) */
			uint8_t flags = PROF_EVF_NS | (ret ? PROF_EVF_ALLOCS : 0) |
					(released ? PROF_EVF_FREES : 0);
			prof_emit(t, PROF_CAT_MEMORY, PROF_EV_COMPLETE, flags, prof_names[name],
				  t->depth, t0, TIMED() ? t1 : t0, (uint64_t)(uintptr_t)ret, bytes,
				  (uint64_t)(uintptr_t)released);
		}
	}
	return ret;
}

/* The early buffer wants the call's start time; inside libprof none is read. */
static inline uint64_t special_t0(struct prof_thread *t)
{
	return t->busy ? 0 : prof_mono_ns();
}

__attribute__((noinline)) static void *malloc_special(struct prof_thread *t, size_t n,
							void *ip)
{
	uint64_t t0 = special_t0(t);
	return special(t, NAME_MALLOC, t0, real_malloc(n), n, 0, ip);
}

__attribute__((noinline)) static void free_special(struct prof_thread *t, void *p)
{
	uint64_t t0 = special_t0(t);
	real_free(p);
	if (!t->busy && p)
		special(t, NAME_FREE, t0, 0, 0, p, 0);
}

__attribute__((noinline)) static void *calloc_special(struct prof_thread *t, size_t n,
						      size_t size, void *ip)
{
	uint64_t t0 = special_t0(t);
	size_t total = 0;
	__builtin_mul_overflow(n, size, &total);
	return special(t, NAME_CALLOC, t0, real_calloc(n, size), total, 0, ip);
}

__attribute__((noinline)) static void *realloc_special(struct prof_thread *t,
						       enum prof_name name, void *old, size_t n,
						       int old_internal, void *ip)
{
	uint64_t t0 = special_t0(t);
	void *p = real_realloc(old, n);
	if (old_internal && !p && n)
		prof_internal_note(old); /* still there */
	void *released = (p || n == 0) && !old_internal ? old : 0;
	return special(t, name, t0, p, n, released, ip);
}

__attribute__((noinline)) static void *aligned_special(struct prof_thread *t,
						       enum prof_name name, uint64_t t0,
						       void *p, size_t n, void *ip)
{
	return special(t, name, t0, p, n, 0, ip);
}

EXPORT void *malloc(size_t n)
{
	if (unlikely(!ready()))
		return arena_alloc(n, 16);
	struct prof_thread *t = &prof_thr;
	if (!TRACED(t)) {
		if (SPECIAL(t))
			return malloc_special(t, n, __builtin_return_address(0));
		return real_malloc(n);
	}
	t->busy = BUSY_REAL;
	uint64_t start = ALLOC_START();
	void *p = real_malloc(n);
	uint64_t t1 = prof_now();
	record(t, NAME_MALLOC, ALLOC_T0(start, t1), t1, p, n, 0, CALLER);
	t->busy = 0;
	return p;
}

EXPORT void free(void *p)
{
	if (unlikely(in_arena(p)))
		return;
	if (unlikely(!ready()))
		return;
	if (prof_internal_release(p)) {
		real_free(p);
		return;
	}
	struct prof_thread *t = &prof_thr;
	if (!TRACED(t)) {
		if (SPECIAL(t))
			free_special(t, p);
		else
			real_free(p);
		return;
	}
	/* free(NULL) in a thread's teardown, after its exit hook gave its ring back (glibc's
	 * own clean-up makes a few per thread): a no-op, not recorded, rather than a second
	 * ring for the thread held until the collector sees it gone */
	if (unlikely(!p && t->exiting && !t->w.slot))
		return;
	t->busy = BUSY_REAL;
	uint64_t t0 = prof_now();
	real_free(p);
	uint64_t t1 = FREE_END(t0);
	record(t, NAME_FREE, t0, t1, 0, 0, p, CALLER);
	t->busy = 0;
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (unlikely(!ready())) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total))
			return 0;
		return arena_alloc(total, 16);
	}
	struct prof_thread *t = &prof_thr;
	if (!TRACED(t)) {
		if (SPECIAL(t))
			return calloc_special(t, n, size, __builtin_return_address(0));
		return real_calloc(n, size);
	}
	t->busy = BUSY_REAL;
	uint64_t start = ALLOC_START();
	void *p = real_calloc(n, size);
	uint64_t t1 = prof_now();
	size_t total = 0;
	__builtin_mul_overflow(n, size, &total);
	record(t, NAME_CALLOC, ALLOC_T0(start, t1), t1, p, total, 0, CALLER);
	t->busy = 0;
	return p;
}

/* realloc of a block from the start-up arena: move it to the real heap. */
static void *realloc_from_arena(void *old, size_t n)
{
	void *p = real_malloc(n);
	if (p && old) {
		size_t avail = (size_t)(arena + sizeof arena - (char *)old);
		memcpy(p, old, n < avail ? n : avail);
	}
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	if (unlikely(!ready())) {
		void *p = arena_alloc(n, 16);
		if (p && old)
			memcpy(p, old, n);
		return p;
	}
	if (unlikely(in_arena(old)))
		return realloc_from_arena(old, n);
	/* libprof's own block (the environment it set) resized by the program */
	int old_internal = prof_internal_release(old);
	struct prof_thread *t = &prof_thr;
	if (!TRACED(t)) {
		if (SPECIAL(t) || old_internal)
			return realloc_special(t, NAME_REALLOC, old, n, old_internal,
					       __builtin_return_address(0));
		return real_realloc(old, n);
	}
	t->busy = BUSY_REAL;
	uint64_t t0 = prof_now();
	void *p = real_realloc(old, n);
	uint64_t t1 = prof_now(); /* releases at t0, allocates at t1 */
	if (old_internal && !p && n)
		prof_internal_note(old);
	/* the old block is gone when a new one came back, or when n == 0 freed it */
	void *released = (p || n == 0) && !old_internal ? old : 0;
	record(t, NAME_REALLOC, t0, t1, p, n, released, CALLER);
	t->busy = 0;
	return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	if (unlikely(!ready()) || unlikely(in_arena(old))) {
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return 0;
		}
		return realloc(old, total);
	}
	int old_internal = prof_internal_release(old);
	struct prof_thread *t = &prof_thr;
	if (!TRACED(t) && !SPECIAL(t) && !old_internal)
		return real_reallocarray(old, n, size);
	if (__builtin_mul_overflow(n, size, &total)) {
		if (old_internal)
			prof_internal_note(old);
		errno = ENOMEM;
		return 0;
	}
	if (!TRACED(t))
		return realloc_special(t, NAME_REALLOCARRAY, old, total, old_internal,
				       __builtin_return_address(0));
	t->busy = BUSY_REAL;
	uint64_t t0 = prof_now();
	void *p = real_reallocarray(old, n, size);
	uint64_t t1 = prof_now(); /* releases at t0, allocates at t1 */
	if (old_internal && !p && total)
		prof_internal_note(old);
	void *released = (p || total == 0) && !old_internal ? old : 0;
	record(t, NAME_REALLOCARRAY, t0, t1, p, total, released, CALLER);
	t->busy = 0;
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (unlikely(!ready())) {
		void *p = arena_alloc(n, align < 16 ? 16 : align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	struct prof_thread *t = &prof_thr;
	if (!TRACED(t)) {
		if (SPECIAL(t)) {
			uint64_t t0 = special_t0(t);
			int rc = real_posix_memalign(out, align, n);
			aligned_special(t, NAME_POSIX_MEMALIGN, t0, rc == 0 ? *out : 0, n,
					__builtin_return_address(0));
			return rc;
		}
		return real_posix_memalign(out, align, n);
	}
	t->busy = BUSY_REAL;
	uint64_t start = ALLOC_START();
	int rc = real_posix_memalign(out, align, n);
	uint64_t t1 = prof_now();
	record(t, NAME_POSIX_MEMALIGN, ALLOC_T0(start, t1), t1, rc == 0 ? *out : 0, n, 0,
	       CALLER);
	t->busy = 0;
	return rc;
}

/* aligned_alloc, memalign, valloc, pvalloc share one shape. */
#define ALIGNED_WRAPPER(fn, NAME, params, args, size_expr, boot_align)                      \
	EXPORT void *fn params                                                               \
	{                                                                                    \
		if (unlikely(!ready()))                                                      \
			return arena_alloc(size_expr, boot_align);                           \
		struct prof_thread *t = &prof_thr;                                           \
		if (!TRACED(t)) {                                                            \
			if (SPECIAL(t)) {                                                    \
				uint64_t t0 = special_t0(t);                                 \
				return aligned_special(t, NAME, t0, real_##fn args,         \
						       size_expr, __builtin_return_address(0)); \
			}                                                                    \
			return real_##fn args;                                               \
		}                                                                            \
		t->busy = BUSY_REAL;                                                                 \
		uint64_t start = ALLOC_START();                                              \
		void *p = real_##fn args;                                                    \
		uint64_t t1 = prof_now();                                                    \
		record(t, NAME, ALLOC_T0(start, t1), t1, p, size_expr, 0, CALLER);           \
		t->busy = 0;                                                                 \
		return p;                                                                    \
	}

ALIGNED_WRAPPER(aligned_alloc, NAME_ALIGNED_ALLOC, (size_t align, size_t n), (align, n), n,
		align < 16 ? 16 : align)
ALIGNED_WRAPPER(memalign, NAME_MEMALIGN, (size_t align, size_t n), (align, n), n,
		align < 16 ? 16 : align)
ALIGNED_WRAPPER(valloc, NAME_VALLOC, (size_t n), (n), n, 4096)
ALIGNED_WRAPPER(pvalloc, NAME_PVALLOC, (size_t n), (n), n, 4096)

int prof_alloc_targets(const char *name, void **ours, void **real)
{
#define TARGET(fn)                                                                           \
	if (!strcmp(name, #fn)) {                                                            \
		*ours = (void *)fn;                                                          \
		*real = (void *)real_##fn;                                                   \
		return 0;                                                                    \
	}
	if (name[0] == 'm' || name[0] == 'f' || name[0] == 'c' || name[0] == 'r' ||
	    name[0] == 'p' || name[0] == 'a' || name[0] == 'v') {
		TARGET(malloc)
		TARGET(free)
		TARGET(calloc)
		TARGET(realloc)
		TARGET(reallocarray)
		TARGET(posix_memalign)
		TARGET(aligned_alloc)
		TARGET(memalign)
		TARGET(valloc)
		TARGET(pvalloc)
	}
#undef TARGET
	return -1;
}
