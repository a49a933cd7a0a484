/* A thread's first event claims a ring slot in its process segment; its exit hands the
 * slot back (the collector drains it and frees it for the next thread). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/core/state.h"
#include "preload/stacks/stack.h"
#include "preload/trace/trace.h"

__thread struct prof_thread prof_thr __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int warned_no_slot;

void prof_warn(const char *fmt, ...)
{
	int saved = errno; /* called inside wrappers: their caller's errno is not ours */
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0) {
		errno = saved;
		return;
	}
	if (n > (int)sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	char out[1100];
	int m = snprintf(out, sizeof out, "libprof: %.*s", n, line);
	if (m > 0 && write(2, out, (size_t)(m < (int)sizeof out ? m : (int)sizeof out - 1)) < 0) {
	}
	errno = saved;
}

static void retire_slot(struct prof_thread *t)
{
	struct prof_slot *s = t->w.slot;
	if (!s || !prof_proc)
		return;
	t->w.slot = 0;
	atomic_store_explicit(&s->state, SLOT_RETIRED, memory_order_release);
}

/* The blocks prof_thread_block mapped for this thread: unmapped at its exit. */
#define PROF_THREAD_BLOCKS 4
#define BLOCK_GONE ((void *)1)
static __thread struct {
	void **slot;
	size_t size;
} blocks[PROF_THREAD_BLOCKS] __attribute__((tls_model("initial-exec")));

void *prof_thread_block(void **slot, size_t size)
{
	void *b = *slot;
	if (__builtin_expect(b != 0, 1))
		return b == BLOCK_GONE ? 0 : b;
	unsigned i = 0;
	while (i < PROF_THREAD_BLOCKS && blocks[i].slot)
		i++;
	if (prof_thr.exiting || i == PROF_THREAD_BLOCKS) {
		*slot = BLOCK_GONE;
		return 0;
	}
	b = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) {
		*slot = BLOCK_GONE;
		return 0;
	}
	blocks[i].size = size;
	blocks[i].slot = slot;
	*slot = b;
	prof_thread_want_exit_hook();
	return b;
}

static void unmap_blocks(void)
{
	for (unsigned i = 0; i < PROF_THREAD_BLOCKS && blocks[i].slot; i++) {
		void *b = *blocks[i].slot;
		*blocks[i].slot = BLOCK_GONE;
		munmap(b, blocks[i].size);
		blocks[i].slot = 0;
	}
}

static void on_thread_exit(void *arg)
{
	(void)arg;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	retire_slot(t);
	t->exiting = 1;
	prof_stack_thread_exit();
	prof_trace_thread_exit();
	unmap_blocks();
	t->busy--;
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

void prof_thread_want_exit_hook(void)
{
	struct prof_thread *t = &prof_thr;
	if (t->exiting)
		return;
	t->busy++; /* what pthread_setspecific allocates is libprof's */
	pthread_once(&exit_key_once, make_exit_key);
	pthread_setspecific(exit_key, (void *)1);
	t->busy--;
}


/* A free slot, or -1: one whose ring's first chunk is allocated (a recycled slot, or one
 * the collector made ready) before any other, whose claim would commit it. *retired
 * counts the slots the collector has yet to recycle. */
static int take_free_slot(struct prof_proc_shm *p, unsigned *retired)
{
	for (int want_prepared = 1; want_prepared >= 0; want_prepared--) {
		*retired = 0;
		for (unsigned i = 0; i < p->nslots; i++) {
			struct prof_slot *s = prof_proc_slot(p, i);
			uint32_t state = atomic_load_explicit(&s->state, memory_order_relaxed);
			uint32_t expect = SLOT_FREE;
			*retired += state == SLOT_RETIRED;
			if (state == SLOT_FREE &&
			    (!want_prepared ||
			     atomic_load_explicit(&s->prepared, memory_order_relaxed) ||
			     atomic_load_explicit(&s->committed, memory_order_relaxed)) &&
			    atomic_compare_exchange_strong(&s->state, &expect, SLOT_OWNED))
				return (int)i;
		}
	}
	return -1;
}

/* Every slot taken but some of finished threads: the collector frees those within a
 * millisecond or two, so a new thread waits for one (once, at its first event) rather
 * than losing its events. */
static int wait_for_recycled_slot(struct prof_proc_shm *p)
{
	unsigned retired;
	int i = take_free_slot(p, &retired);
	/* the collector's liveness reads /proc: asked every 10 ms, not every 50 us */
	for (int tries = 0; i < 0 && retired && tries < 2000 && (tries % 200 || prof_collector_alive());
	     tries++) {
		usleep(50);
		i = take_free_slot(p, &retired);
	}
	return i;
}

/* This thread's entry in the process's table of threads without a ring (once). */
static struct prof_lost_thread *lost_entry(struct prof_proc_shm *p)
{
	uint32_t i = atomic_fetch_add_explicit(&p->lost_threads_used, 1, memory_order_relaxed);
	if (i >= PROF_LOST_THREADS)
		return 0;
	struct prof_lost_thread *e = &p->lost_threads[i];
	if (prctl(PR_GET_NAME, e->name) != 0)
		e->name[0] = 0;
	e->name[sizeof e->name - 1] = 0;
	e->first = prof_now();
	atomic_store_explicit(&e->tid, (uint32_t)syscall(SYS_gettid), memory_order_release);
	return e;
}

/* One event of a thread without a ring: counted on its own entry, single writer. */
static void count_unringed(struct prof_thread *t, struct prof_proc_shm *p)
{
	struct prof_lost_thread *e = t->lost_entry;
	if (!e) {
		atomic_fetch_add_explicit(&p->lost_no_slot, 1, memory_order_relaxed);
		return;
	}
	e->last = prof_now();
	atomic_store_explicit(&e->lost, atomic_load_explicit(&e->lost, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* A ring's next chunk (ring_writer_commit_lazily); a full /dev/shm said once: the
 * events past what it could allocate are dropped and counted as lost */
static int commit_ring(void *addr, size_t len)
{
	static int said;
	int rc = prof_commit_memory(addr, len);
	if (rc && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		prof_warn("/dev/shm is full: a thread's ring cannot grow past what it has, and "
			  "its events beyond that are dropped and counted as lost");
	return rc;
}

int prof_thread_claim(struct prof_thread *t)
{
	struct prof_proc_shm *p = prof_proc;
	if (!p || t->no_slot)
		goto drop;
	int saved = errno; /* the first event of a thread, inside its wrapper: keep errno */
	t->busy++;
	for (int i; (i = wait_for_recycled_slot(p)) >= 0;) {
		struct prof_slot *s = prof_proc_slot(p, (unsigned)i);
		struct prof_event *ring = prof_proc_ring(p, (unsigned)i);
		/* The ring's pages must exist before any store, or a full /dev/shm raises
		 * SIGBUS at one: committed as the thread's writes reach them, from a first
		 * 64 KiB, which the collector allocates ahead for the next free slots
		 * (collector/drain/ring_pool.c), so a new thread's claim commits nothing.
		 * (The whole 4 MiB at the first event cost ~1.5 ms a thread: half of a
		 * program starting 800 threads.) */
		struct ring_writer w;
		ring_writer_init(&w, s, ring, p->ring_cap, prof_session ? prof_session->block : 0,
				 prof_collector_stalled);
		if (!atomic_load_explicit(&s->prepared, memory_order_acquire) &&
		    ring_writer_commit_lazily(&w, commit_ring)) {
			/* /dev/shm is full: hand the slot back untouched */
			atomic_store_explicit(&s->state, SLOT_RETIRED, memory_order_release);
			break;
		}
		s->tid = (uint32_t)syscall(SYS_gettid);
		/* a thread's second ring (claimed in its teardown) keeps the name */
		atomic_store_explicit(&s->name_id, t->given_name, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
		t->w = w;
		/* Frees late in thread teardown come after the exit hook: their slot is left
		 * for the collector to retire when the thread is gone. */
		atomic_store_explicit(&s->orphan, t->exiting, memory_order_relaxed);
		if (!t->exiting) {
			pthread_once(&exit_key_once, make_exit_key);
			pthread_setspecific(exit_key, (void *)1);
		}
		t->busy--;
		errno = saved;
		return 1;
	}
	t->no_slot = 1;
	t->lost_entry = lost_entry(p);
	if (!__atomic_exchange_n(&warned_no_slot, 1, __ATOMIC_RELAXED))
		prof_warn("no ring for a new thread (all %u in use, or /dev/shm is full): its "
			  "events are dropped and counted as lost on it", p->nslots);
	t->busy--;
	errno = saved;
drop:
	if (p)
		count_unringed(t, p);
	return 0;
}

/* A name for the calling thread in the outputs, where the program gave it none (MXNet's
 * engine workers are all "python3"): set once per ring, on a thread that has one; the
 * process's main thread keeps its own. The program's thread name is not changed. Called
 * from hooks, which run busy already. */
void prof_thread_give_name(const char *name)
{
	struct prof_thread *t = &prof_thr;
	struct prof_slot *s = t->w.slot;
	if (!s || !prof_proc || s->tid == prof_proc->pid ||
	    atomic_load_explicit(&s->name_id, memory_order_relaxed))
		return;
	t->busy++;
	uint32_t id = prof_intern(name);
	t->busy--;
	if (!id) /* the string area is full: "<unnamed>" would not be a better name */
		return;
	t->given_name = id + 1;
	atomic_store_explicit(&s->name_id, t->given_name, memory_order_release);
}
