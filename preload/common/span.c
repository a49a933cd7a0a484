/* PROFILER_ROTATE / PROFILER_FLIGHT's parser; see span.h. */
#include "preload/common/span.h"

#include <string.h>

static int unit_is(const char *u, const char *const *names)
{
	for (; *names; names++)
		if (!strcmp(u, *names))
			return 1;
	return 0;
}

int prof_span_parse(const char *text, struct prof_span *out)
{
	static const char *const secs[] = {"s", "sec", 0}, *const mins[] = {"m", "min", 0},
				 *const hours[] = {"h", 0}, *const kib[] = {"K", "KB", "KiB", "k", 0},
				 *const mib[] = {"M", "MB", "MiB", 0},
				 *const gib[] = {"G", "GB", "GiB", 0};
	struct prof_span s = {0, 0};
	if (!*text) {
		*out = s;
		return 0;
	}
	/* decimal with at most 3 fractional digits, in thousandths: no strtod (locale) */
	uint64_t milli = 0;
	int digits = 0, frac = -1;
	const char *p = text;
	for (; (*p >= '0' && *p <= '9') || (*p == '.' && frac < 0); p++) {
		if (*p == '.') {
			frac = 0;
			continue;
		}
		if (frac >= 3 || milli > UINT64_MAX / 20000)
			return -1;
		milli = milli * 10 + (uint64_t)(*p - '0');
		digits++;
		if (frac >= 0)
			frac++;
	}
	if (!digits)
		return -1;
	for (int f = frac < 0 ? 0 : frac; f < 3; f++)
		milli *= 10;
	/* a time is kept in ms: thousandths of a second are ms */
	if (unit_is(p, secs))
		s.ms = milli;
	else if (unit_is(p, mins))
		s.ms = milli * 60;
	else if (unit_is(p, hours))
		s.ms = milli * 3600;
	else if (unit_is(p, kib))
		s.bytes = milli * 1024 / 1000;
	else if (unit_is(p, mib))
		s.bytes = milli * (1ull << 20) / 1000;
	else if (unit_is(p, gib))
		s.bytes = milli / 1000 * (1ull << 30) + milli % 1000 * (1ull << 30) / 1000;
	else
		return -1;
	if (s.ms ? s.ms < PROF_SPAN_MIN_MS || s.ms > PROF_SPAN_MAX_MS
		 : s.bytes < PROF_SPAN_MIN_BYTES || s.bytes > PROF_SPAN_MAX_BYTES)
		return -1;
	*out = s;
	return 0;
}

const char *prof_span_check(const char *text)
{
	struct prof_span s;
	return prof_span_parse(text, &s) ? "use a time (60s, 5min, 1h; at least 1s) or a size "
					   "(500M, 2G; at least 1M)"
					 : 0;
}
