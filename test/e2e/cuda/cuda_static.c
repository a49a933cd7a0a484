/* A program with the CUDA runtime linked statically (libcudart_static.a, nvcc's and
 * CMake's default), so no runtime call passes through an export libprof could interpose.
 * Over the fake libcuda.so.1 the real runtime starts the driver its own way (dlopen,
 * dlsym of cuGetProcAddress_v2, the self-query, ~440 lookups), then gives up on the
 * driver's private export tables the fake lacks. Prints the result and the fake's own
 * call counts. */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void)
{
	int n = -1;
	printf("rc_cudaGetDeviceCount=%d\n", (int)cudaGetDeviceCount(&n));
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	int (*count)(const char *) = h ? (int (*)(const char *))dlsym(h, "fakecu_count") : 0;
	printf("driver_loaded=%d\n", h != 0);
	if (count)
		printf("fake_cuInit=%d fake_cuGetProcAddress_v2=%d\n", count("cuInit"),
		       count("cuGetProcAddress_v2"));
	return 0;
}
