/*
 * Counter-based random numbers: element i of stream s under seed k is a pure
 * function of (k, s, i), so any device, the host, and any order of work give
 * the same numbers (lib/mb_rng.h computes the same function on the host).
 */

/* splitmix64's finalizer: a bijective mix of 64 bits. */
ulong mb_mix64(ulong z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
	return z ^ (z >> 31);
}

/* A float uniform in [-1, 1) with 24 random bits: exact on every device. */
float mb_uniform(ulong seed, ulong stream, ulong i)
{
	ulong h = mb_mix64(mb_mix64(seed ^ mb_mix64(stream + 0x9e3779b97f4a7c15UL)) + i);

	return (float)(uint)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

/* out[off + i] = scale * uniform(seed, stream, first + i) for i < n. */
__kernel void fill_uniform(__global float *out, const ulong off, const ulong n, const ulong seed,
			   const ulong stream, const ulong first, const float scale)
{
	const ulong i = get_global_id(0);

	if (i < n)
		out[off + i] = scale * mb_uniform(seed, stream, first + i);
}
