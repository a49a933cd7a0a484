/* prof export: the Chrome trace again from a raw capture, or its call stacks folded for
 * flame graphs. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/commands.h"
#include "collector/export_parquet.h"
#include "collector/options.h"
#include "collector/progress.h"
#include "collector/output/cmd_save.h"
#include "formats/export/folded.h"
#include "collector/output/outfile.h"
#include "formats/model/outputs.h"

#define bad(...) opt_error("export", __VA_ARGS__)

enum export_format { EXPORT_CHROME, EXPORT_FOLDED, EXPORT_PARQUET, EXPORT_KINETO };

struct export_args {
	const char *capture, *out;
	uint64_t max_events;
	enum export_format format;
	struct folded_options folded;
	int force_overwrite; /* OUT may replace an existing file */
	int alloc;           /* --trace-alloc: enum in struct chrome_options */
};

/* enum order */
static const char *const formats[] = { "chrome", "folded", "parquet", "kineto" };
static const char *const alloc_views[] = { "auto", "all" };
/* in enum folded_weight order, after FOLDED_AUTO */
static const char *const weights[] = { "time", "bytes", "count" };

/* 0 to go on, OPT_HELP after --help, or the exit status 2. */
static int parse(int argc, char **argv, struct export_args *a)
{
	int format = EXPORT_CHROME, weight = -1, alloc = -1, rc, npos;
	char **pos, max_help[1024];

	snprintf(max_help, sizeof(max_help),
		 "chrome: keep at most N trace events (default %llu).\n"
		 "Browsers fail on traces of 1-2 GB; beyond N, user ranges,\n"
		 "marks, steps, counters and lost markers are all kept and\n"
		 "the shortest other slices are left out\n"
		 "(otherData.json_rule says which); the live-heap counter\n"
		 "is thinned to at most N/4 points. `prof report` and the\n"
		 "capture still have every event.",
		 (unsigned long long)CHROME_DEFAULT_MAX_EVENTS);
	const struct opt opts[] = {
		{ .name = "output", .letter = 'o', .kind = OPT_TEXT, .value = "OUT", .dest = &a->out,
		  .needs = "a file name",
		  .help = "the output file (chrome: FILE with .prof replaced by .json\n"
			  "by default; folded: standard output by default); parquet:\n"
			  "the output directory (FILE with .prof replaced by .parquet)" },
		{ .name = "force-overwrite", .kind = OPT_FLAG, .dest = &a->force_overwrite,
		  .help = "replace OUT when it exists (else: an error, exit 2)" },
		{ .name = "format", .kind = OPT_CHOICE, .value = "FORMAT", .dest = &format,
		  .choices = formats, .nchoices = ARRAY_LEN(formats),
		  .help = "chrome (default), folded, parquet or kineto" },
		{ .name = "max-events", .kind = OPT_NUMBER, .value = "N", .dest = &a->max_events,
		  .min = 1, .max = UINT64_MAX, .needs = "a positive number", .help = max_help },
		{ .name = "trace-alloc", .kind = OPT_CHOICE, .value = "WHICH", .dest = &alloc,
		  .choices = alloc_views, .nchoices = ARRAY_LEN(alloc_views),
		  .help = "chrome: allocator calls in the timeline (default: as the\n"
			  "session chose, PROFILER_TRACE_ALLOC). auto:\n"
			  "allocations of 1 MiB or more and their releases, failed\n"
			  "ones and calls of 20 us or more; the rest as the\n"
			  "\"live heap bytes\" and \"allocator calls/s\" counters.\n"
			  "all: every call (PROFILER_TRACE_ALLOC=all)" },
		{ .name = "weight", .kind = OPT_CHOICE, .value = "WEIGHT", .dest = &weight,
		  .choices = weights, .nchoices = ARRAY_LEN(weights),
		  .help = "folded: what VALUE counts. time: nanoseconds in the calls,\n"
			  "less the calls nested in them that have lines of their\n"
			  "own (a frame's width is then its calls' time); bytes:\n"
			  "bytes the allocations asked for; count: calls. Default:\n"
			  "time when calls other than allocations have stacks\n"
			  "(PROFILER_STACK=all), else bytes" },
		{ .name = "all-processes", .kind = OPT_FLAG, .dest = &a->folded.all_processes,
		  .help = "the launchers too: by default an image that exec'd (a\n"
			  "shim, env, sh -c 'exec ...') is folded into the image it\n"
			  "became, and a helper process such an image forked and\n"
			  "waited for is folded into it (docs/FORMATS.md)" },
		{ .name = "threads", .kind = OPT_FLAG, .dest = &a->folded.threads,
		  .help = "folded: a frame \"thread name (tid)\" below the process" },
	};
	const struct opt_command c = {
		.name = "export",
		.usage = "prof export [CAPTURE...] [-o OUT.json] [--max-events N] [--trace-alloc all]\n"
			 "                   [--all-processes]\n"
			 "       prof export CAPTURE... --format kineto [-o OUT.pt.trace.json]\n"
			 "                   [--max-events N] [--trace-alloc all]\n"
			 "       prof export FILE.prof --format folded [--weight time|bytes|count]\n"
			 "                   [--threads] [--all-processes] [-o OUT]\n"
			 "       prof export CAPTURE... --format parquet [-o DIR] [--all-processes]",
		.about = "--format chrome (the default) writes the Chrome Trace Event JSON of a raw\n"
			 "capture, for ui.perfetto.dev or chrome://tracing: process and thread names, one\n"
			 "slice per call or range (with bytes and pointers for allocator calls), marks and\n"
			 "steps as instants, counters, a \"live heap bytes\" counter per process,\n"
			 "lost-event markers, and otherData with the session's facts.\n"
			 "CAPTURE is a .prof file, or a capture in parts: its directory, or some of its\n"
			 "parts in order; without one, the newest capture in the current directory.\n"
			 "\n"
			 "--format kineto writes the same trace as the PyTorch profiler (Kineto) writes\n"
			 "its own, for TensorBoard's PyTorch profiler plugin and Holistic Trace Analysis:\n"
			 "cpu_op, user_annotation, cuda_runtime, kernel, gpu_memcpy and gpu_memset slices,\n"
			 "allocator calls as [memory] instants, a ProfilerStep#N slice per step, GPU work\n"
			 "on pid = device and tid = stream, distributedInfo for a rank. TensorBoard reads\n"
			 "files named WORKER.pt.trace.json from its --logdir's run folders.\n"
			 "\n"
			 "--format folded writes the call stacks recorded with PROFILER_STACK=alloc or all\n"
			 "as folded stacks for flame graphs (flamegraph.pl, speedscope, inferno): one line\n"
			 "\"process (pid);outermost frame;...;innermost frame;call VALUE\" per distinct\n"
			 "stack, where call is the allocator function or the traced function. Calls\n"
			 "without a stack are left out. Frames read \"function (file:line)\"; ';' in a\n"
			 "name becomes ':'.\n"
			 "\n"
			 "--format parquet writes a directory of Parquet files for DuckDB, Spark, Trino or\n"
			 "Dask: events.parquet (every event, one row each), processes, captures, rows,\n"
			 "ranks, steps and across_ranks (the tables); scripts/sql/straggler.sql computes\n"
			 "the straggler table from the events. It runs python3 (or $PROF_PYTHON) with\n"
			 "pyarrow.\n",
		.after = "Exit status: 0 ok; 1 the capture is damaged (the output covers every complete\n"
			 "frame before the damage, which is named on standard error); 2 bad arguments, an\n"
			 "unusable file, or (folded) a capture without call stacks. docs/FORMATS.md\n"
			 "describes the size rule.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};

	if ((rc = opt_parse(&c, argc, argv, &pos, &npos)))
		return rc;
	if (npos > 1 && !a->out) /* no one name to put the output beside */
		return bad("several captures or parts: name the output with -o OUT");
	if ((rc = opt_capture_parts(&c, pos, npos, &a->capture)))
		return rc;
	a->format = (enum export_format)format;
	a->alloc = alloc < 0 ? CHROME_ALLOC_AS_CAPTURED : alloc ? CHROME_ALLOC_ALL : CHROME_ALLOC_AUTO;
	if (weight >= 0)
		a->folded.weight = (enum folded_weight)(weight + 1);
	if ((a->format == EXPORT_CHROME || a->format == EXPORT_KINETO) &&
	    (weight >= 0 || a->folded.threads))
		return bad("%s needs --format folded", weight >= 0 ? "--weight" : "--threads");
	if (a->format == EXPORT_FOLDED && a->max_events)
		return bad("--max-events applies to --format chrome only");
	return 0;
}

/* FILE.prof -> FILE.json; any other name (a directory: DIR/ -> DIR.json) gets .json
 * appended (ext: .json, or .parquet). */
static char *default_out(const char *capture, const char *ext)
{
	size_t n = strlen(capture);
	char *s = malloc(n + 16);

	if (!s)
		return NULL;
	while (n > 1 && capture[n - 1] == '/')
		n--;
	memcpy(s, capture, n);
	s[n] = '\0';
	if (n > 5 && !strcmp(s + n - 5, ".prof"))
		s[n - 5] = '\0';
	strcat(s, ext);
	return s;
}

static int save(const struct export_args *a, const char *buf, size_t len)
{
	return cmd_save("export", a->out, buf, len, a->force_overwrite);
}

/* The trace goes to a new temporary file beside OUT, renamed into place once complete:
 * nothing at OUT is ever opened (collector/output/outfile.h). */
static int export_chrome(struct export_args *a, struct output_summary *sum, char *err,
			 size_t errlen)
{
	char tmp[4352];
	int rc = cmd_output_ok("export", a->out, a->force_overwrite);
	int fd = rc ? -1 : outfile_temp(a->out, tmp, sizeof(tmp));
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (rc)
		return -2;
	if (!f) {
		snprintf(err, errlen, "%s: %s", a->out, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return 2;
	}
	struct chrome_options o = {.max_events = a->max_events,
				   .all_processes = a->folded.all_processes,
				   .alloc = a->alloc,
				   .kineto = a->format == EXPORT_KINETO};
	progress_start("prof export");
	rc = chrome_export_opts(a->capture, a->out, f, &o, sum,
			       err, errlen);
	progress_end();
	if (rc == 2) {
		unlink(tmp);
		return 2;
	}
	if (cmd_place("export", tmp, a->out, a->force_overwrite))
		return -2;
	return rc;
}

/* Folded stacks go to memory first when OUT is a file, so an unusable capture (or one
 * without stacks) leaves no empty OUT behind. */
static int export_folded(struct export_args *a)
{
	struct folded_summary sum;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *out = a->out ? open_memstream(&buf, &len) : stdout;
	int rc;

	if (!out)
		return bad("out of memory");
	progress_start("prof export");
	rc = folded_write(a->capture, out, &a->folded, &sum, err, sizeof(err));
	progress_end();
	if (a->out && fclose(out) && rc != 2) {
		snprintf(err, sizeof(err), "out of memory");
		rc = 2;
	}
	if (rc == 2) {
		free(buf);
		return bad("%s", err);
	}
	if (a->out) {
		int bad_write = save(a, buf, len);
		free(buf);
		if (bad_write)
			return 2;
		printf("%s: %llu stacks of %llu calls, weight %s (total %llu) in %s\n",
		       opt_capture_shown,
		       (unsigned long long)sum.lines, (unsigned long long)sum.calls,
		       folded_weight_name(sum.weight), (unsigned long long)sum.total, a->out);
	} else {
		free(buf);
	}
	if (rc == 1)
		bad("%s", err);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = { 0 };
	struct output_summary sum;
	char err[512], *made = NULL;
	int rc = parse(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (a.format == EXPORT_FOLDED)
		return export_folded(&a);
	if (!a.out && !(a.out = made = default_out(opt_capture_shown,
						   a.format == EXPORT_PARQUET  ? ".parquet"
						   : a.format == EXPORT_KINETO ? ".pt.trace.json"
									       : ".json")))
		return bad("out of memory");
	if (a.format == EXPORT_PARQUET) {
		rc = export_parquet(a.capture, opt_capture_shown, a.out, a.force_overwrite,
				    a.folded.all_processes);
		free(made);
		return rc;
	}
	rc = export_chrome(&a, &sum, err, sizeof(err));
	if (rc == -2) { /* the line is written */
		free(made);
		return 2;
	}
	if (rc == 2) {
		free(made);
		return bad("%s", err);
	}
	printf("%s: %llu events, %llu lost, %llu process%s; trace %s holds %llu events",
	       opt_capture_shown,
	       (unsigned long long)sum.events, (unsigned long long)sum.lost,
	       (unsigned long long)sum.processes, sum.processes == 1 ? "" : "es", a.out,
	       (unsigned long long)sum.json_events);
	if (sum.json_dropped)
		printf(" (%llu short slices left out by the size rule, see otherData.json_rule)",
		       (unsigned long long)sum.json_dropped);
	printf("\n");
	if (rc == 1)
		bad("%s", err);
	free(made);
	return rc;
}
