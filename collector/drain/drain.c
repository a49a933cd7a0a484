/* Draining a process segment into the raw capture: its strings, categories and stacks,
 * each ring's new events (ticks converted to session nanoseconds), the losses its
 * threads counted, and at its end PROCESS_END. The shared memory outlives a crashed
 * program, so whatever reached a ring before a death still reaches the capture. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"
#include "collector/drain/drain_fuzz.h"
#include "collector/shm/shm_guard.h"
#include "collector/shm/shm_remove.h"

void write_failed(struct collector *c)
{
	if (!c->write_failed)
		fprintf(stderr, "libprof: %s; the capture keeps what was written before\n",
			cap_writer_error(c->w));
	c->write_failed = 1;
}

void put_record(void *ctx, uint32_t type, const void *head, size_t hlen,
		const void *tail, size_t tlen)
{
	put(ctx, type, head, hlen, tail, tlen);
}

static void flush_events(struct collector *c)
{
	struct packed_batch *b = &c->batch;
	if (!b->k.n)
		return;
	struct cap_events h = {.pid = c->buf_pid, .tid = c->buf_tid, .count = b->k.n};
	if (!c->write_failed) {
		/* the fold sees the events' latest time, as a reader of the record would */
		if (c->fold)
			fold_live_events(c->fold, h.pid, b->last_t, b->fold_counted, b->fold_work);
		struct cap_piece pieces[1 + CAP_PACKED_PIECES];
		uint8_t lengths[CAP_PACKED_LENGTHS];
		pieces[0] = (struct cap_piece){&h, sizeof h};
		cap_packer_pieces(&b->k, lengths, pieces + 1);
		if (cap_writev(c->w, CAP_EVENTS_PACKED, pieces, 1 + CAP_PACKED_PIECES))
			write_failed(c);
	}
	c->events += b->k.n;
	cap_packer_reset(&b->k);
	b->last_t = 0;
	b->fold_counted = 0;
	b->fold_work = 0;
	c->last_stack_t0 = 0;
}

/* PROFILER_DELAY / PROFILER_DURATION: an event wholly inside the window is kept (a call
 * or range across its start or end is not); a loss only if its gap overlaps it. */
static int in_window(const struct collector *c, const struct prof_event *e)
{
	if (e->type == PROF_EV_LOST)
		return e->t1 >= c->window_lo && e->t0 <= c->window_hi;
	return e->t0 >= c->window_lo && e->t1 <= c->window_hi;
}

static void add_event(struct collector *c, const struct prof_event *src, int in_ticks)
{
	struct prof_event e = *src;
	/* CUPTI's records are stamped on CLOCK_MONOTONIC by CUPTI itself */
	if (in_ticks && !(src->flags & PROF_EVF_NS)) {
		e.t0 = prof_clock_to_ns(&c->clock, src->t0);
		e.t1 = src->t1 == src->t0 ? e.t0 : prof_clock_to_ns(&c->clock, src->t1);
	}
	if (__builtin_expect(!in_window(c, &e), 0)) {
		if (e.type != PROF_EV_LOST && e.type != PROF_EV_STACK)
			c->left_out++;
		/* the stack just kept for this event (same t0) goes with it */
		if (c->last_stack_t0 && c->last_stack_t0 == e.t0 && e.type != PROF_EV_STACK) {
			c->batch = c->undo;
			c->last_stack_t0 = 0;
		}
		return;
	}
	struct packed_batch *b = &c->batch;
	if (!b->k.cols)
		cap_packer_init(&b->k, c->packed, EVENT_CHUNK);
	if (e.type == PROF_EV_STACK)
		c->undo = *b;
	cap_pack_one(&b->k, &e);
	uint64_t t = e.t1 > e.t0 ? e.t1 : e.t0;
	if (t > b->last_t)
		b->last_t = t;
	b->fold_counted += (uint64_t)fold_event_counts(&e);
	b->fold_work |= fold_event_is_work(&e);
	c->last_stack_t0 = e.type == PROF_EV_STACK ? e.t0 : 0;
	if (e.type == PROF_EV_LOST)
		c->buf_lost += e.a;
	if (b->k.n == EVENT_CHUNK)
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
		if (ev[i].type == PROF_EV_STACKED_ALLOC) {
			/* the capture's two events: the stack, then the allocation it belongs to */
			struct prof_event stack = {.t0 = ev[i].t0, .t1 = ev[i].t0, .a = ev[i].c,
						   .cat = ev[i].cat, .type = PROF_EV_STACK,
						   .flags = ev[i].flags & PROF_EVF_NS,
						   .depth = ev[i].depth};
			struct prof_event alloc = ev[i];
			alloc.type = PROF_EV_COMPLETE;
			alloc.c = 0;
			add_event(c, &stack, 1);
			add_event(c, &alloc, 1);
			continue;
		}
		add_event(c, &ev[i], 1);
	}
}

/* A segment that fails a check is drained no more and its name removed at once; its
 * process is still watched, and finished (PROCESS_END) when it ends, so the session goes
 * on as before (the root still waits for the outputs). */
void quarantine(struct proc_entry *p, const char *why)
{
	if (p->corrupt)
		return;
	if (p->shrunk) /* the zeros read there were the symptom */
		why = "its file was cut below the size mapped";
	p->corrupt = 1;
	fprintf(stderr, "libprof: process %d's segment is corrupt (%s); its later events are "
			"left out\n", (int)p->pid, why);
	if (p->name[1])
		shm_remove_own(p->name);
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

/* A name libprof gave a thread (string id + 1, interned and published before it was
 * set): a later thread record, which the model takes over the /proc name. */
static void given_thread_name(struct collector *c, struct proc_entry *p, uint32_t tid,
			      uint32_t name_id)
{
	uint64_t used = atomic_load_explicit(&p->shm->strings_used, memory_order_acquire);
	uint64_t at = (uint64_t)name_id - 1;
	/* entries start 4-aligned; another id is not one (the writer is not trusted) */
	if (!name_id || (at & 3) || at + 4 > used)
		return;
	const char *e = shm_area_at(&p->strings_area, at, 4);
	if (!e)
		return;
	uint32_t len;
	memcpy(&len, e, sizeof len); /* read once */
	if (len == PROF_AREA_PAD || at + 4 + len > used ||
	    !(e = shm_area_at(&p->strings_area, at, 4 + (uint64_t)len)))
		return;
	struct cap_thread h = {.pid = (uint32_t)p->pid, .tid = tid};
	put(c, CAP_THREAD, &h, sizeof h, e + 4, len);
}

/* The strings of the area from logical offset from up to used (published); returns where
 * the next one starts. An entry never spans chunks: a pad entry, or too little room for
 * one, ends a chunk. */
static uint64_t put_strings(struct collector *c, struct proc_entry *p, uint64_t from,
			    uint64_t used)
{
	struct shm_area *a = &p->strings_area;
	while (from + 4 <= used) {
		uint64_t end = shm_area_chunk_end(a, from);
		const struct prof_string_entry *e =
			end - from >= 4 ? (const void *)shm_area_at(a, from, 4) : NULL;
		if (end - from >= 4 && !e)
			break; /* its chunk is not mapped: a bad one is said by the caller */
		uint32_t len = e ? e->len : PROF_AREA_PAD; /* read once: the writer is not trusted */
		if (len == PROF_AREA_PAD) {
			from = end;
			continue;
		}
		uint64_t size = (4 + (uint64_t)len + 3) & ~3ull;
		if (from + size > used || from + size > end ||
		    !shm_area_at(a, from, size))
			break;
		struct cap_string h = {.pid = (uint32_t)p->pid, .id = (uint32_t)from};
		put(c, CAP_STRING, &h, sizeof h, e->bytes, len);
		from += size;
	}
	return from;
}

static void put_category(struct collector *c, struct proc_entry *p, uint32_t i)
{
	const char *name = p->shm->categories[i];
	struct cap_string h = {.pid = (uint32_t)p->pid, .id = PROF_CAT_FIRST_DYNAMIC + i};
	put(c, CAP_CATEGORY, &h, sizeof h, name, strnlen(name, PROF_CATEGORY_NAME_MAX));
}

/* Strings, categories and stacks published so far. */
static void read_strings(struct collector *c, struct proc_entry *p)
{
	struct prof_proc_shm *shm = p->shm;
	char why[160];
	if (p->corrupt)
		return;
	uint64_t used = atomic_load_explicit(&shm->strings_used, memory_order_acquire);
	if (used > p->strings_area.limit) {
		snprintf(why, sizeof why, "strings_used %llu beyond the ids' range",
			 (unsigned long long)used);
		quarantine(p, why);
		return;
	}
	p->strings_read = put_strings(c, p, p->strings_read, used);
	if (p->strings_area.why[0]) {
		quarantine(p, p->strings_area.why);
		return;
	}
	uint32_t ncat = atomic_load_explicit(&shm->ncategories, memory_order_acquire);
	for (; p->categories_read < ncat && p->categories_read < PROF_MAX_CATEGORIES;
	     p->categories_read++)
		put_category(c, p, p->categories_read);
	if (stacks_drain(&p->stacks, shm, &p->stack_area, p->pid, put_record, c, why, sizeof why))
		quarantine(p, why);
}

void put_job(struct collector *c, const struct proc_entry *p)
{
	if (!p->job_len)
		return;
	struct cap_job j = {.pid = p->announce.pid, .exec_seq = p->announce.exec_seq};
	put(c, CAP_JOB, &j, sizeof j, p->job, p->job_len);
}

void replay_process(struct collector *c, struct proc_entry *p)
{
	struct cap_process h = p->announce;
	h.flags = CAP_PROCESS_CONTINUED;
	put(c, CAP_PROCESS, &h, sizeof h, p->cmdline, p->cmdline_len);
	put_job(c, p);
	if (p->corrupt)
		return; /* its later events are left out: nothing of it to name */
	put_strings(c, p, 0, p->strings_read);
	for (uint32_t i = 0; i < p->categories_read; i++)
		put_category(c, p, i);
	stacks_replay(&p->stacks, &p->stack_area, p->pid, put_record, c);
	for (unsigned i = 0; i < p->g.nslots; i++) {
		struct slot_seen *seen = &p->slot_seen[i];
		struct prof_slot *s = shm_slot(p->shm, &p->g, i);
		if (!seen->gen || atomic_load(&s->state) == SLOT_FREE)
			continue;
		struct cap_thread t = {.pid = (uint32_t)p->pid, .tid = seen->tid};
		put(c, CAP_THREAD, &t, sizeof t, seen->name, strlen(seen->name));
		if (seen->name_id)
			given_thread_name(c, p, seen->tid, seen->name_id);
	}
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

/* An event left in a ring by this pass (or, for a writer that may be blocked on a full
 * ring, the last one before its next): CAP_DRAINED goes no further than its time. */
static void drained_until(struct collector *c, const struct prof_event *e)
{
	uint64_t t = e->flags & PROF_EVF_NS ? e->t0 : prof_clock_to_ns(&c->clock, e->t0);
	if (t < c->drained_before)
		c->drained_before = t;
}

/* Events read from one ring in one pass (the 4M rings' size, before 16M): the loop's
 * pace and the parts' rotation were tuned to it. */
#define DRAIN_PASS_EVENTS 65536ull

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
	if (orphan != orphan_pass)
		return 0;
	if (orphan && thread_has_older_events(p, i, s->tid)) {
		uint64_t at = p->slot_tail[i];
		if (head != at && head - at <= p->g.ring_cap)
			drained_until(c, &shm_ring(shm, &p->g, i)[at & (p->g.ring_cap - 1)]);
		return 0;
	}
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
	struct slot_seen *seen = &p->slot_seen[i];
	if (gen != seen->gen) {
		char name[64];
		read_thread_name(p->pid, s->tid, name, sizeof name);
		struct cap_thread h = {.pid = (uint32_t)p->pid, .tid = s->tid};
		put(c, CAP_THREAD, &h, sizeof h, name, strlen(name));
		seen->gen = gen;
		seen->name_id = 0;
		seen->tid = s->tid;
		snprintf(seen->name, sizeof seen->name, "%.19s", name); /* comm: 15 at most */
	}
	uint32_t name_id = atomic_load_explicit(&s->name_id, memory_order_acquire);
	if (name_id != seen->name_id) {
		given_thread_name(c, p, s->tid, name_id);
		seen->name_id = name_id;
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
	/* At most DRAIN_PASS_EVENTS a pass, but for a writer that is gone: the other rings
	 * and the parts' rotation by size are seen to between (16M rings drained whole made
	 * parts twice their size) */
	uint64_t upto = head;
	int partial = !final && head - tail > DRAIN_PASS_EVENTS;
	const struct prof_event *ring = shm_ring(shm, &p->g, i);
	if (partial) {
		upto = tail + DRAIN_PASS_EVENTS;
		drained_until(c, &ring[upto & (p->g.ring_cap - 1)]);
	} else if (head - tail + 64 >= p->g.ring_cap && head != tail) {
		/* full: its writer may wait for room with an event stamped already */
		drained_until(c, &ring[(head - 1) & (p->g.ring_cap - 1)]);
	}
	uint64_t n = 0, at = tail;
	for (;;) {
		uint64_t to = upto - at > DRAIN_PASS_EVENTS ? at + DRAIN_PASS_EVENTS : upto;
		n += ring_drain_upto(s, ring, p->g.ring_cap, to, on_ring_events, c);
		p->slot_tail[i] = at = to;
		if (at == upto || c->bad_event[0])
			break;
		/* a gone writer's ring drained whole: parts by size closed on the way */
		if (c->rotate_bytes) {
			flush_events(c);
			parts_rotate_if_due(c, prof_mono_ns());
		}
	}
	if (c->bad_event[0]) {
		flush_events(c); /* the events before the bad one are the thread's */
		quarantine(p, c->bad_event);
		c->bad_event[0] = 0;
		return 0;
	}
	if (partial) { /* its gap and its retirement once drained whole */
		flush_events(c);
		return n;
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
	/* the frameworks it found loaded, for the summary line (unknown bits ignored) */
	c->frameworks |= atomic_load(&p->shm->frameworks) & ((1u << PROF_NFRAMEWORKS) - 1);
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
	/* sixteenths of a ring's pass the fullest held (of the ring, if smaller): the loop's
	 * pace does not change with the ring's size */
	uint64_t pass = p->g.ring_cap < DRAIN_PASS_EVENTS ? p->g.ring_cap : DRAIN_PASS_EVENTS;
	return most * 16 / pass;
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
		/* counted as the capture has it: a gap outside PROFILER_DELAY/DURATION's window
		 * is left out */
		uint64_t before = c->buf_lost;
		lost_event(c, lost, e->first, e->last > e->first ? e->last : e->first, 1);
		flush_events(c);
		p->lost += c->buf_lost - before;
	}
}

/* What a quarantined process wrote after its quarantine, never read: its slots' spans
 * past the collector's own tails, and their pending losses, found through the geometry
 * checked when it joined, each believed only where it could be (a span of at most a
 * ring, losses of at most one a nanosecond since the clock's start). The writers go on
 * writing, so these are lost events, counted rather than left out without a number. */
static uint64_t left_out_after_quarantine(struct proc_entry *p)
{
	if (!p->slot_tail || !p->shm || p->shrunk)
		return 0;
	uint64_t n = 0, bound = prof_mono_ns();
	for (unsigned i = 0; i < p->g.nslots; i++) {
		struct prof_slot *s = shm_slot(p->shm, &p->g, i);
		if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_FREE)
			continue;
		uint64_t head = atomic_load(&s->head), tail = p->slot_tail[i];
		uint64_t pending = atomic_load(&s->lost_pending);
		if (head >= tail && head - tail <= p->g.ring_cap)
			n += head - tail;
		if (pending <= bound)
			n += pending;
	}
	return p->shrunk ? 0 : n; /* a read past a cut gave zeros: nothing believed */
}

void finish_process(struct collector *c, struct proc_entry *p, int32_t status)
{
	if (p->finished)
		return;
	drain_process(c, p, 1);
	if (p->corrupt) {
		uint64_t left = left_out_after_quarantine(p);
		if (left)
			fprintf(stderr, "libprof: process %d: %llu events it wrote after its "
					"segment was found corrupt were left out (counted as lost)\n",
				(int)p->pid, (unsigned long long)left);
		p->lost += left;
		c->corrupt_lost += left;
	}
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
		uint64_t before = c->buf_lost;
		lost_event(c, no_slot, p->shm->created_ns, prof_mono_ns(), 0);
		flush_events(c);
		p->lost += c->buf_lost - before;
	}
	c->lost += p->lost;
	if (!p->corrupt) {
		uint64_t names = atomic_load(&p->shm->names_lost);
		uint64_t stacks = atomic_load(&p->shm->stacks_lost);
		/* counted once per event, like a drop: beyond that bound they are garbage */
		if (shm_check_lost(names, prof_mono_ns(), SHM_MAX_SLOTS, "names_lost", why,
				   sizeof why) ||
		    shm_check_lost(stacks, prof_mono_ns(), SHM_MAX_SLOTS, "stacks_lost", why,
				   sizeof why)) {
			quarantine(p, why);
		} else {
			c->names_lost += names;
			c->stacks_lost += stacks;
		}
	}
	struct cap_process_end e = {.pid = (uint32_t)p->pid, .status = status,
				    .end_ns = prof_mono_ns(), .lost = p->lost,
				    .cpu_ns = p->corrupt ? 0 : atomic_load(&p->shm->cpu_ns)};
	put(c, CAP_PROCESS_END, &e, sizeof e, 0, 0);
	p->finished = 1;
	if (p->name[1] && !p->corrupt) /* a quarantined one's name is gone already */
		shm_remove_own(p->name);
	shm_area_release(&p->strings_area);
	shm_area_release(&p->stack_area);
	shm_guard_remove(p->shm);
	munmap(p->shm, p->map_size); /* a long session of many processes must not keep them */
	p->shm = 0;
}

/* CAP_DRAINED at most this often: a reader's look at what it holds, per mark */
#define DRAINED_EVERY_NS 5000000ull

uint64_t drain_all(struct collector *c)
{
	uint64_t busy = 0, now = prof_mono_ns();
	/* every ring's head is read after now: what is not in is stamped later, or its
	 * writer took longer than the margin between its stamp and publishing it */
	c->drained_before = now > CAP_DRAINED_MARGIN_NS ? now - CAP_DRAINED_MARGIN_NS : 0;
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (!p->finished) {
			uint64_t full = drain_process(c, p, 0);
			if (full > busy)
				busy = full;
			/* a part by size closes near its size, not a whole pass later */
			if (c->rotate_bytes)
				parts_rotate_if_due(c, prof_mono_ns());
		}
	if (c->w && !c->write_failed && c->drained_before >= c->drained_put + DRAINED_EVERY_NS) {
		struct cap_drained d = {.before_ns = c->drained_before};
		put(c, CAP_DRAINED, &d, sizeof d, 0, 0);
		c->drained_put = c->drained_before;
	}
	return busy;
}

void free_collector(struct collector *c)
{
	for (struct proc_entry *p = c->procs, *next; p; p = next) {
		next = p->next;
		if (p->shm) {
			shm_area_release(&p->strings_area);
			shm_area_release(&p->stack_area);
			shm_guard_remove(p->shm);
			munmap(p->shm, p->map_size);
		}
		free(p->slot_seen);
		free(p->slot_tail);
		free(p->cmdline);
		stacks_free(&p->stacks);
		free(p);
	}
	free(c->session_text);
	free(c->kept);
	fold_live_free(c->fold);
	live_outputs_stop(&c->live);
	free(c);
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
	c->window_hi = UINT64_MAX; /* no PROFILER_DURATION: every event kept */
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
	free_collector(c);
}
