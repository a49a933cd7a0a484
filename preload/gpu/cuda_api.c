/* The CUDA API wrappers: one exported function per name in cuda_funcs.h, which
 * interposes programs' calls through the PLT (libprof's unversioned definitions take
 * libcudart.so.13's versioned references too), plus a few unexported copies of each for
 * pointers found other ways (cuda_getproc.c). Nothing here runs, and nothing of CUDA is
 * loaded, until one of them is called.
 *
 * No prototypes. A wrapper passes on the 6 argument registers and the 8 stack words
 * above its return address: every listed function takes only integer-class arguments
 * (pointers, integers, enums; a dim3 travels in two registers, a cudaExtent or
 * cudaPitchedPtr in stack words), at most 6 + 7 words, and returns an int (cudaError_t,
 * CUresult). The real function reads the words its ABI has, whichever that is: one
 * name has had several (cudaGraphInstantiate takes 5 parameters in CUDA 11 and 3 since
 * 12, cudaMemcpyBatchAsync 9 in 12.8 and 8 in 13), and an unversioned definition here
 * stands for libcudart.so.11's, .12's and .13's alike. The extra words read belong to
 * the caller's frame, above its arguments; they are never written. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "preload/gpu/cuda_api.h"
#include "preload/common/event.h"
#include "preload/gpu/cuda_funcs.h"
#include "preload/gpu/cupti.h"
#include "preload/wrap/dl.h"
#include "preload/stacks/stack.h"
#include "preload/core/state.h"

#define EXPORT __attribute__((visibility("default")))
#define CUDA_COPIES 3 /* [0] the exported one, then copies claimed by real pointer */
/* cudaErrorInitializationError and CUDA_ERROR_NOT_INITIALIZED (driver_types.h, cuda.h):
 * what a wrapper returns when no real function stands behind it */
#define CUDA_NOT_INITIALIZED 3

/* The argument registers; the stack words start at the wrapper's CFA. */
#define CUDA_REGS uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5
#define CUDA_PASS                                                                          \
	a0, a1, a2, a3, a4, a5, stack[0], stack[1], stack[2], stack[3], stack[4], stack[5], \
		stack[6], stack[7]
typedef int (*cuda_fn)(CUDA_REGS, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
		       uint64_t, uint64_t);

#define X_ROW(n, base, v, pt, kind) {#n, #base, v, pt, kind},
const struct cuda_func prof_cuda_funcs[] = {CUDA_FUNCS(X_ROW)};
const unsigned prof_cuda_nfuncs = sizeof prof_cuda_funcs / sizeof *prof_cuda_funcs;

#define X_ENUM(n, base, v, pt, kind) F_##n,
enum { CUDA_FUNCS(X_ENUM) NFUNCS };

struct cuda_state {
	void *_Atomic real[CUDA_COPIES]; /* [0]: found by name when first called */
	uint32_t name;                   /* string id; 0 until interned */
};
static struct cuda_state state[NFUNCS];

static _Atomic uint64_t correlation;

uint64_t prof_cuda_next_correlation(void)
{
	return atomic_fetch_add_explicit(&correlation, 1, memory_order_relaxed) + 1;
}

int prof_cuda_enabled(void)
{
	return !prof_cfg.no_cuda;
}

/* While CUPTI's API records stand for these calls (cupti.c), an event here would count
 * each twice: the wrappers then only forward. */
static inline int recording(const struct prof_thread *t)
{
	return __atomic_load_n(&prof_on, __ATOMIC_RELAXED) && !t->busy && prof_proc &&
	       prof_cfg.profile_api && !prof_cfg.no_cuda && !prof_cupti_api_on();
}

/* ---- which object code belongs to ---- */

int prof_cuda_is_ours(const void *p)
{
	static void *base;
	Dl_info self, other;
	if (!base && dladdr((void *)prof_cuda_is_ours, &self))
		base = self.dli_fbase;
	return p && dladdr(p, &other) && other.dli_fbase == base;
}

/* name's definition in the scope of h, unless it is libprof's own. */
static void *defined_in(void *h, const char *name)
{
	void *p = h ? prof_real_dlsym(h, name) : 0;
	return p && !prof_cuda_is_ours(p) ? p : 0;
}

/* A handle of the object loaded at base (as path; NULL: the program), opened once and
 * kept, as got.c does (the object may still be being loaded, and a handle held keeps its
 * base from being reused by another). */
static void *handle_of(void *base, const char *path)
{
	static struct {
		void *_Atomic base;
		void *handle;
	} seen[32];
	static atomic_flag lock = ATOMIC_FLAG_INIT;
	for (unsigned i = 0; i < sizeof seen / sizeof *seen; i++) {
		void *b = atomic_load_explicit(&seen[i].base, memory_order_acquire);
		if (b == base)
			return seen[i].handle;
		if (!b)
			break;
	}
	void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
	for (unsigned i = 0; h && i < sizeof seen / sizeof *seen; i++) {
		void *b = atomic_load_explicit(&seen[i].base, memory_order_relaxed);
		if (b == base) {
			dlclose(h); /* another thread's: ours is a second reference */
			h = seen[i].handle;
			break;
		}
		if (!b) {
			seen[i].handle = h;
			atomic_store_explicit(&seen[i].base, base, memory_order_release);
			break;
		}
	}
	atomic_flag_clear_explicit(&lock, memory_order_release);
	return h;
}

/* The definition a call through the PLT would have reached without libprof: the next
 * one in the global scope (the same for every caller: kept), else the one in the
 * calling object's own scope (a library loaded RTLD_LOCAL that carries its own runtime;
 * looked up each time, that case being rare). A driver function may also have been
 * handed out by a libcuda.so.1 loaded RTLD_LOCAL whose own table pointed at the global
 * definition, libprof's: the function is libcuda's then (kept). */
void *prof_cuda_resolve_exported(int f, const void *caller)
{
	const char *name = prof_cuda_funcs[f].name;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	void *p = prof_real_dlsym(RTLD_NEXT, name), *keep = 0;
	if (p && !prof_cuda_is_ours(p))
		keep = p;
	else
		p = 0;
	Dl_info di;
	if (!p && caller && !prof_cuda_is_ours(caller) && dladdr(caller, &di))
		p = defined_in(handle_of(di.dli_fbase, di.dli_fname && *di.dli_fname ? di.dli_fname
										      : 0),
			       name);
	if (!p && prof_cuda_funcs[f].since)
		p = keep = defined_in(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), name);
	if (keep) {
		void *none = 0;
		atomic_compare_exchange_strong(&state[f].real[0], &none, keep);
	}
	t->busy--;
	return p;
}

static int missing(int f)
{
	static int warned;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		prof_warn("%s was called, but no library defines it besides libprof; returning "
			  "error %d (not initialized)", prof_cuda_funcs[f].name, CUDA_NOT_INITIALIZED);
	return CUDA_NOT_INITIALIZED;
}

/* ---- finding functions by name ---- */

#define HASH_BITS 10
static int16_t by_name[1 << HASH_BITS], by_base[1 << HASH_BITS]; /* index + 1; 0 empty */
static pthread_once_t hashed = PTHREAD_ONCE_INIT;

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int16_t *slot_of(int16_t *tab, const char *key, int base)
{
	for (uint32_t i = hash(key);; i++) {
		int16_t *s = &tab[i & ((1u << HASH_BITS) - 1)];
		if (!*s)
			return s;
		const struct cuda_func *f = &prof_cuda_funcs[*s - 1];
		if (!strcmp(base ? f->base : f->name, key))
			return s;
	}
}

static void build_hash(void)
{
	_Static_assert(NFUNCS < (1 << HASH_BITS) / 2, "hash tables too full");
	for (int i = 0; i < NFUNCS; i++) {
		*slot_of(by_name, prof_cuda_funcs[i].name, 0) = (int16_t)(i + 1);
		int16_t *b = slot_of(by_base, prof_cuda_funcs[i].base, 1);
		if (!*b) /* the first of its base: the others follow it */
			*b = (int16_t)(i + 1);
	}
}

int prof_cuda_by_name(const char *name)
{
	pthread_once(&hashed, build_hash);
	return *slot_of(by_name, name, 0) - 1;
}

int prof_cuda_by_base(const char *base)
{
	pthread_once(&hashed, build_hash);
	return *slot_of(by_base, base, 1) - 1;
}

int prof_cuda_wraps(const char *name)
{
	return prof_cuda_enabled() && prof_cuda_by_name(name) >= 0;
}

/* ---- the call ---- */

static void record(struct prof_thread *t, int f, unsigned depth, uint64_t t0, uint64_t t1,
		   uint64_t corr, int result, const void *ip, const void *cfa)
{
	static uint32_t cat_once;
	t->busy = 1;
	if (unlikely(!state[f].name))
		state[f].name = prof_intern(prof_cuda_funcs[f].name);
	uint8_t cat = prof_category_once(PROF_CATNAME_CUDA_API, &cat_once);
	if (unlikely(__atomic_load_n(&prof_stack_calls_on, __ATOMIC_RELAXED)) &&
	    t1 - t0 >= prof_stack_min_ticks) {
		uint32_t id = prof_stack_capture((uintptr_t)ip, (uintptr_t)cfa, 0);
		if (id)
			prof_emit(t, cat, PROF_EV_STACK, 0, 0, depth, t0, t0, id, 0, 0);
	}
	prof_emit(t, cat, PROF_EV_COMPLETE, 0, state[f].name, depth, t0, t1, corr,
		  (uint64_t)(uint32_t)result, 0);
	t->busy = 0;
}

/* A getter of driver functions succeeded: the pointer it wrote is handed back wrapped. */
static void after_getter(int f, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	const struct cuda_func *fn = &prof_cuda_funcs[f];
	const char *symbol = (const char *)a0;
	void **pfn = (void **)a1;
	uint32_t version = 0;
	uint64_t flags = a2;
	if (fn->kind != CUDA_RT_ENTRY) { /* (symbol, pfn, version, flags, ...) */
		version = (uint32_t)a2;
		flags = a3;
	}
	/* a _ptsz getter is what per-thread-default-stream code calls: its default is
	 * cudaEnablePerThreadDefaultStream */
	if (fn->pt && flags == 0)
		flags = 2;
	if (pfn && *pfn)
		*pfn = prof_cuda_wrap_driver(symbol, *pfn, version, flags);
}

/* ---- GPU memory ---- */

/* What a successful call did to device memory, and where its arguments say so. */
enum gpu_memory_op {
	GPU_NONE,
	GPU_ALLOC,   /* *a0 = pointer, a1 = bytes */
	GPU_PITCH,   /* *a0 = pointer, *a1 = pitch, a3 = rows */
	GPU_3D,      /* a0 = cudaPitchedPtr {ptr, pitch, ...}, stack: cudaExtent {w, h, d} */
	GPU_CREATE,  /* cuMemCreate: *a0 = handle, a1 = bytes, a2 = CUmemAllocationProp */
	GPU_PINNED,  /* page-locked host memory: *a0 = pointer, a1 = bytes */
	GPU_RELEASE, /* a0 = the pointer or handle released */
};

static enum gpu_memory_op gpu_memory_op(int f)
{
	switch (f) {
	case F_cudaMalloc: case F_cudaMallocAsync: case F_cudaMallocAsync_ptsz:
	case F_cudaMallocFromPoolAsync: case F_cudaMallocFromPoolAsync_ptsz:
	case F_cudaMallocManaged: case F_cuMemAlloc_v2: case F_cuMemAllocAsync:
	case F_cuMemAllocAsync_ptsz: case F_cuMemAllocFromPoolAsync:
	case F_cuMemAllocFromPoolAsync_ptsz: case F_cuMemAllocManaged:
		return GPU_ALLOC;
	case F_cudaMallocPitch: case F_cuMemAllocPitch_v2:
		return GPU_PITCH;
	case F_cudaMalloc3D:
		return GPU_3D;
	case F_cuMemCreate:
		return GPU_CREATE;
	case F_cudaMallocHost: case F_cudaHostAlloc: case F_cuMemAllocHost_v2:
	case F_cuMemHostAlloc:
		return GPU_PINNED;
	case F_cudaFree: case F_cudaFreeAsync: case F_cudaFreeAsync_ptsz: case F_cuMemFree_v2:
	case F_cuMemFreeAsync: case F_cuMemFreeAsync_ptsz: case F_cuMemRelease:
	case F_cudaFreeHost: case F_cuMemFreeHost:
		return GPU_RELEASE;
	default:
		return GPU_NONE;
	}
}

static __thread unsigned gpu_memory_nesting __attribute__((tls_model("initial-exec")));

/* The calling thread's current device: the runtime's, else the driver context's; 0
 * when neither answers (these two are not wrapped: looked up once by name). */
static uint64_t current_device(void)
{
	static int (*rt_get)(int *), (*drv_get)(int *);
	static int looked;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		rt_get = (int (*)(int *))prof_real_dlsym(RTLD_DEFAULT, "cudaGetDevice");
		drv_get = (int (*)(int *))prof_real_dlsym(RTLD_DEFAULT, "cuCtxGetDevice");
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	int dev = 0;
	if ((rt_get && rt_get(&dev) == 0) || (drv_get && drv_get(&dev) == 0))
		return dev >= 0 ? (uint64_t)dev : 0;
	return 0;
}

/* CUmemAllocationProp (cuda.h): {type, requestedHandleTypes, location {type, id}, ...};
 * CU_MEM_LOCATION_TYPE_DEVICE = 1. Memory made on the host (pinned, NUMA) is not a
 * device's: -1. */
#define VMM_LOCATION_TYPE_OFFSET 8
#define VMM_LOCATION_ID_OFFSET 12
#define VMM_LOCATION_DEVICE 1
static int64_t vmm_device(uint64_t prop)
{
	int32_t type, id;
	if (!prop)
		return -1;
	memcpy(&type, (const char *)prop + VMM_LOCATION_TYPE_OFFSET, sizeof type);
	memcpy(&id, (const char *)prop + VMM_LOCATION_ID_OFFSET, sizeof id);
	return type == VMM_LOCATION_DEVICE && id >= 0 ? id : -1;
}

/* A gpu_memory event: allocation a = pointer (a VMM handle for cuMemCreate: handles and
 * device pointers never coincide in one process), b = bytes, c = device (PROF_GPU_PINNED:
 * page-locked host memory); release c = pointer or handle. Recorded whoever records the API call itself (CUPTI or the
 * wrapper). */
static void gpu_memory(struct prof_thread *t, int f, enum gpu_memory_op op, uint64_t a0,
		       uint64_t a1, uint64_t a2, uint64_t a3, const uint64_t *stack,
		       const void *ip, const void *cfa)
{
	static uint32_t cat_once;
	uint64_t ptr = 0, bytes = 0;
	int64_t dev = 0;
	switch (op) {
	case GPU_ALLOC:
	case GPU_PINNED:
		ptr = a0 ? *(const uint64_t *)a0 : 0;
		bytes = a1;
		break;
	case GPU_PITCH:
		ptr = a0 ? *(const uint64_t *)a0 : 0;
		bytes = a1 ? *(const uint64_t *)a1 * a3 : 0;
		break;
	case GPU_3D: /* the pitched pointer's pitch times the extent's height and depth */
		ptr = a0 ? ((const uint64_t *)a0)[0] : 0;
		bytes = a0 ? ((const uint64_t *)a0)[1] * stack[1] * stack[2] : 0;
		break;
	case GPU_CREATE:
		ptr = a0 ? *(const uint64_t *)a0 : 0;
		bytes = a1;
		dev = vmm_device(a2);
		break;
	case GPU_RELEASE:
		ptr = a0;
		break;
	case GPU_NONE:
		return;
	}
	if (!ptr || dev < 0)
		return;
	uint64_t now = prof_now();
	t->busy++;
	uint8_t cat = prof_category_once(PROF_CATNAME_GPU_MEMORY, &cat_once);
	if (unlikely(!state[f].name))
		state[f].name = prof_intern(prof_cuda_funcs[f].name);
	if (op == GPU_RELEASE) {
		prof_emit(t, cat, PROF_EV_COMPLETE, PROF_EVF_FREES, state[f].name, t->depth, now,
			  now, 0, 0, ptr);
	} else {
		uint64_t device = op == GPU_CREATE   ? (uint64_t)dev
				  : op == GPU_PINNED ? PROF_GPU_PINNED
						     : current_device();
		/* where the program asked for device memory, as for its heap (alloc.c) */
		if (unlikely(__atomic_load_n(&prof_stack_alloc_on, __ATOMIC_RELAXED))) {
			uint32_t id = prof_stack_capture((uintptr_t)ip, (uintptr_t)cfa, 0);
			if (id)
				prof_emit(t, cat, PROF_EV_STACK, 0, 0, t->depth, now, now, id, 0, 0);
		}
		prof_emit(t, cat, PROF_EV_COMPLETE, PROF_EVF_ALLOCS, state[f].name, t->depth, now,
			  now, ptr, bytes, device);
	}
	t->busy--;
}

/* id: the function's index * CUDA_COPIES + which copy was called. cfa: the wrapper's,
 * where the caller's stack arguments begin, just above its return address. */
__attribute__((noinline)) static int cuda_call(CUDA_REGS, const uint64_t *stack, unsigned id)
{
	int f = (int)(id / CUDA_COPIES);
	unsigned copy = id % CUDA_COPIES;
	const void *ip = (const void *)stack[-1], *cfa = stack;
	cuda_fn real = (cuda_fn)atomic_load_explicit(&state[f].real[copy], memory_order_acquire);
	if (unlikely(!real)) {
		/* only the exported copy starts empty; the others are filled when claimed */
		real = (cuda_fn)prof_cuda_resolve_exported(f, ip);
		if (!real)
			return missing(f);
	}
	struct prof_thread *t = &prof_thr;
	int r;
	/* cudaMalloc allocates through cuMemAlloc_v2: only the outermost call says so */
	enum gpu_memory_op memory = gpu_memory_op(f);
	int outermost = memory && !gpu_memory_nesting;
	gpu_memory_nesting += memory != 0;
	if (!recording(t)) {
		r = real(CUDA_PASS);
	} else {
		unsigned depth = t->depth++;
		uint64_t corr = prof_cuda_next_correlation();
		uint64_t t0 = prof_now();
		r = real(CUDA_PASS);
		uint64_t t1 = prof_now();
		t->depth = depth;
		record(t, f, depth, t0, t1, corr, r, ip, cfa);
	}
	gpu_memory_nesting -= memory != 0;
	/* PROFILER_CUDA=0 leaves the driver getters unwrapped, so these calls would see only
	 * some allocations (on a GPU, none of cuBLAS's): CUPTI's records, or nothing, then */
	if (unlikely(outermost) && r == 0 && !t->busy && !prof_cfg.no_cuda &&
	    __atomic_load_n(&prof_memory_on, __ATOMIC_RELAXED))
		gpu_memory(t, f, memory, a0, a1, a2, a3, stack, ip, cfa);
	if (unlikely(prof_cuda_funcs[f].kind != CUDA_PLAIN) && r == 0 && prof_cuda_enabled()) {
		t->busy++;
		after_getter(f, a0, a1, a2, a3);
		t->busy--;
	}
	return r;
}

#define CUDA_CALL(n, copy)                                                                 \
	cuda_call(a0, a1, a2, a3, a4, a5, __builtin_dwarf_cfa(), F_##n * CUDA_COPIES + (copy))
#define X_WRAPPERS(n, base, v, pt, kind)                                                   \
	EXPORT int n(CUDA_REGS) { return CUDA_CALL(n, 0); }                                 \
	static int n##__1(CUDA_REGS) { return CUDA_CALL(n, 1); }                            \
	static int n##__2(CUDA_REGS) { return CUDA_CALL(n, 2); }
CUDA_FUNCS(X_WRAPPERS)

#define X_COPIES(n, base, v, pt, kind) {(void *)n, (void *)n##__1, (void *)n##__2},
static void *const copies[NFUNCS][CUDA_COPIES] = {CUDA_FUNCS(X_COPIES)};

void *prof_cuda_claim(int f, void *real)
{
	if (atomic_load(&state[f].real[0]) == real)
		return copies[f][0];
	for (int i = 1; i < CUDA_COPIES; i++) {
		void *cur = atomic_load(&state[f].real[i]);
		if (!cur && atomic_compare_exchange_strong(&state[f].real[i], &cur, real))
			return copies[f][i];
		if (cur == real)
			return copies[f][i];
	}
	return 0;
}
