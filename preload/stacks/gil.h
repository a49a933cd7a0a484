/* Whether the calling thread is inside a release of CPython's GIL, as seen through the
 * calls that give it up and take it back (PyEval_SaveThread, PyGILState_Ensure, ...):
 * every object's GOT entry for them is pointed at libprof's wrappers (alloc_got.c). A
 * thread that has released the GIL inside a C call runs no Python code until it takes
 * the GIL back, so its Python frames cannot change meanwhile: a walk of them made then
 * stays good until the thread's next such call (pyframes.c). */
#ifndef PROF_PRELOAD_GIL_H
#define PROF_PRELOAD_GIL_H

#include <stdint.h>

/* Bumped at every release and take the wrappers see (never 0). */
extern __thread uint32_t prof_gil_gen __attribute__((tls_model("initial-exec")));
/* The thread state the thread gave up with the GIL, while it is inside that release; 0
 * otherwise, or when it is not known (then no walk is taken as still good). */
extern __thread uintptr_t prof_gil_released_ts __attribute__((tls_model("initial-exec")));

/* Nonzero while every loaded object's entries for those calls lead to the wrappers: an
 * object left pointing at CPython's own (a page that could not be made writable, a lazy
 * entry libprof could not resolve, more objects than it lists) could take the GIL
 * unseen. */
int prof_gil_seen_whole(void);

/* For alloc_got.c, which redirects entries: when name is one of those calls in a process
 * with CPython, 0 with *ours (libprof's wrapper) and *real (CPython's function, what the
 * entry must lead to now to be redirected); else -1. */
int prof_gil_targets(const char *name, void **ours, void **real);
/* After a pass over the loaded objects: whether each of their entries for those calls
 * now leads to a wrapper (unsettled: some did not). */
void prof_gil_pass_done(int unsettled);
/* An entry that will never lead to a wrapper (its page stays read-only). */
void prof_gil_entry_refused(void);

#endif
