/* Outputs made by a forked child of the collector while it goes on draining. */
#ifndef PROF_COLLECTOR_DUMP_H
#define PROF_COLLECTOR_DUMP_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct dump_job {
	pid_t pid;         /* the child making outputs, 0 when none */
	uint32_t request;  /* the prof_dump request it answers, 0 for a continuous dump */
	char snapshot[PATH_MAX + 64];
};

struct dump_request {
	uint32_t request;
	const char *tables_path; /* prof_dumps: only the tables, to this file */
	const char *prefix;      /* otherwise the outputs under this prefix */
	uint64_t max_json_events;
	int tables;
	int say;                 /* the summary line naming the files (a signalled dump) */
};

/* Starts a job from the complete frames of capture (flushed by the caller): a capture
 * in one file is read through fd (the file itself, whatever its name is now; -1 for a
 * capture in parts). Returns 0, or -1 when one is already running or it could not
 * start. */
int dump_start(struct dump_job *job, const char *capture, int fd, const struct dump_request *r);
/* 1 when the job ended (its result in *status: 0 or -1), 0 while it runs or when there
 * is none. wait: block until it ends. */
int dump_poll(struct dump_job *job, int wait, int *status);

#endif
