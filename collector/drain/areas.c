/* Reading a segment's growing areas (areas.h). */
#define _GNU_SOURCE
#include "collector/drain/areas.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/shm/shm_guard.h"

void shm_area_init(struct shm_area *a, const char *seg, uint64_t seg_size, uint64_t seg_mapped,
		   const char *name, volatile int *shrunk, uint64_t first_off, uint64_t first,
		   const _Atomic uint64_t *offs, uint64_t limit)
{
	memset(a, 0, sizeof *a);
	a->first = first;
	a->limit = limit;
	a->offs = offs;
	a->name = name;
	a->seg = seg;
	a->seg_size = seg_size;
	a->seg_mapped = seg_mapped;
	a->shrunk = shrunk;
	a->chunk[0] = seg + first_off;
}

uint64_t shm_area_chunk_end(const struct shm_area *a, uint64_t at)
{
	unsigned k = prof_area_chunk(a->first, at);
	return prof_area_chunk_start(a->first, k) + prof_area_chunk_size(a->first, k);
}

/* Chunk k mapped: inside the segment's own mapping when the file had grown before it was
 * mapped, else apart. */
static const char *map_chunk(struct shm_area *a, unsigned k)
{
	uint64_t off = atomic_load_explicit(&a->offs[k], memory_order_acquire);
	uint64_t size = prof_area_chunk_size(a->first, k);
	if (!off)
		return NULL; /* not published yet */
	/* after the segment's own areas, page-aligned; the writer is not trusted */
	if (off < a->seg_size || (off & 4095) || off > UINT64_MAX - size) {
		snprintf(a->why, sizeof a->why, "chunk %u of an area at %llu, inside the segment or "
			 "misaligned", k, (unsigned long long)off);
		return NULL;
	}
	if (off + size <= a->seg_mapped)
		return a->seg + off;
	char path[300];
	snprintf(path, sizeof path, "/dev/shm%s", a->name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	void *v = MAP_FAILED;
	if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size >= off + size)
		v = mmap(0, size, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (fd >= 0)
		close(fd);
	if (v == MAP_FAILED) {
		snprintf(a->why, sizeof a->why, "chunk %u of an area (%llu bytes at %llu) cannot be "
			 "mapped", k, (unsigned long long)size, (unsigned long long)off);
		return NULL;
	}
	if (shm_guard_add(v, size, a->shrunk)) {
		munmap(v, size);
		snprintf(a->why, sizeof a->why, "chunk %u of an area cannot be guarded", k);
		return NULL;
	}
	a->own[k] = 1;
	return v;
}

const char *shm_area_at(struct shm_area *a, uint64_t at, uint64_t len)
{
	if (at > a->limit || len > a->limit - at)
		return NULL;
	unsigned k = prof_area_chunk(a->first, at);
	if (k >= PROF_AREA_CHUNKS || at + len > shm_area_chunk_end(a, at))
		return NULL;
	if (!a->chunk[k] && !a->why[0])
		a->chunk[k] = map_chunk(a, k);
	return a->chunk[k] ? a->chunk[k] + (at - prof_area_chunk_start(a->first, k)) : NULL;
}

void shm_area_release(struct shm_area *a)
{
	for (unsigned k = 1; k < PROF_AREA_CHUNKS; k++)
		if (a->own[k]) {
			shm_guard_remove((void *)a->chunk[k]);
			munmap((void *)a->chunk[k], prof_area_chunk_size(a->first, k));
			a->own[k] = 0;
		}
	memset(a->chunk, 0, sizeof a->chunk);
}
