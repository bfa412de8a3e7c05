/*
 * Newton-Schulz's host reference against values computed outside muonbench:
 * tests/test_ns.c checks the device against mb_ns_reference, and both read
 * mb_ns.h's coefficients, so a wrong coefficient there would pass it. The
 * figures below come from a separate float64 implementation (Python, from
 * the definition: X = G / (|G|_F + 1e-7); five times A = X Xᵀ,
 * X = a X + (b A + c A A) X on the wide orientation; the scale
 * sqrt(max(1, rows/cols))) with DeepSpeed's (a, b, c) = (3.4445, -4.7750,
 * 2.0315) as decimals. mb_ns.h's float constants differ from those by
 * under 1e-7 of each; the results by under 1e-7. A coefficient off by 1e-4
 * moves some element by more than 4e-5.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "mb_ns_cl.h"

#define TOLERANCE 1e-6

/* Exact in fp32. */
static const float wide[2 * 3] = { 0.5f, -1.25f, 2.0f, 1.5f, 0.75f, -0.25f };

static const double wide_out[2 * 3] = {
	0.21416742825054969, -0.580160097502858,  0.918810722552871,
	0.6185497501612081,  0.32418871737276533, -0.12380529487709198,
};

/* Its transpose, 3 x 2: the same, transposed and scaled by sqrt(3/2). */
static const double tall_out[3 * 2] = {
	0.2623004593689868,  0.7575656342104883, -0.7105481040026695,
	0.39704846896531165, 1.1253087202262289, -0.15162989995184176,
};

static void check(const float *in, uint64_t rows, uint64_t cols, const double *want)
{
	double out[6];
	uint64_t i;
	int m;

	for (m = 0; m < MB_NS_NMETHODS; m++) {
		assert_int_equal(mb_ns_reference(in, rows, cols, (enum mb_ns_method)m, out), 0);
		for (i = 0; i < rows * cols; i++)
			if (!(fabs(out[i] - want[i]) <= TOLERANCE))
				fail_msg("%s, %llux%llu, element %llu: %.12f, want %.12f",
					 mb_ns_method_names[m], (unsigned long long)rows,
					 (unsigned long long)cols, (unsigned long long)i, out[i],
					 want[i]);
	}
}

static void wide_matrix(void **state)
{
	(void)state;
	check(wide, 2, 3, wide_out);
}

static void tall_matrix(void **state)
{
	float tall[3 * 2];
	int i, j;

	(void)state;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			tall[j * 2 + i] = wide[i * 3 + j];
	check(tall, 3, 2, tall_out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wide_matrix),
		cmocka_unit_test(tall_matrix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
