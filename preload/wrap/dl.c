/* dlsym hands back the stub of a traced function: ctypes (MXNet's Python binding calls
 * every MX* function this way) and plugin loaders never go through a PLT, so patching
 * GOTs alone would not see them. It is also where objects loaded since the last look
 * get their GOTs patched. dlsym finds RTLD_NEXT relative to its caller, so every path
 * that does not trace ends in a tail call to the real one (the caller stays the
 * program's code, not libprof). dlvsym is not wrapped: it is how libprof finds the real
 * dlsym.
 *
 * It also hands back CUDA's wrappers (cuda_getproc.c) for the names cuda_funcs.h lists:
 * libcudart takes cuGetProcAddress_v2 from libcuda's handle this way, Triton
 * cuLaunchKernelEx. Those lookups are not tail calls; for RTLD_DEFAULT that moves the
 * scope searched to libprof's (the global one), where libprof's own definition of the
 * name is found first either way. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "preload/wrap/alloc_got.h"
#include "preload/gpu/cuda_api.h"
#include "preload/wrap/dl.h"
#include "preload/core/state.h"
#include "preload/trace/trace.h"

#define EXPORT __attribute__((visibility("default")))

static void *(*real_dlsym)(void *, const char *);

static void resolve(void)
{
	real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!real_dlsym)
		real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym",
								     "GLIBC_2.2.5");
}

void *prof_real_dlsym(void *handle, const char *name)
{
	if (!real_dlsym)
		resolve();
	return real_dlsym(handle, name);
}

static int tracing(void *handle)
{
	/* RTLD_NEXT and RTLD_DEFAULT depend on the caller's scope: those lookups stay
	 * untraced, so the tail call keeps the program's code as the caller */
	return handle != RTLD_NEXT && handle != RTLD_DEFAULT && prof_trace_enabled() &&
	       prof_proc && !prof_thr.busy;
}

static void *traced(const char *name, void *real)
{
	struct prof_thread *t = &prof_thr;
	t->busy++;
	prof_trace_patch_loaded();
	void *r = prof_trace_lookup(name, real);
	t->busy--;
	return r;
}

__attribute__((noinline)) static void *cuda_lookup(void *handle, const char *name,
						   const void *caller)
{
	void *p = prof_cuda_dlsym(name, real_dlsym(handle, name), caller);
	return tracing(handle) ? traced(name, p) : p;
}

EXPORT __attribute__((optimize("optimize-sibling-calls"))) void *dlsym(void *handle, const char *name)
{
	if (!real_dlsym)
		resolve();
	prof_alloc_got_refresh(handle); /* a RTLD_DEEPBIND library loaded since */
	if (unlikely(prof_cuda_maybe(name)) && handle != RTLD_NEXT && prof_cuda_wraps(name))
		return cuda_lookup(handle, name, __builtin_return_address(0));
	if (!tracing(handle))
		return real_dlsym(handle, name); /* tail call */
	return traced(name, real_dlsym(handle, name));
}
