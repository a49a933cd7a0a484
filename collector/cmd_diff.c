/* prof diff: compare a baseline with current runs and say whether anything got slower
 * or hungrier (formats/perfcheck/diff.h). Exit status 0 no regression, 1 regression, 2 unusable
 * input. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "collector/output/cmd_save.h"
#include "formats/perfcheck/diff.h"

#define bad(...) opt_error("diff", __VA_ARGS__)

struct diff_args {
	const char *side[2], *out, *config;
	const char *metrics;
	const char *thresholds[64];
	size_t nthresholds;
	uint64_t top;
	int no_drift, same_machine;
	int format; /* enum diff_format */
	int force_overwrite; /* OUT may replace an existing file */
	uint64_t rank, base_rank; /* --rank, --base-rank + 1; 0: not given */
	const char *job;          /* with --rank: the job's capture(s), read as one */
	char label[2][64];        /* with --rank: "rank R", "rank Q" or "the other ranks" */
};

/* --rank R, --base-rank Q: kept as R + 1 (0: not given). */
static int rank_option(const struct opt *o, const char *v, void *dest)
{
	uint64_t n;
	(void)o;
	if (opt_number(v, 0, INT32_MAX - 1, &n))
		return -1;
	*(uint64_t *)dest = n + 1;
	return 0;
}

/* --threshold, as often as given: the values are read by configure(). */
static int add_threshold(const struct opt *o, const char *v, void *dest)
{
	struct diff_args *a = dest;

	(void)o;
	if (a->nthresholds == ARRAY_LEN(a->thresholds))
		return bad("too many --threshold options (use --config)");
	a->thresholds[a->nthresholds++] = v;
	return 0;
}

static const char *const formats[] = { "text", "markdown", "json", "junit" }; /* enum diff_format */

/* 0 to go on, OPT_HELP after --help, or the exit status 2. */
static int parse(int argc, char **argv, struct diff_args *a)
{
	char **pos;
	int rc, npos;
	const struct opt opts[] = {
		{ .name = "metric", .kind = OPT_TEXT, .value = "LIST", .dest = &a->metrics,
		  .needs = "a list of metrics",
		  .help = "metrics judged for every name (default median; groups:\n"
			  "time, exact, memory, all)" },
		{ .name = "threshold", .kind = OPT_CALL, .value = "PCT|METRIC=VALUE",
		  .call = add_threshold, .dest = a, .needs = "a percentage or METRIC=VALUE",
		  .help = "PCT: the threshold of every metric, in percent (default 5\n"
			  "for time, 0 for exact metrics); METRIC=VALUE: one metric's:\n"
			  "10%, or an amount (2us, 0, 64K); a threshold for an exact\n"
			  "metric also makes it judged. May be given more than once" },
		{ .name = "config", .kind = OPT_TEXT, .value = "FILE", .dest = &a->config,
		  .needs = "a file name",
		  .help = "thresholds per metric and per name pattern, ignored names,\n"
			  "new or vanished names as regressions (docs/PERFCHECK.md)" },
		{ .name = "top", .kind = OPT_NUMBER, .value = "N", .dest = &a->top, .max = 1000000000,
		  .needs = "a number of names",
		  .help = "at most N names in each list of the report (0: all)" },
		{ .name = "format", .kind = OPT_CHOICE, .value = "FORMAT", .dest = &a->format,
		  .choices = formats, .nchoices = ARRAY_LEN(formats),
		  .help = "text (default), markdown (a pull-request comment), json, or\n"
			  "junit (XML for CI dashboards: a test case per judged name\n"
			  "and metric)" },
		{ .name = "no-drift", .kind = OPT_FLAG, .dest = &a->no_drift,
		  .help = "judge each name on its own change, the common-mode change\n"
			  "of its run included (sides measured interleaved on one\n"
			  "machine)" },
		{ .name = "same-machine", .kind = OPT_FLAG, .dest = &a->same_machine,
		  .help = "judge whole-program time (common, wall) even when the sides\n"
			  "were not measured together, interleaved on one host (a\n"
			  "quiet, dedicated machine)" },
		{ .name = "rank", .kind = OPT_CALL, .value = "R", .call = rank_option,
		  .dest = &a->rank, .needs = "a rank (0 or more)",
		  .help = "compare ranks of one job instead (CAPTURE... as prof report\n"
			  "reads them): rank R's steps (the steps prof report's \"Steps\n"
			  "across ranks\" compares) as the current runs, the other ranks'\n"
			  "steps as the base runs (at most 400 a side, spread evenly)" },
		{ .name = "base-rank", .kind = OPT_CALL, .value = "Q", .call = rank_option,
		  .dest = &a->base_rank, .needs = "a rank (0 or more)",
		  .help = "with --rank: rank Q's steps as the base runs, not the others'" },
		{ .name = "output", .letter = 'o', .kind = OPT_TEXT, .value = "OUT", .dest = &a->out,
		  .needs = "a file name",
		  .help = "write the report to OUT instead of standard output" },
		{ .name = "force-overwrite", .kind = OPT_FLAG, .dest = &a->force_overwrite,
		  .help = "replace OUT when it exists (else: an error, exit 2)" },
	};
	const struct opt_command c = {
		.name = "diff",
		.usage = "prof diff BASE CUR [--threshold PCT|METRIC=VALUE] [--metric LIST]\n"
			 "                 [--config FILE] [--top N] [--format text|markdown|json|junit]\n"
			 "                 [--no-drift] [--same-machine] [-o OUT]\n"
			 "       prof diff CAPTURE... --rank R [--base-rank Q] [options as above]",
		.about = "Compares the runs of BASE with those of CUR, name by name, and says which changes\n"
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
			 "threshold is one.\n",
		.after = "Warns when the sides ran on different hosts, CPUs, clocks or settings, lost\n"
			 "events or came from damaged captures. New and vanished names are listed (with\n"
			 "a likely rename), not regressions unless the config says 'flag new' or 'flag\n"
			 "gone'. Exit status: 0 no regression; 1 regression; 2 bad arguments or an\n"
			 "unusable input. docs/PERFCHECK.md explains the statistics.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};

	if ((rc = opt_parse(&c, argc, argv, &pos, &npos)))
		return rc;
	if (a->base_rank && !a->rank)
		return bad("--base-rank needs --rank");
	if (a->rank) {
		if (a->base_rank == a->rank)
			return bad("--rank and --base-rank name the same rank");
		snprintf(a->label[1], sizeof a->label[1], "rank %llu",
			 (unsigned long long)a->rank - 1);
		if (a->base_rank)
			snprintf(a->label[0], sizeof a->label[0], "rank %llu",
				 (unsigned long long)a->base_rank - 1);
		else
			snprintf(a->label[0], sizeof a->label[0], "the other ranks");
		a->side[0] = a->label[0];
		a->side[1] = a->label[1];
		return opt_capture_parts(&c, pos, npos, &a->job);
	}
	if (npos > 2)
		return bad("more than two sides given ('%s'); put repeated runs in a "
			   "directory", pos[2]);
	if (npos < 2)
		return bad("needs BASE and CUR: captures, summaries or directories "
			   "(see prof diff --help)");
	a->side[0] = pos[0];
	a->side[1] = pos[1];
	return 0;
}

static int configure(const struct diff_args *a, struct diff_config *cfg)
{
	char err[512];
	size_t i;

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

/* --rank: both sides from the steps of one job's ranks. */
static int load_ranks(const struct diff_args *a, struct summary *base, struct summary *cur)
{
	char err[1024];
	int rc = summary_add_rank_steps(base, cur, a->job, opt_capture_shown,
					(int32_t)(a->rank - 1),
					(int32_t)a->base_rank - 1, err, sizeof err);
	if (rc == 2)
		return bad("%s", err);
	if (rc == 1)
		fprintf(stderr, "prof diff: warning: %s\n", err);
	return 0;
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
	if ((rc = configure(&a, &cfg)) ||
	    (rc = a.rank ? load_ranks(&a, &base, &cur)
			 : load(&base, a.side[0]) || load(&cur, a.side[1]) ? 2 : 0))
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
		if (diff_write(&r, &cfg, &labels, (enum diff_format)a.format, (long)a.top, f) || fflush(f))
			rc = bad("writing the report: %m");
		if (a.out && fclose(f) && rc != 2)
			rc = bad("out of memory");
		if (a.out && rc != 2 && cmd_save("diff", a.out, buf, len, a.force_overwrite))
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
