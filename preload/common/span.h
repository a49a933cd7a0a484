/* PROFILER_ROTATE and PROFILER_FLIGHT's value: an amount of run time ("60s", "1.5min",
 * "2h") or of compressed capture ("500M", "2G"), whichever the unit says. */
#ifndef PROF_COMMON_SPAN_H
#define PROF_COMMON_SPAN_H

#include <stdint.h>

struct prof_span {
	uint64_t ms;    /* a time, or 0 */
	uint64_t bytes; /* a size, or 0 */
};

#define PROF_SPAN_MIN_MS 1000ull          /* parts of at least a second, */
#define PROF_SPAN_MIN_BYTES (1ull << 20)  /* or of a megabyte */
#define PROF_SPAN_MAX_MS (86400ull * 40 * 1000)
#define PROF_SPAN_MAX_BYTES (1ull << 50)

/* "" is none (both 0). 0, or -1 with s unchanged. No allocation (settings code). */
int prof_span_parse(const char *text, struct prof_span *s);
/* NULL when text parses, else why not (the settings table's check). */
const char *prof_span_check(const char *text);

#endif
