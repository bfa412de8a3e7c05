/*
 * A 32-bit pattern over a span of a buffer, indexed in 64 bits: zeros, or a
 * NaN to poison an output. It stands in for clEnqueueFillBuffer, which
 * NVIDIA's driver fails with an illegal address (-9999) or hangs on when its
 * range reaches 2^31 bytes (pyopencl issue #395; seen on an H200 on ZeRO-3's
 * first momentum). Each work-item fills the words a global size apart;
 * WIDTH (16, 4, 2 or 1 bytes) divides OFF and the span's length, so every
 * store is aligned; a width under 4 writes PATTERN's low bytes (zeros: any).
 */
__kernel void fill_span(__global uchar *buf, const ulong off, const ulong words, const uint width,
			const uint pattern)
{
	const ulong stride = get_global_size(0);
	ulong i;

	for (i = get_global_id(0); i < words; i += stride) {
		const ulong at = off + i * width;

		if (width == 16)
			*(__global uint4 *)(buf + at) = (uint4)(pattern);
		else if (width == 4)
			*(__global uint *)(buf + at) = pattern;
		else if (width == 2)
			*(__global ushort *)(buf + at) = (ushort)pattern;
		else
			buf[at] = (uchar)pattern;
	}
}
