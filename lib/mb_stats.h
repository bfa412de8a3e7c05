/*
 * mb_stats: a sample's median and spread, and the two-sided Mann-Whitney U
 * test, for telling a slowdown from noise without assuming normal timings.
 *
 * Exact p-values for small samples without ties (the distribution of U
 * counted by recursion); above that, or with ties, the normal approximation
 * with the tie correction and a continuity correction.
 */
#ifndef MB_STATS_H
#define MB_STATS_H

#include <stddef.h>

/* The middle, the ends and the scatter of a sample. */
struct mb_spread {
	double median, min, max;
	double mean, cv; /* cv: the standard deviation (n - 1) over the mean; 0 for one */
};

/* The spread of the N SAMPLES (sorted in place); NaN for none. */
struct mb_spread mb_spread_of(double *samples, size_t n);

struct mb_mwu {
	double u;     /* U of the first sample: pairs (x, y) with x > y, ties counting 1/2 */
	double p;     /* two-sided */
	double p_min; /* the smallest p these sample sizes can give */
	int exact;    /* 1 when p is exact */
};

/*
 * Test X (NX values) against Y (NY values), both at least 1, into *r.
 * Returns 0, or -MB_EFAIL when out of host memory.
 */
int mb_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, struct mb_mwu *r);

#endif
