/* Single-writer, single-reader event ring in shared memory. The writer is one thread of
 * the profiled program, the reader the collector. No lock and no system call on the
 * writer's side; a full ring drops the event and counts the gap, unless blocking. */
#ifndef PROF_PRELOAD_RING_H
#define PROF_PRELOAD_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "preload/common/shm_layout.h"

struct ring_writer {
	struct prof_slot *slot;
	struct prof_event *ring;
	uint64_t mask;        /* capacity - 1 */
	uint64_t head;        /* private copy of slot->head */
	uint64_t cached_tail; /* last tail seen; reloaded only when the ring looks full */
	int block;            /* wait for room instead of dropping */
	/* Called while blocked; returns non-zero to give up and drop (collector gone or
	 * stopped). */
	int (*stalled)(void);
	/* A ring committed as it is reached (ring_writer_commit_lazily): events from the
	 * ring's start whose memory is allocated, in its first lap; UINT64_MAX when all of
	 * it is. The room the writer sees (cached_tail) never reaches past it. */
	uint64_t commit_limit;
	int (*commit)(void *addr, size_t len);
	/* /dev/shm full: events past the limit are dropped, counted, and the commit asked
	 * again after commit_retry_in more refusals */
	int commit_failed;
	unsigned commit_retry_in;
};

void ring_writer_init(struct ring_writer *w, struct prof_slot *slot, struct prof_event *ring,
		      uint64_t capacity, int block, int (*stalled)(void));

/* For a ring whose memory is not allocated yet (slot->prepared 0): commit() allocates
 * it as the writer reaches it, in chunks doubling from RING_COMMIT_FIRST bytes, so that
 * a thread commits about twice what it writes, not the whole ring at its first event
 * (800 threads each populating 4 MiB were half of a thread-heavy program's time).
 * slot->committed keeps the progress for the slot's next owner; slot->prepared is set
 * once the whole ring is. Where a commit fails (a full /dev/shm) the events past what is
 * committed are dropped and counted, and the commit is asked again every
 * RING_COMMIT_RETRY refusals. -1 when even the first chunk cannot be committed. */
#define RING_COMMIT_FIRST (64u << 10)
#define RING_COMMIT_RETRY 1024

/* Events of a ring of capacity events committed first: what a claim commits, and what
 * the segment's maker and the collector's pool allocate ahead. */
static inline uint64_t ring_first_chunk(uint64_t capacity)
{
	uint64_t events = RING_COMMIT_FIRST / sizeof(struct prof_event);
	return events < capacity ? events : capacity;
}
int ring_writer_commit_lazily(struct ring_writer *w, int (*commit)(void *addr, size_t len));

/* Whether n events fit now (the tail reloaded, the next chunk committed if need be). */
int ring_has_room(struct ring_writer *w, uint64_t n);

/* Slow path of ring_reserve: the ring looked full, or a gap must be reported first. */
struct prof_event *ring_reserve_slow(struct ring_writer *w, uint64_t now);

/* Space for one event, or NULL when it was dropped (and counted). */
static inline struct prof_event *ring_reserve(struct ring_writer *w, uint64_t now)
{
	if (__builtin_expect(w->head - w->cached_tail <= w->mask &&
				     !atomic_load_explicit(&w->slot->lost_pending,
							   memory_order_relaxed),
			     1))
		return &w->ring[w->head & w->mask];
	return ring_reserve_slow(w, now);
}

/* Waits as a blocked writer does until n events fit (and a pending gap's LOST record
 * before them), whether or not w blocks: 0 then. -1 when stalled() gives up, or when
 * still_ns (0: no limit) pass without the reader taking anything. For a writer that
 * must not drop what it hands over in one go (the early buffer's flush). */
int ring_wait_room(struct ring_writer *w, uint64_t n, uint64_t still_ns);

static inline void ring_commit(struct ring_writer *w)
{
	w->head++;
	atomic_store_explicit(&w->slot->head, w->head, memory_order_release);
}

/* Reader: hands every event between tail and head to fn in order, in pieces of at most
 * RING_DRAIN_PIECE events (and at the wrap), releasing each piece once fn returns.
 * Returns the events read. */
#define RING_DRAIN_PIECE 4096
typedef void (*ring_read_fn)(void *ctx, const struct prof_event *ev, uint64_t n);
uint64_t ring_drain(struct prof_slot *slot, const struct prof_event *ring, uint64_t capacity,
		    ring_read_fn fn, void *ctx);
/* The same up to a head the caller loaded (acquire) earlier. A span that cannot be (head
 * behind the tail or beyond tail + capacity, a capacity not a power of two) is left
 * unread: 0. */
uint64_t ring_drain_upto(struct prof_slot *slot, const struct prof_event *ring,
			 uint64_t capacity, uint64_t head, ring_read_fn fn, void *ctx);

#endif
