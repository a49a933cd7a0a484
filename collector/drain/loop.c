/* The collector's drain loop. One pass every millisecond (at once while rings fill up):
 * new process segments, new strings, each ring's new events, liveness, dump requests;
 * when every process is gone, the end of the session (session_end.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"
#include "collector/output/outfile.h"
#include "collector/shm/shm_guard.h"
#include "preload/common/debug.h"

#define LIVENESS_EVERY_NS 10000000ull /* 10 ms */
#define SCAN_EVERY_NS 2000000ull      /* 2 ms */
#define CLOCK_EVERY_NS 100000000ull   /* 100 ms */
#define TOUCH_EVERY_NS 5000000000ull  /* 5 s: the session segment's mtime, far below the
					 reclaim's min-age (60 s) */

/* CLOCK_MONOTONIC and CLOCK_REALTIME at one instant (the middle of two monotonic reads
 * around the realtime one): what lines up captures made on different hosts. */
static void clock_anchor(unsigned long long *mono, unsigned long long *real)
{
	struct timespec a, r, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &b);
	unsigned long long ta = (unsigned long long)a.tv_sec * 1000000000ull + (unsigned long long)a.tv_nsec;
	unsigned long long tb = (unsigned long long)b.tv_sec * 1000000000ull + (unsigned long long)b.tv_nsec;
	*mono = ta + (tb - ta) / 2;
	*real = (unsigned long long)r.tv_sec * 1000000000ull + (unsigned long long)r.tv_nsec;
}

static void write_session_header(struct collector *c)
{
	char text[PROF_CMDLINE_MAX + 1024], host[256] = "";
	unsigned long long mono, real;
	gethostname(host, sizeof host - 1);
	clock_anchor(&mono, &real);
	snprintf(text, sizeof text,
		 "command=%s\nhost=%s\nclock=%s\nstart_ns=%llu\nroot_pid=%u\nring_bytes=%llu\n"
		 "block=%u\nversion=1\nanchor_monotonic_ns=%llu\nanchor_realtime_ns=%llu\n",
		 c->s->command, host, c->clock.kind == PROF_CLOCK_TSC ? "tsc" : "monotonic",
		 (unsigned long long)c->clock.first_ns, c->s->root_pid,
		 (unsigned long long)c->s->ring_bytes, c->s->block, mono, real);
	if (c->s->schedule[0] && memchr(c->s->schedule, 0, sizeof c->s->schedule) &&
	    !strpbrk(c->s->schedule, "\n")) {
		size_t n = strlen(text);
		snprintf(text + n, sizeof text - n, "schedule=%s\n", c->s->schedule);
	}
	if (c->s->trace_alloc == 1) { /* what prof export does again by default */
		size_t n = strlen(text);
		snprintf(text + n, sizeof text - n, "trace_alloc=all\n");
	}
	{ /* captures without the fact timed every allocator call */
		size_t n = strlen(text);
		snprintf(text + n, sizeof text - n, "alloc_timing=%u\n", c->s->alloc_timing ? 1 : 0);
	}
	if (c->s->delay_ms || c->s->duration_ms) {
		size_t n = strlen(text);
		snprintf(text + n, sizeof text - n, "window_start_ns=%llu\nwindow_end_ns=%llu\n",
			 (unsigned long long)c->window_lo,
			 (unsigned long long)(c->window_hi == UINT64_MAX ? 0 : c->window_hi));
	}
	if (c->parts) {
		size_t n = strlen(text);
		const struct prof_session_shm *s = c->s;
		if (s->flight_ms || s->flight_bytes)
			snprintf(text + n, sizeof text - n, "flight_ns=%llu\nflight_bytes=%llu\n",
				 (unsigned long long)s->flight_ms * 1000000ull,
				 (unsigned long long)s->flight_bytes);
		else
			snprintf(text + n, sizeof text - n, "rotate_ns=%llu\nrotate_bytes=%llu\n",
				 (unsigned long long)s->rotate_ms * 1000000ull,
				 (unsigned long long)s->rotate_bytes);
	}
	/* the boot tells which captures share CLOCK_MONOTONIC (model_sources.c) */
	char boot[64] = "";
	FILE *bf = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (bf) {
		if (!fgets(boot, sizeof boot, bf))
			boot[0] = 0;
		fclose(bf);
	}
	boot[strcspn(boot, "\n")] = 0;
	if (boot[0]) {
		size_t n = strlen(text);
		snprintf(text + n, sizeof text - n, "boot_id=%s\n", boot);
	}
	put(c, CAP_SESSION, text, strlen(text), 0, 0);
	if (c->parts) {
		c->session_text = strdup(text); /* each later part repeats it */
		char part[96];
		snprintf(part, sizeof part, "part=1\nstart_ns=%llu\n",
			 (unsigned long long)c->part_start_ns);
		put(c, CAP_PART, part, strlen(part), 0, 0);
	}
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

volatile sig_atomic_t collector_dump_signalled;

static void on_dump_signal(int sig)
{
	(void)sig;
	collector_dump_signalled = 1;
}

void collector_catch_dump_signal(void)
{
	struct sigaction sa = {.sa_handler = on_dump_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	/* an autostarted collector has the program's signal mask */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void sleep_us(struct collector *c, long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, 0);
	c->pass_slept_ns += (uint64_t)us * 1000;
}

static uint64_t loop_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The wait since the last pass began (drain_internal.h: waited_max_ns). */
static void note_wait(struct collector *c, uint64_t now)
{
	uint64_t cpu = loop_cpu_ns();
	if (c->pass_start_ns && now > c->pass_start_ns && cpu >= c->pass_cpu_ns) {
		uint64_t used = cpu - c->pass_cpu_ns + c->pass_slept_ns, wall = now - c->pass_start_ns;
		uint64_t waited = wall > used ? wall - used : 0;
		if (waited > c->waited_max_ns)
			c->waited_max_ns = waited;
	}
	c->pass_start_ns = now;
	c->pass_cpu_ns = cpu;
	c->pass_slept_ns = 0;
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
	int parts = c->s->rotate_ms || c->s->rotate_bytes || c->s->flight_ms || c->s->flight_bytes;
	int fd = (parts ? outfile_claim_parts : outfile_claim)(
		c->s->output_prefix, sizeof c->s->output_prefix, (int)c->s->overwrite, err,
		sizeof err);
	snprintf(c->capture_path, sizeof c->capture_path, "%s.prof", c->s->output_prefix);
	collector_outputs_init((int)c->s->overwrite);
	/* the live outputs' child, forked while this process has one thread: before the
	 * writer's compressing threads, whose locks (an allocator's: ASan's hung the child)
	 * a fork would copy held; and before the program runs, so it holds nothing of it.
	 * Not for the flight recorder: its outputs leave out what it dropped. */
	int flight = c->s->flight_ms || c->s->flight_bytes;
	int live_fd = parts ? fd : fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (live_fd >= 0 && !flight &&
	    live_outputs_start(&c->live, live_fd, parts, c->capture_path, c->s->output_prefix,
			       c->s->max_json_events))
		prof_debug(PROF_DEBUG_DRAIN, "no live outputs (%s): made at the end",
			   strerror(errno));
	if (parts) {
		c->capture_fd = fd;
		if (fd >= 0 && parts_open_first(c, err, sizeof err)) {
			rmdir(c->capture_path); /* nothing of ours in it */
			c->w = NULL;
		}
	} else {
		c->capture_fd = live_fd;
		c->w = fd < 0 ? NULL
			      : cap_writer_fdopen(fd, c->capture_path, cap_writer_workers(), err,
						  sizeof err);
	}
	if (!c->w) {
		fprintf(stderr, "libprof: %s; not profiling\n", err);
		live_outputs_stop(&c->live);
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
	/* no window: everything, also what was recorded before the session's clock pair
	 * (allocations made before libprof's constructor) */
	c->window_lo = c->s->delay_ms || c->s->duration_ms
			       ? c->clock.first_ns + (uint64_t)c->s->delay_ms * 1000000
			       : 0;
	c->window_hi = c->s->duration_ms ? c->window_lo + (uint64_t)c->s->duration_ms * 1000000
					 : UINT64_MAX;
	if (!parts)
		c->fold = fold_live_new();
	write_session_header(c);
	collector_catch_dump_signal();
	atomic_store(&c->s->collector_ready, 1);
	prof_futex_wake(&c->s->collector_ready);

	for (;;) {
		uint64_t now = prof_mono_ns();
		note_wait(c, now);
		if (now - c->last_scan >= SCAN_EVERY_NS) {
			scan_segments(c);
			ring_pool_refill(c);
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
		/* PROFILER_BLOCK: the program waits rather than the end (the writers wait on
		 * full rings while the live outputs' child catches up) */
		int held = live_outputs_behind(&c->live, c->events, now,
					       c->s->block && c->w && !c->write_failed);
		/* each held pass: a part begun meanwhile has a writer of its own */
		if (c->w && (held || c->held) && cap_writer_hurry(c->w, held))
			write_failed(c);
		c->held = held;
		/* held, it compresses what the workers (idle-only, maybe starved) have not
		 * taken: the child reads nothing until it is written */
		uint64_t busy = held ? (uint64_t)cap_writer_help(c->w) : drain_all(c);
		if (session_lost(c))
			break;
		parts_rotate_if_due(c, now);
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
		if (c->live.pid && c->w)
			live_outputs_publish(&c->live, c->parts ? c->part : 0, cap_writer_bytes(c->w));
		if (session_lost(c))
			break;
		/* Rings a quarter full: at once. A sixteenth: soon, as a writer going flat out
		 * (~75 M events/s here) fills 4 MiB in ~1.2 ms, and a whole 1 ms sleep
		 * after a small pass let it overflow. Quiet: 1 ms. */
		if (busy < 4) {
			/* the writer's mappings made and unmapped here, not by its low-priority
			 * compressing threads (capture_write.c, SPARES_AHEAD) */
			if (c->w)
				cap_writer_tidy(c->w);
			sleep_us(c, busy ? 100 : 1000);
		}
	}
	for (struct proc_entry *p = c->procs; p; p = p->next)
		finish_process(c, p, child_status(c, p->pid));
	finish_dump(c);
	session_lost(c);
	return end_session(c);
}
