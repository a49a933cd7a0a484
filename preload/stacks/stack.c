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
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/common/debug.h"
#include "preload/wrap/dl.h"
#include "preload/stacks/fp_walk.h"
#include "preload/stacks/pyframes.h"
#include "preload/stacks/stack.h"
#include "preload/core/area.h"
#include "preload/core/idtable.h"
#include "preload/core/state.h"

#define MAX_FRAMES PROF_MAX_STACK_FRAMES
#define UNW_CACHE_PER_THREAD 2

int prof_stack_alloc_on;
int prof_stack_calls_on;
uint64_t prof_stack_min_ticks;

static int (*unw_backtrace_fn)(void **buf, int size);
static int fp_walk_ready; /* libunwind gives procedures' bounds (fp_walk.c) */
static int fp_walk_on;    /* PROFILER_STACK_UNWIND=auto: frame pointers where code keeps them */
static unsigned depth_max = PROF_DEFAULT_STACK_DEPTH;
/* bumped when remembered stacks are no longer good: a new stack table, another depth */
static uint32_t stack_gen = 1;
static uintptr_t eval_lo, eval_hi; /* CPython's _PyEval_EvalFrameDefault */
static uintptr_t self_lo, self_hi;  /* libprof.so's own code: left out of stacks */

/* hash -> id, growing (idtable.h). Private, like the string index: a forked child keeps
 * it and gets a copy of the parent's stack area. */
static struct idtable index_ = IDT_INIT(15);

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
	fp_walk_ready = !prof_fp_setup(h);
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
	unsigned depth = c->stack_depth ? c->stack_depth : PROF_DEFAULT_STACK_DEPTH;
	if (depth > PROF_MAX_STACK_DEPTH)
		depth = PROF_MAX_STACK_DEPTH;
	if (depth != depth_max) { /* remembered stacks were cut at the old depth */
		depth_max = depth;
		__atomic_add_fetch(&stack_gen, 1, __ATOMIC_RELAXED);
	}
	prof_py_count_kept(!!(prof_debug_mask & PROF_DEBUG_STACK));
	if (want) {
		Dl_info self;
		if (!self_hi && dladdr((void *)prof_stack_setup, &self))
			dl_iterate_phdr(find_self, self.dli_fbase);
		find_eval_loop();
		prof_py_init();
	}
	__atomic_store_n(&fp_walk_on, fp_walk_ready && c->stack_unwind == 0, __ATOMIC_RELAXED);
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

/* Four independent lanes, as four variables: a dependent multiply per frame made hashing
 * a deep stack cost as much as a third of unwinding it, and lanes in an array stayed in
 * memory, each step waiting on its store. */
static uint64_t hash_frames64(const uint64_t *f, unsigned n)
{
	const uint64_t m = 0xff51afd7ed558ccdull;
	uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0xc2b2ae3d27d4eb4full,
		 c = 0x165667b19e3779f9ull, d = 0x27d4eb2f165667c5ull;
	unsigned i = 0;
	for (; i + 4 <= n; i += 4) {
		a = (a ^ f[i]) * m;
		b = (b ^ f[i + 1]) * m;
		c = (c ^ f[i + 2]) * m;
		d = (d ^ f[i + 3]) * m;
	}
	for (; i < n; i++)
		a = (a ^ f[i]) * m;
	uint64_t x = a ^ (b >> 17) ^ (c << 13) ^ (d >> 29);
	x ^= x >> 32;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ x >> 29;
}

static uint32_t hash_frames(const uint64_t *f, unsigned n)
{
	uint32_t x = (uint32_t)hash_frames64(f, n);
	return x ? x : 1;
}

static const struct prof_stack_entry *entry_of(uint32_t id)
{
	return (const void *)prof_area_at(PROF_AREA_STACKS, (uint64_t)(id - 1) * 8);
}

static void count_lost(void)
{
	atomic_fetch_add_explicit(&prof_proc->stacks_lost, 1, memory_order_relaxed);
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		prof_warn("the call stacks of this process fill what PROFILER_AREA_MAX or "
			  "/dev/shm allows (%llu MiB): events from now on have no stack, counted "
			  "in the tables",
			  (unsigned long long)(atomic_load(&prof_proc->stacks_reserved) >> 20));
}

/* Appends a published entry; 0 when the area cannot grow. Lock-free: a signal handler on
 * this thread may add a stack in the middle of another add. A reservation that crosses
 * the end of its chunk marks the rest of the chunk unused and tries again in the next. */
static uint32_t append(uint32_t h, const uint64_t *f, unsigned n)
{
	const struct prof_area_map *m = &prof_areas[PROF_AREA_STACKS];
	uint64_t need = sizeof(struct prof_stack_entry) + (uint64_t)n * 8;
	for (;;) {
		if (__atomic_load_n(&m->failed, __ATOMIC_RELAXED) || prof_area_growing_here)
			return 0;
		uint64_t at = atomic_fetch_add_explicit(&prof_proc->stacks_reserved, need,
							memory_order_relaxed);
		unsigned k = prof_area_chunk(m->first, at);
		uint64_t end = prof_area_chunk_start(m->first, k) + prof_area_chunk_size(m->first, k);
		if (at + need > m->limit || k >= PROF_AREA_CHUNKS) {
			/* every later reservation is past it too */
			__atomic_store_n(&prof_areas[PROF_AREA_STACKS].failed, 1, __ATOMIC_RELAXED);
			return 0;
		}
		char *base = prof_area_at(PROF_AREA_STACKS, at);
		if (!base && prof_area_grow(PROF_AREA_STACKS, k))
			base = prof_area_at(PROF_AREA_STACKS, at);
		if (!base)
			return 0;
		struct prof_stack_entry *e = (struct prof_stack_entry *)base;
		if (at + need > end) {
			/* a pad as long as the reservation: readers skip to where it ends, in
			 * the next chunk, where the next reservation begins */
			e->hash = (uint32_t)need;
			atomic_store_explicit(&e->nframes, PROF_AREA_PAD, memory_order_release);
			continue;
		}
		e->hash = h;
		memcpy(e->frames, f, (size_t)n * 8);
		atomic_store_explicit(&e->nframes, n, memory_order_release);
		return (uint32_t)(at / 8) + 1;
	}
}

struct stack_key {
	const uint64_t *f;
	unsigned n;
};

static int same_stack(uint32_t id, const void *key)
{
	const struct stack_key *k = key;
	const struct prof_stack_entry *e = entry_of(id);
	return e && atomic_load_explicit(&e->nframes, memory_order_acquire) == k->n &&
	       !memcmp(e->frames, k->f, (size_t)k->n * 8);
}

static uint32_t intern_stack(const uint64_t *f, unsigned n)
{
	uint32_t h = hash_frames(f, n);
	struct stack_key k = {f, n};
	uint32_t id = idt_find(&index_, h, same_stack, &k);
	if (id)
		return id;
	/* two threads adding the same new stack at once both store it: the copies are one
	 * stack to every reader, the index keeps both */
	id = append(h, f, n);
	if (!id || idt_add(&index_, h, id)) {
		count_lost();
		return 0;
	}
	return id;
}

#define SELF_FRAMES 4 /* at most this many of libprof's frames precede the program's */

/* The last stacks of this thread, with where each return address was found, so that a
 * stack taken again from the same place is recognised by reading those slots instead of
 * unwinding (libunwind is most of a capture's cost). Same first frame and stack pointer,
 * and the same return addresses in the same slots, is the same chain of frames: each
 * caller's frame is found from its callee's by the unwind rule of the callee's address.
 * The addresses are not kept, only where they lie and a 64-bit hash of them: read back
 * from the live stack, hashed and compared (a way of 544 bytes, 4.4 MiB a thread, made
 * the cache's own misses most of a remembered capture's cost and evicted the program's
 * data: a CNN step's own code ran twice as slow). */
/* Sets of four ways: a PyTorch training step takes ~3,000-4,000 distinct stacks, which
 * thrashed 4,096 ways mapped directly (37% missed); 2^14 sets of two still had ~20 sets
 * a CNN step that three of its stacks fell into (by chance: 3,100 stacks in 16,384
 * sets), whose three missed every time, walked by libunwind again: ~60 a step. 2^13
 * sets of four, with the key's fixes below: ~0 a step (PROFILER_DEBUG=stack, 100
 * against 300 steps). The native frames a way holds cover the default depth: a backward
 * pass's stacks have over 40 (15 a step were never remembered at 40). 6.2 MiB of address
 * space a thread (192-byte ways), 128 KiB of slots and 32 KiB of near distances, pages
 * touched only as used. */
#define CACHE_SET_BITS 13
#define CACHE_SET_WAYS 4
#define CACHE_WAYS (CACHE_SET_WAYS << CACHE_SET_BITS)
#define CACHE_FRAMES 64 /* native frames remembered: up to the eval loop or the depth */
#define FRAME_LIMIT (64u << 10) /* a caller's return address this far above, at most */
#define SCAN_LIMIT (1u << 20)
/* frames of the set key: enough to part the dispatcher's call paths; each is a dependent
 * load (the whole chain was 10% of a remembered capture) */
#define CHAIN_KEY_FRAMES 8

struct cached_stack {
	uint64_t ip0, sp0;
	uint16_t n;       /* native frames checked: up to the eval loop or the depth */
	/* with Python frames: the id of the whole stack last taken here, the frames it had
	 * (py_n in all) and a hash of its Python part, so that the same Python frames again
	 * skip interning the whole stack; py_id 0: none */
	uint16_t py_n;
	uint8_t python;   /* frames from n on are the thread's Python frames */
	uint8_t truncated; /* the stack went on past ip[n - 1] (cut at the depth) */
	uint32_t id;      /* the stack's id when it has no Python part */
	uint32_t gen;     /* stack_gen when made: ids of an older stack table are not used */
	uint32_t py_id;
	/* 1 + the way found at the thread's next capture last time, and 1 + the one before
	 * that (0: none): of a CNN step's ~380 captures a step that were not where the last
	 * one said, four in five were where it said the time before */
	uint32_t after, after_before;
	uint32_t reach;   /* the slot of ip[n - 1] lies below sp0 + reach */
	uint64_t py_hash;
	uint64_t chain;       /* hash_frames64 of the return addresses after ip0 */
	uint16_t gap[CACHE_FRAMES]; /* ip[j] lies gap[j] words above ip[j - 1] (j >= 1) */
};
/* three cache lines a way, the mapping page-aligned: the fields a lookup checks first in
 * one line, the first 32 distances in the next */
_Static_assert(sizeof(struct cached_stack) == 192 &&
		       offsetof(struct cached_stack, gap) == 64,
	       "a remembered stack's lines");

/* Mapped at the thread's first stack (not static TLS: glibc takes that from every
 * thread's stack, and most threads never take a stack), unmapped at its exit; CACHE_NONE
 * when there is none (no memory, or the thread is ending). */
static __thread struct cached_stack *stack_cache __attribute__((tls_model("initial-exec")));
#define CACHE_NONE ((struct cached_stack *)1)
#define CACHE_BYTES                                                                  \
	((size_t)CACHE_WAYS * sizeof(struct cached_stack) + CACHE_WALKS_BYTES +          \
	 CACHE_SLOTS_BYTES + CACHE_NEXT_BYTES + NEAR_BYTES)
#define CACHE_MAP_BYTES ((CACHE_BYTES + 4095) & ~(size_t)4095)
/* A thread that has remembered this many stacks takes stacks all the time (a training
 * loop's): its ways are then put on huge pages. A lookup reads a way at random in 6 MiB,
 * and with 4 KiB pages the translation missed as well (a CNN step: the ways' first
 * lines waited on page walks; with huge pages the set's lookup costs a quarter less).
 * Not from the start: 2 MiB for a way touched would be up to 6 MiB for every thread that
 * takes a few stacks. */
#define HUGE_BYTES (2u << 20)
#define HUGE_AFTER 1024
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1: the pages made huge now, not by khugepaged later */
#endif
static __thread uint32_t remembered_here __attribute__((tls_model("initial-exec")));
/* The ways given to set slots so far: a slot's first stack takes the next way, and the
 * slot's later stacks replace it there. The ways then lie in the order their slots were
 * first used, which is mostly the order a training step takes its stacks, again every
 * step. Each slot with a way of its own at a fixed place instead, a step's ~4,000
 * stacks lay at random in 6 MiB, and reading the next one's lines (asked for ahead,
 * followed_by) waited on a page walk nearly every capture (a VM's huge pages can be
 * its host's 4 KiB ones). */
static __thread uint32_t ways_given __attribute__((tls_model("initial-exec")));

/* The thread's last native stack walked whole, for the next walk (fp_walk.h), and room
 * for another: after the ways, in the same mapping (8 KiB of static TLS before). */
#define CACHE_WALKS_BYTES (2 * sizeof(struct fp_last))
static struct fp_last *cache_walks(struct cached_stack *cache)
{
	return (struct fp_last *)(void *)(cache + CACHE_WAYS);
}
/* Each set's four slots, after the walks: 16 bits of the start (start_tag) of the stack
 * in the slot's way, then 1 + the way's index (0: none yet). 128 KiB that stay in the CPU's
 * caches, so that a lookup reads the one way it wants instead of the first line of all
 * four (each a miss on the 6.3 MiB of ways: two thirds of a remembered capture's lookup
 * was the way's first line). */
#define CACHE_SLOTS_BYTES ((size_t)CACHE_WAYS * sizeof(uint32_t))
static uint32_t *cache_slots(struct cached_stack *cache)
{
	return (uint32_t *)(void *)(cache_walks(cache) + 2);
}
/* Per set, the slot remember() fills next (8 KiB, after the slots): a hit moves it off
 * the way just used, so a stack in use is not the next replaced (with ways replaced in
 * turn regardless, 3,072 stacks in rounds lost ~5 a round, a CNN step ~7). */
#define CACHE_NEXT_BYTES ((size_t)CACHE_WAYS / CACHE_SET_WAYS)
static uint8_t *cache_next(struct cached_stack *cache)
{
	return (uint8_t *)(cache_slots(cache) + CACHE_WAYS);
}

/* The distances the thread's chain keys read, packed 8 to a line after the next-to-fill
 * bytes (32 KiB, see near_delta). */
struct near_word {
	uint32_t tag;   /* the address's hash, never 0 (an empty word's) */
	uint16_t words; /* its distance in words; 0: the chain stops here */
	uint16_t stamp; /* a stop for want of a distance: delta_learned's low bits then */
};
#define NEAR_BITS 12
#define NEAR_BYTES (sizeof(struct near_word) << NEAR_BITS)
static struct near_word *cache_near(struct cached_stack *cache)
{
	return (struct near_word *)(void *)(cache_next(cache) + CACHE_NEXT_BYTES);
}

/* PROFILER_DEBUG=stack: how the stacks were found, said at exit */
enum { HOW_REMEMBERED, HOW_FP, HOW_FP_SPLICED, HOW_FP_REMEMBERED, HOW_LIBUNWIND, HOW_PREDICTED,
       HOW_N };
static _Atomic uint64_t how_found[HOW_N];
/* remembered captures' native and Python frames, summed */
static _Atomic uint64_t remembered_frames[2];

static void found(int how)
{
	if (__builtin_expect(prof_debug_mask & PROF_DEBUG_STACK, 0))
		atomic_fetch_add_explicit(&how_found[how], 1, memory_order_relaxed);
}

void prof_stack_say_counts(void)
{
	uint64_t n[HOW_N];
	for (int i = 0; i < HOW_N; i++)
		n[i] = atomic_load_explicit(&how_found[i], memory_order_relaxed);
	prof_debug(PROF_DEBUG_STACK,
		   "stacks: %llu remembered, %llu walked by frame pointers (%llu ending in "
		   "the last walk, %llu in a remembered stack), %llu by libunwind; %llu of the "
		   "remembered ones where the last capture's successor was; %.1f native and "
		   "%.1f Python frames a remembered one; %llu Python parts kept from a walk "
		   "inside the same release of the GIL",
		   (unsigned long long)n[HOW_REMEMBERED],
		   (unsigned long long)(n[HOW_FP] + n[HOW_FP_SPLICED] + n[HOW_FP_REMEMBERED]),
		   (unsigned long long)n[HOW_FP_SPLICED], (unsigned long long)n[HOW_FP_REMEMBERED],
		   (unsigned long long)n[HOW_LIBUNWIND], (unsigned long long)n[HOW_PREDICTED],
		   (double)atomic_load_explicit(&remembered_frames[0], memory_order_relaxed) /
			   (double)(n[HOW_REMEMBERED] ? n[HOW_REMEMBERED] : 1),
		   (double)atomic_load_explicit(&remembered_frames[1], memory_order_relaxed) /
			   (double)(n[HOW_REMEMBERED] ? n[HOW_REMEMBERED] : 1),
		   (unsigned long long)prof_py_kept_walks());
}

/* How far above the slot of a return address its caller's return address lies: fixed
 * by the frame of the function the address is in (at that call), so learned from any
 * stack remembered through it. Following these from a stack's first frame reads the
 * chain of return addresses, which keys the remembered stacks: the many call paths that
 * reach one allocation site at one stack depth (C++ operator new under the dispatcher of
 * every PyTorch operator) evicted each other when only the first frame and the stack
 * pointer keyed them. A wrong or stale distance only misses the cache: a stack is still
 * checked slot by slot against the one remembered. Each word is a 19-bit tag from the
 * address's hash above the bucket bits, then the distance in words (13 bits: FRAME_LIMIT
 * / 8); 0 is empty. 2^16 buckets of four: a key must not change while its stack is
 * remembered, and with one word per hash two of a step's ~4,000 return addresses that
 * shared a word took it from each other whenever a stack through the other was
 * remembered, changing the keys through the first: its stacks missed, were walked and
 * remembered, and took it back (with 2^16 words, ~10 of a CNN step's stacks every step;
 * before, at 2^13, ~150). */
#define DELTA_BITS 16
#define DELTA_WAYS 4
static _Atomic uint32_t frame_delta[DELTA_WAYS << DELTA_BITS] __attribute__((aligned(16)));
/* Bumped when a word of frame_delta is taken from its address (marked unsettled, or given
 * to another): every thread's near words are then dropped. delta_learned: bumped at every
 * new distance, so that a near stop for want of one is believed only while none came. */
static _Atomic uint32_t delta_epoch, delta_learned;
static __thread uint32_t near_epoch __attribute__((tls_model("initial-exec")));
/* A range of this thread's stack known to be mapped: the union of overlapping ranges
 * from a remembered stack's pointer to its highest slot. Chain reads stay inside it (a
 * stack pointer outside it, on a signal stack or a coroutine's, reads nothing). */
static __thread uint64_t span_lo, span_hi __attribute__((tls_model("initial-exec")));

static uint64_t delta_hash(uint64_t ip)
{
	return ip * 0x9e3779b97f4a7c15ull;
}

static uint32_t delta_tag(uint64_t h)
{
	return (uint32_t)(h >> (64 - DELTA_BITS - 19)) & 0x7ffff;
}

static _Atomic uint32_t *delta_bucket(uint64_t h)
{
	return &frame_delta[(h >> (64 - DELTA_BITS)) * DELTA_WAYS];
}

static uint32_t delta(uint64_t ip)
{
	uint64_t h = delta_hash(ip);
	_Atomic uint32_t *b = delta_bucket(h);
	uint32_t tag = delta_tag(h);
	for (unsigned i = 0; i < DELTA_WAYS; i++) {
		uint32_t v = atomic_load_explicit(&b[i], memory_order_relaxed);
		if (v >> 13 == tag)
			return (v & 0x1fff) * 8;
	}
	return 0;
}

/* delta(ip) through the thread's near words: the 1 MiB table spreads a step's ~4,000
 * return addresses over as many cache lines, evicted by the program's own work between
 * two captures, and a chain key's eight lookups depend on each other: at ~8 L2 misses
 * in a row they were two thirds of the set's lookup in a CNN step. The near words pack
 * them 8 to a line. A wrong word (a 32-bit tag shared) only misses the cache: every
 * remembered stack is checked slot by slot. */
static uint32_t near_delta(struct near_word *near, uint64_t ip)
{
	uint64_t h = ip * 0xd6e8feb86659fd93ull;
	struct near_word *w = &near[h >> (64 - NEAR_BITS)];
	uint32_t tag = (uint32_t)h | 1;
	if (w->tag == tag &&
	    (w->words ||
	     w->stamp == (uint16_t)atomic_load_explicit(&delta_learned, memory_order_relaxed)))
		return (uint32_t)w->words * 8;
	uint32_t d = delta(ip);
	/* a stop for want of a distance is stamped: one learned later is then looked up */
	w->tag = 0;
	atomic_signal_fence(memory_order_seq_cst);
	w->words = (uint16_t)(d / 8);
	w->stamp = (uint16_t)atomic_load_explicit(&delta_learned, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	w->tag = tag;
	return d;
}

/* An address seen with two distances (a function that realigns its stack by the
 * incoming stack pointer, or a copy of a return address found before its slot) is marked
 * unsettled, its tag with distance 0, and stays so: chain keys stop in front of it.
 * Learning the latest instead, remembering a stack through it at one distance changed
 * the keys of those at the other. A full bucket gives up a word in turn (remembering is
 * the slow path: its writes cost nothing at a capture). */
static void learn_delta(uint64_t ip, uint64_t d)
{
	static _Atomic uint32_t turn;
	if (!d || d >= FRAME_LIMIT)
		return;
	uint64_t h = delta_hash(ip);
	_Atomic uint32_t *b = delta_bucket(h);
	uint32_t tag = delta_tag(h), want = tag << 13 | (uint32_t)(d / 8);
	int empty = -1;
	for (unsigned i = 0; i < DELTA_WAYS; i++) {
		uint32_t v = atomic_load_explicit(&b[i], memory_order_relaxed);
		if (v >> 13 == tag) {
			if (v != want && v != tag << 13) { /* another distance: unsettled */
				atomic_store_explicit(&b[i], tag << 13, memory_order_relaxed);
				atomic_fetch_add_explicit(&delta_epoch, 1, memory_order_relaxed);
			}
			return;
		}
		if (!v && empty < 0)
			empty = (int)i;
	}
	unsigned at = empty >= 0 ? (unsigned)empty
				 : atomic_fetch_add_explicit(&turn, 1, memory_order_relaxed) %
					   DELTA_WAYS;
	if (empty < 0) /* a word taken from another address: its distance gone */
		atomic_fetch_add_explicit(&delta_epoch, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&delta_learned, 1, memory_order_relaxed);
	atomic_store_explicit(&b[at], want, memory_order_relaxed);
}

/* The key of a stack beginning at ip0 with stack pointer sp0: its first return addresses
 * (CHAIN_KEY_FRAMES at most), as far as the learned distances lead. */
static uint64_t chain_key(uint64_t ip0, uint64_t sp0)
{
	/* ip0 spread before sp0 joins: XORed raw, nearby call sites at nearby depths (a
	 * site's offset against a frame's size) gave one key to many stacks, one set */
	uint64_t h = (ip0 * 0x9e3779b97f4a7c15ull ^ sp0) * 0xbf58476d1ce4e5b9ull;
	uint64_t at = sp0 - 8, ip = ip0;
	uint64_t hi = sp0 >= span_lo && sp0 < span_hi ? span_hi : 0;
	struct near_word *near = cache_near(stack_cache);
	uint32_t epoch = atomic_load_explicit(&delta_epoch, memory_order_relaxed);
	if (near_epoch != epoch) { /* distances were taken back: the near words are stale */
		memset(near, 0, NEAR_BYTES);
		near_epoch = epoch;
	}
	for (unsigned j = 0; j < CHAIN_KEY_FRAMES; j++) {
		uint32_t d = near_delta(near, ip);
		if (!d || at + d + 8 > hi)
			break;
		at += d;
		ip = *(const uint64_t *)at;
		h = (h ^ ip) * 0xff51afd7ed558ccdull;
	}
	return h ^ h >> 29;
}

#define NO_SET SIZE_MAX
/* The first slot of the set a stack beginning at ip0 with stack pointer sp0 is
 * remembered in; NO_SET when the thread has no ways. */
static size_t cache_set(uint64_t ip0, uint64_t sp0)
{
	struct cached_stack *cache = stack_cache;
	if (__builtin_expect(!cache, 0)) {
		/* once per thread: its pages are touched only as ways are used; the ways
		 * begin on a huge page's boundary (see HUGE_AFTER) */
		void *m = mmap(0, CACHE_MAP_BYTES + HUGE_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			stack_cache = cache = CACHE_NONE;
		} else {
			uintptr_t at = ((uintptr_t)m + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
			if (at != (uintptr_t)m)
				munmap(m, at - (uintptr_t)m);
			if ((uintptr_t)m + HUGE_BYTES != at)
				munmap((void *)(at + CACHE_MAP_BYTES),
				       (uintptr_t)m + HUGE_BYTES - at);
			stack_cache = cache = (struct cached_stack *)at;
			prof_thread_want_exit_hook(); /* unmapped there, ring or not */
		}
	}
	if (cache == CACHE_NONE)
		return NO_SET;
	uint64_t h = chain_key(ip0, sp0) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> (64 - CACHE_SET_BITS)) * CACHE_SET_WAYS;
}

void prof_stack_thread_exit(void)
{
	prof_py_thread_exit();
	prof_fp_thread_exit();
	struct cached_stack *cache = stack_cache;
	stack_cache = CACHE_NONE;
	if (cache && cache != CACHE_NONE)
		munmap(cache, CACHE_MAP_BYTES);
}

/* Whether c is the stack beginning at ip0 with stack pointer sp0: its return addresses,
 * read from their slots, hash to the one remembered (hash_frames64's lanes, taken as
 * the slots are read: storing the frames and hashing them after was a third of a
 * remembered capture's own cost, and most captures need only the id). The slots are read
 * only inside the range of the stack known to be mapped (span_lo, span_hi). */
static int way_hit(const struct cached_stack *c, uint64_t ip0, uint64_t sp0)
{
	uint32_t n = c->n;
	atomic_signal_fence(memory_order_seq_cst);
	if (c->ip0 != ip0 || c->sp0 != sp0 || !n ||
	    c->gen != __atomic_load_n(&stack_gen, __ATOMIC_RELAXED) || sp0 < span_lo ||
	    sp0 + c->reach > span_hi)
		return 0;
	const uint64_t m = 0xff51afd7ed558ccdull;
	uint32_t k = n - 1;
	uint64_t a = 0x9e3779b97f4a7c15ull ^ k, b = 0xc2b2ae3d27d4eb4full,
		 h3 = 0x165667b19e3779f9ull, d = 0x27d4eb2f165667c5ull;
	const uint16_t *gap = &c->gap[1];
	uint64_t at = sp0 - 8;
	uint32_t i = 0;
	for (; i + 4 <= k; i += 4) {
		uint64_t s0 = at + (uint64_t)gap[i] * 8, s1 = s0 + (uint64_t)gap[i + 1] * 8,
			 s2 = s1 + (uint64_t)gap[i + 2] * 8, s3 = s2 + (uint64_t)gap[i + 3] * 8;
		a = (a ^ *(const uint64_t *)s0) * m;
		b = (b ^ *(const uint64_t *)s1) * m;
		h3 = (h3 ^ *(const uint64_t *)s2) * m;
		d = (d ^ *(const uint64_t *)s3) * m;
		at = s3;
	}
	for (; i < k; i++) {
		at += (uint64_t)gap[i] * 8;
		a = (a ^ *(const uint64_t *)at) * m;
	}
	uint64_t x = a ^ (b >> 17) ^ (h3 << 13) ^ (d >> 29);
	x ^= x >> 32;
	x *= 0xc4ceb9fe1a85ec53ull;
	return (x ^ x >> 29) == c->chain;
}

/* The native frames of a way way_hit took, read from their slots into f (f[0] = ip0):
 * whether they are still its stack (a signal handler on this thread may have given the
 * way to another stack since). */
static int read_native(const struct cached_stack *c, uint64_t ip0, uint64_t sp0, uint64_t *f)
{
	uint32_t n = c->n;
	atomic_signal_fence(memory_order_seq_cst);
	if (!n || c->ip0 != ip0 || c->sp0 != sp0 || sp0 + c->reach > span_hi)
		return 0;
	uint64_t at = sp0 - 8;
	f[0] = ip0;
	for (uint32_t j = 1; j < n; j++) {
		at += (uint64_t)c->gap[j] * 8;
		f[j] = *(const uint64_t *)at;
	}
	atomic_signal_fence(memory_order_seq_cst);
	return c->n == n && hash_frames64(f + 1, n - 1) == c->chain;
}

/* 16 bits of a stack's start, never 0 (an empty way's). */
static uint16_t start_tag(uint64_t ip0, uint64_t sp0)
{
	return (uint16_t)(((ip0 * 0xd6e8feb86659fd93ull ^ sp0) * 0x9e3779b97f4a7c15ull) >> 48) | 1;
}

/* The remembered stack that is the one beginning at ip0 with stack pointer sp0, its
 * native frames in f when given, or NULL. */
static struct cached_stack *cache_find(uint64_t ip0, uint64_t sp0, uint64_t *f)
{
	size_t first = cache_set(ip0, sp0);
	if (first == NO_SET)
		return 0;
	uint32_t tag = start_tag(ip0, sp0);
	const uint32_t *slots = cache_slots(stack_cache) + first;
	for (unsigned w = 0; w < CACHE_SET_WAYS; w++) {
		uint32_t word = slots[w];
		if (word >> 16 != tag || !(word & 0xffff))
			continue;
		struct cached_stack *c = &stack_cache[(word & 0xffff) - 1];
		if (!way_hit(c, ip0, sp0))
			continue;
		if (f && !read_native(c, ip0, sp0, f))
			return 0;
		uint8_t *next = &cache_next(stack_cache)[first / CACHE_SET_WAYS];
		if (*next == w)
			*next = (uint8_t)((w + 1) % CACHE_SET_WAYS);
		return c;
	}
	return 0;
}

/* The way the thread's last capture was found in or remembered in, 1 + its index (0:
 * none). A training step takes its stacks in the same order every step, so the way that
 * followed it last time is tried first, its lines asked for as the last capture ended:
 * no set key (a chain of dependent loads), no wait for the way's first line. Only a
 * hint: the way is checked slot by slot like any other. */
static __thread uint32_t last_way __attribute__((tls_model("initial-exec")));

/* The way that followed the last capture's, when it is the stack beginning at ip0 with
 * stack pointer sp0. */
static struct cached_stack *predicted(uint64_t ip0, uint64_t sp0)
{
	struct cached_stack *cache = stack_cache;
	uint32_t last = last_way;
	if (!last || !cache || cache == CACHE_NONE)
		return 0;
	/* not kept off its set's next to fill, as a hit by the key is: that byte was a miss
	 * a capture (in a training loop's steady state no stack is replaced) */
	uint32_t after = cache[last - 1].after;
	if (after && way_hit(&cache[after - 1], ip0, sp0))
		return &cache[after - 1];
	after = cache[last - 1].after_before;
	if (after && way_hit(&cache[after - 1], ip0, sp0))
		return &cache[after - 1];
	return 0;
}

/* c (a way of this thread's, or NULL) is where this capture's stack is: the last
 * capture's way learns that c came after it, and c's own successor is asked for. */
static void followed_by(struct cached_stack *c)
{
	struct cached_stack *cache = stack_cache;
	uint32_t ix = c ? (uint32_t)(c - cache) + 1 : 0, last = last_way;
	last_way = ix;
	if (!ix)
		return;
	if (last && cache[last - 1].after != ix) {
		cache[last - 1].after_before = cache[last - 1].after;
		cache[last - 1].after = ix;
	}
	uint32_t after = c->after;
	if (after) {
		__builtin_prefetch(&cache[after - 1]);
		__builtin_prefetch(&cache[after - 1].gap[0]);
	}
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
		c->gap[j] = (uint16_t)((at - from) / 8); /* FRAME_LIMIT / 8 words at most */
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

/* from_cache's frames from c, found with its native frames in native; native_n (when
 * given): how many of them are native (before the Python ones); py_hash (when given): a
 * hash of the Python frames after them (0: none). */
static unsigned extend_from(const struct cached_stack *c, const uint64_t *native, uint64_t *f,
			    unsigned k, uint64_t sp, struct fp_last *whole, unsigned *native_n,
			    uint64_t *py_hash)
{
	if (py_hash)
		*py_hash = 0;
	/* cut at the depth after other frames in front: here it would end too soon */
	if (c->truncated && k + c->n < depth_max)
		return 0;
	unsigned n = k + c->n > depth_max ? depth_max : k + c->n;
	if (native_n)
		*native_n = n;
	memcpy(f + k, native, (size_t)(n - k) * 8);
	if (c->python && n == k + c->n) {
		uint64_t h;
		int py = prof_py_stack_hashed(f + n, (int)depth_max, &h);
		if (py > 0) {
			n += (unsigned)py;
			if (py_hash)
				*py_hash = h;
		}
	} else if (whole && !c->python) {
		/* a native stack, whole: the thread's last, for the next walk (the frames
		 * before k are the walk's, in whole already) */
		uint64_t at = sp - 8;
		for (unsigned j = k; j < n; j++) {
			at += j == k ? 0 : (uint64_t)c->gap[j - k] * 8;
			whole->ip[j] = f[j];
			whole->sp[j] = at + 8;
		}
		whole->n = n;
		whole->truncated = c->truncated || n < k + c->n;
	}
	return n;
}

/* Frames f[k..] from a remembered stack that began at f[k], whose stack pointer was sp,
 * with the thread's Python frames after them where it had some: the frames in f then,
 * or 0 when none is remembered from there; native_n: how many are native. */
static unsigned from_cache(uint64_t *f, unsigned k, uint64_t sp, struct fp_last *whole,
			   unsigned *native_n)
{
	uint64_t native[CACHE_FRAMES];
	const struct cached_stack *c = cache_find(f[k], sp, native);
	return c ? extend_from(c, native, f, k, sp, whole, native_n, 0) : 0;
}

/* Remembers f[0..native) (the native part of a stack whose total frames are n) as
 * beginning at sp: 0 when its slots cannot all be found. */
static struct cached_stack *remember(uint64_t *f, unsigned native, unsigned n, uint64_t sp,
				     uint32_t id, int truncated)
{
	if (!native || native > CACHE_FRAMES || !stack_cache || stack_cache == CACHE_NONE)
		return 0;
	/* the slots found first, the distances between them learned, then the way chosen
	 * by the key they give */
	struct cached_stack *c, found_at;
	if (!find_slots(&found_at, f, native, sp))
		return 0;
	uint64_t prev = sp - 8;
	for (unsigned j = 1; j < native; j++) {
		learn_delta(f[j - 1], (uint64_t)found_at.gap[j] * 8);
		prev += (uint64_t)found_at.gap[j] * 8;
	}
	if (prev + 8 - sp > UINT32_MAX)
		return 0;
	/* [sp, prev + 8) is this live stack, mapped: the known span grows by it where they
	 * meet, else the new one replaces it */
	if (sp <= span_hi && prev + 8 >= span_lo) {
		span_lo = sp < span_lo ? sp : span_lo;
		span_hi = prev + 8 > span_hi ? prev + 8 : span_hi;
	} else {
		span_lo = sp;
		span_hi = prev + 8;
	}
	size_t first = cache_set(f[0], sp);
	if (first == NO_SET)
		return 0;
	uint8_t *next = &cache_next(stack_cache)[first / CACHE_SET_WAYS];
	unsigned w = *next % CACHE_SET_WAYS;
	*next = (uint8_t)((w + 1) % CACHE_SET_WAYS);
	/* a slot's way is its own from its first stack on: one a slot, never more than all */
	uint32_t *slots = cache_slots(stack_cache);
	uint32_t at = slots[first + w] & 0xffff;
	/* one instruction: a signal handler's remember may come between */
	at = at ? at - 1 : __atomic_fetch_add(&ways_given, 1, __ATOMIC_RELAXED);
	if (at >= CACHE_WAYS)
		return 0;
	c = &stack_cache[at];
	/* a signal handler on this thread finds the way empty until it is whole */
	c->n = 0;
	atomic_signal_fence(memory_order_seq_cst);
	memcpy(c->gap, found_at.gap, sizeof c->gap[0] * native);
	c->chain = hash_frames64(f + 1, native - 1);
	c->reach = (uint32_t)(prev + 8 - sp);
	c->ip0 = f[0];
	c->sp0 = sp;
	c->python = native != n;
	c->truncated = !c->python && truncated;
	c->id = c->python ? 0 : id;
	c->py_id = 0;
	c->after = c->after_before = 0;
	c->gen = __atomic_load_n(&stack_gen, __ATOMIC_RELAXED);
	atomic_signal_fence(memory_order_seq_cst);
	c->n = native;
	slots[first + w] = (uint32_t)start_tag(f[0], sp) << 16 | (at + 1);
	if (++remembered_here == HUGE_AFTER) {
		size_t ways = (size_t)CACHE_WAYS * sizeof(struct cached_stack);
		madvise(stack_cache, ways, MADV_HUGEPAGE);
		madvise(stack_cache, ways, MADV_COLLAPSE); /* EINVAL before 6.1: khugepaged's */
	}
	return c;
}

/* The id of a remembered stack (native part checked) with the Python frames it has now
 * (h: their hash, prof_py_stack_hashed's; 0: none): the last id taken here when they are
 * the same, else interned and kept. A signal handler on this thread may rewrite the
 * entry between two reads: the id is read before and after the hash, and used only when
 * both agree. */
static uint32_t python_part_id(struct cached_stack *c, const uint64_t *f, unsigned n,
			       uint64_t h)
{
	uint32_t id = c->py_id;
	atomic_signal_fence(memory_order_seq_cst);
	int same = c->py_hash == h && c->py_n == n;
	atomic_signal_fence(memory_order_seq_cst);
	if (id && same && c->py_id == id)
		return id;
	id = intern_stack(f, n);
	c->py_id = 0;
	atomic_signal_fence(memory_order_seq_cst);
	c->py_hash = h;
	c->py_n = n;
	atomic_signal_fence(memory_order_seq_cst);
	c->py_id = id;
	return id;
}

/* The id of a remembered stack with Python frames when they are the ones the way last
 * had and the thread's last walk still stands (inside the GIL release it was made in:
 * prof_py_kept), without reading any frame out; *n: its frames then. 0: not known so. */
static uint32_t kept_python_id(const struct cached_stack *c, unsigned *n)
{
	uint64_t h;
	int py = c->python ? prof_py_kept((int)depth_max, &h) : -1;
	if (py <= 0)
		return 0;
	/* as python_part_id reads it: a signal handler may rewrite the entry meanwhile */
	uint32_t id = c->py_id;
	atomic_signal_fence(memory_order_seq_cst);
	int same = c->py_hash == h && c->py_n == c->n + (unsigned)py;
	atomic_signal_fence(memory_order_seq_cst);
	if (!id || !same || c->py_id != id)
		return 0;
	*n = c->n + (unsigned)py;
	return id;
}

uint32_t prof_stack_capture(uint64_t ip0, uint64_t sp0, uint64_t bp0)
{
	uint64_t f[MAX_FRAMES], fp[MAX_FRAMES], sps[MAX_FRAMES];
	if (!unw_backtrace_fn || !prof_proc)
		return 0;
	prof_trace_unshadow(); /* real return addresses back for the unwinder */
	/* the last Python walk's frames and code objects asked for now: most captures
	 * check the same ones, and they are out of the caches after an operator's work */
	prof_py_prefetch();
	struct cached_stack *c = predicted(ip0, sp0);
	if (c)
		found(HOW_PREDICTED);
	else
		c = cache_find(ip0, sp0, 0);
	/* the frames are read out only when the id is not the way's own or its last */
	unsigned kept_n = c ? c->n : 0;
	uint32_t kept_id = !c ? 0 : c->id ? c->id : kept_python_id(c, &kept_n);
	uint64_t cached[CACHE_FRAMES];
	if (c && !kept_id && !read_native(c, ip0, sp0, cached))
		c = 0; /* taken for another stack meanwhile: walked below */
	if (c) {
		unsigned n = kept_n;
		uint32_t id = kept_id;
		if (!id) {
			uint64_t py_hash = 0;
			f[0] = ip0;
			n = extend_from(c, cached, f, 0, sp0, 0, 0, &py_hash);
			id = python_part_id(c, f, n, py_hash);
		}
		prof_trace_reshadow();
		found(HOW_REMEMBERED);
		if (__builtin_expect(prof_debug_mask & PROF_DEBUG_STACK, 0)) {
			unsigned native = c->n < n ? c->n : n;
			atomic_fetch_add_explicit(&remembered_frames[0], native, memory_order_relaxed);
			atomic_fetch_add_explicit(&remembered_frames[1], n - native,
						  memory_order_relaxed);
		}
		followed_by(c);
		return id;
	}
	/* The frames that keep frame pointers, walked; where the walk stops in other code,
	 * the rest of the stack as remembered from there. */
	struct fp_walk w = {.status = FP_WALK_BAD};
	struct cached_stack *cache = stack_cache;
	if (bp0 && __atomic_load_n(&fp_walk_on, __ATOMIC_RELAXED) && cache &&
	    cache != CACHE_NONE) {
		struct fp_last *last = &cache_walks(cache)[0];
		if (last->gen != __atomic_load_n(&stack_gen, __ATOMIC_RELAXED)) {
			last->n = 0; /* another depth, or a new stack table */
			last->gen = __atomic_load_n(&stack_gen, __ATOMIC_RELAXED);
		}
		w = prof_fp_walk(fp, sps, depth_max, ip0, sp0, bp0, eval_lo, eval_hi, last);
		unsigned n = 0, native = 0;
		int truncated = 0;
		if (w.unchecked) { /* a frame libunwind has not confirmed: it checks the walk */
		} else if (w.status == FP_WALK_END || w.status == FP_WALK_FULL) {
			n = native = w.n;
			truncated = w.status == FP_WALK_FULL;
			memcpy(last->ip, fp, (size_t)n * 8);
			memcpy(last->sp, sps, (size_t)n * 8);
			last->n = n;
			last->truncated = truncated;
		} else if (w.status == FP_WALK_OTHER_CODE) {
			/* the walk's frames go into last only with the rest of the stack */
			struct fp_last *whole = &cache_walks(cache)[1];
			n = from_cache(fp, w.n - 1, w.sp, whole, &native);
			truncated = n && n == native && whole->n && whole->truncated;
			if (n && whole->n) {
				memcpy(last->ip, fp, (size_t)(w.n - 1) * 8);
				memcpy(last->sp, sps, (size_t)(w.n - 1) * 8);
				memcpy(last->ip + w.n - 1, whole->ip + w.n - 1, (size_t)(n - w.n + 1) * 8);
				memcpy(last->sp + w.n - 1, whole->sp + w.n - 1, (size_t)(n - w.n + 1) * 8);
				last->n = n;
				last->truncated = whole->truncated;
				whole->n = 0;
			}
		}
		else if (w.status == FP_WALK_STOPPED) {
			uint64_t eval = fp[w.n - 1];
			int py = prof_py_stack(fp + w.n - 1, (int)depth_max);
			n = py > 0 ? w.n - 1 + (unsigned)py : 0;
			native = w.n - 1;
			fp[w.n - 1] = py > 0 ? fp[w.n - 1] : eval; /* for libunwind's check */
		}
		if (n) {
			found(w.status == FP_WALK_OTHER_CODE ? (w.n > 1 ? HOW_FP_REMEMBERED : HOW_REMEMBERED)
				  : w.spliced ? HOW_FP_SPLICED : HOW_FP);
			/* remembered from its first frame: the next capture here reads its slots
			 * instead of walking and interning it again (a third of a CNN step's
			 * stacks began in code with frame pointers) */
			uint32_t id = intern_stack(fp, n);
			followed_by(id ? remember(fp, native, n, sp0, native == n ? id : 0, truncated)
				       : 0);
			prof_trace_reshadow();
			return id;
		}
	}
	found(HOW_LIBUNWIND);
	int got = unw_backtrace_fn((void **)f, (int)depth_max + SELF_FRAMES);
	unsigned skip = 0;
	while (skip < (unsigned)got && f[skip] >= self_lo && f[skip] < self_hi)
		skip++;
	if (got <= (int)skip) {
		prof_trace_reshadow();
		return 0;
	}
	unsigned n = (unsigned)got - skip;
	/* the stack may go on past what was kept */
	int cut = n > depth_max || got == (int)depth_max + SELF_FRAMES;
	if (n > depth_max)
		n = depth_max;
	memmove(f, f + skip, (size_t)n * 8);
	/* The walk, when there was one, against libunwind: the frame before the first
	 * difference is not walked by its frame pointer again; frames that agree are
	 * believed from now on; a walk that ran into code without frame pointers has the
	 * rest of its stack remembered from there. */
	unsigned k = 0;
	if (w.status != FP_WALK_BAD && f[0] == ip0) {
		/* frame j - 1's frame pointer gave fp[j], for j <= w.used; an ended walk's
		 * last one gave "no caller" */
		unsigned same = 1;
		for (unsigned j = 1; j <= w.used && same; j++)
			if (j == w.n ? n > w.n : j >= n || f[j] != fp[j]) {
				prof_fp_distrust(fp[j - 1]);
				same = 0;
			}
		if (same && w.unchecked)
			prof_fp_checked(fp, w.used < w.n ? w.used : w.n);
		if (same && w.status == FP_WALK_OTHER_CODE)
			k = w.used;
	}
	unsigned native;
	unsigned total = with_python(f, n, &native);
	/* remembered only when it begins where the caller said (not, e.g., a tail-call
	 * chain's exit) and every slot was found, while the real addresses are in place */
	int cacheable = f[0] == ip0 && native > k;
	uint32_t id = intern_stack(f, total);
	struct cached_stack *way = 0;
	if (cacheable && id)
		way = remember(f + k, native - k, total - k, k ? w.sp : sp0, k ? 0 : id, cut);
	followed_by(k ? 0 : way); /* a way keyed at frame k is not where a capture begins */
	prof_trace_reshadow();
	return id;
}

uint32_t prof_stack_of(const uint64_t *frames, unsigned n)
{
	return prof_proc && n ? intern_stack(frames, n) : 0;
}

void prof_stack_reset(void)
{
	idt_reset(&index_);
	/* every thread's remembered stacks name ids of the old table */
	__atomic_add_fetch(&stack_gen, 1, __ATOMIC_RELAXED);
}

uint64_t prof_stack_complete_end(const struct prof_proc_shm *from)
{
	uint64_t used = atomic_load_explicit(&from->stacks_reserved, memory_order_acquire);
	/* an entry another thread was still writing when fork ran never becomes ready in
	 * the child: the area ends before it */
	uint64_t at = 0;
	while (at + sizeof(struct prof_stack_entry) <= used) {
		const struct prof_stack_entry *e = (const void *)prof_area_at(PROF_AREA_STACKS, at);
		if (!e)
			break;
		uint32_t n = atomic_load_explicit(&e->nframes, memory_order_acquire);
		if (n == PROF_AREA_PAD) {
			/* a reservation across a chunk's end: the next entry is in the next chunk,
			 * which is not copied when it was not made yet */
			if (e->hash < sizeof *e || !prof_area_at(PROF_AREA_STACKS, at + e->hash))
				break;
			at += e->hash;
			continue;
		}
		uint64_t size = sizeof(struct prof_stack_entry) + (uint64_t)n * 8;
		if (!n || at + size > used)
			break;
		at += size;
	}
	return at;
}

void prof_stack_inherit(struct prof_proc_shm *to, uint64_t end)
{
	atomic_store_explicit(&to->stacks_reserved, end, memory_order_release);
	idt_after_fork(&index_);
	prof_fp_after_fork();
	/* the forking thread's remembered ids may lie past the cut */
	__atomic_add_fetch(&stack_gen, 1, __ATOMIC_RELAXED);
}
