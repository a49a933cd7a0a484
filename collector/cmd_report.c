/* prof report: the tables again from a raw capture, or its calls grouped by stack. */
#define _GNU_SOURCE /* open_memstream */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cmd_args.h"
#include "collector/commands.h"
#include "formats/model/outputs.h"
#include "formats/tables/table_stacks.h"

/* --force-overwrite: OUT may replace an existing file */
static int force_overwrite;

struct report_args {
	const char *capture, *out;
	struct table_options opt;
	unsigned stack_frames; /* --group-by stack[:N]; 0: the usual tables */
};

static void help(void)
{
	printf("usage: prof report FILE.prof [--sort KEY] [--top N] [--category NAME]\n"
	       "                   [--format text|csv|json] [--group-by stack[:N]] [-o OUT]\n"
	       "\n"
	       "Prints the tables of a raw capture: one table per category (memory, user, and\n"
	       "the framework, operator and CUDA categories) with Count, Total, Self, Min, Max,\n"
	       "Avg, Median and %% of the category's total (and CPU Mem / Self CPU Mem when\n"
	       "allocations were recorded); memory per process (allocations, frees, bytes, peak\n"
	       "live bytes and when, live bytes at the end), allocation sizes, and with call\n"
	       "stacks the allocation sites by bytes and what was live at exit; steps; marks;\n"
	       "counters. The header gives the command, host, processes, duration, and the\n"
	       "events captured and lost.\n"
	       "\n"
	       "  --sort KEY         order of the rows in each category: total (default), self,\n"
	       "                     count, avg, max, cpu_mem or self_cpu_mem (net bytes\n"
	       "                     allocated during the calls, with and without callees:\n"
	       "                     PyTorch's CPU Mem columns); largest first\n"
	       "  --top N            at most N rows per category (0: all, the default)\n"
	       "  --category NAME    only this category (memory, user, mark, step, counter, or\n"
	       "                     a dynamic one as the capture names it)\n"
	       "  --format FORMAT    text (default, for people), csv (the rows: category,name,\n"
	       "                     count,total_ns,self_ns,min_ns,max_ns,avg_ns,median_ns,\n"
	       "                     percent) or json (one document with every section)\n"
	       "  --group-by stack[:N]  rows by call stack instead (PyTorch's\n"
	       "                     key_averages(group_by_stack_n=N)): one row per category,\n"
	       "                     name and innermost N frames (default %d) of the calls'\n"
	       "                     stacks (recorded with PROFILER_STACK=alloc or all), with\n"
	       "                     Count, Total, Self, Avg, Max and the Bytes its allocations\n"
	       "                     asked for; the frames follow each row, innermost first.\n"
	       "                     Calls without a stack share a row per name. CSV has the\n"
	       "                     frames in a last column \"stack\" separated by ';', JSON\n"
	       "                     rows a \"stack\" array\n"
	       "  -o, --output OUT   write to OUT instead of standard output\n"
	       "  --force-overwrite  replace OUT when it exists (else: an error, exit 2)\n"
	       "  -h, --help         this text\n"
	       "\n"
	       "--sort, --top and --category apply to the rows in every format.\n"
	       "Exit status: 0 ok; 1 the capture is damaged (the tables cover every complete\n"
	       "frame before the damage, which is named on standard error); 2 bad arguments or\n"
	       "an unusable file. docs/FORMATS.md describes the CSV and JSON fields.\n",
	       TABLE_STACKS_DEFAULT_FRAMES);
}

#define bad(...) arg_error("prof report", __VA_ARGS__)

static int choose(const char *v, const char *const *names, int n, int *out)
{
	int i;

	for (i = 0; v && i < n; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

/* "stack" or "stack:N"; 0, or -1 when v is neither. */
static int group_by(const char *v, unsigned *frames)
{
	uint64_t n = TABLE_STACKS_DEFAULT_FRAMES;

	if (!v || strncmp(v, "stack", 5) || (v[5] && v[5] != ':'))
		return -1;
	if (v[5] && arg_number(v + 6, 1, TABLE_STACKS_MAX_FRAMES, &n))
		return -1;
	*frames = (unsigned)n;
	return 0;
}

static int option(int argc, char **argv, int *i, struct report_args *a)
{
	static const char *const sorts[] = { "total", "self", "count", "avg", "max", "cpu_mem",
					     "self_cpu_mem" };
	static const char *const formats[] = { "text", "csv", "json" };
	const char *v;
	uint64_t n;
	int k;

	if (arg_value(argc, argv, i, "--sort", &v)) {
		if (choose(v, sorts, 7, &k))
			return bad("--sort needs total, self, count, avg, max, cpu_mem or self_cpu_mem "
				   "(got '%s')", v ? v : "");
		a->opt.sort = (enum table_sort)k;
	} else if (arg_value(argc, argv, i, "--format", &v)) {
		if (choose(v, formats, 3, &k))
			return bad("--format needs text, csv or json (got '%s')", v ? v : "");
		a->opt.format = (enum table_format)k;
	} else if (arg_value(argc, argv, i, "--top", &v)) {
		if (arg_number(v, 0, 1000000000, &n))
			return bad("--top needs a number of rows (got '%s')", v ? v : "");
		a->opt.top = (long)n;
	} else if (arg_value(argc, argv, i, "--category", &v)) {
		if (!v || !*v)
			return bad("--category needs a category name");
		a->opt.category = v;
	} else if (arg_value(argc, argv, i, "--group-by", &v)) {
		if (group_by(v, &a->stack_frames))
			return bad("--group-by needs stack or stack:N, N frames from 1 to %d (got '%s')",
				   TABLE_STACKS_MAX_FRAMES, v ? v : "");
	} else if (arg_value(argc, argv, i, "-o", &v) || arg_value(argc, argv, i, "--output", &v)) {
		if (!v || !*v)
			return bad("-o needs a file name");
		a->out = v;
	} else if (!strcmp(argv[*i], "--force-overwrite")) {
		force_overwrite = 1;
	} else {
		return bad("unknown option '%s' (see prof report --help)", argv[*i]);
	}
	return 0;
}

static int option_cb(int argc, char **argv, int *i, void *ctx)
{
	return option(argc, argv, i, ctx);
}

/* 0 to go on, -1 after --help, or the exit status 2. */
static int parse(int argc, char **argv, struct report_args *a)
{
	return args_parse("prof report", argc, argv, help, option_cb, a, &a->capture);
}

static int save(const char *path, const char *buf, size_t len)
{
	return arg_save("prof report", path, buf, len, force_overwrite);
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
	if (a.stack_frames)
		rc = table_stacks_write(a.capture, out, &a.opt, a.stack_frames, &sum, err,
					sizeof(err));
	else
		rc = tables_write(a.capture, out, &a.opt, &sum, err, sizeof(err));
	if (a.out && fclose(out) && rc != 2)
		rc = bad("out of memory");
	if (rc == 2) {
		free(buf);
		return bad("%s", err);
	}
	if (a.out && save(a.out, buf, len))
		rc = 2;
	free(buf);
	if (rc == 1)
		bad("%s", err);
	return rc;
}
