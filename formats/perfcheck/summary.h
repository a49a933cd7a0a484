/* A compact summary of profiled runs, for baselines and `prof diff`: per run, the facts
 * that say where and how it ran, and one row per (category, name) with counts, times,
 * allocations and a quantile sketch of the per-call durations; per run a "program" row
 * (duration, allocations, peak live bytes) and, when the run had several process images,
 * one "process" row each. Written as JSON (docs/PERFCHECK.md), "libprof_summary": 1. */
#ifndef PROF_FORMATS_SUMMARY_H
#define PROF_FORMATS_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/util/sketch.h"

#define SUMMARY_VERSION 1

enum sum_kind {
	SUM_CALLS,    /* complete events: a call or a range */
	SUM_INSTANTS, /* marks and steps: a count only */
	SUM_PROGRAM,  /* the whole run: category "program", name "run" */
	SUM_PROCESS,  /* one process image: category "process", name "basename[ #k]" */
	SUM_NKINDS
};

struct sum_row {
	char *cat, *name;
	enum sum_kind kind;
	uint64_t count, total, self, min, max; /* calls; ns */
	/* Allocations (and their requested bytes) made by its calls, those of its nested
	 * calls included; for program and process rows, of the whole image(s). */
	uint64_t allocs, bytes;
	uint64_t peak; /* program and process rows: peak live heap bytes */
	uint64_t wall; /* program row: the run's duration in ns */
	struct sketch durs; /* calls: every call's duration */
};

struct sum_fact {
	char *key, *val;
};

struct sum_run {
	char *source; /* the capture or summary file it came from */
	struct sum_fact *facts; /* command, host, clock, ring_bytes, block, ...: strings */
	size_t nfacts;
	uint64_t start_ns, root_pid, duration, events, lost;
	int damaged;
	struct sum_row *rows; /* sorted by kind, category, name once complete */
	size_t nrows, rows_cap;
};

struct summary {
	struct sum_run *runs;
	size_t nruns, runs_cap;
	size_t duplicates; /* runs left out because the same run was already there */
	const char *tool;  /* the prof version, recorded in runs made from captures */
};

void summary_init(struct summary *s);
void summary_free(struct summary *s);

/* The value of a fact of a run, or NULL. */
const char *sum_fact(const struct sum_run *r, const char *key);
/* Sets a fact (replacing an earlier value). 0 or -1. */
int sum_set_fact(struct sum_run *r, const char *key, const char *val);
/* Appends an empty row to r (zeroed, min = UINT64_MAX); NULL when out of memory. */
struct sum_row *sum_add_row(struct sum_run *r, const char *cat, const char *name,
			    enum sum_kind kind);
/* Sorts the rows of r by kind, category and name. */
void sum_sort_rows(struct sum_run *r);
void sum_run_free(struct sum_run *r);
/* Moves *r into s (r is left empty), unless s already has the same run (same host,
 * start and root pid), which is then freed and counted in s->duplicates. 0 or -1. */
int summary_take_run(struct summary *s, struct sum_run *r);

const char *sum_kind_name(enum sum_kind k);

/* Runs from a raw capture, a summary file, or a directory holding several of either
 * (its *.prof files and the *.json files that are summaries; other files are left
 * alone), appended to s. Returns 0; 1 when a capture was damaged (what it held before the
 * damage is used; err names it); 2 when unusable (err says why; s may hold part). */
int summary_load(struct summary *s, const char *path, char *err, size_t errlen);

/* One run from a raw capture (summary_capture.c). Same return values. */
int summary_add_capture(struct summary *s, const char *path, char *err, size_t errlen);
/* prof diff --rank: the steps of a job's rank (the ranks' step boundaries, as prof
 * report's "Steps across ranks" finds them) as runs of cur, and those of base_rank, or
 * with base_rank -1 those of every other rank (at most 400 a side, spread evenly), as
 * runs of base: each step a run, so that the tests across runs compare the ranks. A call
 * belongs to the step it began in. Messages and the runs' sources name shown. 0, 1
 * (damaged: err says so) or 2 (err). */
int summary_add_rank_steps(struct summary *base, struct summary *cur, const char *path,
			   const char *shown, int32_t rank, int32_t base_rank, char *err,
			   size_t errlen);

/* The runs of a summary file (summary_json.c): 0, or 2 with err. */
int summary_read_json(struct summary *s, const char *path, char *err, size_t errlen);
/* Writes s as one JSON document, one row per line. 0, or -1 with errno. */
int summary_write_json(const struct summary *s, FILE *f);

#endif
