/* The statistics of prof diff: the Mann-Whitney rank test across runs and a quantile
 * test across calls. */
#include "formats/perfcheck/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Exact up to this many runs a side (the counts stay below 2^53). */
#define MWU_EXACT_MAX 25

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double median_of(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* How many of the C(m+n, m) orderings give each U = 0..m*n: the coefficients of the
 * Gaussian binomial [m+n choose m], built as prod_k (1 - q^(n+k)) / (1 - q^k). */
static double *u_counts(int m, int n)
{
	int deg = 0, k, i, top = m * n;
	double *c = calloc((size_t)(top + n + m + 1), sizeof(*c));

	if (!c)
		return NULL;
	c[0] = 1;
	for (k = 1; k <= m; k++) {
		for (i = deg + n + k; i >= n + k; i--)
			c[i] -= c[i - n - k];
		deg += n + k;
		for (i = k; i <= deg; i++)
			c[i] += c[i - k];
		deg -= k;
	}
	return c;
}

double mwu_p_min(int nx, int ny)
{
	double c = 1;
	int i;

	if (nx <= 0 || ny <= 0)
		return 1;
	for (i = 1; i <= nx; i++)
		c = c * (ny + i) / i;
	return 1 / c;
}

double mwu_p_greater(const double *x, int nx, const double *y, int ny)
{
	double u = 0, p = 0, total = 0;
	int i, j;

	if (nx <= 0 || ny <= 0)
		return NAN;
	for (i = 0; i < nx; i++)
		for (j = 0; j < ny; j++)
			u += y[j] > x[i] ? 1 : y[j] == x[i] ? 0.5 : 0;
	if (nx <= MWU_EXACT_MAX && ny <= MWU_EXACT_MAX) {
		double *c = u_counts(nx, ny);
		/* a tie's half is not rounded up: P(U >= floor(u)) errs on the safe side */
		int from = (int)floor(u);
		if (c) {
			for (i = 0; i <= nx * ny; i++) {
				total += c[i];
				if (i >= from)
					p += c[i];
			}
			free(c);
			return p / total;
		}
	}
	double mean = nx * (double)ny / 2, sd = sqrt(nx * (double)ny * (nx + ny + 1) / 12);
	return 0.5 * erfc((u - 0.5 - mean) / sd / sqrt(2));
}

static int by_value(const void *a, const void *b)
{
	const struct call_bin *x = a, *y = b;

	return (x->v > y->v) - (x->v < y->v);
}

double quantile_test(struct call_bin *b, size_t n, double q, int dir)
{
	double tot[2] = { 0, 0 }, above[2] = { 0, 0 }, cum = 0, all, pq, se, z, cut;
	size_t i;

	for (i = 0; i < n; i++)
		tot[b[i].side] += b[i].count;
	all = tot[0] + tot[1];
	if (!tot[0] || !tot[1])
		return NAN;
	qsort(b, n, sizeof(*b), by_value);
	/* the pooled q-quantile: the value where the running count reaches q of all calls */
	cut = b[n - 1].v;
	for (i = 0; i < n; i++) {
		cum += b[i].count;
		if (cum >= q * all) {
			cut = b[i].v;
			break;
		}
	}
	for (i = 0; i < n; i++)
		if (b[i].v > cut)
			above[b[i].side] += b[i].count;
	pq = (above[0] + above[1]) / all;
	se = sqrt(pq * (1 - pq) * (1 / tot[0] + 1 / tot[1]));
	if (se <= 0)
		return 1;
	z = (above[1] / tot[1] - above[0] / tot[0]) / se * dir;
	return 0.5 * erfc(z / sqrt(2));
}
