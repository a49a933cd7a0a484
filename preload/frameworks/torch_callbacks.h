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

#endif
