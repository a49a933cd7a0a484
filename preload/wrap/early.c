/* The early buffer (see early.h). Entries are claimed by an atomic add and published by
 * a flag stored last, so a thread that started before the constructor cannot hand the
 * flush a half-written entry.
 *
 * Storage grows with the program (issue 29: libmxnet's static initializers made 72,000
 * allocations before the constructor, and a fixed 8,192 lost 89 % of them): chunk 0 is
 * static, chunk k >= 1 holds EARLY_BASE << k entries and is mmap'ed by the first writer
 * to claim an index in it. Never the heap: the allocator is what is being interposed. */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>

#include "preload/wrap/early.h"
#include "preload/common/ring.h"
#include "preload/stacks/stack.h"

#define EARLY_BASE 8192u /* chunk 0: 448 KiB of .bss, touched only as far as used */
/* Chunks 0..EARLY_CHUNKS-1 hold EARLY_BASE * (2^EARLY_CHUNKS - 1) entries: 33.5 M, 1.8
 * GiB of address space reserved only as chunks are needed. Far above any real start-up
 * (libmxnet's: 72,530); past it the loss is counted as start-up loss. */
#define EARLY_CHUNKS 12
#define EARLY_CAP ((uint64_t)EARLY_BASE * ((1ull << EARLY_CHUNKS) - 1))
/* A chunk whose mmap failed: its entries are counted as lost, and no writer retries. */
#define CHUNK_FAILED ((struct early_event *)1)
/* The flush waits for the collector to make room in the ring while it lives; it gives
 * up (the rest counted as lost) when its reader took nothing for this long: a collector
 * holding the program for the live outputs does so for a second at most. */
#define FLUSH_STILL_NS 10000000000ull
/* How long the flush waits for writers still inside prof_early_record before it reads
 * (a thread started by another library's constructor): past it, the chunks are left
 * mapped rather than unmapped under a writer. */
#define WRITERS_WAIT_LOOKS 100000

struct early_event {
	uint64_t t0, t1, ret, bytes, released, ip;
	uint8_t name;
	uint8_t ready;
};

int prof_early_open = 1;
uint64_t prof_early_given_up;
static struct early_event chunk0[EARLY_BASE];
static struct early_event *chunks[EARLY_CHUNKS] = {chunk0};
static uint64_t early_used;
static unsigned early_writers; /* inside prof_early_record, for the flush to wait on */
static uint64_t early_lost, early_lost_first, early_lost_last;

static uint64_t chunk_events(unsigned k) { return (uint64_t)EARLY_BASE << k; }

/* Chunk k starts at entry EARLY_BASE * (2^k - 1). */
static unsigned chunk_of(uint64_t i, uint64_t *offset)
{
	unsigned k = 63u - (unsigned)__builtin_clzll(i / EARLY_BASE + 1);
	*offset = i - (uint64_t)EARLY_BASE * ((1ull << k) - 1);
	return k;
}

static void count_lost(uint64_t t0, uint64_t t1)
{
	if (__atomic_fetch_add(&early_lost, 1, __ATOMIC_RELAXED) == 0)
		early_lost_first = t0;
	early_lost_last = t1;
}

/* Chunk k, mapped by whichever writer gets there first: a racing writer's own mapping
 * is given back. One mmap per chunk, each twice the last: the system call is amortized
 * over the thousands of entries it holds, as a ring's commit is. */
static struct early_event *chunk(unsigned k)
{
	struct early_event *c = __atomic_load_n(&chunks[k], __ATOMIC_ACQUIRE);
	if (c)
		return c == CHUNK_FAILED ? 0 : c;
	int saved = errno; /* inside malloc: a successful call leaves errno alone */
	size_t bytes = chunk_events(k) * sizeof(struct early_event);
	void *m = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	struct early_event *mine = m == MAP_FAILED ? CHUNK_FAILED : m;
	struct early_event *seen = 0;
	if (!__atomic_compare_exchange_n(&chunks[k], &seen, mine, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (mine != CHUNK_FAILED)
			munmap(mine, bytes);
		mine = seen;
	}
	errno = saved;
	return mine == CHUNK_FAILED ? 0 : mine;
}

int prof_early_record(enum prof_name name, uint64_t t0, uint64_t t1, void *ret, size_t bytes,
		      void *released, void *caller_ip)
{
	int taken = 1;
	/* Counted in before the second look at the gate: the flush closes the gate, then
	 * waits for the count to fall to 0, so no writer stores into a chunk it unmaps
	 * (seq_cst on both sides: one of the two sees the other). */
	__atomic_fetch_add(&early_writers, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&prof_early_open, __ATOMIC_SEQ_CST)) {
		taken = 0; /* the flush has begun: it will not read this */
		goto out;
	}
	uint64_t i = __atomic_fetch_add(&early_used, 1, __ATOMIC_RELAXED), at;
	struct early_event *c = i < EARLY_CAP ? chunk(chunk_of(i, &at)) : 0;
	if (!c) {
		count_lost(t0, t1);
		goto out;
	}
	struct early_event *e = &c[at];
	e->t0 = t0;
	e->t1 = t1;
	e->ret = (uint64_t)(uintptr_t)ret;
	e->bytes = bytes;
	e->released = (uint64_t)(uintptr_t)released;
	e->ip = (uint64_t)(uintptr_t)caller_ip;
	e->name = (uint8_t)name;
	__atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
out:
	__atomic_fetch_sub(&early_writers, 1, __ATOMIC_RELEASE);
	return taken;
}

/* 1 when no writer is left inside prof_early_record (bounded: see WRITERS_WAIT_LOOKS). */
static int writers_gone(void)
{
	for (unsigned looks = 0; looks < WRITERS_WAIT_LOOKS; looks++) {
		if (!__atomic_load_n(&early_writers, __ATOMIC_SEQ_CST))
			return 1;
		sched_yield();
	}
	return 0;
}

/* Gives the mapped chunks back; chunk 0 is static. */
static void unmap_chunks(void)
{
	for (unsigned k = 1; k < EARLY_CHUNKS; k++) {
		struct early_event *c = chunks[k];
		if (c && c != CHUNK_FAILED)
			munmap(c, chunk_events(k) * sizeof *c);
		chunks[k] = 0;
	}
}

static void note_lost_at(uint64_t t0, uint64_t t1, uint64_t *first, uint64_t *last)
{
	if (!*first || t0 < *first)
		*first = t0;
	if (t1 > *last)
		*last = t1;
}

/* One early event into t's ring, with its stack first when stacks are on. */
static void emit_one(struct prof_thread *t, const struct early_event *e)
{
	uint32_t stack = e->ret && e->ip && __atomic_load_n(&prof_stack_alloc_on, __ATOMIC_RELAXED)
				 ? prof_stack_of(&e->ip, 1)
				 : 0;
	if (stack)
		prof_emit(t, PROF_CAT_MEMORY, PROF_EV_STACK, PROF_EVF_NS, 0, 0, e->t0, e->t0, stack,
			  0, 0);
	uint8_t flags = PROF_EVF_NS | (e->ret ? PROF_EVF_ALLOCS : 0) |
			(e->released ? PROF_EVF_FREES : 0);
	/* as the session's other allocator calls: timed only when asked */
	uint64_t t1 = __atomic_load_n(&prof_alloc_timed, __ATOMIC_RELAXED) ? e->t1 : e->t0;
	prof_emit(t, PROF_CAT_MEMORY, PROF_EV_COMPLETE, flags, prof_names[e->name], 0, e->t0, t1,
		  e->ret, e->bytes, e->released);
}

void prof_early_flush(struct prof_thread *t, int keep)
{
	__atomic_store_n(&prof_early_open, 0, __ATOMIC_SEQ_CST);
	int settled = writers_gone();
	uint64_t n = __atomic_load_n(&early_used, __ATOMIC_ACQUIRE);
	if (n > EARLY_CAP)
		n = EARLY_CAP;
	t->busy++; /* what the flush allocates (the collector's /proc look) is libprof's */
	if (keep && (t->w.slot || prof_thread_claim(t))) {
		uint64_t lost = __atomic_load_n(&early_lost, __ATOMIC_RELAXED);
		uint64_t first = early_lost_first, last = early_lost_last;
		int given_up = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t at;
			unsigned k = chunk_of(i, &at);
			struct early_event *c = __atomic_load_n(&chunks[k], __ATOMIC_ACQUIRE);
			if (c == CHUNK_FAILED)
				continue; /* counted when its mmap failed */
			const struct early_event *e = c ? &c[at] : 0;
			if (!e || !__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE)) {
				/* still being written by a thread the flush stopped waiting
				 * for: counted, not guessed */
				lost++;
				continue;
			}
			/* More than a ring holds (libmxnet's start-up: 72,530 events, a 4M ring
			 * 65,536): wait for the collector to drain, as PROFILER_BLOCK
			 * writers do, while it lives and takes something; room is kept for
			 * this event, its stack and the LOST record that may follow. */
			if (!given_up && ring_wait_room(&t->w, 3, FLUSH_STILL_NS))
				given_up = 1;
			if (given_up) {
				lost++;
				prof_early_given_up++;
				note_lost_at(e->t0, e->t1, &first, &last);
				continue;
			}
			emit_one(t, e);
		}
		if (lost) {
			uint64_t now = prof_mono_ns();
			prof_emit(t, PROF_CAT_LOST, PROF_EV_LOST, PROF_EVF_NS, 0, 0,
				  first ? first : now, last ? last : now, lost, PROF_LOST_STARTUP,
				  0);
		}
	}
	/* a writer still inside (it never left in time) may yet store into a chunk */
	if (settled)
		unmap_chunks();
	t->busy--;
}
