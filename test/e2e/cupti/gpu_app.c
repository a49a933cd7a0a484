/* A CUDA program for the CUPTI case, with the fake libcupti.so.13 (fake_cupti.c) as its
 * GPU. It plays the driver first: cuInit dlopens CUDA_INJECTION64_PATH and calls its
 * InitializeInjection. Then two threads "launch" kernels and copies (the fake records
 * them as CUPTI would, on streams 7 and 13) and the program synchronizes.
 *
 *   gpu_app MODE KERNELS     MODE: plain | late | destroy | memory | memory_both |
 *                            memory_wrapped_more;
 *                            KERNELS per thread
 *   late     afterwards calls CUPTI's claiming functions through the PLT, as torch's
 *            Kineto does when torch.profiler starts, then launches two more kernels
 *   destroy  the context goes (cudart's teardown): the subscriber hears of it
 *   memory   afterwards allocates device memory only CUPTI sees: 1 MiB and 2 MiB on
 *            device 0, 512 KiB on device 1, 64 KiB pinned host memory; frees the 1 MiB
 *   memory_both  the same, then one cudaMalloc/cudaFree of 4096 bytes that libprof's
 *            wrappers see (the fake libcudart.so.13 of test/e2e/cuda, dlopened) and
 *            CUPTI does not: CUPTI saw more
 *   memory_wrapped_more  CUPTI sees the 1 MiB only, the wrappers two cudaMalloc/cudaFree
 *            of 4096 bytes
 *   steps    only this: 10 steps (prof_step), each KERNELS kernels of argv[3] ns on
 *            stream 7, then a cudaDeviceSynchronize when argv[4] is 1 (else one sync
 *            after the last step): prof html's host-bound and sync advice
 *   pause    afterwards, through libprof's API: a 2 ms kernel "lng" then "edge" queued
 *            behind it, pause at once (edge runs while paused), 4 "hidden" kernels and a
 *            sync while paused, resume, 2 "visible" kernels
 *
 * Built twice: -DLINKED links the fake (as PyTorch links libcupti); without it the
 * program gets the fake only if libprof loaded it (then it prints cupti_loaded=0 and
 * stops). Prints key=value lines. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct fake {
	uint32_t (*launch)(const char *kernel, uint32_t stream, uint64_t dur);
	uint32_t (*memcpy)(int kind, uint64_t bytes, uint32_t stream, uint64_t dur);
	uint32_t (*memset)(uint64_t bytes, uint32_t stream, uint64_t dur);
	void (*synchronize)(void);
	void (*destroy_context)(void);
	unsigned long (*calls)(void);
	unsigned long (*undelivered)(void);
	uint64_t (*malloc)(uint64_t bytes, uint32_t device, int pinned);
	void (*free)(uint64_t address, uint64_t bytes, uint32_t device);
};

#ifdef LINKED
uint32_t fake_cupti_launch(const char *kernel, uint32_t stream, uint64_t dur);
uint32_t fake_cupti_memcpy(int kind, uint64_t bytes, uint32_t stream, uint64_t dur);
uint32_t fake_cupti_memset(uint64_t bytes, uint32_t stream, uint64_t dur);
void fake_cupti_synchronize(void);
void fake_cupti_destroy_context(void);
unsigned long fake_cupti_calls(void);
unsigned long fake_cupti_undelivered(void);
uint64_t fake_cupti_malloc(uint64_t bytes, uint32_t device, int pinned);
void fake_cupti_free(uint64_t address, uint64_t bytes, uint32_t device);
/* CUPTI's claiming functions, as cupti.h declares them (enums and handles as ints and
 * pointers) */
int cuptiSubscribe(void **subscriber, void (*fn)(void *, int, uint32_t, const void *),
		   void *userdata);
int cuptiActivityRegisterCallbacks(void (*request)(uint8_t **, size_t *, size_t *),
				   void (*complete)(void *, uint32_t, uint8_t *, size_t, size_t));
int cuptiActivityEnable(int kind);
int cuptiActivityDisable(int kind);
int cuptiFinalize(void);

static int get_fake(struct fake *f)
{
	*f = (struct fake){fake_cupti_launch, fake_cupti_memcpy, fake_cupti_memset,
			   fake_cupti_synchronize, fake_cupti_destroy_context, fake_cupti_calls,
			   fake_cupti_undelivered, fake_cupti_malloc, fake_cupti_free};
	return 0;
}
#else
static int get_fake(struct fake *f)
{
	void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -1;
	*(void **)&f->launch = dlsym(h, "fake_cupti_launch");
	*(void **)&f->memcpy = dlsym(h, "fake_cupti_memcpy");
	*(void **)&f->memset = dlsym(h, "fake_cupti_memset");
	*(void **)&f->synchronize = dlsym(h, "fake_cupti_synchronize");
	*(void **)&f->destroy_context = dlsym(h, "fake_cupti_destroy_context");
	*(void **)&f->calls = dlsym(h, "fake_cupti_calls");
	*(void **)&f->undelivered = dlsym(h, "fake_cupti_undelivered");
	*(void **)&f->malloc = dlsym(h, "fake_cupti_malloc");
	*(void **)&f->free = dlsym(h, "fake_cupti_free");
	return f->launch && f->undelivered && f->malloc && f->free ? 0 : -1;
}
#endif

#define MEMCPY_HTOD 1
#define MEMCPY_DTOH 2

static struct fake gpu;
static long kernels;

static int mapped(const char *name)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* What cuInit does with CUDA_INJECTION64_PATH. */
static void driver_init(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	printf("injection=%s\n", path ? "set" : "none");
	if (!path)
		return;
	void *h = dlopen(path, RTLD_NOW);
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	printf("initialize_injection=%d\n", init ? init() : -1);
}

static void *second_thread(void *arg)
{
	(void)arg;
	printf("tid_second=%ld\n", (long)syscall(SYS_gettid));
	for (long i = 0; i < kernels; i++)
		gpu.launch("_Z4gemmILi128EEvPKfS1_Pf", 13, 30000);
	gpu.memset(65536, 13, 8000);
	return NULL;
}

static void pause_resume(void)
{
	void (*prof_pause)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "prof_pause");
	void (*prof_resume)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "prof_resume");
	printf("libprof_api=%d\n", prof_pause && prof_resume);
	if (!prof_pause || !prof_resume)
		return;
	gpu.launch("_Z3lngv", 7, 2000000);
	gpu.launch("_Z4edgev", 7, 10000);
	prof_pause();
	for (int i = 0; i < 4; i++)
		gpu.launch("_Z6hiddenv", 7, 10000);
	gpu.synchronize();
	prof_resume();
	gpu.launch("_Z7visiblev", 7, 10000);
	gpu.launch("_Z7visiblev", 7, 10000);
	gpu.synchronize();
}

static int steps(uint64_t kernel_ns, int sync_each)
{
	long (*prof_step)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "prof_step");
	printf("libprof_api=%d\n", prof_step != NULL);
	for (int s = 0; s < 10; s++) {
		for (long i = 0; i < kernels; i++)
			gpu.launch("_Z4tinyv", 7, kernel_ns);
		if (sync_each)
			gpu.synchronize();
		if (prof_step)
			prof_step();
	}
	if (!sync_each)
		gpu.synchronize();
	fflush(stdout);
	return 0;
}

/* wrapped: how many cudaMalloc/cudaFree pairs of 4096 bytes go through the fake
 * libcudart.so.13 that libprof's wrappers see; CUPTI records what fake_cupti_malloc
 * allocates (all of it, or only the first 1 MiB when cupti_less). */
static void memory(int wrapped, int cupti_less)
{
	uint64_t first = gpu.malloc(1 << 20, 0, 0);
	if (!cupti_less) {
		gpu.malloc(2 << 20, 0, 0);
		gpu.malloc(512 << 10, 1, 0);
		gpu.malloc(64 << 10, 0, 1);
		gpu.free(first, 1 << 20, 0);
	}
	if (!wrapped)
		return;
	void *rt = dlopen("libcudart.so.13", RTLD_NOW);
	int (*rt_malloc)(void **, size_t) = rt ? (int (*)(void **, size_t))dlsym(rt, "cudaMalloc")
					       : NULL;
	int (*rt_free)(void *) = rt ? (int (*)(void *))dlsym(rt, "cudaFree") : NULL;
	for (int i = 0; i < wrapped; i++) {
		void *p = NULL;
		printf("wrapped_malloc=%d\n", rt_malloc ? rt_malloc(&p, 4096) : -1);
		printf("wrapped_free=%d\n", rt_free ? rt_free(p) : -1);
	}
}

#ifdef LINKED
static void kineto_request(uint8_t **buffer, size_t *size, size_t *max)
{
	*buffer = NULL;
	*size = *max = 0;
}

static void kineto_complete(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
			    size_t valid)
{
	(void)ctx, (void)stream, (void)buffer, (void)size, (void)valid;
	printf("kineto_got_a_buffer=1\n");
}

static void kineto_callback(void *user, int domain, uint32_t cbid, const void *data)
{
	(void)user, (void)domain, (void)cbid, (void)data;
}

/* torch.profiler starting: Kineto claims CUPTI. */
static void kineto_starts(void)
{
	void *sub = NULL;
	printf("late_subscribe=%d\n", cuptiSubscribe(&sub, kineto_callback, NULL));
	printf("late_callbacks=%d\n",
	       cuptiActivityRegisterCallbacks(kineto_request, kineto_complete));
	printf("late_enable=%d\n", cuptiActivityEnable(10));
	printf("late_disable=%d\n", cuptiActivityDisable(10));
	printf("late_finalize=%d\n", cuptiFinalize());
}
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	kernels = argc > 2 ? strtol(argv[2], NULL, 0) : 10;
	printf("pid=%d\ntid_main=%ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	driver_init();
	if (get_fake(&gpu)) {
		printf("cupti_loaded=0\ncupti_mapped=%d\n", mapped("libcupti"));
		return 0;
	}
	printf("cupti_loaded=1\ncalls_after_init=%lu\n", gpu.calls());
	if (!strcmp(mode, "steps"))
		return steps(argc > 3 ? strtoull(argv[3], NULL, 0) : 1000,
			     argc > 4 && !strcmp(argv[4], "1"));
	pthread_t th;
	if (pthread_create(&th, NULL, second_thread, NULL))
		return 99;
	for (long i = 0; i < kernels; i++) {
		gpu.launch("_Z6vecAddPfS_S_i", 7, 20000);
		if (i < 3)
			gpu.memcpy(MEMCPY_HTOD, 1 << 20, 7, 100000);
		if (i < 2)
			gpu.memcpy(MEMCPY_DTOH, 4096, 7, 4000);
	}
	pthread_join(th, NULL);
	gpu.synchronize();
	if (!strcmp(mode, "late")) {
#ifdef LINKED
		kineto_starts();
#endif
		gpu.launch("_Z5afterv", 7, 10000);
		gpu.launch("_Z5afterv", 7, 10000);
		gpu.synchronize();
	}
	if (!strcmp(mode, "pause"))
		pause_resume();
	if (!strncmp(mode, "memory", 6)) {
		int wrapped_more = !strcmp(mode, "memory_wrapped_more");
		memory(!strcmp(mode, "memory_both") ? 1 : wrapped_more ? 2 : 0, wrapped_more);
		gpu.synchronize();
	}
	if (!strcmp(mode, "destroy")) {
		gpu.destroy_context();
		printf("undelivered_after_destroy=%lu\n", gpu.undelivered());
	}
	printf("cupti_mapped=%d\n", mapped("libcupti"));
	fflush(stdout);
	return 0;
}
