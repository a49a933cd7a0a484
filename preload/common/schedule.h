/* PROFILER_SCHEDULE: torch.profiler.schedule's semantics over the steps libprof counts
 * (prof_step(), libprof.step()): skip_first steps off, then cycles of wait steps off,
 * warmup steps off (torch records and discards them; libprof has nothing to warm up) and
 * active steps recorded, repeat cycles (0: until the end). A step is the time between two
 * step calls; step 0 is before the first. */
#ifndef PROF_COMMON_SCHEDULE_H
#define PROF_COMMON_SCHEDULE_H

#include <stdint.h>

struct prof_schedule {
	uint32_t wait, warmup, active, repeat, skip_first;
	int set; /* 0: no schedule (every step recorded) */
};

/* "wait=1,warmup=1,active=3,repeat=2,skip_first=1" (any order, any omitted but active,
 * which must be at least 1); "" is no schedule. 0, or -1 with s unchanged. */
int prof_schedule_parse(const char *text, struct prof_schedule *s);
/* NULL when text parses, else why not (the settings table's check). */
const char *prof_schedule_check(const char *text);
/* Whether step (0: before the first step call) is recorded. */
int prof_schedule_records(const struct prof_schedule *s, uint64_t step);

#endif
