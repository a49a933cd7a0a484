/* A fake libcuda.so.1 for libprof's CUDA tests (no GPU needed). Each function counts
 * its calls (fakecu_count), checks the arguments the test programs pass (so a wrapper
 * that loses or shifts an argument shows up as CUDA_ERROR_INVALID_VALUE) and returns
 * CUDA_SUCCESS. cuGetProcAddress[_v2] resolves (name, cudaVersion, flags) the way the
 * real driver does: the newest ABI the version admits, the per-thread one when asked
 * for and there is one. Built with the toolkit's cuda.h: the prototypes are checked. */
#include <pthread.h>
#include <string.h>

#include <cuda.h>

#include "fake_cuda.h"

#undef cuGetProcAddress /* cuda.h maps it to the 5-argument _v2; both are defined here */
#undef cuMemAlloc       /* the 32-bit ABI of CUDA 2.0, still exported by the driver */

#define EXPORT __attribute__((visibility("default")))

static const char *const names[] = {
	"cuInit", "cuDriverGetVersion", "cuGetProcAddress", "cuGetProcAddress_v2",
	"cuMemAlloc", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
	"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
	"cuCtxSynchronize", "cuCtxSynchronize_v2", "cuStreamSynchronize", "cuDeviceGet",
	"cuMemAllocPitch_v2", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemCreate", "cuMemRelease",
	"cuMemAllocHost_v2", "cuMemFreeHost",
};
#define NNAMES (sizeof names / sizeof *names)
static int counts[NNAMES];

static void hit(const char *name)
{
	for (unsigned i = 0; i < NNAMES; i++)
		if (!strcmp(names[i], name))
			__atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED);
}

EXPORT int fakecu_count(const char *name)
{
	for (unsigned i = 0; i < NNAMES; i++)
		if (!strcmp(names[i], name))
			return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
	return -1;
}

EXPORT const char *fakecu_name(unsigned i)
{
	return i < NNAMES ? names[i] : 0;
}

static CUresult check(const char *name, int ok)
{
	hit(name);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuInit(unsigned int flags)
{
	return check("cuInit", flags == 0);
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return check("cuDriverGetVersion", 1);
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	*d = ordinal;
	return check("cuDeviceGet", ordinal == 0);
}

static unsigned long long next_ptr = FAKE_DEVPTR;

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	*p = __atomic_fetch_add(&next_ptr, 0x1000, __ATOMIC_RELAXED);
	return check("cuMemAlloc_v2", bytes == FAKE_BYTES);
}

EXPORT CUresult cuMemAlloc(unsigned int *p, unsigned int bytes)
{
	*p = 0x1000;
	return check("cuMemAlloc", bytes == FAKE_BYTES);
}

/* Freeing 0 is the error case the tests record a result code from. */
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	return check("cuMemFree_v2", p != 0);
}

/* Rows padded to FAKE_PITCH_ALIGN bytes. */
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
				   unsigned int element)
{
	*pitch = (width + FAKE_PITCH_ALIGN - 1) / FAKE_PITCH_ALIGN * FAKE_PITCH_ALIGN;
	*p = __atomic_fetch_add(&next_ptr, 0x100000, __ATOMIC_RELAXED);
	return check("cuMemAllocPitch_v2", width && height && (element == 4 || element == 8 ||
								 element == 16));
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s)
{
	*p = __atomic_fetch_add(&next_ptr, 0x1000, __ATOMIC_RELAXED);
	return check("cuMemAllocAsync", bytes == FAKE_BYTES && s == FAKE_STREAM);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	return check("cuMemFreeAsync", p != 0 && s == FAKE_STREAM);
}

/* Page-locked host memory: addresses of its own range, never touched. */
static unsigned long long next_host = FAKE_HOSTPTR;

EXPORT CUresult cuMemAllocHost_v2(void **p, size_t bytes)
{
	*p = (void *)__atomic_fetch_add(&next_host, 0x100000, __ATOMIC_RELAXED);
	return check("cuMemAllocHost_v2", bytes > 0);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	return check("cuMemFreeHost", (unsigned long long)p >= FAKE_HOSTPTR);
}

/* Handles are small numbers here; a real driver's are opaque 64-bit values. */
static unsigned long long next_handle = 1;

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t bytes,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	*h = __atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED);
	return check("cuMemCreate", bytes && prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
					    flags == 0);
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	return check("cuMemRelease", h != 0 && h < next_handle);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	return check("cuMemcpyHtoD_v2", dst >= FAKE_DEVPTR && src && n == FAKE_COPY);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	return check("cuMemcpyDtoH_v2", dst && src >= FAKE_DEVPTR && n == FAKE_COPY);
}

/* 11 arguments: the last five travel on the stack */
static int launch_ok(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		     unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
		     void **extra)
{
	return f == FAKE_FUNC && gx == 2 && gy == 3 && gz == 4 && bx == 5 && by == 6 && bz == 7 &&
	       shmem == FAKE_SHMEM && s == FAKE_STREAM && params == FAKE_PARAMS &&
	       extra == FAKE_EXTRA;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			       unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
			       void **params, void **extra)
{
	return check("cuLaunchKernel", launch_ok(f, gx, gy, gz, bx, by, bz, shmem, s, params,
						 extra));
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
				    CUstream s, void **params, void **extra)
{
	return check("cuLaunchKernel_ptsz", launch_ok(f, gx, gy, gz, bx, by, bz, shmem, s,
						      params, extra));
}

static int config_ok(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	return c && c->gridDimX == 2 && c->blockDimZ == 7 && c->hStream == FAKE_STREAM &&
	       f == FAKE_FUNC && params == FAKE_PARAMS && extra == FAKE_EXTRA;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
				 void **extra)
{
	return check("cuLaunchKernelEx", config_ok(c, f, params, extra));
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
				      void **extra)
{
	return check("cuLaunchKernelEx_ptsz", config_ok(c, f, params, extra));
}

EXPORT CUresult cuCtxSynchronize(void)
{
	return check("cuCtxSynchronize", 1);
}

EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	return check("cuCtxSynchronize_v2", ctx == 0);
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	return check("cuStreamSynchronize", s == FAKE_STREAM);
}

/* ---- cuGetProcAddress ---- */

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
				 cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *status);

static const struct entry {
	const char *base;
	int since;
	int per_thread;
	void *fn;
} entries[] = {
	{"cuInit", 2000, 0, (void *)cuInit},
	{"cuDriverGetVersion", 2020, 0, (void *)cuDriverGetVersion},
	{"cuDeviceGet", 2000, 0, (void *)cuDeviceGet},
	{"cuGetProcAddress", 11030, 0, (void *)cuGetProcAddress},
	{"cuGetProcAddress", 12000, 0, (void *)cuGetProcAddress_v2},
	{"cuMemAlloc", 2000, 0, (void *)cuMemAlloc},
	{"cuMemAlloc", 3020, 0, (void *)cuMemAlloc_v2},
	{"cuMemFree", 3020, 0, (void *)cuMemFree_v2},
	{"cuMemAllocPitch", 3020, 0, (void *)cuMemAllocPitch_v2},
	{"cuMemAllocAsync", 11020, 0, (void *)cuMemAllocAsync},
	{"cuMemFreeAsync", 11020, 0, (void *)cuMemFreeAsync},
	{"cuMemCreate", 10020, 0, (void *)cuMemCreate},
	{"cuMemAllocHost", 3020, 0, (void *)cuMemAllocHost_v2},
	{"cuMemFreeHost", 2000, 0, (void *)cuMemFreeHost},
	{"cuMemRelease", 10020, 0, (void *)cuMemRelease},
	{"cuMemcpyHtoD", 3020, 0, (void *)cuMemcpyHtoD_v2},
	{"cuMemcpyDtoH", 3020, 0, (void *)cuMemcpyDtoH_v2},
	{"cuLaunchKernel", 4000, 0, (void *)cuLaunchKernel},
	{"cuLaunchKernel", 7000, 1, (void *)cuLaunchKernel_ptsz},
	{"cuLaunchKernelEx", 11060, 0, (void *)cuLaunchKernelEx},
	{"cuLaunchKernelEx", 11060, 1, (void *)cuLaunchKernelEx_ptsz},
	{"cuCtxSynchronize", 2000, 0, (void *)cuCtxSynchronize},
	{"cuCtxSynchronize", 13000, 0, (void *)cuCtxSynchronize_v2},
	{"cuStreamSynchronize", 2000, 0, (void *)cuStreamSynchronize},
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
		       CUdriverProcAddressQueryResult *status)
{
	const struct entry *best = 0;
	int known = 0;
	for (int pass = 0; pass < 2 && !best; pass++) {
		/* per-thread first when asked for, then the legacy one */
		int want_pt = pass == 0 && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
		for (unsigned i = 0; i < sizeof entries / sizeof *entries; i++) {
			const struct entry *e = &entries[i];
			if (strcmp(e->base, symbol))
				continue;
			known = 1;
			if (e->since <= version && e->per_thread == want_pt &&
			    (!best || e->since > best->since))
				best = e;
		}
	}
	*pfn = best ? best->fn : 0;
	if (status)
		*status = best ? CU_GET_PROC_ADDRESS_SUCCESS
			  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
				  : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
				 cuuint64_t flags)
{
	hit("cuGetProcAddress");
	return lookup(symbol, pfn, version, flags, 0);
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	hit("cuGetProcAddress_v2");
	return lookup(symbol, pfn, version, flags, status);
}
