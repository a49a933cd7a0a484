/* PyTorch's RecordFunction callbacks (torch_callbacks.c): record_function labels, step
 * and optimizer rows, autograd nodes. */
#ifndef PROF_FRAMEWORKS_TORCH_CALLBACKS_H
#define PROF_FRAMEWORKS_TORCH_CALLBACKS_H

struct dl_phdr_info;

/* Adds the callbacks once per process, with libtorch_cpu loaded, relocated and set up. */
void prof_torch_callbacks_install(const struct dl_phdr_info *libtorch_cpu);

/* The rows of the dispatcher's own RecordFunction calls (the autograd engine's
 * evaluate_function): on while torch's profiler runs (hooks on its start and stop). */
void prof_torch_engine_rows(int on);

/* For the ranges of RecordFunctions the callbacks do not see (torch_compiled.c): a range
 * of the operator category opened for key (a RecordFunction, or any address its end
 * names) and ended by the same key, innermost first, on this thread, if it was opened so
 * (1: ended; one a callback opened ends where torch ends it, maybe on another thread);
 * the key of the innermost range open on this thread (NULL: none). */
void prof_torch_range_open(const void *key, const char *name);
int prof_torch_range_end(const void *key);
const void *prof_torch_range_innermost(void);
/* A FUNCTION callback on this thread only, while a compiled region runs (on 1, off 0):
 * the few RecordFunctions it makes (CompiledFunction, ...) are named only when one is on,
 * and the region's operators are compiled code, not the dispatcher's. */
void prof_torch_region_rows(int on);

#endif
