/* Start-up, joining or creating the session, fork, and exit. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "preload/wrap/alloc.h"
#include "preload/wrap/alloc_got.h"
#include "preload/gpu/cupti.h"
#include "preload/common/debug.h"
#include "preload/wrap/early.h"
#include "preload/core/launch.h"
#include "preload/gpu/nvtx.h"
#include "preload/stacks/stack.h"
#include "preload/core/area.h"
#include "preload/core/state.h"
#include "preload/frameworks/frameworks.h"
#include "preload/frameworks/mxnet.h"
#include "preload/frameworks/torch_compiled.h"
#include "preload/core/windows.h"
#include "preload/trace/trace.h"
#include "preload/common/env.h"
#include "preload/core/env_set.h"
#include "preload/wrap/nonlocal.h"

struct prof_config prof_cfg;
struct prof_session_shm *prof_session;
struct prof_proc_shm *prof_proc;
char prof_sid[PROF_SID_LEN + 1];
int prof_on;
int prof_memory_on;
int prof_alloc_timed;
uint32_t prof_names[NAME_COUNT];

extern char **environ;

static const char *const predefined_names[NAME_COUNT] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "step",
};

/* The program's (and PROFILER_FOLLOW's) wish, and PROFILER_SCHEDULE's gate: recording
 * is on when both say so, so a prof_pause() in a scheduled step, or a prof_resume() in a
 * skipped one, is not undone or overridden by the other. */
int prof_user_on, prof_sched_on = 1;

void prof_set_recording(int user_on)
{
	prof_user_on = user_on;
	prof_on = user_on && prof_sched_on;
	if (user_on && prof_cfg.follow && prof_session)
		atomic_store_explicit(&prof_session->follow_started, 1, memory_order_relaxed);
	prof_update_flags();
}

void prof_update_flags(void)
{
	int on = prof_on && prof_proc;
	prof_window_note(on);
	/* the session's choice, so every process of it agrees with the capture's fact */
	__atomic_store_n(&prof_alloc_timed, prof_session && prof_session->alloc_timing,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&prof_memory_on, on && prof_cfg.profile_memory, __ATOMIC_RELAXED);
	__atomic_store_n(&prof_trace_on, on && prof_cfg.profile_api && prof_trace_enabled(),
			 __ATOMIC_RELAXED);
}

static int prof_collector_alive_in(struct prof_session_shm *s)
{
	return prof_collector_running(s); /* pid and start time */
}

int prof_collector_alive(void)
{
	return prof_session && prof_collector_alive_in(prof_session);
}

static void warn_line(const char *line)
{
	prof_warn("%s", line);
}

static void ignore_line(const char *line)
{
	(void)line;
}

static int make_process_segment(void)
{
	char name[160];
	struct prof_proc_shm *p = prof_proc_create(prof_sid, prof_session->ring_bytes,
						   prof_proc_slots(prof_session->ring_bytes), name,
						   sizeof name);
	if (!p) {
		prof_warn("cannot create the ring segment in /dev/shm: %s; not profiling this "
			  "process", strerror(errno));
		return -1;
	}
	/* its areas and indexes ready before another thread can see it */
	prof_area_attach(p, name);
	prof_strings_reset();
	prof_stack_reset();
	__atomic_store_n(&prof_proc, p, __ATOMIC_RELEASE);
	prof_intern("<unnamed>"); /* id 0: what a name that did not fit falls back to */
	for (int i = 0; i < NAME_COUNT; i++)
		prof_names[i] = prof_intern(predefined_names[i]);
	return 0;
}

static struct prof_session_shm *join_session(void)
{
	const char *sid = prof_getenv("PROFILER_SESSION");
	struct prof_session_shm *s = sid ? prof_session_open(sid) : 0;
	if (!s)
		return 0;
	pid_t c = (pid_t)atomic_load(&s->collector_pid);
	if (atomic_load(&s->state) != SESSION_RUNNING || c <= 0 ||
	    (kill(c, 0) && errno != EPERM)) {
		munmap(s, sizeof *s);
		return 0;
	}
	strcpy(prof_sid, sid);
	return s;
}

static struct prof_session_shm *create_session(void)
{
	char collector[PROF_PATH_MAX];
	if (prof_find_collector(collector, sizeof collector)) {
		prof_warn("cannot find the collector 'prof' next to libprof.so or in ../bin "
			  "(set PROFILER_COLLECTOR); not profiling");
		return 0;
	}
	prof_new_sid(prof_sid);
	struct prof_session_shm *s = prof_session_create(prof_sid);
	if (!s) {
		prof_warn("cannot create the session in /dev/shm: %s; not profiling",
			  strerror(errno));
		return 0;
	}
	char err[512];
	int bad_output = prof_session_configure(s, &prof_cfg, getpid(), err, sizeof err);
	s->root_pid = (uint32_t)getpid(); /* it waits for the outputs at its exit */
	if (bad_output)
		prof_warn("%s; not profiling", err);
	if (bad_output ||
	    prof_spawn_collector(collector, prof_sid, &s->collector_pid)) {
		if (!bad_output)
			prof_warn("cannot start the collector %s; not profiling", collector);
		prof_session_unlink(prof_sid);
		munmap(s, sizeof *s);
		return 0;
	}
	prof_setenv("PROFILER_SESSION", prof_sid, 1);
	/* Events before the collector runs can only wait in the rings: a program that starts
	 * with a burst would overflow them. The few milliseconds the collector takes to
	 * start are spent here instead, once. */
	for (int waited = 0; !atomic_load(&s->collector_ready) && waited < 2000; waited += 10) {
		if (waited >= 100 && !prof_collector_alive_in(s))
			break;
		prof_futex_wait(&s->collector_ready, 0, 10);
	}
	if (atomic_load(&s->state) == SESSION_FAILED) {
		/* the collector said why on stderr */
		prof_unsetenv("PROFILER_SESSION");
		prof_session_unlink(prof_sid);
		munmap(s, sizeof *s);
		return 0;
	}
	return s;
}

static int prof_start_session(int may_create);

int prof_start(void)
{
	return prof_start_session(1);
}

/* may_create: 0 when the process only follows a session it inherited (no autostart). */
static int prof_start_session(int may_create)
{
	struct prof_thread *t = &prof_thr;
	if (prof_proc) {
		prof_set_recording(1);
		return 0;
	}
	t->busy++;
	int rc = -1;
	prof_session = join_session();
	if (!prof_session && may_create)
		prof_session = create_session();
	if (prof_session) {
		prof_clock_use((enum prof_clock_kind)prof_session->clock_kind);
		/* an exec'd or spawned image the session counted as pending: settled even
		 * when its segment cannot be made, or the session would wait for it */
		int spawned = prof_getenv("PROFILER_SPAWNED") != 0;
		if (spawned)
			prof_unsetenv("PROFILER_SPAWNED");
		int made = make_process_segment() == 0;
		if (spawned)
			atomic_fetch_add(&prof_session->forks_registered, 1);
		if (made) {
			prof_user_on = 1;
			rc = 0;
			/* the driver's cuInit then hands CUPTI to libprof */
			prof_cupti_setup();
			/* what prof_set_config("trace") set, else PROFILER_TRACE as
			 * environ holds it now (the program may have set it since load;
			 * getenv may be the program's own) */
			const char *trace = prof_trace_from_api ? prof_cfg.trace
								: prof_trace_env();
			prof_trace_configure(trace ? trace : "", prof_cfg.framework,
					     prof_cfg.follow);
			/* follow: nothing is recorded until the framework's profiler starts */
			if (prof_cfg.follow)
				prof_user_on = 0;
			prof_schedule_start();
			prof_on = prof_user_on && prof_sched_on;
			prof_trace_patch_loaded();
		}
	}
	prof_update_flags();
	t->busy--;
	return rc;
}

void prof_after_fork_child(void)
{
	struct prof_thread *t = &prof_thr;
	struct prof_proc_shm *parent = prof_proc;
	if (!parent)
		return;
	int saved = errno; /* fork() returned 0: the child's errno is the parent's */
	t->busy++;
	prof_trace_after_fork_child();
	prof_alloc_got_after_fork();
	/* the forking thread is the only one here; its ring belongs to the parent */
	t->w.slot = 0;
	t->no_slot = 0;
	t->lost_entry = 0;
	t->given_name = 0; /* an id in the parent's string area */
	char name[160];
	/* after setuid() the collector could not open a segment made now (see process.c) */
	int same_user = prof_session_user();
	/* what the parent's areas held at the fork, read through its chunks (still mapped) */
	uint64_t strings_end = atomic_load_explicit(&parent->strings_used, memory_order_acquire);
	uint64_t stacks_end = prof_stack_complete_end(parent);
	struct prof_proc_shm *child = same_user ? prof_proc_create(prof_sid,
						 prof_session->ring_bytes,
						 prof_proc_slots(prof_session->ring_bytes), name,
						 sizeof name) : 0;
	/* no segment of the parent's is used here from now on (a signal handler included) */
	__atomic_store_n(&prof_proc, 0, __ATOMIC_RELEASE);
	if (child) {
		/* ids stay the parent's: a copy that did not fit (a full /dev/shm) leaves the
		 * names and stacks beyond it unknown to the reader, which says so */
		if (prof_area_inherit(parent, child, name, strings_end, stacks_end))
			prof_warn("forked child %d: /dev/shm cannot hold a copy of its parent's "
				  "names and stacks; some may be missing", (int)getpid());
		prof_strings_inherit(parent, child, strings_end);
		/* its frameworks were found (and patched) in the parent */
		child->frameworks = atomic_load(&parent->frameworks);
		prof_stack_inherit(child, stacks_end);
		__atomic_store_n(&prof_proc, child, __ATOMIC_RELEASE);
	} else if (!same_user) {
		if (!prof_session->quiet)
			prof_warn("not profiling forked child %d: its user id is not the session's "
				  "(setuid)", (int)getpid());
		prof_user_on = prof_on = 0;
	} else {
		prof_warn("cannot create the ring segment of forked child %d: %s; not profiling it",
			  (int)getpid(), strerror(errno));
		prof_user_on = prof_on = 0;
	}
	if (!child)
		prof_area_detach(); /* the parent's chunks are not this process's to keep */
	/* PROFILER_SCHEDULE: the child counts its own steps from 0, as an exec'd one does */
	prof_schedule_after_fork();
	/* settled either way: the session must not wait for a segment that will not come */
	if (t->counted_fork)
		atomic_fetch_add(&prof_session->forks_registered, 1);
	t->counted_fork = 0;
	munmap(parent, parent->segment_size);
	prof_update_flags();
	t->busy--;
	errno = saved;
}

static void wait_for_outputs(void)
{
	struct prof_session_shm *s = prof_session;
	uint32_t st;
	while (((st = atomic_load(&s->state)) == SESSION_RUNNING || st == SESSION_CLOSING) &&
	       !atomic_load(&s->root_release)) {
		if (!prof_collector_alive()) {
			/* finished between the two looks: it ends the session before it exits */
			st = atomic_load(&s->state);
			if (st != SESSION_RUNNING && st != SESSION_CLOSING)
				return;
			prof_warn("the collector (pid %u) is gone; outputs may be missing",
				  atomic_load(&s->collector_pid));
			return;
		}
		prof_futex_wait(&s->state, st, 200);
	}
}

/* The settings frameworks read from the environment when Python imports them (MXNet's
 * bulk execution, inductor's kernel profile; a value already there wins): set only in a
 * Python interpreter (by its name: python, python3.11, ...; a lookup of its symbols would
 * leave dlerror's text in the program's heap), so no other program's environment, nor
 * its heap, holds anything libprof did not need. */
static void framework_environment(void)
{
	int torch = !strcmp(prof_cfg.framework, "detect") ||
		    (prof_framework_presets(prof_cfg.framework) & PROF_FW_TORCH);
	if ((prof_cfg.mxnet_bulk && !(prof_cfg.inductor_kernels && torch)) ||
	    strncmp(program_invocation_short_name, "python", 6))
		return;
	if (!prof_cfg.mxnet_bulk)
		prof_mxnet_bulk_off();
	if (prof_cfg.inductor_kernels && torch)
		prof_torch_inductor_kernel_names();
}

__attribute__((constructor(101))) static void prof_init(void)
{
	struct prof_thread *t = &prof_thr;
	int saved = errno; /* zero at main's start, as C promises, whatever failed here */
	t->busy++;
	prof_debug_init(environ);
	prof_alloc_resolve();
	prof_nonlocal_setup();
	prof_config_defaults(&prof_cfg);
	/* settings problems are reported once, by the process that starts the session */
	prof_config_from_env(&prof_cfg, environ,
			     prof_getenv("PROFILER_SESSION") ? ignore_line : warn_line);
	pthread_atfork(0, 0, prof_after_fork_child);
	prof_spawn_env_save(environ);
	framework_environment();
	prof_stack_setup();
	t->busy--;
	/* A child of a profiled process follows its session even without autostart, and
	 * never starts one of its own: a session that is over (or whose collector is gone)
	 * leaves it idle, so it cannot overwrite the session's outputs. */
	if (prof_getenv("PROFILER_SESSION"))
		prof_start_session(0);
	else if (prof_cfg.autostart)
		prof_start_session(1);
	/* what other libraries' constructors allocated before this one ran */
	prof_early_flush(t, prof_memory_on);
	prof_alloc_got_refresh(0);
	/* every NVTX instance in the process then finds libprof */
	if (prof_proc)
		prof_nvtx_setup();
	errno = saved;
}

/* The end of this process as the profiler sees it: recording off, the segment marked
 * exited, and the session's root waits for the outputs. From the destructor (exit), or
 * from _exit in the root (dash and busybox sh end with _exit, Python's os._exit too,
 * so their destructors never run): there, stdio is not flushed (_exit does not; a
 * signal handler may hold its lock). Once per process. */
void prof_note_cpu_time(void)
{
	uint64_t now = prof_cpu_ns();
	/* never 0 here: the collector takes a root's EXITED mark without it for a stray
	 * write (liveness.c) */
	if (prof_proc)
		atomic_store_explicit(&prof_proc->cpu_ns,
				      now > prof_proc->cpu_start_ns ? now - prof_proc->cpu_start_ns
								    : 1,
				      memory_order_relaxed);
}

void prof_process_end(int from_exit)
{
	static _Atomic int ended;
	struct prof_thread *t = &prof_thr;
	if (!prof_proc || atomic_exchange(&ended, 1))
		return;
	t->busy++;
	prof_user_on = prof_on = 0;
	prof_sched.set = 0; /* a step after this does not turn recording back on */
	prof_update_flags();
	prof_note_cpu_time();
	atomic_store_explicit(&prof_proc->state, PROC_EXITED, memory_order_release);
	prof_report_undelivered();
	prof_stack_say_counts();
	if (prof_session && (pid_t)prof_session->root_pid == getpid()) {
		/* the program's own output first, then the summary the collector prints */
		if (from_exit)
			fflush(0);
		wait_for_outputs();
	}
	t->busy--;
}

__attribute__((destructor(101))) static void prof_fini(void)
{
	prof_process_end(1);
}
