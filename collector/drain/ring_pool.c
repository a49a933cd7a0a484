/* Rings ahead of need: a thread's first event claims the lowest free slot of its
 * process, and a ring's memory is committed as its writer reaches it (ring.h:
 * ring_writer_commit_lazily), from a first chunk of RING_COMMIT_FIRST bytes. The
 * collector allocates that first chunk of the next free slots beforehand (fallocate on
 * the segment, not mapped here) and records it in the slot's `committed`, so a new
 * thread's claim commits nothing. (It allocated the whole 4 MiB ring before the rings
 * grew lazily: ~1 ms of the drain loop per slot, which slowed the recycling of slots a
 * program starting hundreds of threads at once waited on.) Only for a process that has
 * had a second thread, and only while /dev/shm has room to spare. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"
#include "preload/common/ring.h"
#include "preload/common/debug.h"

/* Free slots kept with their first chunk allocated per process, and the most prepared
 * per pass, so a drain pass never spends long here. Only for a process that has had a
 * second thread: a one-thread program, or a launcher that only execs, is not given
 * memory it would not use. */
#define RING_POOL_AHEAD 4
#define RING_POOL_PER_PASS 2

/* The bytes of a ring a claim commits first (as ring.c's commit_upto counts them). */
static uint64_t first_chunk(const struct proc_entry *p)
{
	return ring_first_chunk(p->g.ring_cap) * sizeof(struct prof_event);
}

static int prepare_slot(struct proc_entry *p, int *fd, unsigned i)
{
	struct stat st;
	if (*fd < 0 && (*fd = shm_open(p->name, O_RDWR | O_CLOEXEC, 0)) < 0)
		return -1;
	off_t off = (off_t)(p->g.rings_off + (uint64_t)i * p->g.ring_cap *
						   sizeof(struct prof_event));
	off_t len = (off_t)first_chunk(p);
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
			uint64_t first = first_chunk(p);
			if (atomic_load_explicit(&s->prepared, memory_order_relaxed) ||
			    atomic_load_explicit(&s->committed, memory_order_relaxed) >= first)
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
			/* a claim meanwhile may have committed more: kept */
			uint64_t none = 0;
			atomic_compare_exchange_strong(&s->committed, &none, first);
			if (first == p->g.ring_cap * sizeof(struct prof_event))
				atomic_store_explicit(&s->prepared, 1, memory_order_release);
			done++;
		}
		if (fd >= 0)
			close(fd);
	}
}
