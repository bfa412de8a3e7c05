/*
 * Mann-Whitney U against values worked by hand and from the standard tables;
 * the spread of a sample (median, ends, coefficient of variation).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mb_stats.h"

static void assert_close(double got, double want, double rel)
{
	if (!(fabs(got - want) <= rel * fabs(want)))
		fail_msg("got %.6g, want %.6g", got, want);
}

static void spread(void **state)
{
	double odd[] = { 4, 1, 3 }, even[] = { 10, 2, 6, 2 }, one[] = { 7 };
	struct mb_spread s;

	(void)state;
	s = mb_spread_of(odd, 3);
	assert_true(s.median == 3 && s.min == 1 && s.max == 4);
	/* mean 8/3; deviations 4/3, -5/3, 1/3: variance (16 + 25 + 1) / 9 / 2 = 7/3 */
	assert_close(s.mean, 8.0 / 3, 1e-12);
	assert_close(s.cv, sqrt(7.0 / 3) / (8.0 / 3), 1e-12);
	s = mb_spread_of(even, 4);
	assert_true(s.median == 4 && s.min == 2 && s.max == 10);
	/* mean 5; deviations 5, -3, 1, -3: variance 44 / 3 */
	assert_close(s.cv, sqrt(44.0 / 3) / 5, 1e-12);
	s = mb_spread_of(one, 1);
	assert_true(s.median == 7 && s.cv == 0);
	s = mb_spread_of(one, 0);
	assert_true(isnan(s.median) && isnan(s.cv));
}

static void exact_small_samples(void **state)
{
	double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	double c[] = { 1, 2, 3, 4, 5 }, d[] = { 6, 7, 8, 9, 10 };
	double e[] = { 1, 4, 5 }, f[] = { 2, 3, 6 };
	struct mb_mwu r;

	(void)state;
	/* fully separated 3 vs 3: U = 0, p = 2 / C(6,3) = 0.1, the smallest there is */
	assert_int_equal(mb_mann_whitney(a, 3, b, 3, &r), 0);
	assert_true(r.u == 0 && r.exact);
	assert_close(r.p, 0.1, 1e-12);
	assert_close(r.p_min, 0.1, 1e-12);
	/* the other way round: U = 9, same p */
	assert_int_equal(mb_mann_whitney(b, 3, a, 3, &r), 0);
	assert_true(r.u == 9);
	assert_close(r.p, 0.1, 1e-12);
	/* 5 vs 5 separated: p = 2 / C(10,5) = 2 / 252 */
	assert_int_equal(mb_mann_whitney(c, 5, d, 5, &r), 0);
	assert_close(r.p, 2.0 / 252, 1e-12);
	/* 1,4,5 vs 2,3,6: x beats y in (4,2) (4,3) (5,2) (5,3): U = 4;
	 * P(U <= 4) = 10/20 for n = 3, 3 (table), two-sided p = 1 */
	assert_int_equal(mb_mann_whitney(e, 3, f, 3, &r), 0);
	assert_true(r.u == 4);
	assert_close(r.p, 1.0, 1e-12);
}

/*
 * 8 vs 8: x = 1..5, 8.5, 14.5, 16 against y = 8..15. By hand, U = 1 (8.5
 * beats 8) + 7 (14.5 beats 8..14) + 8 (16 beats all) = 16 of 64. Enumerating
 * all C(16, 8) = 12870 splits, 1350 have a U at least that far from 32:
 * p = 0.104895.
 */
static void exact_against_enumeration(void **state)
{
	double x[8] = { 1, 2, 3, 4, 5, 8.5, 14.5, 16 }, y[8] = { 8, 9, 10, 11, 12, 13, 14, 15 };
	struct mb_mwu r;

	(void)state;
	assert_int_equal(mb_mann_whitney(x, 8, y, 8, &r), 0);
	assert_true(r.exact && r.u == 16);
	assert_close(r.p, 1350.0 / 12870, 1e-9);
	/* the smallest p of 8 vs 8: 2 / C(16, 8) */
	assert_close(r.p_min, 2.0 / 12870, 1e-9);
}

static void normal_approximation(void **state)
{
	double x[25], y[25], t[4] = { 1, 1, 2, 2 }, s[4] = { 1, 2, 2, 3 };
	struct mb_mwu r;
	int i;

	(void)state;
	for (i = 0; i < 25; i++) {
		x[i] = i + 1;
		y[i] = i + 26;
	}
	/* 625 pairs is within the exact range; the exact p is 2 / C(50,25) */
	assert_int_equal(mb_mann_whitney(x, 25, y, 25, &r), 0);
	assert_true(r.exact && r.u == 0);
	assert_close(r.p, 2 / 126410606437752.0, 1e-6);
	/* ties force the normal approximation. U = 1 (the two 1s tie one 1: 0.5
	 * each) + 4 (each 2 beats a 1 and ties two 2s) = 5 of 16, mean 8; ties
	 * 1 x3, 2 x4 give T = 24 + 60 = 84, sd = sqrt(16/12 (9 - 84/56)) = sqrt(10),
	 * z = (8 - 5 - 0.5) / sqrt(10) = 0.7906, p = 2 (1 - Phi(z)) = 0.42920 */
	assert_int_equal(mb_mann_whitney(t, 4, s, 4, &r), 0);
	assert_false(r.exact);
	assert_true(r.u == 5);
	assert_close(r.p, 0.42920, 1e-4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spread),
		cmocka_unit_test(exact_small_samples),
		cmocka_unit_test(exact_against_enumeration),
		cmocka_unit_test(normal_approximation),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
