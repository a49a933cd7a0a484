#include "preload/common/ring.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A writer blocked on a full ring yields this many times, then sleeps between looks: a
 * short wait is a drain pass away, a long one (the collector holding the program while
 * the live outputs catch up: seconds) must not keep a core spinning that they need. */
#define BLOCKED_YIELDS 1000
#define BLOCKED_SLEEP_NS 100000L

void ring_writer_init(struct ring_writer *w, struct prof_slot *slot, struct prof_event *ring,
		      uint64_t capacity, int block, int (*stalled)(void))
{
	w->slot = slot;
	w->ring = ring;
	w->mask = capacity - 1;
	w->head = atomic_load_explicit(&slot->head, memory_order_relaxed);
	w->cached_tail = atomic_load_explicit(&slot->tail, memory_order_acquire);
	w->block = block;
	w->stalled = stalled;
	w->commit_limit = UINT64_MAX;
	w->commit = 0;
	w->commit_failed = 0;
	w->commit_retry_in = 0;
}

/* Commits the ring up to event upto (exclusive; positions of the first lap, which
 * begins at 0: the collector resets a recycled slot's head). 0 when it is. */
static int commit_upto(struct ring_writer *w, uint64_t upto)
{
	if (upto <= w->commit_limit)
		return 0;
	/* a full /dev/shm: asked again every RING_COMMIT_RETRY refusals (the events of a
	 * thread whose ring cannot grow are dropped and counted meanwhile), so that room
	 * made later in /dev/shm is used */
	if (w->commit_failed && --w->commit_retry_in)
		return -1;
	struct prof_slot *s = w->slot;
	uint64_t cap = w->mask + 1, have = w->commit_limit;
	if (atomic_load_explicit(&s->prepared, memory_order_acquire) || have >= cap) {
		w->commit_limit = UINT64_MAX; /* the collector allocated it meanwhile */
		w->commit_failed = 0;
		return 0;
	}
	uint64_t want = have ? have * 2 : ring_first_chunk(cap);
	while (want < upto && want < cap)
		want *= 2;
	if (want > cap)
		want = cap;
	if (w->commit(w->ring + have, (size_t)(want - have) * sizeof *w->ring)) {
		w->commit_failed = 1;
		w->commit_retry_in = RING_COMMIT_RETRY;
		return -1;
	}
	w->commit_failed = 0;
	atomic_store_explicit(&s->committed, want * sizeof *w->ring, memory_order_relaxed);
	if (want == cap) {
		atomic_store_explicit(&s->prepared, 1, memory_order_release);
		want = UINT64_MAX;
	}
	w->commit_limit = want;
	return 0;
}

int ring_writer_commit_lazily(struct ring_writer *w, int (*commit)(void *addr, size_t len))
{
	uint64_t done = atomic_load_explicit(&w->slot->committed, memory_order_relaxed);
	w->commit = commit;
	w->commit_limit = done / sizeof *w->ring;
	w->commit_failed = 0;
	if (commit_upto(w, w->head + 1))
		return -1;
	w->cached_tail = w->head - (w->mask + 1); /* the fast path asks ring_has_room first */
	return 0;
}

int ring_has_room(struct ring_writer *w, uint64_t n)
{
	uint64_t cap = w->mask + 1, head = w->head;
	if (head - w->cached_tail + n <= cap)
		return 1;
	uint64_t tail = atomic_load_explicit(&w->slot->tail, memory_order_acquire);
	/* The tail the fast path compares with (it writes until head - cached_tail reaches
	 * cap): the reader's, or where the committed memory ends less a ring when that
	 * comes first. Neither depends on head, which a nested writer could move. */
	uint64_t seen = tail;
	if (w->commit_limit != UINT64_MAX) {
		commit_upto(w, head + n); /* on failure the limit stays: room ends there */
		uint64_t lim = w->commit_limit, used = head - tail;
		uint64_t room = used < cap ? cap - used : 0, committed = lim > head ? lim - head : 0;
		if (lim != UINT64_MAX && committed < room)
			seen = lim - cap;
	}
	w->cached_tail = seen;
	return w->head - seen + n <= cap;
}

static void count_drop(struct ring_writer *w, uint64_t now)
{
	struct prof_slot *s = w->slot;
	uint64_t pending = atomic_load_explicit(&s->lost_pending, memory_order_relaxed);
	if (pending == 0)
		atomic_store_explicit(&s->lost_first, now, memory_order_relaxed);
	atomic_store_explicit(&s->lost_last, now, memory_order_relaxed);
	atomic_store_explicit(&s->lost_pending, pending + 1, memory_order_release);
	atomic_store_explicit(&s->lost_total,
			      atomic_load_explicit(&s->lost_total, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* The gap is reported in order, just before the first event that fits after it. */
static void write_lost_event(struct ring_writer *w)
{
	struct prof_slot *s = w->slot;
	struct prof_event *e = &w->ring[w->head & w->mask];
	*e = (struct prof_event){
		.t0 = atomic_load_explicit(&s->lost_first, memory_order_relaxed),
		.t1 = atomic_load_explicit(&s->lost_last, memory_order_relaxed),
		.a = atomic_load_explicit(&s->lost_pending, memory_order_relaxed),
		.cat = PROF_CAT_LOST,
		.type = PROF_EV_LOST,
	};
	atomic_store_explicit(&s->lost_pending, 0, memory_order_relaxed);
	ring_commit(w);
}

/* One wait between looks at the ring: yields first, then sleeps (see BLOCKED_YIELDS). */
static void wait_a_little(unsigned looks)
{
	if (looks < BLOCKED_YIELDS) {
		sched_yield();
		return;
	}
	/* the system call itself: nanosleep() is a cancellation point, and malloc must not
	 * be one */
	int saved = errno; /* inside wrapped calls: errno is the program's */
	struct timespec ts = {0, BLOCKED_SLEEP_NS};
	syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
	errno = saved;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ring_wait_room(struct ring_writer *w, uint64_t n, uint64_t still_ns)
{
	if (atomic_load_explicit(&w->slot->lost_pending, memory_order_relaxed))
		n++; /* the gap's LOST record goes first */
	uint64_t tail = w->cached_tail, since = 0;
	/* stalled() is asked before every wait: it is cheap (a heartbeat word and the
	 * clock), and a dead collector must cost one call, not 1024 yields */
	for (unsigned looks = 0; !ring_has_room(w, n); looks++) {
		/* past what /dev/shm could allocate: no drain makes room there */
		if (w->commit_failed && w->head + n > w->commit_limit)
			return -1;
		if (w->stalled && w->stalled())
			return -1;
		if (still_ns) {
			uint64_t now = mono_ns();
			if (w->cached_tail != tail || !since) {
				tail = w->cached_tail;
				since = now;
			} else if (now - since >= still_ns) {
				return -1;
			}
		}
		wait_a_little(looks);
	}
	return 0;
}

struct prof_event *ring_reserve_slow(struct ring_writer *w, uint64_t now)
{
	int gap = atomic_load_explicit(&w->slot->lost_pending, memory_order_relaxed) != 0;
	if (!ring_has_room(w, gap ? 2 : 1) && (!w->block || ring_wait_room(w, 1, 0))) {
		count_drop(w, now);
		return 0;
	}
	if (gap)
		write_lost_event(w);
	return &w->ring[w->head & w->mask];
}

uint64_t ring_drain(struct prof_slot *slot, const struct prof_event *ring, uint64_t capacity,
		    ring_read_fn fn, void *ctx)
{
	uint64_t head = atomic_load_explicit(&slot->head, memory_order_acquire);
	return ring_drain_upto(slot, ring, capacity, head, fn, ctx);
}

uint64_t ring_drain_upto(struct prof_slot *slot, const struct prof_event *ring,
			 uint64_t capacity, uint64_t head, ring_read_fn fn, void *ctx)
{
	uint64_t tail = atomic_load_explicit(&slot->tail, memory_order_relaxed);
	uint64_t n = head - tail;
	/* the writer's memory is not trusted: nothing outside the ring is read */
	if (n == 0 || n > capacity || !capacity || (capacity & (capacity - 1)))
		return 0;
	/* Handed over a piece at a time, the space given back after each: a full ring of a
	 * writer going flat out takes the collector ~1.5 ms, and given back only at the
	 * end, all of it dropped the writer's events meanwhile (half of them were lost). fn
	 * has copied a piece when it returns. */
	uint64_t mask = capacity - 1, done = 0;
	while (done < n) {
		uint64_t first = (tail + done) & mask;
		uint64_t run = n - done;
		if (run > capacity - first)
			run = capacity - first;
		if (run > RING_DRAIN_PIECE)
			run = RING_DRAIN_PIECE;
		fn(ctx, ring + first, run);
		done += run;
		atomic_store_explicit(&slot->tail, tail + done, memory_order_release);
	}
	return n;
}
