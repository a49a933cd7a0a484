/* Logarithmic-bucket quantile sketch; see sketch.h. */
#include "formats/util/sketch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sketch_init(struct sketch *s)
{
	memset(s, 0, sizeof(*s));
}

void sketch_free(struct sketch *s)
{
	free(s->c);
	sketch_init(s);
}

static int32_t index_by_log(uint64_t ns)
{
	if (ns <= 1)
		return 0;
	return (int32_t)ceil(log((double)ns) / log(SKETCH_GAMMA));
}

/* Most durations are short: theirs from a table made once (the same function, without a
 * log per duration: it was a sixth of prof report's time). Single-threaded readers. */
#define SMALL_NS 65536
static uint16_t small_index[SMALL_NS];
static int small_ready;

int32_t sketch_index(uint64_t ns)
{
	if (ns >= SMALL_NS)
		return index_by_log(ns);
	if (!small_ready) {
		for (uint32_t i = 0; i < SMALL_NS; i++)
			small_index[i] = (uint16_t)index_by_log(i);
		small_ready = 1;
	}
	return small_index[ns];
}

double sketch_log_value(int32_t index)
{
	return ((double)index - 0.5) * log(SKETCH_GAMMA);
}

double sketch_value(int32_t index)
{
	return exp(sketch_log_value(index));
}

/* Makes c cover [lo, hi], keeping what it holds. */
static int cover(struct sketch *s, int32_t lo, int32_t hi)
{
	int32_t nlo = s->n ? (lo < s->lo ? lo : s->lo) : lo;
	int32_t nhi = s->n ? (hi > s->lo + (int32_t)s->n - 1 ? hi : s->lo + (int32_t)s->n - 1) : hi;
	uint32_t nn = (uint32_t)(nhi - nlo + 1);
	uint64_t *c;

	if (s->n && nlo == s->lo && nn == s->n)
		return 0;
	c = calloc(nn, sizeof(*c));
	if (!c)
		return -1;
	if (s->n)
		memcpy(c + (s->lo - nlo), s->c, s->n * sizeof(*c));
	free(s->c);
	s->c = c;
	s->lo = nlo;
	s->n = nn;
	return 0;
}

int sketch_add_bucket(struct sketch *s, int32_t index, uint64_t count)
{
	if (index < 0 || index > SKETCH_MAX_INDEX)
		return -1;
	if (!count)
		return 0;
	if (!s->n || index < s->lo || index >= s->lo + (int32_t)s->n) {
		/* grow by more than asked, so a sketch filled in random order reallocates
		 * O(log range) times */
		int32_t lo = index, hi = index;
		if (s->n) {
			int32_t span = (int32_t)s->n;
			lo = index < s->lo ? index - span / 2 : s->lo;
			hi = index < s->lo ? s->lo + span - 1 : index + span / 2;
			if (lo < 0)
				lo = 0;
			if (hi > SKETCH_MAX_INDEX)
				hi = SKETCH_MAX_INDEX;
		}
		if (cover(s, lo, hi))
			return -1;
	}
	s->c[index - s->lo] += count;
	s->count += count;
	return 0;
}

void sketch_remove(struct sketch *s, uint64_t ns)
{
	int32_t i = sketch_index(ns) - s->lo;
	if (i >= 0 && i < (int32_t)s->n && s->c[i]) {
		s->c[i]--;
		s->count--;
	}
}

int sketch_merge(struct sketch *a, const struct sketch *b)
{
	uint32_t i;

	if (!b->n)
		return 0;
	if (cover(a, b->lo, b->lo + (int32_t)b->n - 1))
		return -1;
	for (i = 0; i < b->n; i++)
		a->c[b->lo - a->lo + (int32_t)i] += b->c[i];
	a->count += b->count;
	return 0;
}

double sketch_quantile(const struct sketch *s, double q)
{
	double rank, below = 0;
	uint32_t i;

	if (!s->count)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	rank = q * (double)(s->count - 1); /* 0-based, as for an exact quantile */
	for (i = 0; i < s->n; i++) {
		double c = (double)s->c[i];
		if (c && rank < below + c) {
			int32_t idx = s->lo + (int32_t)i;
			/* the durations of a bucket spread evenly in log scale over its bounds */
			double f = (rank - below + 0.5) / c;
			if (idx == 0)
				return 1;
			return exp(((double)idx - 1 + f) * log(SKETCH_GAMMA));
		}
		below += c;
	}
	return sketch_value(s->lo + (int32_t)s->n - 1);
}
