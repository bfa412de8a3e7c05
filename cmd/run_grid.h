/*
 * run_grid: what run's three files share, for them alone: the grid of
 * cells and what every row of the invocation shares (struct mb_run_grid);
 * the results rows and their file (run_rows.c); the signals and the
 * watchdog (run_watchdog.c). run.c sets up and walks the cells.
 */
#ifndef MB_CMD_RUN_GRID_H
#define MB_CMD_RUN_GRID_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mb_devmem.h"
#include "mb_fit.h"
#include "mb_predict.h"
#include "mb_run.h"
#include "mb_timeline.h"
#include "ranks.h"
#include "setup.h"

/* One cell of the grid: what its rows' figures depend on, and its prediction. */
struct mb_run_cell {
	struct mb_grid_cell at; /* its stage, variant and knobs */
	bool done;		/* unfit or failed: no more runs */
	bool predicted;		/* pred holds the model's figures */
	struct mb_step_times pred;
};

/* What every row of this invocation shares. */
struct mb_run_grid {
	const struct mb_args *args;
	struct mb_model model;
	struct mb_cl cl;
	struct mb_host host;
	struct mb_fit_device fit; /* the device's figures, read once when it was opened */
	struct mb_devmem devmem;  /* the driver's own figure of the device's used memory */
	struct mb_devmem_sampler sampler;
	enum mb_pinned_copy pinned_copy; /* the driver keeps pinned memory on the device too */
	uint64_t used_base;		 /* of the run in progress: before its first allocation */
	enum mb_precision ns_precision;	 /* --ns-precision, auto resolved for the device */
	unsigned precision_unpredicted;	 /* cells not predicted: the profile's precision is another
					  */
	char ns_kernel[24];		 /* the GEMM kernel Newton-Schulz ran, of the last run */
	unsigned stages[3];
	size_t nstages;
	struct mb_run_cell *cells; /* mb_grid's order: stage by stage, then budget, sub-group size
			       and variant */
	size_t ncells;
	struct mb_run_settings run;
	struct mb_timeline timeline; /* --timeline's (rank 0's); its f NULL: none */
	char out[4096];
	bool out_existed;     /* else an empty one is removed if nothing could run */
	bool out_created;     /* the default name, created new by default_out */
	char given_out[4096]; /* where the rows went first, before a fallback */
	bool fallback;	      /* out is the fallback file */
	unsigned failed, interrupted, checked, mismatched;
	unsigned incomplete;	 /* ok runs with a phase the driver did not time (n/a) */
	struct mb_csv_row *rows; /* this invocation's, as written */
	size_t nrows;
	bool tty; /* the progress line: stderr is a terminal and not --quiet */
	double started_s;
	unsigned long steps_total, steps_done;
	unsigned cell_stage, cell_variant, cell_run;
	atomic_uint run_steps_done; /* of the run in progress (the watchdog reads it) */
	/*
	 * Who writes the results file: RUN_IDLE between runs, RUN_MAIN while
	 * mb_run_once has the run in progress, RUN_SAVING while the main thread
	 * appends a row, RUN_WATCHDOG once the watchdog took it (the main
	 * thread then never writes again).
	 */
	atomic_int run_owner;
	atomic_bool ending;	/* the grid is done: the watchdog returns */
	atomic_bool set_up;	/* the setup is done: the runs have begun */
	char device_gone[1024]; /* the rows' reason once the device cannot be opened again */
	/* of the first ok run with each momentum dtype and method: the math differs between them */
	uint64_t checksum[MB_NMOM_DTYPES][MB_NS_NMETHODS];
	unsigned checked_math[MB_NMOM_DTYPES][MB_NS_NMETHODS];
	unsigned mismatched_math[MB_NMOM_DTYPES][MB_NS_NMETHODS]; /* runs whose checksum differs */
	/* the device profile each cell is predicted from (mb_predict); none: profile_src "" */
	struct mb_profile profile;
	char profile_src[512];
	struct mb_ranks ranks;
	struct mb_args ranked; /* the options as the ranks say (args points here) */
	struct mb_model full;  /* the whole model, when g->model is this rank's share */
	unsigned shard_stage;  /* the stage g->model is the share of; 0: none */
	bool ranks_ended;      /* a rank failed: no rank runs again */
	bool ranks_stopped;    /* stop was set by the ranks' agreement, not a signal */
	/* a rank was signaled: every rank ends the grid after this run (mb_run_ranks_end) */
	bool ranks_stop_agreed;
};

/* grid's run_owner */
enum { RUN_IDLE, RUN_MAIN, RUN_SAVING, RUN_WATCHDOG };

/* The progress line cleared, where there is one. */
static inline void mb_run_clear_progress(const struct mb_run_grid *g)
{
	if (g->tty)
		fprintf(stderr, "\r\033[K");
}

/*
 * run_rows.c: the results file and rows. The results file into g->out: --out,
 * else a new results/MODEL-stageS-UTCTIME.csv (-2.csv and on where that is
 * taken), created here.
 */
int mb_run_default_out(struct mb_run_grid *g);

/* ROW cleared and filled with what the run now in g->run is: its settings, host, device. */
void mb_run_fill_meta(const struct mb_run_grid *g, struct mb_csv_row *row);

/* The model's prediction T of the cell into ROW. */
void mb_run_fill_prediction(const struct mb_run_grid *g, struct mb_csv_row *row,
			    const struct mb_step_times *t);

/* The figures of run R into ROW. */
void mb_run_fill_results(struct mb_csv_row *row, const struct mb_run_result *r);

/*
 * Every rank's ROW of this run to rank 0, which keeps and appends them in
 * rank order (to the fallback file in $TMPDIR once the results file stops
 * taking rows). The ranks agree on rank 0's room for them before the gather
 * and on its writing them after: a failure there ends every rank.
 */
int mb_run_save_row(struct mb_run_grid *g, const struct mb_csv_row *row);

/*
 * run_watchdog.c: set by a first signal (SIGINT, SIGTERM, SIGHUP), read by a
 * run between steps; a second signal exits at once.
 */
extern volatile sig_atomic_t mb_run_stop;

/*
 * The signals' handlers set, and the watchdog thread into *WATCHER for G:
 * after a first signal, it waits the grace (MUONBENCH_STOP_GRACE_S, else 30 s)
 * for the grid to end, and else writes the run in progress's row as
 * interrupted and ends the process.
 */
int mb_run_watch(struct mb_run_grid *g, pthread_t *watcher);

/* The grid has ended: the watchdog told, and joined. */
void mb_run_unwatch(struct mb_run_grid *g, pthread_t watcher);

#endif
