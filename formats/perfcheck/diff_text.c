/* The report of prof diff for people: a text table for terminals and CI logs, Markdown
 * for a pull-request comment (verdict, regressions, improvements, then every name in a
 * collapsible section). */
#define _GNU_SOURCE /* strdup */
#include "formats/perfcheck/diff.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tables/textfmt.h"

#define NAME_COLS 48

const char *diff_status_name(enum diff_status s)
{
	static const char *const names[] = { "not checked", "unchanged", "unconfirmed",
					     "improvement", "regression" };

	return (unsigned)s <= DS_REGRESSION ? names[s] : "?";
}

void diff_fmt_value(char *out, size_t len, int m, double v)
{
	char b[TEXTFMT_LEN];

	if (isnan(v)) {
		snprintf(out, len, "-");
		return;
	}
	if (v < 0)
		v = 0;
	if (metric_is_time(m))
		snprintf(out, len, "%s", fmt_dur(b, (uint64_t)llround(v)));
	else if (m == M_BYTES || m == M_PEAK)
		snprintf(out, len, "%s", fmt_bytes(b, (uint64_t)llround(v)));
	else if (v != floor(v))
		snprintf(out, len, "%.1f", v); /* a median of an even number of runs */
	else
		snprintf(out, len, "%s", fmt_count(b, (uint64_t)v));
}

void diff_fmt_change(char *out, size_t len, const struct diff_cell *c)
{
	if (!c->present || (isnan(c->change) && isnan(c->delta)))
		snprintf(out, len, "-");
	else if (isnan(c->change))
		snprintf(out, len, "from 0");
	else if (!c->change)
		snprintf(out, len, "0");
	else
		snprintf(out, len, "%+.1f%%", 100 * c->change);
}

void diff_fmt_threshold(char *out, size_t len, int m, const struct diff_cell *c)
{
	if (c->relative)
		snprintf(out, len, "%g%%", c->threshold);
	else
		diff_fmt_value(out, len, m, c->threshold);
}

/* How far a name moved, for ordering: the largest change among its judged metrics. */
static double size_of(const struct diff_name *d)
{
	double best = 0;
	int m;

	for (m = 0; m < M_NMETRICS; m++) {
		const struct diff_cell *c = &d->m[m];
		double a;
		if (!c->present)
			continue;
		a = isnan(c->change) ? (c->delta ? 1e9 : 0) : fabs(c->change);
		if (!c->checked)
			a /= 1e3; /* judged metrics first */
		if (a > best)
			best = a;
	}
	return best;
}

static int rank(const struct diff_name *d)
{
	if (d->presence != DP_BOTH)
		return d->status == DS_REGRESSION ? 0 : 4;
	switch (d->status) {
	case DS_REGRESSION: return 0;
	case DS_UNCONFIRMED: return 1;
	case DS_IMPROVEMENT: return 2;
	default: return 3;
	}
}

static const struct diff_result *order_r;

static int by_order(const void *a, const void *b)
{
	const struct diff_name *x = &order_r->names[*(const size_t *)a];
	const struct diff_name *y = &order_r->names[*(const size_t *)b];
	double sx, sy;
	int c;

	if (rank(x) != rank(y))
		return rank(x) - rank(y);
	sx = size_of(x);
	sy = size_of(y);
	if (sx != sy)
		return sx > sy ? -1 : 1;
	c = strcmp(x->cat, y->cat);
	return c ? c : strcmp(x->name, y->name);
}

size_t *diff_order(const struct diff_result *r)
{
	size_t *ix = malloc((r->nnames ? r->nnames : 1) * sizeof(*ix)), i;

	if (!ix)
		return NULL;
	for (i = 0; i < r->nnames; i++)
		ix[i] = i;
	order_r = r; /* qsort has no context argument; this file is single-threaded */
	qsort(ix, r->nnames, sizeof(*ix), by_order);
	return ix;
}

/* a table of strings, printed with aligned columns or as Markdown */

struct tbl {
	char **cell;
	size_t cols, n, cap;
	int oom;
};

static void add(struct tbl *t, const char *s)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		char **c = realloc(t->cell, cap * sizeof(*c));
		if (!c) {
			t->oom = 1;
			return;
		}
		t->cell = c;
		t->cap = cap;
	}
	if (!(t->cell[t->n] = strdup(s)))
		t->oom = 1;
	else
		t->n++;
}

static void addf(struct tbl *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct tbl *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	add(t, buf);
}

static size_t columns(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

/* Prints and empties t; -1 (ENOMEM) when a cell could not be stored. */
static int print_tbl(struct tbl *t, FILE *f, int md)
{
	size_t rows = t->cols ? t->n / t->cols : 0, i, j, w[16] = { 0 };
	int oom = t->oom;

	if (oom)
		rows = 0;

	for (i = 0; i < rows; i++)
		for (j = 0; j < t->cols && j < 16; j++) {
			size_t c = columns(t->cell[i * t->cols + j]);
			if (c > w[j])
				w[j] = c;
		}
	for (i = 0; i < rows; i++) {
		for (j = 0; j < t->cols; j++) {
			const char *s = t->cell[i * t->cols + j];
			if (md) {
				fputs(j ? " | " : "| ", f);
				md_cell(f, s);
			} else if (j + 1 < t->cols) {
				fprintf(f, "%s%*s", s, (int)(w[j] - columns(s) + 2), "");
			} else {
				fputs(s, f);
			}
		}
		fputs(md ? " |\n" : "\n", f);
		if (md && i == 0) {
			for (j = 0; j < t->cols; j++)
				fputs(j ? "---|" : "|---|", f);
			fputc('\n', f);
		}
	}
	for (i = 0; i < t->n; i++)
		free(t->cell[i]);
	free(t->cell);
	memset(t, 0, sizeof(*t));
	if (oom)
		errno = ENOMEM;
	return oom ? -1 : 0;
}

static void name_of(char *out, size_t len, const struct diff_name *d)
{
	char n[4 * NAME_COLS + 4], c[4 * 24 + 4];

	fmt_name(c, d->cat, strlen(d->cat), 24);
	fmt_name(n, d->name, strlen(d->name), NAME_COLS);
	snprintf(out, len, "%s/%s", c, n);
}

/* the parts of the report */

struct out {
	const struct diff_result *r;
	const struct diff_config *cfg;
	const struct diff_labels *l;
	FILE *f;
	int md;
	long top;
	size_t *order;
	int failed;
};

static void heading(struct out *o, const char *text)
{
	if (o->md)
		fprintf(o->f, "\n#### %s\n\n", text);
	else
		fprintf(o->f, "\n%s\n", text);
}

/* "median (5%), common (5%); thresholds: allocs 0, median "aten::*" 20%" */
static void checked_line(struct out *o, char *buf, size_t len)
{
	const struct diff_config *cfg = o->cfg;
	size_t used = 0, i;
	int m, any = 0;

	buf[0] = 0;
	for (m = 0; m < M_NMETRICS && used < len; m++) {
		struct diff_cell c = { 0 };
		char t[48];
		if (!(cfg->checked & METRIC_BIT(m)))
			continue;
		c.relative = 1;
		c.threshold = cfg->has_global ? cfg->global_pct :
			      metric_is_time(m) ? DIFF_DEFAULT_TIME_PCT : 0;
		diff_fmt_threshold(t, sizeof(t), m, &c);
		used += (size_t)snprintf(buf + used, len - used, "%s%s (%s)", any ? ", " : "",
					 metric_name(m), t);
		any = 1;
	}
	for (i = 0; i < cfg->nrules && used < len; i++) {
		const struct diff_rule *r = &cfg->rules[i];
		struct diff_cell c = { .relative = r->relative, .threshold = r->value };
		char t[48], what[64] = "";
		int first = -1, n = 0;
		for (m = 0; m < M_NMETRICS; m++)
			if (r->metrics & METRIC_BIT(m)) {
				first = first < 0 ? m : first;
				n++;
			}
		diff_fmt_threshold(t, sizeof(t), first, &c);
		if (n > 1)
			snprintf(what, sizeof(what), "%s",
				 r->metrics == (METRICS_TIME | METRICS_EXACT) ? "all" :
				 r->metrics == METRICS_TIME ? "time" :
				 r->metrics == METRICS_EXACT ? "exact" : "memory");
		else
			snprintf(what, sizeof(what), "%s", metric_name(first));
		used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s%s %s",
					 i ? ", " : any ? "; thresholds: " : "thresholds: ", what,
					 r->pattern ? " \"" : "", r->pattern ? r->pattern : "",
					 r->pattern ? "\"" : "", t);
	}
}

static void verdict(struct out *o)
{
	const struct diff_result *r = o->r;
	char checked[512] = "";

	checked_line(o, checked, sizeof(checked));
	if (o->md) {
		fprintf(o->f, "### prof diff: %s\n\n", r->regression ? ":x: **regression**" :
			":white_check_mark: no regression");
		fprintf(o->f, "**%zu regression%s**, %zu improvement%s, %zu unconfirmed, %zu "
			"unchanged; %zu new name%s, %zu gone. Base: %zu run%s, current: %zu run%s. "
			"Judged: %s.\n",
			r->regressions, r->regressions == 1 ? "" : "s", r->improvements,
			r->improvements == 1 ? "" : "s", r->unconfirmed, r->unchanged, r->new_names,
			r->new_names == 1 ? "" : "s", r->gone_names, r->nbase,
			r->nbase == 1 ? "" : "s", r->ncur, r->ncur == 1 ? "" : "s", checked);
	} else {
		fprintf(o->f, "prof diff: base %s (%zu run%s), current %s (%zu run%s)\n",
			o->l->base, r->nbase, r->nbase == 1 ? "" : "s", o->l->cur, r->ncur,
			r->ncur == 1 ? "" : "s");
		fprintf(o->f, "Judged: %s\n", checked);
	}
}

static void notes(struct out *o)
{
	const struct diff_result *r = o->r;
	size_t i;

	if (r->nwarnings && o->md)
		fputc('\n', o->f);
	for (i = 0; i < r->nwarnings; i++) {
		if (o->md) {
			fputs("> :warning: ", o->f);
			md_cell(o->f, r->warnings[i]);
			fputs("\n", o->f);
		} else {
			fprintf(o->f, "WARNING: %s\n", r->warnings[i]);
		}
	}
	if (r->drift_used && !isnan(r->common_change))
		fprintf(o->f, "%sCommon-mode change of the per-call medians: %+.1f%% (p=%.3f), "
			"removed before each name is judged; %s%s\n", o->md ? "\n" : "",
			100 * r->common_change, r->common_p,
			!(o->cfg->checked & METRIC_BIT(M_COMMON)) ?
			"not judged: it may be the machine's (--metric common judges it)" :
			r->together || o->cfg->same_machine ?
			"judged itself as program/run common" :
			"the sides were not measured together (interleaved on one host), so it may "
			"be the machine's", o->md ? "." : "");
	if (!o->md)
		fprintf(o->f, "Verdict: %s (%zu regression%s, %zu improvement%s, %zu unconfirmed, "
			"%zu unchanged; %zu new name%s, %zu gone%s)\n",
			r->regression ? "REGRESSION" : "no regression", r->regressions,
			r->regressions == 1 ? "" : "s", r->improvements,
			r->improvements == 1 ? "" : "s",
			r->unconfirmed, r->unchanged, r->new_names, r->new_names == 1 ? "" : "s",
			r->gone_names, r->ignored ? ", some ignored" : "");
}

/* The judged cells of one status, largest change first. */
static void findings(struct out *o, enum diff_status want, const char *title)
{
	const struct diff_result *r = o->r;
	struct tbl t = { .cols = 7 };
	size_t i, shown = 0, more = 0;
	int m;

	for (i = 0; i < r->nnames; i++) {
		const struct diff_name *d = &r->names[o->order[i]];
		for (m = 0; m < M_NMETRICS; m++) {
			const struct diff_cell *c = &d->m[m];
			char name[320], b[48], k[48], ch[48], th[48];
			if (!c->checked || c->status != want)
				continue;
			if (o->top > 0 && shown >= (size_t)o->top) {
				more++;
				continue;
			}
			if (!shown++) {
				heading(o, title);
				add(&t, "Name");
				add(&t, "Metric");
				add(&t, "Base");
				add(&t, "Current");
				add(&t, "Change");
				add(&t, "Threshold");
				add(&t, "Why");
			}
			name_of(name, sizeof(name), d);
			diff_fmt_value(b, sizeof(b), m, c->base);
			diff_fmt_value(k, sizeof(k), m, c->cur);
			diff_fmt_change(ch, sizeof(ch), c);
			diff_fmt_threshold(th, sizeof(th), m, c);
			add(&t, name);
			add(&t, metric_name(m));
			add(&t, b);
			add(&t, k);
			if (!isnan(c->per_call) && c->per_call)
				addf(&t, "%s (%+.2f per call)", ch, c->per_call);
			else
				add(&t, ch);
			add(&t, th);
			add(&t, c->why);
		}
	}
	o->failed |= print_tbl(&t, o->f, o->md);
	if (more)
		fprintf(o->f, "%s... and %zu more\n", o->md ? "\n" : "", more);
}

static void presence(struct out *o, enum diff_presence want, const char *title)
{
	const struct diff_result *r = o->r;
	struct tbl t = { .cols = 3 };
	size_t i, shown = 0, more = 0;

	for (i = 0; i < r->nnames; i++) {
		const struct diff_name *d = &r->names[o->order[i]];
		char name[320], other[320], cnt[48];
		if (d->presence != want)
			continue;
		if (o->top > 0 && shown >= (size_t)o->top) {
			more++;
			continue;
		}
		if (!shown++) {
			heading(o, title);
			add(&t, "Name");
			add(&t, want == DP_NEW ? "Calls a run" : "Calls a run (base)");
			add(&t, "Note");
		}
		name_of(name, sizeof(name), d);
		add(&t, name);
		if (d->kind == SUM_CALLS || d->kind == SUM_INSTANTS) {
			diff_fmt_value(cnt, sizeof(cnt), M_COUNT,
				       want == DP_NEW ? d->cur_count : d->base_count);
			add(&t, cnt);
		} else {
			add(&t, "-");
		}
		if (d->renamed >= 0) {
			name_of(other, sizeof(other), &r->names[d->renamed]);
			addf(&t, "%s %s (same calls, similar time)%s",
			     want == DP_NEW ? "likely a rename of" : "likely renamed to", other,
			     d->status == DS_REGRESSION ? "; flagged" : "");
		} else {
			add(&t, d->status == DS_REGRESSION ? "flagged (config: flag new/gone)" :
							     "");
		}
	}
	o->failed |= print_tbl(&t, o->f, o->md);
	if (more)
		fprintf(o->f, "%s... and %zu more\n", o->md ? "\n" : "", more);
}

static void cell_text(char *out, size_t len, int m, const struct diff_cell *c)
{
	char v[48], ch[48];

	if (!c->present) {
		snprintf(out, len, "-");
		return;
	}
	const char *mark = c->checked && c->status == DS_REGRESSION ? " !" : "";

	diff_fmt_value(v, sizeof(v), m, c->cur);
	diff_fmt_change(ch, sizeof(ch), c);
	if (isnan(c->cur)) /* common: a change only */
		snprintf(out, len, "%s%s", ch, mark);
	else if (!strcmp(ch, "0") || (!isnan(c->change) && fabs(c->change) < 0.0005))
		snprintf(out, len, "%s", v);
	else
		snprintf(out, len, "%s (%s)%s", v, ch, mark);
}

/* One name's row of a details table (its header first when the table is empty): the
 * name, then the current value and change of each metric in cols. */
static void detail_row(struct tbl *t, const char *const *heads, const int *cols, unsigned n,
		       const struct diff_name *d)
{
	char name[320], cell[128];
	unsigned j;

	if (!t->n)
		for (j = 0; j <= n; j++)
			add(t, heads[j]);
	name_of(name, sizeof(name), d);
	add(t, name);
	for (j = 0; j < n; j++) {
		cell_text(cell, sizeof(cell), cols[j], &d->m[cols[j]]);
		add(t, cell);
	}
}

/* Every name on both sides: current values and their change. */
static void details(struct out *o)
{
	static const int calls_cols[] = { M_COUNT, M_MEDIAN, M_P95, M_SELF, M_ALLOCS, M_BYTES };
	static const int prog_cols[] = { M_COMMON, M_WALL, M_ALLOCS, M_BYTES, M_PEAK };
	static const char *const calls_heads[] = { "Name", "Calls", "Median", "p95", "Self",
						   "Allocs", "Bytes" };
	static const char *const prog_heads[] = { "Program", "Common", "Wall", "Allocs", "Bytes",
						  "Peak" };
	const struct diff_result *r = o->r;
	struct tbl t = { .cols = 7 }, p = { .cols = 6 };
	size_t i, shown = 0, more = 0, both = 0;

	for (i = 0; i < r->nnames; i++) {
		const struct diff_name *d = &r->names[o->order[i]];
		if (d->presence != DP_BOTH)
			continue;
		both++;
		if (d->kind == SUM_PROGRAM || d->kind == SUM_PROCESS) {
			detail_row(&p, prog_heads, prog_cols, 5, d);
			continue;
		}
		if (o->top > 0 && shown >= (size_t)o->top) {
			more++;
			continue;
		}
		shown++;
		detail_row(&t, calls_heads, calls_cols, 6, d);
	}
	if (!both)
		return;
	if (o->md)
		fprintf(o->f, "\n<details><summary>All %zu names on both sides: current values and "
			"change</summary>\n\n", both);
	else
		fprintf(o->f, "\nAll %zu names on both sides: current values and change "
			"(! a regression)\n", both);
	if (p.n) {
		o->failed |= print_tbl(&p, o->f, o->md);
		fputc('\n', o->f);
	}
	o->failed |= print_tbl(&t, o->f, o->md);
	if (more)
		fprintf(o->f, "%s... and %zu more (--top)\n", o->md ? "\n" : "", more);
	if (o->md)
		fputs("\n</details>\n", o->f);
}

int diff_write_text(const struct diff_result *r, const struct diff_config *cfg,
		    const struct diff_labels *l, int markdown, long top, FILE *f)
{
	struct out o = { r, cfg, l, f, markdown, top, diff_order(r), 0 };

	if (!o.order) {
		errno = ENOMEM;
		return -1;
	}
	verdict(&o);
	notes(&o);
	findings(&o, DS_REGRESSION, "Regressions");
	findings(&o, DS_IMPROVEMENT, "Improvements");
	findings(&o, DS_UNCONFIRMED, "Unconfirmed (beyond the threshold, not solid: noise?)");
	presence(&o, DP_GONE, "Gone (in the base only)");
	presence(&o, DP_NEW, "New (in the current runs only)");
	details(&o);
	free(o.order);
	return o.failed || ferror(f) ? -1 : 0;
}

int diff_write(const struct diff_result *r, const struct diff_config *cfg,
	       const struct diff_labels *l, enum diff_format fmt, long top, FILE *f)
{
	switch (fmt) {
	case DIFF_MARKDOWN:
		return diff_write_text(r, cfg, l, 1, top, f);
	case DIFF_JSON:
		return diff_write_json(r, cfg, l, top, f);
	case DIFF_JUNIT:
		return diff_write_junit(r, cfg, l, f);
	default:
		return diff_write_text(r, cfg, l, 0, top, f);
	}
}
