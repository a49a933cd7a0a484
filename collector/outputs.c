/* The end of a session: the trace and the tables from the raw capture, and the one-line
 * summary on stderr. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "outputs.h"

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Outputs are written beside their final name and renamed into place, so a reader
 * never sees a half-written file while dumps rewrite them during the run. */
int collector_write_tables(const char *capture, const char *path)
{
	char tmp[4200], err[512];
	struct table_options opt = {.sort = SORT_TOTAL};
	struct output_summary sum;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	int rc = f && tables_write(capture, f, &opt, &sum, err, sizeof err) != 2 ? 0 : -1;
	if (f && fclose(f))
		rc = -1;
	if (rc == 0 && rename(tmp, path))
		rc = -1;
	if (rc) {
		unlink(tmp);
		fprintf(stderr, "libprof: cannot write %s\n", path);
	}
	return rc;
}

int collector_make_outputs(const char *capture, const char *prefix, uint64_t max_json_events,
			   int tables, int quiet)
{
	char json[4200], tmp[4300], txt[4200], err[512], made[8600];
	struct output_summary sum = {0};
	int rc = 0;
	snprintf(json, sizeof json, "%s.json", prefix);
	snprintf(tmp, sizeof tmp, "%s.json.tmp", prefix);
	snprintf(txt, sizeof txt, "%s.txt", prefix);
	int r = chrome_export(capture, tmp, max_json_events, &sum, err, sizeof err);
	int json_ok = r != 2 && !rename(tmp, json);
	if (!json_ok) {
		/* the tables are still made: a disk too full for the trace may hold them */
		fprintf(stderr, "libprof: %s\n", r == 2 ? err : "cannot write the trace");
		unlink(tmp);
		rc = -1;
	}
	int txt_ok = tables && !collector_write_tables(capture, txt);
	if (tables && !txt_ok)
		rc = -1;
	if (quiet || (!json_ok && !sum.processes))
		return rc; /* nothing read from the capture: its error said it all */
	if (sum.damaged)
		fprintf(stderr, "libprof: %s\n", sum.damage);
	if (json_ok && sum.json_dropped)
		fprintf(stderr,
			"libprof: the trace keeps %llu of %llu events (the shortest are left out, "
			"see otherData.json_rule); the tables and %s.prof have them all\n",
			/* of the captured events: json_events also counts the trace's own
			 * metadata and counter points */
			(unsigned long long)(sum.events > sum.json_dropped
						     ? sum.events - sum.json_dropped
						     : 0),
			(unsigned long long)sum.events, base(prefix));
	snprintf(made, sizeof made, "%s%s%s%s%s.prof", json_ok ? json : "",
		 json_ok ? ", " : "", txt_ok ? (json_ok ? base(txt) : txt) : "",
		 txt_ok ? ", " : "", json_ok || txt_ok ? base(prefix) : prefix);
	fprintf(stderr, "libprof: %llu events (%llu lost) from %llu process%s -> %s\n",
		(unsigned long long)sum.events, (unsigned long long)sum.lost,
		(unsigned long long)sum.processes, sum.processes == 1 ? "" : "es", made);
	return rc;
}
