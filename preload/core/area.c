/* Growing the strings and stack areas (area.h). A chunk is made rarely (each one doubles
 * its area), so its system calls are off the hot path: the file is reopened by name (a
 * daemon may have closed every descriptor), lengthened, the chunk allocated with
 * fallocate (so no later store can meet a full /dev/shm as a SIGBUS) and mapped. One
 * lock per process orders growth, since both areas lengthen the same file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/common/session.h"
#include "preload/core/area.h"
#include "preload/core/state.h"

struct prof_area_map prof_areas[PROF_AREA_KINDS];

static char segment_name[160];
static struct prof_proc_shm *segment;
static atomic_flag grow_lock = ATOMIC_FLAG_INIT;
/* this thread is making a chunk: its signal handlers neither wait for it nor reserve
 * space in a chunk still to come (which would leave a hole no reader gets past) */
__thread int prof_area_growing_here __attribute__((tls_model("initial-exec")));

/* the ids' range: string ids are offsets (u32), stack ids offset / 8 + 1 (u32) */
#define STRINGS_ID_LIMIT (1ull << 32)
#define STACKS_ID_LIMIT (8ull << 32)

static _Atomic uint64_t *chunk_offs(struct prof_proc_shm *p, enum prof_area_kind kind)
{
	return kind == PROF_AREA_STRINGS ? p->strings_chunk_off : p->stacks_chunk_off;
}

static void map_reset(struct prof_area_map *m, char *first_base, uint64_t first, uint64_t ids)
{
	memset(m, 0, sizeof *m);
	m->first = first;
	uint64_t max = prof_cfg.area_max;
	m->limit = max && max < ids ? (max > first ? max : first) : ids;
	m->chunk[0] = first_base;
}

void prof_area_attach(struct prof_proc_shm *p, const char *name)
{
	snprintf(segment_name, sizeof segment_name, "%s", name);
	segment = p;
	map_reset(&prof_areas[PROF_AREA_STRINGS], prof_proc_strings(p), p->strings_size,
		  STRINGS_ID_LIMIT);
	map_reset(&prof_areas[PROF_AREA_STACKS], prof_proc_stacks(p), p->stacks_size,
		  STACKS_ID_LIMIT);
	atomic_flag_clear(&grow_lock); /* a fork may have caught another thread holding it */
	prof_area_growing_here = 0;
}

/* Lengthens the file by size bytes and maps them: the new chunk's file offset in *off. */
static char *make_chunk(uint64_t size, uint64_t *off)
{
	char path[200];
	snprintf(path, sizeof path, "/dev/shm%s", segment_name);
	int fd;
	while ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0 && errno == EINTR)
		;
	if (fd < 0)
		return 0;
	struct stat st;
	char *base = 0;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)segment->segment_size) {
		uint64_t at = ((uint64_t)st.st_size + 4095) & ~4095ull;
		if (ftruncate(fd, (off_t)(at + size)) == 0) {
			/* tmpfs gives up a long fallocate when a signal is pending (EINTR, even
			 * under SA_RESTART): tried again, not taken for a full /dev/shm */
			int rc;
			while ((rc = fallocate(fd, 0, (off_t)at, (off_t)size)) && errno == EINTR)
				;
			if (rc == 0) {
				void *v = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
					       (off_t)at);
				if (v != MAP_FAILED) {
					base = v;
					*off = at;
				}
			}
			if (!base) /* the file as it was: a later chunk may still fit */
				(void)!ftruncate(fd, st.st_size);
		}
	}
	int saved = errno;
	close(fd);
	errno = saved;
	return base;
}

char *prof_area_grow(enum prof_area_kind kind, unsigned k)
{
	struct prof_area_map *m = &prof_areas[kind];
	if (k >= PROF_AREA_CHUNKS || !segment)
		return 0;
	char *base = __atomic_load_n(&m->chunk[k], __ATOMIC_ACQUIRE);
	if (base)
		return base;
	if (prof_area_growing_here)
		return 0; /* a signal handler interrupted this thread's own growth */
	while (atomic_flag_test_and_set_explicit(&grow_lock, memory_order_acquire)) {
		if ((base = __atomic_load_n(&m->chunk[k], __ATOMIC_ACQUIRE)))
			return base;
		sched_yield();
	}
	prof_area_growing_here = 1;
	struct prof_thread *t = &prof_thr;
	t->busy++; /* the calls below are libprof's own, not the program's */
	/* open, fallocate and close are cancellation points: a thread cancelled inside would
	 * leave the lock (and the strings' lock) held for good */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	/* chunks are made in order: the ones before k first */
	for (unsigned j = 1; j <= k && !m->failed; j++) {
		if (m->chunk[j])
			continue;
		uint64_t size = prof_area_chunk_size(m->first, j), off;
		char *b = prof_area_chunk_start(m->first, j) + size <= m->limit ? make_chunk(size, &off)
										 : 0;
		if (!b) {
			m->failed = 1; /* for good: the reader must find no hole further on */
			break;
		}
		atomic_store_explicit(&chunk_offs(segment, kind)[j], off, memory_order_release);
		__atomic_store_n(&m->chunk[j], b, __ATOMIC_RELEASE);
	}
	base = __atomic_load_n(&m->chunk[k], __ATOMIC_ACQUIRE);
	pthread_setcancelstate(cancel, &cancel);
	t->busy--;
	prof_area_growing_here = 0;
	atomic_flag_clear_explicit(&grow_lock, memory_order_release);
	return base;
}

/* Copies [0, used) of an area from the parent's chunks (old) into the child's. */
static uint64_t copy_area(enum prof_area_kind kind, const struct prof_area_map *old,
			  uint64_t used)
{
	struct prof_area_map *m = &prof_areas[kind];
	uint64_t done = 0;
	for (unsigned k = 0; k < PROF_AREA_CHUNKS && done < used; k++) {
		uint64_t start = prof_area_chunk_start(m->first, k);
		uint64_t size = prof_area_chunk_size(m->first, k);
		uint64_t len = used - start < size ? used - start : size;
		char *to = prof_area_grow(kind, k);
		if (!to || !old->chunk[k])
			break;
		memcpy(to, old->chunk[k], len);
		done = start + len;
	}
	return done;
}

void prof_area_detach(void)
{
	for (int kind = 0; kind < PROF_AREA_KINDS; kind++)
		for (unsigned k = 1; k < PROF_AREA_CHUNKS; k++)
			if (prof_areas[kind].chunk[k])
				munmap(prof_areas[kind].chunk[k],
				       prof_area_chunk_size(prof_areas[kind].first, k));
	memset(prof_areas, 0, sizeof prof_areas);
	segment = 0;
}

int prof_area_inherit(struct prof_proc_shm *from, struct prof_proc_shm *to, const char *name,
		      uint64_t strings_used, uint64_t stacks_used)
{
	struct prof_area_map old[PROF_AREA_KINDS];
	memcpy(old, prof_areas, sizeof old);
	(void)from;
	prof_area_attach(to, name);
	int whole = copy_area(PROF_AREA_STRINGS, &old[PROF_AREA_STRINGS], strings_used) ==
			    strings_used &&
		    copy_area(PROF_AREA_STACKS, &old[PROF_AREA_STACKS], stacks_used) == stacks_used;
	/* the parent's further chunks stay its own */
	for (int kind = 0; kind < PROF_AREA_KINDS; kind++)
		for (unsigned k = 1; k < PROF_AREA_CHUNKS; k++)
			if (old[kind].chunk[k])
				munmap(old[kind].chunk[k], prof_area_chunk_size(old[kind].first, k));
	return whole ? 0 : -1;
}
