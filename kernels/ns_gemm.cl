/*
 * Newton-Schulz's GEMMs at 16-bit precision (lib/mb_gemm16.c builds this
 * file apart from the other kernels, once per path):
 *
 *     C (m x n) = alpha A (m x k) op(B) + beta C_in,   op(B) = B (k x n) or Bᵀ (B n x k)
 *
 * (C_in in C's buffer, at C's place or another that C does not overlap: the
 * iteration's additions fused into the epilogue, with no copy before),
 *
 * row-major, every matrix 16-bit in memory, as a framework keeps its
 * Newton-Schulz workspace: bf16 (nearest even) or fp16 (vstore_half_rte; no
 * cl_khr_fp16 needed), carried as ushort bits; products accumulated in
 * fp32, alpha and beta applied in fp32, and C rounded to the same 16-bit
 * type: what a framework's bf16/fp16 matmul (alpha A B + beta C) computes.
 * The file also holds the 16-bit workspace's own kernels (ns16_load,
 * ns16_store, ns16_add_diagonal), which mb_ns runs around the GEMMs.
 *
 * One tiling for all paths, sized per path: a 1-D work-group of
 * NSG_THREADS work-items (warps of 32) computes an NSG_BM x NSG_BN tile of
 * C, stepping through k NSG_BK at a time; the next step's A and op(B) are
 * read from global memory into registers (8 values in one 16-byte load
 * where the host says the rows are 16-byte aligned, else one by one; the
 * portable build one by one) while the current one is
 * multiplied from local memory (two local buffers, one barrier a step).
 * Edges: loads past a matrix read zeros, stores past it are skipped.
 * The inner product, by build option:
 *   (none)            portable: 64 x 64 x 16 tiles, 128 work-items, plain
 *                     OpenCL C, each work-item 8 x 4 outputs (4 adjacent
 *                     columns as a float4: SIMD on a CPU too);
 *   -D NSG_MMA=1      NVIDIA sm_80+: by default 128 x 128 x 32 tiles, 256
 *                     work-items (the host's -D NSG_BM ... for others),
 *                     8 warps of 64 x 32 each, as 4 x 4 mma.sync.m16n8k16
 *                     (fp32 accumulators) a 16 of k, fragments read from
 *                     local memory in the layout of the PTX ISA's "Matrix
 *                     fragments for mma.m16n8k16" (ldmatrix, or .trans for
 *                     a B that is not transposed, kept k x n as it is);
 *   -D NSG_MMA_EMUL=1 the same code with mma.sync emulated from those
 *                     fragment layouts: each lane puts its A and B fragments
 *                     in local memory and computes its own C fragment from
 *                     the warp's, so that a CPU tests the tiling and the
 *                     fragment index arithmetic (only the asm goes untested:
 *                     the emulated ldmatrix and cp.async are synchronous, so
 *                     the order of cp.async's wait and the barriers is not
 *                     tested either).
 * With either mma build, -D NSG_CP_ASYNC=1 fills the next step's local
 * tiles from global memory by cp.async, no registers between, and -D
 * NSG_NO_LDMATRIX=1 reads the fragments one by one.
 * Precision is an argument: NSG_BF16 or NSG_FP16.
 */
#pragma OPENCL FP_CONTRACT OFF

#define NSG_BF16 1u
#define NSG_FP16 2u

/*
 * Every loop over the warp's mma tiles, over an accumulator's four values
 * and over a work-item's staged groups unrolled on the real path, and
 * every helper inlined there, so that the accumulators, fragments and
 * staged groups stay in registers: a loop left rolled indexes them at run
 * time, and a helper left a call takes them by pointer, and either puts
 * them in local memory (clang's NVPTX build, ptxas -v: 320 bytes of stack
 * frame for the default tile before, none after; tests/test_ptx.c).
 * Neither in the emulation, whose barriers an unrolled loop multiplies
 * (PoCL then takes minutes), nor in the portable build.
 */
#ifdef NSG_MMA
#define NSG_UNROLL _Pragma("unroll")
#define NSG_INLINE inline __attribute__((always_inline))
#else
#define NSG_UNROLL
#define NSG_INLINE
#endif

#if defined(NSG_MMA) || defined(NSG_MMA_EMUL)
#define NSG_FRAGMENTS 1
/*
 * The block's tile (NSG_BM x NSG_BN, k NSG_BK at a time), its work-items
 * and its warps along n: these defaults, or the host's -D (mb_gemm16's
 * tile, which checks what they must be: whole groups of 8 to load, warp
 * tiles of 16 x 16 mma pairs, the local tiles within 48 KiB)
 */
#ifndef NSG_BM
#define NSG_BM 128
#endif
#ifndef NSG_BN
#define NSG_BN 128
#endif
#ifndef NSG_BK
#define NSG_BK 32
#endif
#ifndef NSG_THREADS
#define NSG_THREADS 256
#endif
#ifndef NSG_WARPS_N
#define NSG_WARPS_N 4 /* warps side by side along n; along m the rest */
#endif
#define NSG_WARPS_M (NSG_THREADS / 32 / NSG_WARPS_N)
#define NSG_WTM	    (NSG_BM / NSG_WARPS_M) /* a warp's tile: 64 x 32 by default */
#define NSG_WTN	    (NSG_BN / NSG_WARPS_N)
#define NSG_MI	    (NSG_WTM / 16) /* its mma tiles: 4 x 4 by default */
#define NSG_NI	    (NSG_WTN / 8)
/*
 * Row r's column x in a local tile of W ushorts a row (W 16, 32 or a
 * multiple of 64: the host's tile check) with no padding, its 16-byte
 * chunks XOR-swizzled: chunk c of row r sits at chunk c ^ ((r / L) % S),
 * L rows a 128-byte line of the 32 banks (64 / W, or 1), S = W / 8 chunks
 * a row below 64, else 8 (c and c ^ s then in the same group of 8 chunks:
 * a permutation of the row), so that the 8 rows an 8x8 matrix's reads
 * (ldmatrix's, and the fragments' one by one) touch fall on 8 different
 * chunks of the banks: conflict-free, where the padding it replaces spent a
 * fifth of the local memory.
 */
#define NSG_SWZ(r, x, W)                                                                       \
	((r) * (W) +                                                                           \
	 ((((x) >> 3) ^ (((r) / ((W) >= 64 ? 1 : 64 / (W))) % ((W) >= 64 ? 8 : (W) / 8))) << 3) + \
	 ((x)&7))
/* A's tile, m x k (as the fragments read), and op(B)'s as Bᵀ (n x k) where B is transposed */
#define NSG_AT(r, kk)	NSG_SWZ(r, kk, NSG_BK)
#define NSG_AT_B(c, kk) NSG_AT(c, kk)
/* op(B)'s tile where B is not transposed: as B is, k x n (ldmatrix.trans reads it) */
#define NSG_AT_K(kk, c) NSG_SWZ(kk, c, NSG_BN)
typedef ushort nsg_local_t;
#else
/*
 * The portable build's tile: these defaults, or the host's -D (mb_gemm16's
 * tile, which checks that every work-item loads whole groups of 8 and
 * computes whole rows of float4s: NSG_RM rows, 4 columns apart by
 * NSG_BN / 4)
 */
#ifndef NSG_BM
#define NSG_BM 64
#endif
#ifndef NSG_BN
#define NSG_BN 64
#endif
#ifndef NSG_BK
#define NSG_BK 16
#endif
#ifndef NSG_THREADS
#define NSG_THREADS 128
#endif
#define NSG_RM (NSG_BM * NSG_BN / 4 / NSG_THREADS) /* a work-item's rows: 8 by default */
/* row r's k kk: r-major, so that consecutive work-items read consecutive columns */
#define NSG_AT(r, kk)	((kk)*NSG_BM + (r))
#define NSG_AT_B(c, kk) ((kk)*NSG_BN + (c))
typedef float nsg_local_t;
#endif

/* 8-element groups of a step's tiles that each work-item loads (the mma paths) */
#define NSG_AG	  (NSG_BM * NSG_BK / 8 / NSG_THREADS)
#define NSG_BG	  (NSG_BN * NSG_BK / 8 / NSG_THREADS)
#define NSG_VEC_A 1u /* the kernel's vec argument: A's rows start 16-byte aligned */
#define NSG_VEC_B 2u /* and op(B)'s */

static NSG_INLINE ushort nsg_bf16(float x)
{
	uint bits = as_uint(x);

	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (ushort)((bits >> 16) | 0x40); /* a quiet NaN */
	bits += 0x7fffu + ((bits >> 16) & 1u);
	return (ushort)(bits >> 16);
}

/* X's 16 bits in precision PREC */
static NSG_INLINE ushort nsg_bits(float x, uint prec)
{
	ushort h;

	if (prec == NSG_BF16)
		return nsg_bf16(x);
	vstore_half_rte(x, 0, (__private half *)&h);
	return h;
}

/* 16 bits of precision PREC as a float */
static NSG_INLINE float nsg_widen(ushort h, uint prec)
{
	if (prec == NSG_BF16)
		return as_float((uint)h << 16);
	return vload_half(0, (const __private half *)&h);
}

#ifdef NSG_FRAGMENTS
/*
 * Eight 16-bit values of row R (of ROWS) from column X (of COLS) on, as four
 * .b32 pairs (the lower index in the lower bits): one 16-byte load where VEC
 * says the rows start 16-byte aligned and all eight are inside, else one by
 * one, zeros outside.
 */
static NSG_INLINE uint4 nsg_eight(__global const ushort *p, ulong off, ulong r, ulong rows, ulong x,
		       ulong cols, uint vec)
{
	uint e[8];
	uint i;

	if (r >= rows)
		return (uint4)(0);
	if (vec && x + 8 <= cols)
		return *(__global const uint4 *)(p + off + r * cols + x);
	for (i = 0; i < 8; i++)
		e[i] = x + i < cols ? p[off + r * cols + x + i] : 0;
	return (uint4)(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
}

/*
 * This work-item's share of the step at K0's tiles, from global memory into
 * RA and RB, in groups of 8 along each matrix's rows, consecutive
 * work-items on consecutive groups: group q of A is row q / (BK / 8), k
 * (q % (BK / 8)) 8; Bᵀ's likewise; B's (k x n) k q / (BN / 8), columns
 * (q % (BN / 8)) 8.
 */
static NSG_INLINE void nsg_load(__global const ushort *a, ulong a_off, __global const ushort *b, ulong b_off,
		     uint b_transposed, ulong m, ulong n, ulong k, ulong row0, ulong col0, ulong k0,
		     uint tid, uint vec, uint prec, uint4 *ra, uint4 *rb)
{
	uint i, q;

	(void)prec;
	NSG_UNROLL
	for (i = 0; i < NSG_AG; i++) {
		q = tid + i * NSG_THREADS;
		ra[i] = nsg_eight(a, a_off, row0 + q / (NSG_BK / 8), m, k0 + q % (NSG_BK / 8) * 8, k,
				  vec & NSG_VEC_A);
	}
	NSG_UNROLL
	for (i = 0; i < NSG_BG; i++) {
		q = tid + i * NSG_THREADS;
		if (b_transposed)
			rb[i] = nsg_eight(b, b_off, col0 + q / (NSG_BK / 8), n,
					  k0 + q % (NSG_BK / 8) * 8, k, vec & NSG_VEC_B);
		else
			rb[i] = nsg_eight(b, b_off, k0 + q / (NSG_BN / 8), k,
					  col0 + q % (NSG_BN / 8) * 8, n, vec & NSG_VEC_B);
	}
}

/*
 * RA and RB into the local tiles AS (m x k) and BS (op(B)ᵀ, n x k, where B
 * is transposed; else k x n, as B is, which ldmatrix.trans reads), as they
 * are: 16-byte stores alone.
 */
static NSG_INLINE void nsg_put(__local nsg_local_t *as, __local nsg_local_t *bs, uint b_transposed, uint tid,
		    const uint4 *ra, const uint4 *rb, uint prec)
{
	uint i, q;

	(void)prec;
	/* one 16-byte store: a group's k is a multiple of 8, the rows 16-byte aligned */
	NSG_UNROLL
	for (i = 0; i < NSG_AG; i++) {
		q = tid + i * NSG_THREADS;
		*(__local uint4 *)(as + NSG_AT(q / (NSG_BK / 8), q % (NSG_BK / 8) * 8)) = ra[i];
	}
	/* op(B) as Bᵀ (n x k) where B is transposed, else as B is (k x n): one store either way */
	NSG_UNROLL
	for (i = 0; i < NSG_BG; i++) {
		q = tid + i * NSG_THREADS;
		if (b_transposed)
			*(__local uint4 *)(bs + NSG_AT(q / (NSG_BK / 8), q % (NSG_BK / 8) * 8)) =
				rb[i];
		else
			*(__local uint4 *)(bs + NSG_AT_K(q / (NSG_BN / 8), q % (NSG_BN / 8) * 8)) =
				rb[i];
	}
}

#ifdef NSG_CP_ASYNC
/*
 * 16 bytes from global P to local L with no registers between:
 * cp.async.cg.shared.global (sm_80), the addresses converted to their
 * spaces where they are generic ones; emulated, a plain copy. Landed once
 * the work-item's nsg_cp_wait returns.
 */
static NSG_INLINE void nsg_cp16(__local ushort *l, __global const ushort *p)
{
#ifdef NSG_MMA_EMUL
	*(__local uint4 *)l = *(__global const uint4 *)p;
#else
	asm volatile("{\n\t.reg .pred q;\n\t.reg .u64 d, s;\n\t"
		     "isspacep.shared q, %0;\n\t"
		     "@q cvta.to.shared.u64 d, %0;\n\t"
		     "@!q mov.u64 d, %0;\n\t"
		     "isspacep.global q, %1;\n\t"
		     "@q mov.u64 s, %1;\n\t"
		     "@!q cvta.to.global.u64 s, %1;\n\t"
		     "cp.async.cg.shared.global [d], [s], 16;\n\t}"
		     :
		     : "l"((ulong)l), "l"((ulong)p)
		     : "memory");
#endif
}

/* Until this work-item's cp.async copies have landed. */
static NSG_INLINE void nsg_cp_wait(void)
{
#ifndef NSG_MMA_EMUL
	asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/*
 * The step at K0's tiles straight into the local tiles AS and BS (as
 * nsg_put places them), the groups nsg_load reads: by cp.async where all
 * eight values are inside and 16-byte aligned, else read as nsg_eight
 * reads them (zeros outside) and stored.
 */
static NSG_INLINE void nsg_fill(__local ushort *as, __local ushort *bs, __global const ushort *a, ulong a_off,
		     __global const ushort *b, ulong b_off, uint b_transposed, ulong m, ulong n,
		     ulong k, ulong row0, ulong col0, ulong k0, uint tid, uint vec)
{
	uint i, q;

	for (i = 0; i < NSG_AG; i++) {
		q = tid + i * NSG_THREADS;
		const ulong r = row0 + q / (NSG_BK / 8), x = k0 + q % (NSG_BK / 8) * 8;
		__local ushort *l = as + NSG_AT(q / (NSG_BK / 8), q % (NSG_BK / 8) * 8);

		if (r < m && (vec & NSG_VEC_A) && x + 8 <= k)
			nsg_cp16(l, a + a_off + r * k + x);
		else
			*(__local uint4 *)l = nsg_eight(a, a_off, r, m, x, k, vec & NSG_VEC_A);
	}
	for (i = 0; i < NSG_BG; i++) {
		/* Bᵀ's rows (n x k) where B is transposed, else B's (k x n) */
		const uint per_row = b_transposed ? NSG_BK / 8 : NSG_BN / 8;
		q = tid + i * NSG_THREADS;
		const ulong r = (b_transposed ? col0 : k0) + q / per_row,
			    x = (b_transposed ? k0 : col0) + q % per_row * 8;
		const ulong rows = b_transposed ? n : k, cols = b_transposed ? k : n;
		__local ushort *l =
			bs + (b_transposed ? NSG_AT(q / per_row, q % per_row * 8)
					   : NSG_AT_K(q / per_row, q % per_row * 8));

		if (r < rows && (vec & NSG_VEC_B) && x + 8 <= cols)
			nsg_cp16(l, b + b_off + r * cols + x);
		else
			*(__local uint4 *)l = nsg_eight(b, b_off, r, rows, x, cols, vec & NSG_VEC_B);
	}
}
#endif
#else
/*
 * The portable build's share of the step at K0's tiles, from global memory
 * into RA and RB one value at a time (PoCL ran this twice as fast as
 * float4s, which a GPU prefers; VEC is not read), zeros past the edges, in
 * the mma paths' groups of 8: group q of A is row q / (BK / 8), k
 * (q % (BK / 8)) 8; Bᵀ's likewise; B's (k x n) k q / (BN / 8), columns
 * (q % (BN / 8)) 8.
 */
static NSG_INLINE void nsg_load(__global const ushort *a, ulong a_off, __global const ushort *b, ulong b_off,
		     uint b_transposed, ulong m, ulong n, ulong k, ulong row0, ulong col0, ulong k0,
		     uint tid, uint vec, uint prec, ushort *ra, ushort *rb)
{
	uint i, q, e;

	(void)vec;
	(void)prec;
	for (i = 0; i < NSG_AG; i++) {
		q = tid + i * NSG_THREADS;
		for (e = 0; e < 8; e++) {
			const ulong r = row0 + q / (NSG_BK / 8), kx = k0 + q % (NSG_BK / 8) * 8 + e;

			ra[8 * i + e] = r < m && kx < k ? a[a_off + r * k + kx] : 0;
		}
	}
	for (i = 0; i < NSG_BG; i++) {
		q = tid + i * NSG_THREADS;
		for (e = 0; e < 8; e++) {
			if (b_transposed) {
				const ulong col = col0 + q / (NSG_BK / 8),
					    kx = k0 + q % (NSG_BK / 8) * 8 + e;

				rb[8 * i + e] = col < n && kx < k ? b[b_off + col * k + kx] : 0;
			} else {
				const ulong col = col0 + q % (NSG_BN / 8) * 8 + e,
					    kx = k0 + q / (NSG_BN / 8);

				rb[8 * i + e] = col < n && kx < k ? b[b_off + kx * n + col] : 0;
			}
		}
	}
}

/* RA and RB widened into the local tiles AS (m x k) and BS (op(B)ᵀ: n x k). */
static NSG_INLINE void nsg_put(__local nsg_local_t *as, __local nsg_local_t *bs, uint b_transposed, uint tid,
		    const ushort *ra, const ushort *rb, uint prec)
{
	uint i, q, e;

	for (i = 0; i < NSG_AG; i++) {
		q = tid + i * NSG_THREADS;
		for (e = 0; e < 8; e++)
			as[NSG_AT(q / (NSG_BK / 8), q % (NSG_BK / 8) * 8 + e)] =
				nsg_widen(ra[8 * i + e], prec);
	}
	for (i = 0; i < NSG_BG; i++) {
		q = tid + i * NSG_THREADS;
		for (e = 0; e < 8; e++) {
			if (b_transposed)
				bs[NSG_AT_B(q / (NSG_BK / 8), q % (NSG_BK / 8) * 8 + e)] =
					nsg_widen(rb[8 * i + e], prec);
			else
				bs[NSG_AT_B(q % (NSG_BN / 8) * 8 + e, q / (NSG_BN / 8))] =
					nsg_widen(rb[8 * i + e], prec);
		}
	}
}
#endif

#ifdef NSG_FRAGMENTS
/* Two consecutive 16-bit elements as a .b32 register: the lower index in the lower bits. */
static NSG_INLINE uint nsg_pair(__local const ushort *p)
{
	return *(__local const uint *)p;
}

/*
 * ldmatrix.sync.aligned.m8n8.x4.shared.b16 (PTX ISA): each lane gives P,
 * the start of one row of one of four 8 x 8 matrices (lanes 8j .. 8j + 7
 * matrix j's rows 0 .. 7, eight 16-bit elements each), and R[j] receives
 * matrix j's row lane / 4, elements 2 (lane % 4) and the next: the
 * fragments mma.m16n8k16 takes. Emulated (NSG_MMA_EMUL), the rows' places
 * go through SCRATCH (32 uints of the warp's own), so that a CPU tests the
 * addresses each lane gives; every work-item calls it the same number of
 * times (barriers).
 */
static NSG_INLINE void nsg_ldmatrix4(uint *r, __local const ushort *tile, uint at, __local uint *scratch,
			  uint lane)
{
#ifdef NSG_MMA_EMUL
	uint j;

	scratch[lane] = at;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (j = 0; j < 4; j++)
		r[j] = nsg_pair(tile + scratch[8 * j + (lane >> 2)] + 2 * (lane & 3));
	barrier(CLK_LOCAL_MEM_FENCE);
#else
	(void)scratch;
	(void)lane;
	/*
	 * The __local pointer's value: a shared-space address as LLVM's NVPTX
	 * back end makes it, or a generic one in the shared window (where
	 * another compiler made it so): converted only then (isspacep), so
	 * that ldmatrix gets a shared address either way.
	 */
	asm volatile("{\n\t.reg .pred p;\n\t.reg .u64 a;\n\t"
		     "isspacep.shared p, %4;\n\t"
		     "@p cvta.to.shared.u64 a, %4;\n\t"
		     "@!p mov.u64 a, %4;\n\t"
		     "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [a];\n\t}"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "l"((ulong)(tile + at))
		     : "memory");
#endif
}

/*
 * ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: the same rows given, each
 * matrix transposed on the way: R[j] receives matrix j's column lane / 4,
 * rows 2 (lane % 4) and the next (the lower row in the lower bits), which
 * is mma.m16n8k16's B fragment of a k x n tile kept as B is (rows k).
 */
static NSG_INLINE void nsg_ldmatrix4_trans(uint *r, __local const ushort *tile, uint at,
				__local uint *scratch, uint lane)
{
#ifdef NSG_MMA_EMUL
	const uint g = lane >> 2, t = lane & 3;
	uint j;
	scratch[lane] = at;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (j = 0; j < 4; j++)
		r[j] = (uint)tile[scratch[8 * j + 2 * t] + g] |
		       (uint)tile[scratch[8 * j + 2 * t + 1] + g] << 16;
	barrier(CLK_LOCAL_MEM_FENCE);
#else
	(void)scratch;
	(void)lane;
	/* the address as nsg_ldmatrix4 makes it */
	asm volatile("{\n\t.reg .pred p;\n\t.reg .u64 a;\n\t"
		     "isspacep.shared p, %4;\n\t"
		     "@p cvta.to.shared.u64 a, %4;\n\t"
		     "@!p mov.u64 a, %4;\n\t"
		     "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [a];\n\t}"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "l"((ulong)(tile + at))
		     : "memory");
#endif
}

#ifdef NSG_MMA
/* D = A B + D on the tensor cores (PTX ISA, mma.sync.aligned.m16n8k16). */
static NSG_INLINE void nsg_mma(float *c, const uint *a, const uint *b, __local uint *scratch, uint lane,
		    uint prec)
{
	(void)scratch;
	(void)lane;
	if (prec == NSG_BF16)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#else
/*
 * mma.sync.m16n8k16 emulated from its fragment layouts, with g = lane / 4,
 * t = lane % 4 (PTX ISA, "Matrix fragments for mma.m16n8k16", .bf16/.f16):
 *   A (16 x 16, row): a[r] holds A[g + 8 (r & 1)][2t + 8 (r >> 1) + {0, 1}];
 *   B (16 x 8, col):  b[r] holds B[2t + 8 r + {0, 1}][g];
 *   C (16 x 8, f32):  c[i] is  C[g + 8 (i >> 1)][2t + (i & 1)].
 * The warp's fragments go through SCRATCH (192 uints of the warp's own);
 * every work-item of the group calls it the same number of times (barriers).
 */
static NSG_INLINE void nsg_mma(float *c, const uint *a, const uint *b, __local uint *scratch, uint lane,
		    uint prec)
{
	const uint g = lane >> 2, t = lane & 3;
	uint r, i, kk;

	for (r = 0; r < 4; r++)
		scratch[lane * 4 + r] = a[r];
	for (r = 0; r < 2; r++)
		scratch[128 + lane * 2 + r] = b[r];
	barrier(CLK_LOCAL_MEM_FENCE);
	for (i = 0; i < 4; i++) {
		const uint row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
		float s = 0.0f;

		for (kk = 0; kk < 16; kk++) {
			/* the lane and register that hold A[row][kk] and B[kk][col] */
			const uint tk = (kk & 7) >> 1, hk = kk >> 3, shift = 16 * (kk & 1);
			const uint aw = scratch[((row & 7) * 4 + tk) * 4 + (row >> 3) + 2 * hk];
			const uint bw = scratch[128 + (col * 4 + tk) * 2 + hk];

			s += nsg_widen((ushort)(aw >> shift), prec) *
			     nsg_widen((ushort)(bw >> shift), prec);
		}
		c[i] += s;
	}
	barrier(CLK_LOCAL_MEM_FENCE);
}
#endif
#endif

/*
 * The kernel's body, with the local tiles AS and BS (and the emulation's
 * SCRATCH_ALL) the kernel's; on the mma path inlined once per precision, so
 * that PREC is a constant in each copy (the mma's type and every conversion
 * chosen once, not at each use).
 */
static inline __attribute__((always_inline)) void
nsg_gemm(const ulong m, const ulong n, const ulong k, const float alpha, __global const ushort *a,
	 const ulong a_off, __global const ushort *b, const ulong b_off, const uint b_transposed,
	 const float beta, __global ushort *c, const ulong c_in_off, const ulong c_off,
	 const uint prec, const uint vec, __local nsg_local_t (*as)[NSG_BM * NSG_BK],
	 __local nsg_local_t (*bs)[NSG_BN * NSG_BK], __local uint *scratch_all)
{
	const uint tid = get_local_id(0);
	const ulong row0 = (ulong)get_group_id(1) * NSG_BM, col0 = (ulong)get_group_id(0) * NSG_BN;
	const ulong nsteps = (k + NSG_BK - 1) / NSG_BK;
#if defined(NSG_CP_ASYNC)
	/* (no registers between global and local memory) */
#elif defined(NSG_FRAGMENTS)
	uint4 ra[NSG_AG], rb[NSG_BG];
#else
	ushort ra[NSG_AG * 8], rb[NSG_BG * 8];
#endif
	ulong step;
	uint kk, buf;
#ifdef NSG_FRAGMENTS
	const uint warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
	const uint wm = warp / NSG_WARPS_N * NSG_WTM, wn = warp % NSG_WARPS_N * NSG_WTN;
#ifdef NSG_MMA_EMUL
	__local uint *scratch = scratch_all + warp * 192; /* 192: mma's; ldmatrix's 32 of them */
#else
	__local uint *scratch = 0; /* the emulation's only */
	(void)scratch_all;
#endif
	float acc[NSG_MI][NSG_NI][4];
	uint fa[NSG_MI][4], fb[NSG_NI][2], mi, ni, i;

	NSG_UNROLL
	for (mi = 0; mi < NSG_MI; mi++)
		NSG_UNROLL
		for (ni = 0; ni < NSG_NI; ni++)
			NSG_UNROLL
			for (i = 0; i < 4; i++)
				acc[mi][ni][i] = 0.0f;
#else
	/* rows tm + (BM / RM) i, columns 4 tn .. 4 tn + 3 */
	const uint tm = tid / (NSG_BN / 4), tn = tid % (NSG_BN / 4);
	(void)scratch_all;
	float4 acc[NSG_RM], bv;
	float av[NSG_RM];
	uint i, j;

	for (i = 0; i < NSG_RM; i++)
		acc[i] = (float4)(0.0f);
#endif

	/* the first step's tiles into local memory */
#ifdef NSG_CP_ASYNC
	nsg_fill(as[0], bs[0], a, a_off, b, b_off, b_transposed, m, n, k, row0, col0, 0, tid, vec);
	nsg_cp_wait();
#else
	nsg_load(a, a_off, b, b_off, b_transposed, m, n, k, row0, col0, 0, tid, vec, prec, ra, rb);
	nsg_put(as[0], bs[0], b_transposed, tid, ra, rb, prec);
#endif
	barrier(CLK_LOCAL_MEM_FENCE);
	for (step = 0; step < nsteps; step++) {
		buf = step & 1;
		/*
		 * The next step's tiles, into registers while this one is
		 * multiplied; by cp.async straight into the other local buffer,
		 * which the previous step's multiply last read (every work-item
		 * finished it before the barrier that ended it).
		 */
#ifdef NSG_CP_ASYNC
		if (step + 1 < nsteps)
			nsg_fill(as[buf ^ 1], bs[buf ^ 1], a, a_off, b, b_off, b_transposed, m, n, k,
				 row0, col0, (step + 1) * NSG_BK, tid, vec);
#else
		if (step + 1 < nsteps)
			nsg_load(a, a_off, b, b_off, b_transposed, m, n, k, row0, col0,
				 (step + 1) * NSG_BK, tid, vec, prec, ra, rb);
#endif
#ifdef NSG_FRAGMENTS
		for (kk = 0; kk < NSG_BK; kk += 16) {
#ifndef NSG_NO_LDMATRIX
			/*
			 * A's 16 x 16 at (wm + 16 mi, kk): matrices rows 0-7 and 8-15 at
			 * k 0-7, then at k 8-15 (a[0..3]); lane l gives row l % 8 + 8
			 * ((l / 8) & 1), k 8 (l / 16)
			 */
			NSG_UNROLL
			for (mi = 0; mi < NSG_MI; mi++)
				nsg_ldmatrix4(fa[mi], as[buf],
					      NSG_AT(wm + mi * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
						     kk + (lane >> 4) * 8),
					      scratch, lane);
			/*
			 * Bᵀ's two 8 x 16 at (wn + 8 ni, kk), ni even: n 0-7 at k 0-7 and
			 * 8-15 (b[0], b[1] of ni), then n 8-15 (of ni + 1); lane l gives
			 * n l % 8 + 8 (l / 16), k 8 ((l / 8) & 1)
			 */
			/*
			 * Where B is not transposed its tile is k x n, and the same four
			 * matrices are read transposed: lane l gives k l % 8 + 8 ((l / 8)
			 * & 1), n 8 (l / 16)
			 */
			NSG_UNROLL
			for (ni = 0; ni < NSG_NI; ni += 2) {
				uint r[4];

				if (b_transposed)
					nsg_ldmatrix4(r, bs[buf],
						      NSG_AT(wn + ni * 8 + (lane & 7) + (lane >> 4) * 8,
							     kk + ((lane >> 3) & 1) * 8),
						      scratch, lane);
				else
					nsg_ldmatrix4_trans(
						r, bs[buf],
						NSG_AT_K(kk + (lane & 7) + ((lane >> 3) & 1) * 8,
							 wn + ni * 8 + (lane >> 4) * 8),
						scratch, lane);
				fb[ni][0] = r[0];
				fb[ni][1] = r[1];
				fb[ni + 1][0] = r[2];
				fb[ni + 1][1] = r[3];
			}
#else
			/* the same fragments read one by one (NSG_NO_LDMATRIX) */
			NSG_UNROLL
			for (mi = 0; mi < NSG_MI; mi++) {
				const uint r0 = wm + mi * 16 + g;

				fa[mi][0] = nsg_pair(as[buf] + NSG_AT(r0, kk + 2 * t));
				fa[mi][1] = nsg_pair(as[buf] + NSG_AT(r0 + 8, kk + 2 * t));
				fa[mi][2] = nsg_pair(as[buf] + NSG_AT(r0, kk + 8 + 2 * t));
				fa[mi][3] = nsg_pair(as[buf] + NSG_AT(r0 + 8, kk + 8 + 2 * t));
			}
			NSG_UNROLL
			for (ni = 0; ni < NSG_NI; ni++) {
				const uint n0 = wn + ni * 8 + g;

				if (b_transposed) {
					fb[ni][0] = nsg_pair(bs[buf] + NSG_AT(n0, kk + 2 * t));
					fb[ni][1] = nsg_pair(bs[buf] + NSG_AT(n0, kk + 8 + 2 * t));
				} else { /* two rows of the k x n tile a register */
					fb[ni][0] = (uint)bs[buf][NSG_AT_K(kk + 2 * t, n0)] |
						    (uint)bs[buf][NSG_AT_K(kk + 2 * t + 1, n0)] << 16;
					fb[ni][1] = (uint)bs[buf][NSG_AT_K(kk + 8 + 2 * t, n0)] |
						    (uint)bs[buf][NSG_AT_K(kk + 9 + 2 * t, n0)] << 16;
				}
			}
#endif
			NSG_UNROLL
			for (mi = 0; mi < NSG_MI; mi++)
				NSG_UNROLL
				for (ni = 0; ni < NSG_NI; ni++)
					nsg_mma(acc[mi][ni], fa[mi], fb[ni], scratch, lane, prec);
		}
#else
		for (kk = 0; kk < NSG_BK; kk++) {
			for (i = 0; i < NSG_RM; i++)
				av[i] = as[buf][NSG_AT(tm + NSG_BM / NSG_RM * i, kk)];
			bv = vload4(0, bs[buf] + NSG_AT_B(4 * tn, kk));
			for (i = 0; i < NSG_RM; i++)
				acc[i] = mad((float4)(av[i]), bv, acc[i]);
		}
#endif
		/*
		 * The other buffer was last read by the previous step's multiply,
		 * which every work-item finished before the barrier that ended it.
		 */
#ifdef NSG_CP_ASYNC
		nsg_cp_wait();
#else
		if (step + 1 < nsteps)
			nsg_put(as[buf ^ 1], bs[buf ^ 1], b_transposed, tid, ra, rb, prec);
#endif
		barrier(CLK_LOCAL_MEM_FENCE);
	}

	/* C = round(alpha acc + beta C_in); beta 0 reads nothing */
#ifdef NSG_FRAGMENTS
	NSG_UNROLL
	for (mi = 0; mi < NSG_MI; mi++)
		NSG_UNROLL
		for (ni = 0; ni < NSG_NI; ni++)
			NSG_UNROLL
			for (i = 0; i < 4; i++) {
				const ulong r = row0 + wm + mi * 16 + g + 8 * (i >> 1);
				const ulong col = col0 + wn + ni * 8 + 2 * t + (i & 1);
				float v;

				if (r >= m || col >= n)
					continue;
				v = alpha * acc[mi][ni][i];
				if (beta != 0.0f)
					v += beta * nsg_widen(c[c_in_off + r * n + col], prec);
				c[c_off + r * n + col] = nsg_bits(v, prec);
			}
#else
	for (i = 0; i < NSG_RM; i++)
		for (j = 0; j < 4; j++) {
			const ulong r = row0 + tm + NSG_BM / NSG_RM * i, col = col0 + 4 * tn + j;
			float v;

			if (r >= m || col >= n)
				continue;
			v = alpha * (j == 0   ? acc[i].x
				     : j == 1 ? acc[i].y
				     : j == 2 ? acc[i].z
					      : acc[i].w);
			if (beta != 0.0f)
				v += beta * nsg_widen(c[c_in_off + r * n + col], prec);
			c[c_off + r * n + col] = nsg_bits(v, prec);
		}
#endif
}

__kernel __attribute__((reqd_work_group_size(NSG_THREADS, 1, 1))) void
ns_gemm(const ulong m, const ulong n, const ulong k, const float alpha, __global const ushort *a,
	const ulong a_off, __global const ushort *b, const ulong b_off, const uint b_transposed,
	const float beta, __global ushort *c, const ulong c_in_off, const ulong c_off,
	const uint prec, const uint vec)
{
	/* (NSG_AT is a permutation of each tile's NSG_BM x NSG_BK places) */
	__local nsg_local_t as[2][NSG_BM * NSG_BK] __attribute__((aligned(16)));
	__local nsg_local_t bs[2][NSG_BN * NSG_BK] __attribute__((aligned(16)));
#ifdef NSG_MMA_EMUL
	__local uint scratch_all[NSG_THREADS / 32 * 192] __attribute__((aligned(16)));
#else
	__local uint *scratch_all = 0;
#endif

#ifdef NSG_MMA
	/* on the tensor cores a copy per precision: no branch around each mma.sync */
	if (prec == NSG_BF16)
		nsg_gemm(m, n, k, alpha, a, a_off, b, b_off, b_transposed, beta, c, c_in_off, c_off,
			 NSG_BF16, vec, as, bs, scratch_all);
	else
		nsg_gemm(m, n, k, alpha, a, a_off, b, b_off, b_transposed, beta, c, c_in_off, c_off,
			 NSG_FP16, vec, as, bs, scratch_all);
#else
	/* one copy (PoCL ran the portable kernel's bf16 slower with two) */
	nsg_gemm(m, n, k, alpha, a, a_off, b, b_off, b_transposed, beta, c, c_in_off, c_off, prec,
		 vec, as, bs, scratch_all);
#endif
}

/*
 * The 16-bit workspace's kernels (mb_ns at bf16 or fp16), each as its fp32
 * twin in muon.cl with the workspace's values in precision PREC.
 *
 * X = in / norm, rounded, as m x n with m <= n: in (fp32) is rows x cols,
 * transposed when rows > cols. inv points at 1 / norm (fp32). Work-items:
 * (n, m).
 */
__kernel void ns16_load(__global const float *in, const ulong in_off, const ulong rows,
			const ulong cols, __global const float *inv, const ulong inv_off,
			__global ushort *x, const ulong x_off, const uint prec)
{
	const ulong j = get_global_id(0), i = get_global_id(1);
	const int transpose = rows > cols;
	const ulong m = transpose ? cols : rows, n = transpose ? rows : cols;

	if (i >= m || j >= n)
		return;
	x[x_off + i * n + j] = nsg_bits(
		(transpose ? in[in_off + j * cols + i] : in[in_off + i * cols + j]) * inv[inv_off],
		prec);
}

/* out (fp32) = scale X back in the rows x cols shape. Work-items: (cols, rows). */
__kernel void ns16_store(__global const ushort *x, const ulong x_off, const ulong rows,
			 const ulong cols, const float scale, __global float *out,
			 const ulong out_off, const uint prec)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	const int transpose = rows > cols;
	const ulong n = transpose ? rows : cols;

	if (r >= rows || c >= cols)
		return;
	out[out_off + r * cols + c] =
		scale * nsg_widen(transpose ? x[x_off + c * n + r] : x[x_off + r * n + c], prec);
}

/* x[x_off + i m + i] += a, rounded, for i < m (the Gram method's Q = Z + a I). Work-items: m. */
__kernel void ns16_add_diagonal(__global ushort *x, const ulong x_off, const ulong m,
				const float a, const uint prec)
{
	const ulong i = get_global_id(0);

	if (i >= m)
		return;
	x[x_off + i * m + i] = nsg_bits(nsg_widen(x[x_off + i * m + i], prec) + a, prec);
}
