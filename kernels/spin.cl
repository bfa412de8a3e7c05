/*
 * A kernel that keeps a queue busy for as long as it is asked, and does
 * nothing else: calibrated Newton-Schulz (mb_spin) runs it for the time the
 * framework's own rate gives the plan's FLOPs. One work-item runs a chain of
 * ITERATIONS dependent multiply-adds on values the compiler cannot know
 * (A and B are arguments), and writes the result, so that none is left out.
 */
__kernel void spin(__global float *sink, const ulong sink_off, const ulong iterations,
		   const float a, const float b)
{
	float x = b;
	ulong i;

	for (i = 0; i < iterations; i++)
		x = mad(x, a, b);
	sink[sink_off] = x;
}
