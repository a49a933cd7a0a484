/* A process segment's strings and stack areas as the collector reads them: the first
 * chunk inside the segment's mapping, later ones (shm_layout.h, prof_area_chunk) mapped
 * read-only as the program publishes them, each checked and guarded like the segment. */
#ifndef PROF_COLLECTOR_AREAS_H
#define PROF_COLLECTOR_AREAS_H

#include <stdint.h>

#include "preload/common/shm_layout.h"

struct shm_area {
	uint64_t first;        /* the first chunk's size */
	uint64_t limit;        /* the ids' range: logical offsets beyond it are refused */
	const _Atomic uint64_t *offs; /* the segment's chunk_off words for this area */
	const char *name;      /* the segment's /dev/shm name, to map chunks by */
	const char *seg;       /* the segment's mapping, and its size */
	uint64_t seg_size, seg_mapped;
	volatile int *shrunk;  /* shm_guard's flag for the segment */
	const char *chunk[PROF_AREA_CHUNKS];
	int own[PROF_AREA_CHUNKS]; /* mapped apart (unmapped by shm_area_release) */
	char why[160];         /* set when a published chunk cannot be believed */
};

/* An area starting at first_off of a segment mapped at seg (mapped bytes of a file
 * whose header says seg_size). */
void shm_area_init(struct shm_area *a, const char *seg, uint64_t seg_size, uint64_t seg_mapped,
		   const char *name, volatile int *shrunk, uint64_t first_off, uint64_t first,
		   const _Atomic uint64_t *offs, uint64_t limit);
/* [at, at + len) of the area, inside one chunk: NULL when its chunk is not published yet,
 * or cannot be believed (then why is set: the caller quarantines the segment). */
const char *shm_area_at(struct shm_area *a, uint64_t at, uint64_t len);
/* Where the chunk holding at ends (logical offset). */
uint64_t shm_area_chunk_end(const struct shm_area *a, uint64_t at);
void shm_area_release(struct shm_area *a);

#endif
