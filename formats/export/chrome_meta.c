/* The Chrome trace's metadata: process and thread names and order (from the pass-1
 * model, which holds the final names: the last thread name seen wins), the live-heap
 * counter track, and otherData with the session's facts, losses and the size rule. */
#include <stdio.h>
#include <string.h>

#include "formats/export/chrome.h"

#define MAX_LISTED_GAPS 1000

static void str_gid(struct jw *w, const struct model *m, uint32_t gid)
{
	size_t len;
	const char *s = model_str(m, gid, &len);

	jw_str(w, s, len);
}

/* shared: another process shown has the same label, so this one's pid is added (two
 * rows of one name cannot be told apart in a viewer) */
static void process_meta(struct chrome *c, const struct image *im, int shared)
{
	char label[32];

	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
	jw_u64(&c->w, im->tpid);
	jw_lit(&c->w, ",\"args\":{\"name\":");
	if (im->label != STR_NONE && shared) {
		size_t len;
		const char *s = model_str(c->pm, im->label, &len);
		char buf[512];
		int n = snprintf(buf, sizeof buf, "%.*s [pid %u]", (int)(len < 400 ? len : 400), s,
				 im->pid);
		jw_str(&c->w, buf, (size_t)n);
	} else if (im->label != STR_NONE) {
		str_gid(&c->w, c->pm, im->label);
	} else {
		snprintf(label, sizeof(label), "pid %u", im->pid);
		jw_cstr(&c->w, label);
	}
	jw_lit(&c->w, "}}");
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
	jw_u64(&c->w, im->tpid);
	jw_lit(&c->w, ",\"args\":{\"sort_index\":");
	jw_u64(&c->w, im->pid_order);
	jw_lit(&c->w, "}}");
}

static void thread_meta(struct chrome *c, const struct thread *t)
{
	char name[32];

	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	jw_u64(&c->w, c->pm->img[t->image].tpid);
	jw_lit(&c->w, ",\"tid\":");
	jw_u64(&c->w, t->tid);
	jw_lit(&c->w, ",\"args\":{\"name\":");
	if (t->name != STR_NONE) {
		str_gid(&c->w, c->pm, t->name);
	} else {
		/* Every row gets a name, so viewers never show a bare number. */
		snprintf(name, sizeof(name), "thread %u", t->tid);
		jw_cstr(&c->w, name);
	}
	jw_lit(&c->w, "}}");
}

void chrome_write_meta(struct chrome *c)
{
	const struct model *m = c->pm;
	struct u64map last;
	uint64_t *slot;
	size_t i;
	int created;

	/* how many processes shown have each label */
	struct u64map labels;
	u64map_init(&labels);
	for (i = 0; i < m->nimg; i++) {
		uint64_t *cur = u64map_find(&m->pid_image, model_pid_key(&m->img[i]));
		if (cur && *cur == i && !m->img[i].folded && m->img[i].label != STR_NONE) {
			uint64_t *n = u64map_upsert(&labels, m->img[i].label, &created);
			if (n)
				++*n;
		}
	}
	for (i = 0; i < m->nimg; i++) {
		uint64_t *cur = u64map_find(&m->pid_image, model_pid_key(&m->img[i]));
		/* One name per pid: its latest image's (after exec). */
		if (cur && *cur == i && !m->img[i].folded) {
			uint64_t *n = m->img[i].label != STR_NONE
					      ? u64map_find(&labels, m->img[i].label)
					      : NULL;
			process_meta(c, &m->img[i], n && *n > 1);
		}
	}
	u64map_free(&labels);
	/* One name per (pid, tid): the last one seen over all images of the pid, else the
	 * thread's last entry (unnamed). */
	u64map_init(&last);
	for (i = 0; i < m->nthr; i++) {
		const struct thread *t = &m->thr[i];
		slot = u64map_upsert(&last, (uint64_t)m->img[t->image].tpid << 32 | t->tid, &created);
		if (!slot)
			thread_meta(c, t); /* out of memory: every entry, rather than none */
		else if (created || t->name != STR_NONE || m->thr[*slot].name == STR_NONE)
			*slot = i;
	}
	for (i = 0; i < m->nthr; i++) {
		const struct thread *t = &m->thr[i];
		slot = u64map_find(&last, (uint64_t)m->img[t->image].tpid << 32 | t->tid);
		if (slot && *slot == i)
			thread_meta(c, t);
	}
	u64map_free(&last);
}

/* A process-wide marker where a curve peaked, on the counter's time. */
static void peak_marker(struct chrome *c, const struct image *im, const struct mem_image *mi,
			const char *name)
{
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"i\",\"s\":\"p\",\"name\":");
	jw_cstr(&c->w, name);
	jw_lit(&c->w, ",\"cat\":\"memory\",\"pid\":");
	jw_u64(&c->w, im->tpid);
	jw_lit(&c->w, ",\"tid\":");
	jw_u64(&c->w, im->tpid);
	jw_lit(&c->w, ",\"ts\":");
	jw_us(&c->w, (int64_t)(mi->peak_t - c->origin));
	jw_lit(&c->w, ",\"args\":{\"bytes\":");
	jw_u64(&c->w, mi->peak);
	jw_lit(&c->w, "}}");
	c->written++;
}

void chrome_write_heap(struct chrome *c)
{
	char name[40];
	size_t i;

	for (i = 0; i < c->heap.n; i++) {
		const struct heap_point *p = &c->heap.pts[i];
		chrome_sep(c);
		jw_lit(&c->w, "{\"ph\":\"C\",\"name\":");
		if (p->device < 0) {
			jw_lit(&c->w, "\"live heap bytes\"");
		} else if (p->device == MODEL_PINNED) {
			jw_lit(&c->w, "\"pinned host live bytes\"");
		} else if (p->device == MODEL_MXNET_CPU || p->device == MODEL_MXNET_GPU) {
			jw_cstr(&c->w, p->device == MODEL_MXNET_CPU ? "MXNet cpu storage live bytes"
								   : "MXNet gpu storage live bytes");
		} else {
			snprintf(name, sizeof(name), "GPU %d live bytes", (int)p->device);
			jw_cstr(&c->w, name);
		}
		jw_lit(&c->w, ",\"cat\":\"" PROF_CATNAME_MEMORY "\",\"pid\":");
		jw_u64(&c->w, p->pid);
		jw_lit(&c->w, ",\"ts\":");
		jw_us(&c->w, (int64_t)(p->t - c->origin));
		jw_lit(&c->w, ",\"args\":{\"bytes\":");
		jw_u64(&c->w, p->live);
		jw_lit(&c->w, "}}");
	}
	c->written += c->heap.n;
	for (i = 0; i < c->pm->nimg; i++) {
		const struct image *im = &c->pm->img[i];
		if (im->mem.peak)
			peak_marker(c, im, &im->mem, "peak live heap");
		for (int d = 0; d < MODEL_DEVICES; d++)
			if (im->gpu[d].peak) {
				if (d == MODEL_PINNED)
					snprintf(name, sizeof(name), "peak pinned host memory");
				else if (!MODEL_IS_GPU(d))
					snprintf(name, sizeof(name), "peak MXNet %s storage",
						 d == MODEL_MXNET_CPU ? "cpu" : "gpu");
				else
					snprintf(name, sizeof(name), "peak GPU %d memory", d);
				peak_marker(c, im, &im->gpu[d], name);
			}
	}
}

static void fact(struct jw *w, const struct model *m, const char *key)
{
	jw_cstr_or_null(w, model_fact(m, key));
}

static void gaps(struct chrome *c)
{
	const struct model *m = c->pm;
	size_t i;

	jw_lit(&c->w, ",\n\"lost_gaps\":[");
	for (i = 0; i < m->ngaps && i < MAX_LISTED_GAPS; i++) {
		const struct lost_gap *g = &m->gaps[i];
		jw_text(&c->w, i ? ",{\"pid\":" : "{\"pid\":");
		jw_u64(&c->w, g->pid);
		jw_lit(&c->w, ",\"tid\":");
		jw_u64(&c->w, g->tid);
		jw_lit(&c->w, ",\"count\":");
		jw_u64(&c->w, g->count);
		jw_lit(&c->w, ",\"start_ns\":");
		jw_u64(&c->w, g->t0);
		jw_lit(&c->w, ",\"end_ns\":");
		jw_u64(&c->w, g->t1);
		jw_lit(&c->w, ",\"cause\":");
		jw_cstr(&c->w, g->startup ? "startup" : "ring");
		jw_lit(&c->w, "}");
	}
	jw_lit(&c->w, "]");
	if (m->ngaps > MAX_LISTED_GAPS) {
		jw_lit(&c->w, ",\"lost_gaps_not_listed\":");
		jw_u64(&c->w, m->ngaps - MAX_LISTED_GAPS);
	}
}

static void rule_text(struct chrome *c)
{
	const struct dur_rule *r = &c->rule;
	char buf[400];
	int n;

	if (!r->dropping) {
		snprintf(buf, sizeof(buf), "all events kept (limit %llu events)",
			 (unsigned long long)c->max_events);
	} else if (r->kept == 0) {
		snprintf(buf, sizeof(buf), "every complete event but user ranges left out to stay "
			 "under %llu events", (unsigned long long)c->max_events);
	} else {
		n = snprintf(buf, sizeof(buf), "events shorter than %llu ns left out to stay under "
			     "%llu events", (unsigned long long)r->threshold,
			     (unsigned long long)c->max_events);
		if (r->tie_keep < r->tie_total)
			snprintf(buf + n, sizeof(buf) - (size_t)n, "; of the %llu events from %llu to "
				 "%llu ns, the first %llu in file order kept",
				 (unsigned long long)r->tie_total, (unsigned long long)r->threshold,
				 (unsigned long long)dur_bucket_low(r->bucket + 1) - 1,
				 (unsigned long long)r->tie_keep);
	}
	jw_cstr(&c->w, buf);
}

static void heap_text(struct chrome *c)
{
	char buf[300];

	if (c->heap.thinned)
		snprintf(buf, sizeof(buf), "%llu changes of live bytes (heap, GPUs) thinned to %zu points "
			 "(per process: lowest and highest point of equal runs)",
			 (unsigned long long)c->heap.changes, c->heap.n);
	else
		snprintf(buf, sizeof(buf), "all %llu changes of live bytes (heap, GPUs)",
			 (unsigned long long)c->heap.changes);
	jw_cstr(&c->w, buf);
}

void chrome_write_other(struct chrome *c)
{
	const struct model *m = c->pm;

	jw_lit(&c->w, "{\"command\":");
	jw_cstr(&c->w, model_command(m));
	jw_lit(&c->w, ",\"host\":");
	fact(&c->w, m, "host");
	jw_lit(&c->w, ",\"clock\":");
	fact(&c->w, m, "clock");
	jw_lit(&c->w, ",\"start_ns\":");
	jw_u64(&c->w, c->origin);
	jw_lit(&c->w, ",\"events\":");
	jw_u64(&c->w, m->events);
	jw_lit(&c->w, ",\"lost_events\":");
	jw_u64(&c->w, model_lost(m));
	jw_lit(&c->w, ",\"lost_startup_events\":");
	jw_u64(&c->w, model_lost_startup(m));
	jw_lit(&c->w, ",\"window\":");
	model_window_json(&c->w, m);
	jw_lit(&c->w, ",\"parts\":");
	model_parts_json(&c->w, m);
	jw_lit(&c->w, ",\"captures\":");
	model_sources_json(&c->w, m);
	gaps(c);
	jw_lit(&c->w, ",\n\"processes\":");
	jw_u64(&c->w, model_npids(m));
	jw_lit(&c->w, ",\"processes_shown\":");
	jw_u64(&c->w, model_shown_pids(m));
	jw_lit(&c->w, ",\"folded_images\":");
	jw_u64(&c->w, c->fold.images);
	jw_lit(&c->w, ",\"folded_helper_processes\":");
	jw_u64(&c->w, c->fold.helpers);
	jw_lit(&c->w, ",\"folded_events\":");
	jw_u64(&c->w, m->folded_events);
	jw_lit(&c->w, ",\"json_events\":");
	jw_u64(&c->w, c->written);
	jw_lit(&c->w, ",\"json_dropped\":");
	jw_u64(&c->w, c->dropped);
	jw_lit(&c->w, ",\"json_flows\":");
	jw_u64(&c->w, c->flows_written);
	jw_lit(&c->w, ",\"json_max_events\":");
	jw_u64(&c->w, c->max_events);
	jw_lit(&c->w, ",\n\"json_rule\":");
	rule_text(c);
	jw_lit(&c->w, ",\n\"heap_counter\":");
	heap_text(c);
	jw_lit(&c->w, ",\n\"alloc_rule\":");
	jw_cstr(&c->w, c->alloc.all
			       ? "every allocator call (PROFILER_TRACE_ALLOC=all)"
			       : "allocator calls of 1 MiB or more and their releases, failed ones "
				 "and calls of 20 us or more shown; the others are in the live heap "
				 "bytes and allocator calls/s counters (PROFILER_TRACE_ALLOC=all "
				 "shows them all); the tables and the capture have every call");
	jw_lit(&c->w, ",\"json_alloc_hidden\":");
	jw_u64(&c->w, c->alloc.hidden);
	if (c->damage) {
		jw_lit(&c->w, ",\n\"capture_damaged\":");
		jw_cstr(&c->w, c->damage);
	}
	jw_lit(&c->w, "}");
}
