/* The collector's drain loop. One pass every millisecond (at once while rings fill up):
 * new process segments, new strings, each ring's new events (ticks converted to session
 * nanoseconds), liveness. The shared memory outlives a crashed program, so whatever
 * reached a ring before a death still reaches the capture. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "formats/capture/capture.h"
#include "collector/output/outfile.h"
#include "formats/model/outputs.h"
#include "preload/common/clock.h"
#include "collector/drain/collector.h"
#include "preload/common/debug.h"
#include "collector/drain/drain_fuzz.h"
#include "collector/drain/dump.h"
#include "preload/common/ring.h"
#include "collector/shm/shm_check.h"
#include "collector/shm/shm_guard.h"
#include "collector/output/capture_own.h"
#include "collector/drain/stacks.h"
#include "formats/symbols/symbolize.h"

#define EVENT_CHUNK 4096
#define LIVENESS_EVERY_NS 10000000ull /* 10 ms */
#define SCAN_EVERY_NS 2000000ull      /* 2 ms */
#define CLOCK_EVERY_NS 100000000ull   /* 100 ms */
#define TOUCH_EVERY_NS 5000000000ull  /* 5 s: the session segment's mtime, far below the
					 reclaim's min-age (60 s) */
#define PENDING_FORK_GRACE_NS 2000000000ull /* the longest wait for a child to join */
#define UNNOTED_CHILD_GRACE_NS 50000000ull /* 50 ms */

struct proc_entry {
	struct proc_entry *next;
	char name[264];
	struct prof_proc_shm *shm;
	pid_t pid;
	uint64_t strings_read;
	uint32_t categories_read;
	struct proc_stacks stacks;
	pid_t ppid;
	uint32_t exec_seq;
	uint32_t *slot_gen;
	int finished;
	uint64_t lost;
	struct shm_geom g;   /* checked when found; addresses come from here only */
	size_t map_size;     /* bytes mapped */
	uint64_t *slot_tail; /* the collector's own tail of each ring */
	int corrupt;         /* quarantined: not drained any more */
	volatile int shrunk; /* a read hit a page the file no longer has (shm_guard) */
};

struct collector {
	struct collector_options *o;
	struct prof_session_shm *s;
	struct cap_writer *w;
	int write_failed;
	struct prof_clock_map clock;
	struct proc_entry *procs;
	char shm_prefix[128];
	char capture_path[PROF_PATH_MAX + 8];
	int capture_fd; /* the capture itself: its name may be taken over (capture_own.h) */
	uint64_t events, lost, processes;
	uint64_t last_scan, last_live, last_clock, last_dump, all_gone_since, last_touch;
	int root_released;
	int liveness_pass; /* this pass also checks orphan slots' threads */
	struct dump_job dump;
	/* the events of one drain call, converted */
	struct prof_event buf[EVENT_CHUNK];
	uint32_t buf_n, buf_pid, buf_tid;
	uint64_t buf_lost;
	uint64_t lost_bound; /* the most one LOST event may count (shm_check_lost) */
	char bad_event[160]; /* why a ring's batch stopped, set by on_ring_events */
	/* A program process can truncate the session segment too: its reads are guarded
	 * (shm_guard) and, on a hit, c->s points here, the settings as they were at start. */
	volatile int session_shrunk;
	struct prof_session_shm session_copy;
};

static void write_failed(struct collector *c)
{
	if (!c->write_failed)
		fprintf(stderr, "libprof: %s; the capture keeps what was written before\n",
			cap_writer_error(c->w));
	c->write_failed = 1;
}

static void put(struct collector *c, uint32_t type, const void *head, size_t hlen,
		const void *tail, size_t tlen)
{
	if (c->write_failed)
		return;
	if (cap_write2(c->w, type, head, hlen, tail, tlen))
		write_failed(c);
}

static void put_record(void *ctx, uint32_t type, const void *head, size_t hlen,
		       const void *tail, size_t tlen)
{
	put(ctx, type, head, hlen, tail, tlen);
}

static void flush_events(struct collector *c)
{
	if (!c->buf_n)
		return;
	struct cap_events h = {.pid = c->buf_pid, .tid = c->buf_tid, .count = c->buf_n};
	put(c, CAP_EVENTS, &h, sizeof h, c->buf, c->buf_n * sizeof(struct prof_event));
	c->events += c->buf_n;
	c->buf_n = 0;
}

static void add_event(struct collector *c, const struct prof_event *src, int in_ticks)
{
	struct prof_event *e = &c->buf[c->buf_n++];
	*e = *src;
	/* CUPTI's records are stamped on CLOCK_MONOTONIC by CUPTI itself */
	if (in_ticks && !(src->flags & PROF_EVF_NS)) {
		e->t0 = prof_clock_to_ns(&c->clock, src->t0);
		e->t1 = prof_clock_to_ns(&c->clock, src->t1);
	}
	if (e->type == PROF_EV_LOST)
		c->buf_lost += e->a;
	if (c->buf_n == EVENT_CHUNK)
		flush_events(c);
}

static void on_ring_events(void *ctx, const struct prof_event *ev, uint64_t n)
{
	struct collector *c = ctx;
	if (c->bad_event[0])
		return;
	for (uint64_t i = 0; i < n; i++) {
		/* hostile memory: a type or a lost count that cannot be ends the segment */
		if (!shm_event_type_ok(&ev[i]) ||
		    (ev[i].type == PROF_EV_LOST && ev[i].a > c->lost_bound)) {
			snprintf(c->bad_event, sizeof c->bad_event,
				 "an event of type %u (a=%llu) in thread %u's ring", ev[i].type,
				 (unsigned long long)ev[i].a, c->buf_tid);
			return;
		}
		add_event(c, &ev[i], 1);
	}
}

/* A segment that fails a check is drained no more and its name removed at once; its
 * process is still watched, and finished (PROCESS_END) when it ends, so the session goes
 * on as before (the root still waits for the outputs). */
static void quarantine(struct proc_entry *p, const char *why)
{
	if (p->corrupt)
		return;
	if (p->shrunk) /* the zeros read there were the symptom */
		why = "its file was cut below the size mapped";
	p->corrupt = 1;
	fprintf(stderr, "libprof: process %d's segment is corrupt (%s); its later events are "
			"left out\n", (int)p->pid, why);
	if (p->name[1])
		shm_unlink(p->name);
}

static void read_thread_name(pid_t pid, uint32_t tid, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task/%u/comm", (int)pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, out, len - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(out, len, "thread %u", tid);
		return;
	}
	out[n] = 0;
	if (out[n - 1] == '\n')
		out[n - 1] = 0;
}

/* Strings, categories and stacks published so far. */
static void read_strings(struct collector *c, struct proc_entry *p)
{
	struct prof_proc_shm *shm = p->shm;
	char why[160];
	if (p->corrupt)
		return;
	uint64_t used = atomic_load_explicit(&shm->strings_used, memory_order_acquire);
	if (used > p->g.strings_size) {
		snprintf(why, sizeof why, "strings_used %llu beyond the %llu-byte string area",
			 (unsigned long long)used, (unsigned long long)p->g.strings_size);
		quarantine(p, why);
		return;
	}
	const char *area = (const char *)shm + p->g.strings_off;
	while (p->strings_read + 4 <= used) {
		const struct prof_string_entry *e = (const void *)(area + p->strings_read);
		uint64_t size = (4 + (uint64_t)e->len + 3) & ~3ull;
		if (p->strings_read + size > used)
			break;
		struct cap_string h = {.pid = (uint32_t)p->pid, .id = (uint32_t)p->strings_read};
		put(c, CAP_STRING, &h, sizeof h, e->bytes, e->len);
		p->strings_read += size;
	}
	uint32_t ncat = atomic_load_explicit(&shm->ncategories, memory_order_acquire);
	for (; p->categories_read < ncat && p->categories_read < PROF_MAX_CATEGORIES;
	     p->categories_read++) {
		const char *name = shm->categories[p->categories_read];
		struct cap_string h = {.pid = (uint32_t)p->pid,
				       .id = PROF_CAT_FIRST_DYNAMIC + p->categories_read};
		put(c, CAP_CATEGORY, &h, sizeof h, name, strnlen(name, PROF_CATEGORY_NAME_MAX));
	}
	if (stacks_drain(&p->stacks, shm, (const char *)shm + p->g.stacks_off, p->g.stacks_size,
			 p->pid, put_record, c, why, sizeof why))
		quarantine(p, why);
}

static void lost_event(struct collector *c, uint64_t count, uint64_t first, uint64_t last,
		       int in_ticks)
{
	struct prof_event e = {.t0 = first, .t1 = last, .a = count, .cat = PROF_CAT_LOST,
			       .type = PROF_EV_LOST};
	add_event(c, &e, in_ticks);
}

static int thread_alive(pid_t pid, uint32_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task/%u", (int)pid, tid);
	return access(path, F_OK) == 0;
}

/* Another slot of the same thread still holding events (its earlier ring). */
static int thread_has_older_events(struct proc_entry *p, unsigned orphan_slot, uint32_t tid)
{
	for (unsigned j = 0; j < p->g.nslots; j++) {
		struct prof_slot *o = shm_slot(p->shm, &p->g, j);
		if (j == orphan_slot || o->tid != tid || atomic_load(&o->orphan) ||
		    atomic_load(&o->state) == SLOT_FREE)
			continue;
		if (atomic_load(&o->head) != atomic_load(&o->tail) || atomic_load(&o->lost_pending))
			return 1;
	}
	return 0;
}

/* Each thread's events must reach the capture in the order it wrote them. A thread has
 * two slots only at its very end (an orphan slot, claimed after the exit hook retired the
 * first): orphan slots are drained in a second pass, and only once the thread's first
 * slot is empty. final: the writer is gone (thread retired, or process ended), so its
 * pending gap counters are stable and can be reported. */
static uint64_t drain_slot(struct collector *c, struct proc_entry *p, unsigned i, int final,
			   int orphan_pass)
{
	struct prof_proc_shm *shm = p->shm;
	struct prof_slot *s = shm_slot(shm, &p->g, i);
	char why[160];
	uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
	if (state == SLOT_FREE)
		return 0;
	/* every field read after the head: an orphan's flag and a new owner's tid are set
	 * before its first event is published */
	uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
	int orphan = atomic_load(&s->orphan) != 0;
	if (orphan != orphan_pass || (orphan && thread_has_older_events(p, i, s->tid)))
		return 0;
	/* the tail is the collector's: one that moved, or a head behind it or beyond a
	 * ring's worth of it, is corruption (checked per batch, not per event) */
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	if (tail != p->slot_tail[i])
		snprintf(why, sizeof why, "slot %u: tail moved from %llu to %llu", i,
			 (unsigned long long)p->slot_tail[i], (unsigned long long)tail);
	if (tail != p->slot_tail[i] || shm_check_span(tail, head, p->g.ring_cap, i, why, sizeof why)) {
		quarantine(p, why);
		return 0;
	}
	uint32_t gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	if (gen != p->slot_gen[i]) {
		char name[64];
		read_thread_name(p->pid, s->tid, name, sizeof name);
		struct cap_thread h = {.pid = (uint32_t)p->pid, .tid = s->tid};
		put(c, CAP_THREAD, &h, sizeof h, name, strlen(name));
		p->slot_gen[i] = gen;
	}
	/* An orphan slot's thread is gone once its task is: retire it for it. */
	if (state == SLOT_OWNED && atomic_load(&s->orphan) && c->liveness_pass &&
	    !thread_alive(p->pid, s->tid))
		state = SLOT_RETIRED;
	c->buf_pid = (uint32_t)p->pid;
	c->buf_tid = s->tid;
	/* Strings after the head: every name an event up to that head uses was interned
	 * (and published) before the event was. */
	read_strings(c, p);
	if (p->corrupt)
		return 0;
	uint64_t n = ring_drain_upto(s, shm_ring(shm, &p->g, i), p->g.ring_cap, head,
				     on_ring_events, c);
	p->slot_tail[i] = head;
	if (c->bad_event[0]) {
		flush_events(c); /* the events before the bad one are the thread's */
		quarantine(p, c->bad_event);
		c->bad_event[0] = 0;
		return 0;
	}
	if (state == SLOT_RETIRED || final) {
		uint64_t pending = atomic_load_explicit(&s->lost_pending, memory_order_acquire);
		if (pending > c->lost_bound) {
			snprintf(why, sizeof why, "slot %u: lost_pending %llu is more than could be",
				 i, (unsigned long long)pending);
			flush_events(c);
			quarantine(p, why);
			return 0;
		}
		if (pending)
			lost_event(c, pending, atomic_load(&s->lost_first), atomic_load(&s->lost_last),
				   1);
	}
	flush_events(c);
	if (state == SLOT_RETIRED && !final) {
		atomic_store(&s->lost_pending, 0);
		atomic_store(&s->orphan, 0);
		atomic_store(&s->head, 0);
		atomic_store(&s->tail, 0);
		p->slot_tail[i] = 0;
		atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
	}
	/* how full it was: the loop skips its sleep while rings fill quickly */
	return n;
}

static uint64_t drain_process(struct collector *c, struct proc_entry *p, int final)
{
	uint64_t most = 0;
	char why[160];
	if (p->corrupt)
		return 0;
	/* a header rewritten since it was checked is not believed any more */
	if (shm_geom_same(p->shm, &p->g, why, sizeof why))
		quarantine(p, why);
	if (p->shrunk)
		quarantine(p, "its file was cut below the size mapped");
	/* a drop takes a writer at least a nanosecond: counts beyond that are garbage */
	c->lost_bound = prof_mono_ns();
	read_strings(c, p);
	uint64_t before = c->buf_lost;
	for (int orphan_pass = 0; orphan_pass < 2 && !p->corrupt; orphan_pass++)
		for (unsigned i = 0; i < p->g.nslots && !p->corrupt; i++) {
			uint64_t n = drain_slot(c, p, i, final, orphan_pass);
			if (n > most)
				most = n;
		}
	p->lost += c->buf_lost - before;
	if (p->shrunk) /* what was read after the cut was zeros: the checks stopped there */
		quarantine(p, "its file was cut below the size mapped");
	return most * 4 / p->g.ring_cap; /* >0 when a ring was a quarter full */
}

/* Threads that got no ring (every slot taken): each one's drops, on that thread, under
 * the name it had when it first dropped one. */
static void report_lost_threads(struct collector *c, struct proc_entry *p)
{
	struct prof_proc_shm *shm = p->shm;
	uint32_t used = atomic_load_explicit(&shm->lost_threads_used, memory_order_acquire);
	if (used > PROF_LOST_THREADS)
		used = PROF_LOST_THREADS;
	for (uint32_t i = 0; i < used; i++) {
		struct prof_lost_thread *e = &shm->lost_threads[i];
		uint32_t tid = atomic_load_explicit(&e->tid, memory_order_acquire);
		uint64_t lost = atomic_load_explicit(&e->lost, memory_order_acquire);
		if (!tid || !lost)
			continue;
		char why[160];
		if (shm_check_lost(lost, prof_mono_ns(), 1, "a ringless thread's lost count", why,
				   sizeof why)) {
			quarantine(p, why);
			return;
		}
		char name[32];
		memcpy(name, e->name, sizeof e->name);
		name[sizeof e->name] = 0;
		if (!name[0])
			snprintf(name, sizeof name, "thread %u", tid);
		struct cap_thread h = {.pid = (uint32_t)p->pid, .tid = tid};
		put(c, CAP_THREAD, &h, sizeof h, name, strlen(name));
		c->buf_pid = (uint32_t)p->pid;
		c->buf_tid = tid;
		lost_event(c, lost, e->first, e->last > e->first ? e->last : e->first, 1);
		flush_events(c);
		p->lost += lost;
	}
}

static void finish_process(struct collector *c, struct proc_entry *p, int32_t status)
{
	if (p->finished)
		return;
	drain_process(c, p, 1);
	if (!p->corrupt)
		report_lost_threads(c, p);
	uint64_t no_slot = p->corrupt ? 0 : atomic_load(&p->shm->lost_no_slot);
	char why[160];
	if (no_slot && shm_check_lost(no_slot, prof_mono_ns(), SHM_MAX_SLOTS, "lost_no_slot", why,
				      sizeof why)) {
		quarantine(p, why);
		no_slot = 0;
	}
	if (no_slot) {
		/* dropped before any ring existed for them: reported on the main thread */
		c->buf_pid = (uint32_t)p->pid;
		c->buf_tid = (uint32_t)p->pid;
		lost_event(c, no_slot, p->shm->created_ns, prof_mono_ns(), 0);
		flush_events(c);
		p->lost += no_slot;
	}
	c->lost += p->lost;
	struct cap_process_end e = {.pid = (uint32_t)p->pid, .status = status,
				    .end_ns = prof_mono_ns(), .lost = p->lost};
	put(c, CAP_PROCESS_END, &e, sizeof e, 0, 0);
	p->finished = 1;
	if (p->name[1] && !p->corrupt) /* a quarantined one's name is gone already */
		shm_unlink(p->name);
	shm_guard_remove(p->shm);
	munmap(p->shm, p->map_size); /* a long session of many processes must not keep them */
	p->shm = 0;
}

/* A forked child's parent, whose mappings it had (its first image only). */
static const struct proc_stacks *parent_stacks(struct collector *c, struct proc_entry *child)
{
	if (child->exec_seq)
		return NULL;
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (p->pid == child->ppid)
			return &p->stacks;
	return NULL;
}

/* The processes' stack frames named while the modules on disk are those that ran, so
 * a report made later from the capture does not depend on the binaries then. */
static void name_frames(struct collector *c)
{
	if (!c->s->stacks)
		return;
	struct symbolizer *sym = symbolizer_new();
	if (!sym)
		prof_debug(PROF_DEBUG_DRAIN, "stack frames left unnamed: out of memory");
	if (!sym)
		return;
	int ok = 1;
	for (struct proc_entry *p = c->procs; p && ok; p = p->next)
		ok = !stacks_add_frames(&p->stacks, parent_stacks(c, p), sym);
	if (ok && !symbolizer_resolve(sym))
		for (struct proc_entry *p = c->procs; p; p = p->next)
			stacks_put_names(&p->stacks, parent_stacks(c, p), p->pid, p->exec_seq, sym,
					 put_record, c);
	symbolizer_free(sym);
}

static int32_t child_status(struct collector *c, pid_t pid)
{
	if (c->o->child != pid || !c->o->child_status)
		return INT32_MIN;
	int st = c->o->child_status;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : INT32_MIN;
}

/* The pid a segment's name gives (libprof-UID-SID-PID-NONCE), 0 if none. */
static pid_t pid_in_name(struct collector *c, const char *name)
{
	size_t plen = strlen(c->shm_prefix);
	if (strncmp(name, c->shm_prefix, plen))
		return 0;
	char *end;
	long pid = strtol(name + plen, &end, 10);
	return *end == '-' && pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

static void add_process(struct collector *c, const char *name, struct prof_proc_shm *shm,
			size_t mapped)
{
	struct proc_entry *p = calloc(1, sizeof *p);
	char why[160];
	if (!p) {
		prof_debug(PROF_DEBUG_DRAIN, "not following %s yet: out of memory", name);
		munmap(shm, mapped);
		return;
	}
	p->shm = shm;
	p->map_size = mapped;
	if (shm_guard_add(shm, mapped, &p->shrunk)) {
		prof_debug(PROF_DEBUG_DRAIN | PROF_DEBUG_SHM, "not following %s yet: cannot guard "
			   "its mapping (out of memory)", name);
		free(p);
		munmap(shm, mapped);
		return;
	}
	snprintf(p->name, sizeof p->name, "/%.255s", name); /* a quarantine removes it */
	pid_t named = pid_in_name(c, name);
	p->pid = named ? named : (pid_t)shm->pid;
	if (shm_geom_read(shm, mapped, &p->g, why, sizeof why))
		quarantine(p, why);
	else if (named && (pid_t)p->g.pid != named) {
		snprintf(why, sizeof why, "pid %u in the segment of pid %d", p->g.pid, (int)named);
		quarantine(p, why);
	}
	if (!p->corrupt) {
		p->slot_gen = calloc(p->g.nslots, sizeof *p->slot_gen);
		p->slot_tail = calloc(p->g.nslots, sizeof *p->slot_tail);
		if (!p->slot_gen || !p->slot_tail) {
			prof_debug(PROF_DEBUG_DRAIN, "not following %s yet: out of memory", name);
			free(p->slot_gen);
			free(p->slot_tail);
			free(p);
			shm_guard_remove(shm);
			munmap(shm, mapped);
			return;
		}
	}
	uint32_t exec_seq = 0;
	for (struct proc_entry *q = c->procs; q; q = q->next) {
		if (q->pid != p->pid)
			continue;
		exec_seq++;
		/* a newer image of the same pid: the old one has exec'd, all of its records
		 * must precede the new image's (the readers rely on it) */
		finish_process(c, q, INT32_MIN);
	}
	struct cap_process h = {.pid = (uint32_t)p->pid, .ppid = shm->ppid, .exec_seq = exec_seq,
				.start_ns = shm->created_ns};
	uint32_t len = !p->corrupt && shm->cmdline_len < PROF_CMDLINE_MAX ? shm->cmdline_len : 0;
	put(c, CAP_PROCESS, &h, sizeof h, shm->cmdline, len);
	p->ppid = (pid_t)shm->ppid;
	p->exec_seq = exec_seq;
	/* its code mappings now, while it surely lives (stacks may come after its end) */
	if (c->s->stacks && !p->corrupt)
		stacks_read_maps(&p->stacks, p->pid, put_record, c);
	p->next = c->procs;
	c->procs = p;
	c->processes++;
}

struct found {
	char name[256];
	struct prof_proc_shm *shm;
	size_t size;
};

static int by_creation(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->shm->created_ns < y->shm->created_ns ? -1 : x->shm->created_ns > y->shm->created_ns;
}

static int known(struct collector *c, const char *name)
{
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (!strcmp(p->name + 1, name))
			return 1;
	return 0;
}

/* New process segments, oldest first (an exec'd image after the one it replaced). */
static int scan_segments(struct collector *c)
{
	DIR *d = opendir("/dev/shm");
	if (!d)
		prof_debug(PROF_DEBUG_DRAIN, "cannot look for new processes: /dev/shm: %m");
	if (!d)
		return 0;
	struct found found[64];
	int n = 0, added = 0;
	size_t plen = strlen(c->shm_prefix);
	struct dirent *e;
	while ((e = readdir(d)) && n < 64) {
		if (strncmp(e->d_name, c->shm_prefix, plen) || known(c, e->d_name))
			continue;
		size_t size;
		struct prof_proc_shm *shm = prof_proc_open_sized(e->d_name, &size);
		if (!shm)
			continue; /* still being made: next scan */
		snprintf(found[n].name, sizeof found[n].name, "%.255s", e->d_name);
		found[n].size = size;
		found[n++].shm = shm;
	}
	closedir(d);
	qsort(found, (size_t)n, sizeof *found, by_creation);
	for (int i = 0; i < n; i++, added++)
		add_process(c, found[i].name, found[i].shm, found[i].size);
	return added;
}

/* Segments of processes that joined as the session closed: never drained, never kept. */
static void sweep_segments(struct collector *c)
{
	DIR *d = opendir("/dev/shm");
	if (!d)
		return;
	char path[300];
	size_t plen = strlen(c->shm_prefix);
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, c->shm_prefix, plen) && !known(c, e->d_name)) {
			snprintf(path, sizeof path, "/%.255s", e->d_name);
			shm_unlink(path);
		}
	closedir(d);
}

static void check_liveness(struct collector *c)
{
	if (c->o->child > 0 && !c->o->child_status) {
		int st;
		if (waitpid(c->o->child, &st, WNOHANG) == c->o->child)
			c->o->child_status = st ? st : 0x10000; /* non-zero: reaped */
	}
	for (struct proc_entry *p = c->procs; p; p = p->next) {
		if (p->finished)
			continue;
		uint32_t st = atomic_load_explicit(&p->shm->state, memory_order_acquire);
		if (st == PROC_EXITED)
			finish_process(c, p, child_status(c, p->pid));
		else if (!prof_proc_alive(p->pid, p->shm->proc_start_ticks))
			finish_process(c, p, child_status(c, p->pid));
	}
}

static int root_alive(struct collector *c)
{
	if (c->o->child > 0)
		return !c->o->child_status;
	pid_t root = (pid_t)c->s->root_pid;
	if (root <= 0)
		return 0;
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (p->pid == root && !p->finished)
			return 1;
	/* not registered yet (or gone): ask the kernel */
	int registered = 0;
	for (struct proc_entry *p = c->procs; p; p = p->next)
		registered |= p->pid == root;
	return !registered && prof_proc_start_ticks(root) != 0;
}

static int live_processes(struct collector *c)
{
	int n = 0;
	for (struct proc_entry *p = c->procs; p; p = p->next)
		n += !p->finished;
	return n;
}

/* The root's processes still running, or -1 while the root itself runs (or was not
 * seen yet). */
static int left_by_root(struct collector *c)
{
	pid_t root = (pid_t)c->s->root_pid;
	int root_seen = 0, root_running = 0, others = 0;
	/* the root may have exec'd several times: only its newest image counts */
	for (struct proc_entry *p = c->procs; p; p = p->next) {
		if (p->pid == root) {
			root_seen = 1;
			root_running |= !p->finished;
		} else if (!p->finished) {
			others++;
		}
	}
	return root_seen && !root_running ? others : -1;
}

static void release_root_if_alone(struct collector *c)
{
	if (c->root_released || c->o->child)
		return;
	int others = left_by_root(c);
	if (others > 0) {
		/* A child checked earlier in this pass may have been reaped by the root since,
		 * just before it exited: look again now that the root is gone. */
		check_liveness(c);
		others = left_by_root(c);
	}
	if (others <= 0)
		return;
	if (!c->s->quiet)
		fprintf(stderr, "libprof: the program exited; %d of its processes still run, the "
				"outputs follow when they end\n", others);
	atomic_store(&c->s->root_release, 1);
	prof_futex_wake(&c->s->state);
	c->root_released = 1;
	/* Whoever reads the program's stderr through a pipe must not wait for its
	 * background processes too: the rest goes to the outputs only. */
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 2);
		close(null);
	}
}

static uint64_t drain_all(struct collector *c)
{
	uint64_t busy = 0;
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (!p->finished)
			busy |= drain_process(c, p, 0);
	return busy;
}

static int has_segment(struct collector *c, pid_t pid)
{
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (p->pid == pid)
			return 1;
	return 0;
}

/* Counted children (fork, exec, spawn: their pids are noted in the session) that have no
 * segment: how many are alive, i.e. could still join. give_up: name each one, which is
 * then not waited for. */
static int unjoined_children(struct collector *c, int give_up)
{
	struct prof_session_shm *s = c->s;
	uint32_t n = atomic_load(&s->children_next);
	int alive = 0;
	for (uint32_t i = 0; i < n && i < PROF_CHILD_SLOTS; i++) {
		pid_t pid = (pid_t)atomic_load(&s->children[i]);
		if (pid <= 0 || has_segment(c, pid))
			continue;
		int running = prof_proc_start_ticks(pid) != 0;
		alive += running;
		if (!give_up || s->quiet)
			continue;
		char exe[PROF_PATH_MAX] = "", link[64];
		snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
		ssize_t len = running ? readlink(link, exe, sizeof exe - 1) : -1;
		exe[len > 0 ? len : 0] = 0;
		if (running)
			fprintf(stderr, "libprof: process %d%s%s%s did not join the session within "
					"%llu s; not profiled, not waited for\n", (int)pid,
				*exe ? " (" : "", exe, *exe ? ")" : "",
				PENDING_FORK_GRACE_NS / 1000000000ull);
		else
			fprintf(stderr, "libprof: process %d ended without joining the session; not "
					"profiled\n", (int)pid);
	}
	return alive;
}

static int session_over(struct collector *c, uint64_t now)
{
	if (live_processes(c) || root_alive(c)) {
		c->all_gone_since = 0;
		return 0;
	}
	uint64_t started = atomic_load(&c->s->forks_started);
	uint64_t registered = atomic_load(&c->s->forks_registered);
	if (!c->all_gone_since)
		c->all_gone_since = now;
	if (started <= registered)
		return 1;
	/* A child counted but not joined: wait only while one can still join (alive, no
	 * segment yet), and for at most the grace; a gone one never will. A pid not noted
	 * yet (its parent died between fork and noting it) gets a short grace too. */
	uint64_t waited = now - c->all_gone_since;
	int expired = waited >= PENDING_FORK_GRACE_NS;
	int alive = unjoined_children(c, 0);
	if (!expired && (alive || waited < UNNOTED_CHILD_GRACE_NS))
		return 0;
	unjoined_children(c, 1);
	return 1;
}

static void answer_dump(struct collector *c)
{
	struct prof_session_shm *s = c->s;
	int status;
	if (dump_poll(&c->dump, 0, &status) && c->dump.request) {
		atomic_store(&s->dump_status, status);
		atomic_store(&s->dump_done, c->dump.request);
		prof_futex_wake(&s->dump_done);
	}
	uint32_t req = atomic_load(&s->dump_request);
	uint64_t now = prof_mono_ns();
	int asked = req != atomic_load(&s->dump_done) && req != c->dump.request;
	int periodic = s->continuous_dump && now - c->last_dump >= s->dump_period_ms * 1000000ull;
	if (asked && c->write_failed) {
		atomic_store(&s->dump_status, -1); /* the capture is broken: say so, don't hang */
		atomic_store(&s->dump_done, req);
		prof_futex_wake(&s->dump_done);
		return;
	}
	if (c->dump.pid || (!asked && !periodic) || c->write_failed)
		return;
	if (asked) {
		scan_segments(c); /* the requester may be younger than the last scan */
		drain_all(c);
	}
	struct dump_request r = {
		.request = asked ? req : 0,
		.tables_path = asked && s->dump_kind == DUMP_TABLES ? s->dump_path : 0,
		.prefix = s->output_prefix,
		.max_json_events = s->max_json_events,
		.tables = (int)s->aggregate_stats,
	};
	char src[64];
	if (cap_flush(c->w) ||
	    dump_start(&c->dump, capture_source(c->capture_fd, c->capture_path, src, sizeof src),
		       &r)) {
		if (asked) {
			atomic_store(&s->dump_status, -1);
			atomic_store(&s->dump_done, req);
			prof_futex_wake(&s->dump_done);
		}
		return;
	}
	if (!asked)
		c->last_dump = now;
}

static void write_session_header(struct collector *c)
{
	char text[PROF_CMDLINE_MAX + 1024], host[256] = "";
	gethostname(host, sizeof host - 1);
	snprintf(text, sizeof text,
		 "command=%s\nhost=%s\nclock=%s\nstart_ns=%llu\nroot_pid=%u\nring_bytes=%llu\n"
		 "block=%u\nversion=1\n",
		 c->s->command, host, c->clock.kind == PROF_CLOCK_TSC ? "tsc" : "monotonic",
		 (unsigned long long)c->clock.first_ns, c->s->root_pid,
		 (unsigned long long)c->s->ring_bytes, c->s->block);
	put(c, CAP_SESSION, text, strlen(text), 0, 0);
}

static void write_session_end(struct collector *c)
{
	char text[256];
	snprintf(text, sizeof text, "end_ns=%llu\nevents=%llu\nlost=%llu\nprocesses=%llu\n",
		 (unsigned long long)prof_mono_ns(), (unsigned long long)c->events,
		 (unsigned long long)c->lost, (unsigned long long)c->processes);
	put(c, CAP_SESSION_END, text, strlen(text), 0, 0);
}

/* The session segment lost pages under us: from now on its settings come from the copy
 * taken at start, and the session is over (its counters and futexes are gone). */
static int session_lost(struct collector *c)
{
	if (!c->session_shrunk)
		return 0;
	if (c->s != &c->session_copy) {
		c->s = &c->session_copy;
		fprintf(stderr, "libprof: the session's shared memory (/dev/shm/libprof-%u-%s) was "
				"truncated by a process of the program; the outputs hold the "
				"events drained so far\n", (unsigned)c->s->uid, c->o->sid);
	}
	return 1;
}

/* A live session whose pids another pid namespace cannot see (containers sharing
 * /dev/shm) is still not reclaimed there: its session segment stays young. */
static void touch_session(struct collector *c)
{
	char name[128];
	prof_session_shm_name(name, sizeof name, c->o->sid);
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};
	nanosleep(&ts, 0);
}

int collector_run(struct collector_options *o)
{
	struct collector *c = calloc(1, sizeof *c);
	if (!c)
		return 1;
	c->o = o;
	c->s = o->session;
	if (shm_guard_add(c->s, sizeof *c->s, &c->session_shrunk)) {
		fprintf(stderr, "libprof: cannot guard the session's shared memory; not profiling\n");
		free(c);
		return 1;
	}
	prof_proc_shm_prefix(c->shm_prefix, sizeof c->shm_prefix, o->sid);
	/* Claimed before the program is told the collector is ready, and written back: every
	 * later write (dumps, the end) uses the claimed prefix. */
	char err[PROF_PATH_MAX + 512];
	int fd = outfile_claim(c->s->output_prefix, sizeof c->s->output_prefix,
			       (int)c->s->overwrite, err, sizeof err);
	snprintf(c->capture_path, sizeof c->capture_path, "%s.prof", c->s->output_prefix);
	c->capture_fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	collector_outputs_init((int)c->s->overwrite);
	c->w = fd < 0 ? NULL
		      : cap_writer_fdopen(fd, c->capture_path, cap_writer_workers(), err,
					  sizeof err);
	if (!c->w) {
		fprintf(stderr, "libprof: %s; not profiling\n", err);
		if (c->capture_fd >= 0)
			close(c->capture_fd);
		atomic_store(&c->s->state, SESSION_FAILED);
		prof_futex_wake(&c->s->state);
		atomic_store(&c->s->collector_ready, 1); /* the creator stops waiting, sees FAILED */
		prof_futex_wake(&c->s->collector_ready);
		free(c);
		return 1;
	}
	c->session_copy = *c->s; /* the settings and the claimed prefix */
	prof_clock_map_init(&c->clock, (enum prof_clock_kind)c->s->clock_kind, c->s->clock_tsc,
			    c->s->clock_ns);
	write_session_header(c);
	atomic_store(&c->s->collector_ready, 1);
	prof_futex_wake(&c->s->collector_ready);

	for (;;) {
		uint64_t now = prof_mono_ns();
		if (now - c->last_scan >= SCAN_EVERY_NS) {
			scan_segments(c);
			c->last_scan = now;
		}
		if (now - c->last_touch >= TOUCH_EVERY_NS) {
			touch_session(c);
			c->last_touch = now;
		}
		if (now - c->last_clock >= CLOCK_EVERY_NS) {
			prof_clock_map_update(&c->clock);
			c->last_clock = now;
		}
		c->liveness_pass = now - c->last_live >= LIVENESS_EVERY_NS;
		uint64_t busy = drain_all(c);
		if (session_lost(c))
			break;
		if (c->liveness_pass) {
			check_liveness(c);
			release_root_if_alone(c);
			c->last_live = now;
			/* session_over keeps its own grace timer: resetting it here on
			 * every pass made a child that never joins a hang */
			if (session_over(c, now)) {
				/* closed to newcomers, then one more look for segments made in
				 * the last moment */
				atomic_store(&c->s->state, SESSION_CLOSING);
				if (!scan_segments(c))
					break;
				atomic_store(&c->s->state, SESSION_RUNNING);
			}
		}
		/* writers blocked on a full ring tell a stopped or dead collector by this */
		atomic_fetch_add_explicit(&c->s->heartbeat, 1, memory_order_relaxed);
		answer_dump(c);
		if (session_lost(c))
			break;
		if (!busy)
			sleep_ms(1);
	}
	for (struct proc_entry *p = c->procs; p; p = p->next)
		finish_process(c, p, child_status(c, p->pid));
	int status;
	if (dump_poll(&c->dump, 1, &status) && c->dump.request) {
		atomic_store(&c->s->dump_status, status);
		atomic_store(&c->s->dump_done, c->dump.request);
		prof_futex_wake(&c->s->dump_done);
	}
	session_lost(c);
	sweep_segments(c);
	name_frames(c);
	write_session_end(c);
	int rc = 0;
	if (!c->write_failed && cap_flush(c->w))
		write_failed(c);
	if (cap_writer_close(c->w))
		rc = 1;
	int ours = capture_is_ours(c->capture_fd, c->capture_path);
	char prefix[PROF_PATH_MAX];
	snprintf(prefix, sizeof prefix, "%s", c->s->output_prefix);
	if (!c->processes) {
		/* the command never ran (not found, or died before libprof started); a capture
		 * another session put at our name is not ours to remove */
		if (ours)
			unlink(c->capture_path);
		if (!c->s->quiet)
			fprintf(stderr, "libprof: no process was profiled; no outputs written\n");
	} else if (!ours && capture_keep_elsewhere(c->capture_fd, prefix, sizeof prefix,
						   c->capture_path, sizeof c->capture_path, err,
						   sizeof err)) {
		fprintf(stderr, "libprof: %s.prof was replaced by another session's capture, and "
				"this session's could not be kept (%s); no outputs written\n",
			c->s->output_prefix, err);
		rc = 1;
	} else {
		if (!ours)
			fprintf(stderr, "libprof: %s.prof was replaced by another session's capture; "
					"this session's is kept as %s\n", c->s->output_prefix,
				c->capture_path);
		struct output_request q = {.max_json_events = c->s->max_json_events,
					   .tables = (int)c->s->aggregate_stats,
					   .quiet = (int)c->s->quiet,
					   .write_failed = c->write_failed,
					   .drained = c->events};
		if (collector_make_outputs(c->capture_path, prefix, &q))
			rc = 1;
	}
	if (c->capture_fd >= 0)
		close(c->capture_fd);
	for (struct proc_entry *p = c->procs, *next; p; p = next) {
		next = p->next;
		if (p->shm) {
			shm_guard_remove(p->shm);
			munmap(p->shm, p->map_size);
		}
		free(p->slot_gen);
		free(p->slot_tail);
		stacks_free(&p->stacks);
		free(p);
	}
	free(c);
	return rc;
}

/* test/fuzz: segments in memory drained by the code above, without /dev/shm or a live
 * process (drain_fuzz.h). */
struct collector *collector_fuzz_new(struct collector_options *o, struct cap_writer *w)
{
	struct collector *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->o = o;
	c->s = o->session;
	c->w = w;
	c->capture_fd = -1;
	prof_proc_shm_prefix(c->shm_prefix, sizeof c->shm_prefix, o->sid);
	prof_clock_map_init(&c->clock, PROF_CLOCK_MONO, 0, 0);
	return c;
}

void collector_fuzz_add(struct collector *c, struct prof_proc_shm *shm, size_t size)
{
	add_process(c, "", shm, size);
}

void collector_fuzz_drain(struct collector *c)
{
	c->liveness_pass = 1;
	drain_all(c);
}

void collector_fuzz_end(struct collector *c)
{
	for (struct proc_entry *p = c->procs; p; p = p->next)
		finish_process(c, p, INT32_MIN);
	for (struct proc_entry *p = c->procs, *next; p; p = next) {
		next = p->next;
		free(p->slot_gen);
		free(p->slot_tail);
		stacks_free(&p->stacks);
		free(p);
	}
	free(c);
}
