/* What the three table formats print: the model and its aggregates, with the rows of
 * each category already filtered, sorted and cut by the table options. */
#ifndef PROF_FORMATS_REPORT_H
#define PROF_FORMATS_REPORT_H

#include <stdio.h>

#include "formats/model/model.h"
#include "formats/model/outputs.h"
#include "formats/model/stats.h"

struct report_cat {
	uint32_t cat;      /* gid of its name */
	struct row **rows; /* sorted, at most --top */
	size_t nrows, all_rows;
	uint64_t total;    /* the category's time, for "% of cat": the sum of its rows'
			      totals, a call nested in one of its category counted once */
	uint64_t first_t;  /* its rows' earliest call: the order of the categories */
	int untimed;       /* the allocator's calls without durations (PROFILER_ALLOC_TIMING
			      off): counts only, rows by count */
};

struct report {
	struct model *m;
	struct stats *s;
	const struct table_options *opt;
	const struct model_fold *fold; /* what was folded away (all zero: nothing) */
	struct report_cat *cats;
	size_t ncats;
	uint64_t origin, duration, lost;
	const char *damage; /* NULL when the capture is whole */
	int show_memory, show_marks, show_counters, show_steps;
	int show_copies; /* GPU copies and sets: r->s->copies, sorted by total time */
	int show_messages; /* MPI calls' bytes: r->s->msgs, sorted by total time */
};

int table_text(const struct report *r, FILE *out);
int table_csv(const struct report *r, FILE *out);
int table_json(const struct report *r, FILE *out);

/* Row helpers shared by the formats. */
static inline uint64_t row_avg(const struct row *w)
{
	return w->count ? w->total / w->count : 0;
}
double row_percent(const struct report_cat *c, const struct row *w);
/* GB/s (10^9 bytes) of a GPU copy row; 0 when it took no time. */
static inline double copy_bandwidth(const struct copy_row *x)
{
	return x->total ? (double)x->bytes / (double)x->total : 0.0;
}
/* Whether image i had any allocator activity. */
int image_has_memory(const struct report *r, size_t i);

#endif
