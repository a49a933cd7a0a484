/* A quantile sketch of durations (DDSketch-style): counts in logarithmic buckets
 * (gamma^(i-1), gamma^i] ns with gamma = 1.01, so any quantile read back is within 1%
 * (a bucket's width; read inside the bucket, see sketch_quantile) of a duration of the
 * right rank, whatever the spread. Buckets are kept dense between
 * the lowest and the highest index seen; summaries store only the non-empty ones. */
#ifndef PROF_FORMATS_SKETCH_H
#define PROF_FORMATS_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#define SKETCH_GAMMA 1.01
/* Highest bucket index: 2^64 ns is bucket 4459. */
#define SKETCH_MAX_INDEX 4500

struct sketch {
	int32_t lo;       /* index of c[0] */
	uint32_t n;       /* buckets held in c */
	uint64_t *c;
	uint64_t count;   /* durations added */
};

void sketch_init(struct sketch *s);
void sketch_free(struct sketch *s);
/* The bucket of a duration (0 ns and 1 ns share bucket 0). */
int32_t sketch_index(uint64_t ns);
/* The value a bucket stands for: the geometric middle of its bounds, in ns. */
double sketch_value(int32_t index);
/* ln of sketch_value(index). */
double sketch_log_value(int32_t index);
/* Adds count durations to bucket index (0..SKETCH_MAX_INDEX). 0, or -1 when out of
 * memory or the index is out of range. */
int sketch_add_bucket(struct sketch *s, int32_t index, uint64_t count);
/* Inline for a bucket already held and for 0 and 1 ns (every untimed allocator call
 * lands there): a call per event into sketch.c was a twentieth of the live tables' CPU
 * on an allocator-heavy run. */
static inline int sketch_add(struct sketch *s, uint64_t ns)
{
	int32_t i = ns <= 1 ? 0 : sketch_index(ns);
	if (__builtin_expect(s->n && i >= s->lo && i - s->lo < (int32_t)s->n, 1)) {
		s->c[i - s->lo]++;
		s->count++;
		return 0;
	}
	return sketch_add_bucket(s, i, 1);
}
/* Takes one duration added before back out (a call merged into its parent). */
void sketch_remove(struct sketch *s, uint64_t ns);
/* Adds every bucket of b to a. 0 or -1. */
int sketch_merge(struct sketch *a, const struct sketch *b);
/* The q-quantile (0 <= q <= 1) in ns, interpolated geometrically inside its bucket (as if
 * its durations were spread evenly in log scale); 0 when empty. */
double sketch_quantile(const struct sketch *s, double q);

#endif
