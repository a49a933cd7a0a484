/* ONNX Runtime's C API is one exported function, OrtGetApiBase(); every other call goes
 * through the function-pointer table OrtApiBase::GetApi(version) returns, which no GOT
 * holds. With the onnxruntime preset, OrtGetApiBase is handed back (GOT and dlsym, got.c)
 * as ort_get_api_base below: its OrtApiBase's GetApi returns a copy of the real table
 * whose named entries are traced stubs ("OrtApi::<field>", category ORT_API). All of
 * this runs at set-up; the calls themselves go through the stubs only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/common/debug.h"
#include "preload/frameworks/ort.h"
#include "preload/common/event.h"
#include "preload/core/state.h"
#include "preload/trace/trace.h"

/* The OrtApi fields in order (include/onnxruntime/core/session/onnxruntime_c_api.h,
 * ORT_API_VERSION 13); all of them were there by API version 3. */
static const char *const ort_api_names[] = {
	"CreateStatus", "GetErrorCode", "GetErrorMessage", "CreateEnv",
	"CreateEnvWithCustomLogger", "EnableTelemetryEvents", "DisableTelemetryEvents",
	"CreateSession", "CreateSessionFromArray", "Run", "CreateSessionOptions",
	"SetOptimizedModelFilePath", "CloneSessionOptions", "SetSessionExecutionMode",
	"EnableProfiling", "DisableProfiling", "EnableMemPattern", "DisableMemPattern",
	"EnableCpuMemArena", "DisableCpuMemArena", "SetSessionLogId",
	"SetSessionLogVerbosityLevel", "SetSessionLogSeverityLevel",
	"SetSessionGraphOptimizationLevel", "SetIntraOpNumThreads", "SetInterOpNumThreads",
	"CreateCustomOpDomain", "CustomOpDomain_Add", "AddCustomOpDomain",
	"RegisterCustomOpsLibrary", "SessionGetInputCount", "SessionGetOutputCount",
	"SessionGetOverridableInitializerCount", "SessionGetInputTypeInfo",
	"SessionGetOutputTypeInfo", "SessionGetOverridableInitializerTypeInfo",
	"SessionGetInputName", "SessionGetOutputName", "SessionGetOverridableInitializerName",
	"CreateRunOptions", "RunOptionsSetRunLogVerbosityLevel",
	"RunOptionsSetRunLogSeverityLevel", "RunOptionsSetRunTag",
	"RunOptionsGetRunLogVerbosityLevel", "RunOptionsGetRunLogSeverityLevel",
	"RunOptionsGetRunTag", "RunOptionsSetTerminate", "RunOptionsUnsetTerminate",
	"CreateTensorAsOrtValue", "CreateTensorWithDataAsOrtValue", "IsTensor",
	"GetTensorMutableData", "FillStringTensor", "GetStringTensorDataLength",
	"GetStringTensorContent", "CastTypeInfoToTensorInfo", "GetOnnxTypeFromTypeInfo",
	"CreateTensorTypeAndShapeInfo", "SetTensorElementType", "SetDimensions",
	"GetTensorElementType", "GetDimensionsCount", "GetDimensions", "GetSymbolicDimensions",
	"GetTensorShapeElementCount", "GetTensorTypeAndShape", "GetTypeInfo", "GetValueType",
	"CreateMemoryInfo", "CreateCpuMemoryInfo", "CompareMemoryInfo", "MemoryInfoGetName",
	"MemoryInfoGetId", "MemoryInfoGetMemType", "MemoryInfoGetType", "AllocatorAlloc",
	"AllocatorFree", "AllocatorGetInfo", "GetAllocatorWithDefaultOptions",
	"AddFreeDimensionOverride", "GetValue", "GetValueCount", "CreateValue",
	"CreateOpaqueValue", "GetOpaqueValue", "KernelInfoGetAttribute_float",
	"KernelInfoGetAttribute_int64", "KernelInfoGetAttribute_string",
	"KernelContext_GetInputCount", "KernelContext_GetOutputCount", "KernelContext_GetInput",
	"KernelContext_GetOutput", "ReleaseEnv", "ReleaseStatus", "ReleaseMemoryInfo",
	"ReleaseSession", "ReleaseValue", "ReleaseRunOptions", "ReleaseTypeInfo",
	"ReleaseTensorTypeAndShapeInfo", "ReleaseSessionOptions", "ReleaseCustomOpDomain",
	"GetDenotationFromTypeInfo", "CastTypeInfoToMapTypeInfo",
	"CastTypeInfoToSequenceTypeInfo", "GetMapKeyType", "GetMapValueType",
	"GetSequenceElementType", "ReleaseMapTypeInfo", "ReleaseSequenceTypeInfo",
	"SessionEndProfiling", "SessionGetModelMetadata", "ModelMetadataGetProducerName",
	"ModelMetadataGetGraphName", "ModelMetadataGetDomain", "ModelMetadataGetDescription",
	"ModelMetadataLookupCustomMetadataMap", "ModelMetadataGetVersion",
	"ReleaseModelMetadata", "CreateEnvWithGlobalThreadPools", "DisablePerSessionThreads",
	"CreateThreadingOptions", "ReleaseThreadingOptions",
	"ModelMetadataGetCustomMetadataMapKeys", "AddFreeDimensionOverrideByName",
	"GetAvailableProviders", "ReleaseAvailableProviders",
};
#define N_NAMED (sizeof ort_api_names / sizeof *ort_api_names)
/* How many pointers the copy holds: the table's length is not exported, and a program
 * built against a newer header than the names above uses later entries (left as they
 * are). Copied up to the end of the mapped segment the table lies in; what lies past
 * the real table is never read by a program the library accepted the version of. */
#define N_COPY 1024

struct api_base {
	const void *(*GetApi)(uint32_t version);
	const char *(*GetVersionString)(void);
};

static const struct api_base *(*real_get_api_base)(void);
static const struct api_base *real_base;
static struct api_base my_base;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_TABLES 8
static struct {
	const void *real;
	void **copy;
} tables[MAX_TABLES];
static unsigned ntables;

struct segs {
	uintptr_t table;	  /* in */
	uintptr_t table_end;      /* out: end of the readable segment holding it */
	uintptr_t code[8][2];     /* out: the same object's executable segments */
	unsigned ncode;
};

static int find_segs(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct segs *s = ctx;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && s->table >= a && s->table < a + ph->p_memsz) {
			s->table_end = a + ph->p_memsz;
			mine = 1;
		}
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && s->ncode < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			s->code[s->ncode][0] = info->dlpi_addr + ph->p_vaddr;
			s->code[s->ncode][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			s->ncode++;
		}
	}
	return 1;
}

static int in_code(const struct segs *s, const void *p)
{
	for (unsigned i = 0; i < s->ncode; i++)
		if ((uintptr_t)p >= s->code[i][0] && (uintptr_t)p < s->code[i][1])
			return 1;
	return 0;
}

/* A copy of the table at real with the named entries traced; NULL to use real. */
static void **make_copy(const void *real)
{
	struct segs s = {.table = (uintptr_t)real};
	if (!dl_iterate_phdr(find_segs, &s) || s.table_end <= s.table) {
		prof_debug(PROF_DEBUG_TRACE, "not tracing ONNX Runtime's OrtApi at %p: not in a "
			   "loaded object's data", real);
		return 0;
	}
	size_t n = (s.table_end - s.table) / sizeof(void *);
	if (n > N_COPY)
		n = N_COPY;
	if (n < N_NAMED) {
		prof_debug(PROF_DEBUG_TRACE, "not tracing ONNX Runtime's OrtApi at %p: %zu "
			   "entries before its segment ends, fewer than %zu", real, n, N_NAMED);
		return 0;
	}
	void **copy = calloc(N_COPY, sizeof(void *));
	if (!copy) {
		prof_debug(PROF_DEBUG_TRACE, "not tracing ONNX Runtime's OrtApi: out of memory");
		return 0;
	}
	memcpy(copy, real, n * sizeof(void *));
	uint8_t cat = prof_category(PROF_CATNAME_ORT_API);
	char name[96];
	for (size_t i = 0; i < N_NAMED; i++) {
		if (!in_code(&s, copy[i]) || prof_trace_is_stub(copy[i]))
			continue; /* not a function of the library's: leave it */
		snprintf(name, sizeof name, "OrtApi::%s", ort_api_names[i]);
		void *stub = prof_trace_stub(copy[i], prof_intern(name), cat, 0);
		if (stub)
			copy[i] = stub;
		else
			prof_debug(PROF_DEBUG_TRACE, "not tracing %s: %s", name,
				   prof_trace_stub_why(errno));
	}
	return copy;
}

static const void *ort_get_api(uint32_t version)
{
	const void *real = real_base->GetApi(version);
	if (!real || !prof_proc)
		return real;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	pthread_mutex_lock(&lock);
	const void *out = 0;
	for (unsigned i = 0; i < ntables && !out; i++)
		if (tables[i].real == real)
			out = tables[i].copy;
	if (!out && ntables == MAX_TABLES)
		prof_debug(PROF_DEBUG_TRACE, "not tracing ONNX Runtime's OrtApi version %u: "
			   "%d tables traced already", version, MAX_TABLES);
	if (!out && ntables < MAX_TABLES) {
		void **copy = make_copy(real);
		if (copy) {
			tables[ntables].real = real;
			tables[ntables++].copy = copy;
			out = copy;
		}
	}
	pthread_mutex_unlock(&lock);
	t->busy--;
	return out ? out : real;
}

static const struct api_base *ort_get_api_base(void)
{
	const struct api_base *b = real_get_api_base();
	if (!b)
		return b;
	pthread_mutex_lock(&lock);
	if (!real_base) {
		my_base.GetApi = ort_get_api;
		my_base.GetVersionString = b->GetVersionString;
		__atomic_store_n(&real_base, b, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return b == real_base ? &my_base : b;
}

void *prof_ort_wrap_get_api_base(void *real)
{
	void *expected = 0;
	if (!__atomic_compare_exchange_n((void **)&real_get_api_base, &expected, real, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
	    expected != real)
		return 0;
	return (void *)ort_get_api_base;
}
