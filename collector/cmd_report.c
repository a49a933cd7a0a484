/* prof report: the tables again from a raw capture, or its calls grouped by stack. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "collector/progress.h"
#include "collector/output/cmd_save.h"
#include "formats/model/outputs.h"
#include "formats/tables/table_stacks.h"

struct report_args {
	const char *capture, *out;
	struct table_options opt;
	unsigned stack_frames; /* --group-by stack[:N]; 0: the usual tables */
	int force_overwrite;   /* OUT may replace an existing file */
};

#define bad(...) opt_error("report", __VA_ARGS__)

/* "stack", "stack:N" or "shape"; 0, or -1 when v is none of them. */
static int group_by(const struct opt *o, const char *v, void *dest)
{
	uint64_t n = TABLE_STACKS_DEFAULT_FRAMES;

	(void)o;
	if (!strcmp(v, "shape")) {
		*(unsigned *)dest = TABLE_STACKS_BY_SHAPE;
		return 0;
	}
	if (strncmp(v, "stack", 5) || (v[5] && v[5] != ':'))
		return -1;
	if (v[5] && opt_number(v + 6, 1, TABLE_STACKS_MAX_FRAMES, &n))
		return -1;
	*(unsigned *)dest = (unsigned)n;
	return 0;
}

/* in enum table_sort and enum table_format order */
static const char *const sorts[] = { "total", "self", "count", "avg", "max", "cpu_mem",
				     "self_cpu_mem" };
static const char *const formats[] = { "text", "csv", "json" };

/* 0 to go on, OPT_HELP after --help, or the exit status 2. */
static int parse(int argc, char **argv, struct report_args *a)
{
	int sort = a->opt.sort, format = a->opt.format, rc, npos;
	uint64_t top = (uint64_t)a->opt.top;
	char **pos, group_help[1024], group_needs[128];

	snprintf(group_help, sizeof(group_help),
		 "rows by call stack instead (PyTorch's\n"
		 "key_averages(group_by_stack_n=N)): one row per category,\n"
		 "name and innermost N frames (default %d) of the calls'\n"
		 "stacks (recorded with PROFILER_STACK=alloc or all), with\n"
		 "Count, Total, Self, Avg, Max and the Bytes its allocations\n"
		 "asked for; the frames follow each row, innermost first.\n"
		 "Calls without a stack share a row per name. CSV has the\n"
		 "frames in a last column \"stack\" separated by ';', JSON\n"
		 "rows a \"stack\" array. shape: rows by the calls' input\n"
		 "shapes instead (key_averages(group_by_input_shape=True);\n"
		 "PyTorch operators recorded with PROFILER_RECORD_SHAPES=1)",
		 TABLE_STACKS_DEFAULT_FRAMES);
	snprintf(group_needs, sizeof(group_needs),
		 "stack, stack:N (N frames from 1 to %d) or shape", TABLE_STACKS_MAX_FRAMES);
	const struct opt opts[] = {
		{ .name = "sort", .kind = OPT_CHOICE, .value = "KEY", .dest = &sort,
		  .choices = sorts, .nchoices = ARRAY_LEN(sorts),
		  .help = "order of the rows in each category: total (default), self,\n"
			  "count, avg, max, cpu_mem or self_cpu_mem (net bytes\n"
			  "allocated during the calls, with and without callees:\n"
			  "PyTorch's CPU Mem columns); largest first" },
		{ .name = "top", .kind = OPT_NUMBER, .value = "N", .dest = &top, .max = 1000000000,
		  .needs = "a number of rows",
		  .help = "at most N rows per category (0: all, the default)" },
		{ .name = "category", .kind = OPT_TEXT, .value = "NAME", .dest = &a->opt.category,
		  .needs = "a category name",
		  .help = "only this category (memory, user, mark, step, counter, or\n"
			  "a dynamic one as the capture names it)" },
		{ .name = "format", .kind = OPT_CHOICE, .value = "FORMAT", .dest = &format,
		  .choices = formats, .nchoices = ARRAY_LEN(formats),
		  .help = "text (default, for people), csv (the rows: category,name,\n"
			  "count,total_ns,self_ns,min_ns,max_ns,avg_ns,median_ns,\n"
			  "percent) or json (one document with every section)" },
		{ .name = "group-by", .kind = OPT_CALL, .value = "stack[:N]|shape", .call = group_by,
		  .dest = &a->stack_frames, .needs = group_needs, .help = group_help },
		{ .name = "output", .letter = 'o', .kind = OPT_TEXT, .value = "OUT", .dest = &a->out,
		  .needs = "a file name", .help = "write to OUT instead of standard output" },
		{ .name = "force-overwrite", .kind = OPT_FLAG, .dest = &a->force_overwrite,
		  .help = "replace OUT when it exists (else: an error, exit 2)" },
		{ .name = "all-processes", .kind = OPT_FLAG, .dest = &a->opt.all_processes,
		  .help = "the launchers too: by default an image that exec'd (a\n"
			  "shim, env, sh -c 'exec ...') is folded into the image it\n"
			  "became, and a helper process such an image forked and\n"
			  "waited for is folded into it (docs/FORMATS.md)" },
	};
	const struct opt_command c = {
		.name = "report",
		.usage = "prof report [CAPTURE...] [--sort KEY] [--top N] [--category NAME]\n"
			 "                   [--format text|csv|json] [--group-by stack[:N]|shape]\n"
			 "                   [-o OUT]\n"
			 "                   [--all-processes]",
		.about = "Prints the tables of a raw capture: one table per category (memory, user, and\n"
			 "the framework, operator and CUDA categories) with Count, Total, Self, Min, Max,\n"
			 "Avg, Median and % of the category's total (and CPU Mem / Self CPU Mem when\n"
			 "allocations were recorded); memory per process (allocations, frees, bytes, peak\n"
			 "live bytes and when, live bytes at the end), allocation sizes, and with call\n"
			 "stacks the allocation sites by bytes and what was live at exit; steps; marks;\n"
			 "counters. The header gives the command, host, processes, duration, and the\n"
			 "events captured and lost.\n"
			 "CAPTURE is a .prof file, or a capture in parts (PROFILER_ROTATE,\n"
			 "PROFILER_FLIGHT): its directory, or some of its parts in order. Without one,\n"
			 "the newest capture in the current directory (NAME.prof) is read.\n",
		.after = "--sort, --top and --category apply to the rows in every format.\n"
			 "Exit status: 0 ok; 1 the capture is damaged (the tables cover every complete\n"
			 "frame before the damage, which is named on standard error); 2 bad arguments or\n"
			 "an unusable file. docs/FORMATS.md describes the CSV and JSON fields.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};

	if ((rc = opt_parse(&c, argc, argv, &pos, &npos)))
		return rc;
	if ((rc = opt_capture_parts(&c, pos, npos, &a->capture)))
		return rc;
	a->opt.sort = (enum table_sort)sort;
	a->opt.format = (enum table_format)format;
	a->opt.top = (long)top;
	return 0;
}

static int save(const struct report_args *a, const char *buf, size_t len)
{
	return cmd_save("report", a->out, buf, len, a->force_overwrite);
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { .opt = { .sort = SORT_TOTAL, .format = FORMAT_TEXT } };
	struct output_summary sum;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *out;
	int rc = parse(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	out = a.out ? open_memstream(&buf, &len) : stdout;
	if (!out)
		return bad("out of memory");
	progress_start("prof report");
	if (a.stack_frames)
		rc = table_stacks_write(a.capture, out, &a.opt, a.stack_frames, &sum, err,
					sizeof(err));
	else
		rc = tables_write(a.capture, out, &a.opt, &sum, err, sizeof(err));
	progress_end();
	if (a.out && fclose(out) && rc != 2)
		rc = bad("out of memory");
	if (rc == 2) {
		free(buf);
		return bad("%s", err);
	}
	if (a.out && save(&a, buf, len))
		rc = 2;
	free(buf);
	if (rc == 1)
		bad("%s", err);
	return rc;
}
