/*
 * mb_gemm16: Newton-Schulz's GEMMs at 16-bit precision, our own kernel
 * (kernels/ns_gemm.cl), for the precisions a framework runs Newton-Schulz
 * in: bf16 (the standard method's) and fp16 (the Gram method's).
 *
 * Matrices are 16-bit in memory (the precision's bits, as a framework keeps
 * Newton-Schulz's workspace); the kernel accumulates in fp32 and rounds C to
 * the precision. The file also holds the 16-bit workspace's load, store
 * and diagonal kernels (mb_ns). The kernel file is built apart from the
 * other kernels (its NVIDIA path holds PTX, which no other compiler takes),
 * once per path:
 * - portable: plain OpenCL C, any device;
 * - mma: NVIDIA sm_80 and up, mma.sync.m16n8k16 on the tensor cores, its
 *   fragments from local memory by ldmatrix (or, MB_GEMM16_NO_LDMATRIX,
 *   read one by one), used only after it builds and matches the portable
 *   kernel on the device;
 * - mma-emul: the mma path's tiling, swizzle, ldmatrix addresses and
 *   fragment layouts with ldmatrix and mma.sync emulated in OpenCL C, for
 *   the tests on a CPU device.
 */
#ifndef MB_GEMM16_H
#define MB_GEMM16_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_cl.h"
#include "mb_ns.h"
#include "mb_words.h"

#define MB_GEMM16_PATHS(X, SEP) \
	X(PORTABLE, "portable") SEP X(MMA, "mma") SEP X(MMA_EMUL, "mma-emul")
#define MB_GEMM16_ENUM_(e, ...) MB_GEMM16_##e,
enum mb_gemm16_path { MB_GEMM16_PATHS(MB_GEMM16_ENUM_, ) MB_GEMM16_NPATHS };

/* "portable", "mma", "mma-emul" */
extern const char *const mb_gemm16_path_names[MB_GEMM16_NPATHS];

/* mb_gemm16_init's flags: the mma paths' fragments read one by one, not by ldmatrix */
#define MB_GEMM16_NO_LDMATRIX 1u

/*
 * A work-group's tiling on the mma paths: a BM x BN tile of C, k BK at a
 * time, THREADS work-items, WARPS_N warps side by side along n (the rest
 * along m). Written "BMxBNxBK/THREADS/WARPS_N": "128x128x32/256/4", the
 * default. The portable path's is its own (64x64x16/128).
 */
struct mb_gemm16_tile {
	unsigned bm, bn, bk, threads, warps_n;
};

/*
 * TEXT as a tile into *T: -MB_EINPUT, saying why, where it is not one the
 * kernel can run: BK 16, 32 or 64; THREADS a whole number of warps, 32 to
 * 1024, that WARPS_N divides; each warp's tile a whole number of 16 x 16
 * (rows) and 16 x 16 (columns: ldmatrix takes two 8-wide fragments); A's
 * and B's tiles whole groups of 8 for every work-item; the two local tiles
 * (double-buffered, 16-bit) within 48 KiB.
 */
int mb_gemm16_tile_parse(const char *text, struct mb_gemm16_tile *t);

struct mb_gemm16 {
	const struct mb_cl *cl;
	enum mb_gemm16_path path;
	unsigned flags;		    /* MB_GEMM16_NO_LDMATRIX or 0 */
	struct mb_gemm16_tile tile; /* the path's (the mma paths' as built) */
	cl_program program;
	cl_kernel kernel;
	/* the 16-bit workspace's kernels (mb_ns), with their work-group sizes */
	cl_kernel load, store, diagonal;
	size_t load_local[2], store_local[2], diagonal_local;
	char why[512]; /* why this path (mb_gemm16_open), for people */
};

/*
 * Pure: whether the device INFO describes may have the mma path: an NVIDIA
 * device (vendor or platform name) whose arch is sm_80 or above.
 */
bool mb_gemm16_mma_capable(const struct mb_cl_device_info *info);

/*
 * Build PATH of kernels/ns_gemm.cl with FLAGS (MB_GEMM16_NO_LDMATRIX or 0)
 * and, on the mma paths, TILE (NULL: the default) for CL's device into *G.
 * A build that fails is -MB_EFAIL with the build log; a kernel whose
 * work-group cannot be the tile's size is -MB_EFAIL too. On failure nothing
 * is held.
 */
int mb_gemm16_init(struct mb_gemm16 *g, const struct mb_cl *cl, enum mb_gemm16_path path,
		   unsigned flags, const struct mb_gemm16_tile *tile);

/*
 * The path for CL's device into *G: mma where mb_gemm16_mma_capable, it
 * builds, and its results on a few odd shapes match the portable kernel's
 * at both precisions (within a 16-bit rounding), with ldmatrix or, where
 * that does not build or match, with the fragments read one by one; else
 * portable. G->why says which and why; an mma path that fails is no
 * error, only a portable one,
 * unless its check lost the device (MB_KIND_DEVICE_LOST: nothing to fall
 * back on), which is -MB_EFAIL. The mma path's tile is the default, or
 * MUONBENCH_NS_TILE's where that is set (mb_gemm16_tile_parse; one that is
 * not a tile is -MB_EINPUT; read only where the mma path is tried): a way
 * to try tiles on a device until a tuner chooses them.
 * The check runs once per call (once per device open in muonbench).
 */
int mb_gemm16_open(struct mb_gemm16 *g, const struct mb_cl *cl);

/*
 * Enqueue on Q: C (M x N) = ALPHA A (M x K) op(B) + BETA C_in, row-major
 * 16-bit buffers (PREC's bits: MB_PREC_BF16 or MB_PREC_FP16) at element
 * offsets, op(B) = B (K x N) or, B_TRANSPOSED, Bᵀ (B is N x K); fp32 sums
 * and scalars, the result rounded to PREC. C_in is M x N in C's buffer at
 * C_IN_OFF: C itself (C_IN_OFF = C_OFF), or a matrix C does not overlap (an
 * addition with no copy before it). C must not overlap A or B. BETA 0 reads
 * nothing of C_in. Its event into *EV unless EV is NULL (NULL on failure or
 * when M or N is 0: nothing enqueued).
 */
int mb_gemm16_enqueue(const struct mb_gemm16 *g, cl_command_queue q, enum mb_precision prec,
		      bool b_transposed, uint64_t m, uint64_t n, uint64_t k, float alpha, cl_mem a,
		      uint64_t a_off, cl_mem b, uint64_t b_off, float beta, cl_mem c,
		      uint64_t c_in_off, uint64_t c_off, cl_event *ev);

/* PREC (bf16 or fp16) as the file's kernels take it: their precision argument. */
cl_uint mb_gemm16_prec_arg(enum mb_precision prec);

/* Release the program and kernel; of a zeroed G, nothing. */
void mb_gemm16_release(struct mb_gemm16 *g);

#endif
