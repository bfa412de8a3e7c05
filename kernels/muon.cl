/*
 * Muon's device math around the GEMMs: the momentum and Nesterov update,
 * and the pieces of Newton-Schulz that are not matrix products (the
 * Frobenius norm, the normalizing load with its transpose, the scaled store
 * with the transpose back, the Gram method's a I). The GEMMs themselves are
 * CLBlast's.
 *
 * Contraction of a*b + c into fma is off, so that every device computes the
 * momentum bit for bit as the host reference does.
 */
#pragma OPENCL FP_CONTRACT OFF

/* m = beta m + (1 - beta) g; g = (1 - beta) g + beta m (the Nesterov update). */
__kernel void muon_momentum(__global float *grad, const ulong grad_off, __global float *mom,
			    const ulong mom_off, const ulong n, const float beta)
{
	const ulong i = get_global_id(0);
	float g, m;

	if (i >= n)
		return;
	g = grad[grad_off + i];
	m = beta * mom[mom_off + i] + (1.0f - beta) * g;
	mom[mom_off + i] = m;
	grad[grad_off + i] = (1.0f - beta) * g + beta * m;
}

/*
 * Sum of squares of x[off .. off+n) in work-group partials: group g writes
 * partial[part_off + g]. The local size must be a power of two. Each
 * work-item takes the elements a global size apart, the order a GPU wants;
 * a CPU device sums with sumsq_runs instead (mb_ns).
 */
__kernel void sumsq_partial(__global const float *x, const ulong off, const ulong n,
			    __global float *partial, const ulong part_off,
			    __local float *scratch)
{
	const ulong lid = get_local_id(0), lsize = get_local_size(0);
	const ulong stride = get_global_size(0);
	float s = 0.0f, v;
	ulong i, step;

	for (i = get_global_id(0); i < n; i += stride) {
		v = x[off + i];
		s += v * v;
	}
	scratch[lid] = s;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (step = lsize / 2; step > 0; step /= 2) {
		if (lid < step)
			scratch[lid] += scratch[lid + step];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (lid == 0)
		partial[part_off + get_group_id(0)] = scratch[0];
}

/*
 * The same sums with each work-item taking SPAN consecutive elements at a
 * time, SPAN x the global size apart: with SPAN 1 it is sumsq_partial, the
 * coalesced order a GPU wants; a CPU device, whose work-items one core runs
 * one after another, wants SPAN large enough for each to stream its own
 * contiguous run (sumsq_partial's stride there costs a cache line and a
 * page an element: twenty times slower on PoCL at 186 M elements).
 * Newton-Schulz's norm on a CPU device.
 */
__kernel void sumsq_runs(__global const float *x, const ulong off, const ulong n,
			 __global float *partial, const ulong part_off, const ulong span,
			 __local float *scratch)
{
	const ulong lid = get_local_id(0), lsize = get_local_size(0);
	const ulong stride = get_global_size(0) * span;
	float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, v;
	ulong i, j, end, step;

	/* four sums a run, so that a CPU's adds need not wait on each other; a
	 * run of one element only ever adds to a0: sumsq_partial's order */
	for (i = get_global_id(0) * span; i < n; i += stride) {
		end = n - i < span ? n : i + span;
		for (j = i; j + 4 <= end; j += 4) {
			a0 += x[off + j] * x[off + j];
			a1 += x[off + j + 1] * x[off + j + 1];
			a2 += x[off + j + 2] * x[off + j + 2];
			a3 += x[off + j + 3] * x[off + j + 3];
		}
		for (; j < end; j++) {
			v = x[off + j];
			a0 += v * v;
		}
	}
	scratch[lid] = span == 1 ? a0 : (a0 + a1) + (a2 + a3);
	barrier(CLK_LOCAL_MEM_FENCE);
	for (step = lsize / 2; step > 0; step /= 2) {
		if (lid < step)
			scratch[lid] += scratch[lid + step];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (lid == 0)
		partial[part_off + get_group_id(0)] = scratch[0];
}

static float widened(__global const ushort *x, const ulong i)
{
	return as_float((uint)x[i] << 16);
}

/*
 * sumsq_runs over bf16 values (the backward's gradient bucket), each
 * widened exactly to fp32 before it is squared: the sums of their fp32
 * copies, in the same order (with SPAN 1 on every device but a CPU).
 */
__kernel void sumsq_runs_bf16(__global const ushort *x, const ulong off, const ulong n,
			      __global float *partial, const ulong part_off, const ulong span,
			      __local float *scratch)
{
	const ulong lid = get_local_id(0), lsize = get_local_size(0);
	const ulong stride = get_global_size(0) * span;
	float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, v0, v1, v2, v3;
	ulong i, j, end, step;

	/* four sums a run, so that a CPU's adds need not wait on each other; a
	 * run of one element only ever adds to a0: sumsq_partial's order */
	for (i = get_global_id(0) * span; i < n; i += stride) {
		end = n - i < span ? n : i + span;
		for (j = i; j + 4 <= end; j += 4) {
			v0 = widened(x, off + j);
			v1 = widened(x, off + j + 1);
			v2 = widened(x, off + j + 2);
			v3 = widened(x, off + j + 3);
			a0 += v0 * v0;
			a1 += v1 * v1;
			a2 += v2 * v2;
			a3 += v3 * v3;
		}
		for (; j < end; j++) {
			v0 = widened(x, off + j);
			a0 += v0 * v0;
		}
	}
	scratch[lid] = span == 1 ? a0 : (a0 + a1) + (a2 + a3);
	barrier(CLK_LOCAL_MEM_FENCE);
	for (step = lsize / 2; step > 0; step /= 2) {
		if (lid < step)
			scratch[lid] += scratch[lid + step];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (lid == 0)
		partial[part_off + get_group_id(0)] = scratch[0];
}

/*
 * partial[part_off + npartials] = 1 / (sqrt(sum of the partials) + eps);
 * one work-item.
 */
__kernel void norm_finish(__global float *partial, const ulong part_off, const uint npartials,
			  const float eps)
{
	float s = 0.0f;
	uint i;

	for (i = 0; i < npartials; i++)
		s += partial[part_off + i];
	partial[part_off + npartials] = 1.0f / (sqrt(s) + eps);
}

/*
 * X = in / norm, as m x n with m <= n: in is rows x cols, transposed when
 * rows > cols. inv points at 1 / norm. Work-items: (n, m).
 */
__kernel void ns_load(__global const float *in, const ulong in_off, const ulong rows,
		      const ulong cols, __global const float *inv, const ulong inv_off,
		      __global float *x, const ulong x_off)
{
	const ulong j = get_global_id(0), i = get_global_id(1);
	const int transpose = rows > cols;
	const ulong m = transpose ? cols : rows, n = transpose ? rows : cols;

	if (i >= m || j >= n)
		return;
	x[x_off + i * n + j] = (transpose ? in[in_off + j * cols + i] : in[in_off + i * cols + j]) *
			       inv[inv_off];
}

/*
 * out = scale X back in the rows x cols shape (X is m x n, m <= n).
 * Work-items: (cols, rows), so that writes are contiguous.
 */
__kernel void ns_store(__global const float *x, const ulong x_off, const ulong rows,
		       const ulong cols, const float scale, __global float *out, const ulong out_off)
{
	const ulong c = get_global_id(0), r = get_global_id(1);
	const int transpose = rows > cols;
	const ulong n = transpose ? rows : cols;

	if (r >= rows || c >= cols)
		return;
	out[out_off + r * cols + c] = scale * (transpose ? x[x_off + c * n + r] : x[x_off + r * n + c]);
}

/*
 * x[x_off + i m + i] += a for i < m: a I added to the m x m matrix there
 * (the Gram method's Q = Z + a I). Work-items: m.
 */
__kernel void ns_add_diagonal(__global float *x, const ulong x_off, const ulong m, const float a)
{
	const ulong i = get_global_id(0);

	if (i >= m)
		return;
	x[x_off + i * m + i] += a;
}

/*
 * Nothing, as a command of our own: its event marks the start or the end of
 * a run of CLBlast's GEMMs (mb_ns_gemms_only), whose own events may not
 * cover all of their kernels. One work-item.
 */
__kernel void ns_stamp(void)
{
}
