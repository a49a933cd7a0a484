/* diff_compare: names matched across the runs of both sides, the common-mode change of
 * each run removed, and every metric of every name judged (see diff.h and
 * docs/PERFCHECK.md). */
#define _GNU_SOURCE /* strdup, asprintf */
#include "formats/perfcheck/diff.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "preload/common/event.h"

/* A name counts in a run's common-mode estimate only with this many calls in it. */
#define DRIFT_MIN_CALLS 5
/* ... and the estimate needs this many names. */
#define DRIFT_MIN_NAMES 3
/* A run whose common-mode change is this far (5%) from its side's usual one ran in a
 * slow or fast spell of the machine, which does not slow every name alike: it is left
 * out of the names' time judgments, up to a third of its side (disturbed_side). */
#define DISTURBED_LN 0.04879
#define MIN_KEPT_RUNS 3
/* A name with fewer calls a run than this has no calls to be solid across. */
#define MIN_CALLS 5
/* A per-call change smaller than this is below what the clock resolves: two clock reads
 * cost about 23 ns (docs/ARCHITECTURE.md), and the shortest calls' durations take a few
 * values 10 ns apart. */
#define MIN_CALL_DELTA_NS 25.0
/* A gone and a new name with the same calls are taken for a rename when their per-call
 * medians are within this ratio. */
#define RENAME_RATIO 1.25

struct cmp {
	const struct summary *sb, *sc;
	const struct diff_config *cfg;
	struct diff_result *r;
	size_t nruns, nb;           /* runs 0..nb-1 are the base's, nb.. the current's */
	const struct sum_row **at;  /* [name * nruns + run]: its row in that run, or NULL */
	double *shift[M_NMETRICS];  /* per run: the common-mode change (ln) removed */
	unsigned char *disturbed;   /* per run: left out of the names' time judgments */
};

static const struct sum_run *run_of(const struct cmp *c, size_t i)
{
	return i < c->nb ? &c->sb->runs[i] : &c->sc->runs[i - c->nb];
}

static unsigned applicable(enum sum_kind k)
{
	switch (k) {
	case SUM_CALLS:
		return (METRICS_TIME & ~(METRIC_BIT(M_WALL) | METRIC_BIT(M_COMMON))) |
		       METRIC_BIT(M_COUNT) | METRIC_BIT(M_ALLOCS) | METRIC_BIT(M_BYTES);
	case SUM_INSTANTS:
		return METRIC_BIT(M_COUNT);
	case SUM_PROGRAM:
		return METRIC_BIT(M_COMMON) | METRIC_BIT(M_WALL) | METRIC_BIT(M_ALLOCS) |
		       METRIC_BIT(M_BYTES) | METRIC_BIT(M_PEAK);
	default:
		return METRIC_BIT(M_ALLOCS) | METRIC_BIT(M_BYTES) | METRIC_BIT(M_PEAK);
	}
}

/* A metric of a row in one run; 0 when it has none (time of a name with no calls). An
 * exact metric of a name absent from the run is 0. */
static int value(const struct sum_row *w, int m, double *out)
{
	if (!w) {
		*out = 0;
		return !metric_is_time(m);
	}
	switch (m) {
	case M_MEDIAN:
	case M_P95:
	case M_P99:
		if (!w->durs.count)
			return 0;
		*out = sketch_quantile(&w->durs, m == M_MEDIAN ? 0.5 : m == M_P95 ? 0.95 : 0.99);
		return 1;
	case M_MEAN:
		if (!w->count)
			return 0;
		*out = (double)w->total / (double)w->count;
		return 1;
	case M_TOTAL:
		*out = (double)w->total;
		return w->count > 0;
	case M_SELF:
		*out = (double)w->self;
		return w->count > 0;
	case M_WALL:
		*out = (double)w->wall;
		return 1;
	case M_COMMON: /* not a value of the row: see judge_common */
		return 0;
	case M_COUNT:
		*out = (double)w->count;
		return 1;
	case M_ALLOCS:
		*out = (double)w->allocs;
		return 1;
	case M_BYTES:
		*out = (double)w->bytes;
		return 1;
	default:
		*out = (double)w->peak;
		return 1;
	}
}

static double ln1(double v)
{
	return log(v > 1 ? v : 1);
}

static int warn(struct diff_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct diff_result *r, const char *fmt, ...)
{
	char **w = realloc(r->warnings, (r->nwarnings + 1) * sizeof(*w));
	va_list ap;
	int n;

	if (!w)
		return -1;
	r->warnings = w;
	va_start(ap, fmt);
	n = vasprintf(&w[r->nwarnings], fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	r->nwarnings++;
	return 0;
}

/* rows */

struct ref {
	const struct sum_row *w;
	size_t run;
};

static int by_row(const void *a, const void *b)
{
	const struct sum_row *x = ((const struct ref *)a)->w, *y = ((const struct ref *)b)->w;
	int c;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	c = strcmp(x->cat, y->cat);
	return c ? c : strcmp(x->name, y->name);
}

static int ignored(const struct diff_config *cfg, const struct sum_row *w)
{
	size_t i;

	if (w->kind == SUM_PROGRAM)
		return 0;
	for (i = 0; i < cfg->nignore; i++)
		if (diff_pattern_match(cfg->ignore[i], w->cat, w->name))
			return 1;
	return 0;
}

/* Every (kind, category, name) of every run, one diff_name each, and where it is. */
static int gather(struct cmp *c)
{
	struct diff_result *r = c->r;
	struct ref *refs;
	size_t n = 0, i, j, k;

	for (i = 0; i < c->nruns; i++)
		n += run_of(c, i)->nrows;
	refs = malloc((n ? n : 1) * sizeof(*refs));
	if (!refs)
		return -1;
	n = 0;
	for (i = 0; i < c->nruns; i++) {
		const struct sum_run *run = run_of(c, i);
		for (j = 0; j < run->nrows; j++) {
			refs[n].w = &run->rows[j];
			refs[n++].run = i;
		}
	}
	qsort(refs, n, sizeof(*refs), by_row);
	r->names = calloc(n ? n : 1, sizeof(*r->names));
	c->at = calloc((n ? n : 1) * c->nruns, sizeof(*c->at));
	if (!r->names || !c->at) {
		free(refs);
		return -1;
	}
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !by_row(&refs[i], &refs[j]); j++)
			;
		if (ignored(c->cfg, refs[i].w)) {
			r->ignored++;
			continue;
		}
		struct diff_name *d = &r->names[r->nnames];
		d->kind = refs[i].w->kind;
		d->cat = refs[i].w->cat;
		d->name = refs[i].w->name;
		d->renamed = -1;
		for (k = i; k < j; k++) {
			c->at[r->nnames * c->nruns + refs[k].run] = refs[k].w;
			if (refs[k].run < c->nb)
				d->in_base++;
			else
				d->in_cur++;
		}
		d->presence = !d->in_base ? DP_NEW : !d->in_cur ? DP_GONE : DP_BOTH;
		r->nnames++;
	}
	free(refs);
	return 0;
}

/* The change from x to y (ln values): the difference of their medians, so that the
 * change shown agrees with the medians shown. */
static double shift_of(const double *x, int nx, const double *y, int ny)
{
	double *v = malloc((size_t)(nx > ny ? nx : ny) * sizeof(*v)), mx, my;

	if (!v)
		return NAN;
	memcpy(v, x, (size_t)nx * sizeof(*v));
	mx = median_of(v, nx);
	memcpy(v, y, (size_t)ny * sizeof(*v));
	my = median_of(v, ny);
	free(v);
	return my - mx;
}

/* the common-mode change of each run */

static int anchored(const struct diff_config *cfg, const struct diff_name *d)
{
	size_t i;

	for (i = 0; i < cfg->nanchor; i++)
		if (diff_pattern_match(cfg->anchor[i], d->cat, d->name))
			return 1;
	return !cfg->nanchor;
}

/* A run whose allocator calls carry no durations (PROFILER_ALLOC_TIMING off) on either
 * side: the allocator's times are not compared, only its counts and bytes. */
static int alloc_untimed(const struct cmp *c)
{
	for (size_t i = 0; i < c->nruns; i++) {
		const char *v = sum_fact(run_of(c, i), "alloc_timing");
		if (v && !strcmp(v, "0"))
			return 1;
	}
	return 0;
}

static int estimate_shift(struct cmp *c, int m)
{
	int untimed = alloc_untimed(c);
	size_t nn = c->r->nnames, i, run;
	double *center = malloc((nn ? nn : 1) * sizeof(double));
	double *v = malloc((nn > c->nruns ? nn : c->nruns) * sizeof(double) + sizeof(double));
	int ok = 1;

	c->shift[m] = calloc(c->nruns, sizeof(double));
	if (!center || !v || !c->shift[m]) {
		free(center);
		free(v);
		return -1;
	}
	/* each name's middle over every run of both sides */
	for (i = 0; i < nn; i++) {
		const struct diff_name *d = &c->r->names[i];
		int k = 0;
		center[i] = NAN;
		if (d->kind != SUM_CALLS || d->presence != DP_BOTH || !anchored(c->cfg, d))
			continue;
		/* allocator calls without times say nothing of a run's speed */
		if (untimed && !strcmp(d->cat, PROF_CATNAME_MEMORY))
			continue;
		for (run = 0; run < c->nruns; run++) {
			const struct sum_row *w = c->at[i * c->nruns + run];
			double x;
			if (w && w->count >= DRIFT_MIN_CALLS && value(w, m, &x))
				v[k++] = ln1(x);
		}
		if (k >= 2)
			center[i] = median_of(v, k);
	}
	/* a run's shift: the median over names of how far each is from its middle, which
	 * a change of fewer than half the names does not move */
	for (run = 0; run < c->nruns && ok; run++) {
		int k = 0;
		for (i = 0; i < nn; i++) {
			const struct sum_row *w = c->at[i * c->nruns + run];
			double x;
			if (!isnan(center[i]) && w && w->count >= DRIFT_MIN_CALLS &&
			    value(w, m, &x))
				v[k++] = ln1(x) - center[i];
		}
		if (k < DRIFT_MIN_NAMES)
			ok = 0;
		else
			c->shift[m][run] = median_of(v, k);
	}
	if (!ok)
		memset(c->shift[m], 0, c->nruns * sizeof(double));
	free(center);
	free(v);
	return ok;
}

/* Marks the runs of one side (runs [from, to)) that ran far off the side's usual speed,
 * the farthest first, keeping at least MIN_KEPT_RUNS and two thirds of the side: of 6,
 * 4, which the rank test still passes with a pair out of order (p = 0.029); with 3 left
 * it needs all 9 pairs in order (p = 0.05), and one pair of noise hid a real change. */
static void disturbed_side(struct cmp *c, size_t from, size_t to)
{
	const double *s = c->shift[M_MEDIAN];
	double *v = malloc((to - from + 1) * sizeof(*v)), mid;
	size_t i, kept = to - from, keep = kept - kept / 3;

	if (!v)
		return; /* keeping every run is always sound */
	for (i = from; i < to; i++)
		v[i - from] = s[i];
	mid = median_of(v, (int)(to - from));
	free(v);
	while (kept > MIN_KEPT_RUNS && kept > keep) {
		size_t far = to;
		for (i = from; i < to; i++)
			if (!c->disturbed[i] && fabs(s[i] - mid) > DISTURBED_LN &&
			    (far == to || fabs(s[i] - mid) > fabs(s[far] - mid)))
				far = i;
		if (far == to)
			break;
		c->disturbed[far] = 1;
		kept--;
	}
}

static int common_mode(struct cmp *c)
{
	int m, used = 0;

	c->disturbed = calloc(c->nruns ? c->nruns : 1, 1);
	if (!c->disturbed)
		return -1;

	for (m = 0; m < M_NMETRICS; m++) {
		if (m == M_WALL || m == M_COMMON || !metric_is_time(m) || c->cfg->no_drift) {
			c->shift[m] = calloc(c->nruns ? c->nruns : 1, sizeof(double));
			if (!c->shift[m])
				return -1;
			continue;
		}
		int ok = estimate_shift(c, m);
		if (ok < 0)
			return -1;
		if (m == M_MEDIAN)
			used = ok;
	}
	c->r->drift_used = used;
	c->r->common_change = NAN;
	c->r->common_p = NAN;
	if (used && c->nb && c->nruns > c->nb) {
		const double *s = c->shift[M_MEDIAN];
		int nb = (int)c->nb, nc = (int)(c->nruns - c->nb);
		double h = shift_of(s, nb, s + nb, nc);
		c->r->common_change = exp(h) - 1;
		c->r->common_p = h >= 0 ? mwu_p_greater(s, nb, s + nb, nc) :
					  mwu_p_greater(s + nb, nc, s, nb);
	}
	if (used) {
		disturbed_side(c, 0, c->nb);
		disturbed_side(c, c->nb, c->nruns);
	}
	return 0;
}

/* judging one metric of one name */

static void threshold_for(const struct diff_config *cfg, int m, const struct diff_name *d,
			  struct diff_cell *cell)
{
	size_t i = cfg->nrules;

	while (i--) {
		const struct diff_rule *rule = &cfg->rules[i];
		if ((rule->metrics & METRIC_BIT(m)) &&
		    (!rule->pattern || diff_pattern_match(rule->pattern, d->cat, d->name))) {
			cell->relative = rule->relative;
			cell->threshold = rule->value;
			return;
		}
	}
	cell->relative = 1;
	cell->threshold = cfg->has_global ? cfg->global_pct :
			  metric_is_time(m) ? DIFF_DEFAULT_TIME_PCT : 0;
}

static int is_checked(const struct diff_config *cfg, int m, const struct diff_name *d)
{
	size_t i;

	if (!(applicable(d->kind) & METRIC_BIT(m)))
		return 0;
	if (cfg->checked & METRIC_BIT(m))
		return 1;
	if (metric_is_time(m))
		return 0;
	/* a threshold for an exact metric says the user cares about it */
	for (i = 0; i < cfg->nrules; i++)
		if ((cfg->rules[i].metrics & METRIC_BIT(m)) &&
		    (!cfg->rules[i].pattern ||
		     diff_pattern_match(cfg->rules[i].pattern, d->cat, d->name)))
			return 1;
	return 0;
}

static void fmt_p(char *out, size_t len, double p)
{
	if (p < 0.001)
		snprintf(out, len, "p<0.001");
	else
		snprintf(out, len, "p=%.3f", p);
}

/* Beyond the threshold upwards (1), downwards (-1), or not (0). */
static int beyond(const struct diff_cell *cell)
{
	if (cell->relative) {
		if (isnan(cell->change)) /* from nothing to something */
			return cell->delta > 0 ? 1 : 0;
		if (cell->change * 100 > cell->threshold)
			return 1;
		return cell->change * 100 < -cell->threshold ? -1 : 0;
	}
	if (cell->delta > cell->threshold)
		return 1;
	return cell->delta < -cell->threshold ? -1 : 0;
}

static int calls_test(struct cmp *c, size_t ni, int m, int dir, double *p)
{
	size_t run, nbins = 0, cap = 0, i;
	struct call_bin *b = NULL;

	*p = NAN;
	for (run = 0; run < c->nruns; run++) {
		const struct sum_row *w = c->at[ni * c->nruns + run];
		if (!w || c->disturbed[run])
			continue;
		for (i = 0; i < w->durs.n; i++) {
			if (!w->durs.c[i])
				continue;
			if (nbins == cap) {
				struct call_bin *nb;
				cap = cap ? 2 * cap : 256;
				nb = realloc(b, cap * sizeof(*b));
				if (!nb) {
					free(b);
					return -1;
				}
				b = nb;
			}
			b[nbins].v = sketch_log_value(w->durs.lo + (int32_t)i) - c->shift[m][run];
			b[nbins].count = (double)w->durs.c[i];
			b[nbins++].side = run >= c->nb;
		}
	}
	if (nbins)
		*p = quantile_test(b, nbins, m == M_P95 ? 0.95 : m == M_P99 ? 0.99 : 0.5, dir);
	free(b);
	return 0;
}

/* The verdict on a time cell whose change and p-values are set: beyond the threshold,
 * solid across runs and (where calls were measured) across calls. */
static void decide_time(const struct diff_config *cfg, struct diff_cell *cell, const double *calls,
			int per_call)
{
	int dir = beyond(cell);
	char pr[32], pc[32];

	if (per_call && fabs(cell->delta) < MIN_CALL_DELTA_NS)
		dir = 0;

	if (!dir) {
		cell->status = DS_UNCHANGED;
		return;
	}
	fmt_p(pr, sizeof(pr), cell->p_runs);
	fmt_p(pc, sizeof(pc), cell->p_calls);
	if (cell->p_runs <= cfg->alpha &&
	    (isnan(cell->p_calls) || cell->p_calls <= DIFF_ALPHA_CALLS)) {
		cell->status = dir > 0 ? DS_REGRESSION : DS_IMPROVEMENT;
		if (isnan(cell->p_calls))
			snprintf(cell->why, sizeof(cell->why),
				 "beyond the threshold and solid across %d+%d runs (%s)", cell->nb,
				 cell->nc, pr);
		else
			snprintf(cell->why, sizeof(cell->why),
				 "beyond the threshold and solid across %d+%d runs (%s) and "
				 "%.0f+%.0f calls (%s)",
				 cell->nb, cell->nc, pr, calls[0], calls[1], pc);
		return;
	}
	cell->status = DS_UNCONFIRMED;
	if (mwu_p_min(cell->nb, cell->nc) > cfg->alpha)
		snprintf(cell->why, sizeof(cell->why),
			 "too few runs to confirm (%d+%d; at least 3 a side are needed)", cell->nb,
			 cell->nc);
	else if (cell->p_runs > cfg->alpha)
		snprintf(cell->why, sizeof(cell->why), "not solid across runs (%s, level %g)", pr,
			 cfg->alpha);
	else
		snprintf(cell->why, sizeof(cell->why), "not solid across calls (%s, level %g)", pc,
			 DIFF_ALPHA_CALLS);
}

/* Whole-program time (common, wall) moves with the machine, whose speed may swing by
 * more than any threshold between runs: a change stands only when the sides were
 * measured together and every current run lies beyond every base run by more than the
 * threshold (x, y: ln values of the runs). */
static void program_time(const struct cmp *c, struct diff_cell *cell, const double *x, int nx,
			 const double *y, int ny)
{
	double lo_x = INFINITY, hi_x = -INFINITY, lo_y = INFINITY, hi_y = -INFINITY, gap;
	struct diff_cell g = *cell;
	int i, dir;

	if (cell->status != DS_REGRESSION && cell->status != DS_IMPROVEMENT)
		return;
	for (i = 0; i < nx; i++) {
		lo_x = x[i] < lo_x ? x[i] : lo_x;
		hi_x = x[i] > hi_x ? x[i] : hi_x;
	}
	for (i = 0; i < ny; i++) {
		lo_y = y[i] < lo_y ? y[i] : lo_y;
		hi_y = y[i] > hi_y ? y[i] : hi_y;
	}
	dir = cell->status == DS_REGRESSION ? 1 : -1;
	gap = dir > 0 ? lo_y - hi_x : hi_y - lo_x; /* the closest pair of runs */
	g.change = exp(gap) - 1;
	g.delta = isnan(cell->base) ? NAN : cell->base * g.change;
	if (!c->r->together && !c->cfg->same_machine) {
		cell->status = DS_UNCONFIRMED;
		snprintf(cell->why, sizeof(cell->why),
			 "the sides were not measured together (interleaved on one host), so a "
			 "change of the machine cannot be told from one of the program");
	} else if (beyond(&g) != dir) {
		cell->status = DS_UNCONFIRMED;
		snprintf(cell->why, sizeof(cell->why),
			 "the runs overlap: the closest base and current runs differ by %+.1f%%, "
			 "not beyond the threshold (the machine's own swings?)", 100 * g.change);
	} else {
		snprintf(cell->why, sizeof(cell->why),
			 "every current run beyond every base run by more than the threshold "
			 "(%d+%d runs, closest %+.1f%%)", nx, ny, 100 * g.change);
	}
}

static int judge_time(struct cmp *c, size_t ni, int m, struct diff_cell *cell, double *x,
		      double *y, double *raw)
{
	int nb = 0, nc = 0, k = 0, few;
	size_t run;
	double calls[2] = { 0, 0 };

	for (run = 0; run < c->nruns; run++) {
		const struct sum_row *w = c->at[ni * c->nruns + run];
		double v;
		if ((m != M_WALL && c->disturbed[run]) || !value(w, m, &v))
			continue;
		if (run < c->nb)
			x[nb++] = ln1(v) - c->shift[m][run];
		else
			y[nc++] = ln1(v) - c->shift[m][run];
		calls[run >= c->nb] += (double)w->count;
	}
	cell->nb = nb;
	cell->nc = nc;
	if (!nb || !nc)
		return 0;
	cell->present = 1;
	for (run = 0; run < c->nruns; run++) {
		if (run == c->nb) {
			cell->base = median_of(raw, k);
			k = 0;
		}
		if ((m == M_WALL || !c->disturbed[run]) &&
		    value(c->at[ni * c->nruns + run], m, &raw[k]))
			k++;
	}
	cell->cur = median_of(raw, k);
	cell->change = exp(shift_of(x, nb, y, nc)) - 1;
	cell->delta = cell->base * cell->change;
	if (!cell->checked)
		return 0;
	cell->p_runs = cell->change >= 0 ? mwu_p_greater(x, nb, y, nc) :
					   mwu_p_greater(y, nc, x, nb);
	if (m == M_WALL) {
		decide_time(c->cfg, cell, calls, 0);
		program_time(c, cell, x, nb, y, nc);
		return 0;
	}
	if (calls_test(c, ni, m, cell->change >= 0 ? 1 : -1, &cell->p_calls))
		return -1;
	decide_time(c->cfg, cell, calls,
		    m == M_MEDIAN || m == M_P95 || m == M_P99 || m == M_MEAN);
	/* a call or two a run (the first malloc, paying the heap's page faults) swing by
	 * more than any threshold, and there are no calls to be solid across */
	few = calls[0] < MIN_CALLS * nb || calls[1] < MIN_CALLS * nc;
	if (few && cell->status != DS_UNCHANGED) {
		cell->status = DS_UNCONFIRMED;
		snprintf(cell->why, sizeof(cell->why),
			 "%.0f+%.0f calls in %d+%d runs: too few to be solid across calls (%d a "
			 "run needed)", calls[0], calls[1], nb, nc, MIN_CALLS);
	}
	return 0;
}

/* The program's "common": the shift of each run's per-call medians, the base's against
 * the current's. It has no value of its own, only a change. */
static void judge_common(struct cmp *c, struct diff_cell *cell)
{
	const double *s = c->shift[M_MEDIAN];
	int nb = (int)c->nb, nc = (int)(c->nruns - c->nb);

	if (!c->r->drift_used || !nb || !nc)
		return;
	cell->present = 1;
	cell->nb = nb;
	cell->nc = nc;
	cell->base = cell->cur = cell->delta = NAN;
	cell->change = c->r->common_change;
	cell->relative = 1; /* a share of every name's time: only a percentage makes sense */
	if (!cell->checked)
		return;
	cell->p_runs = c->r->common_p;
	decide_time(c->cfg, cell, NULL, 0);
	program_time(c, cell, s, nb, s + nb, nc);
}

static void judge_exact(struct cmp *c, size_t ni, int m, struct diff_cell *cell, double *raw)
{
	double bmin = INFINITY, bmax = -INFINITY, cmin = INFINITY, cmax = -INFINITY, v;
	const struct diff_name *d = &c->r->names[ni];
	int k = 0, dir;
	size_t run;

	for (run = 0; run < c->nb; run++) {
		value(c->at[ni * c->nruns + run], m, &v);
		raw[k++] = v;
		bmin = v < bmin ? v : bmin;
		bmax = v > bmax ? v : bmax;
	}
	cell->nb = k;
	cell->base = median_of(raw, k);
	k = 0;
	for (run = c->nb; run < c->nruns; run++) {
		value(c->at[ni * c->nruns + run], m, &v);
		raw[k++] = v;
		cmin = v < cmin ? v : cmin;
		cmax = v > cmax ? v : cmax;
	}
	cell->nc = k;
	cell->cur = median_of(raw, k);
	cell->present = 1;
	cell->delta = cell->cur - cell->base;
	cell->change = cell->base ? cell->delta / cell->base : cell->delta ? NAN : 0;
	cell->varies = bmin != bmax || cmin != cmax;
	if (d->kind == SUM_CALLS && (m == M_ALLOCS || m == M_BYTES) && d->base_count &&
	    d->cur_count)
		cell->per_call = cell->cur / d->cur_count - cell->base / d->base_count;
	if (!cell->checked)
		return;
	dir = beyond(cell);
	if (!dir) {
		cell->status = DS_UNCHANGED;
		return;
	}
	/* exact figures need no test, but runs that disagree among themselves must
	 * still all lie on one side */
	if ((dir > 0 && cmin > bmax) || (dir < 0 && cmax < bmin)) {
		cell->status = dir > 0 ? DS_REGRESSION : DS_IMPROVEMENT;
		snprintf(cell->why, sizeof(cell->why), "exact: %s%.0f%s",
			 cell->delta > 0 ? "+" : "", cell->delta,
			 cell->varies ? " in every run" : "");
		return;
	}
	cell->status = DS_UNCONFIRMED;
	snprintf(cell->why, sizeof(cell->why),
		 "the runs disagree: base %.0f..%.0f, current %.0f..%.0f", bmin, bmax, cmin, cmax);
}

static double side_median(struct cmp *c, size_t ni, int m, int side, double *raw)
{
	size_t run, from = side ? c->nb : 0, to = side ? c->nruns : c->nb;
	int k = 0;
	double v;

	for (run = from; run < to; run++)
		if (value(c->at[ni * c->nruns + run], m, &v))
			raw[k++] = v;
	return k ? median_of(raw, k) : NAN;
}

static int judge(struct cmp *c)
{
	struct diff_result *r = c->r;
	double *x = malloc((c->nruns + 1) * sizeof(double) * 3);
	size_t i;
	int m, rc = 0, untimed = alloc_untimed(c);

	if (!x)
		return -1;
	for (i = 0; i < r->nnames && !rc; i++) {
		struct diff_name *d = &r->names[i];
		double *y = x + c->nruns + 1, *raw = y + c->nruns + 1;

		d->base_count = d->in_base ? side_median(c, i, M_COUNT, 0, raw) : 0;
		d->cur_count = d->in_cur ? side_median(c, i, M_COUNT, 1, raw) : 0;
		if (d->presence != DP_BOTH) {
			/* what is known of a new or vanished name, for the report */
			int side = d->presence == DP_NEW;
			for (m = 0; m < M_NMETRICS; m++) {
				if (!(applicable(d->kind) & METRIC_BIT(m)))
					continue;
				double v = side_median(c, i, m, side, raw);
				if (side)
					d->m[m].cur = v;
				else
					d->m[m].base = v;
			}
			continue;
		}
		for (m = 0; m < M_NMETRICS && !rc; m++) {
			struct diff_cell *cell = &d->m[m];
			cell->change = cell->delta = cell->per_call = NAN;
			cell->p_runs = cell->p_calls = NAN;
			if (!(applicable(d->kind) & METRIC_BIT(m)))
				continue;
			if (untimed && metric_is_time(m) && d->kind == SUM_CALLS &&
			    !strcmp(d->cat, PROF_CATNAME_MEMORY))
				continue;
			cell->checked = is_checked(c->cfg, m, d);
			threshold_for(c->cfg, m, d, cell);
			if (m == M_COMMON)
				judge_common(c, cell);
			else if (metric_is_time(m))
				rc = judge_time(c, i, m, cell, x, y, raw);
			else
				judge_exact(c, i, m, cell, raw);
			if (!cell->present)
				cell->checked = 0;
			if (cell->checked && cell->status > d->status)
				d->status = cell->status;
		}
	}
	free(x);
	return rc;
}

/* new and vanished names */

static void renames(struct diff_result *r)
{
	size_t g, k;

	for (g = 0; g < r->nnames; g++) {
		struct diff_name *gone = &r->names[g];
		double best = INFINITY;
		long pick = -1;
		if (gone->presence != DP_GONE)
			continue;
		for (k = 0; k < r->nnames; k++) {
			const struct diff_name *nw = &r->names[k];
			double ratio = 1;
			if (nw->presence != DP_NEW || nw->renamed >= 0 || nw->kind != gone->kind ||
			    strcmp(nw->cat, gone->cat) || nw->cur_count != gone->base_count)
				continue;
			if (gone->kind == SUM_CALLS) {
				double a = gone->m[M_MEDIAN].base, b = nw->m[M_MEDIAN].cur;
				if (!(a > 0 && b > 0))
					continue;
				ratio = fabs(log(b / a));
				if (ratio > log(RENAME_RATIO))
					continue;
			}
			if (ratio < best) {
				best = ratio;
				pick = (long)k;
			}
		}
		if (pick >= 0) {
			gone->renamed = pick;
			r->names[pick].renamed = (long)g;
		}
	}
}

/* warnings: the sides did not run alike */

struct fact_label {
	const char *key, *what;
};

static const struct fact_label fact_labels[] = {
	{ "host", "hosts" },
	{ "cpu", "CPU models" },
	{ "cpus", "CPU counts" },
	{ "kernel", "kernels" },
	{ "clock", "clocks" },
	{ "ring_bytes", "ring sizes" },
	{ "block", "PROFILER_BLOCK settings" },
	{ "stacks", "call-stack settings" },
	{ "session_version", "libprof session versions" },
	{ "prof", "prof versions" },
	{ "command", "commands" },
};

/* The first value of a fact on a side, and whether the side disagrees with itself. */
static const char *side_fact(const struct summary *s, const char *key, int *mixed, int *missing)
{
	const char *first = NULL, *v;
	size_t i;

	*mixed = *missing = 0;
	for (i = 0; i < s->nruns; i++) {
		v = sum_fact(&s->runs[i], key);
		if (!v) {
			*missing = 1;
			continue;
		}
		if (!first)
			first = v;
		else if (strcmp(first, v))
			*mixed = 1;
	}
	return first;
}

static int side_warnings(struct diff_result *r, const struct summary *s, const char *side)
{
	uint64_t lost = 0;
	size_t nlost = 0, ndamaged = 0, i;

	for (i = 0; i < s->nruns; i++) {
		if (s->runs[i].lost) {
			nlost++;
			if (s->runs[i].lost > lost)
				lost = s->runs[i].lost;
		}
		ndamaged += s->runs[i].damaged != 0;
	}
	if (nlost && warn(r, "%zu %s run%s lost events (up to %llu in one run): the figures "
			  "undercount", nlost, side, nlost > 1 ? "s" : "",
			  (unsigned long long)lost))
		return -1;
	if (ndamaged && warn(r, "%zu %s run%s came from damaged captures: they cover what came "
			     "before the damage", ndamaged, side, ndamaged > 1 ? "s" : ""))
		return -1;
	if (s->duplicates && warn(r, "%zu %s run%s given twice (a capture and its summary?) "
				  "counted once", s->duplicates, side,
				  s->duplicates > 1 ? "s were" : " was"))
		return -1;
	return 0;
}

static int disturbed_warning(struct cmp *c)
{
	char list[256] = "";
	size_t i, n = 0, used = 0;

	for (i = 0; i < c->nruns; i++) {
		const char *src, *slash;
		if (!c->disturbed[i])
			continue;
		src = run_of(c, i)->source ? run_of(c, i)->source : "?";
		slash = strrchr(src, '/');
		if (n++ < 3 && used < sizeof(list))
			used += (size_t)snprintf(list + used, sizeof(list) - used,
						 "%s%s %s %+.1f%%", n > 1 ? ", " : "",
						 i < c->nb ? "base" : "current",
						 slash ? slash + 1 : src,
						 100 * (exp(c->shift[M_MEDIAN][i]) - 1));
	}
	if (!n)
		return 0;
	return warn(c->r, "%zu run%s left out of the names' time judgments: %s more than 5%% off "
		    "the usual speed of %s side, all names alike (the machine's doing?): %s%s",
		    n, n > 1 ? "s" : "", n > 1 ? "they ran" : "it ran", n > 1 ? "their" : "its",
		    list, n > 3 ? ", ..." : "");
}

static int warnings(struct cmp *c)
{
	struct diff_result *r = c->r;
	size_t i;

	for (i = 0; i < sizeof(fact_labels) / sizeof(fact_labels[0]); i++) {
		int bmix, bmiss, cmix, cmiss;
		const char *b = side_fact(c->sb, fact_labels[i].key, &bmix, &bmiss);
		const char *k = side_fact(c->sc, fact_labels[i].key, &cmix, &cmiss);

		if (bmix && warn(r, "the base runs come from different %s", fact_labels[i].what))
			return -1;
		if (cmix && warn(r, "the current runs come from different %s", fact_labels[i].what))
			return -1;
		if (b && k && strcmp(b, k) &&
		    warn(r, "the two sides ran with different %s: base '%s', current '%s'%s",
			 fact_labels[i].what, b, k,
			 i < 5 ? "; timings may not compare" : ""))
			return -1;
	}
	if (side_warnings(r, c->sb, "base") || side_warnings(r, c->sc, "current") ||
	    disturbed_warning(c))
		return -1;
	if ((c->cfg->checked & METRICS_TIME) && (c->nb < 3 || c->nruns - c->nb < 3) &&
	    warn(r, "time changes cannot be confirmed with %zu base and %zu current run%s: "
		 "at least 3 a side are needed (6 recommended)",
		 c->nb, c->nruns - c->nb, c->nruns - c->nb > 1 ? "s" : ""))
		return -1;
	return 0;
}

static void verdict(struct cmp *c)
{
	struct diff_result *r = c->r;
	size_t i;
	int m;

	for (i = 0; i < r->nnames; i++) {
		struct diff_name *d = &r->names[i];
		if (d->presence == DP_NEW) {
			r->new_names++;
			if (c->cfg->flag_new)
				d->status = DS_REGRESSION;
		} else if (d->presence == DP_GONE) {
			r->gone_names++;
			if (c->cfg->flag_gone)
				d->status = DS_REGRESSION;
		}
		if (d->status == DS_REGRESSION)
			r->regression = 1;
		for (m = 0; m < M_NMETRICS; m++) {
			switch (d->m[m].checked ? d->m[m].status : DS_NONE) {
			case DS_REGRESSION: r->regressions++; break;
			case DS_IMPROVEMENT: r->improvements++; break;
			case DS_UNCONFIRMED: r->unconfirmed++; break;
			case DS_UNCHANGED: r->unchanged++; break;
			default: break;
			}
		}
	}
}

/* Same host for every run, and the two sides' spans of start times overlap. */
static int together(const struct cmp *c)
{
	uint64_t lo[2] = { UINT64_MAX, UINT64_MAX }, hi[2] = { 0, 0 };
	const char *host = NULL;
	size_t i;

	for (i = 0; i < c->nruns; i++) {
		const struct sum_run *run = run_of(c, i);
		const char *h = sum_fact(run, "host");
		int side = i >= c->nb;
		if (!h || !run->start_ns || (host && strcmp(h, host)))
			return 0;
		host = h;
		lo[side] = run->start_ns < lo[side] ? run->start_ns : lo[side];
		hi[side] = run->start_ns > hi[side] ? run->start_ns : hi[side];
	}
	return c->nb && c->nruns > c->nb && hi[0] > lo[1] && hi[1] > lo[0];
}

int diff_compare(const struct summary *base, const struct summary *cur,
		 const struct diff_config *cfg, struct diff_result *out)
{
	struct cmp c;
	int m, rc = -1;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.sb = base;
	c.sc = cur;
	c.cfg = cfg;
	c.r = out;
	c.nb = base->nruns;
	c.nruns = base->nruns + cur->nruns;
	out->nbase = base->nruns;
	out->ncur = cur->nruns;
	out->together = together(&c);
	if (!gather(&c) && !common_mode(&c) && !judge(&c) && !warnings(&c)) {
		renames(out);
		verdict(&c);
		rc = 0;
	}
	for (m = 0; m < M_NMETRICS; m++)
		free(c.shift[m]);
	free(c.disturbed);
	free(c.at);
	return rc;
}

void diff_result_free(struct diff_result *r)
{
	size_t i;

	for (i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->names);
	memset(r, 0, sizeof(*r));
}
