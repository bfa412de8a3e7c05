/*
 * mb_ranks: MPI's world as run sees it, or one rank alone. The only file
 * that includes <mpi.h>; the build says whether it is there
 * (build/mb_mpi_build.h, written by the Makefile: MB_HAVE_MPI).
 */
#include "mb_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_mpi_build.h"

#ifdef MB_HAVE_MPI
#include <mpi.h>
#endif

bool mb_ranks_built_with_mpi(void)
{
#ifdef MB_HAVE_MPI
	return true;
#else
	return false;
#endif
}

bool mb_ranks_launched(void)
{
	/* Open MPI's mpirun, PMIx (Open MPI 4+, Slurm), PMI-1/2 (MPICH's Hydra, Slurm) */
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
					    "PMI_SIZE" };
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (getenv(vars[i]))
			return true;
	return false;
}

static void alone(struct mb_ranks *r)
{
	memset(r, 0, sizeof(*r));
	r->world_size = r->local_size = 1;
}

#ifdef MB_HAVE_MPI

/* MPI's failure RC of CALL as this module's error. */
static int mpi_fail(const char *call, int rc)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "error %d", rc);
	return mb_fail("%s failed: %s", call, text);
}

int mb_ranks_init(struct mb_ranks *r)
{
	MPI_Comm local;
	int provided, size, rank, rc;

	alone(r);
	if (!mb_ranks_launched())
		return 0;
	rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
	if (rc != MPI_SUCCESS)
		return mpi_fail("MPI_Init_thread", rc);
	r->initialized = true;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = MPI_Comm_size(MPI_COMM_WORLD, &size)) != MPI_SUCCESS)
		return mpi_fail("MPI_Comm_size", rc);
	if ((rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank)) != MPI_SUCCESS)
		return mpi_fail("MPI_Comm_rank", rc);
	r->world_size = (unsigned)size;
	r->rank = (unsigned)rank;
	/* the ranks on this node: the local rank chooses the GPU */
	rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
	if (rc != MPI_SUCCESS)
		return mpi_fail("MPI_Comm_split_type", rc);
	MPI_Comm_rank(local, &rank);
	MPI_Comm_size(local, &size);
	r->local_rank = (unsigned)rank;
	r->local_size = (unsigned)size;
	MPI_Comm_free(&local);
	r->mpi = r->world_size > 1;
	return 0;
}

void mb_ranks_finalize(struct mb_ranks *r)
{
	if (r->initialized)
		MPI_Finalize();
	r->initialized = r->mpi = false;
}

int mb_ranks_agree(struct mb_ranks *r, int *status, char *reason, size_t len, unsigned *who)
{
	struct {
		int status, rank;
	} mine = { *status, (int)r->rank }, worst;
	int rc;

	if (who)
		*who = r->rank;
	if (!r->mpi)
		return 0;
	/* the worst status, and the lowest rank with it (MAXLOC's tie) */
	rc = MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS)
		return mpi_fail("MPI_Allreduce (the ranks' status)", rc);
	*status = worst.status;
	if (who)
		*who = (unsigned)worst.rank;
	if (reason && len && worst.status != MB_RANK_OK) {
		rc = MPI_Bcast(reason, (int)len, MPI_CHAR, worst.rank, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_fail("MPI_Bcast (the failed rank's reason)", rc);
		reason[len - 1] = '\0';
	}
	return 0;
}

int mb_ranks_lowest(struct mb_ranks *r, int *value, unsigned *who)
{
	struct {
		int value, rank;
	} mine = { *value, (int)r->rank }, low;
	int rc;

	if (who)
		*who = r->rank;
	if (!r->mpi)
		return 0;
	rc = MPI_Allreduce(&mine, &low, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS)
		return mpi_fail("MPI_Allreduce (the ranks' lowest)", rc);
	*value = low.value;
	if (who)
		*who = (unsigned)low.rank;
	return 0;
}

int mb_ranks_bcast(struct mb_ranks *r, void *buf, size_t bytes, unsigned root)
{
	int rc;

	if (!r->mpi)
		return 0;
	rc = MPI_Bcast(buf, (int)bytes, MPI_BYTE, (int)root, MPI_COMM_WORLD);
	return rc == MPI_SUCCESS ? 0 : mpi_fail("MPI_Bcast", rc);
}

int mb_ranks_boundary(struct mb_ranks *r, int status)
{
	int worst, rc;

	r->boundaries++;
	if (!r->mpi)
		return r->agreed = status > r->agreed ? status : r->agreed;
	rc = MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) {
		mpi_fail("MPI_Allreduce (the step boundary)", rc);
		worst = MB_RANK_FAILED;
	}
	if (worst > r->agreed)
		r->agreed = worst;
	return r->agreed;
}

int mb_ranks_gather(struct mb_ranks *r, const void *mine, size_t bytes, void *all)
{
	int rc;

	if (!r->mpi) {
		if (all != mine)
			memcpy(all, mine, bytes);
		return 0;
	}
	rc = MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
	return rc == MPI_SUCCESS ? 0 : mpi_fail("MPI_Gather (the results rows)", rc);
}

#else /* one rank alone */

/* Whether the launcher's variable NAME says more than one process. */
static bool several(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "1");
}

int mb_ranks_init(struct mb_ranks *r)
{
	alone(r);
	if (mb_ranks_launched() &&
	    (several("OMPI_COMM_WORLD_SIZE") || several("PMI_SIZE") || several("SLURM_NTASKS")))
		return mb_bad_input(
			"started by an MPI launcher, but this muonbench was built "
			"without MPI: install libopenmpi-dev (or MPICH) and build again");
	return 0;
}

void mb_ranks_finalize(struct mb_ranks *r)
{
	(void)r;
}

int mb_ranks_agree(struct mb_ranks *r, int *status, char *reason, size_t len, unsigned *who)
{
	(void)status;
	(void)reason;
	(void)len;
	if (who)
		*who = r->rank;
	return 0;
}

int mb_ranks_lowest(struct mb_ranks *r, int *value, unsigned *who)
{
	(void)value;
	if (who)
		*who = r->rank;
	return 0;
}

int mb_ranks_bcast(struct mb_ranks *r, void *buf, size_t bytes, unsigned root)
{
	(void)r;
	(void)buf;
	(void)bytes;
	(void)root;
	return 0;
}

int mb_ranks_boundary(struct mb_ranks *r, int status)
{
	r->boundaries++;
	return r->agreed = status > r->agreed ? status : r->agreed;
}

int mb_ranks_gather(struct mb_ranks *r, const void *mine, size_t bytes, void *all)
{
	(void)r;
	if (all != mine)
		memcpy(all, mine, bytes);
	return 0;
}

#endif

void mb_ranks_run_start(struct mb_ranks *r)
{
	r->boundaries = 0;
	r->agreed = MB_RANK_OK;
}

int mb_ranks_run_end(struct mb_ranks *r, unsigned steps, int *status, char *reason, size_t len,
		     unsigned *who)
{
	/* ended inside a step the others finished: they wait at its boundary */
	if (r->boundaries < steps && r->agreed == MB_RANK_OK && *status != MB_RANK_OK)
		mb_ranks_boundary(r, *status);
	/* each rank's own status: a rank that stopped because another failed is well */
	return mb_ranks_agree(r, status, reason, len, who);
}
