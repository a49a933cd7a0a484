/* Liveness: which processes of the session are gone (marked EXITED, or dead by
 * /proc/PID/stat: a zombie is gone, a reused pid is not the same process), `prof
 * record`'s command reaped, the root released while its children still run, and whether
 * the session is over (counted children that have not joined yet are waited for while
 * they can still join, up to a grace). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"

int32_t child_status(struct collector *c, pid_t pid)
{
	if (c->o->child != pid || !c->o->child_reaped || c->o->child_status == -1)
		return INT32_MIN;
	int st = c->o->child_status;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : INT32_MIN;
}

/* A process marks its segment EXITED in its last destructor and then ends: the mark
 * alone finished it, so a process that went on recording after its mark was written
 * (the word overwritten: a stray write, or a program's own) lost what followed without a
 * word (69% of one). A process other than the session's root is drained on until it is
 * gone, for EXITED_GRACE_NS at most; still running then, it is finished and named. The
 * root waits at its exit for the outputs, so it cannot end first: its mark is believed
 * when its end wrote its CPU time before it. */
#define EXITED_GRACE_NS 1000000000ull

static int exited_for_good(struct collector *c, struct proc_entry *p)
{
	uint64_t now = prof_mono_ns();
	if ((pid_t)c->s->root_pid == p->pid) {
		/* The root's end stores its CPU time, then the mark, and waits for the
		 * outputs: a mark without that time was not written by its end (a stray
		 * write), and what the root goes on recording would be lost unsaid. Drained
		 * on until its end writes the time, or until it is gone. */
		if (atomic_load_explicit(&p->shm->cpu_ns, memory_order_acquire))
			return 1;
		if (!p->exited_since) {
			p->exited_since = now;
			fprintf(stderr, "libprof: process %d's shared memory says it has ended "
					"while it runs on (a stray write into it); drained on until "
					"it ends\n", (int)p->pid);
		}
		return 0;
	}
	if (!p->exited_since)
		p->exited_since = now;
	if (now - p->exited_since < EXITED_GRACE_NS)
		return 0;
	fprintf(stderr, "libprof: process %d still runs %.1f s after its segment said it had "
			"ended; what it records from now on is not kept\n", (int)p->pid,
		(double)(now - p->exited_since) / 1e9);
	return 1;
}

void check_liveness(struct collector *c)
{
	int st;
	uint32_t reaped;
	if (c->o->child > 0 && !c->o->child_reaped && c->o->child_elsewhere) {
		if ((reaped = atomic_load(&c->s->record_exit)) & PROF_RECORD_EXITED) {
			c->o->child_status = (int)(reaped & 0xffff);
			c->o->child_reaped = 1;
		} else if (prof_proc_start_ticks(c->o->child)) {
			c->child_gone_since = 0;
		} else if (!c->child_gone_since) {
			c->child_gone_since = prof_mono_ns(); /* prof record may be storing it */
		} else if (prof_mono_ns() - c->child_gone_since > 200000000ull) {
			/* reaped by another than prof record (it was killed): status unknown */
			c->o->child_status = -1;
			c->o->child_reaped = 1;
		}
	} else if (c->o->child > 0 && !c->o->child_reaped &&
		   waitpid(c->o->child, &st, WNOHANG) == c->o->child) {
		c->o->child_status = st;
		c->o->child_reaped = 1;
	}
	for (struct proc_entry *p = c->procs; p; p = p->next) {
		if (p->finished)
			continue;
		uint32_t state = atomic_load_explicit(&p->shm->state, memory_order_acquire);
		int alive = prof_proc_alive(p->pid, p->shm->proc_start_ticks);
		if (state == PROC_EXITED && alive && !exited_for_good(c, p))
			continue; /* drained on until it is gone */
		if (state == PROC_EXITED || !alive)
			finish_process(c, p, child_status(c, p->pid));
	}
}

static int root_alive(struct collector *c)
{
	if (c->o->child > 0)
		return !c->o->child_reaped;
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

void release_root_if_alone(struct collector *c)
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

int session_over(struct collector *c, uint64_t now)
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
