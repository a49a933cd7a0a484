/* The collector (collector/drain/, one file per job: drain_internal.h): finds the
 * session's process segments, drains their rings into the raw capture, notices exits,
 * deaths and execs, answers dump requests, and at the end makes the outputs. */
#ifndef PROF_COLLECTOR_COLLECTOR_H
#define PROF_COLLECTOR_COLLECTOR_H

#include <stdint.h>
#include <sys/types.h>

#include "collector/drain/live.h"
#include "preload/common/session.h"

struct collector_options {
	const char *sid;
	struct prof_session_shm *session;
	pid_t child;      /* `prof record`: the command it started, else 0 */
	int child_elsewhere; /* the command is reaped by another process, which puts its
				status in the session (record_exit), not here */
	int child_reaped; /* out: the command was reaped, */
	int child_status; /* out: with this wait status; -1: not known (gone unseen) */
};

/* Runs until every process of the session is gone, then writes the outputs. Returns 0,
 * or 1 when the outputs could not be written (the reason is on stderr). */
int collector_run(struct collector_options *o);
/* SIGUSR2 (prof dump) asks for a dump from now on: called before the collector's pid is
 * published, so the signal never finds it with the default action (termination). A
 * caught signal's handler is reset by exec: a command forked after keeps its own. */
void collector_catch_dump_signal(void);

struct output_request {
	uint64_t max_json_events;
	int tables;    /* write <prefix>.txt too */
	int quiet;     /* no summary line */
	int write_failed; /* the capture lost its end: compare with drained */
	int flight;       /* a flight recorder's: what was drained is not all kept */
	uint64_t drained; /* events the collector handed to the capture */
	uint32_t frameworks; /* PROF_FW_* found loaded: named on the summary line */
	uint32_t delay_ms, duration_ms; /* the window kept (0, 0: all), said on a line */
	int follow_idle; /* PROFILER_FOLLOW, and no framework's profiler ever started */
	uint64_t ring_bytes;       /* per thread, for the line beside lost events */
	uint64_t drain_waited_max_ns; /* the drain loop's longest wait (drain_internal.h) */
	uint64_t left_out;   /* events outside it */
	const char *shown_capture; /* the capture's name on the summary line (a dump reads a
				      snapshot of it); NULL: the capture read */
	struct live_outputs *live; /* the outputs made as the capture was written (live.h):
				      used where it made them, else made here */
	const struct live_made *made; /* the same, already taken (a dump's, live.c) */
};

/* Maps the record of the outputs this session made, shared with the dump children, and
 * sets whether outputs replace what is at their names (PROFILER_OVERWRITE): call before
 * any dump. */
void collector_outputs_init(int overwrite);

/* Writes <prefix>.json and (with tables) <prefix>.txt from the capture, created safely
 * (collector/output/outfile.h): a file this session did not make is never replaced (unless
 * the session overwrites); the name then gets a suffix, -2, -3, ... Prints the one-line summary
 * naming the files written unless quiet. Returns 0 or -1. */
int collector_make_outputs(const char *capture, const char *prefix,
			   const struct output_request *q);

/* The tables' file this session put in place last (PREFIX.txt or the name it got), or
 * NULL when it made none. */
const char *collector_outputs_txt(void);

/* Writes the tables of capture to path (atomically, replacing a regular file there but
 * nothing else). Returns 0 or -1. */
int collector_write_tables(const char *capture, const char *path);

#endif
