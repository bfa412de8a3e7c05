/*
 * mb_ranks: the ranks of one invocation of run, one process per GPU, as a
 * training framework starts them: under MPI (Open MPI's mpirun, MPICH's
 * mpiexec, Slurm's srun: only the standard calls are used), or one rank
 * alone (a build without MPI, or a process no launcher started).
 *
 * What the ranks share is small and fixed: who they are (world size, rank,
 * and the local rank, from MPI's shared-memory communicator: which GPU of
 * the node is this rank's), a barrier at each step boundary where
 * DeepSpeed's ranks synchronize (its collectives), an agreement there on
 * whether every rank is still well (so that a failed rank ends the
 * invocation on all of them at the next boundary instead of leaving them
 * in a collective forever), and each rank's results row sent to rank 0,
 * which alone writes the file.
 *
 * Every function below is collective when r->mpi: each rank must call it,
 * in the same order. Without MPI (or a world of one) they return at once.
 * Errors of MPI's calls are -MB_EFAIL naming the call (MPI's error handler
 * is set to return, not to abort).
 */
#ifndef MB_RANKS_H
#define MB_RANKS_H

#include <stdbool.h>
#include <stddef.h>

/* A rank's state at an agreement: the worst of the ranks' wins. */
enum mb_rank_status {
	MB_RANK_OK = 0,
	MB_RANK_STOPPED = 1, /* a signal: the run ends after this step, as interrupted */
	MB_RANK_FAILED = 2,  /* its run failed: every rank ends the invocation */
	MB_RANK_REFUSED = 3, /* bad usage or input (setup only): every rank exits 2 */
};

struct mb_ranks {
	unsigned world_size, rank, local_rank, local_size;
	bool mpi;	     /* MPI is initialized and the world has more than one rank */
	bool initialized;    /* MPI_Init was called here (mb_ranks_finalize must follow) */
	unsigned boundaries; /* of the run in progress: step boundaries agreed on */
	int agreed;	     /* of the run in progress: the worst status agreed so far */
};

/* Whether this build has MPI in it (MB_HAVE_MPI). */
bool mb_ranks_built_with_mpi(void);

/*
 * Whether a launcher started this process as one of several ranks: Open
 * MPI's mpirun, MPICH's Hydra or Slurm's PMI/PMIx left their variables in
 * the environment. A build with MPI started by hand runs as one rank, and
 * does not initialize MPI.
 */
bool mb_ranks_launched(void);

/*
 * Who this process is, into *r: under a launcher (and with MPI built in),
 * MPI is initialized (funneled: only the calling thread talks to MPI) and
 * the world, the rank and the local rank are MPI's; else one rank of one.
 * Under a launcher without MPI built in: -MB_EINPUT, saying how to build it.
 */
int mb_ranks_init(struct mb_ranks *r);

/* Finalize MPI if mb_ranks_init initialized it. */
void mb_ranks_finalize(struct mb_ranks *r);

/*
 * Every rank's STATUS, into the worst of them; with REASON (LEN bytes,
 * this rank's message when its status is not OK), the reason of the lowest
 * rank with that worst status replaces it, and *WHO (if not NULL) is that
 * rank. 0, or the MPI call's failure.
 */
int mb_ranks_agree(struct mb_ranks *r, int *status, char *reason, size_t len, unsigned *who);

/*
 * The lowest of the ranks' *VALUE into *VALUE, and into *WHO (if not NULL)
 * the lowest rank that has it. 0, or the MPI call's failure.
 */
int mb_ranks_lowest(struct mb_ranks *r, int *value, unsigned *who);

/* BYTES of BUF from rank ROOT to every rank's BUF. 0, or the MPI call's failure. */
int mb_ranks_bcast(struct mb_ranks *r, void *buf, size_t bytes, unsigned root);

/* A run begins: no boundary passed, nothing agreed. */
void mb_ranks_run_start(struct mb_ranks *r);

/*
 * The step boundary after a step: a barrier that every rank reaches with
 * STATUS, returning the worst status (MB_RANK_OK when every rank is well).
 * On an MPI failure, MB_RANK_FAILED with the message recorded.
 */
int mb_ranks_boundary(struct mb_ranks *r, int status);

/*
 * A run of STEPS steps has ended on this rank with STATUS: if it ended
 * before its last boundary without the ranks having agreed why (it failed
 * or was stopped in the middle of a step), it meets the others at the
 * boundary they are waiting at; then the ranks agree on the run (status,
 * reason and *who as mb_ranks_agree). Called once per run on every rank.
 */
int mb_ranks_run_end(struct mb_ranks *r, unsigned steps, int *status, char *reason, size_t len,
		     unsigned *who);

/*
 * Gather BYTES from each rank (MINE) into ALL on rank 0, in rank order:
 * ALL holds world_size * BYTES there, and is not touched elsewhere (NULL
 * is fine on the other ranks).
 */
int mb_ranks_gather(struct mb_ranks *r, const void *mine, size_t bytes, void *all);

#endif
