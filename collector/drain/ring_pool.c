/* Rings ahead of need: a thread's first event claims the lowest free slot of its
 * process, and committing its ring's memory then (MADV_POPULATE_WRITE, ~1.5 ms for 4 MiB)
 * was paid inside whatever call the thread was making. The collector allocates the pages
 * of the next free slots' rings in the segment beforehand (fallocate on the segment, not
 * mapped here) and marks them prepared; a claim of a prepared slot commits nothing.
 * Prepared rings stay allocated (a recycled slot's do anyway): 4 per multi-threaded
 * process, and only while /dev/shm has room to spare. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"
#include "preload/common/debug.h"

/* Free slots kept prepared per process (4 MiB each by default), and the most prepared
 * per pass, so a drain pass never spends long here. Only for a process that has had a
 * second thread: a one-thread program, or a launcher that only execs, is not given
 * memory it would not use. */
#define RING_POOL_AHEAD 4
#define RING_POOL_PER_PASS 2

static int prepare_slot(struct proc_entry *p, int *fd, unsigned i)
{
	struct stat st;
	if (*fd < 0 && (*fd = shm_open(p->name, O_RDWR | O_CLOEXEC, 0)) < 0)
		return -1;
	off_t off = (off_t)(p->g.rings_off + (uint64_t)i * p->g.ring_cap *
						   sizeof(struct prof_event));
	off_t len = (off_t)(p->g.ring_cap * sizeof(struct prof_event));
	/* the segment whole (its areas may have grown it): past the end of one cut short
	 * by the program,
	 * fallocate would succeed (KEEP_SIZE) and a claim skipping its commit would meet
	 * SIGBUS at its first store */
	if (fstat(*fd, &st) || (uint64_t)st.st_size < p->g.seg_size ||
	    (uint64_t)(off + len) > (uint64_t)st.st_size)
		return -1;
	return fallocate(*fd, FALLOC_FL_KEEP_SIZE, off, len) ? -1 : 0;
}

/* Room in /dev/shm for rings nobody claimed yet: a quarter of it free, and 256 MiB (a
 * container's 64 MiB /dev/shm gets no pool: claims commit their rings as before). */
static int shm_has_room(void)
{
	struct statvfs v;
	if (statvfs("/dev/shm", &v))
		return 0;
	uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
	uint64_t total = (uint64_t)v.f_blocks * v.f_frsize;
	return free_bytes >= (256ull << 20) && free_bytes >= total / 4;
}

void ring_pool_refill(struct collector *c)
{
	int room = -1; /* asked once a pass, when some process needs a ring */
	for (struct proc_entry *p = c->procs; p; p = p->next) {
		if (p->finished || p->corrupt || !p->shm || p->shrunk || p->pool_failed)
			continue;
		unsigned claimed = 0;
		for (unsigned i = 0; i < p->g.nslots && claimed < 2; i++)
			claimed += atomic_load_explicit(&shm_slot(p->shm, &p->g, i)->gen,
							memory_order_relaxed) != 0;
		if (claimed < 2)
			continue;
		int fd = -1, ahead = 0, done = 0;
		for (unsigned i = 0; i < p->g.nslots && ahead < RING_POOL_AHEAD &&
				     done < RING_POOL_PER_PASS; i++) {
			struct prof_slot *s = shm_slot(p->shm, &p->g, i);
			if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_FREE)
				continue;
			ahead++;
			if (atomic_load_explicit(&s->prepared, memory_order_relaxed))
				continue;
			if (room < 0)
				room = shm_has_room();
			if (!room)
				return;
			if (prepare_slot(p, &fd, i)) {
				/* /dev/shm full, or the segment gone or cut short: claims commit
				 * for themselves (and see the error) as before. Not tried again:
				 * every pass asked anew (10,733 debug lines in one torchrun) */
				prof_debug(PROF_DEBUG_DRAIN, "cannot prepare slot %u of %s (%s); "
					   "its threads' rings are committed as they are claimed",
					   i, p->name, strerror(errno));
				p->pool_failed = 1;
				break;
			}
			atomic_store_explicit(&s->prepared, 1, memory_order_release);
			done++;
		}
		if (fd >= 0)
			close(fd);
	}
}
