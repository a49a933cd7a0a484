/* libprof.so's process-wide state and per-thread state, and the inline event writer
 * every interposed call uses. Everything here is hidden from the program. */
#ifndef PROF_PRELOAD_STATE_H
#define PROF_PRELOAD_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "preload/common/clock.h"
#include "preload/common/config.h"
#include "preload/common/schedule.h"
#include "preload/common/ring.h"
#include "preload/common/session.h"
#include "preload/common/shm_layout.h"

#define PROF_MAX_RANGES 64
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct prof_thread {
	struct ring_writer w;   /* w.slot is NULL until the thread's first event */
	uint32_t busy;          /* inside libprof: calls pass through untraced */
	uint32_t depth;         /* open ranges and traced calls on this thread */
	uint32_t no_slot;       /* claiming failed: drop (and count) this thread's events */
	struct prof_lost_thread *lost_entry; /* where they are counted (NULL: table full) */
	uint32_t counted_fork;  /* the fork wrapper counted this fork */
	uint32_t exiting;       /* the thread's exit hook has run */
	uint32_t given_name;    /* prof_thread_give_name's string id + 1, for each ring */
	uint32_t nranges;
	/* the open ranges (1.6 KiB): mapped at the thread's first range, not kept in static
	 * TLS (prof_thread_block); without it every range is counted only */
	struct prof_ranges *ranges;
};

struct prof_ranges {
	uint32_t name[PROF_MAX_RANGES];
	uint64_t t0[PROF_MAX_RANGES];
	uint8_t cat[PROF_MAX_RANGES];
	/* a collective's bytes + 1 (prof_range_set_comm), 0: not a message; its datatype's
	 * string id + 1, 0: not known */
	uint64_t bytes[PROF_MAX_RANGES];
	uint32_t type[PROF_MAX_RANGES];
};

extern __thread struct prof_thread prof_thr __attribute__((tls_model("initial-exec")));

extern struct prof_config prof_cfg;
/* prof_set_config("trace") was called: its patterns win over PROFILER_TRACE */
extern int prof_trace_from_api;
extern struct prof_session_shm *prof_session;
extern struct prof_proc_shm *prof_proc;
extern char prof_sid[PROF_SID_LEN + 1];
/* Read on every interposed call: plain ints, written only by control calls. */
extern int prof_on;        /* recording */
extern int prof_memory_on; /* recording and profile_memory */
extern int prof_alloc_timed; /* PROFILER_ALLOC_TIMING: allocator calls read the clock twice */

/* Predefined names, interned when a process segment is made. */
enum prof_name {
	NAME_MALLOC, NAME_FREE, NAME_CALLOC, NAME_REALLOC, NAME_REALLOCARRAY,
	NAME_POSIX_MEMALIGN, NAME_ALIGNED_ALLOC, NAME_MEMALIGN, NAME_VALLOC, NAME_PVALLOC,
	NAME_STEP, NAME_COUNT
};
extern uint32_t prof_names[NAME_COUNT];

/* strings.c */
uint32_t prof_intern(const char *s);
/* A dynamic category's index (registered in the process segment on first use). */
uint8_t prof_category(const char *name);
/* The same, asked once per call site (prof_category takes a lock): *once holds the index
 * + 1 from then on. Indexes are inherited across fork with the process segment. */
static inline uint8_t prof_category_once(const char *name, uint32_t *once)
{
	uint32_t c = __atomic_load_n(once, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!c, 0)) {
		c = prof_category(name) + 1u;
		__atomic_store_n(once, c, __ATOMIC_RELEASE);
	}
	return (uint8_t)(c - 1);
}
void prof_strings_reset(void);
/* A forked child's segment holds the parent's strings up to used (area.c copied them). */
void prof_strings_inherit(struct prof_proc_shm *from, struct prof_proc_shm *to,
			  uint64_t used);

/* api.c: a range on this thread's timeline in category cat (prof_range_push's is
 * PROF_CAT_USER; a framework's own ranges, torch_callbacks.c, are operators). */
void prof_range_open(uint8_t cat, const char *name);
void prof_range_close(void);
/* Ends the range at level (0: outermost) of this thread's stack, with its event or
 * (emit 0) forgotten; ranges opened after it stay open: PyTorch's ranges need not nest
 * (a ProfilerStep begun inside a label ends after it). */
void prof_range_end_at(uint32_t level, int emit);
/* The innermost open range is a message or collective of so many bytes (PROF_COMM_UNKNOWN:
 * not known) of the datatype named by string id type_id + 1 (0: not known): its event
 * says so (PROF_EVF_COMM, PROF_EVF_DETAIL; communicator and peer not known). */
void prof_range_set_comm(uint64_t bytes, uint32_t type_id);

/* thread.c */
int prof_thread_claim(struct prof_thread *t);
/* The thread's exit hook runs at its exit even if it never gets a ring (it holds memory
 * of libprof's to give back: its remembered stacks). */
void prof_thread_want_exit_hook(void);
/* A per-thread block of size bytes for state too large for static TLS (glibc takes that
 * from every thread's stack: 47 KiB of libprof's made pthread_create refuse 16 and 64 KiB
 * stacks). *slot is a __thread pointer of the caller's: mapped (zeroed) at the first
 * call, unmapped at the thread's exit; NULL when it cannot be (no memory, the thread is
 * ending, or PROF_THREAD_BLOCKS are in use already). A system call the first time. */
void *prof_thread_block(void **slot, size_t size);
void prof_thread_give_name(const char *name);
void prof_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* This process ends (init.c): from_exit 1 in exit's destructors, 0 from _exit. */
void prof_process_end(int from_exit);
/* The image's CPU time so far into its segment (cpu_ns): at its exit or exec. */
void prof_note_cpu_time(void);

/* api.c: PROFILER_SCHEDULE, applied from the start of recording (prof_on set by it) */
extern struct prof_schedule prof_sched;
void prof_schedule_start(void);
void prof_schedule_after_fork(void);
/* A step boundary the framework marks (the end of PyTorch's optimizer.step()): under
 * PROFILER_SCHEDULE, a step as prof_step() makes, until the program marks its own (its
 * first prof_step() restarts the count). */
void prof_framework_step(void);

/* init.c: recording is prof_on = prof_user_on (the program's pause/resume, follow) &&
 * prof_sched_on (PROFILER_SCHEDULE); prof_set_recording sets the first and the flags */
extern int prof_user_on, prof_sched_on;
void prof_set_recording(int user_on);

/* init.c */
int prof_start(void);
void prof_update_flags(void);
int prof_collector_alive(void);
void prof_after_fork_child(void);

/* process.c */
/* Keeps the PROFILER_* settings this process started with, for the images it spawns. */
void prof_spawn_env_save(char **env);
/* 1 while this process runs as the session's user (else the collector cannot see its
 * children's segments). */
int prof_session_user(void);

/* collector_watch.c */
int prof_pid_running(pid_t pid); /* zombies are not running */
/* The session's collector runs: its pid with the start time it noted (not a reused pid). */
int prof_collector_running(struct prof_session_shm *s);
int prof_collector_stalled(void);
void prof_report_undelivered(void);

static inline void prof_emit(struct prof_thread *t, uint8_t cat, uint8_t type, uint8_t flags,
			     uint32_t name, unsigned depth, uint64_t t0, uint64_t t1, uint64_t a,
			     uint64_t b, uint64_t c)
{
	if (unlikely(!t->w.slot) && !prof_thread_claim(t))
		return;
	struct prof_event *e = ring_reserve(&t->w, t1);
	if (unlikely(!e))
		return;
	e->t0 = t0;
	e->t1 = t1;
	e->a = a;
	e->b = b;
	e->c = c;
	e->name = name;
	e->cat = cat;
	e->type = type;
	e->flags = flags;
	e->depth = depth > PROF_EVENT_DEPTH_MAX ? PROF_EVENT_DEPTH_MAX : (uint8_t)depth;
	ring_commit(&t->w);
}

#endif
