/* What libprof knows of the frameworks (torch, mxnet, tensorflow, onnxruntime), as the
 * generic GOT patcher (preload/trace/got.c) asks for it: the patterns a preset adds to
 * PROFILER_TRACE, the hook a call gets (PROFILER_FOLLOW's start and stop, operator names),
 * and a stand-in for a function that hands out a table of others (OrtGetApiBase). All
 * of it is asked at set-up, never on a traced call. */
#ifndef PROF_FRAMEWORKS_FRAMEWORKS_H
#define PROF_FRAMEWORKS_FRAMEWORKS_H

#include <stddef.h>

#include "preload/trace/trace.h"

/* The patterns of framework's preset (PROFILER_FRAMEWORK: a name, or "auto" for every
 * preset), each followed by a comma, written at out + used; returns the new length as
 * snprintf counts it (>= len: it did not fit). */
size_t prof_framework_patterns(const char *framework, char *out, size_t len, size_t used);

struct prof_framework_hook {
	const char *symbol;   /* a glob over the mangled name */
	prof_trace_hook hook;
	const char *preset;   /* the framework preset that installs it, or NULL: follow only */
	const char *category; /* of the call's own event, when no pattern names one */
};

/* The hook installed for the function name with PROFILER_FRAMEWORK=framework (or NULL)
 * and PROFILER_FOLLOW=following, or NULL. */
const struct prof_framework_hook *prof_framework_hook_for(const char *name,
							  const char *framework, int following);

/* What stands for the function name instead of call (its stub, or the function when it
 * is not traced) under PROFILER_FRAMEWORK=framework, or NULL: call itself. */
void *prof_framework_stand_in(const char *name, void *call, const char *framework);

#endif
