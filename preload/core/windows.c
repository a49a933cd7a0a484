/* The recording windows of this process; see windows.h. */
#include "preload/core/windows.h"

#include <stdatomic.h>

#include "preload/common/clock.h"

/* A training loop with a step schedule toggles twice a cycle: room for hours of it */
#define WINDOW_MARKS 16384

struct mark {
	uint64_t ns;
	int on;
};

static struct mark marks[WINDOW_MARKS];
static _Atomic uint32_t published; /* marks[0..published) are complete */
static _Atomic int overflow; /* changes lost: every time counts as recording */
static atomic_flag lock = ATOMIC_FLAG_INIT;
static int last = -1;

/* Changes are rare, so the lock is a spin; one held by a thread that is gone (a fork
 * from another thread) or that this thread's signal handler interrupted is given up on
 * after a while, and filtering with it (nothing is left out from then on). */
#define SPIN_MAX (1u << 22)

void prof_window_note(int on)
{
	for (unsigned spins = 0;
	     atomic_flag_test_and_set_explicit(&lock, memory_order_acquire); spins++)
		if (spins == SPIN_MAX) {
			atomic_store(&overflow, 1);
			return;
		}
	uint32_t n = atomic_load_explicit(&published, memory_order_relaxed);
	if (on != last) {
		if (n < WINDOW_MARKS) {
			marks[n].ns = prof_mono_ns();
			marks[n].on = on;
			atomic_store_explicit(&published, n + 1, memory_order_release);
		} else {
			atomic_store(&overflow, 1);
		}
		last = on;
	}
	atomic_flag_clear_explicit(&lock, memory_order_release);
}

int prof_window_recording(uint64_t ns)
{
	uint32_t n = atomic_load_explicit(&published, memory_order_acquire);
	if (atomic_load_explicit(&overflow, memory_order_relaxed))
		return 1;
	/* the last change at or before ns */
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (marks[mid].ns <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? marks[lo - 1].on : 0;
}
