/* Making the user-facing outputs from a raw capture: the Chrome trace and the tables.
 * Used by the collector at session end, by `prof report` and `prof export`. */
#ifndef PROF_FORMATS_OUTPUTS_H
#define PROF_FORMATS_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum table_sort { SORT_TOTAL, SORT_SELF, SORT_COUNT, SORT_AVG, SORT_MAX, SORT_MEM, SORT_SELF_MEM };
enum table_format { FORMAT_TEXT, FORMAT_CSV, FORMAT_JSON };

struct table_options {
	enum table_sort sort;
	long top;              /* rows per category; <= 0: all */
	const char *category;  /* only this category; NULL: all */
	enum table_format format;
	int all_processes;     /* show the launchers folded by default (model_fold) */
};

/* Default cap on the events kept in the Chrome trace JSON (see docs/FORMATS.md for the
 * rule that picks which ones). */
#define CHROME_DEFAULT_MAX_EVENTS 4000000ull

struct output_summary {
	uint64_t events;       /* events in the capture (kept in the tables) */
	uint64_t lost;         /* events dropped (full rings, and lost_startup) */
	uint64_t lost_startup; /* of lost: made before libprof's constructor ran */
	uint64_t names_lost, stacks_lost; /* events kept without their name, their stack */
	uint64_t processes;        /* the capture's pids */
	uint64_t processes_shown;  /* of them, the ones the outputs show (not folded) */
	uint64_t json_events;  /* events written to the Chrome trace */
	uint64_t json_dropped; /* events left out of the Chrome trace by the size rule */
	uint64_t json_alloc_hidden; /* allocator calls left to its counter tracks */
	int damaged;           /* the capture was damaged; what came before was used */
	char damage[256];      /* one line naming the damage, when damaged */
};

/* Writes the tables of capture_path to out. Returns 0, 1 when the capture is damaged
 * (the tables cover every complete frame; err says what is wrong), 2 when unusable. */
int tables_write(const char *capture_path, FILE *out, const struct table_options *opt,
		 struct output_summary *sum, char *err, size_t errlen);
/* The same; several captures read as one also give each one's clock refinement from
 * collectives (model_source.fix_ns; calloc'd, *nfix of them; NULL for one capture), for
 * a later read of them to start from (model.given_fix). */
int tables_write_fixes(const char *capture_path, FILE *out, const struct table_options *opt,
		       struct output_summary *sum, int64_t **fix, size_t *nfix, char *err,
		       size_t errlen);

struct model;
struct model_fold;
struct stats;
/* The same from a model read whole (model_read, or model_live) with its stats and fold
 * (fold.c; NULL: none); read_rc is the read's result, damage its line when damaged. */
int tables_write_model(struct model *m, struct stats *s, const struct model_fold *fold,
		       int read_rc, const char *damage, const char *path, FILE *out,
		       const struct table_options *opt, struct output_summary *sum, char *err,
		       size_t errlen);

/* Writes the Chrome trace of capture_path to json_path, keeping at most max_events
 * events (0: CHROME_DEFAULT_MAX_EVENTS). Same return values as tables_write. */
int chrome_export(const char *capture_path, const char *json_path, uint64_t max_events,
		  struct output_summary *sum, char *err, size_t errlen);
/* The same into out (closed here, whatever happens; NULL: json_path is opened), which
 * messages call json_path: the caller creates the file safely (collector/output/outfile.c). */
int chrome_export_to(const char *capture_path, const char *json_path, FILE *out,
		     uint64_t max_events, struct output_summary *sum, char *err, size_t errlen);
struct chrome_options {
	uint64_t max_events; /* 0: CHROME_DEFAULT_MAX_EVENTS */
	int all_processes;   /* launchers shown, not folded */
	/* allocator calls in the timeline (chrome_alloc.h): as the capture's session chose
	 * (its trace_alloc fact, PROFILER_TRACE_ALLOC), or the rule, or all */
	enum { CHROME_ALLOC_AS_CAPTURED, CHROME_ALLOC_AUTO, CHROME_ALLOC_ALL } alloc;
	int kineto; /* the PyTorch profiler's flavor (chrome_kineto.c): for TensorBoard, HTA */
};
/* chrome_export_to with options (chrome_export's: all zero but max_events). */
int chrome_export_opts(const char *capture_path, const char *json_path, FILE *out,
		       const struct chrome_options *o, struct output_summary *sum, char *err,
		       size_t errlen);

#endif
