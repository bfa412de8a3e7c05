/*
 * One schedule, two engines: the operations the OpenCL engine performs on
 * this machine's device (PoCL in CI) in a step of the tiny model, and the
 * ones the model engine performs when predict replays that step, are the
 * same sequence (kind, bytes, queue, the events waited on and made), for
 * every stage and variant and the settings that change the schedule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_config.h"
#include "mb_err.h"
#include "mb_predict.h"
#include "mb_profile.h"
#include "mb_step.h"

#include "device.h"

static struct mb_model tiny;
static struct mb_profile prof;

static int setup(void **state)
{
	if (open_device(state))
		return -1;
	if (mb_config_load_builtin(&tiny, "tiny", 2) || mb_profile_load(&prof, "reference")) {
		fprintf(stderr, "setup: %s\n", mb_errmsg());
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	mb_model_release(&tiny);
	return close_device(state);
}

static struct mb_step_settings settings(unsigned stage, enum mb_variant v)
{
	struct mb_step_settings s = {
		.plan = { .stage = stage,
			  .gather_budget_bytes = 4 << 20, /* several batches */
			  .sub_group_size = 300000,	  /* several sub-groups */
			  .reduce_bucket_elems = 200000,  /* several buckets */
			  .world_size = 1 },
		.variant = v,
		.pin_memory = true,
		.seed = 7,
		.optim = MB_OPTIM_DEFAULTS,
		.race_check = true, /* both engines race-checked as they run */
	};
	return s;
}

static void describe(const struct mb_engine_op *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s queue %d amount %llu waits %zu made %zu", o->op, o->detail,
		 o->queue, (unsigned long long)o->amount, o->waits, o->made);
}

/*
 * The second step of SET on the device (a step after the first, as
 * predict models) against predict's, operation by operation; and the
 * apply's own buffers at their most, counted on each engine, against the
 * plan's. Returns how many operations there were.
 */
static size_t same_operations(const struct mb_step_settings *set, const char *what)
{
	struct mb_engine_op *real, *model;
	struct mb_predict_trace tr;
	uint64_t real_bytes, plan_bytes;
	struct mb_step_times t;
	struct mb_ledger ledger;
	struct mb_state st;
	struct mb_plan plan;
	size_t nreal, nmodel, i;
	char a[160], b[160];

	mb_ledger_init(&ledger, &cl, 0);
	if (mb_state_init(&st, &tiny, set, &cl, &ledger))
		fail_msg("%s: %s", what, mb_errmsg());
	assert_int_equal(mb_step(&st, &t), 0);
	mb_engine_log_start(st.engine);
	assert_int_equal(mb_step(&st, &t), 0);
	assert_int_equal(mb_engine_log_take(st.engine, &real, &nreal), 0);
	real_bytes = mb_engine_peak_bytes(st.engine);
	mb_state_release(&st);
	mb_ledger_release(&ledger);

	assert_int_equal(mb_plan_build(&plan, &tiny, &set->plan), 0);
	assert_int_equal(mb_predict_trace(&tiny, &plan, set, &prof, &tr), 0);
	model = tr.ops;
	nmodel = tr.nops;
	plan_bytes = mb_plan_peak_step_bytes(&plan, mb_variant_alive(set->variant)) -
		     plan.resident_bytes - plan.ds_buffer_bytes - plan.ns_workspace_bytes;
	mb_plan_release(&plan);
	if (real_bytes != tr.step_bytes || real_bytes != plan_bytes)
		fail_msg("%s: the apply's buffers at most: %llu bytes on OpenCL, %llu on the "
			 "model, %llu in the plan",
			 what, (unsigned long long)real_bytes, (unsigned long long)tr.step_bytes,
			 (unsigned long long)plan_bytes);

	for (i = 0; i < nreal && i < nmodel; i++) {
		describe(&real[i], a, sizeof(a));
		describe(&model[i], b, sizeof(b));
		if (strcmp(a, b))
			fail_msg("%s: operation %zu of %zu: OpenCL '%s', model '%s'", what, i + 1,
				 nreal, a, b);
	}
	if (nreal != nmodel)
		fail_msg("%s: %zu operations on OpenCL, %zu on the model", what, nreal, nmodel);
	free(real);
	free(model);
	return nreal;
}

static void every_stage_and_variant(void **state)
{
	unsigned stage;
	int v;
	char what[64];

	(void)state;
	for (stage = 1; stage <= 3; stage++)
		for (v = 0; v < MB_NVARIANTS; v++) {
			struct mb_step_settings s = settings(stage, (enum mb_variant)v);

			snprintf(what, sizeof(what), "stage %u %s", stage, mb_variants[v].name);
			/* a step of tiny has hundreds of operations: not an empty log */
			assert_true(same_operations(&s, what) > 100);
		}
}

/* The settings that change what is enqueued where, each on the stages it changes. */
static void settings_that_change_the_schedule(void **state)
{
	struct mb_step_settings s;
	unsigned stage;

	(void)state;
	for (stage = 2; stage <= 3; stage++) {
		s = settings(stage, MB_PIPELINE);
		s.knob[MB_KNOB_WRITEBACK_DEP] = MB_WRITEBACK_EVENT;
		same_operations(&s, "the writeback waits on an event");
		s = settings(stage, MB_BOTH);
		s.fwd_bwd = true;
		s.tokens = s.plan.tokens = 256;
		same_operations(&s, "with the forward/backward");
		s = settings(stage, MB_OVERLAP);
		s.plan.momentum_dtype = MB_MOM_BF16;
		s.plan.params_back = MB_BACK_PAGEABLE;
		same_operations(&s, "bf16 momentum, params back pageable");
	}
	s = settings(3, MB_PIPELINE);
	s.plan.zero3_apply = MB_Z3_BATCHED;
	same_operations(&s, "ZeRO-3 batched");
	for (stage = 2; stage <= 3; stage++) { /* a rank of 4: its collectives, not replayed */
		s = settings(stage, MB_BOTH);
		s.ranks = 4;
		same_operations(&s, "a rank of 4");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_stage_and_variant),
		cmocka_unit_test(settings_that_change_the_schedule),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
