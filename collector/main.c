/* prof: the libprof command. */
#include <stdio.h>
#include <string.h>

#include "collector/commands.h"
#include "preload/common/debug.h"

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: prof <command> [options]\n"
		"\n"
		"  record [-o PREFIX] [--] cmd args   profile a command (writes PREFIX.json,\n"
		"                                     PREFIX.txt, PREFIX.prof)\n"
		"  report FILE.prof [options]         print the tables again from a raw capture\n"
		"  export FILE.prof -o OUT.json       make the Chrome trace again\n"
		"  summary INPUT... -o BASE.json      a compact summary of runs, for a baseline\n"
		"  diff BASE CUR [options]            compare runs: regressions, exit status 1\n"
		"  clean [--dry-run]                  remove dead sessions' shared memory\n"
		"  collect --session SID              (internal) the collector of a session\n"
		"\n"
		"Without prof record: PROFILER_AUTOSTART=1 LD_PRELOAD=/path/libprof.so cmd args\n"
		"'prof <command> --help' says more about each.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("prof (libprof) %s\n", PROF_VERSION);
		return 0;
	}
	/* the collector inherits the program's environment; `prof record` is the one that
	 * starts its session, so it names unknown domains (libprof does otherwise) */
	prof_debug_init(environ);
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return cmd_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "summary"))
		return cmd_summary(argc - 1, argv + 1);
	if (!strcmp(cmd, "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(cmd, "clean"))
		return cmd_clean(argc - 1, argv + 1);
	if (!strcmp(cmd, "collect"))
		return cmd_collect(argc - 1, argv + 1);
	fprintf(stderr, "prof: unknown command '%s' (see prof --help)\n", cmd);
	return 2;
}
