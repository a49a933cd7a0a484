/* A log-linear histogram of durations (exact below 128 ns, then 64 buckets per power of
 * two: within 1.6%), used to pick the size rule's threshold in one pass. */
#ifndef PROF_FORMATS_DUR_HIST_H
#define PROF_FORMATS_DUR_HIST_H

#include <stdint.h>

#define DUR_HIST_BUCKETS (128 + 57 * 64)

static inline unsigned dur_bucket(uint64_t d)
{
	unsigned e;

	if (d < 128)
		return (unsigned)d;
	e = 63u - (unsigned)__builtin_clzll(d);
	return 128 + (e - 7) * 64 + (unsigned)((d >> (e - 6)) & 63);
}

/* The smallest duration that falls in bucket b. */
static inline uint64_t dur_bucket_low(unsigned b)
{
	unsigned e;

	if (b < 128)
		return b;
	e = 7 + (b - 128) / 64;
	return (uint64_t)(64 + (b - 128) % 64) << (e - 6);
}

/* The size rule: which droppable events to keep so that at most budget of them are. */
struct dur_rule {
	int dropping;       /* 0: keep every event */
	unsigned bucket;    /* events in lower buckets are left out */
	uint64_t tie_keep;  /* events in this bucket kept, first come first kept */
	uint64_t tie_total; /* events in this bucket */
	uint64_t threshold; /* dur_bucket_low(bucket) */
	uint64_t kept;      /* droppable events kept in all */
};

/* Picks the highest bucket whose events, with all longer ones, still exceed budget. */
void dur_rule_pick(struct dur_rule *r, const uint64_t hist[DUR_HIST_BUCKETS], uint64_t total,
		   uint64_t budget);

#endif
