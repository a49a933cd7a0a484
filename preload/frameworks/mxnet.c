/* MXNet: its profiler's start and stop (PROFILER_FOLLOW) and its operators' names, read
 * from MXNet 1.x's own structures. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "preload/core/state.h"
#include "preload/frameworks/mxnet.h"
#include "preload/trace/trace.h"
#include "preload/common/event.h"
#include "prof.h"
#include "preload/core/env_set.h"
#include "preload/common/env.h"

/* PROFILER_FOLLOW: MXNet's profiler.set_state('run'|'stop') ends in this call. Neither
 * call is in MXNet's table (it records calls made while it runs, and switches in the
 * middle of these), so neither is in libprof's: its "MXNet C API Calls" count equals
 * MXNet's. */
uint32_t prof_mxnet_follow(const uint64_t *args)
{
	if ((int)args[0])
		prof_resume();
	else
		prof_pause();
	return PROF_HOOK_PASS;
}

/* MXNet's other way to start its profiler: MXNET_PROFILER_AUTOSTART, an integer read by
 * dmlc::GetEnv in the Profiler's constructor (src/profiler/profiler.cc), which sets the
 * state to running without any call libprof sees. Its profiler then runs from its first
 * use, which is libmxnet's start as near as libprof can tell. */
void prof_mxnet_loaded(void)
{
	static int checked;
	if (!prof_cfg.follow || __atomic_exchange_n(&checked, 1, __ATOMIC_RELAXED))
		return;
	const char *v = prof_getenv("MXNET_PROFILER_AUTOSTART");
	if (v && strtol(v, 0, 10) != 0)
		prof_resume();
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
	if (name && !*name)
		return PROF_HOOK_PASS; /* unnamed engine work: MXNet's profiler skips it too */
	/* Following MXNet's profiler, an operator is its when it was queued while the
	 * profiler ran, as MXNet decides (OprBlock::profiling, a bool at 28 after the wait
	 * count, the ThreadedOpr pointer, the Context and the priority), not when it runs: a
	 * warm-up iteration's operators that run after set_state('run') are not counted. */
	if (prof_cfg.follow && block && !block[28])
		return PROF_HOOK_PASS;
	if (!name || !prof_proc || t->busy)
		return 0;
	t->busy++;
	uint32_t id = prof_intern(name);
	t->busy--;
	return id + 1;
}

/* MXNet's engine workers carry the program's name ("python3", MXNet names none): in the
 * outputs each is "MXNet engine cpu/0 #2", after the device of the first operator it
 * completed (OprBlock::ctx at 16: DeviceType, then dev_id) and its order in the process. */
static void name_engine_thread(const char *block)
{
	static uint32_t workers;
	struct prof_slot *slot = prof_thr.w.slot;
	/* the main thread runs some operators itself (NaiveEngine, asynchronous ones): it
	 * keeps its name, and takes no number */
	if (!block || !slot || !prof_proc || slot->tid == prof_proc->pid ||
	    atomic_load_explicit(&slot->name_id, memory_order_relaxed))
		return;
	int dev_type = *(const int *)(block + 16), dev_id = *(const int *)(block + 20);
	const char *dev = dev_type == 2 ? "gpu" : dev_type == 3 ? "cpu_pinned" :
			  dev_type == 5 ? "cpu_shared" : "cpu";
	char name[64];
	snprintf(name, sizeof name, "MXNet engine %s/%d #%u", dev, dev_id,
		 __atomic_add_fetch(&workers, 1, __ATOMIC_RELAXED));
	prof_thread_give_name(name);
}

/* ThreadedEngine::OnCompleteStatic(Engine *, void *opr_block, const dmlc::Error *): the
 * completion callback an operator calls when its work is done, where MXNet's own
 * profiler stops the operator's clock. What follows inside ExecuteOprBlock (releasing the
 * operator's variables, waking a thread in WaitForVar or WaitForAll) is not the
 * operator's time: the sum before a wait read 9.46 ms against MXNet's 0.049 ms. Called
 * through a function pointer (its address taken, a GLOB_DAT slot); an asynchronous
 * operator's completion may come later or elsewhere: only the ExecuteOprBlock of the same
 * OprBlock, open on this thread, is ended. */
uint32_t prof_mxnet_operator_done(const uint64_t *args)
{
	prof_trace_end_now(prof_mxnet_operator, args[1]); /* the same OprBlock */
	name_engine_thread((const char *)args[1]);
	return PROF_HOOK_PASS;
}

/* PROFILER_MXNET_BULK=0: what MXNet's profiler does while it runs (its engine's bulk size
 * is 0 then), for the whole program: every operator is pushed on its own instead of in
 * ImperativeBulk segments, hybridized (CachedOp) graphs included. Set before MXNet reads
 * them (at its import); a value the user set wins. */
void prof_mxnet_bulk_off(void)
{
	static const char *const vars[] = {
		"MXNET_EXEC_BULK_EXEC_TRAIN", "MXNET_EXEC_BULK_EXEC_INFERENCE",
		"MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		prof_setenv(vars[i], "0", 0);
}

/* MXNet's storage manager (its profiler's "Device Storage"): StorageImpl::Alloc and Free
 * call DeviceStorageProfiler::OnAlloc / OnFree(const Storage::Handle &) for every block,
 * profiling or not; the Handle begins with dptr, size and the Context (its DeviceType:
 * 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared). Recorded as allocations of category
 * mxnet_memory (tabled "Memory: mxnet/cpu" or "mxnet/gpu"), not as calls. */
static void storage_event(const uint64_t *args, int alloc)
{
	static uint32_t cat_once, names_once, name_alloc, name_free;
	struct prof_thread *t = &prof_thr;
	const char *h = (const char *)args[1];
	if (!h || t->busy || !prof_proc || !__atomic_load_n(&prof_memory_on, __ATOMIC_RELAXED))
		return;
	uint64_t ptr = *(const uint64_t *)h, size = *(const uint64_t *)(h + 8);
	int dev_type = *(const int *)(h + 16);
	if (!ptr)
		return;
	t->busy++;
	uint8_t cat = prof_category_once(PROF_CATNAME_MXNET_MEMORY, &cat_once);
	if (unlikely(!__atomic_load_n(&names_once, __ATOMIC_ACQUIRE))) {
		name_alloc = prof_intern("Storage::Alloc");
		name_free = prof_intern("Storage::Free");
		__atomic_store_n(&names_once, 1, __ATOMIC_RELEASE);
	}
	uint64_t now = prof_now();
	if (alloc)
		prof_emit(t, cat, PROF_EV_COMPLETE, PROF_EVF_ALLOCS, name_alloc, t->depth, now,
			  now, ptr, size,
			  dev_type == 2 ? PROF_MXNET_STORAGE_GPU : PROF_MXNET_STORAGE_CPU);
	else
		prof_emit(t, cat, PROF_EV_COMPLETE, PROF_EVF_FREES, name_free, t->depth, now, now,
			  0, 0, ptr);
	t->busy--;
}

uint32_t prof_mxnet_storage_alloc(const uint64_t *args)
{
	storage_event(args, 1);
	return PROF_HOOK_PASS;
}

uint32_t prof_mxnet_storage_free(const uint64_t *args)
{
	storage_event(args, 0);
	return PROF_HOOK_PASS;
}
