/*
 * mb_ns: the Muon update on the device: momentum with its Nesterov update,
 * and Newton-Schulz orthogonalization with CLBlast's SGEMM.
 *
 * Newton-Schulz, Muon's quintic: transpose so rows <= cols; X = G / (|G|_F +
 * 1e-7); five times A = X Xᵀ, B = b A + c A A, X = a X + B X with (a, b, c) =
 * (3.4445, -4.7750, 2.0315); transpose back; scale by sqrt(max(1, rows/cols)).
 * All fp32. The workspace (X, the next X, A, B and the norm's partial sums)
 * is one ledger buffer, sized once for a set of shapes by mb_ns_reserve;
 * CLBlast's temporary buffer is a second one ("clblast.temp").
 */
#ifndef MB_NS_H
#define MB_NS_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_cl.h"
#include "mb_ledger.h"

#define MB_NS_ITERATIONS 5
#define MB_NS_EPS	 1e-7f
#define MB_NS_A		 3.4445f
#define MB_NS_B		 (-4.7750f)
#define MB_NS_C		 2.0315f
#define MB_NS_PARTIALS	 64 /* work-groups of the norm's reduction */

/* FLOPs of Newton-Schulz on one ROWS x COLS matrix: 5 (4 m^2 n + 2 m^3);
 * UINT64_MAX when that does not fit (dimensions are at most 2^24 each). */
uint64_t mb_ns_flops(uint64_t rows, uint64_t cols);

/*
 * Device workspace of Newton-Schulz on one ROWS x COLS matrix, in bytes: fp32
 * X and the next X (m x n each), A and B (m x m each), and the norm's
 * MB_NS_PARTIALS partial sums and its result; m = min, n = max.
 */
uint64_t mb_ns_workspace_bytes(uint64_t rows, uint64_t cols);

/* The final scale of a ROWS x COLS update: sqrt(max(1, rows / cols)). */
float mb_ns_scale(uint64_t rows, uint64_t cols);

struct mb_ns {
	const struct mb_cl *cl;
	struct mb_ledger *ledger;
	cl_kernel momentum, momentum_bf16, sumsq, finish, load, store, stamp;
	size_t reduce_local; /* work-group size of the norm's reduction (a power of two) */
	size_t momentum_local, load_local[2], store_local[2]; /* and of the others */
	cl_mem work, temp;
	uint64_t work_bytes, temp_bytes;
};

/* Create the kernels. Nothing is allocated on the device yet. */
int mb_ns_init(struct mb_ns *ns, const struct mb_cl *cl, struct mb_ledger *ledger);

/*
 * Make room for matrices of the N shapes ROWS[i] x COLS[i]: the workspace and
 * CLBlast's temporary buffer, through the ledger, reallocated only to grow.
 */
int mb_ns_reserve(struct mb_ns *ns, const uint64_t *rows, const uint64_t *cols, size_t n);

/*
 * Events for timing. FIRST and LAST (either may be NULL) receive the events
 * of the first and the last command a call enqueues, so that a caller can
 * time it from FIRST's START to LAST's END (mb_cl_event_interval), with no
 * marker (whose times some drivers do not give). They are commands of ours,
 * never CLBlast's: an indirect GEMM's own event covers its last kernel only.
 * The caller releases each one it gets. On failure both are NULL, and so
 * is anything that enqueues nothing.
 */

/*
 * Enqueue on the compute queue: OUT = Newton-Schulz(IN), both ROWS x COLS
 * row-major at element offsets IN_OFF and OUT_OFF (the same place is fine).
 * The shape must have been reserved. *FIRST is the norm's first kernel,
 * *LAST the scaled store.
 */
int mb_ns_orthogonalize(struct mb_ns *ns, cl_mem in, uint64_t in_off, uint64_t rows, uint64_t cols,
			cl_mem out, uint64_t out_off, cl_event *first, cl_event *last);

/*
 * Enqueue the GEMMs of one orthogonalization alone, on the workspace, with
 * the same shapes, scalars and order: what the GEMMs cost without the work
 * around them. Call mb_ns_clear first: on a zeroed workspace the values stay
 * zero, where leftovers would grow without the copies and reach denormals
 * or infinities, which time differently. Where FIRST (LAST) is asked for,
 * an empty kernel of ours (ns_stamp) goes before (after) the GEMMs, and
 * its event is the one returned.
 */
int mb_ns_gemms_only(struct mb_ns *ns, uint64_t rows, uint64_t cols, cl_event *first,
		     cl_event *last);

/* Enqueue zeros over the whole workspace. */
int mb_ns_clear(struct mb_ns *ns);

/*
 * Enqueue on the compute queue, over N elements: MOM = beta MOM + (1 - beta)
 * GRAD, then GRAD = (1 - beta) GRAD + beta MOM (the Nesterov update, in
 * place). It is one kernel: *FIRST and *LAST are then the same event, with
 * a reference for each (release both); N = 0 enqueues nothing.
 */
int mb_ns_momentum(struct mb_ns *ns, cl_mem grad, uint64_t grad_off, cl_mem mom, uint64_t mom_off,
		   uint64_t n, float beta, cl_event *first, cl_event *last);

/*
 * The same with the momentum stored in bf16 (MOM_OFF counts bf16 elements):
 * the math in fp32, MOM rounded to nearest even, the Nesterov update from
 * the rounded value, as DeepSpeed's ZeRO-3 keeps it under bf16 training.
 */
int mb_ns_momentum_bf16(struct mb_ns *ns, cl_mem grad, uint64_t grad_off, cl_mem mom,
			uint64_t mom_off, uint64_t n, float beta, cl_event *first, cl_event *last);

/* Release the kernels and the buffers (through the ledger). */
void mb_ns_release(struct mb_ns *ns);

/*
 * The same Newton-Schulz in float64 on the host, for checking: OUT (rows x
 * cols, row-major) from IN. Returns 0 or -MB_EFAIL when out of host memory.
 */
int mb_ns_reference(const float *in, uint64_t rows, uint64_t cols, double *out);

#endif
