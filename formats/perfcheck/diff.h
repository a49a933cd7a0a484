/* prof diff: two sets of runs (a baseline and the current one) compared name by name;
 * which changes are regressions, and why. The statistics are explained in
 * docs/PERFCHECK.md: time is judged on per-run values (after removing the change common
 * to every name of a run) by a rank test across runs, a quantile test across calls and
 * a threshold on the size of the change; counts, allocations and bytes are exact and
 * judged by the threshold alone. */
#ifndef PROF_FORMATS_DIFF_H
#define PROF_FORMATS_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/perfcheck/summary.h"

enum metric {
	M_MEDIAN, /* per call, from the sketch */
	M_P95,    /* per call: the tail */
	M_P99,
	M_MEAN,   /* per call: total / count */
	M_TOTAL,  /* per run */
	M_SELF,   /* per run */
	M_COMMON, /* the change every name of a run shares (program row; see diff.c) */
	M_WALL,   /* the run's duration (program row) */
	M_COUNT,  /* exact from here on */
	M_ALLOCS,
	M_BYTES,
	M_PEAK,
	M_NMETRICS
};
#define M_FIRST_EXACT M_COUNT
#define METRIC_BIT(m) (1u << (m))
#define METRICS_TIME (METRIC_BIT(M_MEDIAN) | METRIC_BIT(M_P95) | METRIC_BIT(M_P99) | \
		      METRIC_BIT(M_MEAN) | METRIC_BIT(M_TOTAL) | METRIC_BIT(M_SELF) | \
		      METRIC_BIT(M_COMMON) | METRIC_BIT(M_WALL))
#define METRICS_EXACT (METRIC_BIT(M_COUNT) | METRIC_BIT(M_ALLOCS) | METRIC_BIT(M_BYTES) | \
		       METRIC_BIT(M_PEAK))
/* Whole-program time (common, wall) is judged only when asked: on a shared machine its
 * swings pass any useful threshold (docs/PERFCHECK.md). */
#define METRICS_DEFAULT METRIC_BIT(M_MEDIAN)

/* Defaults: a time change must pass 5%; the run-level test's level; the call-level
 * test's level. */
#define DIFF_DEFAULT_TIME_PCT 5.0
#define DIFF_DEFAULT_ALPHA 0.05
#define DIFF_ALPHA_CALLS 0.001

static inline int metric_is_time(int m) { return m < M_FIRST_EXACT; }
const char *metric_name(int m);
/* A metric name or a group (time, exact, memory, all) as a bit set; 0 when unknown. */
unsigned metric_set(const char *name);

struct diff_rule {
	unsigned metrics;  /* bit set */
	char *pattern;     /* glob over "name" or "category=name"; NULL: every name */
	int relative;      /* value is a percentage */
	double value;      /* percent, or ns / calls / bytes */
};

struct diff_config {
	unsigned checked;     /* metrics judged for every name (--metric) */
	int metrics_given;
	struct diff_rule *rules; /* threshold lines in order: the last that matches wins */
	size_t nrules;
	char **ignore;        /* patterns of names left out */
	size_t nignore;
	char **anchor;        /* patterns of the names the common-mode change is taken from
			       * (none: every name) */
	size_t nanchor;
	int flag_new, flag_gone; /* a new or a vanished name is a regression */
	int no_drift;         /* judge names on their own change, common-mode included */
	int same_machine;     /* judge whole-program time even when the sides were not
			       * measured together */
	double alpha;         /* run-level significance */
	int has_global;       /* --threshold PCT */
	double global_pct;
};

void diff_config_init(struct diff_config *c);
void diff_config_free(struct diff_config *c);
/* The config file (diff_config.c). 0, or -1 with err ("FILE:LINE: problem"). */
int diff_config_read(struct diff_config *c, const char *path, char *err, size_t errlen);
/* "median,p95" (--metric). 0 or -1 with err. */
int diff_config_metrics(struct diff_config *c, const char *list, char *err, size_t errlen);
/* "PCT" (every metric) or "METRIC=VALUE" (--threshold). 0 or -1 with err. */
int diff_config_threshold(struct diff_config *c, const char *spec, char *err, size_t errlen);
/* Whether name matches a glob (as "name" or "category=name"). */
int diff_pattern_match(const char *pattern, const char *cat, const char *name);

enum diff_status {
	DS_NONE,        /* not judged */
	DS_UNCHANGED,
	DS_UNCONFIRMED, /* beyond the threshold, but not solid (noise, too few runs) */
	DS_IMPROVEMENT,
	DS_REGRESSION,
};

/* One metric of one name. */
struct diff_cell {
	int present;         /* the metric has values on both sides */
	int checked;
	int nb, nc;          /* runs with a value per side */
	double base, cur;    /* median over the side's runs (ns, calls, bytes) */
	double change;       /* relative; time: of the medians over runs, after the
			      * common-mode change; exact: NAN when base is 0 */
	double delta;        /* cur - base; time: base * change */
	double per_call;     /* allocs, bytes: change per call; NAN otherwise */
	double p_runs, p_calls; /* one-sided, in the change's direction; NAN when none */
	int relative;        /* the threshold's kind */
	double threshold;
	int varies;          /* exact: runs of a side disagree */
	enum diff_status status;
	char why[200];
};

enum diff_presence { DP_BOTH, DP_NEW, DP_GONE };

struct diff_name {
	enum sum_kind kind;
	const char *cat, *name;
	enum diff_presence presence;
	int in_base, in_cur;   /* runs holding it */
	double base_count, cur_count; /* median calls per run */
	long renamed;          /* gone: index of its likely new name; new: of its old; or -1 */
	struct diff_cell m[M_NMETRICS];
	enum diff_status status; /* the worst of its cells; DS_REGRESSION for a flagged new/gone */
};

struct diff_result {
	struct diff_name *names;
	size_t nnames;
	size_t nbase, ncur;        /* runs */
	/* The change every name of the current runs shares (per-call medians): removed
	 * before each name is judged, and judged itself as the program row's "common". */
	int drift_used;
	double common_change, common_p;
	/* Both sides ran on one host, interleaved in time: only then can a change of the
	 * whole program be told from a change of the machine. */
	int together;
	char **warnings;
	size_t nwarnings;
	size_t regressions, improvements, unconfirmed, unchanged; /* cells judged */
	size_t new_names, gone_names, ignored;
	int regression; /* the verdict: 1 when anything is a regression */
};

/* Compares; the result points into base and cur, which must outlive it. 0 or -1 (out of
 * memory). */
int diff_compare(const struct summary *base, const struct summary *cur,
		 const struct diff_config *cfg, struct diff_result *out);
void diff_result_free(struct diff_result *r);

/* Statistics (diff_stats.c). */
/* P(U >= observed) of the Mann-Whitney U of y over x (y larger), exact for small sides,
 * else the normal approximation; ties count one half. */
double mwu_p_greater(const double *x, int nx, const double *y, int ny);
/* The smallest p-value mwu_p_greater can give for these sizes. */
double mwu_p_min(int nx, int ny);
double median_of(double *v, int n); /* reorders v */

/* A bucket of a per-call distribution on a log scale, shifted by its run's common-mode
 * change, and the side it belongs to. */
struct call_bin {
	double v;      /* ln duration */
	double count;
	int side;      /* 0 base, 1 current */
};
/* One-sided p of "the current side's calls lie above the pooled q-quantile more often
 * than the base side's" (a two-proportion z test: Mood's median test for q = 0.5);
 * dir -1 asks the opposite. Reorders b. */
double quantile_test(struct call_bin *b, size_t n, double q, int dir);

enum diff_format { DIFF_TEXT, DIFF_MARKDOWN, DIFF_JSON, DIFF_JUNIT };

struct diff_labels {
	const char *base, *cur; /* what the user named each side */
};

/* Writes the report (diff_text.c: text and Markdown; diff_json.c: JSON and JUnit).
 * top > 0 keeps that many names in each list. 0, or -1 with errno. */
int diff_write(const struct diff_result *r, const struct diff_config *cfg,
	       const struct diff_labels *l, enum diff_format fmt, long top, FILE *f);
int diff_write_text(const struct diff_result *r, const struct diff_config *cfg,
		    const struct diff_labels *l, int markdown, long top, FILE *f);
int diff_write_json(const struct diff_result *r, const struct diff_config *cfg,
		    const struct diff_labels *l, long top, FILE *f);
int diff_write_junit(const struct diff_result *r, const struct diff_config *cfg,
		     const struct diff_labels *l, FILE *f);

/* Shared by the writers (diff_text.c). */
/* A value of a metric for people: "4.20us", "1,234", "12.0 MiB". */
void diff_fmt_value(char *out, size_t len, int metric, double v);
/* "+10.2%", "-3.0%", "new", "0" */
void diff_fmt_change(char *out, size_t len, const struct diff_cell *c);
/* "5%", "1us", "0" */
void diff_fmt_threshold(char *out, size_t len, int metric, const struct diff_cell *c);
const char *diff_status_name(enum diff_status s);
/* Names in report order: regressions, unconfirmed, improvements, then the rest, each by
 * the size of the change. Returns a malloc'd array of indexes (NULL when out of memory
 * or empty). */
size_t *diff_order(const struct diff_result *r);

#endif
