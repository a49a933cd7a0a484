/* libprof public API: annotations and control, exported by libprof.so.
 *
 * Every call is safe when profiling is idle or stopped (it does nothing then). Programs
 * that must also run without libprof can resolve these with dlsym(RTLD_DEFAULT, ...) or
 * use the Python module `libprof`, which does exactly that. */
#ifndef LIBPROF_PROF_H
#define LIBPROF_PROF_H

#ifdef __cplusplus
extern "C" {
#endif

enum prof_state { PROF_STOP = 0, PROF_RUN = 1 };

/* Nested labels on the calling thread, like PyTorch's record_function. */
void prof_range_push(const char *name);
void prof_range_pop(void);
/* An instant event on the calling thread's timeline. */
void prof_mark(const char *name);
/* An iteration boundary: steps are numbered from 1. Returns the new step number. */
long prof_step(void);
/* A value on a counter track of the process. */
void prof_counter(const char *name, double value);

/* MXNet-style control. Keys: profile_all, profile_memory, profile_api, aggregate_stats,
 * filename, continuous_dump, dump_period (also PROFILER_<KEY> in the environment).
 * Returns 0, or -1 after one line on stderr naming the bad key or value. */
int prof_set_config(const char *key, const char *value);
/* PROF_RUN starts (the first time: creates the session and its collector); PROF_STOP
 * stops recording. Returns 0 or -1. */
int prof_set_state(int state);
void prof_pause(void);
void prof_resume(void);
/* Writes the outputs (trace, tables, raw capture so far) now. Returns 0 or -1. */
int prof_dump(void);
/* The aggregated tables as text, in a buffer owned by libprof that stays valid until
 * the next call. NULL when profiling never ran or the collector is gone. */
const char *prof_dumps(void);

#ifdef __cplusplus
}
#endif
#endif
