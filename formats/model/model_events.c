/* The model's own pass over each events record: counts, the time span, lost gaps and
 * (when asked) the memory operations of each image. */
#include "formats/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model/memtrack.h"
#include "formats/model/model_internal.h"
#include "formats/util/vec.h"

static int lost_gap(struct model *m, uint32_t pid, uint32_t tid, const struct prof_event *e)
{
	struct lost_gap *g;

	if (VEC_RESERVE(m->gaps, m->gaps_cap, m->ngaps + 1))
		return -1;
	g = &m->gaps[m->ngaps++];
	g->pid = pid;
	g->tid = tid;
	g->count = e->a;
	g->t0 = e->t0;
	g->t1 = e->t1;
	g->startup = e->b == PROF_LOST_STARTUP;
	m->lost += e->a;
	if (g->startup)
		m->lost_startup += e->a;
	return 0;
}

/* Byte sums saturate: a damaged capture's absurd size must not wrap a total below what
 * the sound allocations alone made. */
static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* One operation for the live-heap analysis (memtrack.h), when the model keeps it. */
static int track(struct model *m, struct mem_image *mi, uint32_t thread, uint64_t t,
		 uint64_t ptr, uint64_t size, uint32_t stack)
{
	if (!m->track_memory)
		return 0;
	struct mem_op op = {.t = t, .ptr = ptr, .size = size, .stack = stack};
	return memtrack_push(mi, thread, &op, m->keep_curves);
}

/* A release is placed at the call's start and an allocation at its end: the allocator
 * can hand a released block to another thread only after the release began, and that
 * thread's call ends later, so time order never puts a reuse before its release. */
static int memory_event(struct model *m, struct mem_image *mi, uint32_t thread,
			const struct prof_event *e, uint32_t stack)
{
	if ((e->flags & PROF_EVF_FREES) && e->c) {
		mi->frees++;
		if (track(m, mi, thread, e->t0, e->c, MEM_OP_FREE, 0))
			return -1;
	}
	if ((e->flags & PROF_EVF_ALLOCS) && e->a) {
		mi->allocs++;
		mi->bytes = sat_add(mi->bytes, e->b);
		/* bucket k >= 1 holds sizes up to 2^(k-1) above the previous bucket's */
		unsigned k = e->b <= 1 ? (unsigned)e->b : 65 - (unsigned)__builtin_clzll(e->b - 1);
		if (k >= MEM_SIZE_BUCKETS)
			k = MEM_SIZE_BUCKETS - 1;
		mi->size_count[k]++;
		mi->size_bytes[k] = sat_add(mi->size_bytes[k], e->b);
		/* A size of MEM_OP_FREE cannot be allocated; one less keeps it an allocation. */
		if (track(m, mi, thread, e->t1, e->a, e->b == MEM_OP_FREE ? e->b - 1 : e->b,
			  stack))
			return -1;
	}
	return 0;
}

/* Device memory (category gpu_memory, see preload/gpu/cuda_api.c and cupti_records.c): an
 * allocation names its device (c), a release only its pointer, found among the image's
 * live device blocks. CUPTI's records (in ns: PROF_EVF_NS) are kept apart until
 * model_read picks one source per process. */
static int gpu_memory_event(struct model *m, uint32_t image, uint32_t thread,
			    const struct prof_event *e, uint32_t stack)
{
	struct image *im = &m->img[image];
	int cupti = (e->flags & PROF_EVF_NS) != 0, mxnet = (int)e->cat == im->mxnet_cat;
	struct mem_image **devices = cupti ? &im->gpu_cupti : &im->gpu;
	if (*devices == model_no_gpu) {
		struct mem_image *d = calloc(MODEL_DEVICES, sizeof(*d));
		if (!d)
			return -1;
		*devices = d;
	}
	struct mem_image *per_device = *devices;
	struct u64map *live = mxnet ? &m->mxnet_blocks
			      : cupti ? &m->gpu_cupti_blocks
				      : &m->gpu_blocks;
	uint64_t base = (uint64_t)image << 47, dev;
	if ((e->flags & PROF_EVF_FREES) && e->c &&
	    u64map_remove(live, base ^ (e->c & ((1ull << 47) - 1)), &dev)) {
		struct mem_image *mi = &per_device[dev];
		mi->frees++;
		if (track(m, mi, thread, e->t0, e->c, MEM_OP_FREE, 0))
			return -1;
	}
	if ((e->flags & PROF_EVF_ALLOCS) && e->a) {
		int created;
		dev = e->c == PROF_GPU_PINNED          ? MODEL_PINNED
		      : e->c == PROF_MXNET_STORAGE_CPU ? MODEL_MXNET_CPU
		      : e->c == PROF_MXNET_STORAGE_GPU ? MODEL_MXNET_GPU
		      : e->c < MODEL_GPUS              ? e->c
						       : MODEL_GPUS - 1;
		uint64_t *slot = u64map_upsert(live, base ^ (e->a & ((1ull << 47) - 1)), &created);
		if (!slot)
			return -1;
		*slot = dev;
		struct mem_image *mi = &per_device[dev];
		mi->allocs++;
		mi->bytes = sat_add(mi->bytes, e->b);
		if (track(m, mi, thread, e->t1, e->a, e->b == MEM_OP_FREE ? e->b - 1 : e->b,
			  stack))
			return -1;
	}
	return 0;
}

static inline int unlikely_gpu(const struct model *m, int64_t im, const struct prof_event *e)
{
	return __builtin_expect(e->cat >= PROF_CAT_FIRST_DYNAMIC, 0) &&
	       (m->img[im].gpu_cat == (int)e->cat || m->img[im].mxnet_cat == (int)e->cat) &&
	       e->type == PROF_EV_COMPLETE;
}

/* Room for n events and their stacks in the scratch arrays. */
static int scratch(struct model *m, size_t n)
{
	if (n <= m->ev_buf_cap)
		return 0;
	struct prof_event *e = realloc(m->ev_buf, n * sizeof *e);
	if (!e)
		return -1;
	m->ev_buf = e;
	uint32_t *st = realloc(m->ev_stacks_buf, n * sizeof *st);
	if (!st)
		return -1;
	m->ev_stacks_buf = st;
	m->ev_buf_cap = n;
	return 0;
}

/* The row of a GPU event: one thread per (device, stream), named for viewers. */
static int64_t gpu_row(struct model *m, uint32_t image, uint64_t where)
{
	size_t before = m->nthr;
	int64_t th = model_thread_of(m, image, prof_gpu_tid(where));
	char name[48];

	if (th >= 0 && m->nthr > before) {
		snprintf(name, sizeof(name), "GPU %u, stream %u", prof_gpu_device(where),
			 prof_gpu_stream(where));
		if (strtab_intern_str(&m->str, name, &m->thr[th].name))
			return -1;
	}
	return th;
}

/* The thread an event is shown on: the ring's, unless it was written for another row
 * (CUPTI's records, which its own thread delivers). */
static int64_t row_of(struct model *m, uint32_t image, uint32_t ring_thread,
		      const struct prof_event *e)
{
	if (e->type == PROF_EV_LOST)
		return ring_thread;
	if (e->flags & PROF_EVF_GPU)
		return gpu_row(m, image, e->c);
	if (e->flags & PROF_EVF_TID)
		return model_thread_of(m, image, (uint32_t)e->c);
	return ring_thread;
}

/* Hands the events to on_events in runs that share a row (and makes the rows, whether
 * or not anyone listens: the thread list is the same for every reader). */
static int by_row(struct model *m, uint32_t image, uint32_t ring_thread,
		  const struct prof_event *ev, const uint32_t *stacks, uint32_t n)
{
	uint32_t i = 0, j;

	while (i < n) {
		int64_t th = row_of(m, image, ring_thread, &ev[i]), next = -1;
		if (th < 0)
			return -1;
		for (j = i + 1; j < n; j++) {
			next = row_of(m, image, ring_thread, &ev[j]);
			if (next != th)
				break;
		}
		if (j < n && next < 0)
			return -1;
		if (m->on_events) {
			m->ev_stacks = stacks ? stacks + i : NULL;
			m->ev_first = i;
			int rc = m->on_events(m->ctx, m, image, (uint32_t)th, ev + i, j - i);
			m->ev_stacks = 0;
			m->ev_first = 0;
			if (rc)
				return rc;
		}
		i = j;
	}
	return 0;
}

/* A folded launcher's events: counted as captured (and its losses kept), shown to no
 * one: no thread row, no memory, no on_events. */
static int folded_events(struct model *m, const struct cap_events *ce,
			 const struct prof_event *ev)
{
	for (uint32_t i = 0; i < ce->count; i++) {
		if (ev[i].type == PROF_EV_LOST) {
			if (lost_gap(m, ce->pid, ce->tid, &ev[i]))
				return -1;
			continue;
		}
		m->events++;
		m->folded_events++;
	}
	return 0;
}

/* The flight recorder keeps the events from m->keep_from on: an event that started
 * before is left out (counted), a loss whose gap reaches into the kept time is kept. */
static int kept(const struct model *m, const struct prof_event *e)
{
	return e->type == PROF_EV_LOST ? e->t1 >= m->keep_from : e->t0 >= m->keep_from;
}

static int events_kept(struct model *m, const struct cap_events *ce,
		       const struct prof_event *ev)
{
	uint32_t n = 0;
	if (VEC_RESERVE(m->keep_buf, m->keep_cap, (size_t)ce->count + 1))
		return -1;
	/* the header first, then the kept events (one record, as model_events reads it) */
	unsigned char *rec = (unsigned char *)m->keep_buf;
	struct prof_event *out = (struct prof_event *)(void *)(rec + sizeof *ce);
	_Static_assert(sizeof(struct cap_events) % 8 == 0, "events stay aligned");
	for (uint32_t i = 0; i < ce->count; i++) {
		if (kept(m, &ev[i]))
			out[n++] = ev[i];
		else if (ev[i].type != PROF_EV_LOST && ev[i].type != PROF_EV_STACK)
			m->kept_out++;
	}
	if (!n)
		return 0;
	struct cap_events h = *ce;
	h.count = n;
	memcpy(rec, &h, sizeof h);
	return model_events_of(m, model_image_of(m, ce->pid), rec,
			       (uint32_t)(sizeof h + sizeof(struct prof_event) * n));
}

int model_drained(struct model *m, const void *payload, uint32_t len)
{
	struct cap_drained d;
	if (!m->track_memory || len < sizeof d)
		return 0;
	memcpy(&d, payload, sizeof d);
	uint64_t before = model_source_time(m, d.before_ns);
	/* the host heaps only: a device's comes from CUPTI's buffers too, seconds late */
	for (size_t i = 0; i < m->nimg; i++)
		if (m->img[i].source == m->sources.cur && m->img[i].mem.stream &&
		    memtrack_drained(&m->img[i].mem, before))
			return -1;
	return 0;
}

/* A later capture's events on the first capture's clock: a copy of the record, moved. */
static const void *shifted(struct model *m, const void *payload, uint32_t len)
{
	int64_t shift = model_source_shift(m);
	if (!shift)
		return payload;
	struct cap_events ce;
	memcpy(&ce, payload, sizeof(ce));
	if (VEC_RESERVE(m->shift_buf, m->shift_cap, (size_t)ce.count + 1))
		return NULL;
	memcpy(m->shift_buf, payload, len);
	struct prof_event *ev = (struct prof_event *)(void *)((char *)m->shift_buf + sizeof(ce));
	for (uint32_t i = 0; i < ce.count; i++) {
		ev[i].t0 = model_source_time(m, ev[i].t0);
		ev[i].t1 = model_source_time(m, ev[i].t1);
	}
	return m->shift_buf;
}

int model_events(struct model *m, const void *payload, uint32_t len)
{
	struct cap_events ce;
	if (!(payload = shifted(m, payload, len)))
		return -1;
	const struct prof_event *ev = (const struct prof_event *)((const char *)payload +
								  sizeof(ce));
	memcpy(&ce, payload, sizeof(ce));
	if (m->keep_from) {
		uint32_t i;
		for (i = 0; i < ce.count && kept(m, &ev[i]); i++)
			;
		if (i < ce.count)
			return events_kept(m, &ce, ev);
	}
	return model_events_of(m, model_image_of(m, ce.pid), payload, len);
}

int model_events_of(struct model *m, int64_t im, const void *payload, uint32_t len)
{
	struct cap_events ce;
	const struct prof_event *ev = (const struct prof_event *)((const char *)payload +
								  sizeof(ce));
	int64_t th;
	uint32_t i, out = 0;

	(void)len; /* checked by the reader: len == sizeof(ce) + count * sizeof(*ev) */
	memcpy(&ce, payload, sizeof(ce));
	if (im >= 0 && m->img[im].folded)
		return folded_events(m, &ce, ev);
	if (im < 0 || (th = model_thread_of(m, (uint32_t)im, ce.tid)) < 0)
		return -1;
	struct thread *t = &m->thr[th];
	/* stacks are paired with their events here; consumers get events without the
	 * PROF_EV_STACK records and a parallel array of stack indexes */
	int stacks = t->pending_stack != 0, routed = 0;
	for (i = 0; i < ce.count && !stacks; i++)
		stacks = ev[i].type == PROF_EV_STACK;
	if (stacks && scratch(m, ce.count))
		return -1;
	for (i = 0; i < ce.count; i++) {
		const struct prof_event *e = &ev[i];

		if (e->t0 < m->first_t)
			m->first_t = e->t0;
		if (e->t1 > m->last_t)
			m->last_t = e->t1;
		if (e->type == PROF_EV_STACK) {
			t->pending_stack = model_stack_index(m, (uint32_t)im, (uint32_t)e->a);
			t->pending_t0 = e->t0;
			m->events++;
			continue;
		}
		uint32_t stack = 0;
		if (t->pending_stack) {
			if (t->pending_t0 == e->t0 && e->type != PROF_EV_LOST)
				stack = t->pending_stack;
			t->pending_stack = 0;
		}
		if (stacks) {
			m->ev_buf[out] = *e;
			m->ev_stacks_buf[out++] = stack;
		}
		if (e->type == PROF_EV_LOST) {
			if (lost_gap(m, ce.pid, ce.tid, e))
				return -1;
			continue;
		}
		m->events++;
		routed |= e->flags & (PROF_EVF_GPU | PROF_EVF_TID);
		if (e->cat == PROF_CAT_MEMORY &&
		    memory_event(m, &m->img[im].mem, (uint32_t)th, e, stack))
			return -1;
		if (unlikely_gpu(m, im, e) &&
		    gpu_memory_event(m, (uint32_t)im, (uint32_t)th, e, stack))
			return -1;
	}
	if (routed) /* new rows: t may have moved */
		return by_row(m, (uint32_t)im, (uint32_t)th, stacks ? m->ev_buf : ev,
			      stacks ? m->ev_stacks_buf : NULL, stacks ? out : ce.count);
	if (!m->on_events)
		return 0;
	if (!stacks)
		return m->on_events(m->ctx, m, (uint32_t)im, (uint32_t)th, ev, ce.count);
	m->ev_stacks = m->ev_stacks_buf;
	int rc = m->on_events(m->ctx, m, (uint32_t)im, (uint32_t)th, m->ev_buf, out);
	m->ev_stacks = 0;
	return rc;
}
