/* prof summary: the compact summary of one or more runs, for a baseline `prof diff` can
 * compare against (formats/perfcheck/summary.h). */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "collector/output/cmd_save.h"
#include "formats/perfcheck/summary.h"

#define bad(...) opt_error("summary", __VA_ARGS__)

int cmd_summary(int argc, char **argv)
{
	struct summary s;
	const char *out = NULL;
	char err[1024], damage[1024] = "", *buf = NULL, **inputs;
	size_t len = 0;
	int i, rc = 0, ninputs, force_overwrite = 0;
	FILE *f;
	const struct opt opts[] = {
		{ .name = "output", .letter = 'o', .kind = OPT_TEXT, .value = "OUT", .dest = &out,
		  .needs = "a file name", .help = "write to OUT instead of standard output" },
		{ .name = "force-overwrite", .kind = OPT_FLAG, .dest = &force_overwrite,
		  .help = "replace OUT when it exists (else: an error, exit 2)" },
	};
	const struct opt_command c = {
		.name = "summary",
		.usage = "prof summary INPUT... [-o OUT]",
		.about = "Writes a compact JSON summary of profiled runs, small enough to commit as the\n"
			 "baseline of `prof diff` (a CI performance check: scripts/perf-check). Each\n"
			 "INPUT is a raw capture (profile.prof), a summary, or a directory holding\n"
			 "several of either (its *.prof files and summary *.json files); every run found\n"
			 "is kept as a run of its own, so repeated runs make one baseline.\n"
			 "\n"
			 "Per run: the command, host, clock, ring size and versions (and the CPU model,\n"
			 "CPU count and kernel when summarized on the machine that ran it); per\n"
			 "(category, name): calls, total and self time, allocations and bytes allocated\n"
			 "during its calls, and a quantile sketch of the per-call durations (1%\n"
			 "relative accuracy); per run its duration, allocations and peak live bytes.\n",
		.after = "Exit status: 0 ok; 1 a capture is damaged (what came before the damage is\n"
			 "summarized, the damage named on standard error); 2 bad arguments or an\n"
			 "unusable input. docs/PERFCHECK.md describes the file.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};

	if ((rc = opt_parse(&c, argc, argv, &inputs, &ninputs)))
		return rc < 0 ? 0 : rc;
	if (!ninputs)
		return bad("no input given: a capture, a summary or a directory "
			   "(see prof summary --help)");
	summary_init(&s);
	s.tool = PROF_VERSION;
	for (i = 0; i < ninputs && rc != 2; i++) {
		int r;
		r = summary_load(&s, inputs[i], err, sizeof(err));
		if (r == 1 && !damage[0])
			snprintf(damage, sizeof(damage), "%s", err);
		if (r > rc)
			rc = r;
	}
	if (rc == 2) {
		summary_free(&s);
		return bad("%s", err);
	}
	f = out ? open_memstream(&buf, &len) : stdout;
	if (!f) {
		summary_free(&s);
		return bad("out of memory");
	}
	if (summary_write_json(&s, f))
		rc = bad("writing the summary: %m");
	if (out && fclose(f) && rc != 2)
		rc = bad("out of memory");
	if (out && rc != 2 && cmd_save("summary", out, buf, len, force_overwrite))
		rc = 2;
	free(buf);
	summary_free(&s);
	if (rc == 1)
		bad("%s", damage);
	return rc;
}
