/* Is the collector still there? A writer blocked on a full ring (PROFILER_BLOCK) must
 * not wait on a dead or stopped collector, and events that never reached it must be
 * counted somewhere: with no collector, on the program's stderr at exit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "preload/common/session.h"
#include "preload/core/state.h"
#include "preload/wrap/early.h"

#define SILENT_CHECK_NS 2000000ull      /* heartbeat still for 2 ms: look at the collector */
#define STOPPED_GIVE_UP_NS 200000000ull /* stopped (SIGSTOP) that long: stop blocking */

static int gone;          /* the collector died: no writer blocks again */
static int warned_gone, warned_stopped;
static uint64_t seen_beat, seen_at, checked_at, given_up_beat = ~0ull;

static int collector_stalled(void);

/* The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z'...), 0 when unreadable;
 * *ticks: its start time (field 22), 0 when unreadable. */
static char proc_state_at(pid_t pid, uint64_t *ticks)
{
	char path[64], st = 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	*ticks = prof_proc_stat(path, &st);
	return *ticks ? st : 0;
}

/* The collector's state as proc_state_at, where a process with its pid but another
 * start time (the pid reused after the collector died) reads as gone ('X'). */
static char collector_state(struct prof_session_shm *s, pid_t pid)
{
	uint64_t want = atomic_load(&s->collector_start_ticks), ticks;
	char st = proc_state_at(pid, &ticks);
	return st && want && ticks && ticks != want ? 'X' : st;
}

/* st: proc_state(pid). A zombie answers kill(): an unreaped collector is gone too. */
static int running(pid_t pid, char st)
{
	if (st)
		return st != 'Z' && st != 'X';
	/* unreadable (gone, or hidden: hidepid, no /proc): kill() decides */
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int prof_pid_running(pid_t pid)
{
	uint64_t ticks;
	return pid > 0 && running(pid, proc_state_at(pid, &ticks));
}

int prof_collector_running(struct prof_session_shm *s)
{
	int saved = errno; /* asked inside wrappers too */
	pid_t pid = (pid_t)atomic_load(&s->collector_pid);
	int alive = pid > 0 && running(pid, collector_state(s, pid));
	errno = saved;
	return alive;
}

static void declare_gone(void)
{
	__atomic_store_n(&gone, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&warned_gone, 1, __ATOMIC_RELAXED))
		prof_warn("the collector (pid %u) is gone: PROFILER_BLOCK no longer waits, events "
			  "are dropped and counted (see the count at exit)",
			  atomic_load(&prof_session->collector_pid));
}

/* Called by a writer blocked on a full ring between yields: non-zero to drop the event.
 * The statics are shared by the blocked threads; a race only delays a decision by one
 * call. */
int prof_collector_stalled(void)
{
	int saved = errno; /* inside malloc/free: a successful call leaves errno alone */
	int stalled = collector_stalled();
	errno = saved;
	return stalled;
}

static int collector_stalled(void)
{
	if (__atomic_load_n(&gone, __ATOMIC_RELAXED))
		return 1;
	if (!prof_session)
		return 1;
	uint64_t beat = atomic_load_explicit(&prof_session->heartbeat, memory_order_relaxed);
	uint64_t now = prof_mono_ns();
	if (beat != seen_beat || !seen_at) {
		seen_beat = beat;
		seen_at = now;
		return 0;
	}
	if (beat == given_up_beat)
		return 1; /* still stopped: drop at once until it drains again */
	if (now - seen_at < SILENT_CHECK_NS || now - checked_at < SILENT_CHECK_NS)
		return 0;
	/* silent: dead, stopped, or only busy (a busy one is waited for) */
	checked_at = now;
	pid_t pid = (pid_t)atomic_load(&prof_session->collector_pid);
	char st = pid > 0 ? collector_state(prof_session, pid) : 0;
	if (!running(pid, st)) {
		declare_gone();
		return 1;
	}
	if ((st == 'T' || st == 't') && now - seen_at >= STOPPED_GIVE_UP_NS) {
		given_up_beat = beat;
		if (!__atomic_exchange_n(&warned_stopped, 1, __ATOMIC_RELAXED))
			prof_warn("the collector (pid %d) is stopped: PROFILER_BLOCK drops and "
				  "counts events until it drains again", (int)pid);
		return 1;
	}
	return 0;
}

/* At exit, with the collector gone before the session ended: what this process wrote
 * or dropped that no collector will ever report. */
void prof_report_undelivered(void)
{
	struct prof_proc_shm *p = prof_proc;
	if (!p || !prof_session)
		return;
	uint32_t st = atomic_load(&prof_session->state);
	if (st == SESSION_DONE ||
	    (!__atomic_load_n(&gone, __ATOMIC_RELAXED) &&
	     prof_collector_running(prof_session)))
		return;
	/* It may have finished between the two looks (this process was its last: it can
	 * drain, write and exit meanwhile); it marks the session done before it exits. */
	if (atomic_load(&prof_session->state) == SESSION_DONE)
		return;
	uint64_t dropped = atomic_load(&p->lost_no_slot), undrained = 0, drained = 0;
	for (unsigned i = 0; i < p->nslots; i++) {
		struct prof_slot *s = prof_proc_slot(p, i);
		if (atomic_load(&s->state) == SLOT_FREE)
			continue;
		dropped += atomic_load(&s->lost_pending);
		undrained += atomic_load(&s->head) - atomic_load(&s->tail);
		drained += atomic_load(&s->tail); /* a live ring's: a retired one's are reset */
	}
	/* the early buffer's flush gave up: its LOST record is one event in the ring */
	uint64_t early = __atomic_load_n(&prof_early_given_up, __ATOMIC_RELAXED);
	char why[96] = "";
	if (early)
		snprintf(why, sizeof why, " (%llu of them at start-up, before libprof started)",
			 (unsigned long long)early);
	/* what it drained went into a capture it never finished: said, so that every event
	 * of the live rings is counted somewhere (a third of a run was "nowhere") */
	prof_warn("the collector (pid %u) is gone: process %d dropped %llu events%s and wrote "
		  "%llu that were never drained; they are in no output. It had drained %llu "
		  "(its threads' live rings) into %s.prof, which it never finished",
		  atomic_load(&prof_session->collector_pid), (int)getpid(),
		  (unsigned long long)(dropped + early), why, (unsigned long long)undrained,
		  (unsigned long long)drained, prof_session->output_prefix);
}
