/* The fixed-size event record shared by the ring writer (preload/), the collector and
 * the raw capture. One layout, defined here only. */
#ifndef PROF_FORMATS_EVENT_H
#define PROF_FORMATS_EVENT_H

#include <stdint.h>

enum prof_ev_type {
	PROF_EV_COMPLETE = 1, /* a call or range: t0..t1 */
	PROF_EV_INSTANT = 2,  /* a mark or a step: t0 == t1 */
	PROF_EV_COUNTER = 3,  /* a = value (double bits when PROF_EVF_DOUBLE) */
	PROF_EV_LOST = 4,     /* a = events dropped between t0 and t1, b = why (PROF_LOST_*) */
	PROF_EV_STACK = 5,    /* a = stack id of the thread's next event, whose t0 it shares */
	/* In rings only: an allocation (a PROF_EV_COMPLETE releasing nothing) with its stack
	 * id in c. The collector writes it to the capture as the PROF_EV_STACK and the
	 * PROF_EV_COMPLETE (c = 0) it stands for: one ring slot a stacked allocation instead
	 * of two, the writer's stores and the ring's lines halved for them. */
	PROF_EV_STACKED_ALLOC = 6,
};

/* Fixed categories; later ones (framework API, operators, CUDA) are registered at run
 * time from PROF_CAT_FIRST_DYNAMIC on and named in the capture by CAP_CATEGORY. */
enum prof_category {
	PROF_CAT_MEMORY = 0,  /* allocator calls */
	PROF_CAT_USER = 1,    /* prof_range_push/pop */
	PROF_CAT_MARK = 2,    /* prof_mark */
	PROF_CAT_STEP = 3,    /* prof_step */
	PROF_CAT_COUNTER = 4, /* prof_counter */
	PROF_CAT_LOST = 5,
	PROF_CAT_FIRST_DYNAMIC = 16,
};

/* b of a LOST event: why its events were dropped. */
#define PROF_LOST_RING 0    /* a full ring (or no ring for the thread) */
#define PROF_LOST_STARTUP 1 /* made before libprof's constructor ran (the early buffer,
			     * preload/wrap/early.c) and not delivered: its cap, or a flush
			     * the collector stopped taking */

/* In a call stack (struct cap_stack): a Python frame, low 32 bits its string id. */
#define PROF_STACK_FRAME_PYTHON (1ull << 63)

/* flags */
#define PROF_EVF_ALLOCS 0x01 /* a = new block of b bytes */
#define PROF_EVF_FREES 0x02  /* c = block released */
#define PROF_EVF_DOUBLE 0x04 /* counter value a holds double bits */
/* CUPTI's records (preload/gpu/cupti_records.c). Their times come from CUPTI on
 * CLOCK_MONOTONIC, and they are delivered late, in batches, by CUPTI's own thread. */
#define PROF_EVF_NS 0x08  /* t0/t1 already CLOCK_MONOTONIC ns: the collector keeps them */
#define PROF_EVF_GPU 0x10 /* work on a GPU: a = CUPTI correlation id, c = PROF_GPU_WHERE;
			   * outputs show it on the row of its (device, stream) */
#define PROF_EVF_TID 0x20 /* an API call of thread (uint32_t)c of the process, written by
			   * another thread: a = CUPTI correlation id; outputs show it on
			   * that thread's row */
#define PROF_EVF_DETAIL 0x40 /* a traced call's a = string id + 1 of its detail: a
			      * PyTorch operator's input shapes, "[[128, 500], [10]]"; an MPI
			      * call's datatype, "MPI_FLOAT" */
#define PROF_EVF_COMM 0x80   /* a message or collective (MPI): b = bytes (PROF_COMM_UNKNOWN:
			      * not known), c = PROF_COMM_WHERE(communicator size, peer) */

#define PROF_COMM_UNKNOWN UINT64_MAX
/* c of a PROF_EVF_COMM event: communicator size (0: not known) and peer rank (the
 * destination, source or root; -1: none or not known). */
#define PROF_COMM_WHERE(size, peer) ((uint64_t)(uint32_t)(size) << 32 | (uint32_t)((peer) + 1))
static inline uint32_t prof_comm_size(uint64_t c) { return (uint32_t)(c >> 32); }
static inline int64_t prof_comm_peer(uint64_t c) { return (int64_t)(uint32_t)c - 1; }

/* c of a gpu_memory allocation in page-locked host memory (cudaMallocHost...) rather
 * than on a device. */
#define PROF_GPU_PINNED 0xffffu
/* c of an mxnet_memory allocation (MXNet's storage manager): host or GPU memory. */
#define PROF_MXNET_STORAGE_CPU 0xfffeu
#define PROF_MXNET_STORAGE_GPU 0xfffdu

/* c of a PROF_EVF_GPU event: device (8 bits), context (24 bits), stream (32 bits). */
#define PROF_GPU_WHERE(device, context, stream)                                            \
	((uint64_t)((device) & 0xff) << 56 | (uint64_t)((context) & 0xffffff) << 32 |        \
	 (uint32_t)(stream))
static inline uint32_t prof_gpu_device(uint64_t c) { return (uint32_t)(c >> 56); }
static inline uint32_t prof_gpu_context(uint64_t c) { return (uint32_t)(c >> 32) & 0xffffff; }
static inline uint32_t prof_gpu_stream(uint64_t c) { return (uint32_t)c; }
/* The thread id outputs give the row of a (device, stream): Linux tids stay below 2^22,
 * so these never meet a real thread. Streams from 2^21 on share rows. */
#define PROF_GPU_TID_BASE 0x40000000u
static inline uint32_t prof_gpu_tid(uint64_t c)
{
	return PROF_GPU_TID_BASE | (prof_gpu_device(c) << 21) | (prof_gpu_stream(c) & 0x1fffff);
}

/* 48 bytes. In a ring, t0/t1 are raw clock ticks (ns with PROF_EVF_NS); in the raw
 * capture they are nanoseconds of CLOCK_MONOTONIC. Memory events: a = returned pointer,
 * b = requested bytes, c = released pointer (free, realloc's old block). Steps: a = step
 * number.
 * GPU work (PROF_EVF_GPU): kernels b = threads per block << 32 | blocks in the grid
 * (each saturated at 2^32 - 1), copies and sets b = bytes. CUPTI's API records
 * (PROF_EVF_TID): b = the call's return value. */
struct prof_event {
	uint64_t t0;
	uint64_t t1;
	uint64_t a;
	uint64_t b;
	uint64_t c;
	uint32_t name;  /* string id, per process */
	uint8_t cat;    /* enum prof_category or a dynamic one */
	uint8_t type;   /* enum prof_ev_type */
	uint8_t flags;  /* PROF_EVF_* */
	uint8_t depth;  /* nesting depth on its thread when it began (saturates at 255) */
};

/* The deepest depth an event can say. Events that do not nest with their thread's calls
 * (CUPTI's records, NVTX start/end ranges) are put there, which no real call reaches. */
#define PROF_EVENT_DEPTH_MAX 255

_Static_assert(sizeof(struct prof_event) == 48, "prof_event is part of the shm ABI");

/* Name of a fixed category, or NULL for a dynamic one. */
const char *prof_fixed_category_name(unsigned cat);

/* Category names: what libprof.so registers (or, for the fixed ones, numbers above) and
 * what the readers in formats/ look for, spelled once. A reader that compares a category
 * by name uses these. */
/* the fixed categories (enum prof_category), named by prof_fixed_category_name */
#define PROF_CATNAME_MEMORY "memory"
#define PROF_CATNAME_USER "user"
#define PROF_CATNAME_MARK "mark"
#define PROF_CATNAME_STEP "step"
#define PROF_CATNAME_COUNTER "counter"
#define PROF_CATNAME_LOST "lost"

/* registered at run time (prof_category) */
#define PROF_CATNAME_CUDA_API "cuda_api"       /* CUDA runtime/driver calls */
#define PROF_CATNAME_CUDA_KERNEL "cuda_kernel" /* CUPTI: kernels on the GPU */
#define PROF_CATNAME_CUDA_MEMCPY "cuda_memcpy" /* CUPTI: copies */
#define PROF_CATNAME_CUDA_MEMSET "cuda_memset" /* CUPTI: memsets */
#define PROF_CATNAME_GPU_MEMORY "gpu_memory"   /* device allocations */
#define PROF_CATNAME_MXNET_MEMORY "mxnet_memory" /* MXNet's storage manager's */
#define PROF_CATNAME_NVTX "nvtx"               /* NVTX ranges without a domain */
#define PROF_CATNAME_TRACE "trace"             /* PROFILER_TRACE functions */
#define PROF_CATNAME_ORT_API "ORT_API"         /* onnxruntime's C API */
/* framework presets (preload/frameworks/presets.c), named as the framework's own
 * profiler names them */
#define PROF_CATNAME_OPERATOR "operator"       /* one framework operator */
#define PROF_CATNAME_MXNET_C_API "MXNET_C_API" /* MXNet's MX* C API */
#define PROF_CATNAME_TF_C_API "TF_C_API"       /* TensorFlow's TF_* / TFE_* C API */
#define PROF_CATNAME_PROFILER "profiler"       /* the framework's profiler start/stop */
#define PROF_CATNAME_COLLECTIVE "collective"   /* communication between ranks */
#define PROF_CATNAME_MPI "MPI"                 /* MPI's other calls: messages, waits */

#endif
