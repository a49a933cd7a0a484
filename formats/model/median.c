/* Exact median by quickselect: O(n) on average, in place. */
#include "formats/model/stats.h"

static void swap(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;
	*a = *b;
	*b = t;
}

/* Puts the k-th smallest value at v[k], smaller ones before it, larger ones after. */
static void select_kth(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		uint64_t pivot;

		/* Median of three, so sorted runs (durations of a steady loop) stay linear. */
		if (v[mid] < v[lo])
			swap(&v[mid], &v[lo]);
		if (v[hi] < v[lo])
			swap(&v[hi], &v[lo]);
		if (v[hi] < v[mid])
			swap(&v[hi], &v[mid]);
		pivot = v[mid];
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				swap(&v[i], &v[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

uint64_t median_u64(uint64_t *v, size_t n)
{
	uint64_t hi, lo;
	size_t i;

	if (n == 0)
		return 0;
	select_kth(v, n, n / 2);
	hi = v[n / 2];
	if (n % 2)
		return hi;
	lo = v[0];
	for (i = 1; i < n / 2; i++)
		if (v[i] > lo)
			lo = v[i];
	return lo + (hi - lo) / 2;
}
