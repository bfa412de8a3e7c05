/*
 * mb_advise: the DeepSpeed change each point needs, the measured order
 * against the predicted, and a sweep on the reference profile: the
 * baseline leads each list, pinned memory off drops the pinning variants,
 * the ranking's ties go to the cheaper in memory, a device limit drops what
 * does not fit with its figures.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mb_advise.h"
#include "mb_config.h"
#include "mb_err.h"

static void needs(void **state)
{
	struct mb_step_settings s = { .plan = { .stage = 2 }, .pin_memory = true };

	(void)state;
	s.variant = MB_MASTER;
	assert_string_equal(mb_advise_needs(&s), "DeepSpeed master");
	s.variant = MB_PIN;
	assert_string_equal(mb_advise_needs(&s), "the pin change");
	s.variant = MB_OVERLAP;
	assert_string_equal(mb_advise_needs(&s), "the overlap change");
	s.variant = MB_BOTH;
	assert_string_equal(mb_advise_needs(&s), "the reference change (pin and overlap)");
	assert_false(mb_advise_beyond(&s));
	s.plan.stage = 3;
	s.plan.zero3_apply = MB_Z3_BATCHED;
	assert_true(mb_advise_beyond(&s));
	s.variant = MB_PIPELINE;
	assert_true(strstr(mb_advise_needs(&s), "beyond the reference") != NULL);
}

static void order(void **state)
{
	double pred[] = { 1.0, 2.0, 3.0 }, ok[] = { 1.1, 2.5, 2.6 }, bad[] = { 2.0, 1.5, 3.0 };
	double tie[] = { 1.0, 1.001, 2.0 }, swapped[] = { 1.2, 1.1, 2.5 };

	(void)state;
	assert_true(mb_advise_order_agrees(pred, ok, 3));
	assert_false(mb_advise_order_agrees(pred, bad, 3));
	/* predictions within the tie: either measured order agrees */
	assert_true(mb_advise_order_agrees(tie, swapped, 3));
}

struct fixture {
	struct mb_model m;
	struct mb_profile p;
	struct mb_step_settings base;
	struct mb_advise_space sp;
};

static void fixture(struct fixture *f, unsigned stage)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(mb_config_load_builtin(&f->m, "qwen3-4b", 0), 0);
	assert_int_equal(mb_profile_load(&f->p, "reference"), 0);
	f->base.plan.stage = stage;
	f->base.plan.momentum_dtype = mb_momentum_dtype_default(stage);
	f->base.plan.params_back = mb_params_back_default(stage);
	f->base.plan.gather_budget_bytes = 512ull << 20;
	f->base.plan.sub_group_size = 1000000000;
	f->base.plan.world_size = 1;
	f->base.plan.tokens = 2048;
	f->base.variant = MB_MASTER;
	f->base.pin_memory = true;
	f->base.fwd_bwd = true;
	f->base.tokens = 2048;
	f->base.grad_clip = 1.0;
	f->sp.variants[f->sp.nvariants++] = MB_MASTER;
	f->sp.variants[f->sp.nvariants++] = MB_PIN;
	f->sp.variants[f->sp.nvariants++] = MB_OVERLAP;
	f->sp.variants[f->sp.nvariants++] = MB_BOTH;
	f->sp.pin_memory[f->sp.npin++] = true;
	f->sp.pin_memory[f->sp.npin++] = false;
	f->sp.gather_budgets[f->sp.ngather_budgets++] = 512ull << 20;
	f->sp.sub_group_sizes[f->sp.nsub_group_sizes++] = 250000000;
	f->sp.applies[f->sp.napplies++] = MB_Z3_SUBGROUP;
}

/* ZeRO-3 on the reference: both, at 2.5e8 (a tie with 1e9, whose step peak is larger). */
static void zero3_reference(void **state)
{
	struct mb_advise_memory mem = { 0 };
	struct fixture f;
	struct mb_advise a;
	size_t i;

	(void)state;
	fixture(&f, 3);
	assert_int_equal(mb_advise_sweep(&a, &f.m, &f.base, &f.sp, &f.p, &mem), 0);
	/* 4 variants at 2 sub-groups pinned, master and overlap at 2 unpinned */
	assert_int_equal(a.npoints + a.nsame, 12);
	assert_int_equal(a.nkept, a.npoints);
	assert_int_equal(a.points[0].set.variant, MB_BOTH);
	assert_true(a.points[0].set.pin_memory);
	assert_int_equal(a.points[0].set.plan.sub_group_size, 250000000);
	assert_true(a.points[0].peak_step_bytes < a.base.peak_step_bytes);
	for (i = 0; i < a.npoints; i++)
		assert_false(!a.points[i].set.pin_memory &&
			     mb_variant_pins(a.points[i].set.variant));
	assert_true(a.points[0].t.iter_s < a.base.t.iter_s);
	mb_advise_release(&a);
	mb_model_release(&f.m);
}

/* A device of 15 GiB: the 1e9 sub-group's 16.4 GiB step is dropped, with its figures. */
static void limit_drops(void **state)
{
	struct mb_fit_device d = { .name = "limit",
				   .max_alloc_bytes = UINT64_MAX,
				   .device_alloc_limit = UINT64_MAX };
	struct mb_advise_memory mem = { .device = &d };
	struct fixture f;
	struct mb_advise a;
	size_t i;

	(void)state;
	fixture(&f, 3);
	d.global_mem_bytes = d.limit_bytes = 15ull << 30;
	assert_int_equal(mb_advise_sweep(&a, &f.m, &f.base, &f.sp, &f.p, &mem), 0);
	assert_int_equal(a.base.drop, MB_ADVISE_NO_FIT);
	assert_non_null(
		strstr(a.base.reason,
		       "the device peak (step phase, CLBlast's temporaries aside) is 16.4 GiB"));
	assert_true(a.nkept > 0 && a.nkept < a.npoints);
	for (i = 0; i < a.nkept; i++)
		assert_int_equal(a.points[i].set.plan.sub_group_size, 250000000);
	for (; i < a.npoints; i++)
		assert_int_equal(a.points[i].drop, MB_ADVISE_NO_FIT);
	mb_advise_release(&a);
	mb_model_release(&f.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(needs),
		cmocka_unit_test(order),
		cmocka_unit_test(zero3_reference),
		cmocka_unit_test(limit_drops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
