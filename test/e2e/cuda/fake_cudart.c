/* A fake libcudart.so.13 for libprof's CUDA tests. Like the real runtime (cuda.md 1.2) it
 * has no NEEDED on libcuda: on first use it dlopens libcuda.so.1, takes
 * cuGetProcAddress_v2, cuDriverGetVersion and cuInit with dlsym from that handle, asks
 * cuGetProcAddress_v2 for "cuGetProcAddress" itself (11030 and 12000), and fetches the
 * driver functions it uses through the 12000 answer, by base name and ABI version. Its
 * exports carry the version node libcudart.so.13 (fake_cudart.map), as the real one's
 * do. Each runtime function counts its calls (fakert_count). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fake_cuda.h"

#undef cuGetProcAddress

/* Not in the C view of the headers (crt/device_functions.h declares them for C++;
 * the _ptsz forms are what per-thread-default-stream builds call). */
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static const char *const names[] = {
	"cudaMalloc", "cudaFree", "cudaMemcpy", "cudaLaunchKernel", "cudaLaunchKernel_ptsz",
	"__cudaLaunchKernel", "__cudaLaunchKernel_ptsz", "cudaDeviceSynchronize",
	"cudaGetDeviceCount", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
	"cudaMallocPitch", "cudaMalloc3D", "cudaMallocAsync", "cudaFreeAsync",
	"cudaMallocHost", "cudaFreeHost",
};
#define NNAMES (sizeof names / sizeof *names)
static int counts[NNAMES];

static void hit(const char *name)
{
	for (unsigned i = 0; i < NNAMES; i++)
		if (!strcmp(names[i], name))
			__atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED);
}

int fakert_count(const char *name)
{
	for (unsigned i = 0; i < NNAMES; i++)
		if (!strcmp(names[i], name))
			return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
	return -1;
}

const char *fakert_name(unsigned i)
{
	return i < NNAMES ? names[i] : 0;
}

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);
static getproc_fn getproc; /* the self-query's 12000 answer */
static struct {
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, unsigned, CUstream, void **, void **);
	CUresult (*launch_ptsz)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				unsigned, unsigned, CUstream, void **, void **);
	CUresult (*ctx_sync)(CUcontext);
	CUresult (*alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
	CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
	CUresult (*free_async)(CUdeviceptr, CUstream);
	CUresult (*alloc_host)(void **, size_t);
	CUresult (*free_host)(void *);
} drv;

static void *need(const char *base, int version, cuuint64_t flags)
{
	void *p = 0;
	CUdriverProcAddressQueryResult st;
	if (getproc(base, &p, version, flags, &st) || !p) {
		fprintf(stderr, "fake libcudart: no %s (%d)\n", base, version);
		exit(90);
	}
	return p;
}

static void init_once(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fake libcudart: %s\n", dlerror());
		exit(91);
	}
	getproc_fn gp = (getproc_fn)dlsym(h, "cuGetProcAddress_v2");
	CUresult (*version)(int *) = (CUresult(*)(int *))dlsym(h, "cuDriverGetVersion");
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
	int v = 0;
	if (!gp || !version || !init || version(&v) || init(0)) {
		fprintf(stderr, "fake libcudart: cannot start the driver\n");
		exit(92);
	}
	void *old = 0, *now = 0;
	CUdriverProcAddressQueryResult st;
	gp("cuGetProcAddress", &old, 11030, 0, &st);
	gp("cuGetProcAddress", &now, 12000, 0, &st);
	if (!old || !now) {
		fprintf(stderr, "fake libcudart: the self-query failed\n");
		exit(93);
	}
	getproc = (getproc_fn)now;
	*(void **)&drv.mem_alloc = need("cuMemAlloc", 3020, 0);
	*(void **)&drv.mem_free = need("cuMemFree", 3020, 0);
	*(void **)&drv.htod = need("cuMemcpyHtoD", 3020, 0);
	*(void **)&drv.dtoh = need("cuMemcpyDtoH", 3020, 0);
	*(void **)&drv.launch = need("cuLaunchKernel", 4000, CU_GET_PROC_ADDRESS_DEFAULT);
	*(void **)&drv.launch_ptsz =
		need("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	*(void **)&drv.ctx_sync = need("cuCtxSynchronize", 13000, 0);
	*(void **)&drv.alloc_pitch = need("cuMemAllocPitch", 3020, 0);
	*(void **)&drv.alloc_async = need("cuMemAllocAsync", 11020, 0);
	*(void **)&drv.free_async = need("cuMemFreeAsync", 11020, 0);
	*(void **)&drv.alloc_host = need("cuMemAllocHost", 3020, 0);
	*(void **)&drv.free_host = need("cuMemFreeHost", 2000, 0);
}

static void start(const char *name)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, init_once);
	hit(name);
}

static cudaError_t rt(CUresult r)
{
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	start("cudaMalloc");
	return rt(drv.mem_alloc((CUdeviceptr *)p, n));
}

cudaError_t cudaFree(void *p)
{
	start("cudaFree");
	return rt(drv.mem_free((CUdeviceptr)p));
}

cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
	start("cudaMallocPitch");
	return rt(drv.alloc_pitch((CUdeviceptr *)p, pitch, width, height, 4));
}

/* The extent travels on the stack (24 bytes, by value): rows of height * depth */
cudaError_t cudaMalloc3D(struct cudaPitchedPtr *p, struct cudaExtent e)
{
	start("cudaMalloc3D");
	CUdeviceptr d = 0;
	size_t pitch = 0;
	cudaError_t r = rt(drv.alloc_pitch(&d, &pitch, e.width, e.height * e.depth, 4));
	if (r == cudaSuccess)
		*p = (struct cudaPitchedPtr){(void *)d, pitch, e.width, e.height};
	return r;
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
	start("cudaMallocHost");
	return rt(drv.alloc_host(p, n));
}

cudaError_t cudaFreeHost(void *p)
{
	start("cudaFreeHost");
	return rt(drv.free_host(p));
}

cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
	start("cudaMallocAsync");
	return rt(drv.alloc_async((CUdeviceptr *)p, n, (CUstream)s));
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	start("cudaFreeAsync");
	return rt(drv.free_async((CUdeviceptr)p, (CUstream)s));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	start("cudaMemcpy");
	if (kind == cudaMemcpyHostToDevice)
		return rt(drv.htod((CUdeviceptr)dst, src, n));
	if (kind == cudaMemcpyDeviceToHost)
		return rt(drv.dtoh(dst, (CUdeviceptr)src, n));
	return cudaErrorInvalidMemcpyDirection;
}

static int dims_ok(dim3 g, dim3 b)
{
	return g.x == 2 && g.y == 3 && g.z == 4 && b.x == 5 && b.y == 6 && b.z == 7;
}

/* dim3 by value: two registers each, then the rest */
static cudaError_t launch(CUresult (*fn)(CUfunction, unsigned, unsigned, unsigned, unsigned,
					 unsigned, unsigned, unsigned, CUstream, void **, void **),
			  const void *func, dim3 g, dim3 b, void **args, size_t shmem,
			  cudaStream_t s)
{
	if (!dims_ok(g, b))
		return cudaErrorInvalidConfiguration;
	return rt(fn((CUfunction)func, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem,
		     (CUstream)s, args, FAKE_EXTRA));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem,
			     cudaStream_t s)
{
	start("cudaLaunchKernel");
	return launch(drv.launch, func, g, b, args, shmem, s);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 g, dim3 b, void **args,
				  size_t shmem, cudaStream_t s)
{
	start("cudaLaunchKernel_ptsz");
	return launch(drv.launch_ptsz, func, g, b, args, shmem, s);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t shmem,
			       cudaStream_t s)
{
	start("__cudaLaunchKernel");
	return launch(drv.launch, k, g, b, args, shmem, s);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args,
				    size_t shmem, cudaStream_t s)
{
	start("__cudaLaunchKernel_ptsz");
	return launch(drv.launch_ptsz, k, g, b, args, shmem, s);
}

cudaError_t cudaDeviceSynchronize(void)
{
	start("cudaDeviceSynchronize");
	return rt(drv.ctx_sync(0));
}

/* No driver call: the tests time the wrapper on it. */
cudaError_t cudaGetDeviceCount(int *n)
{
	hit("cudaGetDeviceCount");
	*n = 1;
	return cudaSuccess;
}

static cudaError_t entry(const char *symbol, void **fp, int version, unsigned long long flags,
			 enum cudaDriverEntryPointQueryResult *status)
{
	CUdriverProcAddressQueryResult st;
	CUresult r = getproc(symbol, fp, version, flags, &st);
	if (status)
		*status = st == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
			  : st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
				  ? cudaDriverEntryPointVersionNotSufficent
				  : cudaDriverEntryPointSymbolNotFound;
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorSymbolNotFound;
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fp, unsigned long long flags,
				    enum cudaDriverEntryPointQueryResult *status)
{
	start("cudaGetDriverEntryPoint");
	return entry(symbol, fp, 13000, flags, status);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fp, unsigned int version,
					     unsigned long long flags,
					     enum cudaDriverEntryPointQueryResult *status)
{
	start("cudaGetDriverEntryPointByVersion");
	return entry(symbol, fp, (int)version, flags, status);
}
