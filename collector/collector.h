/* The drain loop: finds the session's process segments, drains their rings into the raw
 * capture, notices exits, deaths and execs, answers dump requests, and at the end makes
 * the outputs. */
#ifndef PROF_COLLECTOR_COLLECTOR_H
#define PROF_COLLECTOR_COLLECTOR_H

#include <sys/types.h>

#include "session.h"

struct collector_options {
	const char *sid;
	struct prof_session_shm *session;
	pid_t child;      /* `prof record`: the command it started (reaped here), else 0 */
	int child_status; /* out: its wait status when child > 0 */
};

/* Runs until every process of the session is gone, then writes the outputs. Returns 0,
 * or 1 when the outputs could not be written (the reason is on stderr). */
int collector_run(struct collector_options *o);

/* Writes <prefix>.json and (with tables) <prefix>.txt from the capture; prints the
 * one-line summary unless quiet. Returns 0 or -1. */
int collector_make_outputs(const char *capture, const char *prefix, uint64_t max_json_events,
			   int tables, int quiet);

/* Writes the tables of capture to path (atomically). Returns 0 or -1. */
int collector_write_tables(const char *capture, const char *path);

#endif
