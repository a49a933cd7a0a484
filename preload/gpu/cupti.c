/* CUPTI as the source of GPU activity: claimed when the driver initialises.
 *
 * libprof points CUDA_INJECTION64_PATH at itself; inside cuInit the driver dlopens that
 * path and calls InitializeInjection, before any context or launch exists, so nothing
 * that runs on the GPU is missed. There libprof loads libcupti.so.13 (never linked: a
 * process without CUDA never gets here and loads nothing of it), subscribes as
 * "libprof" (CUPTI takes one subscriber per process: an error here means another tool,
 * e.g. Nsight Systems, holds it, which is said in one line), puts CUPTI's timestamps on
 * the session clock, and enables kernels, copies, sets and the runtime and driver API
 * records. Any other failure leaves CUPTI alone, said only under PROFILER_DEBUG=cupti:
 * no driver, no CUPTI 13, an old CUPTI, a call CUPTI refuses.
 *
 * Where libcupti.so.13 comes from: the copy already mapped (PyTorch links it), else the
 * library search path, else the directory of the loaded libcudart.so.13 (pip wheels keep
 * both in nvidia/cu13/lib). A second copy by another path would be a second CUPTI. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "preload/common/debug.h"
#include "preload/gpu/cupti.h"
#include "preload/wrap/dl.h"
#include "preload/core/state.h"
#include "preload/common/env.h"
#include "preload/core/env_set.h"

#define EXPORT __attribute__((visibility("default")))

#define CUPTI_SONAME "libcupti.so.13"
/* the record layouts of cupti_abi.h are CUPTI 13's */
#define CUPTI_VERSION_MIN 130000
#define CUPTI_VERSION_END 140000

struct cupti_fns prof_cupti;

static void *handle;
static cupti_subscriber subscriber;
static _Atomic uint32_t held_by; /* pid of the process that holds CUPTI, 0: none */
static _Atomic int api_records;  /* RUNTIME or DRIVER records enabled */
static _Atomic(const char *) other_claim;
static atomic_flag injected = ATOMIC_FLAG_INIT;

int InitializeInjection(void);

void prof_cupti_setup(void)
{
	/* another tool's (Nsight Systems sets it), "none", or a profiled parent's: kept */
	const char *set = prof_getenv("CUDA_INJECTION64_PATH");
	if (!prof_cfg.cupti || (set && !(prof_debug_mask & PROF_DEBUG_CUPTI)))
		return;
	struct prof_thread *t = &prof_thr;
	Dl_info self;
	char path[PATH_MAX], other[PATH_MAX];
	t->busy++;
	if (dladdr((void *)InitializeInjection, &self) && self.dli_fname &&
	    realpath(self.dli_fname, path)) {
		if (!set)
			prof_setenv("CUDA_INJECTION64_PATH", path, 0);
		else if (!realpath(set, other) || strcmp(other, path))
			prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline unless CUPTI is free: "
				   "CUDA_INJECTION64_PATH is another tool's (%s)", set);
	}
	t->busy--;
}

int prof_cupti_held(void)
{
	/* a forked child shares the flag but not the CUDA state behind it */
	uint32_t pid = atomic_load(&held_by);
	return pid && prof_proc && prof_proc->pid == pid;
}

int prof_cupti_api_on(void)
{
	return atomic_load_explicit(&api_records, memory_order_relaxed) && prof_cupti_held();
}

void prof_cupti_claimed_by_other(const char *what)
{
	const char *none = NULL;
	if (prof_proc && prof_cfg.cupti && !atomic_load(&held_by))
		atomic_compare_exchange_strong(&other_claim, &none, what);
}

void *prof_cupti_real(const char *name)
{
	static _Atomic(void *) mapped;
	void *h = handle ? handle : atomic_load(&mapped);
	if (!h) {
		h = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
		atomic_store(&mapped, h);
	}
	void *f = h ? prof_real_dlsym(h, name) : NULL;
	/* a CUPTI mapped under another name, in the global scope */
	return f ? f : prof_real_dlsym(RTLD_NEXT, name);
}

struct beside {
	char dir[PATH_MAX];
};

static int find_cudart(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct beside *b = arg;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	if (!slash || strncmp(slash + 1, "libcudart.so.13", 15))
		return 0;
	size_t n = (size_t)(slash - info->dlpi_name);
	if (n + sizeof "/" CUPTI_SONAME > sizeof b->dir)
		return 0;
	memcpy(b->dir, info->dlpi_name, n);
	b->dir[n] = 0;
	return 1;
}

static void *open_beside_cudart(void)
{
	struct beside b = {{0}};
	if (!dl_iterate_phdr(find_cudart, &b))
		return NULL;
	strcat(b.dir, "/" CUPTI_SONAME);
	return dlopen(b.dir, RTLD_NOW | RTLD_LOCAL);
}

#define FN(field, name, required) {offsetof(struct cupti_fns, field), name, required}
static const struct {
	size_t offset;
	const char *name;
	int required;
} functions[] = {
	FN(get_version, "cuptiGetVersion", 1),
	FN(subscribe, "cuptiSubscribe", 1),
	FN(subscribe_v2, "cuptiSubscribe_v2", 0),
	FN(unsubscribe, "cuptiUnsubscribe", 1),
	FN(enable_callback, "cuptiEnableCallback", 1),
	FN(register_timestamp, "cuptiActivityRegisterTimestampCallback", 1),
	FN(set_thread_id_type, "cuptiSetThreadIdType", 1),
	FN(register_callbacks, "cuptiActivityRegisterCallbacks", 1),
	FN(enable, "cuptiActivityEnable", 1),
	FN(disable, "cuptiActivityDisable", 1),
	FN(flush_all, "cuptiActivityFlushAll", 1),
	FN(next_record, "cuptiActivityGetNextRecord", 1),
	FN(dropped, "cuptiActivityGetNumDroppedRecords", 1),
	FN(callback_name, "cuptiGetCallbackName", 1),
};

/* libcupti.so.13 loaded and its functions found; never closed (CUPTI keeps threads). */
static int load(void)
{
	handle = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (!handle)
		handle = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!handle)
		handle = open_beside_cudart();
	if (!handle) {
		prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: cannot load %s (%s)", CUPTI_SONAME,
			   dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof functions / sizeof *functions; i++) {
		void *f = prof_real_dlsym(handle, functions[i].name);
		if (!f && functions[i].required) {
			prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: %s has no %s", CUPTI_SONAME,
				   functions[i].name);
			return -1;
		}
		memcpy((char *)&prof_cupti + functions[i].offset, &f, sizeof f);
	}
	uint32_t version = 0;
	cupti_result rc = prof_cupti.get_version(&version);
	if (rc != CUPTI_OK || version < CUPTI_VERSION_MIN || version >= CUPTI_VERSION_END) {
		prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: cuptiGetVersion gave %d, version %u "
			   "(libprof reads CUPTI %d to %d)", (int)rc, version, CUPTI_VERSION_MIN,
			   CUPTI_VERSION_END - 1);
		return -1;
	}
	return 0;
}

static void flush(void)
{
	struct prof_thread *t = &prof_thr;
	t->busy++;
	/* forced: buffers with records still in flight come out too */
	prof_cupti.flush_all(CUPTI_FLUSH_FORCED);
	t->busy--;
}

static void on_callback(void *user, int domain, uint32_t cbid, const void *data)
{
	(void)user;
	(void)data;
	/* a context's records must be out before it goes (cudart's teardown at exit) */
	if (domain == CUPTI_DOMAIN_RESOURCE && cbid == CUPTI_CBID_CONTEXT_DESTROY_STARTING)
		flush();
}

/* atexit, registered inside cuInit: runs before the libraries' destructors (libcupti's
 * among them) and, [GPU: to confirm] before cudart's own teardown. */
static void flush_at_exit(void)
{
	if (prof_cupti_held())
		flush();
}

static uint64_t session_clock(void)
{
	return prof_mono_ns();
}

static cupti_result subscribe(char *holder, size_t len)
{
	if (!prof_cupti.subscribe_v2)
		return prof_cupti.subscribe(&subscriber, on_callback, NULL);
	struct cupti_subscriber_params p = {
		.struct_size = sizeof p,
		.subscriber_name = "libprof",
		.old_subscriber_name = holder,
		.old_subscriber_size = len,
	};
	return prof_cupti.subscribe_v2(&subscriber, on_callback, NULL, &p);
}

static int start_recording(void)
{
	static const uint32_t gpu[] = {CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_KIND_MEMCPY,
				       CUPTI_KIND_MEMSET};
	prof_cupti.enable_callback(1, subscriber, CUPTI_DOMAIN_RESOURCE,
				   CUPTI_CBID_CONTEXT_DESTROY_STARTING);
	/* before any kind is enabled: CUPTI then maps GPU timestamps onto this clock (its
	 * default, CLOCK_REALTIME, would put them off the timeline) */
	cupti_result rc = prof_cupti.register_timestamp(session_clock);
	if (rc != CUPTI_OK) {
		prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: "
			   "cuptiActivityRegisterTimestampCallback failed (%d)", (int)rc);
		return -1;
	}
	/* threadId as the kernel's tid, the one the rows use (else pthread_self()) */
	int tids = prof_cupti.set_thread_id_type(CUPTI_THREAD_ID_SYSTEM) == CUPTI_OK;
	rc = prof_cupti.register_callbacks(prof_cupti_buffer_request, prof_cupti_buffer_complete);
	if (rc != CUPTI_OK) {
		prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: cuptiActivityRegisterCallbacks "
			   "failed (%d)", (int)rc);
		return -1;
	}
	for (size_t i = 0; i < sizeof gpu / sizeof *gpu; i++)
		if ((rc = prof_cupti.enable(gpu[i])) != CUPTI_OK) {
			prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: cuptiActivityEnable(kind %u) "
				   "failed (%d)", gpu[i], (int)rc);
			while (i--)
				prof_cupti.disable(gpu[i]);
			return -1;
		}
	/* the API records carry the correlation ids that tie launches to kernels */
	if (tids) {
		int runtime = prof_cupti.enable(CUPTI_KIND_RUNTIME) == CUPTI_OK;
		int driver = prof_cupti.enable(CUPTI_KIND_DRIVER) == CUPTI_OK;
		atomic_store(&api_records, runtime || driver);
	}
	/* device memory for processes whose allocations no wrapper sees (the model uses
	 * them only then: formats/model/model.c); optional */
	if (prof_cfg.profile_memory)
		prof_cupti.enable(CUPTI_KIND_MEMORY2);
	return 0;
}

static void claim(void)
{
	const char *other = atomic_load(&other_claim);
	if (other) {
		prof_warn("CUPTI is in use by another module of this process (it called %s "
			  "first): GPU kernels and copies are not recorded", other);
		return;
	}
	if (load())
		return;
	char holder[CUPTI_HOLDER_NAME_LEN] = "";
	cupti_result rc = subscribe(holder, sizeof holder);
	holder[sizeof holder - 1] = 0;
	if (rc == CUPTI_ERR_MULTIPLE_SUBSCRIBERS) {
		prof_warn("CUPTI is held by another tool (%s): GPU kernels and copies are not "
			  "recorded", holder[0] ? holder : "another CUPTI subscriber");
		return;
	}
	if (rc != CUPTI_OK) {
		prof_debug(PROF_DEBUG_CUPTI, "no GPU timeline: cuptiSubscribe failed (%d)", (int)rc);
		return;
	}
	if (start_recording()) {
		prof_cupti.unsubscribe(subscriber);
		return;
	}
	atomic_store(&held_by, prof_proc->pid);
	atexit(flush_at_exit);
}

/* The driver calls it once, inside cuInit, with the driver initialised and no context
 * yet. Non-zero: success (the driver goes on either way). */
EXPORT int InitializeInjection(void)
{
	if (atomic_flag_test_and_set(&injected))
		return 1;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	if (prof_proc && prof_cfg.cupti)
		claim();
	t->busy--;
	return 1;
}
