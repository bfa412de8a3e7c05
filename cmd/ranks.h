/*
 * ranks: what run does with its ranks (lib/mb_ranks) beyond the library's
 * collectives: the options agreed with MPI's world, the setup and each
 * run's end agreed on, each rank's share of the model for the cell.
 */
#ifndef MB_CMD_RANKS_H
#define MB_CMD_RANKS_H

#include <stdbool.h>

#include "mb_model.h"
#include "mb_plan.h"
#include "mb_ranks.h"
#include "options.h"

/*
 * The ranks of this run into *R, and ARGS (run's own copy) as they say:
 * under MPI, --world-size and --rank are MPI's (given, they must agree, a
 * refusal agreed on as mb_run_ranks_agree's), and the local rank picks the
 * GPU unless --device names one.
 */
int mb_run_ranks_init(struct mb_ranks *r, struct mb_args *args);

/*
 * Under MPI, whether every rank was given the same options that shape the
 * grid and the step (all of run's but those that are each rank's own: its
 * device, binding, output, ...; mb_args_run_option): a digest of each
 * option's value, rank 0's against each rank's. Where they differ, every
 * rank returns -MB_EINPUT, rank 0's message naming the first option that
 * differs, its value on rank 0 and on the lowest rank that differs.
 */
int mb_run_ranks_same(struct mb_ranks *r, const struct mb_args *args);

/*
 * The ranks agree on ERR, this rank's setup (or any step before the runs):
 * 0 where every rank is well. Bad input on any rank (-MB_EINPUT): every
 * rank returns -MB_EINPUT, rank 0 with the reason (naming the rank, if
 * another), the others quiet (MB_KIND_SAID_ELSEWHERE). Else this rank's own
 * error, or a failure naming the rank that failed and why.
 */
int mb_run_ranks_agree(struct mb_ranks *r, int err);

/*
 * A run ended on this rank, RUN_ERR its status (its message recorded) and
 * SIGNALED whether a signal stopped it, after STEPS steps were asked: the
 * ranks agree on it. Returns RUN_ERR, or where another rank failed,
 * -MB_EFAIL saying which and why; *ENDED: a rank failed, and no rank runs
 * again; *STOPPED: a rank was signaled (this one or another, after the
 * run's last step boundary too), and every rank ends the grid after this run.
 */
int mb_run_ranks_end(struct mb_ranks *r, unsigned steps, int run_err, bool signaled, bool *ended,
		     bool *stopped);

/*
 * Whether the cell fits on every rank: OK is this rank's mb_fit_check (1
 * fits, 0 does not with REASON, < 0 its error); it becomes the ranks'
 * agreement, REASON the first rank's that does not fit, named.
 */
int mb_run_ranks_fit(struct mb_ranks *r, int ok, char *reason, size_t len);

/*
 * *MODEL as rank ARGS->rank of ARGS->world_size holds it for STAGE
 * (mb_shard), from FULL, when the world has more than one rank; a world of
 * one keeps *MODEL. *SHARD_STAGE says which stage *MODEL holds (0: FULL's
 * copy or none yet).
 */
int mb_run_ranks_shard(const struct mb_args *args, const struct mb_model *full,
		       struct mb_model *model, unsigned stage, unsigned *shard_stage);

#endif
