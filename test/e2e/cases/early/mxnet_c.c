/* A C program linked against libmxnet.so (MXNet's C API). libmxnet's static
 * initializers (operator registration) make tens of thousands of allocations before
 * libprof's constructor runs: all of them must reach the capture (issue 29).
 * Prints version=, sum=, pid=, and under the counting preload (count_calls.c) the
 * allocator calls made so far. Built by early.py against the mxnet wheel's headers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#include <mxnet/c_api.h>

#define CALL(x)                                                                        \
	do {                                                                           \
		if ((x) != 0) {                                                        \
			fprintf(stderr, "%s: %s\n", #x, MXGetLastError());             \
			return 1;                                                      \
		}                                                                      \
	} while (0)

int main(void)
{
	int version = 0;
	CALL(MXGetVersion(&version));
	const uint32_t shape[2] = {64, 64};
	static float data[64 * 64];
	float sum = 0;
	for (int round = 0; round < 4; round++) {
		NDArrayHandle a;
		/* dev_type 1: the CPU; delay_alloc 0: its storage now */
		CALL(MXNDArrayCreate(shape, 2, 1, 0, 0, &a));
		for (int i = 0; i < 64 * 64; i++)
			data[i] = (float)(i + round);
		CALL(MXNDArraySyncCopyFromCPU(a, data, 64 * 64));
		CALL(MXNDArrayWaitAll());
		CALL(MXNDArraySyncCopyToCPU(a, data, 64 * 64));
		sum += data[64 * 64 - 1];
		CALL(MXNDArrayFree(a));
	}
	CALL(MXNDArrayWaitAll());
	printf("version=%d\nsum=%.0f\npid=%d\n", version, sum, (int)getpid());
	void (*say)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "count_calls_say");
	if (say)
		say();
	return 0;
}
