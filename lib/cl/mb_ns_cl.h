/*
 * mb_ns_cl: the Muon update on the device: momentum with its Nesterov
 * update, and Newton-Schulz orthogonalization (mb_ns: the methods, their
 * FLOPs and workspace) with CLBlast's SGEMM or our 16-bit GEMM (mb_gemm16).
 *
 * The workspace (X, the next X, the m x m matrices, the norm's partial
 * sums) is one ledger buffer, sized once for a set of shapes by
 * mb_ns_reserve; CLBlast's temporary buffer is a second one ("clblast.temp").
 */
#ifndef MB_NS_CL_H
#define MB_NS_CL_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_cl.h"
#include "mb_gemm16.h"
#include "mb_ledger.h"
#include "mb_ns.h"
#include "mb_spin.h"

struct mb_ns {
	const struct mb_cl *cl;
	struct mb_ledger *ledger;
	/*
	 * The method of every call: MB_NS_GRAM after mb_ns_init (DeepSpeed's
	 * default); set it before mb_ns_reserve. After a change, reserve
	 * again: a call whose method needs more workspace than was reserved
	 * (gram's, after a reserve for standard) is refused.
	 */
	enum mb_ns_method method;
	/*
	 * The precision of the GEMMs: MB_PREC_FP32 after mb_ns_init
	 * (CLBlastSgemm); bf16 or fp16 run our kernel (mb_gemm16), built by
	 * the first mb_ns_reserve under such a precision. Set it before
	 * mb_ns_reserve. At 16 bits the workspace's matrices are 16-bit (half
	 * the bytes, mb_ns_workspace_bytes), loaded, stored and given a I by
	 * the kernel file's own kernels (mb_gemm16); the norm stays fp32.
	 */
	enum mb_precision precision;
	struct mb_gemm16 gemm16; /* kernel NULL until built */
	/*
	 * Calibrated mode where above 0 (set it before mb_ns_reserve): each
	 * orthogonalization is replaced by a kernel that keeps the compute
	 * queue busy for its FLOPs (mb_ns_flops) at this rate, in GFLOP/s,
	 * and its output is its input: the momentum-corrected gradient, not
	 * orthogonalized. The framework's own rate on a device gives a run
	 * the framework's Newton-Schulz time with real copies and overlap.
	 */
	double rate_gflops;
	struct mb_spin spin; /* calibrated by the first mb_ns_reserve in that mode */
	cl_kernel momentum, momentum_bf16, cast_bf16, widen_bf16, sumsq, sumsq_runs,
		sumsq_runs_bf16, finish, load, store, stamp, diagonal;
	size_t reduce_local; /* work-group size of the norm's reduction (a power of two) */
	size_t momentum_local, momentum_bf16_local, cast_local, widen_local; /* and of the others */
	size_t load_local[2], store_local[2], diagonal_local;
	cl_mem work, temp;
	uint64_t work_bytes, temp_bytes;
	uint64_t gemm_flops; /* of the GEMMs enqueued so far, as mb_ns_flops counts them */
};

/* Create the kernels; the method is MB_NS_GRAM. Nothing is allocated on the device yet. */
int mb_ns_init(struct mb_ns *ns, const struct mb_cl *cl, struct mb_ledger *ledger);

/*
 * Make room for matrices of the N shapes ROWS[i] x COLS[i] under NS's
 * method: the workspace and, at fp32 (not calibrated), CLBlast's temporary
 * buffer, through the ledger, reallocated only to grow; at 16 bits, our
 * GEMM kernel is built the first time.
 */
int mb_ns_reserve(struct mb_ns *ns, const uint64_t *rows, const uint64_t *cols, size_t n);

/*
 * The bytes of the temporary buffer that CLBlast needs on CL's device for the
 * GEMMs of METHOD over the N shapes ROWS[i] x COLS[i] (what mb_ns_reserve
 * allocates as "clblast.temp"), into *BYTES; nothing is allocated.
 */
int mb_ns_temp_bytes(const struct mb_cl *cl, enum mb_ns_method method, const uint64_t *rows,
		     const uint64_t *cols, size_t n, uint64_t *bytes);

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
 * Enqueue on the compute queue: OUT = Newton-Schulz(IN) by NS's method, both
 * ROWS x COLS row-major at element offsets IN_OFF and OUT_OFF (the same
 * place is fine). The shape must have been reserved for the method. *FIRST
 * is the norm's first kernel, *LAST the scaled store.
 */
int mb_ns_orthogonalize(struct mb_ns *ns, cl_mem in, uint64_t in_off, uint64_t rows, uint64_t cols,
			cl_mem out, uint64_t out_off, cl_event *first, cl_event *last);

/*
 * Enqueue the GEMMs of one orthogonalization by NS's method alone, on the
 * workspace, with the same shapes, scalars and order: what the GEMMs cost without the work
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

/*
 * Enqueue on the compute queue Y[YOFF + i] = bf16(X[XOFF + i]) for N
 * elements (YOFF counts bf16 elements); its event into *EV (if not NULL).
 */
int mb_ns_cast_bf16(struct mb_ns *ns, cl_mem x, uint64_t xoff, cl_mem y, uint64_t yoff, uint64_t n,
		    cl_event *ev);

/*
 * The other way, on queue Q: Y[YOFF + i] = X[XOFF + i] from bf16 to fp32
 * (XOFF counts bf16 elements).
 */
int mb_ns_widen_bf16(struct mb_ns *ns, cl_command_queue q, cl_mem x, uint64_t xoff, cl_mem y,
		     uint64_t yoff, uint64_t n);

/*
 * Enqueue on queue Q the sum of squares of the bf16 X[OFF .. OFF+N) (OFF
 * counts bf16 elements), each widened to fp32, in MB_NS_PARTIALS partial
 * sums, into PARTIAL at element PART_OFF (a gradient norm, as DeepSpeed
 * takes one of the bf16 grads in the backward). On a CPU device each
 * work-item sums one contiguous run, on others the elements a global size
 * apart: the sums' order, and so their last bits, depend on the device type.
 * Newton-Schulz's own norm (mb_ns_orthogonalize) adds its fp32 input in the
 * same order: on the fp32 copies of these values, the same partial sums.
 * It is one kernel: its event into *EV unless EV is NULL (the caller
 * releases it; NULL on failure).
 */
int mb_ns_sumsq_bf16(struct mb_ns *ns, cl_command_queue q, cl_mem x, uint64_t off, uint64_t n,
		     cl_mem partial, uint64_t part_off, cl_event *ev);

/*
 * Which GEMM kernel NS's precision runs: "clblast-sgemm" for fp32, else
 * "ns_gemm-portable", "ns_gemm-mma" or (tests) "ns_gemm-mma-emul", after
 * mb_gemm16's path ("ns_gemm" before mb_ns_reserve has built it);
 * "ns_spin" in calibrated mode.
 */
const char *mb_ns_kernel_name(const struct mb_ns *ns);

/*
 * Pure: the precision DeepSpeed runs METHOD in, where the device INFO
 * describes has the tensor-core path (mb_gemm16_mma_capable): the Gram
 * method in fp16, the standard one in bf16 (its Muon's); elsewhere fp32,
 * PoCL included, so that CPU runs keep their checksums.
 */
enum mb_precision mb_ns_precision_auto(const struct mb_cl_device_info *info,
				       enum mb_ns_method method);

/* Release the kernels and the buffers (through the ledger). */
void mb_ns_release(struct mb_ns *ns);

/*
 * The same Newton-Schulz by METHOD in float64 on the host, for checking: OUT
 * (rows x cols, row-major) from IN. Returns 0 or -MB_EFAIL when out of host
 * memory.
 */
int mb_ns_reference(const float *in, uint64_t rows, uint64_t cols, enum mb_ns_method method,
		    double *out);

#endif
