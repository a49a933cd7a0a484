/* What prof diff judges and how strictly: --metric, --threshold and the config file.
 *
 *   # comment
 *   metric median,p95              what is judged for every name (as --metric)
 *   threshold METRIC [PATTERN] VALUE
 *   ignore PATTERN                 names left out of the comparison
 *   anchor PATTERN                 take the common-mode change from these names only
 *                                  (names the change under test cannot touch)
 *   flag new|gone                  a new or a vanished name is a regression
 *   alpha P                        significance level across runs (default 0.05)
 *   drift off                      judge names without removing the common-mode change
 *   same-machine yes               judge whole-program time even when the sides were not
 *                                  measured together (interleaved on one host)
 *
 * METRIC is a metric or a group (time, exact, memory, all); VALUE is a percentage
 * ("10%") or an amount in the metric's unit ("0", "2us", "64K"). A threshold line for
 * an exact metric (count, allocs, bytes, peak) also makes it judged for the names it
 * matches. PATTERN is a glob over the name or "category=name"; tokens may be quoted. */
#define _GNU_SOURCE /* strdup */
#include "formats/perfcheck/diff.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[M_NMETRICS] = {
	"median", "p95",  "p99",   "mean",   "total", "self",
	"common", "wall", "count", "allocs", "bytes", "peak",
};

const char *metric_name(int m)
{
	return m >= 0 && m < M_NMETRICS ? metric_names[m] : "?";
}

unsigned metric_set(const char *name)
{
	int m;

	if (!strcmp(name, "time"))
		return METRICS_TIME;
	if (!strcmp(name, "exact"))
		return METRICS_EXACT;
	if (!strcmp(name, "memory"))
		return METRIC_BIT(M_ALLOCS) | METRIC_BIT(M_BYTES) | METRIC_BIT(M_PEAK);
	if (!strcmp(name, "all"))
		return METRICS_TIME | METRICS_EXACT;
	for (m = 0; m < M_NMETRICS; m++)
		if (!strcmp(name, metric_names[m]))
			return METRIC_BIT(m);
	return 0;
}

void diff_config_init(struct diff_config *c)
{
	memset(c, 0, sizeof(*c));
	c->checked = METRICS_DEFAULT;
	c->alpha = DIFF_DEFAULT_ALPHA;
}

void diff_config_free(struct diff_config *c)
{
	size_t i;

	for (i = 0; i < c->nrules; i++)
		free(c->rules[i].pattern);
	for (i = 0; i < c->nignore; i++)
		free(c->ignore[i]);
	for (i = 0; i < c->nanchor; i++)
		free(c->anchor[i]);
	free(c->rules);
	free(c->ignore);
	free(c->anchor);
	memset(c, 0, sizeof(*c));
}

int diff_pattern_match(const char *pattern, const char *cat, const char *name)
{
	char buf[512];

	if (!fnmatch(pattern, name, 0))
		return 1;
	if ((size_t)snprintf(buf, sizeof(buf), "%s=%s", cat, name) >= sizeof(buf))
		return 0;
	return !fnmatch(pattern, buf, 0);
}

int diff_config_metrics(struct diff_config *c, const char *list, char *err, size_t errlen)
{
	char *copy = strdup(list), *tok, *save = NULL;
	unsigned set = 0;

	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		unsigned m = metric_set(tok);
		if (!m) {
			snprintf(err, errlen,
				 "unknown metric '%s' (median, p95, p99, mean, total, self, "
				 "common, wall, count, allocs, bytes, peak, or time, exact, "
				 "memory, all)", tok);
			free(copy);
			return -1;
		}
		set |= m;
	}
	free(copy);
	if (!set) {
		snprintf(err, errlen, "no metric named in '%s'", list);
		return -1;
	}
	c->checked = c->metrics_given ? c->checked | set : set;
	c->metrics_given = 1;
	return 0;
}

/* "10%", "10", "2us", "1.5ms", "64K", "1M": a percentage when relative is asked or a '%'
 * ends it; else an amount (time suffixes ns/us/ms/s; byte suffixes K/M/G). */
static int parse_value(const char *v, int pct_default, int *relative, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (end == v || errno || x < 0 || isnan(x) || isinf(x))
		return -1;
	*relative = pct_default;
	if (!strcmp(end, "%")) {
		*relative = 1;
	} else if (!*end) {
		/* a plain number */
	} else if (pct_default) {
		return -1;
	} else if (!strcmp(end, "ns")) {
	} else if (!strcmp(end, "us")) {
		x *= 1e3;
	} else if (!strcmp(end, "ms")) {
		x *= 1e6;
	} else if (!strcmp(end, "s")) {
		x *= 1e9;
	} else if (!strcmp(end, "K") || !strcmp(end, "KiB")) {
		x *= 1024;
	} else if (!strcmp(end, "M") || !strcmp(end, "MiB")) {
		x *= 1024 * 1024;
	} else if (!strcmp(end, "G") || !strcmp(end, "GiB")) {
		x *= 1024.0 * 1024 * 1024;
	} else {
		return -1;
	}
	*out = x;
	return 0;
}

static int add_rule(struct diff_config *c, unsigned metrics, const char *pattern, int relative,
		    double value)
{
	struct diff_rule *r = realloc(c->rules, (c->nrules + 1) * sizeof(*r));

	if (!r)
		return -1;
	c->rules = r;
	r = &r[c->nrules];
	r->metrics = metrics;
	r->pattern = pattern ? strdup(pattern) : NULL;
	r->relative = relative;
	r->value = value;
	if (pattern && !r->pattern)
		return -1;
	c->nrules++;
	return 0;
}

int diff_config_threshold(struct diff_config *c, const char *spec, char *err, size_t errlen)
{
	const char *eq = strchr(spec, '=');
	char name[32];
	unsigned set;
	int relative;
	double v;

	if (!eq) {
		if (parse_value(spec, 1, &relative, &v)) {
			snprintf(err, errlen,
				 "--threshold needs a percentage or METRIC=VALUE (got '%s')", spec);
			return -1;
		}
		c->has_global = 1;
		c->global_pct = v;
		return 0;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(eq - spec), spec);
	set = metric_set(name);
	if (!set || parse_value(eq + 1, 0, &relative, &v)) {
		snprintf(err, errlen, "--threshold %s: %s", spec,
			 set ? "the value must be like 10%, 0, 2us or 64K" : "unknown metric");
		return -1;
	}
	if (add_rule(c, set, NULL, relative, v)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* Splits a line into at most 8 tokens, in place; "..." quotes one (\" and \\ inside).
 * Returns the count, or -1 for an unterminated quote. */
static int tokens(char *s, char **tok)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
			s++;
		if (!*s || *s == '#')
			return n;
		if (n == 8)
			return n;
		if (*s == '"') {
			char *o = ++s;
			tok[n++] = o;
			while (*s && *s != '"') {
				if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
					s++;
				*o++ = *s++;
			}
			if (*s != '"')
				return -1;
			s++;
			*o = 0;
			continue;
		}
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
			s++;
		if (*s)
			*s++ = 0;
	}
}

static int line(struct diff_config *c, char **t, int n, char *why, size_t len)
{
	int relative;
	double v;
	unsigned set;

	if (!strcmp(t[0], "threshold")) {
		if (n != 3 && n != 4)
			return snprintf(why, len, "threshold METRIC [PATTERN] VALUE"), -1;
		set = metric_set(t[1]);
		if (!set)
			return snprintf(why, len, "unknown metric '%s'", t[1]), -1;
		if (parse_value(t[n - 1], 0, &relative, &v))
			return snprintf(why, len, "bad value '%s' (like 10%%, 0, 2us or 64K)",
					t[n - 1]), -1;
		if (add_rule(c, set, n == 4 ? t[2] : NULL, relative, v))
			return snprintf(why, len, "out of memory"), -1;
		return 0;
	}
	if (!strcmp(t[0], "metric")) {
		if (n != 2)
			return snprintf(why, len, "metric LIST"), -1;
		return diff_config_metrics(c, t[1], why, len);
	}
	if (!strcmp(t[0], "ignore") || !strcmp(t[0], "anchor")) {
		int ig = t[0][0] == 'i';
		char ***list = ig ? &c->ignore : &c->anchor;
		size_t *count = ig ? &c->nignore : &c->nanchor;
		char **l;
		if (n != 2)
			return snprintf(why, len, "%s PATTERN", t[0]), -1;
		l = realloc(*list, (*count + 1) * sizeof(*l));
		if (l)
			*list = l;
		if (!l || !(l[*count] = strdup(t[1])))
			return snprintf(why, len, "out of memory"), -1;
		(*count)++;
		return 0;
	}
	if (!strcmp(t[0], "flag")) {
		if (n == 2 && !strcmp(t[1], "new"))
			c->flag_new = 1;
		else if (n == 2 && !strcmp(t[1], "gone"))
			c->flag_gone = 1;
		else
			return snprintf(why, len, "flag new|gone"), -1;
		return 0;
	}
	if (!strcmp(t[0], "alpha")) {
		char *end;
		v = n == 2 ? strtod(t[1], &end) : -1;
		if (n != 2 || *end || !(v > 0 && v < 1))
			return snprintf(why, len, "alpha P, 0 < P < 1"), -1;
		c->alpha = v;
		return 0;
	}
	if (!strcmp(t[0], "drift")) {
		if (n == 2 && (!strcmp(t[1], "off") || !strcmp(t[1], "on"))) {
			c->no_drift = !strcmp(t[1], "off");
			return 0;
		}
		return snprintf(why, len, "drift on|off"), -1;
	}
	if (!strcmp(t[0], "same-machine")) {
		if (n == 2 && (!strcmp(t[1], "yes") || !strcmp(t[1], "no"))) {
			c->same_machine = !strcmp(t[1], "yes");
			return 0;
		}
		return snprintf(why, len, "same-machine yes|no"), -1;
	}
	return snprintf(why, len,
			"unknown setting '%s' (threshold, metric, ignore, anchor, flag, alpha, "
			"drift, same-machine)",
			t[0]), -1;
}

int diff_config_read(struct diff_config *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char buf[1024], why[256], *t[8];
	int lineno = 0, n;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(buf, sizeof(buf), f)) {
		lineno++;
		n = tokens(buf, t);
		if (n == 0)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "%s:%d: unterminated quote", path, lineno);
			fclose(f);
			return -1;
		}
		if (line(c, t, n, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}
