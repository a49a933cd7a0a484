/* The live-heap counter track and its thinning; see chrome_heap.h. */
#include "formats/export/chrome_heap.h"

#include <stdlib.h>
#include <string.h>

#include "formats/model/memtrack.h"
#include "formats/util/vec.h"

struct curve {
	struct heap_point *p;
	size_t n, cap;
	uint32_t pid;
	int32_t device;
};

static int collect(void *ctx, uint64_t t, uint64_t live)
{
	struct curve *c = ctx;

	if (VEC_RESERVE(c->p, c->cap, c->n + 1))
		return -1;
	c->p[c->n].t = t;
	c->p[c->n].live = live;
	c->p[c->n].pid = c->pid;
	c->p[c->n++].device = c->device;
	return 0;
}

static int keep(struct heap_track *h, const struct heap_point *p)
{
	if (VEC_RESERVE(h->pts, h->cap, h->n + 1))
		return -1;
	h->pts[h->n++] = *p;
	return 0;
}

/* Lowest and highest point of each of share/2 equal runs, in time order. */
static int thin(struct heap_track *h, const struct curve *c, uint64_t share)
{
	size_t runs = share / 2 ? (size_t)(share / 2) : 1, r;

	for (r = 0; r < runs; r++) {
		size_t lo = c->n * r / runs, hi = c->n * (r + 1) / runs, i, mn = lo, mx = lo;
		if (lo >= hi)
			continue;
		for (i = lo; i < hi; i++) {
			if (c->p[i].live < c->p[mn].live)
				mn = i;
			if (c->p[i].live > c->p[mx].live)
				mx = i;
		}
		if (keep(h, &c->p[mn < mx ? mn : mx]) ||
		    (mn != mx && keep(h, &c->p[mn < mx ? mx : mn])))
			return -1;
	}
	/* The value at the end is what a viewer shows after the last point: keep it. */
	if (h->pts[h->n - 1].t != c->p[c->n - 1].t || h->pts[h->n - 1].live != c->p[c->n - 1].live)
		return keep(h, &c->p[c->n - 1]);
	return 0;
}

static int curve_track(struct heap_track *h, struct mem_image *mi, uint32_t pid,
		       int32_t device, uint64_t share)
{
	struct curve c = { .pid = pid, .device = device };
	size_t i;
	int rc = memtrack_analyze(mi, collect, &c);

	h->changes += c.n;
	if (!rc && c.n && c.n <= share) {
		for (i = 0; i < c.n && !rc; i++)
			rc = keep(h, &c.p[i]);
	} else if (!rc && c.n) {
		h->thinned = 1;
		rc = thin(h, &c, share);
	}
	free(c.p);
	return rc;
}

int heap_track_build(struct heap_track *h, struct model *m, uint64_t max_points)
{
	uint64_t ops = 0;
	size_t i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < m->nimg; i++)
		for (int d = -1; d < MODEL_DEVICES; d++)
			ops += MODEL_DOMAIN(&m->img[i], d)->nops;
	for (i = 0; i < m->nimg; i++)
		for (int d = -1; d < MODEL_DEVICES; d++) {
			struct mem_image *mi = MODEL_DOMAIN(&m->img[i], d);
			uint64_t share = mi->nops;
			if (!share)
				continue;
			if (ops > max_points) {
				/* A share in proportion to the curve's operations, at least 2. */
				share = (uint64_t)((double)max_points * (double)share /
						   (double)ops);
				if (share < 2)
					share = 2;
			}
			if (curve_track(h, mi, m->img[i].pid, d, share))
				return -1;
		}
	return 0;
}

void heap_track_free(struct heap_track *h)
{
	free(h->pts);
	memset(h, 0, sizeof(*h));
}
