/* A program of the CUDA runtime API, linked against the fake libcudart.so.13 (or, for
 * "bench", either). Prints every call's result and, at the end, the fake libraries' own
 * call counts (counts_rt NAME=N ..., counts_drv NAME=N ...).
 *
 *   cuda_rt basic N   N rounds of malloc, copy in, three launches, sync, copy out, free
 *   cuda_rt entry     driver pointers from cudaGetDriverEntryPoint[ByVersion]
 *   cuda_rt memory    device memory every way libprof counts it (test/e2e/run.py
 *                     cuda_device_memory has the expected tables)
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

typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t,
			      const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);

static void *driver_entry(const char *name, unsigned version)
{
	enum cudaDriverEntryPointQueryResult st;
	void *fp = 0;
	expect(name, cudaGetDriverEntryPointByVersion(name, &fp, version, 0, &st), 0);
	return fp;
}

/* Device 0: pitched 1000 x 10 (rows of 1024 bytes), 3D 1000 x 10 x 3, async 4096, the
 * driver's pitched 1000 x 5; all freed. Device 1, through the driver's virtual memory
 * calls as PyTorch's expandable segments reach them: 2 MiB and 6 MiB made, the 2 MiB
 * released; 1 MiB made and released on the host (not device memory). Page-locked host
 * memory (cpu_pinned/0): 1 MiB through the runtime, freed; 256 KiB through the driver,
 * kept. */
static void memory(void)
{
	void *a = 0, *b = 0;
	size_t pitch = 0, pitch2 = 0;
	struct cudaPitchedPtr pp = {0};
	struct cudaExtent extent = {1000, 10, 3};
	expect("cudaMallocPitch", cudaMallocPitch(&a, &pitch, 1000, 10), 0);
	expect("pitch", (int)pitch, 1024);
	expect("cudaMalloc3D", cudaMalloc3D(&pp, extent), 0);
	expect("cudaMallocAsync", cudaMallocAsync(&b, FAKE_BYTES, FAKE_STREAM), 0);
	pitch_fn alloc_pitch = (pitch_fn)driver_entry("cuMemAllocPitch", 3020);
	create_fn create = (create_fn)driver_entry("cuMemCreate", 10020);
	release_fn release = (release_fn)driver_entry("cuMemRelease", 10020);
	if (!alloc_pitch || !create || !release)
		return;
	CUdeviceptr c = 0;
	expect("cuMemAllocPitch_v2", alloc_pitch(&c, &pitch2, 1000, 5, 8), 0);
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 1;
	CUmemGenericAllocationHandle h1 = 0, h2 = 0, h3 = 0;
	expect("cuMemCreate", create(&h1, 2 << 20, &prop, 0), 0);
	expect("cuMemCreate", create(&h2, 6 << 20, &prop, 0), 0);
	expect("cuMemRelease", release(h1), 0);
	prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
	prop.location.id = 0;
	expect("cuMemCreate(host)", create(&h3, 1 << 20, &prop, 0), 0);
	expect("cuMemRelease(host)", release(h3), 0);
	void *pinned = 0, *pinned2 = 0;
	CUresult (*alloc_host)(void **, size_t) =
		(CUresult(*)(void **, size_t))driver_entry("cuMemAllocHost", 3020);
	expect("cudaMallocHost", cudaMallocHost(&pinned, 1 << 20), 0);
	expect("cuMemAllocHost_v2", alloc_host ? alloc_host(&pinned2, 256 << 10) : FAKE_MISSING,
	       0);
	expect("cudaFreeHost", cudaFreeHost(pinned), 0);
	expect("cudaFree", cudaFree(a), 0);
	expect("cudaFree", cudaFree(pp.ptr), 0);
	expect("cudaFreeAsync", cudaFreeAsync(b, FAKE_STREAM), 0);
	expect("cudaFree", cudaFree((void *)c), 0);
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
	else if (!strcmp(mode, "memory"))
		memory();
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
