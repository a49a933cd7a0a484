/* The growing hash index (idtable.h). A slot is (hash << 32) | value; 0 is empty. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "preload/core/idtable.h"

static size_t table_bytes(const struct idtable *t, unsigned i)
{
	return (sizeof(uint64_t)) << (t->first_bits + i);
}

static _Atomic uint64_t *map_table(const struct idtable *t, unsigned i)
{
	void *p = mmap(0, table_bytes(t, i), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	return p == MAP_FAILED ? 0 : p;
}

/* Puts v into table i at the first empty slot of its probe; 1 when placed. */
static int place(_Atomic uint64_t *tab, uint64_t mask, uint64_t v)
{
	uint32_t h = (uint32_t)(v >> 32);
	for (uint64_t i = h & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
		uint64_t cur = atomic_load_explicit(&tab[i], memory_order_relaxed);
		if (cur)
			continue;
		if (atomic_compare_exchange_strong_explicit(&tab[i], &cur, v, memory_order_release,
							    memory_order_relaxed))
			return 1;
	}
	return 0;
}

uint32_t idt_find(struct idtable *t, uint32_t h, int (*same)(uint32_t val, const void *key),
		  const void *key)
{
	unsigned n = atomic_load_explicit(&t->ntables, memory_order_acquire);
	while (n--) {
		_Atomic uint64_t *tab = atomic_load_explicit(&t->t[n], memory_order_acquire);
		uint64_t mask = ((uint64_t)1 << (t->first_bits + n)) - 1;
		for (uint64_t i = h & mask, probes = 0; probes <= mask;
		     i = (i + 1) & mask, probes++) {
			uint64_t v = atomic_load_explicit(&tab[i], memory_order_acquire);
			if (!v)
				break;
			if ((uint32_t)(v >> 32) == h && same((uint32_t)v, key))
				return (uint32_t)v;
		}
	}
	return 0;
}

/* The thread is growing a table (a signal handler on it must not wait for that). */
static __thread int growing_here;

static int grow_newest(struct idtable *t, unsigned n);

/* A table twice the newest's, holding its entries, published; 0 or -1. Only the thread
 * holding `growing` runs it. */
static int grow(struct idtable *t, unsigned n)
{
	growing_here = 1;
	atomic_signal_fence(memory_order_seq_cst);
	int r = grow_newest(t, n);
	atomic_signal_fence(memory_order_seq_cst);
	growing_here = 0;
	return r;
}

static int grow_newest(struct idtable *t, unsigned n)
{
	if (n >= IDT_TABLES)
		return -1;
	_Atomic uint64_t *tab = map_table(t, n);
	if (!tab)
		return -1;
	uint64_t mask = ((uint64_t)1 << (t->first_bits + n)) - 1, moved = 0;
	/* entries of the older tables copied in, so lookups mostly end in the newest one;
	 * an entry added to the old newest during the copy is still found there */
	if (n) {
		_Atomic uint64_t *old = atomic_load_explicit(&t->t[n - 1], memory_order_acquire);
		for (uint64_t i = 0; i <= mask >> 1; i++) {
			uint64_t v = atomic_load_explicit(&old[i], memory_order_acquire);
			if (v && place(tab, mask, v))
				moved++;
		}
	}
	atomic_store_explicit(&t->t[n], tab, memory_order_release);
	atomic_store_explicit(&t->filled, moved, memory_order_relaxed);
	atomic_store_explicit(&t->ntables, n + 1, memory_order_release);
	return 0;
}

int idt_add(struct idtable *t, uint32_t h, uint32_t val)
{
	uint64_t v = (uint64_t)h << 32 | val;
	for (;;) {
		unsigned n = atomic_load_explicit(&t->ntables, memory_order_acquire);
		uint64_t cap = n ? (uint64_t)1 << (t->first_bits + n - 1) : 0;
		/* at half full the newest table is doubled, so probes stay short */
		if (!n)
			return -1; /* idt_reset could not map the first table */
		if (atomic_load_explicit(&t->filled, memory_order_relaxed) >= cap / 2 &&
		    !atomic_flag_test_and_set_explicit(&t->growing, memory_order_acquire)) {
			int failed = 0;
			if (atomic_load_explicit(&t->ntables, memory_order_acquire) == n)
				failed = grow(t, n);
			atomic_flag_clear_explicit(&t->growing, memory_order_release);
			if (!failed)
				continue;
		}
		/* another thread grows it (or it cannot grow, or a signal handler interrupted
		 * this thread's growth): the newest still has room until it is full */
		_Atomic uint64_t *tab = atomic_load_explicit(&t->t[n - 1], memory_order_acquire);
		if (place(tab, cap - 1, v)) {
			atomic_fetch_add_explicit(&t->filled, 1, memory_order_relaxed);
			return 0;
		}
		/* full before another thread's growth published a bigger one: grown here, or
		 * waited for (not when the growth is this thread's, under a signal handler;
		 * at most 2 s, should the grower never run again) */
		if (growing_here)
			return -1;
		for (uint64_t since = 0; atomic_load(&t->ntables) == n;) {
			if (!atomic_flag_test_and_set(&t->growing)) {
				int failed = atomic_load(&t->ntables) == n ? grow(t, n) : 0;
				atomic_flag_clear(&t->growing);
				if (failed)
					return -1; /* full, and no bigger one could be made */
				break;
			}
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
			if (!since)
				since = now;
			else if (now - since > 2000000000u)
				return -1;
			sched_yield();
		}
	}
}

void idt_reset(struct idtable *t)
{
	unsigned n = atomic_load(&t->ntables);
	for (unsigned i = 0; i < n; i++)
		munmap((void *)atomic_load(&t->t[i]), table_bytes(t, i));
	memset((void *)t->t, 0, sizeof t->t);
	atomic_store(&t->ntables, 0);
	atomic_store(&t->filled, 0);
	atomic_flag_clear(&t->growing);
	/* the first table made now, outside any signal handler */
	(void)grow(t, 0);
}

void idt_after_fork(struct idtable *t)
{
	atomic_flag_clear(&t->growing);
}
