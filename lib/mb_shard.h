/*
 * mb_shard: one rank's share of a model, as a model of its own, for the
 * one-rank step (mb_step replays a world of one: mb_state_init sets
 * world_size 1). Until the step itself takes a rank's partition from its
 * plan, a rank of a world of W runs the model this module cuts for it:
 *
 *   - every Muon matrix the rank owns elements of (mb_plan's share), whole:
 *     the rank orthogonalizes it, as DeepSpeed's owners do (ZeRO-1/2: the
 *     matrices overlapping its range, a boundary matrix by each owner;
 *     ZeRO-3: every matrix, redundantly);
 *   - its elements of each AdamW parameter, as a 1-D parameter.
 *
 * What this replays exactly: the rank's AdamW share, and under ZeRO-1/2 its
 * Muon share but for its (at most two) boundary matrices. What it does not:
 * under ZeRO-3 a rank copies whole Muon matrices (W times its share) where
 * DeepSpeed copies its slice and all-gathers on the device; the resident
 * bf16 params, the synthetic forward/backward and DeepSpeed's offload
 * buffer are the shard's, not the whole model's. docs/mpi.md says so.
 */
#ifndef MB_SHARD_H
#define MB_SHARD_H

#include "mb_model.h"
#include "mb_plan.h"

/*
 * Rank SET->rank of SET->world_size's share of model M under SET (its
 * stage, order), into *OUT (a new model, named as M, which the caller
 * releases with mb_model_release). A world of one: a copy of M. Errors:
 * the plan's (a rank outside the world is -MB_EINPUT), or host memory.
 */
int mb_shard_model(struct mb_model *out, const struct mb_model *m,
		   const struct mb_plan_settings *set);

#endif
