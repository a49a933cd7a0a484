/* CUPTI's Activity API as the source of what runs on the GPU (preload/cupti*.c):
 *   cupti.c          CUDA_INJECTION64_PATH, InitializeInjection, loading and claiming
 *                    CUPTI, the flush at exit
 *   cupti_records.c  CUPTI's buffers: records become ring events
 *   cupti_guard.c    CUPTI's claiming functions as another tool in the process calls them
 * CUPTI is dlopen'ed, never linked: libprof builds and runs without CUDA. */
#ifndef PROF_PRELOAD_CUPTI_H
#define PROF_PRELOAD_CUPTI_H

#include "preload/gpu/cupti_abi.h"

/* Points CUDA_INJECTION64_PATH at libprof.so unless it is set (another tool's, or a
 * profiled parent's): the driver then calls InitializeInjection inside cuInit. Called
 * when a process starts profiling; does nothing with PROFILER_CUPTI=0. */
void prof_cupti_setup(void);

/* libprof holds CUPTI and records its runtime and driver API records: a "cuda_api"
 * event made by interposing the same call would count it twice. */
int prof_cupti_api_on(void);

/* ---- between the cupti*.c files ---- */

/* The CUPTI functions libprof calls (libcupti.so.13 through dlsym). */
struct cupti_fns {
	cupti_result (*get_version)(uint32_t *version);
	cupti_result (*subscribe)(cupti_subscriber *sub, cupti_callback_fn fn, void *user);
	/* optional: names libprof, and the holder on a conflict */
	cupti_result (*subscribe_v2)(cupti_subscriber *sub, cupti_callback_fn fn, void *user,
				     struct cupti_subscriber_params *params);
	cupti_result (*unsubscribe)(cupti_subscriber sub);
	cupti_result (*enable_callback)(uint32_t on, cupti_subscriber sub, int domain,
					uint32_t cbid);
	cupti_result (*register_timestamp)(cupti_timestamp_fn fn);
	cupti_result (*set_thread_id_type)(int type);
	cupti_result (*register_callbacks)(cupti_request_fn request, cupti_complete_fn complete);
	cupti_result (*enable)(uint32_t kind);
	cupti_result (*disable)(uint32_t kind);
	cupti_result (*flush_all)(uint32_t flags);
	cupti_result (*next_record)(uint8_t *buffer, size_t valid, struct cupti_record **rec);
	cupti_result (*dropped)(cupti_context ctx, uint32_t stream, size_t *count);
	cupti_result (*callback_name)(int domain, uint32_t cbid, const char **name);
};
extern struct cupti_fns prof_cupti;

/* cupti_records.c: the buffer callbacks given to cuptiActivityRegisterCallbacks. */
void prof_cupti_buffer_request(uint8_t **buffer, size_t *size, size_t *max_records);
void prof_cupti_buffer_complete(cupti_context ctx, uint32_t stream, uint8_t *buffer,
				size_t size, size_t valid);

/* cupti.c, for cupti_guard.c: libprof holds CUPTI (another tool's claim is refused). */
int prof_cupti_held(void);
/* Another module of the process claimed CUPTI first (what: the function it called):
 * libprof then leaves CUPTI to it. Only while this process may use CUPTI itself. */
void prof_cupti_claimed_by_other(const char *what);
/* CUPTI's own function, for another module's call: from the libcupti.so.13 already
 * mapped (the caller's). NULL when there is none. */
void *prof_cupti_real(const char *name);

#endif
