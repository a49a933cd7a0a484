/* prof tree: the call tree of a capture, per process (formats/tables/calltree.h). */
#include <stdio.h>
#include <stdlib.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "collector/progress.h"
#include "formats/tables/calltree.h"

#define bad(...) opt_error("tree", __VA_ARGS__)

int cmd_tree(int argc, char **argv)
{
	struct calltree_options o = {0};
	uint64_t depth = 0;
	const char *percent = NULL, *capture;
	char **pos, err[1024];
	int npos, rc;
	const struct opt opts[] = {
		{ .name = "max-depth", .kind = OPT_NUMBER, .value = "N", .dest = &depth, .min = 1,
		  .max = 256, .needs = "a number from 1 to 256",
		  .help = "print N levels of each tree (default: all)" },
		{ .name = "min-percent", .kind = OPT_TEXT, .value = "P", .dest = &percent,
		  .needs = "a percentage",
		  .help = "leave out call paths under P% of their process's time" },
		{ .name = "memory", .kind = OPT_FLAG, .dest = &o.memory,
		  .help = "allocator calls too (leaves under the calls that made them)" },
		{ .name = "threads", .kind = OPT_FLAG, .dest = &o.threads,
		  .help = "a tree per thread (default: a process's threads merged)" },
		{ .name = "all-processes", .kind = OPT_FLAG, .dest = &o.all_processes,
		  .help = "the launchers too (see prof report --help)" },
	};
	const struct opt_command c = {
		.name = "tree",
		.usage = "prof tree [CAPTURE...] [--max-depth N] [--min-percent P] [--memory]\n"
			 "                 [--threads] [--all-processes]",
		.about = "Prints the call tree of a capture, per process: every call path of calls and\n"
			 "ranges (traced functions, framework C API calls and operators, your ranges,\n"
			 "CUDA calls) with its calls, total time and self time (the total less that of\n"
			 "the calls inside it), indented by depth and sorted by total time, as uftrace\n"
			 "graph and the PyTorch profiler's tree show them. A process's threads are\n"
			 "merged: the same path on two threads is one line. Work that does not nest\n"
			 "with the thread's calls (GPU rows, NVTX start/end ranges) is a root of its own.\n"
			 "CAPTURE is as for prof report (default: the newest capture here).\n",
		.after = "Exit status: 0 ok; 1 the capture is damaged (the tree of what came before);\n"
			 "2 bad arguments or an unusable file.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};
	if ((rc = opt_parse(&c, argc, argv, &pos, &npos)))
		return rc < 0 ? 0 : rc;
	if (percent) {
		char *end;
		o.min_percent = strtod(percent, &end);
		if (end == percent || *end || !(o.min_percent >= 0 && o.min_percent <= 100))
			return bad("--min-percent wants a percentage from 0 to 100, got '%s'", percent);
	}
	o.max_depth = (unsigned)depth;
	if ((rc = opt_capture_parts(&c, pos, npos, &capture)))
		return rc;
	progress_start("prof tree");
	rc = calltree_write(capture, stdout, &o, err, sizeof err);
	progress_end();
	if (rc)
		bad("%s", err);
	return rc;
}
