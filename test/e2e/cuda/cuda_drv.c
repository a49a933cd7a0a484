/* A program of the CUDA driver API, against the fake libcuda.so.1. Built twice:
 *   linked (-l:libcuda.so.1)  calls through the PLT, and cuGetProcAddress through it
 *   -DUSE_DLOPEN              Triton's way: dlopen("libcuda.so.1") and dlsym from the
 *                             handle; also TensorFlow's way of reaching the runtime
 *                             (dlsym from a libcudart.so.13 handle), and what
 *                             dlsym(RTLD_DEFAULT) says of functions nothing global defines
 * Prints every unexpected result (bad=N) and the fakes' call counts. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "fake_cuda.h"

#undef cuGetProcAddress

static int bad;

static void expect(const char *what, int got, int want)
{
	if (got != want) {
		printf("unexpected %s=%d (want %d)\n", what, got, want);
		bad++;
	}
}

static void print_counts(const char *lib, const char *prefix, const char *tag)
{
	char sym[64];
	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
	snprintf(sym, sizeof sym, "%s_count", prefix);
	int (*count)(const char *) = h ? (int (*)(const char *))dlsym(h, sym) : 0;
	snprintf(sym, sizeof sym, "%s_name", prefix);
	const char *(*name)(unsigned) = h ? (const char *(*)(unsigned))dlsym(h, sym) : 0;
	printf("counts_%s", tag);
	for (unsigned i = 0; count && name && name(i); i++)
		printf(" %s=%d", name(i), count(name(i)));
	printf("\n");
}

static CUlaunchConfig config(void)
{
	CUlaunchConfig c;
	memset(&c, 0, sizeof c);
	c.gridDimX = 2;
	c.blockDimZ = 7;
	c.hStream = FAKE_STREAM;
	return c;
}

#ifndef USE_DLOPEN

static void run(void)
{
	CUdeviceptr d = 0;
	CUdevice dev;
	CUlaunchConfig c = config();
	expect("cuInit", cuInit(0), 0);
	expect("cuDeviceGet", cuDeviceGet(&dev, 0), 0);
	expect("cuMemAlloc_v2", cuMemAlloc(&d, FAKE_BYTES), 0);
	expect("cuLaunchKernel", cuLaunchKernel(FAKE_FUNC, 2, 3, 4, 5, 6, 7, FAKE_SHMEM,
					        FAKE_STREAM, FAKE_PARAMS, FAKE_EXTRA), 0);
	expect("cuLaunchKernelEx", cuLaunchKernelEx(&c, FAKE_FUNC, FAKE_PARAMS, FAKE_EXTRA), 0);
	expect("cuCtxSynchronize", cuCtxSynchronize(), 0);
	expect("cuMemFree_v2(0)", cuMemFree(0), CUDA_ERROR_INVALID_VALUE);
	expect("cuMemFree_v2", cuMemFree(d), 0);
	/* the getter through the PLT, then the pointer it gave */
	void *fp = 0;
	CUdriverProcAddressQueryResult st;
	expect("cuGetProcAddress_v2", cuGetProcAddress_v2("cuLaunchKernel", &fp, 4000, 0, &st), 0);
	expect("cuLaunchKernel (pointer)",
	       fp ? ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				  unsigned, unsigned, CUstream, void **, void **))fp)(
			    FAKE_FUNC, 2, 3, 4, 5, 6, 7, FAKE_SHMEM, FAKE_STREAM, FAKE_PARAMS,
			    FAKE_EXTRA)
		  : FAKE_MISSING,
	       0);
}

#else

static void run(void)
{
	/* nothing global defines these: without libprof dlsym says NULL, and must still */
	printf("default_cudaMalloc=%d default_cuLaunchKernel=%d\n",
	       dlsym(RTLD_DEFAULT, "cudaMalloc") != 0, dlsym(RTLD_DEFAULT, "cuLaunchKernel") != 0);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("no libcuda.so.1: %s\n", dlerror());
		bad++;
		return;
	}
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
	CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **) =
		(CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))dlsym(
			h, "cuLaunchKernelEx");
	CUresult (*device_get)(CUdevice *, int) =
		(CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
	/* the 32-bit ABI's name: not listed, handed back as it is */
	CUresult (*alloc_old)(unsigned *, unsigned) =
		(CUresult(*)(unsigned *, unsigned))dlsym(h, "cuMemAlloc");
	CUlaunchConfig c = config();
	CUdevice dev;
	unsigned small;
	expect("cuInit", init ? init(0) : FAKE_MISSING, 0);
	for (int i = 0; i < 3; i++)
		expect("cuLaunchKernelEx",
		       launch_ex ? launch_ex(&c, FAKE_FUNC, FAKE_PARAMS, FAKE_EXTRA)
				 : FAKE_MISSING,
		       0);
	expect("cuDeviceGet", device_get ? device_get(&dev, 0) : FAKE_MISSING, 0);
	expect("cuMemAlloc", alloc_old ? alloc_old(&small, FAKE_BYTES) : FAKE_MISSING, 0);
	/* the runtime from a handle, as TensorFlow's loader does */
	void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	int (*rt_malloc)(void **, size_t) = rt ? (int (*)(void **, size_t))dlsym(rt, "cudaMalloc") : 0;
	int (*rt_free)(void *) = rt ? (int (*)(void *))dlsym(rt, "cudaFree") : 0;
	void *p = 0;
	expect("cudaMalloc", rt_malloc ? rt_malloc(&p, FAKE_BYTES) : FAKE_MISSING, 0);
	expect("cudaFree", rt_free ? rt_free(p) : FAKE_MISSING, 0);
}

#endif

int main(void)
{
	run();
	printf("bad=%d\n", bad);
	print_counts("libcudart.so.13", "fakert", "rt");
	print_counts("libcuda.so.1", "fakecu", "drv");
	return 0;
}
