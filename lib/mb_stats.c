/*
 * mb_stats: Mann-Whitney U with midranks; exact or normal p-values.
 */
#include "mb_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

#define EXACT_MAX_PAIRS 2500 /* nx * ny up to this: exact distribution */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct mb_spread mb_spread_of(double *samples, size_t n)
{
	struct mb_spread s = { NAN, NAN, NAN, NAN, NAN };
	double sq = 0;
	size_t i;

	if (!n)
		return s;
	for (i = 0, s.mean = 0; i < n; i++)
		s.mean += samples[i] / (double)n;
	for (i = 0; i < n; i++)
		sq += (samples[i] - s.mean) * (samples[i] - s.mean);
	s.cv = n > 1 ? sqrt(sq / (double)(n - 1)) / s.mean : 0;
	qsort(samples, n, sizeof(*samples), cmp_double);
	s.min = samples[0];
	s.max = samples[n - 1];
	s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
	return s;
}

struct ranked {
	double v;
	int from_x;
};

static int cmp_ranked(const void *a, const void *b)
{
	double x = ((const struct ranked *)a)->v, y = ((const struct ranked *)b)->v;

	return (x > y) - (x < y);
}

/*
 * P(U <= u) under the null for sizes NX, NY: counts of arrangements by
 * f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u), as fractions.
 */
static double exact_cdf(size_t nx, size_t ny, double u, int *err)
{
	size_t umax = nx * ny, m, n, k;
	double *f, *g, sum = 0, total = 0;

	/* f[n][k]: arrangements of m x's and n y's with U = k, for the current m */
	f = calloc((ny + 1) * (umax + 1), sizeof(*f));
	g = calloc((ny + 1) * (umax + 1), sizeof(*g));
	if (!f || !g) {
		free(f);
		free(g);
		*err = mb_fail("out of host memory for an exact Mann-Whitney test");
		return NAN;
	}
	for (n = 0; n <= ny; n++)
		f[n * (umax + 1)] = 1; /* m = 0: U = 0 only */
	for (m = 1; m <= nx; m++) {
		memset(g, 0, (ny + 1) * (umax + 1) * sizeof(*g));
		for (n = 0; n <= ny; n++)
			for (k = 0; k <= umax; k++) {
				double v = n ? g[(n - 1) * (umax + 1) + k] : 0;

				/* the largest is an x: it beats all n y's */
				if (k >= n)
					v += f[n * (umax + 1) + k - n];
				g[n * (umax + 1) + k] = v;
			}
		memcpy(f, g, (ny + 1) * (umax + 1) * sizeof(*f));
	}
	for (k = 0; k <= umax; k++) {
		total += f[ny * (umax + 1) + k];
		if ((double)k <= u + 1e-9)
			sum += f[ny * (umax + 1) + k];
	}
	free(f);
	free(g);
	return sum / total;
}

static double normal_sf(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

int mb_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, struct mb_mwu *r)
{
	size_t n = nx + ny, i, j;
	struct ranked *all = malloc(n * sizeof(*all));
	double rank_x = 0, ties = 0, mean, sd, z, lo;
	int err = 0;

	memset(r, 0, sizeof(*r));
	if (!all)
		return mb_fail("out of host memory for a Mann-Whitney test");
	for (i = 0; i < nx; i++)
		all[i] = (struct ranked){ x[i], 1 };
	for (i = 0; i < ny; i++)
		all[nx + i] = (struct ranked){ y[i], 0 };
	qsort(all, n, sizeof(*all), cmp_ranked);
	for (i = 0; i < n; i = j) {
		double midrank;

		for (j = i + 1; j < n && all[j].v == all[i].v; j++)
			;
		midrank = 0.5 * (double)(i + 1 + j); /* ranks i+1 .. j */
		ties += (double)(j - i) * (double)(j - i) * (double)(j - i) - (double)(j - i);
		for (size_t k = i; k < j; k++)
			if (all[k].from_x)
				rank_x += midrank;
	}
	free(all);
	r->u = rank_x - (double)nx * (double)(nx + 1) / 2;
	mean = (double)nx * (double)ny / 2;
	lo = r->u < mean ? r->u : (double)nx * (double)ny - r->u; /* the nearer tail */
	if (!ties && nx * ny <= EXACT_MAX_PAIRS) {
		r->exact = 1;
		r->p = 2 * exact_cdf(nx, ny, lo, &err);
		r->p_min = 2 * exact_cdf(nx, ny, 0, &err);
	} else {
		sd = sqrt((double)nx * (double)ny / 12 *
			  ((double)(n + 1) - ties / ((double)n * (double)(n - 1))));
		z = sd > 0 ? (mean - lo - 0.5) / sd : 0;
		r->p = z > 0 ? 2 * normal_sf(z) : 1;
		z = sd > 0 ? (mean - 0.5) / sd : 0;
		r->p_min = z > 0 ? 2 * normal_sf(z) : 1;
	}
	if (r->p > 1)
		r->p = 1;
	if (r->p_min > 1)
		r->p_min = 1;
	return err;
}
