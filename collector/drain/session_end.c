/* The end of a session, once every process is finished: segments that joined too late
 * removed, native frames named (while the binaries on disk are those that ran), the
 * capture closed, and the outputs made from it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"
#include "collector/output/capture_own.h"
#include "formats/symbols/symbolize.h"
#include "preload/common/debug.h"

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
	if (!sym) {
		prof_debug(PROF_DEBUG_DRAIN, "stack frames left unnamed: out of memory");
		return;
	}
	int ok = 1;
	for (struct proc_entry *p = c->procs; p && ok; p = p->next)
		ok = !stacks_add_frames(&p->stacks, parent_stacks(c, p), sym);
	if (ok && !symbolizer_resolve(sym))
		for (struct proc_entry *p = c->procs; p; p = p->next)
			stacks_put_names(&p->stacks, parent_stacks(c, p), p->pid, p->exec_seq, sym,
					 put_record, c);
	symbolizer_free(sym);
}

static void write_session_end(struct collector *c)
{
	char text[440];
	snprintf(text, sizeof text,
		 "end_ns=%llu\nevents=%llu\nlost=%llu\nprocesses=%llu\nleft_out=%llu\n"
		 "names_lost=%llu\nstacks_lost=%llu\ndrain_waited_max_ns=%llu\ncorrupt_lost=%llu\n",
		 (unsigned long long)prof_mono_ns(), (unsigned long long)c->events,
		 (unsigned long long)c->lost, (unsigned long long)c->processes,
		 (unsigned long long)c->left_out, (unsigned long long)c->names_lost,
		 (unsigned long long)c->stacks_lost, (unsigned long long)c->waited_max_ns,
		 (unsigned long long)c->corrupt_lost);
	put(c, CAP_SESSION_END, text, strlen(text), 0, 0);
}

/* The fold of the launchers, alone in the last frame (readers look there first). */
static void write_fold(struct collector *c)
{
	void *payload;
	size_t len;
	if (!c->fold || c->write_failed || cap_flush(c->w) ||
	    fold_live_payload(c->fold, &payload, &len))
		return;
	put(c, CAP_FOLD, payload, len, 0, 0);
	free(payload);
}

static double seconds(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* PROFILER_DEBUG=drain: the collector's CPU for the capture (drain loop and compressing
 * threads, before any output is made): what one core must give a program's events. */
static void say_capture_cost(const struct collector *c)
{
	struct rusage ru;
	struct timespec loop;
	if (getrusage(RUSAGE_SELF, &ru) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &loop))
		return;
	double all = seconds(ru.ru_utime) + seconds(ru.ru_stime);
	double drain = (double)loop.tv_sec + (double)loop.tv_nsec / 1e9;
	prof_debug(PROF_DEBUG_DRAIN, "captured %llu events with %.3f s of CPU (%.1f ns an event): "
		   "drain loop %.3f s, compressing and writing %.3f s",
		   (unsigned long long)c->events, all, c->events ? all * 1e9 / (double)c->events : 0,
		   drain, all - drain);
}

int end_session(struct collector *c)
{
	char err[PROF_PATH_MAX + 512];
	sweep_segments(c);
	name_frames(c);
	write_session_end(c);
	write_fold(c);
	int rc = 0;
	if (!c->write_failed && cap_flush(c->w))
		write_failed(c);
	if (c->w && cap_writer_close(c->w))
		rc = 1;
	say_capture_cost(c);
	/* the capture's end, for the live outputs: its file's size, or its last part's */
	struct stat st;
	char last[PROF_PATH_MAX + 80];
	if (c->parts)
		parts_current(c, last, sizeof last);
	if (c->capture_fd >= 0 && !(c->parts ? stat(last, &st) : fstat(c->capture_fd, &st)))
		live_outputs_finish(&c->live, c->parts ? c->part : 0, (uint64_t)st.st_size);
	else
		live_outputs_stop(&c->live);
	parts_finish(c);
	int ours = capture_is_ours(c->capture_fd, c->capture_path);
	char prefix[PROF_PATH_MAX];
	snprintf(prefix, sizeof prefix, "%s", c->s->output_prefix);
	if (!c->processes) {
		/* the command never ran (not found, or died before libprof started); a capture
		 * another session put at our name is not ours to remove */
		if (ours && c->parts)
			parts_remove(c);
		else if (ours)
			unlink(c->capture_path);
		if (!c->s->quiet)
			fprintf(stderr, "libprof: no process was profiled; no outputs written\n");
	} else if (!ours && c->parts) {
		fprintf(stderr, "libprof: %s.prof was moved or replaced while the session ran; its "
				"parts were not kept there, no outputs written\n", c->s->output_prefix);
		rc = 1;
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
					   .flight = c->flight_ns || c->flight_bytes,
					   .drained = c->events,
					   .frameworks = c->frameworks,
					   .delay_ms = c->s->delay_ms,
					   .duration_ms = c->s->duration_ms,
					   .ring_bytes = c->s->ring_bytes,
					   .drain_waited_max_ns = c->waited_max_ns,
					   .follow_idle = c->s->follow &&
							  !atomic_load(&c->s->follow_started),
					   .left_out = c->left_out,
					   .live = &c->live};
		if (collector_make_outputs(c->capture_path, prefix, &q))
			rc = 1;
	}
	if (c->capture_fd >= 0)
		close(c->capture_fd);
	free_collector(c);
	return rc;
}
