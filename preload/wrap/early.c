/* The early buffer (see early.h). Entries are claimed by an atomic add and published by
 * a flag stored last, so a thread that started before the constructor cannot hand the
 * flush a half-written entry. */
#include "preload/wrap/early.h"
#include "preload/stacks/stack.h"

#define EARLY_MAX 8192 /* 384 KiB of .bss, touched only as far as used */

struct early_event {
	uint64_t t0, t1, ret, bytes, released, ip;
	uint8_t name;
	uint8_t ready;
};

int prof_early_open = 1;
static struct early_event early[EARLY_MAX];
static uint32_t early_used;
static uint64_t early_lost, early_lost_first, early_lost_last;

void prof_early_record(enum prof_name name, uint64_t t0, uint64_t t1, void *ret, size_t bytes,
		       void *released, void *caller_ip)
{
	uint32_t i = __atomic_fetch_add(&early_used, 1, __ATOMIC_RELAXED);
	if (i >= EARLY_MAX) {
		if (__atomic_fetch_add(&early_lost, 1, __ATOMIC_RELAXED) == 0)
			early_lost_first = t0;
		early_lost_last = t1;
		return;
	}
	struct early_event *e = &early[i];
	e->t0 = t0;
	e->t1 = t1;
	e->ret = (uint64_t)(uintptr_t)ret;
	e->bytes = bytes;
	e->released = (uint64_t)(uintptr_t)released;
	e->ip = (uint64_t)(uintptr_t)caller_ip;
	e->name = (uint8_t)name;
	__atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
}

void prof_early_flush(struct prof_thread *t, int keep)
{
	__atomic_store_n(&prof_early_open, 0, __ATOMIC_RELEASE);
	if (!keep)
		return;
	uint32_t n = __atomic_load_n(&early_used, __ATOMIC_ACQUIRE);
	if (n > EARLY_MAX)
		n = EARLY_MAX;
	uint64_t lost = __atomic_load_n(&early_lost, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < n; i++) {
		const struct early_event *e = &early[i];
		if (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE)) {
			lost++; /* still being written by another thread: counted, not guessed */
			continue;
		}
		uint32_t stack = e->ret && e->ip &&
					 __atomic_load_n(&prof_stack_alloc_on, __ATOMIC_RELAXED)
				 ? prof_stack_of(&e->ip, 1)
				 : 0;
		if (stack)
			prof_emit(t, PROF_CAT_MEMORY, PROF_EV_STACK, PROF_EVF_NS, 0, 0, e->t0, e->t0,
				  stack, 0, 0);
		uint8_t flags = PROF_EVF_NS | (e->ret ? PROF_EVF_ALLOCS : 0) |
				(e->released ? PROF_EVF_FREES : 0);
		/* as the session's other allocator calls: timed only when asked */
		uint64_t t1 = __atomic_load_n(&prof_alloc_timed, __ATOMIC_RELAXED) ? e->t1 : e->t0;
		prof_emit(t, PROF_CAT_MEMORY, PROF_EV_COMPLETE, flags, prof_names[e->name], 0, e->t0,
			  t1, e->ret, e->bytes, e->released);
	}
	if (lost)
		prof_emit(t, PROF_CAT_LOST, PROF_EV_LOST, PROF_EVF_NS, 0, 0,
			  early_lost_first ? early_lost_first : prof_mono_ns(),
			  early_lost_last ? early_lost_last : prof_mono_ns(), lost, 0, 0);
}
