/*
 * Newton-Schulz's GEMMs at 16-bit precision (lib/mb_gemm16.c builds this
 * file apart from the other kernels, once per path):
 *
 *     C (m x n) = alpha A (m x k) op(B) + beta C,   op(B) = B (k x n) or Bᵀ (B n x k)
 *
 * row-major, every matrix fp32 in memory (the Newton-Schulz workspace stays
 * fp32), A and op(B) rounded to bf16 (nearest even, carried as ushort bits)
 * or fp16 (vstore_half_rte; no cl_khr_fp16 needed) as they are loaded,
 * products accumulated in fp32, and C rounded to the same 16-bit type (and
 * stored back as a float): what a framework's bf16/fp16 matmul computes.
 *
 * One tiling for all paths: a work-group of NSG_THREADS (128) work-items, a
 * 1-D group (4 warps of 32), computes an NSG_BM x NSG_BN (64 x 64) tile of
 * C, stepping through k NSG_BK (16) at a time; the next step's A and op(B)
 * are read from global memory into registers while the current one is
 * multiplied from local memory (two local buffers, one barrier a step).
 * Edges: loads past a matrix read zeros, stores past it are skipped.
 * The inner product, by build option:
 *   (none)            portable: plain OpenCL C, each work-item 8 x 4 outputs
 *                     (4 adjacent columns as a float4: SIMD on a CPU too);
 *   -D NSG_MMA=1      NVIDIA sm_80+: each warp a 32 x 32 quarter of the
 *                     tile as 2 x 4 mma.sync.m16n8k16 (fp32 accumulators),
 *                     fragments read from local memory in the layout of
 *                     the PTX ISA's "Matrix fragments for mma.m16n8k16";
 *   -D NSG_MMA_EMUL=1 the same code with mma.sync emulated from those
 *                     fragment layouts: each lane puts its A and B fragments
 *                     in local memory and computes its own C fragment from
 *                     the warp's, so that a CPU tests the tiling and the
 *                     fragment index arithmetic (only the asm goes untested).
 * Precision is an argument: NSG_BF16 or NSG_FP16.
 */
#pragma OPENCL FP_CONTRACT OFF

#define NSG_BF16 1u
#define NSG_FP16 2u

#define NSG_BM	    64
#define NSG_BN	    64
#define NSG_BK	    16
#define NSG_THREADS 128

#if defined(NSG_MMA) || defined(NSG_MMA_EMUL)
#define NSG_FRAGMENTS 1
#define NSG_LDS	      (NSG_BK + 8)	   /* ushorts a local row: 48 bytes, 16-byte aligned rows */
#define NSG_AT(r, kk) ((r)*NSG_LDS + (kk)) /* row r's k kk: k-major, as the fragments read */
typedef ushort nsg_local_t;
#else
/* row r's k kk: r-major, so that consecutive work-items read consecutive columns */
#define NSG_AT(r, kk) ((kk)*NSG_BM + (r))
typedef float nsg_local_t;
#endif

static ushort nsg_bf16(float x)
{
	uint bits = as_uint(x);

	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (ushort)((bits >> 16) | 0x40); /* a quiet NaN */
	bits += 0x7fffu + ((bits >> 16) & 1u);
	return (ushort)(bits >> 16);
}

/* X's 16 bits in precision PREC */
static ushort nsg_bits(float x, uint prec)
{
	ushort h;

	if (prec == NSG_BF16)
		return nsg_bf16(x);
	vstore_half_rte(x, 0, (__private half *)&h);
	return h;
}

/* 16 bits of precision PREC as a float */
static float nsg_widen(ushort h, uint prec)
{
	if (prec == NSG_BF16)
		return as_float((uint)h << 16);
	return vload_half(0, (const __private half *)&h);
}

static float nsg_round(float x, uint prec)
{
	return nsg_widen(nsg_bits(x, prec), prec);
}

/* What the local tiles hold of X: its 16 bits, or (portable) their value as a float. */
static nsg_local_t nsg_store_value(float x, uint prec)
{
#ifdef NSG_FRAGMENTS
	return nsg_bits(x, prec);
#else
	return nsg_round(x, prec);
#endif
}

/*
 * This work-item's share of the step at K0's tiles, from global memory into
 * RA and RB (zeros past the edges): A's row tid / 2, 8 k from (tid % 2) 8;
 * Bᵀ's likewise; B's (k x n) k tid / 8, 8 columns from (tid % 8) 8.
 */
static void nsg_load(__global const float *a, ulong a_off, __global const float *b, ulong b_off,
		     uint b_transposed, ulong m, ulong n, ulong k, ulong row0, ulong col0, ulong k0,
		     uint tid, float *ra, float *rb)
{
	const uint la_row = tid >> 1, la_k = (tid & 1) * 8;
	const uint lb_k = tid >> 3, lb_col = (tid & 7) * 8;
	uint e;

	for (e = 0; e < 8; e++) {
		const ulong r = row0 + la_row, kx = k0 + la_k + e;

		ra[e] = r < m && kx < k ? a[a_off + r * k + kx] : 0.0f;
	}
	for (e = 0; e < 8; e++) {
		if (b_transposed) {
			const ulong col = col0 + la_row, kx = k0 + la_k + e;

			rb[e] = col < n && kx < k ? b[b_off + col * k + kx] : 0.0f;
		} else {
			const ulong col = col0 + lb_col + e, kx = k0 + lb_k;

			rb[e] = col < n && kx < k ? b[b_off + kx * n + col] : 0.0f;
		}
	}
}

/* RA and RB, rounded, into the local tiles AS (m x k) and BS (op(B)ᵀ: n x k). */
static void nsg_put(__local nsg_local_t *as, __local nsg_local_t *bs, uint b_transposed, uint tid,
		    const float *ra, const float *rb, uint prec)
{
	const uint la_row = tid >> 1, la_k = (tid & 1) * 8;
	const uint lb_k = tid >> 3, lb_col = (tid & 7) * 8;
	uint e;

	for (e = 0; e < 8; e++) {
		as[NSG_AT(la_row, la_k + e)] = nsg_store_value(ra[e], prec);
		if (b_transposed)
			bs[NSG_AT(la_row, la_k + e)] = nsg_store_value(rb[e], prec);
		else
			bs[NSG_AT(lb_col + e, lb_k)] = nsg_store_value(rb[e], prec);
	}
}

#ifdef NSG_FRAGMENTS
/* Two consecutive 16-bit elements as a .b32 register: the lower index in the lower bits. */
static uint nsg_pair(__local const ushort *p)
{
	return *(__local const uint *)p;
}

#ifdef NSG_MMA
/* D = A B + D on the tensor cores (PTX ISA, mma.sync.aligned.m16n8k16). */
static void nsg_mma(float *c, const uint *a, const uint *b, __local uint *scratch, uint lane,
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
static void nsg_mma(float *c, const uint *a, const uint *b, __local uint *scratch, uint lane,
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

__kernel __attribute__((reqd_work_group_size(NSG_THREADS, 1, 1))) void
ns_gemm(const ulong m, const ulong n, const ulong k, const float alpha, __global const float *a,
	const ulong a_off, __global const float *b, const ulong b_off, const uint b_transposed,
	const float beta, __global float *c, const ulong c_off, const uint prec)
{
	__local nsg_local_t as[2][NSG_AT(NSG_BM - 1, NSG_BK - 1) + 1] __attribute__((aligned(16)));
	__local nsg_local_t bs[2][NSG_AT(NSG_BN - 1, NSG_BK - 1) + 1] __attribute__((aligned(16)));
	const uint tid = get_local_id(0);
	const ulong row0 = (ulong)get_group_id(1) * NSG_BM, col0 = (ulong)get_group_id(0) * NSG_BN;
	const ulong nsteps = (k + NSG_BK - 1) / NSG_BK;
	float ra[8], rb[8];
	ulong step;
	uint kk, buf;
#ifdef NSG_FRAGMENTS
	__local uint scratch_all[4 * 192] __attribute__((aligned(16)));
	const uint warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
	const uint wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
	__local uint *scratch = scratch_all + warp * 192;
	float acc[2][4][4];
	uint fa[2][4], fb[4][2], mi, ni, i;

	for (mi = 0; mi < 2; mi++)
		for (ni = 0; ni < 4; ni++)
			for (i = 0; i < 4; i++)
				acc[mi][ni][i] = 0.0f;
#else
	const uint tm = tid >> 4, tn = tid & 15; /* rows tm + 8 i, columns 4 tn .. 4 tn + 3 */
	float4 acc[8], bv;
	float av[8];
	uint i, j;

	for (i = 0; i < 8; i++)
		acc[i] = (float4)(0.0f);
#endif

	/* the first step's tiles into local memory */
	nsg_load(a, a_off, b, b_off, b_transposed, m, n, k, row0, col0, 0, tid, ra, rb);
	nsg_put(as[0], bs[0], b_transposed, tid, ra, rb, prec);
	barrier(CLK_LOCAL_MEM_FENCE);
	for (step = 0; step < nsteps; step++) {
		buf = step & 1;
		/* the next step's tiles into registers while this one is multiplied */
		if (step + 1 < nsteps)
			nsg_load(a, a_off, b, b_off, b_transposed, m, n, k, row0, col0,
				 (step + 1) * NSG_BK, tid, ra, rb);
#ifdef NSG_FRAGMENTS
		for (kk = 0; kk < NSG_BK; kk += 16) {
			for (mi = 0; mi < 2; mi++) {
				__local const ushort *p =
					as[buf] + (wm + mi * 16 + g) * NSG_LDS + kk + 2 * t;

				fa[mi][0] = nsg_pair(p);
				fa[mi][1] = nsg_pair(p + 8 * NSG_LDS);
				fa[mi][2] = nsg_pair(p + 8);
				fa[mi][3] = nsg_pair(p + 8 * NSG_LDS + 8);
			}
			for (ni = 0; ni < 4; ni++) {
				__local const ushort *p =
					bs[buf] + (wn + ni * 8 + g) * NSG_LDS + kk + 2 * t;

				fb[ni][0] = nsg_pair(p);
				fb[ni][1] = nsg_pair(p + 8);
			}
			for (mi = 0; mi < 2; mi++)
				for (ni = 0; ni < 4; ni++)
					nsg_mma(acc[mi][ni], fa[mi], fb[ni], scratch, lane, prec);
		}
#else
		for (kk = 0; kk < NSG_BK; kk++) {
			for (i = 0; i < 8; i++)
				av[i] = as[buf][NSG_AT(tm + 8 * i, kk)];
			bv = vload4(0, bs[buf] + NSG_AT(4 * tn, kk));
			for (i = 0; i < 8; i++)
				acc[i] = mad((float4)(av[i]), bv, acc[i]);
		}
#endif
		/*
		 * The other buffer was last read by the previous step's multiply,
		 * which every work-item finished before the barrier that ended it.
		 */
		if (step + 1 < nsteps)
			nsg_put(as[buf ^ 1], bs[buf ^ 1], b_transposed, tid, ra, rb, prec);
		barrier(CLK_LOCAL_MEM_FENCE);
	}

	/* C = round(alpha acc + beta C); beta 0 reads nothing */
#ifdef NSG_FRAGMENTS
	for (mi = 0; mi < 2; mi++)
		for (ni = 0; ni < 4; ni++)
			for (i = 0; i < 4; i++) {
				const ulong r = row0 + wm + mi * 16 + g + 8 * (i >> 1);
				const ulong col = col0 + wn + ni * 8 + 2 * t + (i & 1);
				float v;

				if (r >= m || col >= n)
					continue;
				v = alpha * acc[mi][ni][i];
				if (beta != 0.0f)
					v += beta * c[c_off + r * n + col];
				c[c_off + r * n + col] = nsg_round(v, prec);
			}
#else
	for (i = 0; i < 8; i++)
		for (j = 0; j < 4; j++) {
			const ulong r = row0 + tm + 8 * i, col = col0 + 4 * tn + j;
			float v;

			if (r >= m || col >= n)
				continue;
			v = alpha * (j == 0   ? acc[i].x
				     : j == 1 ? acc[i].y
				     : j == 2 ? acc[i].z
					      : acc[i].w);
			if (beta != 0.0f)
				v += beta * c[c_off + r * n + col];
			c[c_off + r * n + col] = nsg_round(v, prec);
		}
#endif
}
