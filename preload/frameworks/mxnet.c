/* MXNet: its profiler's start and stop (PROFILER_FOLLOW) and its operators' names, read
 * from MXNet 1.x's own structures. */
#include <stddef.h>

#include "preload/core/state.h"
#include "preload/frameworks/mxnet.h"
#include "prof.h"

/* PROFILER_FOLLOW: MXNet's profiler.set_state('run'|'stop') ends in this call. */
uint32_t prof_mxnet_follow(const uint64_t *args)
{
	if ((int)args[0])
		prof_resume();
	else
		prof_pause();
	return 0;
}

/* MXNet runs each operator on an engine thread in
 * ThreadedEngine::ExecuteOprBlock(RunContext, OprBlock *): its event is named after the
 * operator, read where MXNet 1.x keeps it (src/engine/threaded_engine.h): OprBlock::opr
 * at 8; ThreadedOpr::opr_name at 88, after the AsyncFn (32 bytes; Opr has no vtable),
 * two vectors and the FnProperty (checked on 1.9.1 in gdb). RunContext is passed in
 * memory, so the OprBlock is the second integer argument after `this`. */
uint32_t prof_mxnet_operator(const uint64_t *args)
{
	const char *block = (const char *)args[1];
	const char *opr = block ? *(const char *const *)(block + 8) : 0;
	const char *name = opr ? *(const char *const *)(opr + 88) : 0;
	struct prof_thread *t = &prof_thr;
	if (!name || !prof_proc || t->busy)
		return 0;
	t->busy++;
	uint32_t id = prof_intern(*name ? name : "(engine task)");
	t->busy--;
	return id + 1;
}
