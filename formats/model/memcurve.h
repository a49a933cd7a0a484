/* A domain's live bytes over time, kept in bounded memory as it is made: every change
 * while there are few, then per time bucket its lowest and highest point (buckets double
 * in width as the run goes on), and always the last point. A trace's counter track is
 * thinned from it (formats/export/chrome_heap.c); the peak is always among its points. */
#ifndef PROF_FORMATS_MEMCURVE_H
#define PROF_FORMATS_MEMCURVE_H

#include <stddef.h>
#include <stdint.h>

#define MEMCURVE_BUCKETS 8192

struct memcurve_point {
	uint64_t t, live;
};

struct mem_curve {
	struct memcurve_point *p; /* every change, until 2 * MEMCURVE_BUCKETS of them */
	size_t n;
	/* then buckets of width ns from origin: lo and hi (hi.t == 0: one point) */
	struct memcurve_point (*bucket)[2];
	uint64_t origin, width;
	struct memcurve_point last;
	uint64_t changes; /* every change seen */
	/* the bucket last placed in: where it ends, its lowest and highest live bytes (a
	 * point inside both changes nothing: most of a busy heap's points) */
	uint64_t cur_end, cur_lo, cur_hi;
};

struct mem_curve *memcurve_new(void);
/* One change. 0, or -1 when out of memory. */
int memcurve_add(struct mem_curve *c, uint64_t t, uint64_t live);
/* The points kept, in time order, into *out (malloc'd; the caller frees). */
size_t memcurve_points(const struct mem_curve *c, struct memcurve_point **out);
/* Thins p[0..n) to at most max + 1 points into out (room for max + 1): the lowest and
 * highest point of each of max/2 equal runs, in time order, and the last point (what a
 * viewer shows after it). Spikes survive, the peak among them. Returns the count. */
size_t memcurve_thin(const struct memcurve_point *p, size_t n, size_t max,
		     struct memcurve_point *out);
void memcurve_free(struct mem_curve *c);

#endif
