/* A lock-free open-addressing set of block addresses (see internal_blocks.h): inserts
 * and removals by CAS, so any thread, a signal handler or a fork child may use it. A
 * removed entry becomes a tombstone that a later insert may reuse; look-ups stop only at
 * an empty entry. */
#include <stdint.h>

#include "preload/common/debug.h"
#include "preload/wrap/internal_blocks.h"

#define BITS 15 /* 32,768 blocks: libprof's own live blocks are few per thread */
#define SIZE (1u << BITS)
#define PROBES 64
#define TOMB ((uintptr_t)1)

int prof_internal_live;
uint8_t prof_internal_filter[PROF_INTERNAL_FILTER];
static uintptr_t set[SIZE];

/* +1 or -1 on p's filter byte; at 255 it stays there (the set then decides). */
static void filter_add(uintptr_t p, int d)
{
	uint8_t *f = &prof_internal_filter[prof_internal_bucket((void *)p)];
	uint8_t cur = __atomic_load_n(f, __ATOMIC_RELAXED);
	while (cur != 255 && !(d < 0 && cur == 0) &&
	       !__atomic_compare_exchange_n(f, &cur, (uint8_t)(cur + d), 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static inline unsigned home(uintptr_t p)
{
	return (unsigned)(((p >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - BITS));
}

void prof_internal_note(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	if (p <= TOMB)
		return;
	unsigned h = home(p);
	for (unsigned i = 0; i < PROBES; i++) {
		uintptr_t *e = &set[(h + i) & (SIZE - 1)];
		uintptr_t cur = __atomic_load_n(e, __ATOMIC_RELAXED);
		if ((cur == 0 || cur == TOMB) &&
		    __atomic_compare_exchange_n(e, &cur, p, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			filter_add(p, 1);
			__atomic_add_fetch(&prof_internal_live, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	prof_debug(PROF_DEBUG_ALLOC, "libprof's own block %p not noted (%u entries probed, "
		   "all taken): its release will show as the program's", ptr, PROBES);
}

int prof_internal_forget(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	if (p <= TOMB)
		return 0;
	unsigned h = home(p);
	for (unsigned i = 0; i < PROBES; i++) {
		uintptr_t *e = &set[(h + i) & (SIZE - 1)];
		uintptr_t cur = __atomic_load_n(e, __ATOMIC_RELAXED);
		if (cur == 0)
			return 0;
		if (cur == p &&
		    __atomic_compare_exchange_n(e, &cur, TOMB, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			filter_add(p, -1);
			__atomic_sub_fetch(&prof_internal_live, 1, __ATOMIC_RELAXED);
			return 1;
		}
	}
	return 0;
}
