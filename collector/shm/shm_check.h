/* A process segment is written by the profiled program, which may be buggy or hostile:
 * the collector checks every offset, size, count and index it takes from it before use.
 * The geometry is read once, checked against the mapped size, and kept: later address
 * arithmetic uses the kept copy, never the header again, which is only compared with it. */
#ifndef PROF_COLLECTOR_SHM_CHECK_H
#define PROF_COLLECTOR_SHM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "preload/common/config.h"
#include "preload/common/shm_layout.h"

/* libprof makes 256 slots; the bound keeps a pass's work bounded (orphan slots are
 * compared with every other slot) */
#define SHM_MAX_SLOTS 4096
#define SHM_MAX_RING_CAP (1ull << 32) /* events per ring (192 GiB) */
#define SHM_MAX_FRAMES 1024           /* frames of one stack: a bound looser than libprof's */
_Static_assert(SHM_MAX_FRAMES >= PROF_MAX_STACK_FRAMES, "libprof's stacks must pass the check");

struct shm_geom {
	uint64_t size; /* bytes mapped (fstat of the segment when it was opened) */
	uint64_t seg_size; /* the header's segment_size: its own areas end there, the areas'
			      further chunks (shm_layout.h) follow in the same file */
	uint32_t pid, nslots;
	uint64_t ring_cap;
	uint64_t strings_off, strings_size, slots_off, rings_off, stacks_off, stacks_size;
};

/* Reads and checks a segment's geometry. 0, or -1 with the problem in why. */
int shm_geom_read(const struct prof_proc_shm *p, uint64_t mapped, struct shm_geom *g,
		  char *why, size_t len);
/* The header still says what it said when read (a live rewrite is corruption). */
int shm_geom_same(const struct prof_proc_shm *p, const struct shm_geom *g, char *why,
		  size_t len);

static inline struct prof_slot *shm_slot(struct prof_proc_shm *p, const struct shm_geom *g,
					 unsigned i)
{
	return (struct prof_slot *)((char *)p + g->slots_off) + i;
}

static inline const struct prof_event *shm_ring(struct prof_proc_shm *p,
						const struct shm_geom *g, unsigned i)
{
	return (const struct prof_event *)((char *)p + g->rings_off +
					   (uint64_t)i * g->ring_cap * sizeof(struct prof_event));
}

/* A ring's unread span: head must not be behind tail nor beyond tail + capacity. */
int shm_check_span(uint64_t tail, uint64_t head, uint64_t cap, unsigned slot, char *why,
		   size_t len);
/* A count of dropped events must be possible: at most one per nanosecond per writer
 * since boot (now_ns of CLOCK_MONOTONIC), times writers. */
int shm_check_lost(uint64_t count, uint64_t now_ns, uint64_t writers, const char *what,
		   char *why, size_t len);
/* An event of a type a ring may hold (checked as each is copied: one compare). */
static inline int shm_event_type_ok(const struct prof_event *e)
{
	return (unsigned)e->type - PROF_EV_COMPLETE <= PROF_EV_STACKED_ALLOC - PROF_EV_COMPLETE;
}

#endif
