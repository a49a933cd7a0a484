/* Which allocator calls the trace shows, and the calls-per-second tracks; see
 * chrome_alloc.h. */
#include "formats/export/chrome_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "formats/export/chrome.h"
#include "formats/util/vec.h"
#include "preload/common/event.h"

void alloc_view_init(struct alloc_view *v, int all)
{
	memset(v, 0, sizeof *v);
	v->all = all;
	u64map_init(&v->large[0]);
	u64map_init(&v->large[1]);
}

void alloc_view_free(struct alloc_view *v)
{
	u64map_free(&v->large[0]);
	u64map_free(&v->large[1]);
	for (size_t i = 0; i < v->nrate; i++)
		free(v->rate[i]);
	free(v->rate);
	memset(v, 0, sizeof *v);
}

static int count_call(struct alloc_view *v, uint32_t image, uint64_t t, uint64_t origin)
{
	if (image >= v->nrate) {
		size_t cap = v->nrate;
		if (vec_grow(&v->rate, &cap, (size_t)image + 1, sizeof *v->rate))
			return -1;
		memset(v->rate + v->nrate, 0, (cap - v->nrate) * sizeof *v->rate);
		v->nrate = cap;
	}
	struct alloc_rate *r = v->rate[image];
	if (!r && !(r = v->rate[image] = calloc(1, sizeof *r)))
		return -1;
	if (!r->width) {
		/* from the trace's origin: another thread's earlier calls may come later in
		 * the capture */
		r->origin = origin < t ? origin : t;
		r->width = 1000000; /* 1 ms, doubled as needed */
	}
	if (t >= r->cur_from && t < r->cur_to) {
		r->counts[r->cur]++;
		return 0;
	}
	uint64_t i = t > r->origin ? (t - r->origin) / r->width : 0;
	while (i >= CHROME_RATE_BUCKETS) {
		for (size_t k = 0; k < CHROME_RATE_BUCKETS / 2; k++)
			r->counts[k] = r->counts[2 * k] + r->counts[2 * k + 1];
		memset(r->counts + CHROME_RATE_BUCKETS / 2, 0,
		       CHROME_RATE_BUCKETS / 2 * sizeof *r->counts);
		r->width *= 2;
		r->used = (r->used + 1) / 2;
		i = (t - r->origin) / r->width;
	}
	r->counts[i]++;
	if (i + 1 > r->used)
		r->used = (uint32_t)i + 1;
	r->cur = (uint32_t)i;
	r->cur_from = r->origin + i * r->width;
	r->cur_to = r->cur_from + r->width;
	return 0;
}

int alloc_view_shown(struct alloc_view *v, int pass, uint32_t image, const struct prof_event *e,
		     uint64_t origin)
{
	if (pass == 0 && count_call(v, image, e->t0, origin))
		return -1;
	if (v->all)
		return 1;
	struct u64map *large = &v->large[pass];
	uint64_t base = (uint64_t)image << 47;
	int shown = e->t1 - e->t0 >= CHROME_ALLOC_SLOW_NS;
	/* a release of a large block shown (a realloc's old block too) */
	if ((e->flags & PROF_EVF_FREES) && e->c &&
	    u64map_remove(large, base ^ (e->c & ((1ull << 47) - 1)), NULL))
		shown = 1;
	if (e->flags & PROF_EVF_ALLOCS) {
		if (!e->a && e->b) /* failed */
			shown = 1;
		if (e->a && e->b >= CHROME_ALLOC_LARGE) {
			int created;
			if (!u64map_upsert(large, base ^ (e->a & ((1ull << 47) - 1)), &created))
				return -1;
			shown = 1;
		}
	}
	return shown;
}

uint64_t alloc_view_points(const struct alloc_view *v)
{
	uint64_t n = 0;
	for (size_t i = 0; i < v->nrate; i++)
		n += v->rate[i] ? v->rate[i]->used + 1 : 0;
	return n;
}

void chrome_write_alloc_rate(struct chrome *c)
{
	const struct alloc_view *v = &c->alloc;
	for (size_t i = 0; i < v->nrate && i < c->pm->nimg; i++) {
		const struct alloc_rate *r = v->rate[i];
		if (!r)
			continue;
		/* one point per bucket (its calls over its width), then 0 after the last */
		for (uint32_t k = 0; k <= r->used; k++) {
			uint64_t t = r->origin + k * r->width;
			chrome_sep(c);
			jw_lit(&c->w, "{\"ph\":\"C\",\"name\":\"allocator calls/s\",\"cat\":\""
				      PROF_CATNAME_MEMORY "\",\"pid\":");
			jw_u64(&c->w, c->pm->img[i].tpid);
			jw_lit(&c->w, ",\"ts\":");
			jw_us(&c->w, (int64_t)(t > c->origin ? t - c->origin : 0));
			jw_lit(&c->w, ",\"args\":{\"calls/s\":");
			uint64_t n = k < r->used ? r->counts[k] : 0;
			jw_u64(&c->w, (uint64_t)((double)n * 1e9 / (double)r->width + 0.5));
			jw_lit(&c->w, "}}");
			c->written++;
		}
	}
}
