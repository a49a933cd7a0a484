/* When recording was on, for records that reach libprof after the fact: CUPTI's, which
 * describe GPU work and API calls from seconds ago, and must follow pause/resume and
 * PROFILER_FOLLOW as the program's own events do. The times recording went on and off
 * are kept in order (CLOCK_MONOTONIC ns); not the hot path: only state changes note. */
#ifndef PROF_PRELOAD_WINDOWS_H
#define PROF_PRELOAD_WINDOWS_H

#include <stdint.h>

/* Recording is now on (1) or off (0); a repeat of the last state is ignored. */
void prof_window_note(int on);
/* 1 when recording was on at ns (also once the changes could not all be kept: too
 * many, or a note given up on; then nothing is left out); 0 before the first change or
 * while off. */
int prof_window_recording(uint64_t ns);

#endif
