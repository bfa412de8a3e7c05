/*
 * mb_rng: the counter-based random numbers of kernels/rng.cl, on the host.
 *
 * Element i of stream s under seed k is a pure function of (k, s, i): a
 * float uniform in [-1, 1) with 24 random bits, exactly the value the
 * device's fill_uniform produces (mb_rng_cl fills a device buffer with them).
 */
#ifndef MB_RNG_H
#define MB_RNG_H

#include <stdint.h>

/* splitmix64's finalizer. */
static inline uint64_t mb_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline float mb_uniform(uint64_t seed, uint64_t stream, uint64_t i)
{
	uint64_t h = mb_mix64(mb_mix64(seed ^ mb_mix64(stream + 0x9e3779b97f4a7c15ull)) + i);

	return (float)(uint32_t)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

#endif
