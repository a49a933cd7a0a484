/* A stand-in libcupti.so.13 for the CUPTI e2e case: the subset of CUPTI 13 libprof calls,
 * with the record structs of the real headers (built against them), filled by the test
 * program's "launches" and handed to the buffer callbacks from a worker thread, as CUPTI
 * does. It also plays the conflicts: FAKE_CUPTI_HELD=<name> makes it held by another
 * subscriber; FAKE_CUPTI_DROPPED=<n> reports n dropped records once.
 *
 * What real CUPTI does and this mimics: timestamps from the registered timestamp callback
 * (else CLOCK_REALTIME, CUPTI's default on Linux); threadId as gettid() only after
 * cuptiSetThreadIdType(SYSTEM) (else pthread_self()); one subscriber; records only for
 * enabled kinds; runtime API names with their ABI version ("cudaLaunchKernel_v7000").
 * The test-only fake_cupti_* functions drive it. Built with -Bsymbolic, like the real
 * one, so its own calls never reach libprof's interposed cupti* functions. */
#define _GNU_SOURCE
#include <cupti.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 64 /* records per buffer: a run of launches fills several */

union record {
	CUpti_Activity any;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemset4 memset;
	CUpti_ActivityAPI api;
	CUpti_ActivityMemory4 memory;
};

static atomic_ulong calls;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static union record *pending;
static size_t npending, cap_pending, queued, delivered;
static int worker_started;
static pthread_t worker;

static CUpti_CallbackFunc subscriber_fn;
static void *subscriber_data;
static int subscribed;
static CUpti_BuffersCallbackRequestFunc request_fn;
static CUpti_BuffersCallbackCompleteFunc complete_fn;
static CUpti_TimestampCallbackFunc timestamp_fn;
static int thread_id_system;
static uint64_t enabled; /* bit per kind below 64 */
static uint32_t correlation;
static uint64_t stream_free_at[64];
static uint64_t last_end;
static int dropped_reported;

#define COUNT() atomic_fetch_add(&calls, 1)

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now(void)
{
	return timestamp_fn ? timestamp_fn() : clock_ns(CLOCK_REALTIME);
}

static size_t record_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return sizeof(CUpti_ActivityMemory4);
	default:
		return sizeof(CUpti_ActivityAPI);
	}
}

static void *deliver(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!npending)
			pthread_cond_wait(&wake, &lock);
		size_t n = npending < CHUNK ? npending : CHUNK;
		union record batch[CHUNK];
		memcpy(batch, pending, n * sizeof *batch);
		memmove(pending, pending + n, (npending - n) * sizeof *pending);
		npending -= n;
		pthread_mutex_unlock(&lock);
		uint8_t *buf = NULL;
		size_t size = 0, max = 0, valid = 0;
		request_fn(&buf, &size, &max);
		for (size_t i = 0; buf && i < n; i++) {
			size_t len = record_size(batch[i].any.kind);
			if (valid + len > size)
				break;
			memcpy(buf + valid, &batch[i], len);
			valid += len;
		}
		if (buf)
			complete_fn(NULL, 0, buf, size, valid);
		pthread_mutex_lock(&lock);
		delivered += n;
		pthread_cond_broadcast(&done);
	}
	return NULL;
}

static void queue(const union record *r)
{
	pthread_mutex_lock(&lock);
	if (npending == cap_pending) {
		cap_pending = cap_pending ? 2 * cap_pending : 256;
		pending = realloc(pending, cap_pending * sizeof *pending);
	}
	pending[npending++] = *r;
	queued++;
	/* in batches, as CUPTI's buffers fill */
	if (npending >= CHUNK)
		pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
}

static int on(CUpti_ActivityKind kind)
{
	return (enabled >> kind) & 1;
}

static uint32_t tid(void)
{
	return thread_id_system ? (uint32_t)syscall(SYS_gettid) : (uint32_t)pthread_self();
}

/* An API call of the calling thread, about 2 us long, and its correlation id. */
static uint32_t api_call(CUpti_ActivityKind kind, uint32_t cbid, uint64_t *end)
{
	union record r;
	memset(&r, 0, sizeof r);
	r.api.kind = kind;
	r.api.cbid = cbid;
	r.api.start = now();
	while (now() - r.api.start < 2000)
		;
	r.api.end = *end = now();
	r.api.processId = (uint32_t)getpid();
	r.api.threadId = tid();
	pthread_mutex_lock(&lock);
	r.api.correlationId = ++correlation;
	pthread_mutex_unlock(&lock);
	if (on(kind))
		queue(&r);
	return r.api.correlationId;
}

/* When the work queued now on a stream runs: after the launch and the stream's last. */
static uint64_t gpu_start(uint32_t stream, uint64_t launched, uint64_t dur)
{
	pthread_mutex_lock(&lock);
	uint64_t *free_at = &stream_free_at[stream % 64];
	uint64_t start = launched + 5000 > *free_at ? launched + 5000 : *free_at;
	*free_at = start + dur;
	if (*free_at > last_end)
		last_end = *free_at;
	pthread_mutex_unlock(&lock);
	return start;
}

/* ---- the test's controls ---- */

uint32_t fake_cupti_launch(const char *kernel, uint32_t stream, uint64_t dur)
{
	static pthread_mutex_t names = PTHREAD_MUTEX_INITIALIZER;
	uint64_t end;
	uint32_t corr = api_call(CUPTI_ACTIVITY_KIND_RUNTIME,
				 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &end);
	union record r;
	memset(&r, 0, sizeof r);
	r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	r.kernel.start = gpu_start(stream, end, dur);
	r.kernel.end = r.kernel.start + dur;
	r.kernel.completed = r.kernel.end;
	r.kernel.deviceId = 0;
	r.kernel.contextId = 1;
	r.kernel.streamId = stream;
	r.kernel.gridX = 4;
	r.kernel.gridY = 2;
	r.kernel.gridZ = 1;
	r.kernel.blockX = 128;
	r.kernel.blockY = 1;
	r.kernel.blockZ = 1;
	r.kernel.correlationId = corr;
	pthread_mutex_lock(&names);
	r.kernel.name = strdup(kernel); /* CUPTI's names outlive the buffer */
	pthread_mutex_unlock(&names);
	if (on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
		queue(&r);
	return corr;
}

uint32_t fake_cupti_memcpy(int copy_kind, uint64_t bytes, uint32_t stream, uint64_t dur)
{
	uint64_t end;
	uint32_t corr = api_call(CUPTI_ACTIVITY_KIND_RUNTIME,
				 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &end);
	union record r;
	memset(&r, 0, sizeof r);
	r.memcpy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	r.memcpy.copyKind = (uint8_t)copy_kind;
	r.memcpy.bytes = bytes;
	r.memcpy.start = gpu_start(stream, end, dur);
	r.memcpy.end = r.memcpy.start + dur;
	r.memcpy.deviceId = 0;
	r.memcpy.contextId = 1;
	r.memcpy.streamId = stream;
	r.memcpy.correlationId = corr;
	r.memcpy.runtimeCorrelationId = corr;
	if (on(CUPTI_ACTIVITY_KIND_MEMCPY))
		queue(&r);
	return corr;
}

/* A memset through the driver API (cuMemsetD8Async). */
uint32_t fake_cupti_memset(uint64_t bytes, uint32_t stream, uint64_t dur)
{
	uint64_t end;
	uint32_t corr = api_call(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
				 &end);
	union record r;
	memset(&r, 0, sizeof r);
	r.memset.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	r.memset.bytes = bytes;
	r.memset.start = gpu_start(stream, end, dur);
	r.memset.end = r.memset.start + dur;
	r.memset.deviceId = 0;
	r.memset.contextId = 1;
	r.memset.streamId = stream;
	r.memset.correlationId = corr;
	if (on(CUPTI_ACTIVITY_KIND_MEMSET))
		queue(&r);
	return corr;
}

/* The MEMORY2 record of an allocation or release, queued when the kind is on; its
 * timestamp inside the API call that made it (ended at end). */
static void memory_record(int operation, int pinned, uint32_t corr, uint64_t address,
			  uint64_t bytes, uint32_t device, uint64_t end)
{
	union record r;
	memset(&r, 0, sizeof r);
	r.memory.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	r.memory.memoryOperationType = operation;
	r.memory.memoryKind = pinned ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
				     : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	r.memory.correlationId = corr;
	r.memory.address = address;
	r.memory.bytes = bytes;
	r.memory.timestamp = end - 500;
	r.memory.processId = (uint32_t)getpid();
	r.memory.deviceId = device;
	r.memory.contextId = 1;
	r.memory.streamId = CUPTI_INVALID_STREAM_ID;
	if (on(CUPTI_ACTIVITY_KIND_MEMORY2))
		queue(&r);
}

/* cudaMalloc (memory kind DEVICE) or cudaMallocHost (PINNED) of bytes on a device, and
 * its MEMORY2 record, which shares the call's correlation id. Returns the address. */
uint64_t fake_cupti_malloc(uint64_t bytes, uint32_t device, int pinned)
{
	static uint64_t next = 0x7f0000000000ull;
	uint64_t end;
	uint32_t corr = api_call(CUPTI_ACTIVITY_KIND_RUNTIME,
				 pinned ? CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020
					: CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
				 &end);
	pthread_mutex_lock(&lock);
	uint64_t address = next;
	next += (bytes + 0xfffff) & ~0xfffffull;
	pthread_mutex_unlock(&lock);
	memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, pinned, corr, address,
		      bytes, device, end);
	return address;
}

/* cudaFree of what fake_cupti_malloc returned (device memory). */
void fake_cupti_free(uint64_t address, uint64_t bytes, uint32_t device)
{
	uint64_t end;
	uint32_t corr = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
				 &end);
	memory_record(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0, corr, address, bytes,
		      device, end);
}

/* cudaDeviceSynchronize: returns when the last queued GPU work has ended. */
void fake_cupti_synchronize(void)
{
	uint64_t end;
	api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
		 &end);
	while (now() < last_end)
		usleep(100);
}

/* What cudart's teardown does: the subscriber hears the context go. */
void fake_cupti_destroy_context(void)
{
	if (subscribed && subscriber_fn)
		subscriber_fn(subscriber_data, CUPTI_CB_DOMAIN_RESOURCE,
			      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, NULL);
}

unsigned long fake_cupti_calls(void)
{
	return atomic_load(&calls);
}

/* Records queued but not yet handed to the complete callback. */
unsigned long fake_cupti_undelivered(void)
{
	pthread_mutex_lock(&lock);
	unsigned long n = queued - delivered;
	pthread_mutex_unlock(&lock);
	return n;
}

/* ---- CUPTI ---- */

CUptiResult cuptiGetVersion(uint32_t *version)
{
	COUNT();
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

static CUptiResult subscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *data,
			     char *old, size_t oldlen)
{
	const char *held = getenv("FAKE_CUPTI_HELD");
	if (held || subscribed) {
		if (old && oldlen)
			snprintf(old, oldlen, "%s", held ? held : "the first subscriber");
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	subscribed = 1;
	subscriber_fn = fn;
	subscriber_data = data;
	*sub = (CUpti_SubscriberHandle)&subscribed;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *data)
{
	COUNT();
	return subscribe(sub, fn, data, NULL, 0);
}

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *data,
			      CUpti_SubscriberParams *p)
{
	COUNT();
	if (p && p->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return subscribe(sub, fn, data, p ? p->oldSubscriberName : NULL,
			 p ? p->oldSubscriberSize : 0);
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	COUNT();
	(void)sub;
	subscribed = 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
				CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	COUNT();
	(void)enable, (void)domain, (void)cbid;
	return sub == (CUpti_SubscriberHandle)&subscribed ? CUPTI_SUCCESS
							    : CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	COUNT();
	static const struct {
		int domain;
		uint32_t cbid;
		const char *name;
	} known[] = {
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		 "cudaLaunchKernel_v7000"},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
		 "cudaMemcpyAsync_v3020"},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
		 "cudaDeviceSynchronize_v3020"},
		{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
		 "cuMemsetD8Async"},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
		 "cudaMalloc_v3020"},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
		 "cudaMallocHost_v3020"},
		{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
		 "cudaFree_v3020"},
	};
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (known[i].domain == (int)domain && known[i].cbid == cbid) {
			*name = known[i].name;
			return CUPTI_SUCCESS;
		}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	COUNT();
	if (enabled) /* CUPTI: before any kind is enabled */
		return CUPTI_ERROR_INVALID_OPERATION;
	timestamp_fn = fn;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *ts)
{
	COUNT();
	*ts = now();
	return CUPTI_SUCCESS;
}

CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	COUNT();
	thread_id_system = type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
					   CUpti_BuffersCallbackCompleteFunc complete)
{
	COUNT();
	request_fn = request;
	complete_fn = complete;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	COUNT();
	if ((unsigned)kind >= 64 || !request_fn)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&lock);
	enabled |= 1ull << kind;
	if (!worker_started)
		worker_started = !pthread_create(&worker, NULL, deliver, NULL);
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableContext(CUcontext ctx, CUpti_ActivityKind kind)
{
	(void)ctx;
	return cuptiActivityEnable(kind);
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	COUNT();
	if ((unsigned)kind < 64)
		enabled &= ~(1ull << kind);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisableContext(CUcontext ctx, CUpti_ActivityKind kind)
{
	(void)ctx;
	return cuptiActivityDisable(kind);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	COUNT();
	(void)flag;
	pthread_mutex_lock(&lock);
	size_t target = queued;
	pthread_cond_signal(&wake);
	while (worker_started && delivered < target) {
		pthread_cond_signal(&wake);
		pthread_cond_wait(&done, &lock);
	}
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	COUNT();
	size_t at = *record ? (size_t)((uint8_t *)*record - buffer) + record_size((*record)->kind)
			    : 0;
	if (at >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(buffer + at);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	COUNT();
	(void)ctx, (void)stream;
	const char *n = getenv("FAKE_CUPTI_DROPPED");
	*dropped = 0;
	if (n && !dropped_reported) {
		*dropped = strtoul(n, NULL, 10);
		dropped_reported = 1;
	}
	return CUPTI_SUCCESS;
}

CUptiResult cuptiFinalize(void)
{
	COUNT();
	return CUPTI_SUCCESS;
}
