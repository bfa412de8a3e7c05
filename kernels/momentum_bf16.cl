/*
 * The Muon momentum kept in bf16, as DeepSpeed keeps ZeRO-3's under bf16
 * training: the math in fp32, the momentum stored rounded to nearest even
 * (mb_bf16's rounding), and the Nesterov update from the stored value.
 */

static float bf16_to_float(ushort h)
{
	return as_float((uint)h << 16);
}

static ushort float_to_bf16(float x)
{
	uint bits = as_uint(x);

	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (ushort)((bits >> 16) | 0x40); /* a quiet NaN */
	bits += 0x7fffu + ((bits >> 16) & 1u);
	return (ushort)(bits >> 16);
}

/* m = bf16(beta m + (1 - beta) g); g = (1 - beta) g + beta m. MOM_OFF counts bf16 elements. */
__kernel void muon_momentum_bf16(__global float *grad, const ulong grad_off, __global ushort *mom,
				 const ulong mom_off, const ulong n, const float beta)
{
	const ulong i = get_global_id(0);
	float g, m;
	ushort h;

	if (i >= n)
		return;
	g = grad[grad_off + i];
	m = beta * bf16_to_float(mom[mom_off + i]) + (1.0f - beta) * g;
	h = float_to_bf16(m);
	mom[mom_off + i] = h;
	grad[grad_off + i] = (1.0f - beta) * g + beta * bf16_to_float(h);
}

/* y[yoff + i] = bf16(x[xoff + i]): ZeRO-3's bf16 copy of a sub-group's grads. YOFF counts bf16. */
__kernel void cast_bf16(__global const float *x, const ulong xoff, __global ushort *y,
			const ulong yoff, const ulong n)
{
	const ulong i = get_global_id(0);

	if (i < n)
		y[yoff + i] = float_to_bf16(x[xoff + i]);
}

/* y[yoff + i] = x[xoff + i], bf16 to fp32 (exact): a bf16 grad as the host's fp32 grads get it. XOFF counts bf16. */
__kernel void widen_bf16(__global const ushort *x, const ulong xoff, __global float *y,
			 const ulong yoff, const ulong n)
{
	const ulong i = get_global_id(0);

	if (i < n)
		y[yoff + i] = bf16_to_float(x[xoff + i]);
}
