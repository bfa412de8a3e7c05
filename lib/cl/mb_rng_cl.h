/*
 * mb_rng_cl: the device fill of mb_rng's random numbers (kernels/rng.cl).
 */
#ifndef MB_RNG_CL_H
#define MB_RNG_CL_H

#include <stdint.h>

#include "mb_cl.h"
#include "mb_rng.h"

/*
 * Enqueue on the compute queue: BUF[off + i] = scale * mb_uniform(seed,
 * stream, first + i) for i < N (offsets in floats).
 */
int mb_rng_fill(const struct mb_cl *cl, cl_mem buf, uint64_t off, uint64_t n, uint64_t seed,
		uint64_t stream, uint64_t first, float scale);

#endif
