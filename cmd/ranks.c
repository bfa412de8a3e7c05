/*
 * ranks: run's ranks (see ranks.h). Every function is called by every rank
 * at the same point of run, in the same order (mb_ranks' collectives).
 */
#include "ranks.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mb_err.h"
#include "mb_shard.h"
#include "setup.h"

int mb_run_ranks_init(struct mb_ranks *r, struct mb_args *args)
{
	int err = 0;

	if ((err = mb_ranks_init(r)))
		return err;
	if (!r->initialized) { /* alone: the options say which rank this is */
		args->local_rank = 0;
		return 0;
	}
	if (mb_args_given(args, "world-size") && args->world_size != r->world_size)
		err = mb_bad_input("--world-size %llu, but MPI's world has %u ranks (under MPI, "
				   "leave it out)",
				   (unsigned long long)args->world_size, r->world_size);
	else if (mb_args_given(args, "rank") && args->rank != r->rank)
		err = mb_bad_input("--rank %llu, but MPI made this process rank %u (under MPI, "
				   "leave it out)",
				   (unsigned long long)args->rank, r->rank);
	if (!err) {
		args->world_size = r->world_size;
		args->rank = r->rank;
		args->local_rank = r->local_rank;
	}
	/* a rank that refuses alone would leave the others in the next collective */
	return mb_run_ranks_agree(r, err);
}

/* FNV-1a of TEXT: the digest of one option's value. */
static uint64_t digest(const char *text)
{
	uint64_t h = 1469598103934665603ull;

	for (; *text; text++)
		h = (h ^ (unsigned char)*text) * 1099511628211ull;
	return h;
}

int mb_run_ranks_same(struct mb_ranks *r, const struct mb_args *args)
{
	uint64_t mine[MB_OPTIONS_MAX], first[MB_OPTIONS_MAX];
	char text[256], theirs[256];
	const char *name;
	unsigned who;
	size_t i, n;
	int at, err;

	if (!r->mpi)
		return 0;
	for (n = 0; n < MB_OPTIONS_MAX && mb_args_run_option(args, n, text, sizeof(text)); n++)
		mine[n] = digest(text);
	memcpy(first, mine, n * sizeof(*mine));
	if ((err = mb_ranks_bcast(r, first, n * sizeof(*first), 0)))
		return err;
	for (i = 0; i < n && mine[i] == first[i]; i++)
		;
	at = (int)i;
	if ((err = mb_ranks_lowest(r, &at, &who)))
		return err;
	if ((size_t)at >= n)
		return 0;
	name = mb_args_run_option(args, (size_t)at, text, sizeof(text));
	snprintf(theirs, sizeof(theirs), "%s", text);
	if ((err = mb_ranks_bcast(r, theirs, sizeof(theirs), who)))
		return err;
	theirs[sizeof(theirs) - 1] = '\0';
	if (r->rank) /* rank 0 says it */
		return mb_bad_input_kind(MB_KIND_SAID_ELSEWHERE, "--%s differs between the ranks",
					 name);
	return mb_bad_input("the ranks were given different options: --%s is '%s' on rank 0 and "
			    "'%s' on rank %u (every rank runs the same cells and steps: give them "
			    "the same options)",
			    name, text, theirs, who);
}

int mb_run_ranks_agree(struct mb_ranks *r, int err)
{
	char reason[1024], mine[1024];
	int status = err == -MB_EINPUT ? MB_RANK_REFUSED : err ? MB_RANK_FAILED : MB_RANK_OK, e;
	unsigned who;

	if (!r->mpi)
		return err;
	snprintf(mine, sizeof(mine), "%s", err ? mb_errmsg() : "");
	snprintf(reason, sizeof(reason), "%s", mine);
	if ((e = mb_ranks_agree(r, &status, reason, sizeof(reason), &who)))
		return e;
	/* bad input on any rank: every rank exits 2, and rank 0 alone says why */
	if (status == MB_RANK_REFUSED && r->rank)
		return mb_bad_input_kind(MB_KIND_SAID_ELSEWHERE, "rank %u of %u refused: %s", who,
					 r->world_size, reason);
	if (status == MB_RANK_REFUSED)
		return who == r->rank
			       ? mb_bad_input("%s", reason)
			       : mb_bad_input("rank %u of %u: %s", who, r->world_size, reason);
	if (err) {
		/* its own message: the agreement brought the lowest failed rank's */
		mb_fail("%s", mine);
		return err;
	}
	if (status != MB_RANK_OK)
		return mb_fail("rank %u of %u failed: %s", who, r->world_size, reason);
	return 0;
}

int mb_run_ranks_end(struct mb_ranks *r, unsigned steps, int run_err, bool signaled, bool *ended,
		     bool *stopped)
{
	char reason[1024], mine[1024];
	int status = run_err ? MB_RANK_FAILED : signaled ? MB_RANK_STOPPED : MB_RANK_OK, e;
	enum mb_err_kind kind = mb_err_kind();
	unsigned who;

	*ended = *stopped = false;
	snprintf(mine, sizeof(mine), "%s", run_err ? mb_errmsg() : "");
	snprintf(reason, sizeof(reason), "%s", mine);
	if ((e = mb_ranks_run_end(r, steps, &status, reason, sizeof(reason), &who))) {
		*ended = true;
		return run_err ? run_err : e;
	}
	if (run_err) /* its own message: the agreement brought the lowest failed rank's */
		mb_fail_kind(kind, "%s", mine);
	*stopped = status == MB_RANK_STOPPED;
	if (status != MB_RANK_FAILED)
		return run_err;
	*ended = r->mpi;
	if (run_err)
		return run_err;
	return mb_fail("stopped: rank %u failed: %s", who, reason);
}

int mb_run_ranks_fit(struct mb_ranks *r, int ok, char *reason, size_t len)
{
	char why[1024];
	int status = ok < 0 ? MB_RANK_FAILED : ok == 0 ? MB_RANK_STOPPED : MB_RANK_OK, e;
	unsigned who;

	if (!r->mpi)
		return ok;
	snprintf(why, sizeof(why), "%s", ok < 0 ? mb_errmsg() : ok == 0 ? reason : "");
	if ((e = mb_ranks_agree(r, &status, why, sizeof(why), &who)))
		return e;
	if (status == MB_RANK_FAILED)
		return who == r->rank ? mb_fail("%s", why)
				      : mb_fail("rank %u failed: %s", who, why);
	if (status == MB_RANK_STOPPED) {
		snprintf(reason, len, "rank %u: %s", who, why);
		return 0;
	}
	return 1;
}

int mb_run_ranks_shard(const struct mb_args *args, const struct mb_model *full,
		       struct mb_model *model, unsigned stage, unsigned *shard_stage)
{
	struct mb_plan_settings set;
	struct mb_model shard;
	int err;

	if (args->world_size <= 1 || *shard_stage == stage)
		return 0;
	mb_setup_plan_settings(args, stage, &set);
	if ((err = mb_shard_model(&shard, full, &set)))
		return err;
	mb_model_release(model);
	*model = shard;
	*shard_stage = stage;
	return 0;
}
