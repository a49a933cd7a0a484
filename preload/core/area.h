/* The strings and stack areas of this process's segment, growing with what the program
 * does (issue 29): further chunks are appended to the segment's file and mapped apart
 * (shm_layout.h, prof_area_chunk). Entries are found by logical offset. */
#ifndef PROF_PRELOAD_AREA_H
#define PROF_PRELOAD_AREA_H

#include <stdint.h>

#include "preload/common/shm_layout.h"

enum prof_area_kind { PROF_AREA_STRINGS, PROF_AREA_STACKS, PROF_AREA_KINDS };

struct prof_area_map {
	uint64_t first;  /* the first chunk's size (a power of two) */
	uint64_t limit;  /* logical bytes it may reach: the ids' range, PROFILER_AREA_MAX */
	char *chunk[PROF_AREA_CHUNKS]; /* published (release) once mapped */
	int failed;      /* a chunk could not be made: the area stays as it is */
};

extern struct prof_area_map prof_areas[PROF_AREA_KINDS];
extern __thread int prof_area_growing_here __attribute__((tls_model("initial-exec")));

/* This process's new segment, named name in /dev/shm: the areas start again at their
 * first chunks. */
void prof_area_attach(struct prof_proc_shm *p, const char *name);

/* Where logical offset at of an area is mapped, or NULL when its chunk is not (yet). */
static inline char *prof_area_at(enum prof_area_kind kind, uint64_t at)
{
	struct prof_area_map *m = &prof_areas[kind];
	unsigned k = prof_area_chunk(m->first, at);
	if (k >= PROF_AREA_CHUNKS)
		return 0;
	char *base = __atomic_load_n(&m->chunk[k], __ATOMIC_ACQUIRE);
	return base ? base + (at - prof_area_chunk_start(m->first, k)) : 0;
}

/* Chunk k of an area mapped, making it when it is not: its base, or NULL when it cannot
 * be made (beyond the limit, /dev/shm full). Takes the segment's growth lock; a thread
 * that finds it taken waits (the holder is in a few system calls), unless it is the
 * holder itself (a signal handler inside a growth): then NULL. */
char *prof_area_grow(enum prof_area_kind kind, unsigned k);

/* A forked child that gets no segment of its own lets go of its parent's chunks. */
void prof_area_detach(void);

/* The areas of a forked child's new segment hold its parent's (from, still mapped in
 * the child), ids unchanged: strings up to strings_used, stacks up to stacks_used. */
int prof_area_inherit(struct prof_proc_shm *from, struct prof_proc_shm *to, const char *name,
		      uint64_t strings_used, uint64_t stacks_used);

#endif
