/* prof: the libprof command. */
#include <stdio.h>
#include <string.h>

#include "collector/commands.h"
#include "collector/drain/live.h"
#include "collector/huge_malloc.h"
#include "preload/common/debug.h"
#include "collector/options.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis; /* in the list of commands */
	const char *summary;
} commands[] = {
	{ "record", cmd_record, "record [-o PREFIX] [--] cmd args",
	  "profile a command (writes PREFIX.json,\nPREFIX.txt, PREFIX.prof)" },
	{ "report", cmd_report, "report FILE.prof [options]",
	  "print the tables again from a raw capture" },
	{ "export", cmd_export, "export FILE.prof -o OUT.json", "make the Chrome trace again" },
	{ "tree", cmd_tree, "tree FILE.prof [options]", "the call tree: calls, total and self time" },
	{ "html", cmd_html, "html FILE.prof [-o FILE.html]",
	  "one offline HTML page: overview, step\ntrace, memory, flame graphs, timeline,\nadvice" },
	{ "summary", cmd_summary, "summary INPUT... -o BASE.json",
	  "a compact summary of runs, for a baseline" },
	{ "diff", cmd_diff, "diff BASE CUR [options]",
	  "compare runs: regressions, exit status 1" },
	{ "dump", cmd_dump, "dump [SESSION...]", "write running sessions' outputs now" },
	{ "clean", cmd_clean, "clean [--dry-run]", "remove dead sessions' shared memory" },
	{ "collect", cmd_collect, "collect --session SID", "(internal) the collector of a session" },
};

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f, "usage: prof <command> [options]\n\n");
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		opt_print_item(f, commands[i].synopsis, commands[i].summary, 37);
	opt_print_item(f, "help COMMAND", "what prof COMMAND --help says", 37);
	fprintf(f, "\n"
		   "Without prof record: PROFILER_AUTOSTART=1 LD_PRELOAD=/path/libprof.so cmd args\n"
		   "'prof <command> --help' says more about each.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	fprintf(stderr, "prof: unknown command '%s' (see prof --help)\n", name);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	collector_argv = argv;
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || (!strcmp(cmd, "help") && argc == 2)) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "help")) { /* prof help CMD: exactly prof CMD --help */
		char *help_argv[] = { argv[2], "--help", NULL };

		if (argc > 3)
			return opt_error("help", "one command at most (got '%s')", argv[3]);
		if (!(c = find(argv[2])))
			return 2;
		return c->run((int)ARRAY_LEN(help_argv) - 1, help_argv);
	}
	if (!strcmp(cmd, "--version")) {
		printf("prof (libprof) %s\n", PROF_VERSION);
		return 0;
	}
	if (!(c = find(cmd)))
		return 2;
	if (c->run == cmd_record || c->run == cmd_collect)
		huge_malloc_reexec(argv);
	/* the collector inherits the program's environment */
	prof_debug_init(environ);
	return c->run(argc - 1, argv + 1);
}
