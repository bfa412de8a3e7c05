/*
 * The race checker (mb_race, kept by mb_engine): today's schedule passes it
 * in every cell of the grid on the model engine and in a cut of it on the
 * OpenCL engine (PoCL in CI); each ordering bug planted in the schedule
 * (enum mb_plant) is reported, on both engines, with both operations named;
 * and the checker's own rules hold on a few operations made by hand.
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
#include "mb_race.h"
#include "mb_step.h"

#include "device.h"

static struct mb_model tiny, qwen;
static struct mb_profile prof;

static int setup(void **state)
{
	if (open_device(state))
		return -1;
	if (mb_config_load_builtin(&tiny, "tiny", 2) ||
	    mb_config_load_builtin(&qwen, "qwen3-4b", 3) || mb_profile_load(&prof, "reference")) {
		fprintf(stderr, "setup: %s\n", mb_errmsg());
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	mb_model_release(&tiny);
	mb_model_release(&qwen);
	return close_device(state);
}

/* Settings with several buckets, batches and sub-groups of tiny (2 layers). */
static struct mb_step_settings settings(unsigned stage, enum mb_variant v)
{
	struct mb_step_settings s = {
		.plan = { .stage = stage,
			  .gather_budget_bytes = 4 << 20,
			  .sub_group_size = 300000,
			  .reduce_bucket_elems = 200000,
			  .world_size = 1 },
		.variant = v,
		.pin_memory = true,
		.seed = 7,
		.optim = MB_OPTIM_DEFAULTS,
		.race_check = true,
	};
	return s;
}

/* SET predicted on model M, race-checked: 0, or the error with the checker's message. */
static int predict(const struct mb_model *m, const struct mb_step_settings *set)
{
	struct mb_step_times t;
	struct mb_plan plan;
	int err;

	if ((err = mb_plan_build(&plan, m, &set->plan)))
		return err;
	err = mb_predict_step(m, &plan, set, &prof, &t);
	mb_plan_release(&plan);
	return err;
}

/* Two steps of SET on the device (tiny), race-checked, then the checksum. */
static int run(const struct mb_step_settings *set)
{
	struct mb_step_times t;
	struct mb_ledger ledger;
	struct mb_state st;
	uint64_t sum;
	int err;

	mb_ledger_init(&ledger, &cl, 0);
	if (!(err = mb_state_init(&st, &tiny, set, &cl, &ledger))) {
		if (!(err = mb_step(&st, &t)) && !(err = mb_step(&st, &t)))
			err = mb_state_checksum(&st, &sum);
		mb_state_release(&st);
	}
	mb_ledger_release(&ledger);
	return err;
}

static void must_pass(int err, const char *what)
{
	if (err)
		fail_msg("%s: %s", what, mb_errmsg());
}

/* Every setting that changes what the schedule enqueues where, on the model engine. */
static void the_grid_on_the_model(void **state)
{
	const struct mb_model *models[] = { &tiny, &qwen };
	unsigned stage, mi, k, cells = 0;
	int v;
	char what[160];

	(void)state;
	for (mi = 0; mi < 2; mi++)
		for (stage = 1; stage <= 3; stage++)
			for (v = 0; v < MB_NVARIANTS; v++)
				for (k = 0; k < 64; k++) {
					struct mb_step_settings s = settings(stage, v);

					s.knob[MB_KNOB_WRITEBACK_DEP] = k & 1 ? MB_WRITEBACK_EVENT
									      : MB_WRITEBACK_HOST;
					s.plan.params_back = k & 2 ? MB_BACK_PAGEABLE
								   : MB_BACK_PINNED;
					s.plan.momentum_dtype = k & 4 ? MB_MOM_BF16 : MB_MOM_FP32;
					s.plan.zero3_apply = k & 8 ? MB_Z3_BATCHED : MB_Z3_SUBGROUP;
					s.fwd_bwd = k & 16;
					s.tokens = s.plan.tokens = s.fwd_bwd ? 256 : 0;
					s.pin_memory = !(k & 32);
					if (stage != 3 && (k & 8))
						continue; /* the same cell as without */
					if (mi == 1) { /* Qwen3-4B's 3 layers: defaults, and a rank
							  of 8 */
						s.plan.gather_budget_bytes = 256 << 20;
						s.plan.sub_group_size = 100000000;
						s.plan.reduce_bucket_elems = 50000000;
						s.ranks = k & 1 ? 8 : 1;
					}
					snprintf(what, sizeof(what), "%s stage %u %s, settings %u",
						 models[mi]->name, stage, mb_variants[v].name, k);
					must_pass(predict(models[mi], &s), what);
					cells++;
				}
	assert_true(cells > 500);
}

/* A cut of the grid on the OpenCL engine (this machine's device). */
static void a_cut_on_the_device(void **state)
{
	unsigned stage;
	int v;
	char what[96];

	(void)state;
	for (stage = 2; stage <= 3; stage++)
		for (v = 0; v < MB_NVARIANTS; v++) {
			struct mb_step_settings s = settings(stage, v);

			snprintf(what, sizeof(what), "stage %u %s", stage, mb_variants[v].name);
			must_pass(run(&s), what);
		}
	for (stage = 2; stage <= 3; stage++) {
		struct mb_step_settings s = settings(stage, MB_PIPELINE);

		s.knob[MB_KNOB_WRITEBACK_DEP] = MB_WRITEBACK_EVENT;
		s.plan.momentum_dtype = MB_MOM_BF16;
		s.plan.params_back = MB_BACK_PAGEABLE;
		must_pass(run(&s), "event writeback, bf16 momentum, params back pageable");
		s = settings(stage, MB_BOTH);
		s.fwd_bwd = true;
		s.tokens = s.plan.tokens = 128;
		must_pass(run(&s), "with the forward/backward");
	}
}

/* Where each plant shows: its settings, and what the report must name. */
static const struct plant {
	enum mb_plant plant;
	unsigned stage;
	enum mb_variant variant;
	bool writeback_event;
	const char *buffer, *first, *then; /* in the report, in this order */
} plants[] = {
	{ MB_PLANT_WRITEBACK_NO_AFTER, 2, MB_OVERLAP, true, "apply.batch", "on the compute queue",
	  "copy d2h grads on the copy queue" },
	{ MB_PLANT_BUCKET_NO_AFTER, 3, MB_MASTER, false, "bwd.grad_fp32",
	  "work widen on the copy queue", "work grads on the compute queue" },
	{ MB_PLANT_EARLY_EVENT, 2, MB_BOTH, false, "apply.batch",
	  "copy d2h grads on the copy queue", "handed back to the pool on the host" },
	{ MB_PLANT_GATHER_WRONG_QUEUE, 2, MB_MASTER, false, "apply.batch",
	  "copy h2d grads on the copy queue", "work momentum on the compute queue" },
	{ MB_PLANT_FREE_BEFORE_WAIT, 2, MB_OVERLAP, false, "apply.batch",
	  "copy d2h grads on the copy queue", "handed back to the pool on the host" },
	{ MB_PLANT_WAIT_AFTER_COPIES, 2, MB_BOTH, false, "apply.batch", "on the compute queue",
	  "copy d2h grads on the copy queue" },
	{ MB_PLANT_PARAMS_EARLY, 2, MB_MASTER, false, "host staging",
	  "copy h2d staging on the compute queue", "host optimizer on the host" },
	{ MB_PLANT_NO_ARRIVAL, 2, MB_PIPELINE, false, "apply.batch",
	  "copy h2d grads on the prefetch queue", "work momentum on the compute queue" },
	{ MB_PLANT_SUMS_EARLY, 3, MB_MASTER, false, "bwd.norm", "work sumsq on the copy queue",
	  "blocking read on the compute queue" },
	{ MB_PLANT_NO_FLUSH, 2, MB_OVERLAP, true, "", "the copy queue waits for event",
	  "of the compute queue, which was never flushed" },
};

static void expect_named(int err, const struct plant *p, const char *engine)
{
	const char *msg = mb_errmsg(), *a, *b, *c;

	if (!err)
		fail_msg("plant %d on %s: not reported", (int)p->plant, engine);
	a = p->buffer[0] ? strstr(msg, "race on '") : msg;
	b = a ? strstr(a, p->first) : NULL;
	c = b ? strstr(b + strlen(p->first), p->then) : NULL;
	if (!a || !strstr(msg, p->buffer) || !b || !c)
		fail_msg("plant %d on %s: the report '%s' does not name '%s' on '%s', then '%s'",
			 (int)p->plant, engine, msg, p->first, p->buffer, p->then);
}

/* Each planted bug is reported, naming both operations, on both engines. */
static void every_plant_is_named(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(plants) / sizeof(plants[0]); i++) {
		const struct plant *p = &plants[i];
		struct mb_step_settings s = settings(p->stage, p->variant);

		s.knob[MB_KNOB_WRITEBACK_DEP] = p->writeback_event ? MB_WRITEBACK_EVENT
								   : MB_WRITEBACK_HOST;
		s.plan.zero3_apply = MB_Z3_BATCHED;
		/* the same settings pass without the plant */
		must_pass(predict(&tiny, &s), "without the plant");
		s.plant = p->plant;
		expect_named(predict(&tiny, &s), p, "the model");
		expect_named(run(&s), p, "OpenCL");
		/* and without the checker, the plant goes by unreported */
		s.race_check = false;
		must_pass(predict(&tiny, &s), "the plant unchecked");
	}
}

/* A checker with a write of bytes 0-100 of BUF on the compute queue, as event 1. */
static struct mb_race *written(const void *buf)
{
	const struct mb_race_op op = { "write", NULL, NULL };
	struct mb_race *r;

	assert_int_equal(mb_race_new(&r), 0);
	mb_race_name(r, buf, "buf");
	assert_int_equal(mb_race_begin(r, 0, &op), 0);
	assert_int_equal(mb_race_access(r, buf, 0, 100, true), 0);
	assert_int_equal(mb_race_event(r, 1), 0);
	return r;
}

/* The checker's rules, on operations made by hand (queue 0 compute, 1 copy). */
static void rules_by_hand(void **state)
{
	const struct mb_race_op op = { "op", NULL, NULL };
	static char buf;
	struct mb_race *r;

	(void)state;
	/* a read of the same bytes on the copy queue, unordered: a race, named */
	r = written(&buf);
	assert_int_equal(mb_race_begin(r, 1, &op), 0);
	assert_int_equal(mb_race_access(r, &buf, 100, 100, false), 0); /* other bytes */
	assert_int_not_equal(mb_race_access(r, &buf, 50, 100, false), 0);
	assert_non_null(strstr(mb_errmsg(), "race on 'buf': write on the compute queue writes "
					    "bytes 0-100, then op on the copy queue reads bytes "
					    "50-150"));
	mb_race_free(r);

	/* the copy queue waits for the write's event, never flushed: refused */
	r = written(&buf);
	assert_int_not_equal(mb_race_wait(r, 1, 1), 0);
	assert_non_null(strstr(mb_errmsg(), "the copy queue waits for event 1 of the compute "
					    "queue, which was never flushed"));
	mb_race_free(r);

	/* flushed, the wait orders them; then a write on the compute queue, which has
	 * not seen the copy queue's read, races */
	r = written(&buf);
	mb_race_flush(r, 0);
	assert_int_equal(mb_race_wait(r, 1, 1), 0);
	assert_int_equal(mb_race_begin(r, 1, &op), 0);
	assert_int_equal(mb_race_access(r, &buf, 0, 100, false), 0);
	assert_int_equal(mb_race_begin(r, 0, &op), 0);
	assert_int_not_equal(mb_race_access(r, &buf, 0, 10, true), 0);
	mb_race_free(r);

	/* the host finishes the copy queue: the compute queue's next command is after */
	r = written(&buf);
	mb_race_flush(r, 0);
	assert_int_equal(mb_race_wait(r, 1, 1), 0);
	assert_int_equal(mb_race_begin(r, 1, &op), 0);
	assert_int_equal(mb_race_access(r, &buf, 0, 100, false), 0);
	mb_race_finish(r, 1);
	assert_int_equal(mb_race_begin(r, 0, &op), 0);
	assert_int_equal(mb_race_access(r, &buf, 0, 10, true), 0);
	/* the host hands the buffer back while the compute queue may still write: a race */
	assert_int_not_equal(mb_race_release(r, &buf, &op), 0);
	assert_true(mb_race_checked(r) >= 4);
	mb_race_free(r);

	/* the host waits for the event, then hands it back: ordered */
	r = written(&buf);
	assert_int_equal(mb_race_wait(r, MB_RACE_HOST, 1), 0);
	assert_int_equal(mb_race_release(r, &buf, &op), 0);
	mb_race_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rules_by_hand),
		cmocka_unit_test(the_grid_on_the_model),
		cmocka_unit_test(every_plant_is_named),
		cmocka_unit_test(a_cut_on_the_device),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
