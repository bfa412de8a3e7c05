/*
 * compare's verdicts on made-up runs: the baseline's first row with its
 * measured samples replaced, one run a file (so no noise floor), and the
 * verdict of a change that is large but not significant, against one that
 * is both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_compare.h"
#include "mb_csv.h"
#include "mb_err.h"
#include "mb_results.h"

#define NSTEPS 5

static const struct mb_compare_settings settings = {
	.alpha = 0.01,
	.threshold_pct = 5,
	.phase_floor_pct = 5,
	.noise_factor = 4,
	.estimate = MB_ESTIMATE_MEDIAN,
};

/* The baseline's first row as one run of NSTEPS measured steps taking STEP_S each. */
static void one_run(struct mb_csv_row *row, const struct mb_csv_row *from, const double *step_s)
{
	size_t i;

	memcpy(row, from, sizeof(*row));
	snprintf(row->status, sizeof(row->status), "ok");
	row->run = row->runs = 1;
	row->steps = row->nsamples = row->measure_last = NSTEPS;
	row->measure_first = 1;
	for (i = 0; i < NSTEPS; i++)
		row->iter_samples_s[i] = row->apply_samples_s[i] = step_s[i];
}

/* The verdict of the only cell of NEW (steps NEW_S) against BASE (steps BASE_S). */
static enum mb_verdict verdict(const double *base_s, const double *new_s, struct mb_timing *iter)
{
	struct mb_csv_row *from = NULL, *rows = calloc(2, sizeof(*rows));
	struct mb_table *tb = NULL, *tn = NULL;
	size_t nfrom = 0, nb = 0, nn = 0, n = 0;
	struct mb_compared *c = NULL;
	enum mb_verdict v;

	assert_non_null(rows);
	assert_int_equal(mb_csv_read("results/baseline-tiny.csv", &from, &nfrom), 0);
	one_run(&rows[0], &from[0], base_s);
	one_run(&rows[1], &from[0], new_s);
	assert_int_equal(mb_results_add(&tb, &nb, &rows[0]), 0);
	assert_int_equal(mb_results_add(&tn, &nn, &rows[1]), 0);
	mb_results_finish(tb, nb);
	mb_results_finish(tn, nn);
	assert_int_equal(mb_compare(tb, nb, tn, nn, &settings, &c, &n), 0);
	assert_int_equal(n, 1);
	assert_non_null(c[0].base);
	assert_non_null(c[0].new_);
	assert_string_equal(c[0].changed, "");
	*iter = c[0].timing[0];
	v = c[0].verdict;
	free(c);
	mb_results_release(tb, nb);
	mb_results_release(tn, nn);
	free(from);
	free(rows);
	return v;
}

/*
 * The median step three times slower, but the two runs' steps interleave:
 * not significant, so "ok" however large the change (no floor: one run).
 */
static void large_but_not_significant_is_same(void **state)
{
	const double base_s[NSTEPS] = { 1.0, 1.1, 1.2, 5.0, 5.1 };
	const double new_s[NSTEPS] = { 1.05, 3.5, 3.6, 3.7, 5.2 };
	struct mb_timing t;

	(void)state;
	assert_int_equal(verdict(base_s, new_s, &t), MB_SAME);
	assert_true(t.testable);
	assert_false(t.significant);
	assert_true(t.test.p > 0.3);
	assert_true(t.change_pct > 190);
	assert_true(t.noise_floor_pct == 0);
	assert_int_equal(t.verdict, MB_SAME);
}

/* The same change with the steps apart: significant, a regression. */
static void large_and_significant_is_a_regression(void **state)
{
	const double base_s[NSTEPS] = { 1.0, 1.1, 1.2, 1.3, 1.4 };
	const double new_s[NSTEPS] = { 3.4, 3.5, 3.6, 3.7, 3.8 };
	struct mb_timing t;

	(void)state;
	assert_int_equal(verdict(base_s, new_s, &t), MB_REGRESSION);
	assert_true(t.significant);
	assert_int_equal(t.verdict, MB_REGRESSION);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(large_but_not_significant_is_same),
		cmocka_unit_test(large_and_significant_is_a_regression),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
