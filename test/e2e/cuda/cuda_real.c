/* Calls through the real libcudart.so.13 on a machine that may have no driver, or over
 * the fake libcuda.so.1: each call's result is printed (rc_NAME=N), to be found again in
 * libprof's events, and the fake driver's call counts when it is the driver. */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);

int main(void)
{
	int n = -1;
	void *p = 0;
	dim3 one = {1, 1, 1};
	printf("rc_cudaGetDeviceCount=%d\n", (int)cudaGetDeviceCount(&n));
	printf("rc_cudaMalloc=%d\n", (int)cudaMalloc(&p, 1024));
	printf("rc___cudaLaunchKernel=%d\n", (int)__cudaLaunchKernel(0, one, one, 0, 0, 0));
	printf("rc_cudaLaunchKernel_ptsz=%d\n", (int)cudaLaunchKernel_ptsz(0, one, one, 0, 0, 0));
	printf("rc_cudaDeviceSynchronize=%d\n", (int)cudaDeviceSynchronize());
	printf("rc_cudaFree=%d\n", (int)cudaFree(p));
	printf("devices=%d\n", n);
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	int (*count)(const char *) = h ? (int (*)(const char *))dlsym(h, "fakecu_count") : 0;
	const char *(*name)(unsigned) = h ? (const char *(*)(unsigned))dlsym(h, "fakecu_name") : 0;
	if (count && name) {
		printf("counts_drv");
		for (unsigned i = 0; name(i); i++)
			printf(" %s=%d", name(i), count(name(i)));
		printf("\n");
	}
	return 0;
}
