/*
 * mb_rng_cl: filling device buffers with the counter-based random numbers.
 */
#include "mb_rng_cl.h"

int mb_rng_fill(const struct mb_cl *cl, cl_mem buf, uint64_t off, uint64_t n, uint64_t seed,
		uint64_t stream, uint64_t first, float scale)
{
	cl_ulong o = off, count = n, k = seed, s = stream, f = first;
	size_t global, local;
	cl_kernel kern;
	cl_int st;
	int err;

	if (!n)
		return 0;
	if ((err = mb_cl_kernel(cl, "fill_uniform", &kern)))
		return err;
	if ((err = mb_cl_local_size(cl, kern, "fill_uniform", 1, &local))) {
		clReleaseKernel(kern);
		return err;
	}
	/* the kernel skips the work-items past N */
	global = mb_cl_round_up(n, local);
	st = clSetKernelArg(kern, 0, sizeof(buf), &buf);
	st = st ? st : clSetKernelArg(kern, 1, sizeof(o), &o);
	st = st ? st : clSetKernelArg(kern, 2, sizeof(count), &count);
	st = st ? st : clSetKernelArg(kern, 3, sizeof(k), &k);
	st = st ? st : clSetKernelArg(kern, 4, sizeof(s), &s);
	st = st ? st : clSetKernelArg(kern, 5, sizeof(f), &f);
	st = st ? st : clSetKernelArg(kern, 6, sizeof(scale), &scale);
	st = st ? st
		: clEnqueueNDRangeKernel(cl->compute, kern, 1, NULL, &global, &local, 0, NULL,
					 NULL);
	clReleaseKernel(kern);
	return mb_cl_check(cl, st, "fill_uniform", "%llu elements", (unsigned long long)n);
}
