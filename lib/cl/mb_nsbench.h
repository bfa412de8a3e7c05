/*
 * mb_nsbench: how fast Newton-Schulz runs on the device for one shape and
 * method, next to the GEMM calls it makes, and how close it is to the float64
 * reference of the same method.
 *
 * Fresh random matrices (mb_rng, so the same on every device), a warm-up
 * that covers kernel compilation, then REPS timed runs, each synchronized
 * with the device, with the output poisoned with NaN before each so that an
 * element never written cannot pass the check. A run's time is the device's,
 * from its first command's START to its last one's END (profiling events,
 * every status checked): the host's enqueueing and waiting are not in it.
 */
#ifndef MB_NSBENCH_H
#define MB_NSBENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_ns_cl.h"
#include "mb_stats.h"

struct mb_nsbench_settings {
	unsigned batch; /* matrices of the shape in one timed run */
	unsigned reps;
	bool verify;
	uint64_t seed;
};

struct mb_nsbench_result {
	uint64_t rows, cols;
	enum mb_ns_method method;
	uint64_t flops;		       /* of one matrix: mb_ns_flops */
	struct mb_spread ns_s, gemm_s; /* Newton-Schulz, and its GEMMs alone; NaN: no time */
	double gflops;		       /* batch * flops / median Newton-Schulz time, in GFLOP/s */
	double rel_err;		       /* largest relative Frobenius error; NaN when not verified */
	char no_time[1024]; /* why the times are NaN (the driver gave none); "" when timed */
};

/*
 * One shape's matrices on the device, timed a run at a time: what
 * mb_nsbench_run times REPS times in a row, and what a caller that
 * interleaves the runs of several shapes and methods holds across them
 * (mb_profile_measure's rounds).
 */
struct mb_nsbench {
	struct mb_ns *ns;
	uint64_t rows, cols, numel; /* numel: of one matrix */
	unsigned batch;		    /* matrices in one run */
	cl_mem in, out;		    /* BATCH matrices each */
};

/*
 * Allocate BATCH ROWS x COLS matrices in and out through NS's ledger and
 * fill the input with stream INDEX of SEED (mb_rng: the same matrices on
 * every device and under either method). On failure nothing is held.
 */
int mb_nsbench_init(struct mb_nsbench *b, struct mb_ns *ns, uint64_t rows, uint64_t cols,
		    unsigned batch, uint64_t seed, unsigned index);

/*
 * One run of Newton-Schulz on the batch by NS's current method (whose
 * workspace NS has reserved for the shape), or of its GEMMs alone, after
 * an untimed poisoning of the output with NaN: device seconds into
 * *seconds, from its first command's START to its last one's END. A time
 * the driver does not give is NaN, with why in mb_errmsg(), and no error.
 * Where ENQUEUE_S is not NULL, the host clock's seconds of the first
 * matrix's enqueue into it (NaN on failure): the host has just waited for
 * the device. The first run of a shape and method includes compiling its
 * kernels: a caller warms each up with a run it does not keep.
 */
int mb_nsbench_time(const struct mb_nsbench *b, bool gemms_only, double *seconds,
		    double *enqueue_s);

/* Free B's matrices; of a zeroed B, or one whose mb_nsbench_init failed, nothing. */
void mb_nsbench_release(struct mb_nsbench *b);

/*
 * Benchmark ROWS x COLS by NS's method (whose workspace NS has reserved) as
 * stream INDEX of the seed, into *r: the same INDEX, the same matrices under
 * either method. Its buffers go through NS's ledger and are released.
 * A driver that gives no event times is no failure: the times are NaN, with
 * why in r->no_time, and --verify still checks the results.
 */
int mb_nsbench_run(struct mb_ns *ns, const struct mb_nsbench_settings *s, uint64_t rows,
		   uint64_t cols, unsigned index, struct mb_nsbench_result *r);

#endif
