/* CUDA runtime and driver API calls as host-side events (category "cuda_api").
 *
 * Each call is one complete event named after the function (cudaMalloc,
 * __cudaLaunchKernel, cuMemAlloc_v2, cuLaunchKernel_ptsz), nested like every other event,
 * with:
 *   a  a correlation id from prof_cuda_next_correlation(), one per call, unique in the
 *      process. CUPTI's records carry CUPTI's own ids; these do not match them.
 *   b  the CUresult / cudaError_t it returned (the convention of CUPTI's API records,
 *      preload/common/event.h)
 *   c  0
 * How the calls are reached: cuda_api.c (the wrappers) and cuda_getproc.c (driver
 * pointers handed out by cuGetProcAddress, cudaGetDriverEntryPoint* and dlsym). While
 * libprof holds CUPTI with its API records on (cupti.c), those records are the cuda_api
 * events and the wrappers record nothing. */
#ifndef PROF_PRELOAD_CUDA_API_H
#define PROF_PRELOAD_CUDA_API_H

#include <stdint.h>

/* Ids for correlating with host events; starts at 1. */
uint64_t prof_cuda_next_correlation(void);

/* dl.c: whether dlsym of name may need cuda_getproc.c (a name starting with "cu" or
 * "__cu"); cheap, for every dlsym. */
static inline int prof_cuda_maybe(const char *name)
{
	return name && ((name[0] == 'c' && name[1] == 'u') ||
			(name[0] == '_' && name[1] == '_' && name[2] == 'c' && name[3] == 'u'));
}
/* Whether name is a function libprof wraps (then dlsym must not tail-call). */
int prof_cuda_wraps(const char *name);
/* What dlsym hands back for name, which glibc's dlsym found at p, looked up by code at
 * caller: a wrapper calling p, or p, or NULL where the only definition found is
 * libprof's own wrapper and no real function stands behind it. */
void *prof_cuda_dlsym(const char *name, void *p, const void *caller);

/* ---- between cuda_api.c and cuda_getproc.c ---- */

enum cuda_kind {
	CUDA_PLAIN,            /* a call: recorded and forwarded */
	CUDA_RT_ENTRY,         /* cudaGetDriverEntryPoint(symbol, pfn, flags, status) */
	CUDA_RT_ENTRY_VERSION, /* cudaGetDriverEntryPointByVersion(symbol, pfn, version, ...) */
	CUDA_DRV_GETPROC,      /* cuGetProcAddress[_v2](symbol, pfn, version, flags[, status]) */
};

struct cuda_func {
	const char *name;
	const char *base;
	uint32_t since; /* 0: a runtime function */
	uint8_t pt;
	uint8_t kind;
};

extern const struct cuda_func prof_cuda_funcs[];
extern const unsigned prof_cuda_nfuncs;

/* Whether CUDA calls are wrapped at all (PROFILER_CUDA). */
int prof_cuda_enabled(void);
/* The function's index, by exported name or by base name (the first row of that base:
 * the others follow it); -1 when not listed. */
int prof_cuda_by_name(const char *name);
int prof_cuda_by_base(const char *base);
/* A wrapper of function f that calls real (one per distinct real pointer, a few per
 * function); NULL when f's are all taken by other pointers. */
void *prof_cuda_claim(int f, void *real);
/* Whether p is code of libprof.so (one of its wrappers). */
int prof_cuda_is_ours(const void *p);
/* The real function behind f's exported wrapper for a call from caller, NULL if none. */
void *prof_cuda_resolve_exported(int f, const void *caller);
/* cuda_getproc.c: the pointer a driver getter hands back for symbol, found at p; version
 * 0 when the getter takes none. */
void *prof_cuda_wrap_driver(const char *symbol, void *p, uint32_t version, uint64_t flags);

#endif
