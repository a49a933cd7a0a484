/* prof export: the Chrome trace again from a raw capture, or its call stacks folded for
 * flame graphs. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/cmd_args.h"
#include "collector/commands.h"
#include "formats/export/folded.h"
#include "collector/output/outfile.h"
#include "formats/model/outputs.h"

static void help(void)
{
	printf("usage: prof export FILE.prof [-o OUT.json] [--max-events N]\n"
	       "       prof export FILE.prof --format folded [--weight time|bytes|count]\n"
	       "                   [--threads] [-o OUT]\n"
	       "\n"
	       "--format chrome (the default) writes the Chrome Trace Event JSON of a raw\n"
	       "capture, for ui.perfetto.dev or chrome://tracing: process and thread names, one\n"
	       "slice per call or range (with bytes and pointers for allocator calls), marks and\n"
	       "steps as instants, counters, a \"live heap bytes\" counter per process,\n"
	       "lost-event markers, and otherData with the session's facts.\n"
	       "\n"
	       "--format folded writes the call stacks recorded with PROFILER_STACK=alloc or all\n"
	       "as folded stacks for flame graphs (flamegraph.pl, speedscope, inferno): one line\n"
	       "\"process (pid);outermost frame;...;innermost frame;call VALUE\" per distinct\n"
	       "stack, where call is the allocator function or the traced function. Calls\n"
	       "without a stack are left out. Frames read \"function (file:line)\"; ';' in a\n"
	       "name becomes ':'.\n"
	       "\n"
	       "  -o, --output OUT    the output file (chrome: FILE with .prof replaced by .json\n"
	       "                      by default; folded: standard output by default)\n"
	       "  --force-overwrite   replace OUT when it exists (else: an error, exit 2)\n"
	       "  --format FORMAT     chrome (default) or folded\n"
	       "  --max-events N      chrome: keep at most N trace events (default %llu).\n"
	       "                      Browsers fail on traces of 1-2 GB; beyond N, user ranges,\n"
	       "                      marks, steps, counters and lost markers are all kept and\n"
	       "                      the shortest other slices are left out\n"
	       "                      (otherData.json_rule says which); the live-heap counter\n"
	       "                      is thinned to at most N/4 points. `prof report` and the\n"
	       "                      capture still have every event.\n"
	       "  --weight WEIGHT     folded: what VALUE counts. time: nanoseconds in the calls,\n"
	       "                      less the calls nested in them that have lines of their\n"
	       "                      own (a frame's width is then its calls' time); bytes:\n"
	       "                      bytes the allocations asked for; count: calls. Default:\n"
	       "                      time when calls other than allocations have stacks\n"
	       "                      (PROFILER_STACK=all), else bytes\n"
	       "  --threads           folded: a frame \"thread name (tid)\" below the process\n"
	       "  -h, --help          this text\n"
	       "\n"
	       "Exit status: 0 ok; 1 the capture is damaged (the output covers every complete\n"
	       "frame before the damage, which is named on standard error); 2 bad arguments, an\n"
	       "unusable file, or (folded) a capture without call stacks. docs/FORMATS.md\n"
	       "describes the size rule.\n",
	       (unsigned long long)CHROME_DEFAULT_MAX_EVENTS);
}

#define bad(...) arg_error("prof export", __VA_ARGS__)

enum export_format { EXPORT_CHROME, EXPORT_FOLDED };

struct export_args {
	const char *capture, *out;
	uint64_t max_events;
	enum export_format format;
	struct folded_options folded;
	const char *folded_only; /* a folded option given, for the check after parsing */
};

/* --force-overwrite: OUT may replace an existing file */
static int force_overwrite;

static int choose(const char *v, const char *const *names, int n, int *out)
{
	for (int i = 0; v && i < n; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -1;
}

static int option(int argc, char **argv, int *i, struct export_args *a)
{
	static const char *const formats[] = { "chrome", "folded" };
	/* in enum folded_weight order, after FOLDED_AUTO */
	static const char *const weights[] = { "time", "bytes", "count" };
	const char *v;
	int k;

	if (arg_value(argc, argv, i, "-o", &v) || arg_value(argc, argv, i, "--output", &v)) {
		if (!v || !*v)
			return bad("-o needs a file name");
		a->out = v;
	} else if (arg_value(argc, argv, i, "--max-events", &v)) {
		if (arg_number(v, 1, UINT64_MAX, &a->max_events))
			return bad("--max-events needs a positive number (got '%s')", v ? v : "");
	} else if (arg_value(argc, argv, i, "--format", &v)) {
		if (choose(v, formats, 2, &k))
			return bad("--format needs chrome or folded (got '%s')", v ? v : "");
		a->format = (enum export_format)k;
	} else if (arg_value(argc, argv, i, "--weight", &v)) {
		if (choose(v, weights, 3, &k))
			return bad("--weight needs time, bytes or count (got '%s')", v ? v : "");
		a->folded.weight = (enum folded_weight)(k + 1);
		a->folded_only = "--weight";
	} else if (!strcmp(argv[*i], "--force-overwrite")) {
		force_overwrite = 1;
	} else if (!strcmp(argv[*i], "--threads")) {
		a->folded.threads = 1;
		a->folded_only = "--threads";
	} else {
		return bad("unknown option '%s' (see prof export --help)", argv[*i]);
	}
	return 0;
}

static int option_cb(int argc, char **argv, int *i, void *ctx)
{
	return option(argc, argv, i, ctx);
}

/* 0 to go on, -1 after --help, or the exit status 2. */
static int parse(int argc, char **argv, struct export_args *a)
{
	int rc = args_parse("prof export", argc, argv, help, option_cb, a, &a->capture);

	if (rc)
		return rc;
	if (a->format == EXPORT_CHROME && a->folded_only)
		return bad("%s needs --format folded", a->folded_only);
	if (a->format == EXPORT_FOLDED && a->max_events)
		return bad("--max-events applies to --format chrome only");
	return 0;
}

/* FILE.prof -> FILE.json; any other name gets .json appended. */
static char *default_out(const char *capture)
{
	size_t n = strlen(capture);
	char *s = malloc(n + 6);

	if (!s)
		return NULL;
	memcpy(s, capture, n + 1);
	if (n > 5 && !strcmp(s + n - 5, ".prof"))
		s[n - 5] = '\0';
	strcat(s, ".json");
	return s;
}

static int save(const char *path, const char *buf, size_t len)
{
	return arg_save("prof export", path, buf, len, force_overwrite);
}

/* The trace goes to a new temporary file beside OUT, renamed into place once complete:
 * nothing at OUT is ever opened (collector/output/outfile.h). */
static int export_chrome(struct export_args *a, struct output_summary *sum, char *err,
			 size_t errlen)
{
	char tmp[4352];
	int rc = arg_output_ok("prof export", a->out, force_overwrite);
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
	rc = chrome_export_to(a->capture, a->out, f, a->max_events, sum, err, errlen);
	if (rc == 2) {
		unlink(tmp);
		return 2;
	}
	if (arg_place("prof export", tmp, a->out, force_overwrite))
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
	rc = folded_write(a->capture, out, &a->folded, &sum, err, sizeof(err));
	if (a->out && fclose(out) && rc != 2) {
		snprintf(err, sizeof(err), "out of memory");
		rc = 2;
	}
	if (rc == 2) {
		free(buf);
		return bad("%s", err);
	}
	if (a->out) {
		int bad_write = save(a->out, buf, len);
		free(buf);
		if (bad_write)
			return 2;
		printf("%s: %llu stacks of %llu calls, weight %s (total %llu) in %s\n", a->capture,
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
	if (!a.out && !(a.out = made = default_out(a.capture)))
		return bad("out of memory");
	rc = export_chrome(&a, &sum, err, sizeof(err));
	if (rc == -2) { /* the line is written */
		free(made);
		return 2;
	}
	if (rc == 2) {
		free(made);
		return bad("%s", err);
	}
	printf("%s: %llu events, %llu lost, %llu process%s; trace %s holds %llu events", a.capture,
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
