/* The report of prof diff for programs: JSON (every name and metric), and JUnit XML for
 * CI dashboards (one test case per judged name and metric, a failure per regression). */
#include "formats/perfcheck/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/util/json_writer.h"
#include "formats/util/utf8.h"

/* Four decimals are plenty for percentages and p-values, and read better. */
static void num(struct jw *w, double v)
{
	jw_double(w, isfinite(v) ? round(v * 1e4) / 1e4 : v);
}

static void key(struct jw *w, const char *k, int first)
{
	if (!first)
		jw_lit(w, ",");
	jw_cstr(w, k);
	jw_lit(w, ":");
}

static void side(struct jw *w, const char *label, size_t runs)
{
	jw_lit(w, "{\"label\":");
	jw_cstr(w, label);
	jw_lit(w, ",\"runs\":");
	jw_u64(w, runs);
	jw_lit(w, "}");
}

static void cell(struct jw *w, int m, const struct diff_cell *c)
{
	key(w, "base", 1);
	num(w, c->base);
	key(w, "current", 0);
	num(w, c->cur);
	key(w, "change_pct", 0);
	num(w, 100 * c->change);
	key(w, "delta", 0);
	num(w, c->delta);
	if (!isnan(c->per_call)) {
		key(w, "per_call", 0);
		num(w, c->per_call);
	}
	key(w, "runs", 0);
	jw_lit(w, "[");
	jw_u64(w, (uint64_t)c->nb);
	jw_lit(w, ",");
	jw_u64(w, (uint64_t)c->nc);
	jw_lit(w, "]");
	if (!metric_is_time(m)) {
		key(w, "varies", 0);
		if (c->varies)
			jw_lit(w, "true");
		else
			jw_lit(w, "false");
	}
	key(w, "checked", 0);
	if (!c->checked) {
		jw_lit(w, "false");
		return;
	}
	jw_lit(w, "true");
	key(w, "status", 0);
	jw_cstr(w, diff_status_name(c->status));
	key(w, "threshold", 0);
	num(w, c->threshold);
	key(w, "threshold_unit", 0);
	jw_cstr(w, c->relative ? "%" : metric_is_time(m) ? "ns" :
		   m == M_BYTES || m == M_PEAK ? "bytes" : "count");
	if (metric_is_time(m)) {
		key(w, "p_runs", 0);
		num(w, c->p_runs);
		key(w, "p_calls", 0);
		num(w, c->p_calls);
	}
	key(w, "why", 0);
	jw_cstr(w, c->why);
}

static void name(struct jw *w, const struct diff_result *r, const struct diff_name *d)
{
	static const char *const presence[] = { "both", "new", "gone" };
	int m, first = 1;

	jw_lit(w, "{\"kind\":");
	jw_cstr(w, sum_kind_name(d->kind));
	jw_lit(w, ",\"category\":");
	jw_cstr(w, d->cat);
	jw_lit(w, ",\"name\":");
	jw_cstr(w, d->name);
	jw_lit(w, ",\"presence\":");
	jw_cstr(w, presence[d->presence]);
	jw_lit(w, ",\"status\":");
	jw_cstr(w, diff_status_name(d->status));
	jw_lit(w, ",\"runs\":[");
	jw_u64(w, (uint64_t)d->in_base);
	jw_lit(w, ",");
	jw_u64(w, (uint64_t)d->in_cur);
	jw_lit(w, "],\"calls\":[");
	num(w, d->base_count);
	jw_lit(w, ",");
	num(w, d->cur_count);
	jw_lit(w, "]");
	if (d->renamed >= 0) {
		const struct diff_name *o = &r->names[d->renamed];
		jw_text(w, d->presence == DP_GONE ? ",\"renamed_to\":{\"category\":" :
						    ",\"renamed_from\":{\"category\":");
		jw_cstr(w, o->cat);
		jw_lit(w, ",\"name\":");
		jw_cstr(w, o->name);
		jw_lit(w, "}");
	}
	jw_lit(w, ",\"metrics\":{");
	for (m = 0; m < M_NMETRICS; m++) {
		const struct diff_cell *c = &d->m[m];
		if (!c->present)
			continue;
		key(w, metric_name(m), first);
		first = 0;
		jw_lit(w, "{");
		cell(w, m, c);
		jw_lit(w, "}");
	}
	jw_lit(w, "}}");
}

static void config(struct jw *w, const struct diff_config *cfg)
{
	size_t i;
	int m, first = 1;

	jw_lit(w, ",\"judged\":[");
	for (m = 0; m < M_NMETRICS; m++) {
		if (!(cfg->checked & METRIC_BIT(m)))
			continue;
		if (!first)
			jw_lit(w, ",");
		first = 0;
		jw_cstr(w, metric_name(m));
	}
	jw_lit(w, "],\"threshold_pct\":");
	if (cfg->has_global)
		num(w, cfg->global_pct);
	else
		jw_lit(w, "null");
	jw_lit(w, ",\"rules\":[");
	for (i = 0; i < cfg->nrules; i++) {
		const struct diff_rule *r = &cfg->rules[i];
		jw_text(w, i ? ",{\"metrics\":[" : "{\"metrics\":[");
		first = 1;
		for (m = 0; m < M_NMETRICS; m++) {
			if (!(r->metrics & METRIC_BIT(m)))
				continue;
			if (!first)
				jw_lit(w, ",");
			first = 0;
			jw_cstr(w, metric_name(m));
		}
		jw_lit(w, "],\"pattern\":");
		jw_cstr_or_null(w, r->pattern);
		jw_lit(w, ",\"value\":");
		num(w, r->value);
		jw_lit(w, ",\"relative\":");
		if (r->relative)
			jw_lit(w, "true}");
		else
			jw_lit(w, "false}");
	}
	jw_lit(w, "],\"alpha\":");
	num(w, cfg->alpha);
	jw_lit(w, ",\"alpha_calls\":");
	num(w, DIFF_ALPHA_CALLS);
	jw_lit(w, ",\"common_mode_removed\":");
	if (cfg->no_drift)
		jw_lit(w, "false");
	else
		jw_lit(w, "true");
	jw_lit(w, ",\"anchors\":[");
	for (i = 0; i < cfg->nanchor; i++) {
		if (i)
			jw_lit(w, ",");
		jw_cstr(w, cfg->anchor[i]);
	}
	jw_lit(w, "],\"same_machine\":");
	if (cfg->same_machine)
		jw_lit(w, "true");
	else
		jw_lit(w, "false");
}

int diff_write_json(const struct diff_result *r, const struct diff_config *cfg,
		    const struct diff_labels *l, long top, FILE *f)
{
	size_t *order = diff_order(r), i, others = 0;
	struct jw w;

	if (!order || jw_init(&w, f, 1 << 16)) {
		free(order);
		errno = ENOMEM;
		return -1;
	}
	jw_lit(&w, "{\"verdict\":");
	jw_cstr(&w, r->regression ? "regression" : "no regression");
	jw_lit(&w, ",\"regression\":");
	if (r->regression)
		jw_lit(&w, "true");
	else
		jw_lit(&w, "false");
	jw_lit(&w, ",\"base\":");
	side(&w, l->base, r->nbase);
	jw_lit(&w, ",\"current\":");
	side(&w, l->cur, r->ncur);
	config(&w, cfg);
	jw_lit(&w, ",\"measured_together\":");
	if (r->together)
		jw_lit(&w, "true");
	else
		jw_lit(&w, "false");
	jw_lit(&w, ",\"common_mode\":");
	if (r->drift_used && !isnan(r->common_change)) {
		jw_lit(&w, "{\"metric\":\"median\",\"change_pct\":");
		num(&w, 100 * r->common_change);
		jw_lit(&w, ",\"p_runs\":");
		num(&w, r->common_p);
		jw_lit(&w, "}");
	} else {
		jw_lit(&w, "null");
	}
	jw_lit(&w, ",\"warnings\":[");
	for (i = 0; i < r->nwarnings; i++) {
		if (i)
			jw_lit(&w, ",");
		jw_cstr(&w, r->warnings[i]);
	}
	jw_lit(&w, "],\"counts\":{\"regressions\":");
	jw_u64(&w, r->regressions);
	jw_lit(&w, ",\"improvements\":");
	jw_u64(&w, r->improvements);
	jw_lit(&w, ",\"unconfirmed\":");
	jw_u64(&w, r->unconfirmed);
	jw_lit(&w, ",\"unchanged\":");
	jw_u64(&w, r->unchanged);
	jw_lit(&w, ",\"new\":");
	jw_u64(&w, r->new_names);
	jw_lit(&w, ",\"gone\":");
	jw_u64(&w, r->gone_names);
	jw_lit(&w, ",\"ignored\":");
	jw_u64(&w, r->ignored);
	jw_lit(&w, "},\"names\":[\n");
	for (i = 0; i < r->nnames; i++) {
		const struct diff_name *d = &r->names[order[i]];
		int finding = d->status >= DS_UNCONFIRMED || d->presence != DP_BOTH;
		/* --top leaves out unremarkable names only */
		if (!finding && top > 0 && others++ >= (size_t)top)
			continue;
		if (i)
			jw_lit(&w, ",\n");
		name(&w, r, d);
	}
	jw_lit(&w, "\n]}\n");
	free(order);
	if (jw_finish(&w))
		return -1;
	return ferror(f) ? -1 : 0;
}

/* JUnit XML */

/* Text for an attribute or element: the five entities escaped, control characters and
 * bytes that are not UTF-8 as '?' (XML 1.0 cannot hold them). */
static void xml(FILE *f, const char *s)
{
	size_t n = strlen(s), i = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t len = utf8_seq_len((const unsigned char *)s + i, n - i);
		if (c < 0x80) {
			if (c == '&')
				fputs("&amp;", f);
			else if (c == '<')
				fputs("&lt;", f);
			else if (c == '>')
				fputs("&gt;", f);
			else if (c == '"')
				fputs("&quot;", f);
			else if (c == '\'')
				fputs("&apos;", f);
			else if (c < 0x20 && c != '\t' && c != '\n')
				fputc('?', f);
			else
				fputc(c, f);
			i++;
		} else if (len) {
			fwrite(s + i, 1, len, f);
			i += len;
		} else {
			fputc('?', f);
			i++;
		}
	}
}

static void testcase(FILE *f, const struct diff_name *d, const char *what)
{
	fputs("    <testcase classname=\"prof.", f);
	xml(f, d->cat);
	fputs("\" name=\"", f);
	xml(f, d->name);
	fputs(" ", f);
	xml(f, what);
	fputs("\" time=\"0\"", f);
}

int diff_write_junit(const struct diff_result *r, const struct diff_config *cfg,
		     const struct diff_labels *l, FILE *f)
{
	size_t i, tests = 0, failures = 0;
	int m;

	(void)cfg;
	for (i = 0; i < r->nnames; i++) {
		const struct diff_name *d = &r->names[i];
		if (d->presence != DP_BOTH) {
			tests++;
			failures += d->status == DS_REGRESSION;
			continue;
		}
		for (m = 0; m < M_NMETRICS; m++) {
			tests += d->m[m].checked;
			failures += d->m[m].checked && d->m[m].status == DS_REGRESSION;
		}
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<testsuites name=\"prof diff\" tests=\"%zu\" failures=\"%zu\" errors=\"0\">\n"
		   "  <testsuite name=\"prof diff\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
		   "skipped=\"0\">\n"
		   "    <properties>\n      <property name=\"base\" value=\"",
		tests, failures, tests, failures);
	xml(f, l->base);
	fprintf(f, "\"/>\n      <property name=\"base_runs\" value=\"%zu\"/>\n"
		   "      <property name=\"current\" value=\"", r->nbase);
	xml(f, l->cur);
	fprintf(f, "\"/>\n      <property name=\"current_runs\" value=\"%zu\"/>\n"
		   "    </properties>\n", r->ncur);
	for (i = 0; i < r->nnames; i++) {
		const struct diff_name *d = &r->names[i];
		char b[48], k[48], ch[48], th[48], msg[400];
		if (d->presence != DP_BOTH) {
			const char *what = d->presence == DP_NEW ? "(new)" : "(gone)";
			testcase(f, d, what);
			if (d->status == DS_REGRESSION) {
				fputs(">\n      <failure type=\"regression\" message=\"", f);
				xml(f, d->presence == DP_NEW ? "a new name" : "a vanished name");
				fputs("\"/>\n    </testcase>\n", f);
			} else {
				fputs("/>\n", f);
			}
			continue;
		}
		for (m = 0; m < M_NMETRICS; m++) {
			const struct diff_cell *c = &d->m[m];
			if (!c->checked)
				continue;
			testcase(f, d, metric_name(m));
			diff_fmt_value(b, sizeof(b), m, c->base);
			diff_fmt_value(k, sizeof(k), m, c->cur);
			diff_fmt_change(ch, sizeof(ch), c);
			diff_fmt_threshold(th, sizeof(th), m, c);
			snprintf(msg, sizeof(msg), "%s %s: %s -> %s (%s, threshold %s)%s%s",
				 metric_name(m), diff_status_name(c->status), b, k, ch, th,
				 c->why[0] ? ": " : "", c->why);
			if (c->status == DS_REGRESSION) {
				fputs(">\n      <failure type=\"regression\" message=\"", f);
				xml(f, msg);
				fputs("\"/>\n    </testcase>\n", f);
			} else {
				fputs(">\n      <system-out>", f);
				xml(f, msg);
				fputs("</system-out>\n    </testcase>\n", f);
			}
		}
	}
	fputs("    <system-out>", f);
	for (i = 0; i < r->nwarnings; i++) {
		fputs("WARNING: ", f);
		xml(f, r->warnings[i]);
		fputs("\n", f);
	}
	fputs("</system-out>\n  </testsuite>\n</testsuites>\n", f);
	return ferror(f) ? -1 : 0;
}
