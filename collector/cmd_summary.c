/* prof summary: the compact summary of one or more runs, for a baseline `prof diff` can
 * compare against (formats/perfcheck/summary.h). */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cmd_args.h"
#include "collector/commands.h"
#include "formats/perfcheck/summary.h"

#define bad(...) arg_error("prof summary", __VA_ARGS__)

/* --force-overwrite: OUT may replace an existing file */
static int force_overwrite;

static void help(void)
{
	printf("usage: prof summary INPUT... [-o OUT]\n"
	       "\n"
	       "Writes a compact JSON summary of profiled runs, small enough to commit as the\n"
	       "baseline of `prof diff` (a CI performance check: scripts/perf-check). Each\n"
	       "INPUT is a raw capture (profile.prof), a summary, or a directory holding\n"
	       "several of either (its *.prof files and summary *.json files); every run found\n"
	       "is kept as a run of its own, so repeated runs make one baseline.\n"
	       "\n"
	       "Per run: the command, host, clock, ring size and versions (and the CPU model,\n"
	       "CPU count and kernel when summarized on the machine that ran it); per\n"
	       "(category, name): calls, total and self time, allocations and bytes allocated\n"
	       "during its calls, and a quantile sketch of the per-call durations (1%%\n"
	       "relative accuracy); per run its duration, allocations and peak live bytes.\n"
	       "\n"
	       "  -o, --output OUT   write to OUT instead of standard output\n"
	       "  --force-overwrite  replace OUT when it exists (else: an error, exit 2)\n"
	       "  -h, --help         this text\n"
	       "\n"
	       "Exit status: 0 ok; 1 a capture is damaged (what came before the damage is\n"
	       "summarized, the damage named on standard error); 2 bad arguments or an\n"
	       "unusable input. docs/PERFCHECK.md describes the file.\n");
}

static int save(const char *path, const char *buf, size_t len)
{
	return arg_save("prof summary", path, buf, len, force_overwrite);
}

int cmd_summary(int argc, char **argv)
{
	struct summary s;
	const char *out = NULL, *v;
	char err[1024], damage[1024] = "", *buf = NULL;
	size_t len = 0;
	int i, rc = 0, ninputs = 0;
	FILE *f;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help();
			return 0;
		}
		if (arg_value(argc, argv, &i, "-o", &v) ||
		    arg_value(argc, argv, &i, "--output", &v)) {
			if (!v || !*v)
				return bad("-o needs a file name");
			out = v;
		} else if (!strcmp(argv[i], "--force-overwrite")) {
			force_overwrite = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return bad("unknown option '%s' (see prof summary --help)", argv[i]);
		} else {
			ninputs++;
		}
	}
	if (!ninputs)
		return bad("no input given: a capture, a summary or a directory "
			   "(see prof summary --help)");
	summary_init(&s);
	s.tool = PROF_VERSION;
	for (i = 1; i < argc && rc != 2; i++) {
		int r;
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			i++;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1])
			continue;
		r = summary_load(&s, argv[i], err, sizeof(err));
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
	if (out && rc != 2 && save(out, buf, len))
		rc = 2;
	free(buf);
	summary_free(&s);
	if (rc == 1)
		bad("%s", damage);
	return rc;
}
