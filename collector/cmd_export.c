/* prof export: the Chrome trace again from a raw capture. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_args.h"
#include "commands.h"
#include "outputs.h"

static void help(void)
{
	printf("usage: prof export FILE.prof [-o OUT.json] [--max-events N]\n"
	       "\n"
	       "Writes the Chrome Trace Event JSON of a raw capture, for ui.perfetto.dev or\n"
	       "chrome://tracing: process and thread names, one slice per call or range (with\n"
	       "bytes and pointers for allocator calls), marks and steps as instants, counters,\n"
	       "a \"live heap bytes\" counter per process, lost-event markers, and otherData with\n"
	       "the session's facts.\n"
	       "\n"
	       "  -o, --output OUT    the JSON file (default: FILE with .prof replaced by .json)\n"
	       "  --max-events N      keep at most N trace events (default %llu). Browsers fail\n"
	       "                      on traces of 1-2 GB; beyond N, user ranges, marks, steps,\n"
	       "                      counters and lost markers are all kept and the shortest\n"
	       "                      other slices are left out (otherData.json_rule says which);\n"
	       "                      the live-heap counter is thinned to at most N/4 points.\n"
	       "                      `prof report` and the capture still have every event.\n"
	       "  -h, --help          this text\n"
	       "\n"
	       "Exit status: 0 ok; 1 the capture is damaged (the trace covers every complete\n"
	       "frame before the damage, which is named on standard error); 2 bad arguments or\n"
	       "an unusable file. docs/FORMATS.md describes the size rule.\n",
	       (unsigned long long)CHROME_DEFAULT_MAX_EVENTS);
}

#define bad(...) arg_error("prof export", __VA_ARGS__)

struct export_args {
	const char *capture, *out;
	uint64_t max_events;
};

static int option(int argc, char **argv, int *i, struct export_args *a)
{
	const char *v;

	if (arg_value(argc, argv, i, "-o", &v) || arg_value(argc, argv, i, "--output", &v)) {
		if (!v || !*v)
			return bad("-o needs a file name");
		a->out = v;
	} else if (arg_value(argc, argv, i, "--max-events", &v)) {
		if (arg_number(v, 1, UINT64_MAX, &a->max_events))
			return bad("--max-events needs a positive number (got '%s')", v ? v : "");
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
	return args_parse("prof export", argc, argv, help, option_cb, a, &a->capture);
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

int cmd_export(int argc, char **argv)
{
	struct export_args a = { 0 };
	struct output_summary sum;
	char err[512], *made = NULL;
	int rc = parse(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.out && !(a.out = made = default_out(a.capture)))
		return bad("out of memory");
	rc = chrome_export(a.capture, a.out, a.max_events, &sum, err, sizeof(err));
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
