/*
 * The model of the step (mb_predict) against schedules worked out by hand,
 * the device profile's reader and writer (mb_profile), and the shipped
 * reference profile against the reference change's own tables.
 *
 * The hand-worked model: two Muon matrices of 1000 x 1000 (1e6 elements,
 * 4e6 bytes in fp32) and nothing else; a gather budget of 8e6 bytes, so
 * that each ZeRO-2 batch is one matrix; no forward/backward. The profile's
 * rates make every piece a round number of seconds: a 4e6-byte pinned copy
 * 1 s either way, a pageable one 2 s, the fp32 momentum kernel (16 bytes an
 * element) 1 s, Newton-Schulz (30 GFLOP on a square 1000 x 1000) 3 s.
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
#include "mb_csv.h"
#include "mb_err.h"
#include "mb_ns.h"
#include "mb_plan.h"
#include "mb_predict.h"
#include "mb_profile.h"

static const char two_matrices[] = "{\"parameters\": ["
				   "{\"name\": \"a.weight\", \"shape\": [1000, 1000]},"
				   "{\"name\": \"b.weight\", \"shape\": [1000, 1000]}]}";

static struct mb_profile hand_profile(void)
{
	struct mb_profile p = {
		.name = "hand",
		.device = "worked by hand",
		.h2d_pinned_gbs = 0.004,
		.d2h_pinned_gbs = 0.004,
		.both_pinned_gbs = 1, /* no contention */
		.h2d_pageable_gbs = 0.002,
		.d2h_pageable_gbs = 0.002,
		.both_pageable_gbs = 1,
		.ns_gram_gflops = { 1, { 1 }, { 10 } }, /* one rate at every size */
		.ns_standard_gflops = { 1, { 1 }, { 10 } },
		.momentum_gbs = 0.016,
		.norm_gbs = 0.016, /* the norm reads the bf16 grads, 2 bytes an element: 2e6 in 0.25
				      s */
		.fill_gbs = 0.016,
		.cast_gbs = 0.016,
		.fwd_bwd_gflops = 1,
		.host_opt_gbs = 0.028, /* 14 bytes x 2e6: 1 s */
		.memcpy_gbs = 0.016,   /* the clipping pass, 8 bytes x 2e6: 1 s */
	};
	return p;
}

/* ZeRO-3's apply in predict(): DeepSpeed's sub-groups, or batched (a test sets it). */
static enum mb_zero3_apply zero3_apply = MB_Z3_SUBGROUP;

/* The ranks whose collectives predict()'s step joins (a test sets it). */
static unsigned ranks = 1;

/* Predict VARIANT at STAGE for the two matrices under profile P. */
static struct mb_step_times predict(unsigned stage, enum mb_variant variant, bool event,
				    const struct mb_profile *p)
{
	struct mb_step_settings set = {
		.plan = { .stage = stage,
			  /* a matrix a batch: 8 bytes an element, 10 batched under ZeRO-3 */
			  .gather_budget_bytes = stage == 3 ? 10000000 : 8000000,
			  .zero3_apply = zero3_apply,
			  .sub_group_size = 2000000,
			  .world_size = 1,
			  .momentum_dtype = mb_momentum_dtype_default(stage),
			  .params_back = mb_params_back_default(stage),
			  .ns_method = MB_NS_GRAM },
		.variant = variant,
		.pin_memory = true,
		.knob[MB_KNOB_WRITEBACK_DEP] = event ? MB_WRITEBACK_EVENT : MB_WRITEBACK_HOST,
		.ranks = ranks,
	};
	struct mb_step_times t;
	struct mb_model m;
	struct mb_plan plan;

	assert_int_equal(mb_config_parse(&m, two_matrices, strlen(two_matrices), "two", 0), 0);
	assert_int_equal(mb_plan_build(&plan, &m, &set.plan), 0);
	assert_int_equal(plan.ngroups, stage == 3 && zero3_apply == MB_Z3_SUBGROUP ? 1 : 2);
	assert_int_equal(mb_predict_step(&m, &plan, &set, p, &t), 0);
	mb_plan_release(&plan);
	mb_model_release(&m);
	return t;
}

#define assert_secs(x, want) assert_true(fabs((x) - (want)) < 1e-9)

/*
 * The backward, one bucket of 2e6 elements (a matrix at a time): the fill
 * 0.5 s, the rounding to bf16 and the widening back (6 bytes an element
 * each) 0.75 s each, the norm from the bf16 bucket 0.25 s, the fp32 D2H of
 * 8e6 bytes 2 s (ZeRO-3: the bf16 grads to the host and back too, 4e6 bytes
 * each way, 1 s each), and a pageable read of the 64 partial sums.
 */
static double backward_s(unsigned stage)
{
	return 0.5 + 0.75 + 0.75 + 0.25 + 2 + (stage == 3 ? 2 : 0) + 4.0 * MB_NS_PARTIALS / 2e6;
}

/* The backward, the host optimizer 2 s (1 s and the clipping's 1 s), params back 1 s. */
static double outside_apply_zero2(void)
{
	return backward_s(2) + 2 + 1;
}

/*
 * Synchronous writeback, each batch in turn: H2D grads 1, momentum (pageable
 * for master) 2, momentum kernel 1, Newton-Schulz 3, D2H update 1 and
 * momentum 2: 10 s a batch; pin: 8 s.
 */
static void sync_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.apply_s, 20);
	assert_secs(t.iter_s, 20 + outside_apply_zero2());
	assert_secs(t.phase.h2d_s, 6);
	assert_secs(t.phase.momentum_s, 2);
	assert_secs(t.phase.ns_s, 6);
	assert_secs(t.phase.d2h_s, 6);
	assert_secs(t.phase.d2h_hidden_s, 0);
	assert_secs(t.phase.host_opt_s, 2);
	assert_secs(t.phase.params_h2d_s, 1);
	assert_secs(t.phase.backward_s, backward_s(2));
	assert_secs(t.phase.forward_s, 0);

	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.apply_s, 16);
	assert_secs(t.phase.h2d_s, 4);
	assert_secs(t.phase.d2h_s, 4);
}

/*
 * Overlapped, both: batch 0 computes 0-6 (H2D 0-2, kernel 2-3, NS 3-6) and
 * batch 1 6-12; batch 0's writeback waits on the host for its compute and
 * runs 6-8 on the copy queue, hidden behind batch 1; batch 1's 12-14, after
 * the last compute: 14 s. Overlap alone: the momentum pageable, batch 0
 * 0-7, batch 1 7-14, writebacks 7-10 (hidden) and 14-17: 17 s.
 */
static void overlap_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	t = predict(2, MB_BOTH, false, &p);
	assert_secs(t.apply_s, 14);
	assert_secs(t.phase.d2h_s, 4);
	assert_secs(t.phase.d2h_hidden_s, 2);
	t = predict(2, MB_OVERLAP, false, &p);
	assert_secs(t.apply_s, 17);
	assert_secs(t.phase.d2h_hidden_s, 3);
	/* an event wait list instead of the host's wait: the same timeline here */
	t = predict(2, MB_BOTH, true, &p);
	assert_secs(t.apply_s, 14);
	assert_secs(t.phase.d2h_hidden_s, 2);
}

/*
 * pipeline: both batches' gathers on the prefetch queue from the start
 * (0-2, 2-4); batch 0 computes 2-6, batch 1 6-10 (its gather hidden), the
 * writebacks 6-8 and 10-12: 12 s against both's 14, with the host's waits
 * or an event list alike. ZeRO-3 by sub-group prefetches nothing: both's.
 */
static void pipeline_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t, both;

	(void)state;
	t = predict(2, MB_PIPELINE, false, &p);
	assert_secs(t.apply_s, 12);
	assert_secs(t.phase.h2d_s, 4);
	assert_secs(t.phase.d2h_hidden_s, 2);
	t = predict(2, MB_PIPELINE, true, &p);
	assert_secs(t.apply_s, 12);
	t = predict(3, MB_PIPELINE, false, &p);
	both = predict(3, MB_BOTH, false, &p);
	assert_secs(t.apply_s, both.apply_s);
	assert_secs(t.iter_s, both.iter_s);
}

/*
 * Both at once capped at 0.004 GB/s, half the two rates' sum: batch 0's
 * D2H (6-8 alone) and batch 1's H2D share the link, each at half its rate:
 * the grads both ways 6-8, the momentum both ways 8-10; batch 1's kernel
 * 10-11, NS 11-14, its writeback 14-16.
 */
static void shared_link_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.both_pinned_gbs = 0.004;
	t = predict(2, MB_BOTH, false, &p);
	assert_secs(t.apply_s, 16);
	assert_secs(t.phase.h2d_s, 2 + 4);
	assert_secs(t.phase.d2h_s, 4 + 2);
	assert_secs(t.phase.d2h_hidden_s, 4);
}

/*
 * The hidden part of a writeback, where the copies do not line up with the
 * compute's commands: D2H at half the H2D's rate (a 4e6-byte pinned D2H 2 s).
 * Both: batch 0 computes 0-6; batch 1 6-12 (H2D 6-7 and 7-8, kernel 8-9, NS
 * 9-12) while batch 0's update goes back 6-8 and its momentum 8-10: each
 * D2H spans two compute commands, one begun after it, and is hidden whole
 * (2 + 2 s, where charging each command from the D2H's own start would make
 * it 3 + 3); batch 1's writeback 12-16, after the last compute.
 * Then the link held to 0.003 GB/s both ways, shared in proportion to the
 * two rates (H2D 0.002, D2H 0.001): batch 1's grads in 6-8 and its momentum
 * in 8-10 against batch 0's update 6-10, which has the link to itself only
 * from 10; its momentum 10-12 alone, hidden behind the kernel (10-11) and NS
 * (11-14); batch 1's writeback 14-18.
 */
static void overlap_across_commands_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.d2h_pinned_gbs = 0.002;
	t = predict(2, MB_BOTH, false, &p);
	assert_secs(t.apply_s, 16);
	assert_secs(t.phase.h2d_s, 4);
	assert_secs(t.phase.d2h_s, 8);
	assert_secs(t.phase.d2h_hidden_s, 4);
	p.both_pinned_gbs = 0.003;
	t = predict(2, MB_BOTH, false, &p);
	assert_secs(t.apply_s, 18);
	assert_secs(t.phase.h2d_s, 2 + 4);
	assert_secs(t.phase.d2h_s, 4 + 2 + 4);
	assert_secs(t.phase.d2h_hidden_s, 4 + 2);
}

/*
 * Pageable copies that hold the host, overlap alone, Newton-Schulz 1 s.
 * Without the hold: batch 0 0-5 (H2D 0-3, kernel 3-4, NS 4-5), batch 1
 * 5-10, batch 0's writeback 5-8, batch 1's 10-13: 13 s. With it, the host
 * is held in batch 0's momentum H2D until 3, in batch 1's (6-8) until 8;
 * only then does it queue batch 0's writeback: update 8-9, momentum 9-11
 * (held); batch 1's computed at 10, its writeback 11-12 and 12-14: 14 s.
 */
static void pageable_holds_host_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	mb_profile_ladder_set(&p.ns_gram_gflops, 30);
	t = predict(2, MB_OVERLAP, false, &p);
	assert_secs(t.apply_s, 13);
	p.pageable_holds_host = true;
	t = predict(2, MB_OVERLAP, false, &p);
	assert_secs(t.apply_s, 14);
	/* synchronous: the host waits anyway, the hold changes nothing */
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.apply_s, 2 * (1 + 2 + 1 + 1 + 1 + 2));
}

/*
 * ZeRO-3, one sub-group of both matrices, bf16 momentum: the gather (grads
 * 1 + 1, momentum 4e6 bytes pageable 2, momentum kernel 24e6 bytes 1.5, the
 * bf16 cast 12e6 bytes 0.75: 6.25 s), then per matrix NS 3 and writeback
 * (update 1, bf16 momentum pageable 1). Master: 6.25 + 2 x 5 = 16.25 s.
 * Overlap: NS 6.25-9.25 and 9.25-12.25; the first writeback 9.25-11.25,
 * the second 12.25-14.25. The host optimizer adds the cast of params back
 * pageable (12e6 bytes, 0.75 s); params back pageable 2 s.
 */
static void zero3_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;
	double outside = backward_s(3) + 2.75 + 2;

	(void)state;
	t = predict(3, MB_MASTER, false, &p);
	assert_secs(t.apply_s, 16.25);
	assert_secs(t.iter_s, 16.25 + outside);
	assert_secs(t.phase.momentum_s, 2.25);
	assert_secs(t.phase.host_opt_s, 2.75);
	assert_secs(t.phase.params_h2d_s, 2);
	assert_secs(t.phase.backward_s, backward_s(3));
	t = predict(3, MB_OVERLAP, false, &p);
	assert_secs(t.apply_s, 14.25);
	assert_secs(t.phase.d2h_hidden_s, 2);
}

/*
 * ZeRO-3 batched, a matrix a batch: each batch gathers its grads (1 s) and
 * bf16 momentum (1 s), runs the momentum kernel (0.75 s), its bf16 copy of
 * the grads (0.375 s) and Newton-Schulz (3 s): 6.125 s, then writes back 2 s.
 * Master: 2 x 8.125 s. Overlap: batch 1 computes 6.125-12.25 while batch
 * 0's writeback runs 6.125-8.125; batch 1's 12.25-14.25.
 */
static void zero3_batched_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	zero3_apply = MB_Z3_BATCHED;
	t = predict(3, MB_MASTER, false, &p);
	assert_secs(t.apply_s, 16.25);
	assert_secs(t.phase.momentum_s, 2 * (0.75 + 0.375));
	t = predict(3, MB_OVERLAP, false, &p);
	assert_secs(t.apply_s, 14.25);
	assert_secs(t.phase.d2h_hidden_s, 2);
	zero3_apply = MB_Z3_SUBGROUP;
}

static const char two_layers[] = "{\"parameters\": ["
				 "{\"name\": \"w\", \"shape\": [1000, 1000], \"repeat\": 2}]}";

/* The forward/backward of two layers of one 1000 x 1000 matrix, a bucket a layer, under P. */
static struct mb_step_times predict_fwd_bwd_on(unsigned stage, const struct mb_profile *p)
{
	struct mb_step_settings set = {
		.plan = { .stage = stage,
			  .gather_budget_bytes = 10000000,
			  .sub_group_size = 2000000,
			  .reduce_bucket_elems = 1000000,
			  .tokens = 500,
			  .world_size = 1,
			  .momentum_dtype = mb_momentum_dtype_default(stage),
			  .params_back = mb_params_back_default(stage),
			  .ns_method = MB_NS_GRAM },
		.variant = MB_MASTER,
		.pin_memory = true,
		.fwd_bwd = true,
		.tokens = 500,
	};
	struct mb_step_times t;
	struct mb_model m;
	struct mb_plan plan;

	assert_int_equal(mb_config_parse(&m, two_layers, strlen(two_layers), "two", 0), 0);
	assert_int_equal(m.layers, 2);
	assert_int_equal(mb_plan_build(&plan, &m, &set.plan), 0);
	assert_int_equal(mb_plan_nbuckets(&plan, &m), 2);
	assert_int_equal(mb_plan_bucket_stage(&plan, &m, 0), 0);
	assert_int_equal(mb_plan_bucket_stage(&plan, &m, 1), 1);
	assert_int_equal(mb_predict_step(&m, &plan, &set, p, &t), 0);
	mb_plan_release(&plan);
	mb_model_release(&m);
	return t;
}

static struct mb_step_times predict_fwd_bwd(unsigned stage)
{
	struct mb_profile p = hand_profile();

	return predict_fwd_bwd_on(stage, &p);
}

/*
 * 500 tokens, a GEMM 2 x 500 x 1e6 FLOP: 1 s. The forward 2 s; the
 * backward 3 s a layer (its forward again, dX, dW), layer 1 then layer 0.
 * A bucket of 1e6: fill 0.25, rounding 0.375, norm 0.125 (from bf16),
 * widening 0.375, fp32 D2H 1 s; ZeRO-3's bf16 out and back 0.5 s each.
 * ZeRO-2, after the GEMMs on the compute queue: 2-8 the GEMMs, 8-12.25 the
 * two buckets (2.125 s each): backward 10.25 s, and the 2 x 64 partial sums
 * read (pageable) at the end.
 * ZeRO-3, bucket 1 on the copy queue once its layer is done: layer 1 2-5,
 * its bucket's fill and rounding 5-5.625, its round trip, norm, widening
 * and D2H 5.625-8.125 on the copy queue while layer 0 runs 5.625-8.625.
 * Bucket 0, layer 0's, made by the last GEMMs, once they are done (the
 * epilogue): after bucket 1's 64 partial sums are read, 8.625-9.25 on
 * compute, 9.25-11.75 on the copy queue, then its own 64 are read: backward
 * 9.75 s and the two reads.
 */
static void backward_by_hand(void **state)
{
	double partials = 4.0 * MB_NS_PARTIALS * 2 / 2e6;
	struct mb_step_times t;

	(void)state;
	t = predict_fwd_bwd(2);
	assert_secs(t.phase.forward_s, 2);
	assert_secs(t.phase.backward_s, 10.25 + partials);
	t = predict_fwd_bwd(3);
	assert_secs(t.phase.forward_s, 2);
	assert_secs(t.phase.backward_s, 9.75 + partials);
}

/*
 * Each pass at its own ladder's rate for its tokens (500 here, half way in
 * log between the points 50 and 5000): the forward at sqrt(1 x 4) = 2
 * GFLOP/s, 1 s where fwd_bwd_gflops made it 2; the backward's GEMMs at
 * sqrt(0.25 x 1) = 0.5, 12 s where they were 6, so ZeRO-2's backward (its
 * buckets after the GEMMs) is 6 s longer. A profile without the ladders
 * (one from before them) times both at fwd_bwd_gflops, as backward_by_hand.
 */
static void fwd_bwd_by_pass(void **state)
{
	double partials = 4.0 * MB_NS_PARTIALS * 2 / 2e6;
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.forward_gflops = (struct mb_profile_ladder){ 2, { 50, 5000 }, { 1, 4 } };
	p.backward_gflops = (struct mb_profile_ladder){ 2, { 50, 5000 }, { 0.25, 1 } };
	t = predict_fwd_bwd_on(2, &p);
	assert_secs(t.phase.forward_s, 1);
	assert_secs(t.phase.backward_s, 16.25 + partials);
	/* the forward's ladder alone: the backward as before */
	p.backward_gflops.n = 0;
	t = predict_fwd_bwd_on(2, &p);
	assert_secs(t.phase.forward_s, 1);
	assert_secs(t.phase.backward_s, 10.25 + partials);
}

/*
 * The host's streaming passes at host_stream_gbs where the profile has it:
 * the clipping's 8 bytes x 2e6 at 0.032 GB/s, 0.5 s where memcpy_gbs made
 * it 1; ZeRO-3's cast for the pageable params back (6 bytes x 2e6) 0.375 s
 * where it was 0.75. The optimizer's own 1 s stays.
 */
static void host_stream_rate(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.host_stream_gbs = 0.032;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.phase.host_opt_s, 1.5);
	t = predict(3, MB_MASTER, false, &p);
	assert_secs(t.phase.host_opt_s, 1.875);
}

/*
 * ZeRO-3's bf16-momentum kernel at momentum_bf16_gbs where the profile has
 * it: 12 bytes x 1e6 an element of each matrix at 0.012 GB/s, 1 s where
 * momentum_gbs made it 0.75: 0.5 s more over the two. ZeRO-2's fp32
 * momentum keeps momentum_gbs.
 */
static void momentum_bf16_rate(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t0, t, z2;

	(void)state;
	t0 = predict(3, MB_MASTER, false, &p);
	z2 = predict(2, MB_MASTER, false, &p);
	p.momentum_bf16_gbs = 0.012;
	t = predict(3, MB_MASTER, false, &p);
	assert_secs(t.phase.momentum_s, t0.phase.momentum_s + 0.5);
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.phase.momentum_s, z2.phase.momentum_s);
}

/*
 * A rate at its size: the small one's below its size, the large one's above
 * its, a power law between (half way in log size, the geometric mean of
 * the two); no small one, the large at every size. The momentum kernel and
 * the host's passes read it: a 1e6-element matrix lies between the small
 * figures' 2^18 elements and the large ones' 2^24, so a small rate twice
 * the large one makes each shorter, but not as short as the small rate
 * would alone.
 */
static void rates_by_size(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t0, t;

	(void)state;
	assert_true(mb_profile_sized_rate(10, 40, 1, 100, 1e4) == 40);
	assert_true(mb_profile_sized_rate(10, 40, 100, 100, 1e4) == 40);
	assert_true(fabs(mb_profile_sized_rate(10, 40, 1e3, 100, 1e4) - 20) < 1e-9);
	assert_true(mb_profile_sized_rate(10, 40, 1e4, 100, 1e4) == 10);
	assert_true(mb_profile_sized_rate(10, 40, 1e9, 100, 1e4) == 10);
	assert_true(mb_profile_sized_rate(10, 0, 1, 100, 1e4) == 10);
	t0 = predict(2, MB_MASTER, false, &p);
	p.momentum_small_gbs = 2 * p.momentum_gbs;
	p.host_stream_gbs = p.memcpy_gbs;
	p.host_stream_small_gbs = 2 * p.memcpy_gbs;
	p.host_opt_small_gbs = 2 * p.host_opt_gbs;
	t = predict(2, MB_MASTER, false, &p);
	assert_true(t.phase.momentum_s < t0.phase.momentum_s &&
		    t.phase.momentum_s > t0.phase.momentum_s / 2);
	assert_true(t.phase.host_opt_s < t0.phase.host_opt_s &&
		    t.phase.host_opt_s > t0.phase.host_opt_s / 2);
	/* ZeRO-3's bf16 kernel takes its own small rate, not the fp32 one's */
	p = hand_profile();
	p.momentum_bf16_gbs = p.momentum_gbs;
	t0 = predict(3, MB_MASTER, false, &p);
	p.momentum_small_gbs = 2 * p.momentum_gbs;
	t = predict(3, MB_MASTER, false, &p);
	assert_secs(t.phase.momentum_s, t0.phase.momentum_s);
	p.momentum_bf16_small_gbs = 2 * p.momentum_gbs;
	t = predict(3, MB_MASTER, false, &p);
	assert_true(t.phase.momentum_s < t0.phase.momentum_s);
}

/*
 * The backward's norm at norm_gbs, not at the momentum kernel's rate: a
 * quarter of the rate makes the bucket's norm 1 s (0.75 s more), a half of
 * the momentum kernel's rate makes each batch's kernel 2 s and leaves the
 * backward be.
 */
static void norm_at_its_own_rate(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.norm_gbs = 0.004;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.phase.backward_s, backward_s(2) + 0.75);
	assert_secs(t.apply_s, 20);
	p = hand_profile();
	p.momentum_gbs = 0.008;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.phase.backward_s, backward_s(2));
	assert_secs(t.apply_s, 22);
}

/* 0.5 s a command: master's six commands a batch take 3 s more each. */
static void command_overhead(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.command_overhead_us = 500000;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.apply_s, 26);
}

/*
 * 0.5 s of latency a wait: the host of master's apply waits twice (each
 * batch's writeback), 1 s more; the commands' own times, the phases, stay.
 */
static void command_latency(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t0, t;

	(void)state;
	t0 = predict(2, MB_MASTER, false, &p);
	p.command_latency_us = 500000;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.apply_s, t0.apply_s + 1);
	assert_secs(t.phase.h2d_s, t0.phase.h2d_s);
	assert_secs(t.phase.d2h_s, t0.phase.d2h_s);
	assert_secs(t.phase.ns_s, t0.phase.ns_s);
}

/*
 * A wait whose command the device follows with a kernel wakes the host
 * command_latency_busy_us late (3 s here): on a CPU device the kernel takes
 * every worker. One followed by a copy, or by nothing, wakes it
 * command_latency_us late (0): a copy takes one worker. Pipeline as in
 * pipeline_by_hand: the gathers 0-2 and 2-4, batch 0 computes 2-6; the
 * host waits for batch 1's gather (4) beside batch 0's NS and wakes at 7;
 * batch 1 computes 7-11 and batch 0's writeback runs 7-9 (hidden); the host
 * waits for it beside batch 1's NS and wakes at 12: batch 1's writeback
 * 12-14, 14 s against 12. Both, the link shared as in shared_link_by_hand:
 * the host waits for batch 0's compute (6) while batch 1's grads come in,
 * a copy: as without the term, 16 s, the link shared 6-10 (a wait late
 * there too would put batch 0's writeback at 9-11, off it: H2D 4 s and 2 of
 * the D2H hidden, 16 s again by a later late wake-up). Master waits only on
 * an idle device: as without the term.
 */
static void busy_latency_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t0, t;

	(void)state;
	p.command_latency_busy_us = 3e6;
	t = predict(2, MB_PIPELINE, false, &p);
	assert_secs(t.apply_s, 14);
	assert_secs(t.phase.d2h_s, 4);
	assert_secs(t.phase.d2h_hidden_s, 2);
	p.both_pinned_gbs = 0.004;
	t = predict(2, MB_BOTH, false, &p);
	assert_secs(t.apply_s, 16);
	assert_secs(t.phase.h2d_s, 2 + 4);
	assert_secs(t.phase.d2h_hidden_s, 4);
	p = hand_profile();
	t0 = predict(2, MB_MASTER, false, &p);
	p.command_latency_busy_us = 3e6;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.apply_s, t0.apply_s);
	assert_secs(t.iter_s, t0.iter_s);
}

/*
 * The host's enqueue of a Newton-Schulz held 2.5 s, a kernel beside it at
 * half its rate (enqueue_contention_frac 0.5). Pin, each batch in turn: the
 * host queues batch 0's copies, kernel and Newton-Schulz at 0 and enqueues
 * until 2.5; the copies 0-2, the kernel from 2 at half rate until 2.5 (a
 * quarter of its work), the rest 2.5-3.25; Newton-Schulz 3.25-6.25 (its own
 * GEMMs' enqueue is in its rate), the writeback 6.25-8.25; batch 1 the same
 * from 8.25: 16.5 s, the momentum kernels 1.25 s each. The hold alone (no
 * contention) leaves pin as it was: the device is the longer; so does the
 * contention alone (no hold).
 */
static void enqueue_contention_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.ns_enqueue_us = 2.5e6;
	p.enqueue_contention_frac = 0.5;
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.apply_s, 16.5);
	assert_secs(t.phase.momentum_s, 2.5);
	assert_secs(t.phase.ns_s, 6);
	assert_secs(t.phase.h2d_s, 4);
	assert_secs(t.phase.d2h_s, 4);
	p.enqueue_contention_frac = 0;
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.apply_s, 16);
	assert_secs(t.phase.momentum_s, 2);
	/* and the contention without a hold: nothing is beside the enqueue */
	p.ns_enqueue_us = 0;
	p.enqueue_contention_frac = 0.5;
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.apply_s, 16);
	assert_secs(t.phase.momentum_s, 2);
}

/*
 * The enqueue's hold by the matrix's FLOPs: the method's ladder where the
 * profile has one, over the one figure (ns_enqueue_us, 2.25 s here), which
 * bounds how long the kernels beside the hold run at half rate. Each
 * matrix 3e10 FLOPs (1000x1000, square: gram is the standard iteration);
 * at a point of the ladder, or half way between two (log-log: 7e5 and 7e7
 * us at 3e9 and 3e11 FLOPs), 7 s. Pin, each batch in turn: the host queues
 * batch 0 at 0 and is held until 7; the copies 0-2, the kernel from 2 at
 * half rate until 2.25 (an eighth of its work), the rest 2.25-3.125,
 * Newton-Schulz 3.125-6.125; the writeback, queued at 7, 7-9; batch 1 from
 * 9 the same: 18 s, the momentum kernels 1.125 s each. The other method's
 * ladder alone leaves gram with the one figure: held until 2.25, the
 * writeback at 6.125, 16.25 s.
 */
static void enqueue_by_size_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t;

	(void)state;
	p.ns_enqueue_us = 2.25e6;
	p.enqueue_contention_frac = 0.5;
	p.ns_gram_enqueue_us = (struct mb_profile_ladder){ 2, { 3e9, 3e10 }, { 1, 7e6 } };
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.apply_s, 18);
	assert_secs(t.phase.momentum_s, 2.25);
	assert_secs(t.phase.ns_s, 6);
	p.ns_gram_enqueue_us = (struct mb_profile_ladder){ 2, { 3e9, 3e11 }, { 7e5, 7e7 } };
	t = predict(2, MB_PIN, false, &p);
	assert_true(fabs(t.apply_s - 18) < 1e-6); /* exp(log) rounds */
	p.ns_standard_enqueue_us = p.ns_gram_enqueue_us;
	p.ns_gram_enqueue_us.n = 0;
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.apply_s, 16.25);
	assert_secs(t.phase.momentum_s, 2.25);
}

/*
 * The host's pass costs host_pass_us beyond its loops (1 s here): the host
 * optimizer's phase 2 + 1 s, the iteration a second longer, the apply as
 * it was.
 */
static void host_pass_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t0, t;

	(void)state;
	t0 = predict(2, MB_MASTER, false, &p);
	p.host_pass_us = 1e6;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t0.phase.host_opt_s, 2);
	assert_secs(t.phase.host_opt_s, 3);
	assert_secs(t.iter_s, t0.iter_s + 1);
	assert_secs(t.apply_s, t0.apply_s);
}

/*
 * A copy at the rate of its size, from its direction's large figure (at
 * MB_PROFILE_COPY_LARGE_BYTES) and small one (at MB_PROFILE_COPY_SMALL_BYTES),
 * a power law between: pin's copies are each 4e6 bytes, between the two, so
 * a small pinned H2D rate four times the large one makes each H2D shorter
 * than the large rate's 1 s, as the sized rate says, and leaves the D2H be;
 * the D2H's small one likewise. A small rate of 0 (a file without them) is
 * the large rate at every size: the other tests' times.
 */
static void copies_by_size(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times t0, t;
	double r = mb_profile_sized_rate(0.004, 0.016, 4e6, (double)MB_PROFILE_COPY_SMALL_BYTES,
					 (double)MB_PROFILE_COPY_LARGE_BYTES);

	(void)state;
	assert_true(r > 0.004 && r < 0.016);
	t0 = predict(2, MB_PIN, false, &p);
	p.h2d_pinned_small_gbs = 0.016;
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.phase.h2d_s, 4 * 4e6 / (1e9 * r));
	assert_secs(t.phase.d2h_s, t0.phase.d2h_s);
	assert_secs(t.apply_s, t0.apply_s - 4 + 4 * 4e6 / (1e9 * r));
	p.d2h_pinned_small_gbs = 0.016;
	t = predict(2, MB_PIN, false, &p);
	assert_secs(t.phase.d2h_s, 4 * 4e6 / (1e9 * r));
	/* the pageable ones are their own: master's momentum copies */
	p = hand_profile();
	t0 = predict(2, MB_MASTER, false, &p);
	p.h2d_pinned_small_gbs = p.d2h_pinned_small_gbs = 0.004;
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.apply_s, t0.apply_s);
	p.h2d_pageable_small_gbs = 0.008;
	t = predict(2, MB_MASTER, false, &p);
	assert_true(t.phase.h2d_s < t0.phase.h2d_s && t.phase.d2h_s == t0.phase.d2h_s);
	/*
	 * the both-ways cap at the pair's size: shared_link_by_hand's 0.004 GB/s
	 * with a small figure of 1 GB/s is 0.17 GB/s at 4e6 bytes, above the two
	 * rates' sum: no contention, overlap_by_hand's 14 s for its 16
	 */
	p = hand_profile();
	p.both_pinned_gbs = 0.004;
	t0 = predict(2, MB_BOTH, false, &p);
	assert_secs(t0.apply_s, 16);
	p.both_pinned_small_gbs = 1;
	t = predict(2, MB_BOTH, false, &p);
	assert_secs(t.apply_s, 14);
}

/*
 * Newton-Schulz at the rate of its size: each 1000x1000 matrix is 3e10 FLOPs
 * (3 s at the hand profile's 10 GFLOP/s). On a ladder of 10 GFLOP/s at 3e9
 * and 1000 at 3e11, 3e10 is half way in log FLOPs, so the rate is half way
 * in log rate, sqrt(10 x 1000) = 100: 0.3 s a matrix. Below the ladder's
 * first point the first's rate (1 GFLOP/s: 30 s), above its last the last's
 * (30 GFLOP/s: 1 s).
 */
static void ns_rate_by_size(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_profile_ladder l = { 2, { 1e6, 1e8 }, { 10, 40 } };
	struct mb_step_times t;

	(void)state;
	assert_true(fabs(mb_profile_ladder_at(&l, 1e7) - 20) < 1e-9);
	assert_true(mb_profile_ladder_at(&l, 1e6) == 10);
	assert_true(mb_profile_ladder_at(&l, 1) == 10);
	assert_true(mb_profile_ladder_at(&l, 1e8) == 40);
	assert_true(mb_profile_ladder_at(&l, 1e12) == 40);
	p.ns_gram_gflops = (struct mb_profile_ladder){ 2, { 3e9, 3e11 }, { 10, 1000 } };
	t = predict(2, MB_MASTER, false, &p);
	assert_secs(t.phase.ns_s, 0.6);
	assert_secs(t.apply_s, 20 - 6 + 0.6);
	p.ns_gram_gflops = (struct mb_profile_ladder){ 2, { 3e11, 3e12 }, { 1, 2 } };
	assert_secs(predict(2, MB_MASTER, false, &p).phase.ns_s, 60);
	p.ns_gram_gflops = (struct mb_profile_ladder){ 3, { 3e7, 3e8, 3e9 }, { 100, 50, 30 } };
	assert_secs(predict(2, MB_MASTER, false, &p).phase.ns_s, 2);
	/* one value (a flag's) sets every point: one rate at every size */
	mb_profile_ladder_set(&p.ns_gram_gflops, 10);
	assert_int_equal(p.ns_gram_gflops.n, 3);
	assert_true(p.ns_gram_gflops.flops[1] == 3e8);
	assert_secs(predict(2, MB_MASTER, false, &p).apply_s, 20);
}

/* ---- the profile's reader and writer ---- */

static const char good[] =
	"{\n  \"format_version\": 4,\n  \"name\": \"x\",\n  \"device\": \"y \\\"z\\\"\",\n"
	"  \"note\": [\"for people\"],\n"
	"  \"h2d_pinned_gbs\": 43, \"d2h_pinned_gbs\": 57, \"both_pinned_gbs\": 100,\n"
	"  \"h2d_pageable_gbs\": 10.1, \"d2h_pageable_gbs\": 0.1, \"both_pageable_gbs\": 20,\n"
	"  \"pageable_holds_host\": true, \"momentum_gbs\": 500, \"fwd_bwd_gflops\": 30770,\n"
	"  \"fill_gbs\": 250, \"cast_gbs\": 125, \"norm_gbs\": 62.5,\n"
	"  \"host_opt_gbs\": 100, \"memcpy_gbs\": 200, \"command_overhead_us\": 0,\n"
	"  \"ns_gram_gflops\": [{\"flops\": 9.2e7, \"gflops\": 15.5},\n"
	"    {\"flops\": 8.72e8, \"gflops\": 36.9}, {\"flops\": 6.98e9, \"gflops\": 104887.123456789}],\n"
	"  \"ns_standard_gflops\": [{\"flops\": 1, \"gflops\": 3e4}]\n}\n";

static void profile_round_trip(void **state)
{
	struct mb_profile a, b;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(mb_profile_parse(&a, good, strlen(good), "good.json"), 0);
	assert_string_equal(a.device, "y \"z\"");
	assert_true(a.pageable_holds_host);
	assert_true(a.d2h_pageable_gbs == 0.1);
	assert_true(a.norm_gbs == 62.5 && a.momentum_gbs == 500);
	assert_int_equal(a.ns_gram_gflops.n, 3);
	assert_true(a.ns_gram_gflops.flops[1] == 8.72e8 && a.ns_gram_gflops.value[1] == 36.9);
	assert_true(a.ns_gram_gflops.value[2] == 104887.123456789);
	assert_true(a.ns_standard_gflops.n == 1 && a.ns_standard_gflops.value[0] == 3e4);
	/* a file from before the optional keys: none of them, read as not measured */
	assert_true(a.forward_gflops.n == 0 && a.backward_gflops.n == 0);
	assert_true(a.host_stream_gbs == 0 && a.command_latency_us == 0);
	assert_true(a.momentum_bf16_gbs == 0 && a.momentum_small_gbs == 0);
	assert_true(a.host_opt_small_gbs == 0 && a.host_stream_small_gbs == 0);
	assert_true(a.h2d_pinned_small_gbs == 0 && a.d2h_pinned_small_gbs == 0 &&
		    a.both_pinned_small_gbs == 0 && a.h2d_pageable_small_gbs == 0 &&
		    a.d2h_pageable_small_gbs == 0 && a.both_pageable_small_gbs == 0);
	assert_true(a.command_latency_busy_us == 0);
	/* the first key it lacks, in the keys' order (profile --if-missing measures it again) */
	assert_string_equal(a.lacks, "pageable_exposed_frac");
	assert_non_null(f = open_memstream(&text, &len));
	mb_profile_write(f, &a);
	fclose(f);
	assert_int_equal(mb_profile_parse(&b, text, len, "written"), 0);
	/* written, its optional keys are there (0); the ladders without a point are not */
	assert_string_equal(b.lacks, "forward_gflops");
	b.lacks = a.lacks;
	assert_memory_equal(&a, &b, sizeof(a));
	/* and written back as it was: a ladder with no point is left out */
	assert_null(strstr(text, "forward_gflops"));
	free(text);
	/* with them: written, and read back bit for bit */
	a.forward_gflops = (struct mb_profile_ladder){ 2, { 128, 512 }, { 45.5, 52.75 } };
	a.backward_gflops = (struct mb_profile_ladder){ 1, { 128 }, { 61.5 } };
	a.host_stream_gbs = 54.5;
	a.ns_standard_enqueue_us =
		(struct mb_profile_ladder){ 2, { 9.2e7, 8.72e8 }, { 190.5, 450 } };
	text = NULL;
	assert_non_null(f = open_memstream(&text, &len));
	mb_profile_write(f, &a);
	fclose(f);
	assert_non_null(
		strstr(text, "\"forward_gflops\": [\n    { \"tokens\": 128, \"gflops\": 45.5"));
	assert_non_null(strstr(
		text, "\"ns_standard_enqueue_us\": [\n    { \"flops\": 92000000, \"us\": 190.5"));
	/* the one without a point is left out, as a file from before it */
	assert_null(strstr(text, "ns_gram_enqueue_us"));
	assert_int_equal(mb_profile_parse(&b, text, len, "written"), 0);
	assert_string_equal(b.lacks, "ns_gram_enqueue_us");
	b.lacks = a.lacks;
	assert_memory_equal(&a, &b, sizeof(a));
	free(text);
	/* flags set fields, checked as the file's */
	assert_int_equal(mb_profile_set(&a, "h2d_pageable_gbs", "5", "--pageable-gbs"), 0);
	assert_true(mb_profile_get(&a, "h2d_pageable_gbs") == 5);
	assert_int_equal(mb_profile_set(&a, "pageable_holds_host", "off", "--x"), 0);
	assert_true(mb_profile_get(&a, "pageable_holds_host") == 0);
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "0", "--momentum-gbs"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--momentum-gbs: must be 1e-6 to 1e9"));
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "-1", "--momentum-gbs"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--momentum-gbs: invalid number '-1'"));
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "1e-300", "--momentum-gbs"),
			 -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--momentum-gbs: must be 1e-6 to 1e9"));
	/* every rate has a ceiling too, and a number too small to hold is not 0 */
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "2e9", "--momentum-gbs"), -MB_EINPUT);
	assert_non_null(
		strstr(mb_errmsg(), "--momentum-gbs: must be 1e-6 to 1e9 (GB/s), got '2e9'"));
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "1e9", "--momentum-gbs"), 0);
	assert_int_equal(mb_profile_set(&a, "pageable_exposed_frac", "1e-400",
					"--pageable-exposed"),
			 -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "'1e-400' is too small to hold"));
	assert_int_equal(mb_profile_set(&a, "command_overhead_us", "1e7", "--overhead-us"),
			 -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--overhead-us: must be 0 to 1e6 (us)"));
	assert_int_equal(mb_profile_set(&a, "command_overhead_us", "1e6", "--overhead-us"), 0);
	assert_int_equal(mb_profile_set(&a, "command_overhead_us", "0", "--overhead-us"), 0);
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "500", "--momentum-gbs"), 0);
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "1x", "--momentum-gbs"), -MB_EINPUT);
	assert_int_equal(mb_profile_set(&a, "norm_gbs", "7.5", "--norm-gbs"), 0);
	assert_true(mb_profile_get(&a, "norm_gbs") == 7.5 && a.momentum_gbs == 500);
	/* a rate set by hand times what it did before its refinements: they are cleared */
	a.forward_gflops = (struct mb_profile_ladder){ 1, { 1e8 }, { 40 } };
	a.backward_gflops = a.forward_gflops;
	a.host_stream_gbs = 50;
	a.momentum_bf16_gbs = 300;
	assert_int_equal(mb_profile_set(&a, "fwd_bwd_gflops", "9", "--fwd-bwd-gflops"), 0);
	assert_true(a.fwd_bwd_gflops == 9 && !a.forward_gflops.n && !a.backward_gflops.n);
	assert_int_equal(mb_profile_set(&a, "memcpy_gbs", "9", "--memcpy-gbs"), 0);
	assert_true(a.memcpy_gbs == 9 && a.host_stream_gbs == 0);
	a.momentum_small_gbs = a.momentum_bf16_small_gbs = 600;
	assert_int_equal(mb_profile_set(&a, "momentum_gbs", "500", "--momentum-gbs"), 0);
	assert_true(a.momentum_gbs == 500 && a.momentum_bf16_gbs == 0);
	assert_true(a.momentum_small_gbs == 0 && a.momentum_bf16_small_gbs == 0);
	a.host_opt_small_gbs = 60;
	assert_int_equal(mb_profile_set(&a, "host_opt_gbs", "30", "--host-opt-gbs"), 0);
	assert_true(a.host_opt_small_gbs == 0);
	/* a copy rate set by hand clears its small one, and only its own */
	a.h2d_pinned_small_gbs = a.d2h_pinned_small_gbs = a.both_pinned_small_gbs = 12;
	a.h2d_pageable_small_gbs = a.d2h_pageable_small_gbs = a.both_pageable_small_gbs = 11;
	assert_int_equal(mb_profile_set(&a, "h2d_pinned_gbs", "9", "--h2d-gbs"), 0);
	assert_true(a.h2d_pinned_small_gbs == 0 && a.d2h_pinned_small_gbs == 12);
	assert_int_equal(mb_profile_set(&a, "both_pageable_gbs", "9", "--pageable-both-gbs"), 0);
	assert_true(a.both_pageable_small_gbs == 0 && a.d2h_pageable_small_gbs == 11);
	assert_int_equal(mb_profile_set(&a, "d2h_pinned_gbs", "9", "--d2h-gbs"), 0);
	assert_int_equal(mb_profile_set(&a, "both_pinned_gbs", "9", "--both-gbs"), 0);
	assert_int_equal(mb_profile_set(&a, "h2d_pageable_gbs", "9", "--pageable-h2d-gbs"), 0);
	assert_int_equal(mb_profile_set(&a, "d2h_pageable_gbs", "9", "--pageable-d2h-gbs"), 0);
	assert_true(a.d2h_pinned_small_gbs == 0 && a.both_pinned_small_gbs == 0 &&
		    a.h2d_pageable_small_gbs == 0 && a.d2h_pageable_small_gbs == 0);
	assert_int_equal(mb_profile_set(&a, "norm_gbs", "0", "--norm-gbs"), -MB_EINPUT);
	assert_true(isnan(mb_profile_get(&a, "nope")));
	/* a rate flag sets every point of a ladder, its sizes kept */
	assert_true(isnan(mb_profile_get(&a, "ns_gram_gflops")));
	assert_true(mb_profile_get(&a, "ns_standard_gflops") == 3e4);
	assert_int_equal(mb_profile_set(&a, "ns_gram_gflops", "50", "--ns-gflops"), 0);
	assert_true(mb_profile_get(&a, "ns_gram_gflops") == 50);
	assert_true(a.ns_gram_gflops.n == 3 && a.ns_gram_gflops.flops[2] == 6.98e9);
	assert_int_equal(mb_profile_set(&a, "ns_gram_gflops", "0", "--ns-gflops"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--ns-gflops: must be 1e-6 to 1e9 (GFLOP/s)"));
	assert_int_equal(mb_profile_set(&a, "ns_gram_gflops", "1e-7", "--ns-gflops"), -MB_EINPUT);
	/* the shipped one, and every key in the table */
	assert_int_equal(mb_profile_load(&a, "reference"), 0);
	assert_string_equal(a.name, "reference");
	assert_int_equal(mb_profile_load(&a, "nope"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "shipped: reference"));
	assert_string_equal(mb_profile_key(0), "name");
	assert_string_equal(mb_profile_key(12), "ns_gram_precision");
	assert_string_equal(mb_profile_key(18), "norm_gbs");
	assert_string_equal(mb_profile_key(15), "momentum_bf16_gbs");
	assert_string_equal(mb_profile_key(16), "momentum_small_gbs");
	assert_string_equal(mb_profile_key(22), "forward_gflops");
	assert_string_equal(mb_profile_key(26), "host_stream_gbs");
	assert_string_equal(mb_profile_key(30), "command_latency_us");
	assert_string_equal(mb_profile_key(33), "h2d_pinned_small_gbs");
	assert_string_equal(mb_profile_key(39), "command_latency_busy_us");
	assert_string_equal(mb_profile_key(40), "median_rates");
	assert_string_equal(mb_profile_key(41), "ns_enqueue_us");
	assert_string_equal(mb_profile_key(42), "enqueue_contention_frac");
	assert_string_equal(mb_profile_key(43), "host_pass_us");
	assert_string_equal(mb_profile_key(44), "ns_gram_enqueue_us");
	assert_string_equal(mb_profile_key(45), "ns_standard_enqueue_us");
	assert_null(mb_profile_key(46));
	/* the GPUs' link: 0 (not modelled) where a file leaves it out, as the shipped one */
	assert_true(a.peer_gbs == 0 && !a.peer_shares_pcie);
	assert_int_equal(mb_profile_set(&a, "peer_gbs", "-1", "--peer-gbs"), -MB_EINPUT);
	/* 0 is not modelled; else the floor and the ceiling of every rate */
	assert_int_equal(mb_profile_set(&a, "peer_gbs", "1e-300", "--peer-gbs"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--peer-gbs: must be 0 (not modelled) or 1e-6 to 1e9"));
	assert_int_equal(mb_profile_set(&a, "peer_gbs", "2e9", "--peer-gbs"), -MB_EINPUT);
	assert_int_equal(mb_profile_set(&a, "peer_gbs", "0", "--peer-gbs"), 0);
	assert_int_equal(mb_profile_set(&a, "peer_shares_pcie", "on", "--peer-shares-pcie"), 0);
	assert_true(a.peer_shares_pcie);
	/* a fraction: 0 to 1, and 0 where a file leaves it out (the shipped one does) */
	assert_true(a.pageable_exposed_frac == 0);
	assert_int_equal(mb_profile_set(&a, "pageable_exposed_frac", "0.4", "--pageable-exposed"),
			 0);
	assert_true(mb_profile_get(&a, "pageable_exposed_frac") == 0.4);
	assert_int_equal(mb_profile_set(&a, "pageable_exposed_frac", "1.5", "--pageable-exposed"),
			 -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--pageable-exposed: must be a number from 0 to 1"));
}

/* IN with its first FROM replaced by TO into OUT (LEN bytes). */
static void replace(char *out, size_t len, const char *in, const char *from, const char *to)
{
	const char *at = strstr(in, from);

	assert_non_null(at);
	snprintf(out, len, "%.*s%s%s", (int)(at - in), in, to, at + strlen(from));
}

/* GOOD with FROM replaced by TO must be refused, the message holding WANT. */
static void refused(const char *from, const char *to, const char *want)
{
	char text[sizeof(good) + 128];
	struct mb_profile p;

	replace(text, sizeof(text), good, from, to);
	assert_int_equal(mb_profile_parse(&p, text, strlen(text), "bad.json"), -MB_EINPUT);
	if (!strstr(mb_errmsg(), want))
		fail_msg("'%s' for '%s' -> '%s': want '%s'", mb_errmsg(), from, to, want);
}

static void bad_profiles(void **state)
{
	(void)state;
	refused("\"h2d_pinned_gbs\": 43, ", "", "bad.json: missing key \"h2d_pinned_gbs\"");
	refused("\"momentum_gbs\": 500", "\"momentum_gbs\": -500",
		"bad.json:8:48: momentum_gbs: must be 1e-6 to 1e9 (GB/s), got -500");
	refused("\"memcpy_gbs\": 200", "\"memcpy_gbs\": 0", "memcpy_gbs: must be 1e-6 to 1e9");
	refused("\"memcpy_gbs\": 200", "\"memcpy_gbs\": 1e12", "memcpy_gbs: must be 1e-6 to 1e9");
	refused("\"command_overhead_us\": 0", "\"command_overhead_us\": -1",
		"command_overhead_us: must be 0 to 1e6");
	refused("\"command_overhead_us\": 0", "\"command_overhead_us\": 1e7",
		"command_overhead_us: must be 0 to 1e6 (us), got 10000000");
	/* the link between the GPUs: 0 (not modelled) or a rate as every other */
	refused("\"command_overhead_us\": 0", "\"command_overhead_us\": 0, \"peer_gbs\": 1e-7",
		"peer_gbs: must be 0 (not modelled) or 1e-6 to 1e9 (GB/s), got 9.9999999999999995e-08");
	refused("\"format_version\": 4", "\"format_version\": 5",
		"bad.json:2:21: format_version: a profile of another version (this muonbench "
		"reads version 4)");
	assert_int_equal(mb_err_kind(), MB_KIND_OTHER);
	refused("\"format_version\": 4", "\"format_version\": 1.5",
		"format_version: a profile of another version");
	refused("\"format_version\": 4", "\"format_version\": 0",
		"format_version: a profile of another version");
	refused("\"format_version\": 4,", "", "missing key \"format_version\"");
	refused(", \"norm_gbs\": 62.5", "", "bad.json: missing key \"norm_gbs\"");
	refused("\"norm_gbs\": 62.5", "\"norm_gbs\": -1", "norm_gbs: must be 1e-6 to 1e9");
	refused("\"name\": \"x\"", "\"name\": 3", "bad.json:3:11: name: must be a string");
	refused("\"pageable_holds_host\": true", "\"pageable_holds_host\": 1",
		"pageable_holds_host: must be true or false");
	refused("\"ns_standard_gflops\"", "\"ns_standard_glops\"",
		"bad.json:13:24: ns_standard_glops: not a key of a device profile");
	refused("\"memcpy_gbs\": 200", "\"memcpy_gbs\": 200, \"memcpy_gbs\": 2",
		"memcpy_gbs: given twice");
	refused("{", "[", "bad.json:");
	/* Newton-Schulz's ladder: a list of points up in FLOPs, each rate positive */
	refused(",\n  \"ns_standard_gflops\": [{\"flops\": 1, \"gflops\": 3e4}]", "",
		"bad.json: missing key \"ns_standard_gflops\"");
	refused("[{\"flops\": 1, \"gflops\": 3e4}]", "3e4",
		"bad.json:13:25: ns_standard_gflops: must be a list of {\"flops\": F, "
		"\"gflops\": G} points, got a number");
	refused("[{\"flops\": 1, \"gflops\": 3e4}]", "[]",
		"ns_standard_gflops: must hold 1 to 8 points, got 0");
	refused("{\"flops\": 8.72e8, \"gflops\": 36.9}", "{\"flops\": 8.72e6, \"gflops\": 36.9}",
		"bad.json:12:5: ns_gram_gflops: point 2: flops 8720000 not above the point before's "
		"(92000000): the ladder goes up in FLOPs");
	refused("{\"flops\": 8.72e8, \"gflops\": 36.9}", "{\"flops\": 9.2e7, \"gflops\": 36.9}",
		"ns_gram_gflops: point 2: flops 92000000 not above");
	refused("\"gflops\": 36.9", "\"gflops\": -36.9",
		"bad.json:12:33: ns_gram_gflops: point 2: gflops must be a positive number");
	/* a ladder's rate has the floor of every rate */
	refused("\"gflops\": 36.9", "\"gflops\": 1e-7",
		"ns_gram_gflops: point 2: gflops must be 1e-6 to 1e9 (GFLOP/s), got 9.9999999999999995e-08");
	refused("\"flops\": 9.2e7, ", "", "ns_gram_gflops: point 1 must be an object");
	refused("\"flops\": 9.2e7, \"gflops\": 15.5", "\"flops\": 9.2e7, \"gflop\": 15.5",
		"ns_gram_gflops: point 1: missing key \"gflops\"");
	refused("{\"flops\": 1, \"gflops\": 3e4}", "[1, 3e4]",
		"ns_standard_gflops: point 1 must be an object {\"flops\": F, \"gflops\": G}, "
		"got a list");
	/* the passes' ladders are by tokens, up in tokens; an empty one is refused as any */
	refused("\"memcpy_gbs\": 200",
		"\"memcpy_gbs\": 200, \"forward_gflops\": [{\"flops\": 128, "
		"\"gflops\": 40}]",
		"forward_gflops: point 1: missing key \"tokens\"");
	refused("\"memcpy_gbs\": 200",
		"\"memcpy_gbs\": 200, \"backward_gflops\": [{\"tokens\": 256, "
		"\"gflops\": 40}, {\"tokens\": 128, \"gflops\": 50}]",
		"backward_gflops: point 2: tokens 128 not above the point before's (256): the ladder "
		"goes up in tokens");
	refused("\"memcpy_gbs\": 200", "\"memcpy_gbs\": 200, \"forward_gflops\": []",
		"forward_gflops: must hold 1 to 8 points, got 0");
	/* the enqueue's ladders hold times, up to a second, by FLOPs */
	refused("\"memcpy_gbs\": 200",
		"\"memcpy_gbs\": 200, \"ns_gram_enqueue_us\": [{\"flops\": 1e8, "
		"\"gflops\": 40}]",
		"ns_gram_enqueue_us: point 1: missing key \"us\"");
	refused("\"memcpy_gbs\": 200",
		"\"memcpy_gbs\": 200, \"ns_gram_enqueue_us\": [{\"flops\": 1e8, \"us\": 2e6}]",
		"ns_gram_enqueue_us: point 1: us must be at most 1e6 (us), got 2000000");
	refused("\"memcpy_gbs\": 200",
		"\"memcpy_gbs\": 200, \"ns_gram_enqueue_us\": [{\"flops\": 1e8, \"us\": 0}]",
		"ns_gram_enqueue_us: point 1: us must be a positive number");
	refused("\"memcpy_gbs\": 200", "\"memcpy_gbs\": 200, \"ns_gram_enqueue_us\": 150",
		"ns_gram_enqueue_us: must be a list of {\"flops\": F, \"us\": T} points, got a "
		"number");
}

/*
 * A profile as an older muonbench wrote it (version 1: no norm_gbs, and
 * Newton-Schulz timed with its norm in another order) is refused, with
 * what to do and a kind that lets run and profile --if-missing act on it.
 */
static void old_profile_refused(void **state)
{
	char text[sizeof(good)], v1[sizeof(good)];
	struct mb_profile p;

	(void)state;
	replace(text, sizeof(text), good, ", \"norm_gbs\": 62.5", "");
	replace(v1, sizeof(v1), text, "\"format_version\": 4", "\"format_version\": 1");
	assert_int_equal(mb_profile_parse(&p, v1, strlen(v1), "old.json"), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "old.json:2:21: format_version: a profile of version 1, from an older "
			    "muonbench (this one reads version 4, each rate a mean over "
			    "interleaved rounds): run `muonbench profile` to measure it again");
	assert_int_equal(mb_err_kind(), MB_KIND_OLD_FORMAT);
	/* version 2: one Newton-Schulz rate a method, timed at one size */
	replace(text, sizeof(text), good, "\"format_version\": 4", "\"format_version\": 2");
	assert_int_equal(mb_profile_parse(&p, text, strlen(text), "v2.json"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "v2.json:2:21: format_version: a profile of version "
					    "2, from an older muonbench"));
	assert_int_equal(mb_err_kind(), MB_KIND_OLD_FORMAT);
	/* version 3: version 4's keys, its rates medians of runs in a row */
	replace(text, sizeof(text), good, "\"format_version\": 4", "\"format_version\": 3");
	assert_int_equal(mb_profile_parse(&p, text, strlen(text), "v3.json"), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "v3.json:2:21: format_version: a profile of version "
					    "3, from an older muonbench"));
	assert_int_equal(mb_err_kind(), MB_KIND_OLD_FORMAT);
}

/* ---- the reference ---- */

struct row {
	unsigned stage;
	enum mb_variant variant;
	double iter_s, apply_s; /* the reference's (muon-offload-pr.txt) */
};

static const struct row reference[] = {
	{ 2, MB_MASTER, 8.54, 5.13 },  { 2, MB_PIN, 5.94, 2.82 },    { 2, MB_OVERLAP, 7.12, 3.85 },
	{ 2, MB_BOTH, 5.68, 2.35 },    { 3, MB_MASTER, 7.65, 3.79 }, { 3, MB_PIN, 6.28, 2.57 },
	{ 3, MB_OVERLAP, 6.56, 2.91 }, { 3, MB_BOTH, 6.28, 2.22 },
};

/*
 * profiles/reference.json, fitted on the ZeRO-2 master row alone, against
 * the other seven (issue 15): the Muon apply within 4% on every row but
 * overlap-only, which comes in 5-6% short (its pageable writeback holds the
 * host, as the profile says, but how it shares the host's memory with the
 * next gather the text does not say); the iteration within 5% on every
 * row (ZeRO-3's backward reduces its buckets, bf16 round trip included,
 * behind the backward's GEMMs, as DeepSpeed's overlap_comm does).
 */
static void reproduces_the_reference(void **state)
{
	struct mb_step_settings set = { .pin_memory = true, .fwd_bwd = true, .tokens = 2048 };
	struct mb_profile p;
	struct mb_model m;
	struct mb_plan plan;
	size_t i;

	(void)state;
	assert_int_equal(mb_profile_load(&p, "reference"), 0);
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 0), 0);
	for (i = 0; i < sizeof(reference) / sizeof(reference[0]); i++) {
		const struct row *r = &reference[i];
		struct mb_step_times t;
		double da, di;

		set.plan = (struct mb_plan_settings){
			.stage = r->stage,
			.gather_budget_bytes = 512ull << 20,
			.sub_group_size = 1000000000,
			.reduce_bucket_elems = 500000000,
			.tokens = 2048,
			.world_size = 1,
			.momentum_dtype = mb_momentum_dtype_default(r->stage),
			.params_back = mb_params_back_default(r->stage),
			.pin_chunk_bytes = 2ull << 30,
			.ns_method = MB_NS_GRAM,
		};
		set.variant = r->variant;
		assert_int_equal(mb_plan_build(&plan, &m, &set.plan), 0);
		assert_int_equal(mb_predict_step(&m, &plan, &set, &p, &t), 0);
		mb_plan_release(&plan);
		da = 100 * (t.apply_s - r->apply_s) / r->apply_s;
		di = 100 * (t.iter_s - r->iter_s) / r->iter_s;
		print_message("ZeRO-%u %-7s apply %.2f s (%+.1f%%), iteration %.2f s (%+.1f%%)\n",
			      r->stage, mb_variant_name(r->variant), t.apply_s, da, t.iter_s, di);
		if (r->stage == 2 && r->variant == MB_MASTER) {
			assert_true(fabs(da) < 0.1 && fabs(di) < 0.1); /* the fit */
		} else if (r->variant == MB_OVERLAP) {
			assert_true(da < -4 && da > -6);
		} else {
			assert_true(fabs(da) < 4);
		}
		assert_true(fabs(di) < 5);
	}
	mb_model_release(&m);
}

/*
 * The collectives of a rank of 2, given the GPUs' link at 0.004 GB/s: under
 * ZeRO-2 the one gradient bucket's reduce-scatter (its 2e6 bf16 elements,
 * 4e6 bytes sent once to the other rank: 1 s) and the params' all-gather
 * (4e6 bytes: 1 s), both on the compute queue, outside the apply: the
 * iteration 2 s longer. ZeRO-3 gathers its params in the next forward: 1 s.
 * With no link rate, or one rank, nothing is added.
 */
static void collectives_by_hand(void **state)
{
	struct mb_profile p = hand_profile();
	struct mb_step_times one, two;
	unsigned stage;

	(void)state;
	for (stage = 2; stage <= 3; stage++) {
		one = predict(stage, MB_BOTH, false, &p);
		ranks = 2;
		two = predict(stage, MB_BOTH, false, &p);
		assert_secs(two.iter_s, one.iter_s); /* no link rate: not modelled */
		p.peer_gbs = 0.004;
		two = predict(stage, MB_BOTH, false, &p);
		assert_secs(two.apply_s, one.apply_s);
		assert_secs(two.iter_s, one.iter_s + (stage == 2 ? 2 : 1));
		ranks = 1;
		two = predict(stage, MB_BOTH, false, &p);
		assert_secs(two.iter_s, one.iter_s);
		p.peer_gbs = 0;
	}
}

/* ---- the H200's cells (results/gpu/h200-2026-12-04) ---- */

#define H200 "results/gpu/h200-2026-12-04/"

/* The apply of ROW's cell predicted from P, its settings the row's. */
static double h200_apply(const struct mb_csv_row *row, const struct mb_profile *p)
{
	int v = mb_variant_find(row->variant, strlen(row->variant));
	struct mb_step_settings set = {
		.plan = { .stage = (unsigned)row->stage,
			  .gather_budget_bytes = row->gather_budget_bytes,
			  .sub_group_size = row->sub_group_size_elems,
			  .reduce_bucket_elems = row->reduce_bucket_size,
			  .pin_chunk_bytes = row->pin_chunk_bytes,
			  .momentum_dtype = (enum mb_momentum_dtype)mb_knob_word(
				  MB_KNOB_MOMENTUM_DTYPE, row->knob[MB_KNOB_MOMENTUM_DTYPE]),
			  .params_back = (enum mb_params_back)mb_knob_word(
				  MB_KNOB_PARAMS_BACK, row->knob[MB_KNOB_PARAMS_BACK]),
			  .ns_method = (enum mb_ns_method)mb_knob_word(
				  MB_KNOB_NS_METHOD, row->knob[MB_KNOB_NS_METHOD]),
			  .world_size = 1 },
		.variant = (enum mb_variant)v,
		.pin_memory = !strcmp(row->knob[MB_KNOB_PIN_MEMORY], "on"),
		.knob[MB_KNOB_WRITEBACK_DEP] = (unsigned)mb_knob_word(
			MB_KNOB_WRITEBACK_DEP, row->knob[MB_KNOB_WRITEBACK_DEP]),
		.fwd_bwd = !strcmp(row->knob[MB_KNOB_FWD_BWD], "on"),
	};
	struct mb_step_times t;
	struct mb_model m;
	struct mb_plan plan;

	assert_true(v >= 0);
	assert_string_equal(row->knob[MB_KNOB_PARAM_ORDER], "shape");
	if (set.fwd_bwd)
		set.tokens = set.plan.tokens = row->seq * row->micro_batch;
	assert_int_equal(mb_config_load_builtin(&m, row->model, (unsigned)row->layers), 0);
	assert_int_equal(mb_plan_build(&plan, &m, &set.plan), 0);
	assert_int_equal(mb_predict_step(&m, &plan, &set, p, &t), 0);
	mb_plan_release(&plan);
	mb_model_release(&m);
	return t.apply_s;
}

/* The ok rows of the H200's three files of ZeRO-2 cells, into *ROWS (*N). */
static void h200_rows(struct mb_csv_row **rows, size_t *n)
{
	static const char *const files[] = { H200 "run.csv", H200 "full.csv",
					     H200 "full-pin-overlap.csv" };
	struct mb_csv_row *r;
	size_t i, k, nr;

	*rows = NULL;
	*n = 0;
	for (i = 0; i < 3; i++) {
		r = NULL;
		nr = 0;
		assert_int_equal(mb_csv_read(files[i], &r, &nr), 0);
		for (k = 0; k < nr; k++) {
			if (strcmp(r[k].status, "ok"))
				continue;
			*rows = realloc(*rows, (*n + 1) * sizeof(**rows));
			assert_non_null(*rows);
			(*rows)[(*n)++] = r[k];
		}
		free(r);
	}
}

/*
 * The pageable-copy term (pageable_exposed_frac) set from the 6-layer
 * overlap cell alone, by bisection on its apply, on the H200's profile with
 * pageable copies holding the host (as the H200 showed directly: enqueue
 * time = wall time; that profile's older detection read it wrong): the
 * whole-model overlap cell (apply 7.84 s) is then predicted within 10%,
 * and no other cell's apply is predicted worse than without the term.
 */
static void h200_pageable_term(void **state)
{
	struct mb_profile p, before;
	struct mb_csv_row *rows, *six = NULL, *full = NULL;
	double lo = 0, hi = 1, err_before, err_after;
	size_t i, n;
	int k;

	(void)state;
	assert_int_equal(mb_profile_load(&before, H200 "profile.json"), 0);
	h200_rows(&rows, &n);
	assert_int_equal(n, 9);
	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].variant, "overlap"))
			*(rows[i].layers == 6 ? &six : &full) = &rows[i];
	assert_non_null(six);
	assert_non_null(full);
	p = before;
	p.pageable_holds_host = true;
	for (k = 0; k < 30; k++) {
		p.pageable_exposed_frac = (lo + hi) / 2;
		*(h200_apply(six, &p) < six->apply_mean_s ? &lo : &hi) = p.pageable_exposed_frac;
	}
	p.pageable_exposed_frac = (lo + hi) / 2;
	print_message("pageable_exposed_frac from the 6-layer overlap cell: %.3f\n",
		      p.pageable_exposed_frac);
	assert_true(p.pageable_exposed_frac > 0.01 && p.pageable_exposed_frac < 0.99);
	assert_true(fabs(h200_apply(full, &p) / full->apply_mean_s - 1) < 0.10);
	for (i = 0; i < n; i++) {
		err_before = h200_apply(&rows[i], &before) / rows[i].apply_mean_s - 1;
		err_after = h200_apply(&rows[i], &p) / rows[i].apply_mean_s - 1;
		print_message("%2llu layers %-8s apply %.3f s: predicted %+.1f%%, before %+.1f%%\n",
			      (unsigned long long)rows[i].layers, rows[i].variant,
			      rows[i].apply_mean_s, 100 * err_after, 100 * err_before);
		assert_true(fabs(err_after) <= fabs(err_before) + 1e-9);
	}
	free(rows);
}

/*
 * Ranks on one host (mb_profile_for_ranks): one rank is the profile itself;
 * eight split the host optimizer and the streaming passes, and their copies
 * share the host memory's traffic (twice memcpy_gbs: 400 GB/s in the
 * reference, 50 a rank pinned, 16.7 pageable), each under its own link's rate.
 */
static void ranks_share_the_host(void **state)
{
	struct mb_profile ref, one, eight;

	(void)state;
	assert_int_equal(mb_profile_load(&ref, "reference"), 0);
	mb_profile_for_ranks(&one, &ref, 1);
	assert_memory_equal(&one, &ref, sizeof(ref));
	mb_profile_for_ranks(&eight, &ref, 8);
	assert_true(fabs(eight.host_opt_gbs - ref.host_opt_gbs / 8) < 1e-9);
	assert_true(fabs(eight.memcpy_gbs - ref.memcpy_gbs / 8) < 1e-9);
	assert_true(fabs(eight.h2d_pinned_gbs - fmin(ref.h2d_pinned_gbs, 50)) < 1e-9);
	assert_true(fabs(eight.d2h_pinned_gbs - fmin(ref.d2h_pinned_gbs, 50)) < 1e-9);
	assert_true(fabs(eight.both_pinned_gbs - fmin(ref.both_pinned_gbs, 50)) < 1e-9);
	assert_true(fabs(eight.both_pageable_gbs - fmin(ref.both_pageable_gbs, 400.0 / 3 / 8)) <
		    1e-9);
	assert_true(eight.h2d_pageable_gbs <= ref.h2d_pageable_gbs);
	/* the device's own rates stay */
	assert_true(eight.momentum_gbs == ref.momentum_gbs &&
		    eight.fwd_bwd_gflops == ref.fwd_bwd_gflops);
	assert_memory_equal(&eight.ns_gram_gflops, &ref.ns_gram_gflops, sizeof(ref.ns_gram_gflops));
	assert_non_null(strstr(eight.name, "a rank of 8"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sync_by_hand),
		cmocka_unit_test(overlap_by_hand),
		cmocka_unit_test(pipeline_by_hand),
		cmocka_unit_test(shared_link_by_hand),
		cmocka_unit_test(overlap_across_commands_by_hand),
		cmocka_unit_test(pageable_holds_host_by_hand),
		cmocka_unit_test(ns_rate_by_size),
		cmocka_unit_test(zero3_by_hand),
		cmocka_unit_test(zero3_batched_by_hand),
		cmocka_unit_test(command_overhead),
		cmocka_unit_test(command_latency),
		cmocka_unit_test(busy_latency_by_hand),
		cmocka_unit_test(enqueue_contention_by_hand),
		cmocka_unit_test(enqueue_by_size_by_hand),
		cmocka_unit_test(host_pass_by_hand),
		cmocka_unit_test(copies_by_size),
		cmocka_unit_test(fwd_bwd_by_pass),
		cmocka_unit_test(host_stream_rate),
		cmocka_unit_test(momentum_bf16_rate),
		cmocka_unit_test(rates_by_size),
		cmocka_unit_test(backward_by_hand),
		cmocka_unit_test(norm_at_its_own_rate),
		cmocka_unit_test(profile_round_trip),
		cmocka_unit_test(bad_profiles),
		cmocka_unit_test(old_profile_refused),
		cmocka_unit_test(reproduces_the_reference),
		cmocka_unit_test(h200_pageable_term),
		cmocka_unit_test(collectives_by_hand),
		cmocka_unit_test(ranks_share_the_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
