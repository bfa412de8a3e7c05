/*
 * The offload step on the default device (PoCL in CI), on a micro model:
 * one step computes what Muon and AdamW compute on the host; every stage and
 * variant ends in the same state, bit for bit; the step-phase peak of the
 * ledger is the plan's; a checkpoint reload changes nothing but the pinning.
 */
#include <math.h>
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
#include "mb_hostopt.h"
#include "mb_rng.h"
#include "mb_run.h"

#include "device.h"

static struct mb_model micro;

/* mb_step.c's scale of the initial parameters */
#define PARAM_SCALE_OF_TEST 0.02f

/* bf16 to fp32, exactly. */
static float from_bf16(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float x;

	memcpy(&x, &bits, sizeof(x));
	return x;
}

/* Gradient I of step 0 under seed 5: stream 1 of the seed, by flat index, in bf16. */
static float grad0(uint64_t i)
{
	return from_bf16(mb_bf16(1e-3f * mb_uniform(5, 1, i)));
}

static int setup(void **state)
{
	if (mb_config_load_file(&micro, "tests/data/good/micro.json", 0)) {
		fprintf(stderr, "setup: %s\n", mb_errmsg());
		return -1;
	}
	return open_device(state);
}

static int teardown(void **state)
{
	mb_model_release(&micro);
	return close_device(state);
}

static struct mb_run_settings settings(unsigned stage, enum mb_variant v)
{
	struct mb_run_settings s = {
		.step = { .plan = { .stage = stage,
				    .gather_budget_bytes = 128 << 10, /* several batches */
				    .sub_group_size = 20000,	      /* several sub-groups */
				    .world_size = 1 },
			  .variant = v,
			  .pin_memory = true,
			  .seed = 5,
			  .optim = MB_OPTIM_DEFAULTS },
		.steps = 3,
		.measure_first = 2,
		.measure_last = 3,
	};
	return s;
}

/*
 * Parameter I of ST moved from P0 (the initial master params) by Muon's
 * update of U (its Nesterov input): Newton-Schulz by the method the step
 * ran, worked in float64 on the host, to float precision.
 */
static void assert_muon_update(const struct mb_state *st, size_t i, const float *u, const float *p0)
{
	const struct mb_optim o = MB_OPTIM_DEFAULTS;
	const struct mb_param *p = &micro.params[i];
	uint64_t off = st->offset[i], n = mb_param_numel(p), k;
	double *ns = malloc(8 * n), diff = 0, norm = 0;

	assert_non_null(ns);
	assert_int_equal(mb_ns_reference(u, p->rows, p->cols, st->ns.method, ns), 0);
	for (k = 0; k < n; k++) {
		double want = p0[off + k] - (double)o.muon_lr * ns[k];
		double d = ((float *)st->master.ptr)[off + k] - want;

		diff += d * d;
		norm += (double)o.muon_lr * ns[k] * o.muon_lr * ns[k];
	}
	if (!(sqrt(diff / norm) < 1e-4))
		fail_msg("'%s': update off by %g", p->name, sqrt(diff / norm));
	free(ns);
}

/* One step of stage 2 against Muon and AdamW worked on the host. */
static void one_step_is_muon_and_adamw(void **state)
{
	struct mb_run_settings s = settings(2, MB_BOTH);
	const struct mb_optim o = MB_OPTIM_DEFAULTS;
	struct mb_step_times t;
	struct mb_ledger ledger;
	struct mb_state st;
	size_t i;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_state_init(&st, &micro, &s.step, &cl, &ledger), 0);
	float *p0 = malloc(4 * micro.numel_total);
	memcpy(p0, st.master.ptr, 4 * micro.numel_total);
	assert_int_equal(mb_step(&st, &t), 0);
	for (i = 0; i < micro.nparams; i++) {
		const struct mb_param *p = &micro.params[i];
		uint64_t off = st.offset[i], n = mb_param_numel(p), k;
		float *u = malloc(4 * n);

		/* the gradient of step 0 (grad0) */
		for (k = 0; k < n; k++) {
			float g = grad0(off + k);
			float m = (1.0f - o.muon_beta) * g; /* from a zero momentum */

			u[k] = (1.0f - o.muon_beta) * g + o.muon_beta * m;
		}
		if (p->muon) {
			/* by the method the step ran, right to float precision */
			assert_muon_update(&st, i, u, p0);
			/* and the momentum went back to its place */
			assert_true(((float *)st.momentum.ptr)[st.state_offset[i]] ==
				    (1.0f - o.muon_beta) * grad0(off));
		} else {
			/* AdamW's first step: m^ = g, v^ = g^2, p -= lr g / (|g| + eps) */
			for (k = 0; k < n; k++) {
				float g = grad0(off + k);
				double want = p0[off + k] - o.adam_lr * g / (fabs(g) + o.adam_eps);
				float got = ((float *)st.master.ptr)[off + k];

				if (!(fabs(got - want) < 1e-8))
					fail_msg("'%s'[%llu]: %.9g, want %.9g", p->name,
						 (unsigned long long)k, got, want);
			}
		}
		free(u);
	}
	free(p0);
	mb_state_release(&st);
	assert_int_equal(ledger.current_bytes, 0);
	mb_ledger_release(&ledger);
}

static void every_stage_and_variant_agree(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	uint64_t checksum = 0;
	unsigned stage, v;

	(void)state;
	/* stage 4 here: 3 with --zero3-apply batched (a budget of several batches
	 * a sub-group, each a 10 B an element) */
	for (stage = 1; stage <= 4; stage++)
		for (v = 0; v < MB_NVARIANTS; v++) {
			struct mb_run_settings s =
				settings(stage < 4 ? stage : 3, (enum mb_variant)v);

			if (stage == 4) {
				s.step.plan.zero3_apply = MB_Z3_BATCHED;
				s.step.plan.gather_budget_bytes = 160 << 10;
			}
			if (mb_run_once(&micro, &s, &cl, NULL, r))
				fail_msg("stage %u %s: %s", stage, mb_variant_name(v), mb_errmsg());
			if (!checksum)
				checksum = r->checksum;
			if (r->checksum != checksum)
				fail_msg("stage %u %s: checksum %llx, want %llx", stage,
					 mb_variant_name(v), (unsigned long long)r->checksum,
					 (unsigned long long)checksum);
			/* the ledger's step peak is the plan's, CLBlast's temporaries aside */
			assert_int_equal(r->peak_step_bytes - r->clblast_temp_bytes,
					 r->plan_peak_step_bytes);
			assert_int_equal(r->own_peak_step_bytes, r->plan_peak_step_bytes);
			assert_int_equal(r->momentum_pinned, mb_variant_pins((enum mb_variant)v));
			assert_int_equal(r->steps_done, 3);
			assert_true(r->iter_mean_s > 0 && r->apply_mean_s > 0);
			assert_true(r->apply_mean_s <= r->iter_mean_s);
			assert_true(r->phase.ns_s > 0 && r->phase.d2h_s > 0 && r->phase.h2d_s > 0);
			if (!mb_variant_overlaps((enum mb_variant)v))
				assert_true(r->phase.d2h_hidden_s < 0.05 * r->phase.d2h_s);
		}
	free(r);
}

/*
 * The momentum in bf16 (ZeRO-3's default): fp32 math, the momentum stored
 * rounded to nearest even, the Nesterov update from the stored value; the
 * update is then right to float precision, and every variant agrees.
 */
static void bf16_momentum(void **state)
{
	struct mb_run_settings s = settings(3, MB_BOTH);
	struct mb_run_result *r = malloc(sizeof(*r));
	const struct mb_optim o = MB_OPTIM_DEFAULTS;
	struct mb_step_times t;
	struct mb_ledger ledger;
	struct mb_state st;
	uint64_t fp32_sum, bf16_sum = 0;
	unsigned stage;
	size_t i;
	int v;

	(void)state;
	s.step.plan.momentum_dtype = MB_MOM_BF16;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_state_init(&st, &micro, &s.step, &cl, &ledger), 0);
	assert_int_equal(st.momentum.bytes, 2 * micro.numel_muon);
	float *p0 = malloc(4 * micro.numel_total);
	memcpy(p0, st.master.ptr, 4 * micro.numel_total);
	assert_int_equal(mb_step(&st, &t), 0);
	for (i = 0; i < micro.nparams; i++) {
		const struct mb_param *p = &micro.params[i];
		uint64_t off = st.offset[i], n = mb_param_numel(p), k;
		const uint16_t *mom;
		float *u;

		if (!p->muon)
			continue;
		mom = mb_hostbuf_at(&st.momentum, 2 * st.state_offset[i], NULL);
		u = malloc(4 * n);
		for (k = 0; k < n; k++) {
			float g = grad0(off + k);
			uint16_t h = mb_bf16((1.0f - o.muon_beta) * g); /* from a zero momentum */

			assert_int_equal(mom[k], h);
			u[k] = (1.0f - o.muon_beta) * g + o.muon_beta * from_bf16(h);
		}
		assert_muon_update(&st, i, u, p0);
		free(u);
	}
	free(p0);
	mb_state_release(&st);
	mb_ledger_release(&ledger);

	/* every stage and variant with bf16 ends in one state, not fp32's */
	s = settings(2, MB_MASTER);
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	fp32_sum = r->checksum;
	for (stage = 1; stage <= 3; stage++)
		for (v = 0; v < MB_NVARIANTS; v++) {
			s = settings(stage, (enum mb_variant)v);
			s.step.plan.momentum_dtype = MB_MOM_BF16;
			assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
			if (!bf16_sum)
				bf16_sum = r->checksum;
			assert_true(r->checksum == bf16_sum);
			assert_int_equal(r->own_peak_step_bytes, r->plan_peak_step_bytes);
			/* half the momentum's pinned bytes (and ZeRO-3's bf16 grads) */
			if (mb_variant_pins((enum mb_variant)v))
				assert_int_equal(r->pinned_host_bytes,
						 4 * micro.numel_total + 2 * micro.numel_total +
							 2 * micro.numel_muon +
							 (stage == 3 ? 2 * micro.numel_total : 0));
		}
	assert_true(bf16_sum != fp32_sum);
	free(r);
}

/* Set every byte of B to C. */
static void poison(struct mb_hostbuf *b, int c)
{
	uint64_t off, run;

	for (off = 0; off < b->bytes; off += run) {
		void *at = mb_hostbuf_at(b, off, &run); /* run is set here, before the memset */

		memset(at, c, run);
	}
}

/*
 * ZeRO-3's first step reads no momentum from the host (DeepSpeed creates it
 * as zeros on the device); ZeRO-1/2's does, and so does ZeRO-3's second.
 */
static void first_zero3_step_reads_no_momentum(void **state)
{
	struct mb_step_times t;
	struct mb_ledger ledger;
	struct mb_state st;
	uint64_t clean, sum;
	unsigned stage, step;

	(void)state;
	for (stage = 2; stage <= 3; stage++)
		for (step = 1; step <= 2; step++) {
			struct mb_run_settings s = settings(stage, MB_BOTH);

			mb_ledger_init(&ledger, &cl, 0);
			assert_int_equal(mb_state_init(&st, &micro, &s.step, &cl, &ledger), 0);
			if (step == 2)
				assert_int_equal(mb_step(&st, &t), 0);
			assert_int_equal(mb_step(&st, &t), 0);
			assert_int_equal(mb_state_checksum(&st, &clean), 0);
			mb_state_release(&st);
			mb_ledger_release(&ledger);

			mb_ledger_init(&ledger, &cl, 0);
			assert_int_equal(mb_state_init(&st, &micro, &s.step, &cl, &ledger), 0);
			if (step == 2)
				assert_int_equal(mb_step(&st, &t), 0);
			poison(&st.momentum, 0x3f); /* 0.747 as fp32, 0.746 as bf16 */
			assert_int_equal(mb_step(&st, &t), 0);
			assert_int_equal(mb_state_checksum(&st, &sum), 0);
			if (stage == 3 && step == 1)
				assert_true(sum == clean);
			else
				assert_true(sum != clean);
			mb_state_release(&st);
			mb_ledger_release(&ledger);
		}
}

/* The apply order changes the batches, not the math: the same state either way. */
static void param_order_changes_nothing_but_the_batches(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	unsigned stage;

	(void)state;
	for (stage = 2; stage <= 3; stage++) {
		struct mb_run_settings s = settings(stage, MB_BOTH);
		uint64_t want;

		assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
		want = r->checksum;
		s.step.plan.order = MB_ORDER_MODEL;
		assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
		assert_true(r->checksum == want);
		assert_int_equal(r->own_peak_step_bytes, r->plan_peak_step_bytes);
		/* and the batches did differ: the first applied matrix is another */
		{
			struct mb_plan a, b;

			s.step.plan.order = MB_ORDER_SHAPE;
			assert_int_equal(mb_plan_build(&a, &micro, &s.step.plan), 0);
			s.step.plan.order = MB_ORDER_MODEL;
			assert_int_equal(mb_plan_build(&b, &micro, &s.step.plan), 0);
			assert_true(a.order[0] != b.order[0]);
			mb_plan_release(&a);
			mb_plan_release(&b);
		}
	}
	free(r);
}

/*
 * DeepSpeed's unscale_and_clip_grads: the norm of the step's gradients
 * (taken on the device in the backward) against --grad-clip; the whole fp32
 * grad buffer, the Muon updates in it included, scaled by 1 / max(1, (norm +
 * 1e-6) / clip) before the host step.
 */
static void grads_clipped_as_deepspeed_does(void **state)
{
	struct mb_run_settings s = settings(2, MB_MASTER);
	struct mb_step_times t[2];
	struct mb_ledger ledger[2];
	struct mb_state st[2];
	double want = 0, scale;
	uint64_t k;
	size_t i, j;

	(void)state;
	/* the gradients of step 0 */
	for (k = 0; k < micro.numel_total; k++) {
		double g = grad0(k);

		want += g * g;
	}
	want = sqrt(want);
	for (j = 0; j < 2; j++) {
		s.step.grad_clip = j ? 0.1 : 0; /* micro's norm is about 0.21 */
		mb_ledger_init(&ledger[j], &cl, 0);
		assert_int_equal(mb_state_init(&st[j], &micro, &s.step, &cl, &ledger[j]), 0);
		assert_int_equal(mb_step(&st[j], &t[j]), 0);
		assert_true(fabs(t[j].grad_norm - want) < 1e-5 * want);
	}
	assert_true(t[0].grad_scale == 1.0);
	scale = 0.1 / (want + 1e-6);
	assert_true(fabs(t[1].grad_scale - scale) < 1e-5 * scale);
	/* the Muon parameters moved by the update, scaled */
	for (i = 0; i < micro.nparams; i++) {
		const struct mb_param *p = &micro.params[i];
		uint64_t off = st[0].offset[i];
		double p0 = PARAM_SCALE_OF_TEST * mb_uniform(s.step.seed, 0, off);
		double d0 = ((float *)st[0].master.ptr)[off] - p0,
		       d1 = ((float *)st[1].master.ptr)[off] - p0;

		if (p->muon && fabs(d0) > 1e-7)
			assert_true(fabs(d1 - t[1].grad_scale * d0) < 1e-3 * fabs(d0));
	}
	for (j = 0; j < 2; j++) {
		mb_state_release(&st[j]);
		mb_ledger_release(&ledger[j]);
	}
}

/*
 * ZeRO-3's params back as DeepSpeed's copy_: a host cast into pageable
 * memory, then the H2D; the same bf16 params, so the same state, and the
 * staging is no longer pinned.
 */
static void params_back_pageable(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(3, MB_BOTH);
	uint64_t want, pinned;

	(void)state;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	want = r->checksum;
	pinned = r->pinned_host_bytes;
	s.step.plan.params_back = MB_BACK_PAGEABLE;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum == want);
	assert_int_equal(pinned - r->pinned_host_bytes, 2 * micro.numel_total);
	assert_true(r->phase.params_h2d_s > 0 && r->phase.host_opt_s > 0);
	free(r);
}

/*
 * The backward's bucket is --reduce-bucket-size elements of bf16 and its
 * largest piece (a parameter's grads in fp32) at most a bucket: the peak
 * follows.
 */
static void reduce_bucket_sets_the_backward_peak(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(2, MB_BOTH);
	uint64_t whole, want;

	(void)state;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0); /* 5e8: all of micro */
	whole = r->own_peak_backward_bytes;
	want = r->checksum;
	s.step.plan.reduce_bucket_elems = 1000;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	/* the bf16 bucket shrinks, and the fp32 piece from the embedding's 16384 elements to
	 * 1000; each of the 132 buckets has a norm's 64 partial sums */
	assert_int_equal(whole - r->own_peak_backward_bytes,
			 2 * (micro.numel_total - 1000) + 4 * (16384 - 1000) - 4 * 64 * (132 - 1));
	assert_true(r->checksum == want); /* the same gradients, in more pieces */
	free(r);
}

/*
 * ZeRO-3 reduces each bucket on the copy queue as soon as the backward's
 * GEMMs have made its grads (DeepSpeed's overlap_comm), but for those the
 * last GEMMs make, ZeRO-1/2 after the GEMMs: with buckets small enough to
 * fall between layers, every stage and variant ends where the step without
 * a forward/backward does, and the backward's peak is the plan's (ZeRO-3:
 * the pieces of the buckets reduced during the GEMMs alive with their
 * buffers).
 */
static void buckets_reduced_during_the_backward(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	uint64_t want = 0;
	unsigned stage, v;

	(void)state;
	for (stage = 2; stage <= 3; stage++)
		for (v = 0; v < MB_NVARIANTS; v++) {
			struct mb_run_settings s = settings(stage, (enum mb_variant)v);
			struct mb_plan p;

			s.step.plan.reduce_bucket_elems = 10000;
			if (!want) {
				assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
				want = r->checksum;
			}
			s.step.fwd_bwd = true;
			s.step.tokens = s.step.plan.tokens = 48;
			if (mb_run_once(&micro, &s, &cl, NULL, r))
				fail_msg("stage %u %s: %s", stage, mb_variant_name(v), mb_errmsg());
			if (r->checksum != want)
				fail_msg("stage %u %s: checksum %llx, want %llx", stage,
					 mb_variant_name(v), (unsigned long long)r->checksum,
					 (unsigned long long)want);
			assert_int_equal(mb_plan_build(&p, &micro, &s.step.plan), 0);
			assert_true(mb_plan_nbuckets(&p, &micro) > micro.layers);
			/* ZeRO-3: those of the first layer and the embedding after the GEMMs */
			if (stage == 3) {
				uint64_t after = mb_plan_reduced_after(&p, &micro, true);

				assert_true(after > 0 && after < mb_plan_nbuckets(&p, &micro));
			}
			assert_int_equal(r->own_peak_backward_bytes, p.peak_backward_bytes);
			mb_plan_release(&p);
		}
	free(r);
}

static void knobs_do_not_change_the_math(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(2, MB_BOTH);
	uint64_t want;

	(void)state;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	want = r->checksum;
	s.step.knob[MB_KNOB_WRITEBACK_DEP] = MB_WRITEBACK_EVENT;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum == want);
	s.step.pin_memory = false;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum == want);
	assert_int_equal(r->pinned_host_bytes, 0);
	assert_false(r->momentum_pinned);
	/* the synthetic forward/backward adds phases, not results */
	s.step.fwd_bwd = true;
	s.step.tokens = 48;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum == want);
	assert_true(r->peak_forward_bytes > 0 && r->phase.forward_s > 0);
	/* the plan predicts the forward's and the backward's peaks too */
	{
		struct mb_plan p;

		s.step.plan.tokens = 48;
		assert_int_equal(mb_plan_build(&p, &micro, &s.step.plan), 0);
		assert_int_equal(r->own_peak_forward_bytes, p.peak_forward_bytes);
		assert_int_equal(r->own_peak_backward_bytes, p.peak_backward_bytes);
		mb_plan_release(&p);
	}
	assert_int_equal(r->peak_step_bytes - r->clblast_temp_bytes, r->plan_peak_step_bytes);
	assert_int_equal(r->own_peak_step_bytes, r->plan_peak_step_bytes);
	/* CLBlast's temporaries (Newton-Schulz's at least) count in the peak, not the own peak */
	assert_true(r->peak_forward_bytes - r->own_peak_forward_bytes >= r->clblast_temp_bytes);
	/* a different seed is a different run */
	s.step.seed = 6;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum != want);
	free(r);
}

static void reload_changes_nothing_but_the_pin(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(3, MB_PIN);
	uint64_t want;

	(void)state;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	want = r->checksum;
	s.resume_at = 1;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum == want);
	assert_true(r->momentum_pinned); /* re-pinned at its next use */
	s.step.variant = MB_OVERLAP;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	assert_true(r->checksum == want);
	assert_false(r->momentum_pinned);
	free(r);
}

/* Pinned buffers cut into many chunks (one per parameter here) end in the same state. */
static void pinned_chunks_change_nothing(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	unsigned stage;
	int v;

	(void)state;
	for (stage = 2; stage <= 3; stage++)
		for (v = MB_PIN; v <= MB_BOTH; v += MB_BOTH - MB_PIN) {
			struct mb_run_settings s = settings(stage, (enum mb_variant)v);
			struct mb_ledger ledger;
			struct mb_state st;
			uint64_t want, pinned;

			assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
			want = r->checksum;
			pinned = r->pinned_host_bytes;
			s.step.plan.pin_chunk_bytes = 4096;
			s.resume_at = 1; /* and re-pinned, in the same chunks, after a reload */
			assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
			assert_true(r->checksum == want);
			assert_int_equal(r->pinned_host_bytes, pinned);
			assert_true(r->momentum_pinned);

			/* the chunks are the plan's: every matrix (16 KiB or more) in one of
			 * its own, the small norms packed together */
			mb_ledger_init(&ledger, &cl, 0);
			assert_int_equal(mb_state_init(&st, &micro, &s.step, &cl, &ledger), 0);
			assert_int_equal(st.momentum.nchunks, micro.nparams_muon);
			assert_int_equal(st.grads.nchunks,
					 mb_plan_host_cuts(&st.plan, &micro, MB_HOST_GRADS, 4096,
							   NULL));
			assert_true(st.grads.nchunks > micro.nparams_muon);
			assert_true(st.grads.nchunks < micro.nparams);
			assert_int_equal(st.staging.nchunks,
					 mb_plan_host_cuts(&st.plan, &micro, MB_HOST_STAGING, 4096,
							   NULL));
			assert_int_equal(st.master.nchunks, 1); /* pageable: one piece */
			mb_state_release(&st);
			mb_ledger_release(&ledger);
		}
	free(r);
}

/*
 * Every device buffer a step needs comes from the pool made before the
 * first step: no step allocates or releases anything on the device, and the
 * peaks are still the plan's. The buckets are smaller than a layer, so that
 * ZeRO-3 reduces some during the GEMMs and the rest after them, each part
 * with buffers of its own.
 */
static void steps_allocate_nothing(void **state)
{
	unsigned stage;
	int v;

	(void)state;
	for (stage = 1; stage <= 3; stage++)
		for (v = 0; v < MB_NVARIANTS; v++) {
			struct mb_run_settings s = settings(stage, (enum mb_variant)v);
			uint64_t allocs, releases;
			struct mb_step_times t;
			struct mb_ledger ledger;
			struct mb_state st;
			unsigned i;

			s.step.fwd_bwd = true;
			s.step.tokens = 48;
			s.step.plan.reduce_bucket_elems = 10000;
			mb_ledger_init(&ledger, &cl, 0);
			assert_int_equal(mb_state_init(&st, &micro, &s.step, &cl, &ledger), 0);
			allocs = ledger.device_allocs;
			releases = ledger.device_releases;
			assert_true(allocs > 0 && ledger.npool > 0);
			for (i = 1; i <= 3; i++) {
				assert_int_equal(mb_step(&st, &t), 0);
				assert_int_equal(ledger.device_allocs, allocs);
				assert_int_equal(ledger.device_releases, releases);
			}
			/* the books are logical: the step's peak is the plan's, not the pool's */
			assert_int_equal(mb_ledger_phase_own_peak(&ledger, "step"),
					 mb_plan_peak_step_bytes(&st.plan,
								 mb_variant_alive(s.step.variant)));
			assert_true(ledger.pool_bytes >= 8 * st.plan.groups[0].gathered_numel);
			mb_state_release(&st);
			mb_ledger_release(&ledger);
		}
}

/*
 * pipeline: the next batch's gather on the prefetch queue, its compute
 * waiting on the host or (--writeback-dep event) on an event list; the same
 * state as master's, and three batches alive at the peak, the plan's.
 * Under ZeRO-3 by sub-group nothing is prefetched: the peak is both's.
 */
static void pipeline_prefetches_the_next_batch(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_plan plan;
	uint64_t want;
	unsigned stage, event;

	(void)state;
	for (stage = 2; stage <= 4; stage++) {
		struct mb_run_settings s = settings(stage < 4 ? stage : 3, MB_MASTER);

		if (stage == 4) {
			s.step.plan.zero3_apply = MB_Z3_BATCHED;
			s.step.plan.gather_budget_bytes = 160 << 10;
		}
		assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
		want = r->checksum;
		s.step.variant = MB_PIPELINE;
		for (event = 0; event <= 1; event++) {
			s.step.knob[MB_KNOB_WRITEBACK_DEP] = event ? MB_WRITEBACK_EVENT
								   : MB_WRITEBACK_HOST;
			if (mb_run_once(&micro, &s, &cl, NULL, r))
				fail_msg("stage %u event %u: %s", stage, event, mb_errmsg());
			assert_true(r->checksum == want);
			assert_int_equal(r->own_peak_step_bytes, r->plan_peak_step_bytes);
			assert_true(r->momentum_pinned);
		}
		assert_int_equal(mb_plan_build(&plan, &micro, &s.step.plan), 0);
		assert_true(plan.ngroups >= 3);
		assert_int_equal(r->plan_peak_step_bytes, plan.peak_step_bytes_pipeline);
		if (stage == 3)
			assert_int_equal(plan.peak_step_bytes_pipeline,
					 plan.peak_step_bytes_overlap);
		else
			assert_true(plan.peak_step_bytes_pipeline > plan.peak_step_bytes_overlap);
		mb_plan_release(&plan);
	}
	free(r);
}

/* A step buffer over the device's largest allocation is refused before any step. */
static void too_large_a_buffer_is_refused_up_front(void **state)
{
	struct mb_run_settings s = settings(2, MB_BOTH);
	struct mb_cl small = cl;
	struct mb_ledger ledger;
	struct mb_state st;

	(void)state;
	s.step.plan.gather_budget_bytes = 1u << 20; /* one batch: all of micro's Muon, 786 KiB */
	small.info.max_alloc_bytes = 300u << 10;    /* the bf16 params (262 KB) fit */
	mb_ledger_init(&ledger, &small, 0);
	assert_int_equal(mb_state_init(&st, &micro, &s.step, &small, &ledger), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "device buffer 'apply.batch'"));
	assert_non_null(strstr(mb_errmsg(), "a smaller --gather-budget needs less"));
	mb_ledger_release(&ledger);
}

/*
 * On queues without profiling every event's time is refused: the phases
 * timed by events are NaN (n/a) and say why, never 0; the host clock's
 * figures and the math are untouched.
 */
static void untimed_phases_are_nan(void **state)
{
	struct mb_cl_select sel = { .platform = -1 };
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(3, MB_BOTH);
	struct mb_cl plain;
	uint64_t want;
	int err;

	(void)state;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	want = r->checksum;
	assert_string_equal(r->timing_error, "");
	assert_true(r->phase.ns_s > 0 && !isnan(r->phase.d2h_hidden_s));
	assert_int_equal(setenv("MUONBENCH_PROFILING", "off", 1), 0);
	err = mb_cl_open(&plain, &sel);
	unsetenv("MUONBENCH_PROFILING");
	assert_int_equal(err, 0);
	assert_int_equal(mb_run_once(&micro, &s, &plain, NULL, r), 0);
	assert_true(isnan(r->phase.h2d_s) && isnan(r->phase.momentum_s) && isnan(r->phase.ns_s) &&
		    isnan(r->phase.d2h_s) && isnan(r->phase.d2h_hidden_s) &&
		    isnan(r->phase.params_h2d_s) && isnan(r->h2d_gbs));
	assert_non_null(strstr(r->timing_error, "CL_PROFILING_INFO_NOT_AVAILABLE"));
	assert_true(r->iter_mean_s > 0 && r->apply_mean_s > 0 && r->phase.host_opt_s > 0);
	assert_true(r->checksum == want);
	mb_cl_release(&plain);
	free(r);
}

static void stop_flag_and_bad_measure(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(2, MB_MASTER);
	volatile sig_atomic_t stop = 1;

	(void)state;
	assert_int_equal(mb_run_once(&micro, &s, &cl, &stop, r), 0);
	assert_true(r->interrupted);
	assert_int_equal(r->steps_done, 0);
	s.measure_last = 4;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), -MB_EINPUT);
	free(r);
}

static void memory_limit_fails_cleanly(void **state)
{
	struct mb_run_result *r = malloc(sizeof(*r));
	struct mb_run_settings s = settings(2, MB_BOTH);

	(void)state;
	/* room for the params and the backward (in small buckets), not for one batch of
	 * everything */
	s.step.plan.gather_budget_bytes = 512 << 20;
	s.step.plan.reduce_bucket_elems = 16384;
	s.device_mem_limit = 1 << 20;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "step 1: batch 1 of 1 (14 matrices, 768 KiB; a "
					    "smaller --gather-budget needs less): clCreateBuffer "
					    "failed on '"));
	assert_non_null(strstr(mb_errmsg(), "CL_MEM_OBJECT_ALLOCATION_FAILURE"));
	assert_true(r->peak_bytes <= 1 << 20);
	/* the same run fits with smaller batches */
	s.step.plan.gather_budget_bytes = 128 << 10;
	assert_int_equal(mb_run_once(&micro, &s, &cl, NULL, r), 0);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_step_is_muon_and_adamw),
		cmocka_unit_test(every_stage_and_variant_agree),
		cmocka_unit_test(knobs_do_not_change_the_math),
		cmocka_unit_test(buckets_reduced_during_the_backward),
		cmocka_unit_test(bf16_momentum),
		cmocka_unit_test(first_zero3_step_reads_no_momentum),
		cmocka_unit_test(reduce_bucket_sets_the_backward_peak),
		cmocka_unit_test(grads_clipped_as_deepspeed_does),
		cmocka_unit_test(params_back_pageable),
		cmocka_unit_test(param_order_changes_nothing_but_the_batches),
		cmocka_unit_test(reload_changes_nothing_but_the_pin),
		cmocka_unit_test(pinned_chunks_change_nothing),
		cmocka_unit_test(steps_allocate_nothing),
		cmocka_unit_test(pipeline_prefetches_the_next_batch),
		cmocka_unit_test(too_large_a_buffer_is_refused_up_front),
		cmocka_unit_test(untimed_phases_are_nan),
		cmocka_unit_test(stop_flag_and_bad_measure),
		cmocka_unit_test(memory_limit_fails_cleanly),
	};

	return cmocka_run_group_tests_name("run", tests, setup, teardown);
}
