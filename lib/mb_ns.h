/*
 * mb_ns: Newton-Schulz as the schedule, the plan and the model engine know
 * it, with no device: its constants, its two methods, the precisions of its
 * GEMMs, its FLOPs and device workspace per matrix, and the update's scale.
 * Running it on a device is mb_ns_cl's (lib/cl/).
 *
 * Newton-Schulz, in either of DeepSpeed's two methods (original_muon.py),
 * both fp32: transpose so rows <= cols (m x n, m = min, n = max); X = G /
 * (|G|_F + 1e-7); five iterations with (a, b, c) = (3.4445, -4.7750,
 * 2.0315); transpose back; scale by sqrt(max(1, rows/cols)).
 *
 * - standard (zeropower_via_newtonschulz5): five times A = X Xᵀ,
 *   B = b A + c A A, X = a X + B X.
 * - gram (zeropower_via_gram_newtonschulz): on a square matrix the standard
 *   iteration, the same commands; otherwise it iterates on the m x m Gram
 *   matrix R = X Xᵀ and keeps the product Q of the iterations' polynomials
 *   in R, with a restart at iteration 2 (X = Q X, R = X Xᵀ):
 *       R = X Xᵀ; Q = none
 *       for i in 0..4:
 *           if i == 2: X = Q X; R = X Xᵀ; Q = none
 *           Z = b R + c R R
 *           Q = Q is none ? Z + a I : a Q + Z Q
 *           if i < 4 and i + 1 != 2: RZ = a R + Z R; R = a RZ + Z RZ
 *       X = Q X
 */
#ifndef MB_NS_H
#define MB_NS_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_words.h"

#define MB_NS_ITERATIONS 5
#define MB_NS_EPS	 1e-7f
#define MB_NS_A		 3.4445f
#define MB_NS_B		 (-4.7750f)
#define MB_NS_C		 2.0315f
#define MB_NS_PARTIALS	 64 /* work-groups of the norm's reduction */
#define MB_NS_RESTART	 2  /* the Gram method's restart iteration */

/* The workspace's scratch, in floats: the norm's partial sums, then 1 / norm. */
#define MB_NS_SCRATCH_FLOATS (MB_NS_PARTIALS + 1)

/* The Newton-Schulz methods, gram first: DeepSpeed's default (a list, mb_words.h). */
#define MB_NS_METHODS(X, SEP) X(GRAM, "gram") SEP X(STANDARD, "standard")
#define MB_NS_ENUM_(e, ...)   MB_NS_##e,
enum mb_ns_method { MB_NS_METHODS(MB_NS_ENUM_, ) MB_NS_NMETHODS };

/* Their names, as options and results spell them: "gram", "standard". */
extern const char *const mb_ns_method_names[MB_NS_NMETHODS];

/* Newton-Schulz's precisions (a list, mb_words.h): fp32 on CLBlast, bf16 and fp16 ours. */
#define MB_PRECISIONS(X, SEP)	   X(FP32, "fp32") SEP X(BF16, "bf16") SEP X(FP16, "fp16")
#define MB_PRECISION_ENUM_(e, ...) MB_PREC_##e,
enum mb_precision { MB_PRECISIONS(MB_PRECISION_ENUM_, ) MB_NPRECISIONS };

/* "fp32", "bf16", "fp16" */
extern const char *const mb_precision_names[MB_NPRECISIONS];

/*
 * FLOPs of Newton-Schulz by METHOD on one ROWS x COLS matrix, 2 m n k for
 * each GEMM of an m x k by a k x n matrix and nothing for the rest (the
 * norm, the copies, the scalings, the Gram method's a I), m = min, n = max:
 * - standard, and gram on a square matrix: per iteration X Xᵀ 2m²n, A A
 *   2m³, B X 2m²n: 5 (4 m² n + 2 m³);
 * - gram, m < n: X Xᵀ at the start and at the restart, Q X at the restart
 *   and at the end: 4 x 2m²n; Z's R R in each of the 5 iterations, Q's Z Q
 *   in the 3 that do not start Q, the two GEMMs of R's update in the 3
 *   iterations that are neither the last nor the one before the restart:
 *   (5 + 3 + 2 x 3) x 2m³. In all 8 m² n + 28 m³.
 * UINT64_MAX when that does not fit (dimensions are at most 2^24 each).
 */
uint64_t mb_ns_flops(uint64_t rows, uint64_t cols, enum mb_ns_method method);

/*
 * Device workspace of Newton-Schulz by METHOD at PRECISION on one ROWS x
 * COLS matrix, in bytes: X and the next X (m x n each); the standard
 * method's A and B (m x m each), the Gram method's R, Z, Q and the next Q
 * or RZ (m x m each; a square matrix takes the standard's), each in fp32,
 * or 16 bits at bf16 and fp16 as a framework keeps them; then, from the
 * next multiple of 4 bytes (mb_ns_scratch_float), the norm's
 * MB_NS_PARTIALS partial sums and its result in fp32; m = min, n = max.
 */
uint64_t mb_ns_workspace_bytes(uint64_t rows, uint64_t cols, enum mb_ns_method method,
			       enum mb_precision precision);

/* Bytes of one element of the workspace's matrices at PRECISION: fp32's 4, or 16 bits' 2. */
uint64_t mb_ns_elem_bytes(enum mb_precision precision);

/* Where the scratch starts, in floats, after MATRIX_ELEMS elements at PRECISION. */
uint64_t mb_ns_scratch_float(uint64_t matrix_elems, enum mb_precision precision);

/* The final scale of a ROWS x COLS update: sqrt(max(1, rows / cols)). */
float mb_ns_scale(uint64_t rows, uint64_t cols);

/* Whether METHOD runs the Gram iteration on ROWS x COLS: not on a square matrix. */
bool mb_ns_gram_iteration(enum mb_ns_method method, uint64_t rows, uint64_t cols);

/*
 * X's 16 bits in PRECISION (bf16 or fp16), rounded to nearest even as the
 * device's kernels round (kernels/ns_gemm.cl: NaN quiet, fp16 past 65504
 * infinite, below 2^-14 subnormal), and such bits' value: the host's side of
 * the 16-bit workspace, for checks and tests.
 */
uint16_t mb_ns_bits16(float x, enum mb_precision precision);
float mb_ns_value16(uint16_t bits, enum mb_precision precision);

/*
 * The largest relative Frobenius error against mb_ns_reference (float64 on
 * the unrounded input) that Newton-Schulz at PRECISION may show, by either
 * method: fp32 1e-4; bf16 and fp16 from the error measured on the tests'
 * and ns's shapes, with a margin (mb_ns.c says what was measured).
 */
double mb_ns_tolerance(enum mb_precision precision);

#endif
