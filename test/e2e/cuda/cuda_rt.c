/* A program of the CUDA runtime API, linked against the fake libcudart.so.13 (or, for
 * "bench", either). Prints every call's result and, at the end, the fake libraries' own
 * call counts (counts_rt NAME=N ..., counts_drv NAME=N ...).
 *
 *   cuda_rt basic N   N rounds of malloc, copy in, three launches, sync, copy out, free
 *   cuda_rt entry     driver pointers from cudaGetDriverEntryPoint[ByVersion]
 *   cuda_rt bench N   N calls of cudaGetDeviceCount; prints ns per call */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fake_cuda.h"

#undef cuGetProcAddress

cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static int bad; /* calls whose result was not the expected one */

static void expect(const char *what, int got, int want)
{
	if (got != want) {
		printf("unexpected %s=%d (want %d)\n", what, got, want);
		bad++;
	}
}

static void print_counts(const char *lib, const char *prefix)
{
	char sym[64];
	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
	snprintf(sym, sizeof sym, "%s_count", prefix);
	int (*count)(const char *) = h ? (int (*)(const char *))dlsym(h, sym) : 0;
	snprintf(sym, sizeof sym, "%s_name", prefix);
	const char *(*name)(unsigned) = h ? (const char *(*)(unsigned))dlsym(h, sym) : 0;
	printf("counts_%s", strcmp(prefix, "fakert") ? "drv" : "rt");
	for (unsigned i = 0; count && name && name(i); i++)
		printf(" %s=%d", name(i), count(name(i)));
	printf("\n");
}

static void basic(int rounds)
{
	dim3 g = {2, 3, 4}, b = {5, 6, 7};
	char host[FAKE_COPY] = {0};
	for (int i = 0; i < rounds; i++) {
		void *p = 0;
		expect("cudaMalloc", cudaMalloc(&p, FAKE_BYTES), cudaSuccess);
		expect("cudaMemcpy", cudaMemcpy(p, host, FAKE_COPY, cudaMemcpyHostToDevice), 0);
		expect("cudaLaunchKernel",
		       cudaLaunchKernel(FAKE_FUNC, g, b, FAKE_PARAMS, FAKE_SHMEM, FAKE_STREAM), 0);
		expect("__cudaLaunchKernel",
		       __cudaLaunchKernel(FAKE_FUNC, g, b, FAKE_PARAMS, FAKE_SHMEM, FAKE_STREAM), 0);
		expect("cudaLaunchKernel_ptsz",
		       cudaLaunchKernel_ptsz(FAKE_FUNC, g, b, FAKE_PARAMS, FAKE_SHMEM, FAKE_STREAM),
		       0);
		expect("cudaDeviceSynchronize", cudaDeviceSynchronize(), 0);
		expect("cudaMemcpy", cudaMemcpy(host, p, FAKE_COPY, cudaMemcpyDeviceToHost), 0);
		expect("cudaFree", cudaFree(p), 0);
	}
	/* the driver refuses to free 0: both calls carry the error */
	expect("cudaFree(0)", cudaFree(0), cudaErrorInvalidValue);
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);

static void entry(void)
{
	enum cudaDriverEntryPointQueryResult st;
	void *fp = 0;
	CUdeviceptr d = 0;
	expect("ByVersion(cuMemAlloc,3020)",
	       cudaGetDriverEntryPointByVersion("cuMemAlloc", &fp, 3020, cudaEnableDefault, &st),
	       0);
	expect("cuMemAlloc_v2",
	       fp ? ((CUresult(*)(CUdeviceptr *, size_t))fp)(&d, FAKE_BYTES) : FAKE_MISSING, 0);
	/* the 32-bit ABI of 2.0: another function, not listed, handed back as it is */
	expect("ByVersion(cuMemAlloc,2000)",
	       cudaGetDriverEntryPointByVersion("cuMemAlloc", &fp, 2000, cudaEnableDefault, &st),
	       0);
	unsigned small = 0;
	expect("cuMemAlloc",
	       fp ? ((CUresult(*)(unsigned *, unsigned))fp)(&small, FAKE_BYTES) : FAKE_MISSING, 0);
	/* deprecated in 13, still exported and called */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	expect("EntryPoint(cuLaunchKernel,per-thread)",
	       cudaGetDriverEntryPoint("cuLaunchKernel", &fp, cudaEnablePerThreadDefaultStream, &st),
	       0);
#pragma GCC diagnostic pop
	expect("cuLaunchKernel_ptsz",
	       fp ? ((launch_fn)fp)(FAKE_FUNC, 2, 3, 4, 5, 6, 7, FAKE_SHMEM, FAKE_STREAM,
				    FAKE_PARAMS, FAKE_EXTRA)
		  : FAKE_MISSING,
	       0);
	/* the getter itself, then a lookup through it */
	void *gp = 0;
	expect("ByVersion(cuGetProcAddress,12000)",
	       cudaGetDriverEntryPointByVersion("cuGetProcAddress", &gp, 12000, 0, &st), 0);
	CUdriverProcAddressQueryResult dst;
	fp = 0;
	expect("cuGetProcAddress_v2(cuCtxSynchronize,13000)",
	       gp ? ((CUresult(*)(const char *, void **, int, cuuint64_t,
				  CUdriverProcAddressQueryResult *))gp)("cuCtxSynchronize", &fp,
									 13000, 0, &dst)
		  : FAKE_MISSING,
	       0);
	expect("cuCtxSynchronize_v2", fp ? ((CUresult(*)(CUcontext))fp)(0) : FAKE_MISSING, 0);
	/* not listed: handed back as it is */
	expect("ByVersion(cuDeviceGet,2000)",
	       cudaGetDriverEntryPointByVersion("cuDeviceGet", &fp, 2000, 0, &st), 0);
	CUdevice dev;
	expect("cuDeviceGet", fp ? ((CUresult(*)(CUdevice *, int))fp)(&dev, 0) : FAKE_MISSING, 0);
}

static void bench(long n)
{
	int count = 0;
	struct timespec a, b;
	cudaGetDeviceCount(&count);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		cudaGetDeviceCount(&count);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("ns_per_call=%.1f\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "basic";
	if (!strcmp(mode, "basic"))
		basic(argc > 2 ? atoi(argv[2]) : 3);
	else if (!strcmp(mode, "entry"))
		entry();
	else if (!strcmp(mode, "bench")) {
		bench(argc > 2 ? atol(argv[2]) : 1000000);
		return 0;
	} else
		return 2;
	printf("bad=%d\n", bad);
	print_counts("libcudart.so.13", "fakert");
	print_counts("libcuda.so.1", "fakecu");
	return 0;
}
