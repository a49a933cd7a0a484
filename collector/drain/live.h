/* The live outputs: a child of the collector reads the capture as it is written
 * (formats/model/model_live.h) and keeps the tables' aggregates and the trace's plan and
 * spool current (formats/export/chrome_live.h), so <prefix>.txt and <prefix>.json are
 * ready moments after the program ends instead of after reading the whole capture three
 * times. The collector tells it how far the capture's complete frames go, and when it is
 * finished; the child writes both into temporary files beside them, which the end puts
 * in place. What it cannot make (a launcher decided before its fold was known, out of
 * memory, killed, settings changed during the run), the end makes from the capture as
 * before. */
#ifndef PROF_COLLECTOR_DRAIN_LIVE_H
#define PROF_COLLECTOR_DRAIN_LIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "formats/model/outputs.h"

/* main's argv, so the child can say what it is: `prof tables` in ps and /proc, not a
 * second `prof collect` (tools and people count those). NULL: left as it is. */
extern char **collector_argv;

struct live_page;
struct live_outputs {
	pid_t pid; /* the child; 0: none */
	struct live_page *page;
	/* holding a blocking program for the child (live_outputs_behind) */
	int holding, gave_up, idle_later;
	int stays_idle; /* the end could not take it out of SCHED_IDLE (unprivileged) */
	uint64_t held_ns, held_since, held_until, check_at, check_ran, check_waited, check_read;
	uint64_t check_cpu;
	uint32_t holds;
};

/* What the child made: each file's temporary name, or "" (then made from the capture). */
struct live_made {
	char txt[4352], json[4352];
	int json_rc;                /* chrome_export_opts' result for the trace: 0 or 1 */
	struct output_summary sum;  /* the trace's summary */
};

/* Starts the child reading the capture open at fd (with parts: the directory of a
 * rotated capture, read part after part as they begin); path names it in messages;
 * prefix is where the outputs go, max_json_events the trace's cap. 0, or -1 (no live
 * outputs). */
int live_outputs_start(struct live_outputs *lo, int fd, int parts, const char *path,
		       const char *prefix, uint64_t max_json_events);
/* The capture's complete frames reach size bytes of part (0: a capture in one file). */
void live_outputs_publish(struct live_outputs *lo, uint32_t part, uint64_t size);
/* Whether the collector should leave the rings undrained for now (PROFILER_BLOCK: the
 * program's writers wait): the child is more than half a second of its own work behind
 * the drained events, so the end would wait that long for the outputs. Held until it is
 * back under a quarter second, for a second at most; never again once the child, held,
 * is starved or stopped (live.c says how that is told). drained: the events the
 * collector has packed; now: CLOCK_MONOTONIC ns; may_hold: 0 where the program must not
 * be held (no blocking writers, no capture being written): a hold ends. */
int live_outputs_behind(struct live_outputs *lo, uint64_t drained, uint64_t now, int may_hold);
/* The capture is finished: its last part (or its file) at size bytes. */
void live_outputs_finish(struct live_outputs *lo, uint32_t part, uint64_t size);
/* Waits for the child and says what it made (its reasons for what not on the drain
 * debug channel). A trace made for another cap than max_json_events is not used. */
void live_outputs_take(struct live_outputs *lo, uint64_t max_json_events, struct live_made *out);
/* A dump (prof_dump, prof_dumps, continuous_dump, `prof dump`) made from the child's
 * state instead of a read of the whole capture: what it has read so far, once that
 * reaches where the capture's complete frames went at the request, finished as if the
 * capture ended there and written by a fork of the child (so the reading goes on). */
struct live_dump_request {
	char tables_path[4352]; /* prof_dumps: only the tables, to this file; "" otherwise */
	int tables;             /* <prefix>.txt too */
	int say;                /* the summary line naming the files (a signalled dump) */
};
#define LIVE_DUMP_DECLINED (-2) /* the child could not serve it: made from the capture */
/* Asks for one when the capture's complete frames reach size bytes of part. 0, or -1
 * when the child cannot take it (none, finished, one already asked). */
int live_dump_start(struct live_outputs *lo, uint32_t part, uint64_t size,
		    const struct live_dump_request *r);
/* 1 once the dump asked is answered, its result in *status (0, -1: no outputs, or
 * LIVE_DUMP_DECLINED), the lines it would have printed printed; else 0. */
int live_dump_poll(struct live_outputs *lo, int *status);
/* Stops and reaps the child if it runs, removing what it made and nobody took. */
void live_outputs_stop(struct live_outputs *lo);

#endif
