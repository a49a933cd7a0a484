/* torch.compile's ranges that the RecordFunction callbacks miss (torch_compiled.c):
 * dynamo's cache lookups and compiled regions, inductor's generated kernels. */
#ifndef PROF_FRAMEWORKS_TORCH_COMPILED_H
#define PROF_FRAMEWORKS_TORCH_COMPILED_H

#include <stdint.h>

/* Hooks (presets.c) on RecordFunction(RecordScope), RecordFunction::before(variant, long),
 * ~RecordFunction(), aoti_record_function_start and aoti_record_function_end. */
uint32_t prof_torch_rf_constructed(const uint64_t *args);
uint32_t prof_torch_rf_before(const uint64_t *args);
uint32_t prof_torch_rf_destroyed(const uint64_t *args);
uint32_t prof_torch_aoti_start(const uint64_t *args);
uint32_t prof_torch_aoti_end(const uint64_t *args);

/* Whether the innermost range open on this thread is rf's, or an inductor kernel's
 * (torch_callbacks.c's FUNCTION callback then opens none for rf). */
int prof_torch_compiled_opened(const void *rf);

/* PROFILER_INDUCTOR_KERNELS=1: inductor's CPU kernels name themselves (set at load). */
void prof_torch_inductor_kernel_names(void);

#endif
