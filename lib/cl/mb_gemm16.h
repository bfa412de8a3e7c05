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
 * A work-group's tiling: a BM x BN tile of C, k BK at a time, THREADS
 * work-items; on the mma paths WARPS_N warps side by side along n (the
 * rest along m), on the portable path none (0: each work-item computes BM
 * BN / 4 / THREADS rows of 4 columns). Written "BMxBNxBK/THREADS/WARPS_N"
 * on the mma paths ("128x128x32/256/4", their default; "/async" after it:
 * the next step's tiles copied global to local by cp.async, with no
 * registers between), "BMxBNxBK/THREADS" on the portable one
 * ("64x64x16/128", its default).
 */
struct mb_gemm16_tile {
	unsigned bm, bn, bk, threads, warps_n;
	unsigned async; /* the mma paths: "/async", tiles filled by cp.async, not registers */
};

/*
 * TEXT as a tile into *T: -MB_EINPUT, saying why, where it is not one the
 * kernel can run. The mma paths': BK 16, 32 or 64; THREADS a whole number
 * of warps, 32 to 1024, that WARPS_N divides; each warp's tile a whole
 * number of 16 x 16 (rows) and 16 x 16 (columns: ldmatrix takes two 8-wide
 * fragments); the two local tiles (double-buffered, 16-bit) within 48 KiB.
 * The portable path's: BK a multiple of 8 up to 64; each work-item 1 to 16
 * whole rows of 4 columns; its local tiles (fp32) within 48 KiB. Both: A's
 * and B's tiles whole groups of 8 for every work-item.
 */
int mb_gemm16_tile_parse(const char *text, struct mb_gemm16_tile *t);

/* T as mb_gemm16_tile_parse reads it, into BUF. */
void mb_gemm16_tile_text(const struct mb_gemm16_tile *t, char *buf, size_t len);

/*
 * Tiles by the size of the GEMM: a GEMM whose C has at most OUTPUTS
 * elements (m n) runs the first class that holds it; the last class holds
 * the rest (OUTPUTS 0: no bound). Written as a list, each entry
 * "OUTPUTS:TILE", the last "TILE" alone: "262144:64x64x32/128/2,
 * 128x128x32/256/4"; a single tile is one class for every GEMM. What
 * `muonbench tune --ns` stores in a tuning and MUONBENCH_NS_TILE takes.
 */
#define MB_GEMM16_CLASSES_MAX 6
struct mb_gemm16_classes {
	size_t n;
	uint64_t outputs[MB_GEMM16_CLASSES_MAX]; /* the last 0 */
	struct mb_gemm16_tile tile[MB_GEMM16_CLASSES_MAX];
};

/*
 * TEXT as classes into *C: every tile as mb_gemm16_tile_parse takes it, all
 * of one path (mma or portable), the bounds increasing, the last entry
 * without one. -MB_EINPUT saying why.
 */
int mb_gemm16_classes_parse(const char *text, struct mb_gemm16_classes *c);

/* C as mb_gemm16_classes_parse reads it, into BUF. */
void mb_gemm16_classes_text(const struct mb_gemm16_classes *c, char *buf, size_t len);

/* Which of C's classes a GEMM whose C is M x N runs (pure). */
size_t mb_gemm16_class_of(const struct mb_gemm16_classes *c, uint64_t m, uint64_t n);

/* What ptxas said of a build's ns_gemm (mb_gemm16_ptxas_info); 0: not said. */
struct mb_gemm16_ptxas {
	unsigned registers;   /* a work-item's */
	unsigned stack_bytes; /* its stack frame: values kept in local memory */
	unsigned spill_bytes; /* its spill stores and loads */
};

struct mb_gemm16 {
	const struct mb_cl *cl;
	enum mb_gemm16_path path;
	unsigned flags;					     /* MB_GEMM16_NO_LDMATRIX or 0 */
	struct mb_gemm16_classes classes;		     /* the tiles as built */
	cl_program program[MB_GEMM16_CLASSES_MAX];	     /* one a class */
	cl_kernel kernel[MB_GEMM16_CLASSES_MAX];	     /* ns_gemm of each */
	struct mb_gemm16_ptxas ptxas[MB_GEMM16_CLASSES_MAX]; /* each kernel's, where ptxas said */
	/* the 16-bit workspace's kernels (mb_ns, program[0]'s), with their work-group sizes */
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
 * Build PATH of kernels/ns_gemm.cl with FLAGS (MB_GEMM16_NO_LDMATRIX or 0),
 * once for each of CLASSES' tiles (NULL: the path's default tile for every
 * GEMM), for CL's device into *G. Tiles of another path than PATH are
 * -MB_EINPUT; a build that fails is -MB_EFAIL with the build log; a kernel
 * whose work-group cannot be the tile's size is -MB_EFAIL too. On failure
 * nothing is held.
 */
int mb_gemm16_init(struct mb_gemm16 *g, const struct mb_cl *cl, enum mb_gemm16_path path,
		   unsigned flags, const struct mb_gemm16_classes *classes);

/*
 * The tiles `muonbench tune --ns` tries on PATH (the mma paths' for both),
 * the default first, *N of them; each passes mb_gemm16_tile_parse. The mma
 * path's with cp.async ("/async") run only once they match the portable
 * kernel on the device: the check that proves cp.async delivers the data
 * on its driver.
 */
const char *const *mb_gemm16_tune_tiles(enum mb_gemm16_path path, size_t *n);

/*
 * What ptxas says of ns_gemm in a build LOG with -cl-nv-verbose, or in
 * ptxas -v's output ("Compiling entry function 'ns_gemm' ... N bytes stack
 * frame, S bytes spill stores, L bytes spill loads ... Used R registers"):
 * into *P, all 0 where the log does not say (false). The mma path builds
 * with it: past 128 registers a 256-work-item group loses its second group
 * per SM, and a stack frame is values the kernel keeps in local memory
 * (the accumulators, where a loop was left rolled). Pure.
 */
bool mb_gemm16_ptxas_info(const char *log, struct mb_gemm16_ptxas *p);

/*
 * The build options of tile T on PATH with FLAGS (MB_GEMM16_NO_LDMATRIX or
 * 0) into BUF of LEN: the -D macros kernels/ns_gemm.cl reads, nothing of
 * the device's. Pure.
 */
void mb_gemm16_options(enum mb_gemm16_path path, unsigned flags, const struct mb_gemm16_tile *t,
		       char *buf, size_t len);

/* The path's default tile (the kernel's, as it builds without -D). */
struct mb_gemm16_tile mb_gemm16_default_tile(enum mb_gemm16_path path);

/*
 * The path for CL's device into *G: mma where mb_gemm16_mma_capable, it
 * builds, and its results on a few odd shapes match the portable kernel's
 * at both precisions (within a 16-bit rounding), with ldmatrix or, where
 * that does not build or match, with the fragments read one by one; else
 * portable. G->why says which and why; an mma path that fails is no
 * error, only a portable one, unless its check lost the device
 * (MB_KIND_DEVICE_LOST: nothing to fall back on), which is -MB_EFAIL.
 * The tiles: MUONBENCH_NS_TILE's where that is set (a way to try tiles on
 * a device; not classes is -MB_EINPUT), else CL->ns_gemm's (the tuning's:
 * `muonbench tune --ns`), else the path's default. Portable tiles there
 * choose the portable path; the mma path's, on a device without it, are
 * set aside (G->why says so). The check runs once per call (once per
 * device open in muonbench), on every class's kernel.
 */
int mb_gemm16_open(struct mb_gemm16 *g, const struct mb_cl *cl);

/*
 * The mma path's try I of the tiles GIVEN into OUT and FLAGS: 0, as given
 * (cp.async where a tile says so), with ldmatrix; 1, every tile without
 * cp.async; 2, without cp.async and without ldmatrix
 * (MB_GEMM16_NO_LDMATRIX). False where try I is the one before it again
 * (try 1 when no tile has cp.async): nothing new to try. Pure.
 */
bool mb_gemm16_fallback(const struct mb_gemm16_classes *given, unsigned i,
			struct mb_gemm16_classes *out, unsigned *flags);

/*
 * Whether G's results match REF's (the portable kernel, default tile) on
 * the check's problems: odd shapes in one work-group, sizes over several
 * at 16-byte-aligned offsets with C_in apart, both precisions, op(B) both
 * ways, with every class's kernel; every element within 2^-6 of the
 * largest. WHY says what differed. Errors running it are failures of the
 * check.
 */
bool mb_gemm16_matches(const struct mb_gemm16 *g, const struct mb_gemm16 *ref, char *why,
		       size_t len);

/*
 * Enqueue on Q: C (M x N) = ALPHA A (M x K) op(B) + BETA C_in, row-major
 * 16-bit buffers (PREC's bits: MB_PREC_BF16 or MB_PREC_FP16) at element
 * offsets, op(B) = B (K x N) or, B_TRANSPOSED, Bᵀ (B is N x K); fp32 sums
 * and scalars, the result rounded to PREC. C_in is M x N in C's buffer at
 * C_IN_OFF: C itself (C_IN_OFF = C_OFF), or a matrix C does not overlap (an
 * addition with no copy before it). C must not overlap A or B. BETA 0 reads
 * nothing of C_in. The kernel of the class that M x N falls in. Its event
 * into *EV unless EV is NULL (NULL on failure or when M or N is 0: nothing
 * enqueued).
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
