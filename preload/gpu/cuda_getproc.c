/* Driver functions reached without a PLT, handed back as cuda_api.c's wrappers.
 *
 * libcudart dlopens libcuda.so.1, dlsyms cuGetProcAddress_v2 (and cuInit) from that
 * handle, asks it for "cuGetProcAddress" itself, and then fetches every entry point
 * through what that returned; Triton dlsyms cuLaunchKernelEx; PyTorch's VMM calls come
 * from cudaGetDriverEntryPointByVersion. So: dlsym (dl.c) hands back a wrapper for a
 * listed name, the getters' wrappers replace the pointer they return by a wrapper, and
 * the answer to the self-query is the getter's own wrapper, so every later lookup comes
 * back here too. All of this runs when pointers are looked up, never on a call.
 *
 * A pointer is named after the exported symbol it is (dladdr), so that the runtime's
 * cuMemAlloc_v2 and a -lcuda program's are one row. A pointer that is some other
 * exported symbol (the 32-bit ABI of cuMemAlloc asked for with version 2000) is left
 * alone; one without a symbol of its own is named from the version asked for, as the
 * driver picks it (cuda_funcs.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "preload/gpu/cuda_api.h"
#include "preload/core/state.h"

/* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (cuda.h), cudaEnablePerThreadDefaultStream
 * (driver_types.h) */
#define PER_THREAD_DEFAULT_STREAM 2

/* Among the rows of base from first: the newest ABI the version admits (any, when
 * version is 0), per-thread when asked and there is one. */
static int by_version(int first, const char *base, uint32_t version, int pt)
{
	int best = -1;
	for (unsigned i = (unsigned)first;
	     i < prof_cuda_nfuncs && !strcmp(prof_cuda_funcs[i].base, base); i++) {
		const struct cuda_func *f = &prof_cuda_funcs[i];
		if (!f->since || (version && f->since > version) || f->pt != pt)
			continue;
		if (best < 0 || f->since > prof_cuda_funcs[best].since)
			best = (int)i;
	}
	/* the driver hands out the legacy function where there is no per-thread one */
	return best < 0 && pt ? by_version(first, base, version, 0) : best;
}

void *prof_cuda_wrap_driver(const char *symbol, void *p, uint32_t version, uint64_t flags)
{
	if (!p || !symbol || !prof_cuda_enabled())
		return p;
	int first = prof_cuda_by_base(symbol);
	if (first < 0 || prof_cuda_is_ours(p)) /* not listed, or wrapped already */
		return p;
	int f = -1;
	Dl_info di;
	if (dladdr(p, &di) && di.dli_sname && di.dli_saddr == p) {
		int g = prof_cuda_by_name(di.dli_sname);
		if (g >= 0 && !strcmp(prof_cuda_funcs[g].base, symbol))
			f = g;
	} else {
		f = by_version(first, symbol, version, (flags & PER_THREAD_DEFAULT_STREAM) != 0);
	}
	void *w = f >= 0 ? prof_cuda_claim(f, p) : 0;
	return w ? w : p;
}

void *prof_cuda_dlsym(const char *name, void *p, const void *caller)
{
	int f = prof_cuda_by_name(name);
	if (!p || f < 0 || !prof_cuda_enabled())
		return p;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	void *r;
	if (prof_cuda_is_ours(p)) {
		/* libprof's exported wrapper (RTLD_DEFAULT finds it first): it is the answer only
		 * if a real function stands behind it, as without libprof there would be none */
		r = prof_cuda_resolve_exported(f, caller) ? p : 0;
	} else {
		r = prof_cuda_claim(f, p);
		if (!r)
			r = p;
	}
	t->busy--;
	return r;
}
