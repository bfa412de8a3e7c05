/*
 * The plan: batches under the gather budget, DeepSpeed's sub-groups, the
 * rank's share, the traffic and the predicted step peak, against figures
 * worked out by hand for the tiny model (see the comments).
 */
#include <setjmp.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mb_config.h"
#include "mb_err.h"
#include "mb_plan.h"
#include "mb_variant.h"

static struct mb_model tiny;

static int load_tiny(void **state)
{
	(void)state;
	return mb_config_load_builtin(&tiny, "tiny", 0);
}

static int release_tiny(void **state)
{
	(void)state;
	mb_model_release(&tiny);
	return 0;
}

static struct mb_plan_settings settings(unsigned stage)
{
	struct mb_plan_settings s = {
		.stage = stage,
		.gather_budget_bytes = 512ull << 20,
		.sub_group_size = 1000000000,
		.world_size = 1,
		.rank = 0,
	};
	return s;
}

static void ns_cost(void **state)
{
	(void)state;
	/* m = 256, n = 768: 5 (4 m^2 n + 2 m^3) */
	assert_int_equal(mb_ns_flops(768, 256, MB_NS_STANDARD),
			 5ull * (4 * 256 * 256 * 768 + 2ull * 256 * 256 * 256));
	assert_int_equal(mb_ns_flops(768, 256, MB_NS_STANDARD),
			 mb_ns_flops(256, 768, MB_NS_STANDARD));
	assert_int_equal(mb_ns_flops(1, 1000, MB_NS_STANDARD), 5 * (4 * 1000 + 2));
	/* fp32 (2 m^2 + 2 m n), and 64 partial sums of the norm and the norm */
	assert_int_equal(mb_ns_workspace_bytes(768, 256, MB_NS_STANDARD, MB_PREC_FP32),
			 4 * (2 * 65536 + 2 * 196608 + 65));
	/* at 16 bits the matrices take half, the norm's floats stay */
	assert_int_equal(mb_ns_workspace_bytes(768, 256, MB_NS_STANDARD, MB_PREC_BF16),
			 2 * (2 * 65536 + 2 * 196608) + 4 * 65);
	assert_int_equal(mb_ns_workspace_bytes(768, 256, MB_NS_STANDARD, MB_PREC_FP16),
			 mb_ns_workspace_bytes(768, 256, MB_NS_STANDARD, MB_PREC_BF16));
	/* an odd count of 16-bit elements: the floats start at the next 4 bytes */
	assert_int_equal(mb_ns_scratch_float(7, MB_PREC_BF16), 4);
	assert_int_equal(mb_ns_scratch_float(7, MB_PREC_FP32), 7);
	assert_int_equal(mb_ns_workspace_bytes(1, 3, MB_NS_STANDARD, MB_PREC_FP16),
			 4 * (4 + 65)); /* 2 x 3 + 2 x 1 = 8 halves */
	assert_int_equal(mb_ns_workspace_bytes(1, 1, MB_NS_STANDARD, MB_PREC_FP16),
			 4 * (2 + 65)); /* 4 halves */
	/* 2^24 x 2^24 needs 30 * 2^72: saturated, not wrapped */
	assert_int_equal(mb_ns_flops(1ull << 24, 1ull << 24, MB_NS_STANDARD), UINT64_MAX);
	assert_int_equal(mb_ns_flops(1ull << 24, 1ull << 24, MB_NS_GRAM), UINT64_MAX);
	assert_int_equal(mb_ns_flops(1ull << 23, 1ull << 24, MB_NS_GRAM), UINT64_MAX);
}

/*
 * The Gram method's FLOPs by hand, GEMM by GEMM (2 m n k for m x k by
 * k x n), on an m x n matrix with m < n:
 *   R = X Xᵀ 2m²n; iteration 0: Z 2m³, Q = Z + aI none, RZ and R 2 x 2m³;
 *   1: Z, Q = aQ + ZQ: 2 x 2m³, no R (the restart is next); 2: X = Q X and
 *   R = X Xᵀ 2 x 2m²n, Z 2m³, Q none, RZ and R 2 x 2m³; 3: Z, Q, RZ, R
 *   4 x 2m³; 4: Z, Q 2 x 2m³, no R (the last); X = Q X 2m²n.
 * 2 x 6 (m 2, n 6): 8 x 24 + 2 x 14 x 8 = 192 + 224 = 416, where the
 * standard's is 5 (4 x 24 + 2 x 8) = 560. 48 x 160 (m 48, n 160, m²n
 * 368640, m³ 110592): 8 x 368640 + 28 x 110592 = 2949120 + 3096576 =
 * 6045696, against 5 (4 x 368640 + 2 x 110592) = 8478720.
 */
static void ns_cost_gram(void **state)
{
	struct mb_model m;
	uint64_t gram = 0, standard = 0;
	size_t i;

	(void)state;
	assert_int_equal(mb_ns_flops(2, 6, MB_NS_GRAM), 416);
	assert_int_equal(mb_ns_flops(6, 2, MB_NS_GRAM), 416);
	assert_int_equal(mb_ns_flops(2, 6, MB_NS_STANDARD), 560);
	assert_int_equal(mb_ns_flops(48, 160, MB_NS_GRAM), 6045696);
	assert_int_equal(mb_ns_flops(160, 48, MB_NS_GRAM), 6045696);
	assert_int_equal(mb_ns_flops(48, 160, MB_NS_STANDARD), 8478720);
	/* a square matrix runs the standard iteration: 5 (4 + 2) 64^3 */
	assert_int_equal(mb_ns_flops(64, 64, MB_NS_GRAM), 30 * 262144);
	assert_int_equal(mb_ns_flops(64, 64, MB_NS_STANDARD), 30 * 262144);
	/* workspace: X and the next X, R Z Q P (4 m^2), 65 floats of the norm */
	assert_int_equal(mb_ns_workspace_bytes(48, 160, MB_NS_GRAM, MB_PREC_FP32),
			 4 * (2 * 7680 + 4 * 2304 + 65));
	assert_int_equal(mb_ns_workspace_bytes(64, 64, MB_NS_GRAM, MB_PREC_FP32),
			 mb_ns_workspace_bytes(64, 64, MB_NS_STANDARD, MB_PREC_FP32));
	/* Qwen3-4B per step, one rank: the "about 159 against 211 TFLOP" */
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 0), 0);
	for (i = 0; i < m.nparams; i++)
		if (m.params[i].muon) {
			gram += mb_ns_flops(m.params[i].rows, m.params[i].cols, MB_NS_GRAM);
			standard += mb_ns_flops(m.params[i].rows, m.params[i].cols, MB_NS_STANDARD);
		}
	assert_int_equal(gram, 158812858220544ull);
	assert_int_equal(standard, 211199648071680ull);
	mb_model_release(&m);
}

/*
 * Tiny, 2 MiB budget (262144 elements). Muon matrices in order, per layer:
 * q 65536, k 32768, v 32768, o 65536, gate, up, down 196608 each. Greedy:
 * {q0 k0 v0 o0} 196608 | {gate0} | {up0} | {down0 q1} 262144 | {k1 v1 o1}
 * 131072 | {gate1} | {up1} | {down1}: 8 batches.
 */
static void batches_by_hand(void **state)
{
	static const uint64_t elems[] = { 196608, 196608, 196608, 262144,
					  131072, 196608, 196608, 196608 };
	struct mb_plan_settings s = settings(2);
	struct mb_plan p;
	size_t i;

	(void)state;
	s.gather_budget_bytes = 2 << 20;
	s.order = MB_ORDER_MODEL;
	s.ns_method = MB_NS_STANDARD; /* its workspace, below */
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.ngroups, 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(p.groups[i].gathered_numel, elems[i]);
	assert_int_equal(p.groups[0].matrices, 4);
	assert_int_equal(p.groups[3].matrices, 2);
	assert_int_equal(p.largest_group, 3);
	assert_int_equal(p.matrices, 14);
	/* largest batch; largest adjacent pair (up0 + {down0 q1}) */
	assert_int_equal(p.apply_bytes_sync, 8 * 262144);
	assert_int_equal(p.apply_bytes_overlap, 8 * (196608 + 262144));
	/* pipeline: the largest three in a row (gate0, up0 + {down0 q1}), each batch's own */
	assert_int_equal(p.apply_bytes_pipeline, 8 * (196608 + 196608 + 262144));
	assert_int_equal(p.groups[4].apply_bytes_pipeline, 8 * (262144 + 131072 + 196608));
	assert_int_equal(p.groups[7].apply_bytes_pipeline, 8 * (196608 + 196608));
	/* resident bf16 of all 2,098,688 params; workspace of a 768 x 256 matrix */
	assert_int_equal(p.resident_bytes, 2 * 2098688);
	assert_int_equal(p.ns_workspace_bytes, 2097152 + 260);
	/* and DeepSpeed's temp_grad_buffer_for_gpu_offload: the embedding (1024 x 256) in bf16 */
	assert_int_equal(p.ds_buffer_bytes, 2 * 1024 * 256);
	assert_int_equal(p.peak_step_bytes_sync, 4197376 + 524288 + 2097152 + 2097412);
	assert_int_equal(p.peak_step_bytes_overlap, 4197376 + 524288 + 3670016 + 2097412);
	assert_int_equal(p.peak_step_bytes_pipeline, 4197376 + 524288 + 5242880 + 2097412);
	/* by the variants' table: master 1 batch alive, both 2, pipeline 3 */
	assert_int_equal(mb_plan_peak_step_bytes(&p, mb_variant_alive(MB_MASTER)),
			 p.peak_step_bytes_sync);
	assert_int_equal(mb_plan_peak_step_bytes(&p, mb_variant_alive(MB_BOTH)),
			 p.peak_step_bytes_overlap);
	assert_int_equal(mb_plan_peak_step_bytes(&p, mb_variant_alive(MB_PIPELINE)),
			 p.peak_step_bytes_pipeline);
	mb_plan_release(&p);
}

/*
 * The same by shape, largest first (DeepSpeed's order): gate0 up0 gate1 up1
 * (768 x 256), down0 down1 (256 x 768), q0 o0 q1 o1 (256 x 256), k0 v0 k1
 * v1 (128 x 256). Greedy under 262144 elements: {gate0} | {up0} | {gate1} |
 * {up1} | {down0} | {down1 q0} | {o0 q1 o1 k0 v0} | {k1 v1}.
 */
static void batches_by_shape(void **state)
{
	static const uint64_t elems[] = { 196608, 196608, 196608, 196608,
					  196608, 262144, 262144, 65536 };
	static const size_t matrices[] = { 1, 1, 1, 1, 1, 2, 5, 2 };
	struct mb_plan_settings s = settings(2);
	struct mb_plan p;
	size_t i;

	(void)state;
	s.gather_budget_bytes = 2 << 20;
	assert_int_equal(s.order, MB_ORDER_SHAPE); /* the default */
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.ngroups, 8);
	for (i = 0; i < 8; i++) {
		assert_int_equal(p.groups[i].gathered_numel, elems[i]);
		assert_int_equal(p.groups[i].matrices, matrices[i]);
	}
	assert_non_null(strstr(tiny.params[p.order[0]].name, "layers.0.mlp.gate_proj"));
	assert_non_null(strstr(tiny.params[p.order[3]].name, "layers.1.mlp.up_proj"));
	assert_non_null(strstr(tiny.params[p.order[5]].name, "layers.1.mlp.down_proj"));
	assert_non_null(strstr(tiny.params[p.order[13]].name, "layers.1.self_attn.v_proj"));
	/* the same matrices, bytes and FLOPs as in model order: only the grouping moves */
	assert_int_equal(p.matrices, 14);
	assert_int_equal(p.apply_bytes_sync, 8 * 262144);
	assert_int_equal(p.apply_bytes_overlap, 8 * (262144 + 262144));
	mb_plan_release(&p);
}

/*
 * The backward's bucket: reduce_bucket_size elements of fp32 (DeepSpeed's
 * 5e8 by default), at most the model. ZeRO-1/2 hold the temp_grad_buffer, ZeRO-3
 * its reduce bucket in bf16.
 */
static void bucket_and_ds_buffer(void **state)
{
	struct mb_plan_settings s = settings(2);
	struct mb_plan p;

	(void)state;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.bucket_elems, tiny.numel_total); /* 5e8 is more than tiny */
	/* ZeRO-1/2's reduce bucket in bf16, allocated in the backward */
	assert_int_equal(p.bucket_bf16_bytes, 2 * tiny.numel_total);
	/* the largest piece, the embedding, widened to fp32, all after the GEMMs */
	assert_int_equal(p.piece_during_elems, 0);
	assert_int_equal(p.piece_after_elems, 1024 * 256);
	assert_int_equal(mb_plan_piece_bytes(&p, p.piece_after_elems), 4 * 1024 * 256);
	/* ZeRO-1/2's grads go out once, in fp32 */
	assert_int_equal(p.bwd_d2h_bytes, 4 * tiny.numel_total);
	assert_int_equal(p.bwd_h2d_bytes, 0);
	assert_int_equal(p.host_bytes[MB_HOST_GRADS_BF16], 0);
	mb_plan_release(&p);
	s.reduce_bucket_elems = 1000;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.bucket_bf16_bytes, 2000);
	assert_int_equal(p.piece_after_elems, 1000);
	mb_plan_release(&p);
	/* ZeRO-3 holds its reduce bucket instead: 1000 elements of bf16, every phase, and
	 * fills it: no bucket of the backward's own; a piece in fp32 and back in bf16 */
	s = settings(3);
	s.reduce_bucket_elems = 1000;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_string_equal(p.ds_buffer, "ds.ipg_bucket");
	assert_int_equal(p.ds_buffer_bytes, 2000);
	assert_int_equal(p.bucket_bf16_bytes, 0);
	assert_int_equal(mb_plan_piece_bytes(&p, p.piece_after_elems), (4 + 2) * 1000);
	/* and its grads go out in bf16, back in, and out in fp32 (partition_grads) */
	assert_int_equal(p.host_bytes[MB_HOST_GRADS_BF16], 2 * tiny.numel_total);
	assert_int_equal(p.bwd_d2h_bytes, (2 + 4) * tiny.numel_total);
	assert_int_equal(p.bwd_h2d_bytes, 2 * tiny.numel_total);
	assert_int_equal(p.peak_step_bytes_sync,
			 p.resident_bytes + 2000 + p.apply_bytes_sync + p.ns_workspace_bytes);
	mb_plan_release(&p);
}

/*
 * The backward's pieces: an embedding of 1000 elements, two layers of a
 * (1500) and b (500), a head of 1000; buckets of 1200. Flat: embedding
 * [0, 1000), layer 0 [1000, 3000), layer 1 [3000, 5000), head [5000, 6000).
 * Bucket 2, [2400, 3600), holds 100 of layer 0's a, its b, and 600 of layer
 * 1's a. Buckets 0-2 hold grads of stage 0 (the first layer, the
 * embedding): ZeRO-3 reduces them after the GEMMs, 3 and 4 during them.
 */
static void backward_pieces(void **state)
{
	static const char cfg[] = "{\"parameters\": ["
				  "{\"name\": \"embed.weight\", \"shape\": [10, 100]},"
				  "{\"name\": \"a\", \"shape\": [15, 100], \"repeat\": 2},"
				  "{\"name\": \"b\", \"shape\": [5, 100], \"repeat\": 2},"
				  "{\"name\": \"head.weight\", \"shape\": [10, 100]}]}";
	static const uint64_t want[][2] = { { 2400, 100 }, { 2500, 500 }, { 3000, 600 } };
	struct mb_plan_settings s = settings(3);
	struct mb_plan_piece piece = { 0 };
	struct mb_model m;
	struct mb_plan p;
	size_t n = 0;

	(void)state;
	assert_int_equal(mb_config_parse(&m, cfg, strlen(cfg), "pieces", 0), 0);
	s.reduce_bucket_elems = 1200;
	s.tokens = 64;
	assert_int_equal(mb_plan_build(&p, &m, &s), 0);
	assert_int_equal(mb_plan_nbuckets(&p, &m), 5);
	while (mb_plan_next_piece(&p, &m, 2, &piece)) {
		assert_true(n < 3);
		assert_int_equal(piece.off, want[n][0]);
		assert_int_equal(piece.len, want[n][1]);
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(mb_plan_bucket_stage(&p, &m, 2), 0);
	assert_int_equal(mb_plan_bucket_stage(&p, &m, 3), 1);
	assert_int_equal(mb_plan_reduced_after(&p, &m, true), 3);
	assert_int_equal(mb_plan_reduced_after(&p, &m, false), 5);
	/* during: layer 1's a (900), b (300, 200) and the head (1000); after: layer 0's a
	 * fills bucket 1 */
	assert_int_equal(p.piece_during_elems, 1000);
	assert_int_equal(p.piece_after_elems, 1200);
	assert_int_equal(mb_plan_largest_piece(&p, &m, 2, 3), 600);
	assert_int_equal(mb_plan_largest_piece(&p, &m, 4, 5), 1000);
	mb_plan_release(&p);
	/* ZeRO-1/2 reduce every bucket after the GEMMs */
	s.stage = 2;
	assert_int_equal(mb_plan_build(&p, &m, &s), 0);
	assert_int_equal(mb_plan_reduced_after(&p, &m, true), 5);
	assert_int_equal(p.piece_during_elems, 0);
	assert_int_equal(p.piece_after_elems, 1200);
	mb_plan_release(&p);
	mb_model_release(&m);
}

/* Every Muon matrix lands in exactly one batch, in order, and batching is greedy. */
static void batches_cover_qwen3_4b(void **state)
{
	struct mb_plan_settings s = settings(2);
	struct mb_model m;
	struct mb_plan p;
	size_t i, g, seen = 0;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 0), 0);
	assert_int_equal(mb_plan_build(&p, &m, &s), 0);
	for (g = 0; g < p.ngroups; g++) {
		uint64_t n = 0;

		for (i = p.groups[g].first; i < p.groups[g].end; i++) {
			const struct mb_param *q = &m.params[p.order[i]];

			assert_true(q->muon);
			/* by shape, largest first */
			if (i)
				assert_true(m.params[p.order[i - 1]].rows > q->rows ||
					    (m.params[p.order[i - 1]].rows == q->rows &&
					     m.params[p.order[i - 1]].cols >= q->cols));
			n += mb_param_numel(q);
			seen++;
		}
		assert_int_equal(n, p.groups[g].gathered_numel);
		assert_true(8 * n <= s.gather_budget_bytes);
		if (g + 1 < p.ngroups) {
			assert_int_equal(p.groups[g].end, p.groups[g + 1].first);
			/* the next batch's first matrix did not fit */
			assert_true(8 * (n + mb_param_numel(
						     &m.params[p.order[p.groups[g + 1].first]])) >
				    s.gather_budget_bytes);
		}
	}
	assert_int_equal(seen, m.nparams_muon);
	assert_int_equal(p.matrices, m.nparams_muon);
	/* docs/design.md's check figure: 14.5 GB of fp32 momentum */
	assert_int_equal(p.host_bytes[MB_HOST_MOMENTUM], 4 * 3633315840ull);
	assert_int_equal(p.apply_h2d_bytes, 8 * 3633315840ull);
	assert_int_equal(mb_plan_pinned_bytes(&p, true) - mb_plan_pinned_bytes(&p, false),
			 p.host_bytes[MB_HOST_MOMENTUM]);
	mb_plan_release(&p);
	mb_model_release(&m);
}

static void budget_below_largest_matrix(void **state)
{
	struct mb_plan_settings s = settings(2);
	struct mb_plan p;

	(void)state;
	s.gather_budget_bytes = 1 << 20;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "gather budget 1.00 MiB (1048576 bytes) is smaller than the largest "
			    "Muon matrix: 'model.layers.0.mlp.gate_proj.weight' (768x256) needs "
			    "1.50 MiB (1572864 bytes) for its fp32 grads and fp32 momentum; raise "
			    "--gather-budget");
	assert_null(p.groups);
	/* exactly the largest matrix fits */
	s.gather_budget_bytes = 8 * 196608;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	mb_plan_release(&p);
	/* ZeRO-3 batched counts a bf16 momentum and the bf16 grad copy too: the message says so */
	s = settings(3);
	s.zero3_apply = MB_Z3_BATCHED;
	s.momentum_dtype = MB_MOM_BF16;
	s.gather_budget_bytes = 1200 << 10;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), -MB_EINPUT);
	assert_string_equal(
		mb_errmsg(),
		"gather budget 1.17 MiB (1228800 bytes) is smaller than the largest "
		"Muon matrix: 'model.layers.0.mlp.gate_proj.weight' (768x256) needs "
		"1.50 MiB (1572864 bytes) for its fp32 grads, bf16 momentum and the bf16 "
		"copy of its grads; raise --gather-budget");
	assert_null(p.groups);
}

/*
 * Tiny, stage 3, sub_group_size 300000, over the Muon matrices in order
 * (q 65536, k 32768, v 32768, o 65536, gate, up, down 196608 each):
 * {q0 k0 v0 o0 gate0} 393216 | {up0 down0} 393216 | {q1 .. gate1} | {up1 down1}.
 */
static void sub_groups_by_hand(void **state)
{
	struct mb_plan_settings s = settings(3);
	struct mb_plan p;
	size_t i;

	(void)state;
	s.sub_group_size = 300000;
	s.order = MB_ORDER_MODEL;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.ngroups, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(p.groups[i].gathered_numel, 393216);
	assert_int_equal(p.groups[0].matrices, 5);
	assert_int_equal(p.groups[1].matrices, 2);
	/* the last sub-group ends at the last Muon matrix, before the norms */
	assert_string_equal(tiny.params[p.order[p.groups[3].end - 1]].name,
			    "model.layers.1.mlp.down_proj.weight");
	/* sub-group (with the bf16 copy of its grads) + one update buffer of the
	 * largest matrix (196608) */
	assert_int_equal(p.apply_bytes_sync, (8 + 2) * 393216 + 4 * 196608);
	/* overlapped: two adjacent updates alive, up0 + down0 */
	assert_int_equal(p.apply_bytes_overlap, (8 + 2) * 393216 + 4 * 393216);
	mb_plan_release(&p);

	/*
	 * By shape (the default): {gate0 up0} | {gate1 up1} | {down0 down1}
	 * 393216 each | {q0 o0 q1 o1 k0 v0} 327680 | {k1 v1} 65536.
	 */
	s.order = MB_ORDER_SHAPE;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.ngroups, 5);
	for (i = 0; i < 3; i++)
		assert_int_equal(p.groups[i].gathered_numel, 393216);
	assert_int_equal(p.groups[3].gathered_numel, 327680);
	assert_int_equal(p.groups[3].matrices, 6);
	assert_int_equal(p.groups[4].gathered_numel, 65536);
	mb_plan_release(&p);

	/* the default 1e9 holds the whole tiny model in one sub-group */
	s.sub_group_size = 1000000000;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.ngroups, 1);
	assert_int_equal(p.groups[0].gathered_numel, tiny.numel_muon);
	mb_plan_release(&p);
}

/*
 * ZeRO-3 batched: greedy batches under the gather budget (counting the bf16
 * grad copy), each inside one of the sub-groups that --zero3-apply subgroup
 * gathers whole, covering them; with a budget that holds a sub-group, the
 * batches are the sub-groups.
 */
static void zero3_batches_within_sub_groups(void **state)
{
	struct mb_plan_settings s = settings(3);
	struct mb_plan sub, p;
	size_t g, j = 0;

	(void)state;
	s.sub_group_size = 300000;
	assert_int_equal(mb_plan_build(&sub, &tiny, &s), 0);
	s.zero3_apply = MB_Z3_BATCHED;
	s.gather_budget_bytes = 10 * 200000; /* 10 B an element: fp32 grad + momentum + bf16 */
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_true(p.ngroups > sub.ngroups);
	for (g = 0; g < p.ngroups; g++) {
		const struct mb_plan_group *b = &p.groups[g], *in;

		while (b->first >= sub.groups[j].end)
			j++;
		in = &sub.groups[j];
		assert_int_equal(b->subgroup, j);
		assert_true(b->first >= in->first && b->end <= in->end);
		assert_true(b->apply_bytes_sync == 10 * b->gathered_numel);
		assert_true(b->apply_bytes_sync <= s.gather_budget_bytes);
		/* greedy: the next matrix of its sub-group did not fit */
		if (b->end < in->end)
			assert_true(10 * (b->gathered_numel +
					  mb_param_numel(&tiny.params[p.order[b->end]])) >
				    s.gather_budget_bytes);
		if (g + 1 < p.ngroups)
			assert_int_equal(p.groups[g + 1].first, b->end);
	}
	assert_int_equal(p.groups[p.ngroups - 1].end, sub.groups[sub.ngroups - 1].end);
	mb_plan_release(&p);
	s.gather_budget_bytes = 512ull << 20;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), 0);
	assert_int_equal(p.ngroups, sub.ngroups);
	for (g = 0; g < p.ngroups; g++) {
		assert_int_equal(p.groups[g].first, sub.groups[g].first);
		assert_int_equal(p.groups[g].end, sub.groups[g].end);
	}
	mb_plan_release(&p);
	mb_plan_release(&sub);
}

/* Qwen3-4B's ZeRO-3 step peak batched is about ZeRO-2's (within 5%), not twice it. */
static void zero3_batched_peak_near_zero2(void **state)
{
	struct mb_plan_settings s = settings(2);
	struct mb_model m;
	struct mb_plan p;
	uint64_t z2, z3, z3b;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 0), 0);
	assert_int_equal(mb_plan_build(&p, &m, &s), 0);
	z2 = p.peak_step_bytes_overlap;
	mb_plan_release(&p);
	s = settings(3);
	s.momentum_dtype = MB_MOM_BF16;
	assert_int_equal(mb_plan_build(&p, &m, &s), 0);
	z3 = p.peak_step_bytes_overlap;
	mb_plan_release(&p);
	s.zero3_apply = MB_Z3_BATCHED;
	assert_int_equal(mb_plan_build(&p, &m, &s), 0);
	z3b = p.peak_step_bytes_overlap;
	mb_plan_release(&p);
	assert_true(z3 > 1.5 * z2);
	assert_true(z3b < 1.05 * z2 && z3b > 0.95 * z2);
	mb_model_release(&m);
}

/* Two ranks: the shares add up to the model, and each element has one owner. */
static void ranks_share_the_model(void **state)
{
	struct mb_plan_settings s;
	struct mb_plan p[2];
	unsigned stage, r;

	(void)state;
	for (stage = 1; stage <= 3; stage++) {
		s = settings(stage);
		s.world_size = 2;
		for (r = 0; r < 2; r++) {
			s.rank = r;
			assert_int_equal(mb_plan_build(&p[r], &tiny, &s), 0);
		}
		/* tiny's sizes are all even: no padding under ZeRO-3 either */
		assert_int_equal(p[0].local_muon + p[1].local_muon, tiny.numel_muon);
		assert_int_equal(p[0].local_adamw + p[1].local_adamw, tiny.numel_adamw);
		assert_int_equal(p[0].local_muon, p[1].local_muon);
		if (stage == 3) {
			/* every rank gathers every matrix; resident params are the share */
			assert_int_equal(p[0].matrices, 14);
			assert_int_equal(p[0].resident_bytes, 2 * p[0].local_numel);
		} else {
			/* the Muon range splits at 786432: gate and up to rank 0 */
			assert_int_equal(p[0].matrices + p[1].matrices, 14);
			assert_int_equal(p[0].resident_bytes, 2 * tiny.numel_total);
		}
		assert_int_equal(p[1].apply_h2d_bytes, 8 * p[1].local_muon);
		mb_plan_release(&p[0]);
		mb_plan_release(&p[1]);
	}
}

static void bad_settings(void **state)
{
	struct mb_plan_settings s = settings(2);
	struct mb_plan p;

	(void)state;
	s.world_size = 2;
	s.rank = 2;
	assert_int_equal(mb_plan_build(&p, &tiny, &s), -MB_EINPUT);
	assert_string_equal(mb_errmsg(), "rank 2 is outside a world of 2 ranks (ranks are 0 to 1)");
	s = settings(4);
	assert_int_equal(mb_plan_build(&p, &tiny, &s), -MB_EINPUT);
}

/*
 * DeepSpeed's defaults by stage; a stage outside 1-3 takes the nearest
 * stage's, never the knob table's -1 for a stage it has no word for.
 */
static void stage_defaults(void **state)
{
	(void)state;
	assert_int_equal(mb_params_back_default(1), MB_BACK_PINNED);
	assert_int_equal(mb_params_back_default(2), MB_BACK_PINNED);
	assert_int_equal(mb_params_back_default(3), MB_BACK_PAGEABLE);
	assert_int_equal(mb_momentum_dtype_default(1), MB_MOM_FP32);
	assert_int_equal(mb_momentum_dtype_default(2), MB_MOM_FP32);
	assert_int_equal(mb_momentum_dtype_default(3), MB_MOM_BF16);
	assert_int_equal(mb_params_back_default(0), MB_BACK_PINNED);
	assert_int_equal(mb_momentum_dtype_default(0), MB_MOM_FP32);
	assert_int_equal(mb_params_back_default(4), MB_BACK_PAGEABLE);
	assert_int_equal(mb_momentum_dtype_default(4), MB_MOM_BF16);
	assert_int_equal(mb_params_back_default(UINT_MAX), MB_BACK_PAGEABLE);
	assert_int_equal(mb_momentum_dtype_default(UINT_MAX), MB_MOM_BF16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ns_cost),
		cmocka_unit_test(ns_cost_gram),
		cmocka_unit_test(batches_by_hand),
		cmocka_unit_test(batches_by_shape),
		cmocka_unit_test(bucket_and_ds_buffer),
		cmocka_unit_test(backward_pieces),
		cmocka_unit_test(zero3_batches_within_sub_groups),
		cmocka_unit_test(zero3_batched_peak_near_zero2),
		cmocka_unit_test(batches_cover_qwen3_4b),
		cmocka_unit_test(budget_below_largest_matrix),
		cmocka_unit_test(sub_groups_by_hand),
		cmocka_unit_test(ranks_share_the_model),
		cmocka_unit_test(bad_settings),
		cmocka_unit_test(stage_defaults),
	};

	return cmocka_run_group_tests_name("plan", tests, load_tiny, release_tiny);
}
