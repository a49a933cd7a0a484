/* The live-heap counter track and its thinning; see chrome_heap.h. */
#include "formats/export/chrome_heap.h"

#include <stdlib.h>
#include <string.h>

#include "formats/model/memcurve.h"
#include "formats/util/vec.h"

static int keep(struct heap_track *h, struct memcurve_point p, uint32_t pid, int32_t device)
{
	if (VEC_RESERVE(h->pts, h->cap, h->n + 1))
		return -1;
	h->pts[h->n++] = (struct heap_point){.t = p.t, .live = p.live, .pid = pid, .device = device};
	return 0;
}

/* memcurve_thin's points of p, kept. */
static int thin(struct heap_track *h, const struct memcurve_point *p, size_t n, uint32_t pid,
		int32_t device, uint64_t share)
{
	struct memcurve_point *out = malloc(((size_t)share + 2) * sizeof *out);
	if (!out)
		return -1;
	size_t k = memcurve_thin(p, n, (size_t)share, out);
	int rc = 0;
	for (size_t i = 0; i < k && !rc; i++)
		rc = keep(h, out[i], pid, device);
	free(out);
	return rc;
}

/* One domain's curve (memcurve.h: already bounded while the capture was read). */
static int curve_track(struct heap_track *h, const struct mem_curve *c, uint32_t pid,
		       int32_t device, uint64_t share)
{
	struct memcurve_point *p;
	size_t n = memcurve_points(c, &p), i;
	int rc = 0;

	if (!p)
		return -1;
	h->changes += c->changes;
	h->thinned |= c->changes > n;
	if (n && n <= share) {
		for (i = 0; i < n && !rc; i++)
			rc = keep(h, p[i], pid, device);
	} else if (n) {
		h->thinned = 1;
		rc = thin(h, p, n, pid, device, share);
	}
	free(p);
	return rc;
}

int heap_track_build(struct heap_track *h, struct model *m, uint64_t max_points)
{
	uint64_t changes = 0;
	size_t i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < m->nimg; i++)
		for (int d = -1; d < MODEL_DEVICES; d++) {
			const struct mem_curve *c = MODEL_DOMAIN(&m->img[i], d)->curve;
			changes += c ? c->changes : 0;
		}
	for (i = 0; i < m->nimg; i++)
		for (int d = -1; d < MODEL_DEVICES; d++) {
			const struct mem_curve *c = MODEL_DOMAIN(&m->img[i], d)->curve;
			uint64_t share = c ? c->changes : 0;
			if (!share)
				continue;
			if (changes > max_points) {
				/* A share in proportion to the curve's changes, at least 2. */
				share = (uint64_t)((double)max_points * (double)share /
						   (double)changes);
				if (share < 2)
					share = 2;
			}
			if (curve_track(h, c, m->img[i].tpid, d, share))
				return -1;
		}
	return 0;
}

void heap_track_free(struct heap_track *h)
{
	free(h->pts);
	u64map_free(&h->runs);
	memset(h, 0, sizeof(*h));
}

static uint64_t run_key(uint32_t pid, int32_t device)
{
	return (uint64_t)pid << 8 | (uint8_t)(device + 1);
}

/* Each curve's points are one run, in time order (heap_track_build). */
static void index_runs(struct heap_track *h)
{
	int created;
	u64map_init(&h->runs);
	h->indexed = 1;
	for (size_t i = 0, start = 0; i < h->n; i++)
		if (i + 1 == h->n || run_key(h->pts[i + 1].pid, h->pts[i + 1].device) !=
					     run_key(h->pts[i].pid, h->pts[i].device)) {
			uint64_t *v = u64map_upsert(&h->runs, run_key(h->pts[i].pid, h->pts[i].device),
						    &created);
			if (v && created)
				*v = (uint64_t)start << 32 | (i + 1 - start);
			start = i + 1;
		}
}

uint64_t heap_live_at(struct heap_track *h, uint32_t pid, int32_t device, uint64_t t)
{
	if (!h->indexed)
		index_runs(h);
	uint64_t *v = u64map_find(&h->runs, run_key(pid, device));
	if (!v)
		return 0;
	size_t lo = *v >> 32, n = *v & 0xffffffffu, hi = lo + n;
	if (!n || h->pts[lo].t > t)
		return 0;
	while (hi - lo > 1) { /* the last point at or before t */
		size_t mid = lo + (hi - lo) / 2;
		if (h->pts[mid].t <= t)
			lo = mid;
		else
			hi = mid;
	}
	return h->pts[lo].live;
}
