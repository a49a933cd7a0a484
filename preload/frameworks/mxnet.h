/* MXNet's hooks (mxnet.c): its profiler's state changes, its engine's operators. */
#ifndef PROF_FRAMEWORKS_MXNET_H
#define PROF_FRAMEWORKS_MXNET_H

#include <stdint.h>

/* PROFILER_FOLLOW: MXSetProfilerState(state) and MXSetProcessProfilerState. */
uint32_t prof_mxnet_follow(const uint64_t *args);
/* PROFILER_FOLLOW: libmxnet is loaded; with MXNET_PROFILER_AUTOSTART its profiler runs
 * from here on, so recording does too. */
void prof_mxnet_loaded(void);
/* ThreadedEngine::ExecuteOprBlock: the operator's name id + 1, or 0. */
uint32_t prof_mxnet_operator(const uint64_t *args);

/* ThreadedEngine::OnCompleteStatic: the operator's event ends here. */
uint32_t prof_mxnet_operator_done(const uint64_t *args);

/* DeviceStorageProfiler::OnAlloc / OnFree: MXNet's storage allocations. */
uint32_t prof_mxnet_storage_alloc(const uint64_t *args);
uint32_t prof_mxnet_storage_free(const uint64_t *args);

/* PROFILER_MXNET_BULK=0: MXNet's bulk execution off (its environment, set at load). */
void prof_mxnet_bulk_off(void);

#endif
