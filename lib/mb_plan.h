/*
 * mb_plan: what one rank's training step will allocate, copy and compute,
 * worked out from the model and the settings alone, without a device.
 *
 * The rank's share: under ZeRO-1/2 the Muon and the AdamW parameters are
 * each flattened and split into world_size equal ranges (the rank owns one);
 * under ZeRO-3 every parameter is split into world_size slices of
 * ceil(numel / world_size). Muon needs whole matrices, so each matrix the
 * rank owns a piece of is gathered whole on the device; the pieces that come
 * from other ranks are not replayed (no communication), only this rank's
 * elements cross its bus.
 *
 * The Muon apply goes through the Muon parameters in the apply order: by
 * shape, largest first (rows, then columns, ties in model order), as
 * DeepSpeed's Muon builds its parameter group (--param-order shape), or in
 * model order (--param-order model). ZeRO-1/2 in batches (greedy, in that
 * order) whose gathered grads + momentum (8 bytes an element) stay within
 * the gather budget; ZeRO-3 in DeepSpeed's sub-groups of the Muon parameter
 * group (in that order, a sub-group closes once it holds sub_group_size
 * local elements), each gathering its matrices at once, then writing each
 * matrix's update into a buffer of its own; or (--zero3-apply batched) in
 * batches as ZeRO-1/2's, cut at the sub-groups' ends as well. The Muon group is flattened in
 * that order too: the ZeRO-1/2 shares and the momentum's layout follow it.
 *
 * Device memory of the step phase, which the run's ledger must match:
 *   resident bf16 params (the whole model under ZeRO-1/2, the share under 3)
 * + DeepSpeed's resident offload buffer (ds_buffer): under ZeRO-1/2 its
 *   temp_grad_buffer_for_gpu_offload, the largest parameter in bf16; under
 *   ZeRO-3 its reduce bucket (ipg_buckets' buffer, contiguous_gradients on),
 *   reduce_bucket_size elements in bf16; at most the model here
 * + apply buffers at their largest: a batch (plus the previous one still in
 *   flight when the writeback overlaps), or a sub-group (with the bf16 copy
 *   of its grads, mb_plan_subgroup_bytes) plus one update buffer (two when it
 *   overlaps)
 * + the Newton-Schulz workspace of the largest matrix (mb_ns_workspace_bytes).
 * CLBlast's temporary buffers are not included: their size depends on the
 * device and its tuning.
 */
#ifndef MB_PLAN_H
#define MB_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_knob.h"
#include "mb_model.h"
#include "mb_ns.h"
#include "mb_words.h"

/* DeepSpeed's default reduce_bucket_size, in elements. */
#define MB_PLAN_REDUCE_BUCKET 500000000ull

/*
 * The names of the knobs' words the plan takes (the enums and their lists:
 * mb_knob.h), for the commands that print a plan's settings.
 */
extern const char *const mb_param_order_names[MB_NORDERS];	  /* "shape", "model" */
extern const char *const mb_zero3_apply_names[MB_NZ3_APPLIES];	  /* "subgroup", "batched" */
extern const char *const mb_momentum_dtype_names[MB_NMOM_DTYPES]; /* "fp32", "bf16" */
extern const char *const mb_params_back_names[MB_NBACKS];	  /* "pinned", "pageable" */

/*
 * STAGE within 1-3, as the knob table's stage words are read: 0 as ZeRO-1,
 * past 3 as ZeRO-3. The parsers refuse such a stage before anything is
 * planned; the clamp keeps the defaults below one of their enum's words,
 * never mb_knob_word_at's -1 for a stage it has no word for.
 */
static inline unsigned mb_plan_stage_clamped(unsigned stage)
{
	return stage < 1 ? 1 : stage > 3 ? 3 : stage;
}

/* DeepSpeed's for STAGE (mb_knob.h's row): pinned under ZeRO-1/2, pageable under ZeRO-3. */
static inline enum mb_params_back mb_params_back_default(unsigned stage)
{
	return (enum mb_params_back)mb_knob_word_at(MB_KNOB_PARAMS_BACK, "auto",
						    mb_plan_stage_clamped(stage));
}

/* DeepSpeed's for STAGE (mb_knob.h's row): fp32 under ZeRO-1/2, bf16 under ZeRO-3. */
static inline enum mb_momentum_dtype mb_momentum_dtype_default(unsigned stage)
{
	return (enum mb_momentum_dtype)mb_knob_word_at(MB_KNOB_MOMENTUM_DTYPE, "auto",
						       mb_plan_stage_clamped(stage));
}

struct mb_plan_settings {
	unsigned stage;		   /* 1, 2 or 3 */
	enum mb_param_order order; /* of the Muon parameters in the apply */
	enum mb_momentum_dtype momentum_dtype;
	enum mb_ns_method ns_method; /* Newton-Schulz's (the FLOPs and the workspace follow it) */
	enum mb_precision ns_precision;	 /* of its GEMMs (mb_ns): the workspace 16-bit at bf16, fp16
					  */
	uint64_t ns_rate_gflops;	 /* calibrated Newton-Schulz at this rate (mb_ns); 0: off */
	enum mb_params_back params_back; /* pageable: the staging is never pinned */
	enum mb_zero3_apply zero3_apply; /* stage 3 */
	uint64_t gather_budget_bytes;	 /* stage 1/2 */
	uint64_t sub_group_size;	 /* elements, stage 3 */
	uint64_t pin_chunk_bytes; /* most bytes of one pinned chunk of a host buffer; 0: no limit */
	/* the backward's gradient bucket (reduce_bucket_size); 0: 5e8 */
	uint64_t reduce_bucket_elems;
	uint64_t tokens; /* of the synthetic forward/backward (seq x micro-batch); 0: none */
	unsigned world_size, rank;
};

/* Whether S's Muon apply is in batches under the gather budget (ZeRO-1/2, or ZeRO-3 batched). */
static inline bool mb_plan_batched(const struct mb_plan_settings *s)
{
	return s->stage != 3 || s->zero3_apply == MB_Z3_BATCHED;
}

/* A batch (stage 1/2, or 3 batched) or a sub-group (stage 3) of the Muon apply. */
struct mb_plan_group {
	size_t first, end;	 /* its parameters: order[first..end) of the plan */
	size_t subgroup;	 /* stage 3: the DeepSpeed sub-group it is (or is part of) */
	size_t matrices;	 /* Muon matrices gathered */
	uint64_t gathered_numel; /* their elements, whole matrices */
	uint64_t local_numel;	 /* this rank's elements of them */
	uint64_t apply_bytes_sync, apply_bytes_overlap; /* device bytes at its peak */
	/* with the next batch arriving too (batched applies; a sub-group: as overlap) */
	uint64_t apply_bytes_pipeline;
};

enum mb_host_buffer {
	MB_HOST_MASTER,	  /* fp32 master params */
	MB_HOST_GRADS,	  /* fp32 grads; the update comes back into them */
	MB_HOST_MOMENTUM, /* fp32 Muon momentum */
	MB_HOST_ADAMW,	  /* fp32 AdamW exp_avg and exp_avg_sq */
	MB_HOST_STAGING,  /* bf16 params on their way to the device */
	/* ZeRO-3: the bf16 grads that the backward copies out and back in
	 * (stage3.py's grad_partitions_flat_buffer); empty under ZeRO-1/2 */
	MB_HOST_GRADS_BF16,
	MB_HOST_NBUFFERS
};

struct mb_plan {
	struct mb_plan_settings set;
	uint64_t local_numel, local_muon, local_adamw; /* this rank's share */
	uint64_t momentum_bytes;		       /* of one momentum element: 4 or 2 */
	uint64_t host_bytes[MB_HOST_NBUFFERS];
	size_t host_chunks[MB_HOST_NBUFFERS]; /* pinned chunks under pin_chunk_bytes (on the bus) */
	uint64_t *local;		      /* this rank's elements of each parameter */

	size_t *order; /* the Muon parameters (model table indices), applied so */
	size_t norder; /* the Muon parameters this rank works on */
	struct mb_plan_group *groups;
	size_t ngroups, largest_group; /* largest: by gathered elements */
	size_t matrices;	       /* Muon matrices this rank orthogonalizes */

	/* bytes across the bus per step (ZeRO-3's backward: its bf16 grads out and back in) */
	uint64_t bwd_d2h_bytes, bwd_h2d_bytes, apply_h2d_bytes, apply_d2h_bytes, params_h2d_bytes;
	uint64_t ns_flops; /* per step */

	/*
	 * The backward stand-in's gradient buckets (bucket_elems, at most the model) and its
	 * device bytes: the bf16 bucket it fills (bucket_bf16_bytes: ZeRO-1/2's reduce
	 * bucket, allocated in the backward; 0 under ZeRO-3, which fills its resident one,
	 * ds_buffer), the MB_NS_PARTIALS partial sums of each bucket's gradient norm, and
	 * each bucket's pieces in turn (mb_plan_next_piece): the largest of those reduced
	 * during the backward's GEMMs and of those reduced after them, 0 where none
	 * (mb_plan_reduced_after), whose buffers are mb_plan_piece_bytes
	 */
	uint64_t bucket_elems, bucket_bf16_bytes, norm_bytes;
	uint64_t piece_during_elems, piece_after_elems;

	/* device bytes of the step phase */
	uint64_t resident_bytes, ns_workspace_bytes;
	/* DeepSpeed's resident offload buffer, held from the start: its ledger tag and bytes */
	const char *ds_buffer;
	uint64_t ds_buffer_bytes;
	/* by how many batches are alive at once: 1 (sync), 2 (overlap), 3 (pipeline) */
	uint64_t apply_bytes_sync, apply_bytes_overlap, apply_bytes_pipeline;
	uint64_t peak_step_bytes_sync, peak_step_bytes_overlap, peak_step_bytes_pipeline;

	/*
	 * Device bytes of the forward and the backward, CLBlast's temporaries
	 * aside: the resident buffers and the workspace, plus the forward's
	 * activations (0 without tokens), or in the backward the larger of all
	 * the forward/backward's buffers with the stand-in's for the buckets
	 * reduced during the GEMMs, and the stand-in's for those reduced after.
	 */
	uint64_t peak_forward_bytes, peak_backward_bytes;
};

/* Device bytes of NUMEL gathered Muon elements: fp32 grad + the momentum. */
static inline uint64_t mb_plan_gathered_bytes(const struct mb_plan *plan, uint64_t numel)
{
	return (4 + plan->momentum_bytes) * numel;
}

/*
 * Device bytes of a ZeRO-3 sub-group of NUMEL elements: its fp32 grads and
 * its momentum, gathered, and the bf16 copy of its grads that DeepSpeed's
 * _apply_muon_updates_cpu_offload holds with them (deepspeed-data-path.md).
 */
static inline uint64_t mb_plan_subgroup_bytes(const struct mb_plan *plan, uint64_t numel)
{
	return mb_plan_gathered_bytes(plan, numel) + 2 * numel;
}

/*
 * Device bytes of one batch of NUMEL elements: its grads and momentum, and
 * under ZeRO-3 the bf16 copy of its grads as well. The gather budget bounds it.
 */
static inline uint64_t mb_plan_batch_bytes(const struct mb_plan *plan, uint64_t numel)
{
	return plan->set.stage == 3 ? mb_plan_subgroup_bytes(plan, numel)
				    : mb_plan_gathered_bytes(plan, numel);
}

/*
 * Whether the backward's gradient buckets are reduced on a stream of their
 * own while the backward's GEMMs go on: DeepSpeed's overlap_comm, whose
 * default is on for ZeRO-3 only (config.py's overlap_comm_valid). Under
 * ZeRO-1/2 the reduce and the copy to the host run on the backward's own
 * stream (stage_1_and_2.py's reduce_ipg_grads): after the GEMMs or between
 * them, the same time.
 */
static inline bool mb_plan_reduce_overlaps(const struct mb_plan_settings *s)
{
	return s->stage == 3;
}

/*
 * The backward's gradient buckets: bucket K holds the flat grads' elements
 * [K x bucket_elems, (K + 1) x bucket_elems), the last one shorter. The
 * backward makes the grads in the model's reverse order: first the head's
 * (stage M->layers: every parameter outside the layers that comes after
 * them), then layer L's at stage L, from the last layer down; the
 * parameters outside the layers that come before them (the embedding) at
 * stage 0, with the first layer. A bucket is complete, and can be reduced,
 * at the stage of its last-made parameter: the lowest stage among those it
 * holds. It falls as K falls.
 */
uint64_t mb_plan_nbuckets(const struct mb_plan *plan, const struct mb_model *m);
unsigned mb_plan_bucket_stage(const struct mb_plan *plan, const struct mb_model *m, uint64_t k);

/*
 * How many buckets (0 .. that - 1) are reduced after the backward's GEMMs,
 * the others during them; GEMMS: whether the forward/backward runs. All of
 * them where the reduce does not overlap the GEMMs (mb_plan_reduce_overlaps)
 * or there are none; else those that hold grads of stage 0 (the first layer
 * and the embedding), which the backward's last GEMMs make: DeepSpeed
 * reduces its last buckets in independent_gradient_partition_epilogue,
 * once the backward is done and its activations are gone.
 */
uint64_t mb_plan_reduced_after(const struct mb_plan *plan, const struct mb_model *m, bool gemms);

/*
 * A piece of a bucket: the elements [OFF, OFF + LEN) of the flat grads that
 * one parameter (PARAM, which starts at START) has in it. The stand-in
 * reduces a bucket a piece at a time, as DeepSpeed reduces its bucket a
 * parameter at a time (stage3.py's partition_grads, stage_1_and_2.py's
 * copy_grads_in_partition).
 */
struct mb_plan_piece {
	uint64_t off, len;
	size_t param;
	uint64_t start;
};

/*
 * The next piece of bucket K into *P, in the flat grads' order: the first
 * when *P is zeroed. False after the last.
 */
bool mb_plan_next_piece(const struct mb_plan *plan, const struct mb_model *m, uint64_t k,
			struct mb_plan_piece *p);

/* The largest piece of buckets [FIRST, END), in elements (0: none). */
uint64_t mb_plan_largest_piece(const struct mb_plan *plan, const struct mb_model *m, uint64_t first,
			       uint64_t end);

/*
 * Device bytes of the buffers that reduce a piece of ELEMS elements: its
 * grads in fp32 (DeepSpeed's fp32 copy before the copy to the host) and,
 * under ZeRO-3, its bf16 grads back from the host (partition_grads'
 * grad_buffer.to(device)).
 */
static inline uint64_t mb_plan_piece_bytes(const struct mb_plan *plan, uint64_t elems)
{
	return (plan->set.stage == 3 ? 4 + 2 : 4) * elems;
}

/* Host buffer names for people ("master params (fp32)"). */
extern const char *const mb_host_buffer_names[MB_HOST_NBUFFERS];

/* Whether buffer B crosses the bus (and so is pinned when pin_memory is on). */
bool mb_host_buffer_on_bus(enum mb_host_buffer b);

/*
 * Work out the plan of model M under S into *plan (owned by the caller,
 * released with mb_plan_release). Bad settings (a gather budget below the
 * largest matrix, a rank outside the world) are -MB_EINPUT, naming the
 * culprit.
 */
int mb_plan_build(struct mb_plan *plan, const struct mb_model *m, const struct mb_plan_settings *s);

void mb_plan_release(struct mb_plan *plan);

/*
 * Where host buffer B is cut when pinned: the ends of its chunks (byte
 * offsets, rising, the last one its size), each at most LIMIT bytes (0: no
 * limit), cut only between parameters (in the buffer's layout: the momentum
 * in the apply order, the others in model order): a parameter larger than LIMIT is a
 * chunk of its own. Into CUTS (room for the model's parameters + 1; NULL
 * only counts); returns the number of chunks (at least 1).
 */
size_t mb_plan_host_cuts(const struct mb_plan *plan, const struct mb_model *m,
			 enum mb_host_buffer b, uint64_t limit, uint64_t *cuts);

/* The largest parameter of host buffer B, in bytes: its largest pinned chunk can be no less. */
uint64_t mb_plan_host_largest_piece(const struct mb_plan *plan, const struct mb_model *m,
				    enum mb_host_buffer b);

/* Pinned host bytes with pin_memory on; the momentum only if MOMENTUM_PINNED. */
uint64_t mb_plan_pinned_bytes(const struct mb_plan *plan, bool momentum_pinned);

/*
 * The step peak with ALIVE batches of the apply alive at once (a variant's
 * mb_variant_alive): 1 synchronous, 2 overlapped, 3 with the next prefetched.
 */
static inline uint64_t mb_plan_peak_step_bytes(const struct mb_plan *plan, unsigned alive)
{
	return alive <= 1   ? plan->peak_step_bytes_sync
	       : alive == 2 ? plan->peak_step_bytes_overlap
			    : plan->peak_step_bytes_pipeline;
}

#endif
