/* GPU work in the Chrome trace (CUPTI's records, see preload/common/event.h): the args of its X
 * events, and a flow arrow from each launch to the GPU work it made, as Kineto draws
 * them: "s" on the launching API call (CUPTI's API record, on the calling thread's row),
 * "f" bound to the kernel or copy (on its device and stream row), both with the
 * correlation id CUPTI gave them, made unique per process image.
 *
 * Only launches that made GPU work get an arrow (most API calls do not: cudaGetDevice,
 * cudaStreamIsCapturing...). Pass 1 keeps the correlation ids of GPU work, so memory
 * grows with the GPU events, not with the API calls. Arrows go with the X events the
 * size rule keeps. */
#include "formats/export/chrome.h"
#include "preload/common/event.h"

#define FLOW_GPU 1       /* pass 1: GPU work has this id */
#define FLOW_API_AFTER 2 /* pass 1: an API record with the id came after the GPU work */
#define FLOW_STARTED 4   /* pass 2: the arrow's start is written */

static uint64_t flow_key(uint32_t image, uint64_t correlation)
{
	return (uint64_t)image << 32 | (uint32_t)correlation;
}

int chrome_gpu_plan(struct chrome *c, uint32_t image, const struct prof_event *e)
{
	uint64_t *v;
	int created;

	if (e->type != PROF_EV_COMPLETE || !e->a)
		return 0;
	if (e->flags & PROF_EVF_GPU) {
		v = u64map_upsert(&c->flows, flow_key(image, e->a), &created);
		if (!v)
			return -1;
		*v |= FLOW_GPU;
	} else if (e->flags & PROF_EVF_TID) {
		v = u64map_find(&c->flows, flow_key(image, e->a));
		if (v)
			*v |= FLOW_API_AFTER;
	}
	return 0;
}

static int is_kernel(struct chrome *c, uint32_t cat)
{
	if (c->kernel_cat == STR_NONE && strtab_intern_str(&c->om->str, PROF_CATNAME_CUDA_KERNEL,
							  &c->kernel_cat))
		c->kernel_cat = STR_NONE;
	return cat == c->kernel_cat;
}

char *chrome_gpu_args(struct chrome *c, char *p, uint32_t cat, const struct prof_event *e)
{
	if (e->flags & PROF_EVF_TID) {
		p = jp_lit(p, ",\"args\":{\"correlation\":");
		p = jp_u64(p, e->a);
		p = jp_lit(p, ",\"status\":");
		p = jp_u64(p, e->b);
		return jp_lit(p, "}");
	}
	p = jp_lit(p, ",\"args\":{\"device\":");
	p = jp_u64(p, prof_gpu_device(e->c));
	p = jp_lit(p, ",\"context\":");
	p = jp_u64(p, prof_gpu_context(e->c));
	p = jp_lit(p, ",\"stream\":");
	p = jp_u64(p, prof_gpu_stream(e->c));
	p = jp_lit(p, ",\"correlation\":");
	p = jp_u64(p, e->a);
	if (is_kernel(c, cat)) {
		p = jp_lit(p, ",\"grid\":");
		p = jp_u64(p, e->b & 0xffffffffu);
		p = jp_lit(p, ",\"block\":");
		p = jp_u64(p, e->b >> 32);
	} else {
		p = jp_lit(p, ",\"bytes\":");
		p = jp_u64(p, e->b);
	}
	return jp_lit(p, "}");
}

int chrome_gpu_flow(struct chrome *c, uint32_t image, const char *pidtid, size_t pidtid_len,
		    const struct prof_event *e)
{
	uint64_t key = flow_key(image, e->a), *v;
	const char *start;

	if (!e->a || !(v = u64map_find(&c->flows, key)))
		return 0;
	if (e->flags & PROF_EVF_TID) {
		/* one start per id: a runtime call and the driver call inside it may share it */
		if (*v & FLOW_STARTED)
			return 0;
		*v |= FLOW_STARTED;
		start = "{\"ph\":\"s\",\"id\":";
	} else {
		/* no end without a launch to start from (not recorded, or left out) */
		if (!(*v & (FLOW_API_AFTER | FLOW_STARTED)))
			return 0;
		start = "{\"ph\":\"f\",\"bp\":\"e\",\"id\":";
	}
	chrome_sep(c);
	jw_text(&c->w, start);
	jw_u64(&c->w, key);
	if (c->is_kineto) /* Kineto's arrows from a launch to its work */
		jw_lit(&c->w, ",\"name\":\"ac2g\",\"cat\":\"ac2g\"");
	else
		jw_lit(&c->w, ",\"name\":\"launch\",\"cat\":\"cuda_flow\"");
	jw_raw(&c->w, pidtid, pidtid_len);
	jw_lit(&c->w, ",\"ts\":");
	jw_us(&c->w, (int64_t)(e->t0 - c->origin));
	jw_lit(&c->w, "}");
	c->flows_written++;
	return 0;
}
