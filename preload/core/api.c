/* The public API of include/prof.h: annotations and MXNet-style control. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/wrap/alloc.h"
#include "prof.h"
#include "preload/stacks/stack.h"
#include "preload/core/state.h"
#include "preload/common/debug.h"

#define EXPORT __attribute__((visibility("default")))

static _Atomic long step_count;
struct prof_schedule prof_sched; /* PROFILER_SCHEDULE, parsed at start */

/* Annotations are recorded only when the thread is not already inside libprof (a signal
 * handler that interrupted a wrapper); one writer per ring at a time. */
static inline struct prof_thread *enter(void)
{
	struct prof_thread *t = &prof_thr;
	if (!__atomic_load_n(&prof_on, __ATOMIC_RELAXED) || !prof_proc || t->busy)
		return 0;
	t->busy = 1;
	return t;
}

EXPORT void prof_range_push(const char *name)
{
	prof_range_open(PROF_CAT_USER, name);
}

EXPORT void prof_range_pop(void)
{
	prof_range_close();
}

/* How many open ranges this thread keeps: none without its block of them (only
 * counted then, as those past PROF_MAX_RANGES are). */
static inline uint32_t kept(const struct prof_thread *t)
{
	return (uintptr_t)t->ranges > 1 ? PROF_MAX_RANGES : 0;
}

/* A range's event: with its bytes where it is a collective that said them. */
static void emit_range(struct prof_thread *t, uint32_t n, uint32_t depth, uint64_t now)
{
	uint32_t name = t->ranges->name[n] - 1;
	if (t->ranges->bytes[n])
		prof_emit(t, t->ranges->cat[n], PROF_EV_COMPLETE,
			  PROF_EVF_COMM | (t->ranges->type[n] ? PROF_EVF_DETAIL : 0), name, depth,
			  t->ranges->t0[n], now, t->ranges->type[n],
			  t->ranges->bytes[n] == PROF_COMM_UNKNOWN ? PROF_COMM_UNKNOWN
								 : t->ranges->bytes[n] - 1,
			  PROF_COMM_WHERE(0, -1));
	else
		prof_emit(t, t->ranges->cat[n], PROF_EV_COMPLETE, 0, name, depth, t->ranges->t0[n], now,
			  0, 0, 0);
}

void prof_range_open(uint8_t cat, const char *name)
{
	struct prof_thread *t = &prof_thr;
	uint32_t n = t->nranges;
	t->nranges = n + 1;
	if (n >= PROF_MAX_RANGES ||
	    !prof_thread_block((void **)&t->ranges, sizeof *t->ranges))
		return; /* too deep (or no room): counted so the matching pop stays balanced */
	struct prof_thread *on = enter();
	t->ranges->name[n] = on ? prof_intern(name) + 1 : 0; /* 0: not recorded */
	t->ranges->cat[n] = cat;
	t->ranges->bytes[n] = 0;
	t->ranges->type[n] = 0;
	if (on) {
		/* only a recorded range is a level: what is recorded inside an unrecorded one
		 * must not be left to the next sibling's self time */
		t->depth++;
		t->ranges->t0[n] = prof_now();
		t->busy = 0;
	}
}

void prof_range_end_at(uint32_t level, int emit)
{
	struct prof_thread *t = &prof_thr;
	if (level + 1 == t->nranges) {
		if (emit) {
			prof_range_close();
		} else {
			uint32_t n = --t->nranges;
			if (n < kept(t) && t->ranges->name[n] && t->depth)
				t->depth--;
		}
		return;
	}
	if (level >= t->nranges)
		return;
	if (level >= kept(t)) {
		t->nranges--; /* never kept, only counted */
		return;
	}
	uint32_t kept_top = t->nranges <= kept(t) ? t->nranges - 1 : kept(t) - 1;
	uint32_t name = t->ranges->name[level], above = 0;
	for (uint32_t i = level + 1; i <= kept_top; i++)
		above += t->ranges->name[i] != 0;
	if (name && t->depth) {
		t->depth--;
		/* its depth when it began: the recorded levels opened since are above it */
		if (emit && enter()) {
			uint32_t depth = t->depth >= above ? t->depth - above : 0;
			emit_range(t, level, depth, prof_now());
			t->busy = 0;
		}
	}
	for (uint32_t i = level; i < kept_top; i++) {
		t->ranges->name[i] = t->ranges->name[i + 1];
		t->ranges->t0[i] = t->ranges->t0[i + 1];
		t->ranges->cat[i] = t->ranges->cat[i + 1];
		t->ranges->bytes[i] = t->ranges->bytes[i + 1];
		t->ranges->type[i] = t->ranges->type[i + 1];
	}
	if (t->nranges > kept(t))
		t->ranges->name[kept_top] = 0; /* the level that slides in was never kept */
	t->nranges--;
}

void prof_range_close(void)
{
	struct prof_thread *t = &prof_thr;
	if (t->nranges == 0)
		return;
	uint32_t n = --t->nranges;
	if (n >= kept(t))
		return;
	uint32_t name = t->ranges->name[n];
	if (!name)
		return;
	if (t->depth)
		t->depth--;
	if (!enter())
		return;
	emit_range(t, n, t->depth, prof_now());
	t->busy = 0;
}

void prof_range_set_comm(uint64_t bytes, uint32_t type_id)
{
	struct prof_thread *t = &prof_thr;
	if (!t->nranges || t->nranges > kept(t))
		return;
	/* the bytes field says "not known" itself; a message it is all the same */
	t->ranges->bytes[t->nranges - 1] = bytes == PROF_COMM_UNKNOWN ? PROF_COMM_UNKNOWN : bytes + 1;
	t->ranges->type[t->nranges - 1] = type_id;
}

EXPORT void prof_mark(const char *name)
{
	struct prof_thread *t = enter();
	if (!t)
		return;
	uint64_t now = prof_now();
	prof_emit(t, PROF_CAT_MARK, PROF_EV_INSTANT, 0, prof_intern(name), t->depth, now, now, 0, 0,
		  0);
	t->busy = 0;
}

/* PROFILER_SCHEDULE turns recording on or off at a step (schedule.h): on before the
 * step's marker, off after it, so an active step's two markers are both recorded. */
static void schedule_step(uint64_t step, int before_marker)
{
	if (!prof_sched.set || !prof_proc)
		return;
	int on = prof_schedule_records(&prof_sched, step);
	if (on != prof_sched_on && on == before_marker) {
		prof_sched_on = on;
		prof_set_recording(prof_user_on);
	}
}

/* The program marks its own steps (prof_step, libprof.step): the framework's are not
 * counted from then on, and those counted before are forgotten (the program's first
 * step is step 1, as without them). */
static _Atomic int steps_marked;
static _Atomic long framework_steps;

static void restart_steps(void)
{
	atomic_store(&step_count, 0);
	if (prof_sched.set) {
		prof_sched_on = prof_schedule_records(&prof_sched, 0);
		prof_set_recording(prof_user_on);
	}
}

static long count_step(void)
{
	long n = atomic_fetch_add(&step_count, 1) + 1;
	schedule_step((uint64_t)n, 1);
	struct prof_thread *t = enter();
	if (t) {
		uint64_t now = prof_now();
		prof_emit(t, PROF_CAT_STEP, PROF_EV_INSTANT, 0, prof_names[NAME_STEP], t->depth,
			  now, now, (uint64_t)n, 0, 0);
		t->busy = 0;
	}
	schedule_step((uint64_t)n, 0);
	return n;
}

EXPORT long prof_step(void)
{
	if (!atomic_exchange(&steps_marked, 1) && atomic_load(&framework_steps))
		restart_steps();
	return count_step();
}

void prof_framework_step(void)
{
	/* for PROFILER_SCHEDULE only: without one, the outputs show the program's steps */
	if (prof_sched.set && !atomic_load_explicit(&steps_marked, memory_order_relaxed)) {
		atomic_fetch_add(&framework_steps, 1);
		count_step();
	}
}

void prof_schedule_start(void)
{
	/* the session's (prof record --schedule, or the root's PROFILER_SCHEDULE): every
	 * process of it follows the same schedule over its own steps */
	char spec[sizeof prof_session->schedule + 1] = "";
	if (prof_session)
		memcpy(spec, prof_session->schedule, sizeof prof_session->schedule);
	if (prof_schedule_parse(spec, &prof_sched))
		prof_sched.set = 0; /* checked when set; another process could have written it */
	if (prof_sched.set && prof_cfg.follow) {
		prof_warn("PROFILER_SCHEDULE is ignored with PROFILER_FOLLOW (the framework's "
			  "profiler decides when to record)");
		prof_sched.set = 0;
	}
	prof_sched_on = !prof_sched.set ||
			prof_schedule_records(&prof_sched, (uint64_t)atomic_load(&step_count));
}

void prof_schedule_after_fork(void)
{
	restart_steps();
}

EXPORT void prof_counter(const char *name, double value)
{
	struct prof_thread *t = enter();
	if (!t)
		return;
	uint64_t bits;
	memcpy(&bits, &value, sizeof bits);
	uint64_t now = prof_now();
	prof_emit(t, PROF_CAT_COUNTER, PROF_EV_COUNTER, PROF_EVF_DOUBLE, prof_intern(name),
		  t->depth, now, now, bits, 0, 0);
	t->busy = 0;
}

/* Settings that the session (and so the collector) holds. */
static void publish_session_settings(void)
{
	struct prof_session_shm *s = prof_session;
	if (!s || (pid_t)s->root_pid != getpid())
		return;
	s->aggregate_stats = (uint32_t)prof_cfg.aggregate_stats;
	s->stacks |= prof_cfg.stack_mode != PROF_STACK_OFF;
	s->continuous_dump = (uint32_t)prof_cfg.continuous_dump;
	s->dump_period_ms = prof_cfg.dump_period_ms;
}

int prof_trace_from_api;

EXPORT int prof_set_config(const char *key, const char *value)
{
	char err[512];
	struct prof_thread *t = &prof_thr;
	t->busy++;
	int rc = prof_config_set(&prof_cfg, key, value, err, sizeof err);
	/* when the row says the value is read (an alias: by the row it sets) */
	const struct prof_setting *row = rc ? 0 : prof_setting_find(key);
	const struct prof_setting *var = row && row->sets ? prof_setting_find(row->sets) : row;
	const char *env = var ? var->env : row ? row->env : "";
	if (rc)
		prof_warn("prof_set_config: %s", err);
	else if (row->when == PROF_WHEN_LOAD)
		prof_warn("prof_set_config: %s is read only when libprof loads; set %s in the "
			  "environment", key, env);
	else if (row->when == PROF_WHEN_START && prof_session)
		prof_warn("prof_set_config: %s is fixed once profiling has started; set it before "
			  "prof_set_state(PROF_RUN) or with %s", key, env);
	else if (!strncmp(key, "stack", 5))
		prof_stack_setup();
	else if (!strcmp(key, "debug"))
		prof_debug_mask = prof_debug_parse(prof_cfg.debug, err, sizeof err);
	if (!rc && !strcmp(key, "trace"))
		prof_trace_from_api = 1;
	publish_session_settings();
	prof_update_flags();
	t->busy--;
	return rc;
}

EXPORT int prof_set_state(int state)
{
	if (state == PROF_RUN)
		return prof_start();
	if (state == PROF_STOP) {
		prof_set_recording(0);
		return 0;
	}
	prof_warn("prof_set_state(%d): use PROF_RUN (1) or PROF_STOP (0)", state);
	return -1;
}

EXPORT void prof_pause(void)
{
	prof_set_recording(0);
}

EXPORT void prof_resume(void)
{
	if (prof_proc)
		prof_set_recording(1);
}

/* One request at a time per session; the collector drains every ring before answering,
 * so everything this thread recorded before the call is in the result. */
static int ask_collector(uint32_t kind, const char *path)
{
	struct prof_session_shm *s = prof_session;
	if (!s || !prof_collector_alive())
		return -1;
	uint32_t me = (uint32_t)getpid(), free_ = 0;
	while (!atomic_compare_exchange_weak(&s->dump_lock, &free_, me)) {
		/* a holder that died (killed inside prof_dump) must not block everyone */
		if (free_ && kill((pid_t)free_, 0) && errno == ESRCH &&
		    atomic_compare_exchange_strong(&s->dump_lock, &free_, me))
			break;
		free_ = 0;
		if (!prof_collector_alive())
			return -1;
		usleep(1000);
	}
	s->dump_kind = kind;
	snprintf(s->dump_path, sizeof s->dump_path, "%s", path ? path : "");
	uint32_t req = atomic_load(&s->dump_done) + 1;
	atomic_store(&s->dump_request, req);
	prof_futex_wake(&s->dump_request);
	int rc = 0;
	while (atomic_load(&s->dump_done) != req) {
		if (!prof_collector_alive() || atomic_load(&s->state) != SESSION_RUNNING) {
			rc = -1;
			break;
		}
		prof_futex_wait(&s->dump_done, req - 1, 100);
	}
	if (rc == 0)
		rc = atomic_load(&s->dump_status);
	atomic_store(&s->dump_lock, 0);
	return rc;
}

EXPORT int prof_dump(void)
{
	struct prof_thread *t = &prof_thr;
	t->busy++;
	int rc = ask_collector(DUMP_OUTPUTS, 0);
	if (rc)
		prof_warn("prof_dump: the collector could not write the outputs");
	t->busy--;
	return rc;
}

static char *read_whole(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	char *buf = 0;
	if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
		ssize_t n = read(fd, buf, (size_t)st.st_size);
		buf[n > 0 ? n : 0] = 0;
	}
	close(fd);
	return buf;
}

EXPORT const char *prof_dumps(void)
{
	static char *last;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	char path[256];
	snprintf(path, sizeof path, "/dev/shm/libprof-dumps-%u-%s-%d", (unsigned)getuid(), prof_sid,
		 (int)getpid());
	char *text = 0;
	if (ask_collector(DUMP_TABLES, path) == 0)
		text = read_whole(path);
	unlink(path);
	if (text) {
		free(last);
		last = text;
	}
	t->busy--;
	return text;
}
