/* What libprof knows of the frameworks (torch, mxnet, tensorflow, onnxruntime), as the
 * generic GOT patcher (preload/trace/got.c) asks for it: the patterns a preset adds to
 * PROFILER_TRACE, which objects are a framework's, the hook a call gets (PROFILER_FOLLOW's
 * start and stop, operator names), and a stand-in for a function that hands out a table
 * of others (OrtGetApiBase). All of it is asked at set-up, never on a traced call.
 * Frameworks are bits, PROF_FW_* (preload/common/shm_layout.h); a scope is the bits
 * whose presets apply to an object or a call. */
#ifndef PROF_FRAMEWORKS_FRAMEWORKS_H
#define PROF_FRAMEWORKS_FRAMEWORKS_H

#include <elf.h>
#include <stddef.h>

#include "preload/trace/trace.h"

/* PROFILER_FRAMEWORK: the presets it applies to every object (a name, or "auto" for
 * all); 0 for "none" and for the default, "detect". */
unsigned prof_framework_presets(const char *framework);
/* Whether PROFILER_FRAMEWORK is the default ("detect", unset or empty): every framework is
 * detected, and its preset applied to its own objects only (prof_framework_object). */
int prof_framework_detecting(const char *framework);

/* The patterns of preset i (bit 1 << i), comma-separated, written at out + used; returns
 * the new length as snprintf counts it (>= len: it did not fit). */
size_t prof_framework_patterns(unsigned i, char *out, size_t len, size_t used);

/* The frameworks the object at path with that dynamic section is part of: its file name,
 * or one of its DT_NEEDED names, is one of the framework's libraries. Reads no file. */
unsigned prof_framework_object(const char *path, const Elf64_Dyn *dyn, const char *strtab);

struct prof_framework_hook {
	const char *symbol;   /* a glob over the mangled name */
	prof_trace_hook hook;
	unsigned preset;      /* the framework (PROF_FW_*) whose preset installs it, or 0:
			       * follow only */
	const char *category; /* of the call's own event, when no pattern names one */
	int by_address;       /* also where the program takes its address (GLOB_DAT) */
};

/* The hook installed for the function name where the presets of scope apply, with
 * PROFILER_FOLLOW=following, or NULL. */
const struct prof_framework_hook *prof_framework_hook_for(const char *name, unsigned scope,
							  int following);

/* Whether some hook installed by address applies where the presets of scope do. */
int prof_framework_hooks_by_address(unsigned scope);

/* What stands for the function name instead of call (its stub, or the function when it
 * is not traced) where the presets of scope apply, or NULL: call itself. */
void *prof_framework_stand_in(const char *name, void *call, unsigned scope);

#endif
