/* CUPTI's activity buffers: each completed buffer's records become events in the ring of
 * the thread CUPTI hands it to (its worker thread, or the thread that flushes).
 *
 *   kernel   "cuda_kernel", named by its (mangled) function: outputs demangle
 *   memcpy   "cuda_memcpy", "Memcpy HtoD" ...; b = bytes
 *   memset   "cuda_memset", "Memset"; b = bytes
 *            all three PROF_EVF_GPU: a = correlation id, c = device/context/stream
 *   memory   "gpu_memory", "GPU allocation" / "GPU release" (device, managed and pinned
 *            host memory, the last as PROF_GPU_PINNED):
 *            PROF_EVF_ALLOCS a = address, b = bytes, c = device; PROF_EVF_FREES c =
 *            address, as the wrappers' events (cuda_api.c), told apart by PROF_EVF_NS
 *   API      "cuda_api", the runtime or driver function; PROF_EVF_TID: c = the calling
 *            thread, a = correlation id, b = return value; at the detached depth (they
 *            arrive long after the calls, out of order with the thread's own events)
 *   dropped  CUPTI's count of records it had no buffer for: a LOST event
 * Times are CUPTI's, on CLOCK_MONOTONIC through the timestamp callback: PROF_EVF_NS.
 * Records of what happened while recording was off (paused, or outside a followed
 * profiler's run) are left out, as the program's own events are: API calls by their
 * start, GPU work and memory by the API call that launched them (their correlation id;
 * a launch still running when recording stops is kept), else by their own time.
 * (A ring gap these events fall into is timed in ns as well, read as ticks: only when
 * the collector is gone, since this thread waits for room otherwise.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/gpu/cupti.h"
#include "preload/common/event.h"
#include "preload/core/state.h"
#include "preload/core/windows.h"

#define BUFFER_BYTES (4u << 20)
/* API records join their thread long after the fact: at the deepest level, which no
 * real call reaches, they stay out of its self-time nesting (as nvtx.c's start/end) */
#define DETACHED_DEPTH PROF_EVENT_DEPTH_MAX
/* API callback ids are below this (13.0: 523 runtime, 807 driver); more are named uncached */
#define MAX_CBID 2048
/* how long CUPTI's thread waits for the collector to make room, at most */
#define ROOM_WAIT_US 2000000
#define ROOM_POLL_US 200

enum { CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET, CAT_API, CAT_MEMORY, NCAT };
static const char *const category_names[NCAT] = {
	PROF_CATNAME_CUDA_KERNEL, PROF_CATNAME_CUDA_MEMCPY, PROF_CATNAME_CUDA_MEMSET,
	PROF_CATNAME_CUDA_API, PROF_CATNAME_GPU_MEMORY};
static _Atomic uint8_t categories[NCAT];

/* names by memcpy kind, then "Memset": string id + 1, 0 until interned */
static const char *const copy_names[] = {
	"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA",
	"Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP", "Memset",
};
#define NCOPY (sizeof copy_names / sizeof *copy_names)
#define MEMSET_NAME (NCOPY - 1)
static _Atomic uint32_t copy_ids[NCOPY];
static _Atomic uint32_t api_ids[2][MAX_CBID];

static uint8_t category(unsigned which)
{
	uint8_t c = atomic_load_explicit(&categories[which], memory_order_relaxed);
	if (!c) {
		c = prof_category(category_names[which]);
		atomic_store_explicit(&categories[which], c, memory_order_relaxed);
	}
	return c;
}

static uint32_t copy_name(unsigned kind)
{
	if (kind >= NCOPY)
		kind = 0;
	uint32_t id = atomic_load_explicit(&copy_ids[kind], memory_order_relaxed);
	if (!id) {
		id = prof_intern(copy_names[kind]) + 1;
		atomic_store_explicit(&copy_ids[kind], id, memory_order_relaxed);
	}
	return id - 1;
}

/* CUPTI names runtime calls with their ABI version, "cudaLaunchKernel_v7000": the
 * suffix goes, so rows read like the code. Driver names' own "_v2" stays. */
static uint32_t intern_api_name(const char *name)
{
	char buf[128];
	size_t n = strlen(name), digits = 0;
	while (digits < n && name[n - 1 - digits] >= '0' && name[n - 1 - digits] <= '9')
		digits++;
	if (digits >= 4 && n >= digits + 3 && n < sizeof buf &&
	    !memcmp(name + n - digits - 2, "_v", 2)) {
		memcpy(buf, name, n - digits - 2);
		buf[n - digits - 2] = 0;
		return prof_intern(buf);
	}
	return prof_intern(name);
}

static uint32_t api_name(int domain, uint32_t cbid)
{
	int runtime = domain == CUPTI_DOMAIN_RUNTIME_API;
	_Atomic uint32_t *slot = cbid < MAX_CBID ? &api_ids[runtime][cbid] : NULL;
	uint32_t id = slot ? atomic_load_explicit(slot, memory_order_relaxed) : 0;
	if (id)
		return id - 1;
	const char *name = NULL;
	if (prof_cupti.callback_name(domain, cbid, &name) == CUPTI_OK && name) {
		id = intern_api_name(name);
	} else {
		char buf[48];
		snprintf(buf, sizeof buf, "CUDA %s call %u", runtime ? "runtime" : "driver", cbid);
		id = prof_intern(buf);
	}
	if (slot)
		atomic_store_explicit(slot, id + 1, memory_order_relaxed);
	return id;
}

/* Whether recording was on at each recent API call, by correlation id: GPU work follows
 * its launch (a direct-mapped cache; a miss falls back to the work's own time). */
#define LAUNCHES 65536
static _Atomic uint64_t launches[LAUNCHES]; /* correlation id << 1 | recording */

static void note_launch(uint32_t corr, int on)
{
	atomic_store_explicit(&launches[corr % LAUNCHES], (uint64_t)corr << 1 | (on != 0),
			      memory_order_relaxed);
}

static int wanted(uint32_t corr, uint64_t ns)
{
	uint64_t v = atomic_load_explicit(&launches[corr % LAUNCHES], memory_order_relaxed);
	if (corr && v >> 1 == corr)
		return (int)(v & 1);
	return prof_window_recording(ns);
}

/* A record whose times are missing (CUPTI writes 0 when it ran short of device memory
 * for them) would land at the epoch: left out. */
static int timed(uint64_t start, uint64_t end)
{
	return start && end >= start;
}

static uint32_t saturated(int64_t v)
{
	return v <= 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void kernel(struct prof_thread *t, const struct cupti_kernel10 *k)
{
	if (!timed(k->start, k->end) || !wanted(k->correlation_id, k->start))
		return;
	uint32_t blocks = saturated((int64_t)k->grid_x * k->grid_y * k->grid_z);
	uint32_t threads = saturated((int64_t)k->block_x * k->block_y * k->block_z);
	prof_emit(t, category(CAT_KERNEL), PROF_EV_COMPLETE, PROF_EVF_NS | PROF_EVF_GPU,
		  prof_intern(k->name ? k->name : "<kernel>"), 0, k->start, k->end,
		  k->correlation_id, (uint64_t)threads << 32 | blocks,
		  PROF_GPU_WHERE(k->device_id, k->context_id, k->stream_id));
}

static void memcpy_record(struct prof_thread *t, const struct cupti_memcpy6 *m)
{
	if (!timed(m->start, m->end))
		return;
	/* [GPU] which API record each id matches: the driver one first, as Kineto does */
	uint32_t corr = m->correlation_id ? m->correlation_id : m->runtime_correlation_id;
	if (!wanted(corr, m->start))
		return;
	prof_emit(t, category(CAT_MEMCPY), PROF_EV_COMPLETE, PROF_EVF_NS | PROF_EVF_GPU,
		  copy_name(m->copy_kind), 0, m->start, m->end, corr, m->bytes,
		  PROF_GPU_WHERE(m->device_id, m->context_id, m->stream_id));
}

static void memset_record(struct prof_thread *t, const struct cupti_memset4 *m)
{
	if (!timed(m->start, m->end) || !wanted(m->correlation_id, m->start))
		return;
	prof_emit(t, category(CAT_MEMSET), PROF_EV_COMPLETE, PROF_EVF_NS | PROF_EVF_GPU,
		  copy_name(MEMSET_NAME), 0, m->start, m->end, m->correlation_id, m->bytes,
		  PROF_GPU_WHERE(m->device_id, m->context_id, m->stream_id));
}

static void memory_record(struct prof_thread *t, const struct cupti_memory4 *m)
{
	static _Atomic uint32_t names[2]; /* string id + 1 */
	int pinned = m->memory_kind == CUPTI_MEMORY_KIND_PINNED;
	if (!m->timestamp || !m->address ||
	    (m->memory_kind != CUPTI_MEMORY_KIND_DEVICE &&
	     m->memory_kind != CUPTI_MEMORY_KIND_MANAGED && !pinned))
		return;
	int release = m->operation == CUPTI_MEMORY_RELEASE;
	if ((!release && m->operation != CUPTI_MEMORY_ALLOCATION) ||
	    !wanted(m->correlation_id, m->timestamp))
		return;
	uint32_t name = atomic_load_explicit(&names[release], memory_order_relaxed);
	if (!name) {
		name = prof_intern(release ? "GPU release" : "GPU allocation") + 1;
		atomic_store_explicit(&names[release], name, memory_order_relaxed);
	}
	if (release)
		prof_emit(t, category(CAT_MEMORY), PROF_EV_COMPLETE, PROF_EVF_NS | PROF_EVF_FREES,
			  name - 1, DETACHED_DEPTH, m->timestamp, m->timestamp, 0, 0, m->address);
	else
		prof_emit(t, category(CAT_MEMORY), PROF_EV_COMPLETE, PROF_EVF_NS | PROF_EVF_ALLOCS,
			  name - 1, DETACHED_DEPTH, m->timestamp, m->timestamp, m->address,
			  m->bytes, pinned ? PROF_GPU_PINNED : m->device_id);
}

static void api(struct prof_thread *t, const struct cupti_api *r, int domain)
{
	if (!timed(r->start, r->end))
		return;
	int on = prof_window_recording(r->start);
	note_launch(r->correlation_id, on);
	if (!on)
		return;
	prof_emit(t, category(CAT_API), PROF_EV_COMPLETE, PROF_EVF_NS | PROF_EVF_TID,
		  api_name(domain, r->cbid), DETACHED_DEPTH, r->start, r->end, r->correlation_id,
		  r->return_value, r->thread_id);
}

/* CUPTI hands over a whole buffer at once, more records than a ring holds between two
 * drains. This is CUPTI's thread, not the program's: it waits for the collector (which
 * drains every millisecond) rather than dropping, unless the collector or the process
 * is going away. */
static void wait_for_room(struct prof_thread *t)
{
	struct ring_writer *w = &t->w;
	/* two: a pending gap's LOST record goes first */
	if (!w->slot || ring_has_room(w, 2))
		return;
	for (unsigned waited = 0; waited < ROOM_WAIT_US; waited += ROOM_POLL_US) {
		if (ring_has_room(w, 2) || (w->commit_failed && w->head + 2 > w->commit_limit))
			return;
		if (atomic_load(&prof_proc->state) == PROC_EXITED || !prof_collector_alive())
			return;
		usleep(ROOM_POLL_US);
	}
}

static void one(struct prof_thread *t, const struct cupti_record *r)
{
	switch (r->kind) {
	case CUPTI_KIND_CONCURRENT_KERNEL:
		kernel(t, (const struct cupti_kernel10 *)r);
		break;
	case CUPTI_KIND_MEMCPY:
		memcpy_record(t, (const struct cupti_memcpy6 *)r);
		break;
	case CUPTI_KIND_MEMSET:
		memset_record(t, (const struct cupti_memset4 *)r);
		break;
	case CUPTI_KIND_RUNTIME:
		api(t, (const struct cupti_api *)r, CUPTI_DOMAIN_RUNTIME_API);
		break;
	case CUPTI_KIND_DRIVER:
		api(t, (const struct cupti_api *)r, CUPTI_DOMAIN_DRIVER_API);
		break;
	case CUPTI_KIND_MEMORY2:
		memory_record(t, (const struct cupti_memory4 *)r);
		break;
	default:
		break; /* a kind another tool enabled */
	}
}

void prof_cupti_buffer_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	struct prof_thread *t = &prof_thr;
	t->busy++;
	/* malloc's 16-byte alignment covers the 8 CUPTI asks for */
	*buffer = malloc(BUFFER_BYTES);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0; /* as many as fit */
	t->busy--;
}

void prof_cupti_buffer_complete(cupti_context ctx, uint32_t stream, uint8_t *buffer,
				size_t size, size_t valid)
{
	(void)size;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	int emit = prof_proc && (t->w.slot || prof_thread_claim(t));
	struct cupti_record *r = NULL;
	while (emit && valid && prof_cupti.next_record(buffer, valid, &r) == CUPTI_OK) {
		wait_for_room(t);
		one(t, r);
	}
	size_t dropped = 0;
	if (emit && prof_cupti.dropped(ctx, stream, &dropped) == CUPTI_OK && dropped) {
		uint64_t now = prof_mono_ns();
		prof_emit(t, PROF_CAT_LOST, PROF_EV_LOST, PROF_EVF_NS, 0, 0, now, now, dropped, 0,
			  0);
	}
	free(buffer);
	t->busy--;
}
