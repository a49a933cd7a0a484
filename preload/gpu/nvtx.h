/* NVTX v3 ranges and marks (preload/gpu/nvtx.c). */
#ifndef PROF_PRELOAD_NVTX_H
#define PROF_PRELOAD_NVTX_H

/* Points NVTX_INJECTION64_PATH at libprof.so unless the user set it: every NVTX instance
 * (one per DSO that includes the header-only NVTX v3) then finds libprof on first use.
 * Called once, from the constructor, in a process that profiles. */
void prof_nvtx_setup(void);

#endif
