/* prof diff: compare a baseline with current runs and say whether anything got slower
 * or hungrier (formats/perfcheck/diff.h). Exit status 0 no regression, 1 regression, 2 unusable
 * input. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cmd_args.h"
#include "collector/commands.h"
#include "formats/perfcheck/diff.h"

#define bad(...) arg_error("prof diff", __VA_ARGS__)

static void help(void)
{
	printf("usage: prof diff BASE CUR [--threshold PCT|METRIC=VALUE] [--metric LIST]\n"
	       "                 [--config FILE] [--top N] [--format text|markdown|json|junit]\n"
	       "                 [--no-drift] [--same-machine] [-o OUT]\n"
	       "\n"
	       "Compares the runs of BASE with those of CUR, name by name, and says which changes\n"
	       "are regressions. Each side is a raw capture, a summary (prof summary), or a\n"
	       "directory holding several of either: repeated runs, which time needs (at least\n"
	       "3 a side, 6 recommended).\n"
	       "\n"
	       "Metrics, per (category, name): count; median, p95, p99 and mean time per call;\n"
	       "total and self time per run; allocs and bytes (allocated by its calls and those\n"
	       "nested in them); for the program: common, wall (the run's duration), allocs,\n"
	       "bytes and peak (live heap bytes). Time is a regression when its change is beyond\n"
	       "the threshold and solid across runs (rank test) and across calls (quantile test),\n"
	       "after removing the change every name of a run shares (reported apart as the\n"
	       "program's \"common\"; judged when asked, and only when both sides were measured\n"
	       "together and every current run is beyond every base run: a slower machine looks\n"
	       "the same). Counts, allocations and bytes are exact: any change beyond their\n"
	       "threshold is one.\n"
	       "\n"
	       "  --metric LIST      metrics judged for every name (default median; groups:\n"
	       "                     time, exact, memory, all)\n"
	       "  --threshold PCT    the threshold of every metric, in percent (default 5 for\n"
	       "                     time, 0 for exact metrics)\n"
	       "  --threshold METRIC=VALUE  one metric's: 10%%, or an amount (2us, 0, 64K); a\n"
	       "                     threshold for an exact metric also makes it judged\n"
	       "  --config FILE      thresholds per metric and per name pattern, ignored names,\n"
	       "                     new or vanished names as regressions (docs/PERFCHECK.md)\n"
	       "  --top N            at most N names in each list of the report (0: all)\n"
	       "  --format FORMAT    text (default), markdown (a pull-request comment), json, or\n"
	       "                     junit (XML for CI dashboards: a test case per judged name\n"
	       "                     and metric)\n"
	       "  --no-drift         judge each name on its own change, the common-mode change\n"
	       "                     of its run included (sides measured interleaved on one\n"
	       "                     machine)\n"
	       "  --same-machine     judge whole-program time (common, wall) even when the sides\n"
	       "                     were not measured together, interleaved on one host (a\n"
	       "                     quiet, dedicated machine)\n"
	       "  -o, --output OUT   write the report to OUT instead of standard output\n"
	       "  --force-overwrite  replace OUT when it exists (else: an error, exit 2)\n"
	       "  -h, --help         this text\n"
	       "\n"
	       "Warns when the sides ran on different hosts, CPUs, clocks or settings, lost\n"
	       "events or came from damaged captures. New and vanished names are listed (with\n"
	       "a likely rename), not regressions unless the config says 'flag new' or 'flag\n"
	       "gone'. Exit status: 0 no regression; 1 regression; 2 bad arguments or an\n"
	       "unusable input. docs/PERFCHECK.md explains the statistics.\n");
}

/* --force-overwrite: OUT may replace an existing file */
static int force_overwrite;

struct diff_args {
	const char *side[2], *out, *config;
	const char *metrics;
	const char *thresholds[64];
	int nthresholds;
	long top;
	int no_drift, same_machine;
	enum diff_format format;
};

static int option(int argc, char **argv, int *i, struct diff_args *a)
{
	static const char *const formats[] = { "text", "markdown", "json", "junit" };
	const char *v;
	uint64_t n;
	int k;

	if (arg_value(argc, argv, i, "--threshold", &v)) {
		if (!v || !*v)
			return bad("--threshold needs a percentage or METRIC=VALUE");
		if (a->nthresholds == 64)
			return bad("too many --threshold options (use --config)");
		a->thresholds[a->nthresholds++] = v;
	} else if (arg_value(argc, argv, i, "--metric", &v)) {
		if (!v || !*v)
			return bad("--metric needs a list of metrics");
		a->metrics = v;
	} else if (arg_value(argc, argv, i, "--config", &v)) {
		if (!v || !*v)
			return bad("--config needs a file name");
		a->config = v;
	} else if (arg_value(argc, argv, i, "--top", &v)) {
		if (arg_number(v, 0, 1000000000, &n))
			return bad("--top needs a number of names (got '%s')", v ? v : "");
		a->top = (long)n;
	} else if (arg_value(argc, argv, i, "--format", &v)) {
		for (k = 0; k < 4 && v && strcmp(v, formats[k]); k++)
			;
		if (!v || k == 4)
			return bad("--format needs text, markdown, json or junit (got '%s')",
				   v ? v : "");
		a->format = (enum diff_format)k;
	} else if (!strcmp(argv[*i], "--no-drift")) {
		a->no_drift = 1;
	} else if (!strcmp(argv[*i], "--same-machine")) {
		a->same_machine = 1;
	} else if (arg_value(argc, argv, i, "-o", &v) || arg_value(argc, argv, i, "--output", &v)) {
		if (!v || !*v)
			return bad("-o needs a file name");
		a->out = v;
	} else if (!strcmp(argv[*i], "--force-overwrite")) {
		force_overwrite = 1;
	} else {
		return bad("unknown option '%s' (see prof diff --help)", argv[*i]);
	}
	return 0;
}

/* 0 to go on, -1 after --help, or the exit status 2. */
static int parse(int argc, char **argv, struct diff_args *a)
{
	int i, n = 0, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help();
			return -1;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			if ((rc = option(argc, argv, &i, a)))
				return rc;
		} else if (n == 2) {
			return bad("more than two sides given ('%s'); put repeated runs in a "
				   "directory", argv[i]);
		} else {
			a->side[n++] = argv[i];
		}
	}
	if (n < 2)
		return bad("needs BASE and CUR: captures, summaries or directories "
			   "(see prof diff --help)");
	return 0;
}

static int configure(const struct diff_args *a, struct diff_config *cfg)
{
	char err[512];
	int i;

	if (a->config && diff_config_read(cfg, a->config, err, sizeof(err)))
		return bad("%s", err);
	if (a->metrics && diff_config_metrics(cfg, a->metrics, err, sizeof(err)))
		return bad("--metric: %s", err);
	for (i = 0; i < a->nthresholds; i++)
		if (diff_config_threshold(cfg, a->thresholds[i], err, sizeof(err)))
			return bad("%s", err);
	if (a->no_drift)
		cfg->no_drift = 1;
	if (a->same_machine)
		cfg->same_machine = 1;
	return 0;
}

static int load(struct summary *s, const char *path)
{
	char err[1024];
	int rc = summary_load(s, path, err, sizeof(err));

	if (rc == 2)
		return bad("%s", err);
	if (rc == 1)
		fprintf(stderr, "prof diff: warning: %s\n", err);
	if (!s->nruns)
		return bad("%s: holds no runs", path);
	return 0;
}

static int save(const char *path, const char *buf, size_t len)
{
	return arg_save("prof diff", path, buf, len, force_overwrite);
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args a = { .format = DIFF_TEXT };
	struct diff_config cfg;
	struct summary base, cur;
	struct diff_result r;
	struct diff_labels labels;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = parse(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	diff_config_init(&cfg);
	summary_init(&base);
	summary_init(&cur);
	base.tool = cur.tool = PROF_VERSION;
	if ((rc = configure(&a, &cfg)) || (rc = load(&base, a.side[0])) ||
	    (rc = load(&cur, a.side[1])))
		goto out;
	if (diff_compare(&base, &cur, &cfg, &r)) {
		rc = bad("out of memory");
		goto out;
	}
	labels.base = a.side[0];
	labels.cur = a.side[1];
	f = a.out ? open_memstream(&buf, &len) : stdout;
	if (!f) {
		rc = bad("out of memory");
	} else {
		rc = r.regression ? 1 : 0;
		if (diff_write(&r, &cfg, &labels, a.format, a.top, f) || fflush(f))
			rc = bad("writing the report: %m");
		if (a.out && fclose(f) && rc != 2)
			rc = bad("out of memory");
		if (a.out && rc != 2 && save(a.out, buf, len))
			rc = 2;
		free(buf);
	}
	diff_result_free(&r);
out:
	summary_free(&base);
	summary_free(&cur);
	diff_config_free(&cfg);
	return rc;
}
