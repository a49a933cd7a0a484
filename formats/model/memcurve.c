/* The bounded live-bytes curve; see memcurve.h. */
#include "formats/model/memcurve.h"

#include <stdlib.h>
#include <string.h>

struct mem_curve *memcurve_new(void)
{
	struct mem_curve *c = calloc(1, sizeof *c);
	if (c && !(c->p = malloc(2 * MEMCURVE_BUCKETS * sizeof *c->p))) {
		free(c);
		return NULL;
	}
	return c;
}

void memcurve_free(struct mem_curve *c)
{
	if (!c)
		return;
	free(c->p);
	free(c->bucket);
	free(c);
}

/* A point into its bucket: the bucket's lowest and highest, in time order. */
static void into(struct memcurve_point *b, struct memcurve_point x)
{
	if (!b[0].t) { /* empty (times are never 0 past the origin's bucket: see below) */
		b[0] = x;
		return;
	}
	struct memcurve_point lo = b[0], hi = b[1].t ? b[1] : b[0];
	if (lo.live > hi.live) {
		struct memcurve_point s = lo;
		lo = hi;
		hi = s;
	}
	if (x.live < lo.live)
		lo = x;
	else if (x.live > hi.live)
		hi = x;
	else
		return;
	b[0] = lo.t <= hi.t ? lo : hi;
	b[1] = lo.t <= hi.t ? hi : lo;
	if (b[1].t == b[0].t && b[1].live == b[0].live)
		b[1].t = 0;
}

static void place(struct mem_curve *c, struct memcurve_point x)
{
	uint64_t i = (x.t - c->origin) / c->width;
	while (i >= MEMCURVE_BUCKETS) { /* twice as wide: pairs merge */
		for (size_t k = 0; k < MEMCURVE_BUCKETS / 2; k++) {
			struct memcurve_point a[2], b[2];
			memcpy(a, c->bucket[2 * k], sizeof a);
			memcpy(b, c->bucket[2 * k + 1], sizeof b);
			memset(c->bucket[k], 0, sizeof c->bucket[k]);
			for (int j = 0; j < 2; j++) {
				if (a[j].t)
					into(c->bucket[k], a[j]);
			}
			for (int j = 0; j < 2; j++) {
				if (b[j].t)
					into(c->bucket[k], b[j]);
			}
		}
		memset(c->bucket[MEMCURVE_BUCKETS / 2], 0,
		       MEMCURVE_BUCKETS / 2 * sizeof c->bucket[0]);
		c->width *= 2;
		i = (x.t - c->origin) / c->width;
	}
	struct memcurve_point *b = c->bucket[i];
	into(b, x);
	c->cur_end = c->origin + (i + 1) * c->width;
	c->cur_lo = c->cur_hi = b[0].live;
	if (b[1].t && b[1].live < c->cur_lo)
		c->cur_lo = b[1].live;
	else if (b[1].t)
		c->cur_hi = b[1].live;
}

int memcurve_add(struct mem_curve *c, uint64_t t, uint64_t live)
{
	struct memcurve_point x = {.t = t ? t : 1, .live = live};
	/* a late operation (memtrack.h) changed the live bytes when it was applied: after
	 * the points before it, so the curve stays in time order */
	if (c->changes && x.t < c->last.t)
		x.t = c->last.t;
	c->changes++;
	c->last = x;
	/* in order (above), so inside the bucket last placed in if before its end */
	if (c->bucket && x.t < c->cur_end && x.live >= c->cur_lo && x.live <= c->cur_hi)
		return 0;
	if (!c->bucket && c->n < 2 * MEMCURVE_BUCKETS) {
		c->p[c->n++] = x;
		return 0;
	}
	if (!c->bucket) {
		/* from here, buckets: a width that puts what came so far in half of them */
		c->bucket = calloc(MEMCURVE_BUCKETS, sizeof *c->bucket);
		if (!c->bucket)
			return -1;
		c->origin = c->p[0].t;
		uint64_t span = c->p[c->n - 1].t - c->origin + 1;
		c->width = 1;
		while (c->width * (MEMCURVE_BUCKETS / 2) < span)
			c->width *= 2;
		for (size_t i = 0; i < c->n; i++)
			place(c, c->p[i]);
		free(c->p);
		c->p = NULL;
		c->n = 0;
	}
	place(c, x);
	return 0;
}

size_t memcurve_points(const struct mem_curve *c, struct memcurve_point **out)
{
	size_t n = 0, cap = c->bucket ? 2 * MEMCURVE_BUCKETS + 1 : c->n;
	struct memcurve_point *p = malloc((cap ? cap : 1) * sizeof *p);
	*out = p;
	if (!p)
		return 0;
	if (!c->bucket) {
		memcpy(p, c->p, c->n * sizeof *p);
		return c->n;
	}
	for (size_t i = 0; i < MEMCURVE_BUCKETS; i++)
		for (int j = 0; j < 2; j++)
			if (c->bucket[i][j].t)
				p[n++] = c->bucket[i][j];
	/* the value at the end is what a viewer shows after the last point */
	if (!n || p[n - 1].t != c->last.t || p[n - 1].live != c->last.live)
		p[n++] = c->last;
	return n;
}

size_t memcurve_thin(const struct memcurve_point *p, size_t n, size_t max,
		     struct memcurve_point *out)
{
	size_t runs = max / 2 ? max / 2 : 1, k = 0;
	for (size_t r = 0; r < runs; r++) {
		size_t lo = n * r / runs, hi = n * (r + 1) / runs, mn = lo, mx = lo;
		if (lo >= hi)
			continue;
		for (size_t i = lo; i < hi; i++) {
			if (p[i].live < p[mn].live)
				mn = i;
			if (p[i].live > p[mx].live)
				mx = i;
		}
		out[k++] = p[mn < mx ? mn : mx];
		if (mn != mx)
			out[k++] = p[mn < mx ? mx : mn];
	}
	if (n && (!k || out[k - 1].t != p[n - 1].t || out[k - 1].live != p[n - 1].live))
		out[k++] = p[n - 1];
	return k;
}
