/* The part of CUPTI 13's ABI libprof uses, declared here so that libprof builds without
 * the CUDA toolkit. Everything follows the CUDA 13.0 headers (CUPTI_API_VERSION 130001):
 * cupti_result.h, cupti_callbacks.h, cupti_activity.h. The record layouts are the
 * packed, 8-byte aligned structs of cupti_activity.h (PACKED_ALIGNMENT), cut after the
 * last field libprof reads; test/e2e/cupti/layout.c checks every offset below against
 * the real headers. */
#ifndef PROF_PRELOAD_CUPTI_ABI_H
#define PROF_PRELOAD_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* cupti_result.h: CUptiResult */
typedef int cupti_result;
enum {
	CUPTI_OK = 0,
	CUPTI_ERR_INVALID_PARAMETER = 1,
	CUPTI_ERR_MAX_LIMIT_REACHED = 12,
	CUPTI_ERR_MULTIPLE_SUBSCRIBERS = 39, /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
};

/* cupti_activity.h: CUpti_ActivityKind (the kinds libprof enables) */
enum {
	CUPTI_KIND_MEMCPY = 1,
	CUPTI_KIND_MEMSET = 2,
	CUPTI_KIND_DRIVER = 4,
	CUPTI_KIND_RUNTIME = 5,
	CUPTI_KIND_CONCURRENT_KERNEL = 10,
	CUPTI_KIND_MEMORY2 = 49,
};
/* CUpti_ActivityFlag */
#define CUPTI_FLUSH_FORCED 1u
/* CUpti_ActivityThreadIdType: threadId as gettid() instead of pthread_self() */
#define CUPTI_THREAD_ID_SYSTEM 1

/* cupti_callbacks.h: CUpti_CallbackDomain and the resource callback ids used */
enum {
	CUPTI_DOMAIN_DRIVER_API = 1,
	CUPTI_DOMAIN_RUNTIME_API = 2,
	CUPTI_DOMAIN_RESOURCE = 3,
};
#define CUPTI_CBID_CONTEXT_DESTROY_STARTING 2 /* CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING */

/* cupti_activity.h: CUpti_ActivityMemcpyKind */
enum {
	CUPTI_COPY_HTOD = 1, CUPTI_COPY_DTOH = 2, CUPTI_COPY_HTOA = 3, CUPTI_COPY_ATOH = 4,
	CUPTI_COPY_ATOA = 5, CUPTI_COPY_ATOD = 6, CUPTI_COPY_DTOA = 7, CUPTI_COPY_DTOD = 8,
	CUPTI_COPY_HTOH = 9, CUPTI_COPY_PTOP = 10,
};

/* CUpti_ActivityMemoryOperationType, CUpti_ActivityMemoryKind (the kinds counted) */
enum { CUPTI_MEMORY_ALLOCATION = 1, CUPTI_MEMORY_RELEASE = 2 };
enum { CUPTI_MEMORY_KIND_PINNED = 2, CUPTI_MEMORY_KIND_DEVICE = 3, CUPTI_MEMORY_KIND_MANAGED = 5 };

typedef struct cupti_subscriber *cupti_subscriber; /* CUpti_SubscriberHandle */
typedef void *cupti_context;                       /* CUcontext */
typedef void (*cupti_callback_fn)(void *userdata, int domain, uint32_t cbid,
				  const void *cbdata); /* CUpti_CallbackFunc */
typedef void (*cupti_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*cupti_complete_fn)(cupti_context ctx, uint32_t stream, uint8_t *buffer,
				  size_t size, size_t valid);
typedef uint64_t (*cupti_timestamp_fn)(void);

/* cupti_callbacks.h: CUpti_SubscriberParams (cuptiSubscribe_v2) */
struct cupti_subscriber_params {
	size_t struct_size;
	const char *subscriber_name;
	char *old_subscriber_name;
	size_t old_subscriber_size;
};
#define CUPTI_HOLDER_NAME_LEN 64 /* CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN */

#define CUPTI_PACKED __attribute__((packed, aligned(8)))

/* CUpti_Activity: every record starts with its kind */
struct CUPTI_PACKED cupti_record {
	uint32_t kind;
};

/* CUpti_ActivityKernel10, up to name */
struct CUPTI_PACKED cupti_kernel10 {
	uint32_t kind;
	uint8_t cache_config, shared_memory_config;
	uint16_t registers_per_thread;
	uint32_t partitioned_cache_requested, partitioned_cache_executed;
	uint64_t start, end, completed;
	uint32_t device_id, context_id, stream_id;
	int32_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
	int32_t static_shared_memory, dynamic_shared_memory;
	uint32_t local_memory_per_thread, local_memory_total;
	uint32_t correlation_id;
	int64_t grid_id;
	const char *name;
};
_Static_assert(offsetof(struct cupti_kernel10, start) == 16, "Kernel10.start");
_Static_assert(offsetof(struct cupti_kernel10, end) == 24, "Kernel10.end");
_Static_assert(offsetof(struct cupti_kernel10, device_id) == 40, "Kernel10.deviceId");
_Static_assert(offsetof(struct cupti_kernel10, context_id) == 44, "Kernel10.contextId");
_Static_assert(offsetof(struct cupti_kernel10, stream_id) == 48, "Kernel10.streamId");
_Static_assert(offsetof(struct cupti_kernel10, grid_x) == 52, "Kernel10.gridX");
_Static_assert(offsetof(struct cupti_kernel10, block_x) == 64, "Kernel10.blockX");
_Static_assert(offsetof(struct cupti_kernel10, correlation_id) == 92, "Kernel10.correlationId");
_Static_assert(offsetof(struct cupti_kernel10, name) == 104, "Kernel10.name");

/* CUpti_ActivityMemcpy6, up to runtimeCorrelationId */
struct CUPTI_PACKED cupti_memcpy6 {
	uint32_t kind;
	uint8_t copy_kind, src_kind, dst_kind, flags;
	uint64_t bytes, start, end;
	uint32_t device_id, context_id, stream_id;
	uint32_t correlation_id;         /* of the driver API record */
	uint32_t runtime_correlation_id; /* of the runtime API record, 0 when none */
};
_Static_assert(offsetof(struct cupti_memcpy6, copy_kind) == 4, "Memcpy6.copyKind");
_Static_assert(offsetof(struct cupti_memcpy6, bytes) == 8, "Memcpy6.bytes");
_Static_assert(offsetof(struct cupti_memcpy6, start) == 16, "Memcpy6.start");
_Static_assert(offsetof(struct cupti_memcpy6, end) == 24, "Memcpy6.end");
_Static_assert(offsetof(struct cupti_memcpy6, device_id) == 32, "Memcpy6.deviceId");
_Static_assert(offsetof(struct cupti_memcpy6, context_id) == 36, "Memcpy6.contextId");
_Static_assert(offsetof(struct cupti_memcpy6, stream_id) == 40, "Memcpy6.streamId");
_Static_assert(offsetof(struct cupti_memcpy6, correlation_id) == 44, "Memcpy6.correlationId");
_Static_assert(offsetof(struct cupti_memcpy6, runtime_correlation_id) == 48,
	       "Memcpy6.runtimeCorrelationId");

/* CUpti_ActivityMemset4, up to correlationId */
struct CUPTI_PACKED cupti_memset4 {
	uint32_t kind;
	uint32_t value;
	uint64_t bytes, start, end;
	uint32_t device_id, context_id, stream_id;
	uint32_t correlation_id;
};
_Static_assert(offsetof(struct cupti_memset4, bytes) == 8, "Memset4.bytes");
_Static_assert(offsetof(struct cupti_memset4, start) == 16, "Memset4.start");
_Static_assert(offsetof(struct cupti_memset4, end) == 24, "Memset4.end");
_Static_assert(offsetof(struct cupti_memset4, device_id) == 32, "Memset4.deviceId");
_Static_assert(offsetof(struct cupti_memset4, context_id) == 36, "Memset4.contextId");
_Static_assert(offsetof(struct cupti_memset4, stream_id) == 40, "Memset4.streamId");
_Static_assert(offsetof(struct cupti_memset4, correlation_id) == 44, "Memset4.correlationId");

/* CUpti_ActivityAPI (kinds RUNTIME and DRIVER), whole */
struct CUPTI_PACKED cupti_api {
	uint32_t kind;
	uint32_t cbid;
	uint64_t start, end;
	uint32_t process_id, thread_id;
	uint32_t correlation_id;
	uint32_t return_value;
};
_Static_assert(offsetof(struct cupti_api, cbid) == 4, "API.cbid");
_Static_assert(offsetof(struct cupti_api, start) == 8, "API.start");
_Static_assert(offsetof(struct cupti_api, end) == 16, "API.end");
_Static_assert(offsetof(struct cupti_api, thread_id) == 28, "API.threadId");
_Static_assert(offsetof(struct cupti_api, correlation_id) == 32, "API.correlationId");
_Static_assert(offsetof(struct cupti_api, return_value) == 36, "API.returnValue");
_Static_assert(sizeof(struct cupti_api) == 40, "CUpti_ActivityAPI");

/* CUpti_ActivityMemory4 (kind MEMORY2), up to deviceId */
struct CUPTI_PACKED cupti_memory4 {
	uint32_t kind;
	uint32_t operation; /* CUPTI_MEMORY_ALLOCATION / _RELEASE */
	uint32_t memory_kind;
	uint32_t correlation_id;
	uint64_t address, bytes, timestamp, pc;
	uint32_t process_id, device_id;
};
_Static_assert(offsetof(struct cupti_memory4, operation) == 4, "Memory4.memoryOperationType");
_Static_assert(offsetof(struct cupti_memory4, memory_kind) == 8, "Memory4.memoryKind");
_Static_assert(offsetof(struct cupti_memory4, address) == 16, "Memory4.address");
_Static_assert(offsetof(struct cupti_memory4, bytes) == 24, "Memory4.bytes");
_Static_assert(offsetof(struct cupti_memory4, timestamp) == 32, "Memory4.timestamp");
_Static_assert(offsetof(struct cupti_memory4, device_id) == 52, "Memory4.deviceId");

#endif
