/* libprof's mirror of CUPTI 13's ABI (preload/gpu/cupti_abi.h) against the real headers:
 * every offset and constant libprof relies on. Compiling this is the check; the program
 * only says so. */
#include <cupti.h>
#include <stddef.h>
#include <stdio.h>

#include "preload/gpu/cupti_abi.h"

#define SAME_OFFSET(mine, field, real, real_field)                                          \
	_Static_assert(offsetof(struct mine, field) == offsetof(real, real_field),           \
		       #real "." #real_field)

/* enums of two headers: compared as numbers */
#define SAME(mine, real) _Static_assert((long)(mine) == (long)(real), #real)

SAME_OFFSET(cupti_record, kind, CUpti_Activity, kind);

SAME_OFFSET(cupti_kernel10, kind, CUpti_ActivityKernel10, kind);
SAME_OFFSET(cupti_kernel10, start, CUpti_ActivityKernel10, start);
SAME_OFFSET(cupti_kernel10, end, CUpti_ActivityKernel10, end);
SAME_OFFSET(cupti_kernel10, device_id, CUpti_ActivityKernel10, deviceId);
SAME_OFFSET(cupti_kernel10, context_id, CUpti_ActivityKernel10, contextId);
SAME_OFFSET(cupti_kernel10, stream_id, CUpti_ActivityKernel10, streamId);
SAME_OFFSET(cupti_kernel10, grid_x, CUpti_ActivityKernel10, gridX);
SAME_OFFSET(cupti_kernel10, grid_y, CUpti_ActivityKernel10, gridY);
SAME_OFFSET(cupti_kernel10, grid_z, CUpti_ActivityKernel10, gridZ);
SAME_OFFSET(cupti_kernel10, block_x, CUpti_ActivityKernel10, blockX);
SAME_OFFSET(cupti_kernel10, block_y, CUpti_ActivityKernel10, blockY);
SAME_OFFSET(cupti_kernel10, block_z, CUpti_ActivityKernel10, blockZ);
SAME_OFFSET(cupti_kernel10, correlation_id, CUpti_ActivityKernel10, correlationId);
SAME_OFFSET(cupti_kernel10, name, CUpti_ActivityKernel10, name);

SAME_OFFSET(cupti_memcpy6, copy_kind, CUpti_ActivityMemcpy6, copyKind);
SAME_OFFSET(cupti_memcpy6, bytes, CUpti_ActivityMemcpy6, bytes);
SAME_OFFSET(cupti_memcpy6, start, CUpti_ActivityMemcpy6, start);
SAME_OFFSET(cupti_memcpy6, end, CUpti_ActivityMemcpy6, end);
SAME_OFFSET(cupti_memcpy6, device_id, CUpti_ActivityMemcpy6, deviceId);
SAME_OFFSET(cupti_memcpy6, context_id, CUpti_ActivityMemcpy6, contextId);
SAME_OFFSET(cupti_memcpy6, stream_id, CUpti_ActivityMemcpy6, streamId);
SAME_OFFSET(cupti_memcpy6, correlation_id, CUpti_ActivityMemcpy6, correlationId);
SAME_OFFSET(cupti_memcpy6, runtime_correlation_id, CUpti_ActivityMemcpy6,
	    runtimeCorrelationId);

SAME_OFFSET(cupti_memset4, bytes, CUpti_ActivityMemset4, bytes);
SAME_OFFSET(cupti_memset4, start, CUpti_ActivityMemset4, start);
SAME_OFFSET(cupti_memset4, end, CUpti_ActivityMemset4, end);
SAME_OFFSET(cupti_memset4, device_id, CUpti_ActivityMemset4, deviceId);
SAME_OFFSET(cupti_memset4, context_id, CUpti_ActivityMemset4, contextId);
SAME_OFFSET(cupti_memset4, stream_id, CUpti_ActivityMemset4, streamId);
SAME_OFFSET(cupti_memset4, correlation_id, CUpti_ActivityMemset4, correlationId);

SAME_OFFSET(cupti_api, cbid, CUpti_ActivityAPI, cbid);
SAME_OFFSET(cupti_api, start, CUpti_ActivityAPI, start);
SAME_OFFSET(cupti_api, end, CUpti_ActivityAPI, end);
SAME_OFFSET(cupti_api, process_id, CUpti_ActivityAPI, processId);
SAME_OFFSET(cupti_api, thread_id, CUpti_ActivityAPI, threadId);
SAME_OFFSET(cupti_api, correlation_id, CUpti_ActivityAPI, correlationId);
SAME_OFFSET(cupti_api, return_value, CUpti_ActivityAPI, returnValue);
_Static_assert(sizeof(struct cupti_api) == sizeof(CUpti_ActivityAPI), "CUpti_ActivityAPI");

SAME_OFFSET(cupti_memory4, operation, CUpti_ActivityMemory4, memoryOperationType);
SAME_OFFSET(cupti_memory4, memory_kind, CUpti_ActivityMemory4, memoryKind);
SAME_OFFSET(cupti_memory4, correlation_id, CUpti_ActivityMemory4, correlationId);
SAME_OFFSET(cupti_memory4, address, CUpti_ActivityMemory4, address);
SAME_OFFSET(cupti_memory4, bytes, CUpti_ActivityMemory4, bytes);
SAME_OFFSET(cupti_memory4, timestamp, CUpti_ActivityMemory4, timestamp);
SAME_OFFSET(cupti_memory4, device_id, CUpti_ActivityMemory4, deviceId);

SAME_OFFSET(cupti_subscriber_params, subscriber_name, CUpti_SubscriberParams, subscriberName);
SAME_OFFSET(cupti_subscriber_params, old_subscriber_name, CUpti_SubscriberParams,
	    oldSubscriberName);
SAME_OFFSET(cupti_subscriber_params, old_subscriber_size, CUpti_SubscriberParams,
	    oldSubscriberSize);
_Static_assert(sizeof(struct cupti_subscriber_params) == CUpti_SubscriberParams_STRUCT_SIZE,
	       "CUpti_SubscriberParams");

SAME(CUPTI_OK, CUPTI_SUCCESS);
SAME(CUPTI_ERR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME(CUPTI_ERR_MULTIPLE_SUBSCRIBERS, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME(CUPTI_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
SAME(CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
SAME(CUPTI_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
SAME(CUPTI_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME);
SAME(CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(CUPTI_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY2);
SAME(CUPTI_MEMORY_ALLOCATION, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
SAME(CUPTI_MEMORY_RELEASE, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
SAME(CUPTI_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
SAME(CUPTI_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
SAME(CUPTI_MEMORY_KIND_MANAGED, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
SAME(CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME(CUPTI_THREAD_ID_SYSTEM, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
SAME(CUPTI_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(CUPTI_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_RUNTIME_API);
SAME(CUPTI_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RESOURCE);
SAME(CUPTI_CBID_CONTEXT_DESTROY_STARTING, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
SAME(CUPTI_HOLDER_NAME_LEN, CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN);
SAME(CUPTI_COPY_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
SAME(CUPTI_COPY_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
SAME(CUPTI_COPY_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
SAME(CUPTI_COPY_HTOH, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
SAME(CUPTI_COPY_PTOP, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
SAME(CUPTI_COPY_ATOD, CUPTI_ACTIVITY_MEMCPY_KIND_ATOD);

int main(void)
{
	printf("layout=ok cupti_api_version=%d\n", CUPTI_API_VERSION);
	return 0;
}
