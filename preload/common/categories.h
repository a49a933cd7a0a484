/* Category names: what libprof.so registers (or, for the fixed ones, numbers: event.h)
 * and what the readers in formats/ look for, spelled once. A reader that compares a
 * category by name uses these. */
#ifndef PROF_COMMON_CATEGORIES_H
#define PROF_COMMON_CATEGORIES_H

/* the fixed categories (enum prof_category), named by prof_fixed_category_name */
#define PROF_CATNAME_MEMORY "memory"
#define PROF_CATNAME_USER "user"
#define PROF_CATNAME_MARK "mark"
#define PROF_CATNAME_STEP "step"
#define PROF_CATNAME_COUNTER "counter"
#define PROF_CATNAME_LOST "lost"

/* registered at run time (prof_category) */
#define PROF_CATNAME_CUDA_API "cuda_api"       /* CUDA runtime/driver calls */
#define PROF_CATNAME_CUDA_KERNEL "cuda_kernel" /* CUPTI: kernels on the GPU */
#define PROF_CATNAME_CUDA_MEMCPY "cuda_memcpy" /* CUPTI: copies */
#define PROF_CATNAME_CUDA_MEMSET "cuda_memset" /* CUPTI: memsets */
#define PROF_CATNAME_GPU_MEMORY "gpu_memory"   /* device allocations */
#define PROF_CATNAME_NVTX "nvtx"               /* NVTX ranges without a domain */
#define PROF_CATNAME_TRACE "trace"             /* PROFILER_TRACE functions */
#define PROF_CATNAME_ORT_API "ORT_API"         /* onnxruntime's C API */

#endif
