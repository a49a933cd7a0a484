/* The size rule's threshold; see dur_hist.h and docs/FORMATS.md. */
#include "formats/export/dur_hist.h"

#include <string.h>

void dur_rule_pick(struct dur_rule *r, const uint64_t hist[DUR_HIST_BUCKETS], uint64_t total,
		   uint64_t budget)
{
	uint64_t above = 0;
	unsigned b = DUR_HIST_BUCKETS;

	memset(r, 0, sizeof(*r));
	r->kept = total;
	if (total <= budget)
		return;
	r->dropping = 1;
	/* Walk down from the longest events; the bucket that overflows the budget is cut. */
	while (b-- > 0) {
		if (above + hist[b] > budget)
			break;
		above += hist[b];
	}
	if (b >= DUR_HIST_BUCKETS) { /* total disagrees with the histogram: keep all */
		r->dropping = 0;
		return;
	}
	r->bucket = b;
	r->tie_total = hist[b];
	r->tie_keep = budget - above;
	r->threshold = dur_bucket_low(b);
	r->kept = budget;
}
