/* Call stacks on events (PROFILER_STACK): raw return addresses from libunwind, plus the
 * innermost Python frames where the stack enters CPython's eval loop, deduplicated
 * into the process segment's stack area. Symbolized by the collector, never here.
 *
 * libunwind is loaded with dlopen RTLD_LOCAL only when stacks are asked for: linked in,
 * its _Unwind_* exports would join the global scope beside libgcc_s's and C++ programs'
 * exceptions could bind to either. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "preload/wrap/dl.h"
#include "preload/stacks/pyframes.h"
#include "preload/stacks/stack.h"
#include "preload/core/state.h"

#define TABLE_BITS 19 /* 524,288 distinct stacks per process */
#define TABLE_SIZE (1u << TABLE_BITS)
#define MAX_FRAMES PROF_MAX_STACK_FRAMES
#define UNW_CACHE_PER_THREAD 2

int prof_stack_alloc_on;
int prof_stack_calls_on;
uint64_t prof_stack_min_ticks;

static int (*unw_backtrace_fn)(void **buf, int size);
static unsigned depth_max = PROF_DEFAULT_STACK_DEPTH;
static uintptr_t eval_lo, eval_hi; /* CPython's _PyEval_EvalFrameDefault */
static uintptr_t self_lo, self_hi;  /* libprof.so's own code: left out of stacks */

/* (hash << 32) | id; 0 is empty. Private, like the string table: a forked child keeps
 * it and gets a copy of the parent's stack area. */
static _Atomic uint64_t table[TABLE_SIZE];

static int load_libunwind(void)
{
	if (unw_backtrace_fn)
		return 0;
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		prof_warn("PROFILER_STACK: cannot load libunwind.so.8 (%s); no stacks "
			  "(install libunwind8)", dlerror());
		return -1;
	}
	void *as = prof_real_dlsym(h, "_ULx86_64_local_addr_space");
	int (*policy)(void *, int) = (int (*)(void *, int))prof_real_dlsym(
		h, "_ULx86_64_set_caching_policy");
	if (as && policy)
		policy(*(void **)as, UNW_CACHE_PER_THREAD); /* no lock shared by threads */
	unw_backtrace_fn = (int (*)(void **, int))prof_real_dlsym(h, "unw_backtrace");
	if (!unw_backtrace_fn) {
		prof_warn("PROFILER_STACK: libunwind.so.8 has no unw_backtrace; no stacks");
		return -1;
	}
	return 0;
}

/* Where native frames stop and Python frames take over. */
static void find_eval_loop(void)
{
	void *f = prof_real_dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = 0;
	if (f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
		eval_lo = (uintptr_t)f;
		eval_hi = (uintptr_t)f + sym->st_size;
	}
}

static int find_self(struct dl_phdr_info *info, size_t size, void *base)
{
	(void)size;
	if ((void *)info->dlpi_addr != base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (!self_lo || lo < self_lo)
			self_lo = lo;
		if (hi > self_hi)
			self_hi = hi;
	}
	return 1;
}

void prof_stack_setup(void)
{
	const struct prof_config *c = &prof_cfg;
	int want = c->stack_mode != PROF_STACK_OFF;
	if (want && load_libunwind())
		want = 0;
	depth_max = c->stack_depth ? c->stack_depth : PROF_DEFAULT_STACK_DEPTH;
	if (depth_max > PROF_MAX_STACK_DEPTH)
		depth_max = PROF_MAX_STACK_DEPTH;
	if (want) {
		Dl_info self;
		if (!self_hi && dladdr((void *)prof_stack_setup, &self))
			dl_iterate_phdr(find_self, self.dli_fbase);
		find_eval_loop();
		prof_py_init();
	}
	prof_stack_min_ticks = c->stack_min_ns;
	if (c->stack_min_ns && prof_clock_is_tsc) {
		/* ticks per ns, measured over 2 ms once: good to a few percent */
		uint64_t t0 = __rdtsc(), n0 = prof_mono_ns(), n1;
		while ((n1 = prof_mono_ns()) - n0 < 2000000)
			;
		double per_ns = (double)(__rdtsc() - t0) / (double)(n1 - n0);
		prof_stack_min_ticks = (uint64_t)((double)c->stack_min_ns * per_ns);
	}
	__atomic_store_n(&prof_stack_alloc_on, want, __ATOMIC_RELAXED);
	__atomic_store_n(&prof_stack_calls_on, want && c->stack_mode == PROF_STACK_ALL,
			 __ATOMIC_RELAXED);
}

/* Four independent lanes: a dependent multiply per frame made hashing a deep stack cost
 * as much as a third of unwinding it. */
static uint32_t hash_frames(const uint64_t *f, unsigned n)
{
	uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ n, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
			 0x27d4eb2f165667c5ull};
	unsigned i = 0;
	for (; i + 4 <= n; i += 4)
		for (unsigned k = 0; k < 4; k++)
			h[k] = (h[k] ^ f[i + k]) * 0xff51afd7ed558ccdull;
	for (; i < n; i++)
		h[0] = (h[0] ^ f[i]) * 0xff51afd7ed558ccdull;
	uint64_t x = h[0] ^ (h[1] >> 17) ^ (h[2] << 13) ^ (h[3] >> 29);
	x ^= x >> 32;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 29;
	return (uint32_t)x ? (uint32_t)x : 1;
}

static const struct prof_stack_entry *entry_of(uint32_t id)
{
	return (const struct prof_stack_entry *)(prof_proc_stacks(prof_proc) +
						 (uint64_t)(id - 1) * 8);
}

/* Appends a published entry; 0 when the area is full. Lock-free: a signal handler on
 * this thread may add a stack in the middle of another add. */
static uint32_t append(uint32_t h, const uint64_t *f, unsigned n)
{
	uint64_t need = sizeof(struct prof_stack_entry) + (uint64_t)n * 8;
	uint64_t at = atomic_fetch_add_explicit(&prof_proc->stacks_reserved, need,
						memory_order_relaxed);
	if (at + need > prof_proc->stacks_size) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			prof_warn("the call-stack area of this process (%llu MiB) is full: events "
				  "from now on have no stack (PROFILER_STACK_DEPTH below %u "
				  "keeps more)", (unsigned long long)(prof_proc->stacks_size >> 20),
				  depth_max);
		return 0;
	}
	struct prof_stack_entry *e = (struct prof_stack_entry *)(prof_proc_stacks(prof_proc) + at);
	e->hash = h;
	memcpy(e->frames, f, (size_t)n * 8);
	atomic_store_explicit(&e->nframes, n, memory_order_release);
	return (uint32_t)(at / 8) + 1;
}

static uint32_t intern_stack(const uint64_t *f, unsigned n)
{
	uint32_t h = hash_frames(f, n);
	for (uint32_t i = h & (TABLE_SIZE - 1), probes = 0; probes < 64;
	     i = (i + 1) & (TABLE_SIZE - 1), probes++) {
		uint64_t v = atomic_load_explicit(&table[i], memory_order_acquire);
		if (!v) {
			uint32_t id = append(h, f, n);
			if (!id)
				return 0;
			uint64_t want = (uint64_t)h << 32 | id;
			/* another thread may claim the slot first: its entry is probably
			 * this stack (the copy here then stays as an unused duplicate) */
			if (atomic_compare_exchange_strong_explicit(&table[i], &v, want,
								    memory_order_release,
								    memory_order_acquire))
				return id;
		}
		if ((uint32_t)(v >> 32) != h)
			continue;
		const struct prof_stack_entry *e = entry_of((uint32_t)v);
		if (atomic_load_explicit(&e->nframes, memory_order_acquire) == n &&
		    !memcmp(e->frames, f, (size_t)n * 8))
			return (uint32_t)v;
	}
	/* a crowded neighbourhood: the event goes without its stack */
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		prof_warn("libprof's table of distinct call stacks (%u) is crowded in this "
			  "process: some events from now on have no stack", TABLE_SIZE);
	return 0;
}

#define SELF_FRAMES 4 /* at most this many of libprof's frames precede the program's */

/* The last stacks of this thread, with where each return address was found, so that a
 * stack taken again from the same place is recognised by reading those slots instead of
 * unwinding (libunwind is most of a capture's cost). Same first frame and stack pointer,
 * and the same return addresses in the same slots, is the same chain of frames: each
 * caller's frame is found from its callee's by the unwind rule of the callee's address. */
#define CACHE_WAYS 16
#define CACHE_FRAMES 64
#define FRAME_LIMIT (64u << 10) /* a caller's return address this far above, at most */
#define SCAN_LIMIT (1u << 20)

struct cached_stack {
	uint64_t ip0, sp0;
	uint32_t n;       /* native frames checked: up to the eval loop or the depth */
	uint32_t id;      /* the stack's id when it has no Python part */
	uint32_t python;  /* frames from n on are the thread's Python frames */
	uint32_t gen;     /* stack_gen when made: ids of an older stack table are not used */
	uint64_t ip[CACHE_FRAMES];
	uint32_t slot[CACHE_FRAMES]; /* ip[j] is at sp0 + slot[j] (j >= 1) */
};

static __thread struct cached_stack stack_cache[CACHE_WAYS]
	__attribute__((tls_model("initial-exec")));
static uint32_t stack_gen = 1;

static struct cached_stack *cache_way(uint64_t ip0, uint64_t sp0)
{
	uint64_t h = (ip0 ^ (sp0 >> 4)) * 0x9e3779b97f4a7c15ull;
	return &stack_cache[h >> 60];
}

static int cache_hit(const struct cached_stack *c, uint64_t ip0, uint64_t sp0)
{
	if (c->ip0 != ip0 || c->sp0 != sp0 || !c->n ||
	    c->gen != __atomic_load_n(&stack_gen, __ATOMIC_RELAXED))
		return 0;
	for (uint32_t j = 1; j < c->n; j++)
		if (*(const uint64_t *)(sp0 + c->slot[j]) != c->ip[j])
			return 0;
	return 1;
}

/* Where each return address of f (f[0] at sp0 - 8) lies, searching upwards: the first
 * slot holding it above the previous one. Every address the unwinder gave is in a live
 * frame above sp0, before the stack's end; the bounds only stop the search early when
 * one is not (an unwinder's guess through a frame without unwind information): then 0,
 * and the stack is not remembered. */
static int find_slots(struct cached_stack *c, const uint64_t *f, unsigned n, uint64_t sp0)
{
	uint64_t at = sp0 - 8;
	for (unsigned j = 1; j < n; j++) {
		uint64_t from = at;
		for (at += 8; at - from < FRAME_LIMIT && *(const uint64_t *)at != f[j]; at += 8)
			;
		if (at - from >= FRAME_LIMIT || at - sp0 >= SCAN_LIMIT)
			return 0;
		c->slot[j] = (uint32_t)(at - sp0);
	}
	return 1;
}

/* Frames from the eval loop on replaced by the thread's Python frames: how many then. */
static unsigned with_python(uint64_t *f, unsigned n, unsigned *native)
{
	*native = n;
	if (!eval_hi)
		return n;
	for (unsigned i = 0; i < n; i++)
		if (f[i] - 1 >= eval_lo && f[i] - 1 < eval_hi) {
			uint64_t keep = f[i];
			int py = prof_py_stack(f + i, (int)depth_max);
			if (py <= 0) {
				f[i] = keep; /* no Python frames here: the native stack stands */
				return n;
			}
			*native = i;
			return i + (unsigned)py;
		}
	return n;
}

uint32_t prof_stack_capture(uint64_t ip0, uint64_t sp0)
{
	uint64_t f[MAX_FRAMES];
	if (!unw_backtrace_fn || !prof_proc)
		return 0;
	prof_trace_unshadow(); /* real return addresses back for the unwinder */
	struct cached_stack *c = cache_way(ip0, sp0);
	if (cache_hit(c, ip0, sp0)) {
		prof_trace_reshadow();
		if (!c->python)
			return c->id;
		memcpy(f, c->ip, (size_t)c->n * 8);
		int py = prof_py_stack(f + c->n, (int)depth_max);
		return intern_stack(f, py > 0 ? c->n + (unsigned)py : c->n);
	}
	int got = unw_backtrace_fn((void **)f, (int)depth_max + SELF_FRAMES);
	unsigned skip = 0;
	while (skip < (unsigned)got && f[skip] >= self_lo && f[skip] < self_hi)
		skip++;
	if (got <= (int)skip) {
		prof_trace_reshadow();
		return 0;
	}
	unsigned n = (unsigned)got - skip;
	if (n > depth_max)
		n = depth_max;
	memmove(f, f + skip, (size_t)n * 8);
	unsigned native;
	unsigned total = with_python(f, n, &native);
	/* remembered only when it begins where the caller said (not, e.g., a tail-call
	 * chain's exit) and every slot was found, while the real addresses are in place */
	int cacheable = f[0] == ip0 && native <= CACHE_FRAMES && native &&
			find_slots(c, f, native, sp0);
	prof_trace_reshadow();
	uint32_t id = intern_stack(f, total);
	if (cacheable && id) {
		c->ip0 = ip0;
		c->sp0 = sp0;
		c->n = native;
		c->python = native != n;
		c->id = c->python ? 0 : id;
		c->gen = __atomic_load_n(&stack_gen, __ATOMIC_RELAXED);
		memcpy(c->ip, f, (size_t)native * 8);
	} else {
		c->n = 0;
	}
	return id;
}

uint32_t prof_stack_of(const uint64_t *frames, unsigned n)
{
	return prof_proc && n ? intern_stack(frames, n) : 0;
}

void prof_stack_reset(void)
{
	memset(table, 0, sizeof table);
	/* every thread's remembered stacks name ids of the old table */
	__atomic_add_fetch(&stack_gen, 1, __ATOMIC_RELAXED);
}

void prof_stack_inherit(struct prof_proc_shm *from, struct prof_proc_shm *to)
{
	uint64_t used = atomic_load_explicit(&from->stacks_reserved, memory_order_acquire);
	if (used > to->stacks_size || used > from->stacks_size)
		used = 0;
	char *area = prof_proc_stacks(to);
	memcpy(area, prof_proc_stacks(from), used);
	/* an entry another thread was still writing when fork ran never becomes ready in
	 * the child: the area ends before it */
	uint64_t at = 0;
	while (at + sizeof(struct prof_stack_entry) <= used) {
		uint32_t n = atomic_load_explicit(
			&((struct prof_stack_entry *)(area + at))->nframes, memory_order_relaxed);
		uint64_t size = sizeof(struct prof_stack_entry) + (uint64_t)n * 8;
		if (!n || at + size > used)
			break;
		at += size;
	}
	atomic_store_explicit(&to->stacks_reserved, at, memory_order_release);
}
