/*
 * mb_ns: Newton-Schulz's methods, precisions, FLOPs and workspace, with no
 * device (mb_ns_cl runs it).
 */
#include "mb_ns.h"

#include <math.h>

/* mb_ns_flops's count of the Gram method and iterate_gram's schedule go together */
_Static_assert(MB_NS_ITERATIONS == 5 && MB_NS_RESTART == 2,
	       "recount the Gram method's FLOPs in mb_ns_flops");

const char *const mb_ns_method_names[MB_NS_NMETHODS] = { MB_NS_METHODS(MB_NAME_, ) };

const char *const mb_precision_names[MB_NPRECISIONS] = { MB_PRECISIONS(MB_NAME_, ) };

/* Whether METHOD runs the Gram iteration on ROWS x COLS: not on a square matrix. */
bool mb_ns_gram_iteration(enum mb_ns_method method, uint64_t rows, uint64_t cols)
{
	return method == MB_NS_GRAM && rows != cols;
}

uint64_t mb_ns_flops(uint64_t rows, uint64_t cols, enum mb_ns_method method)
{
	unsigned __int128 m = rows < cols ? rows : cols, n = rows < cols ? cols : rows, flops;

	if (mb_ns_gram_iteration(method, rows, cols))
		flops = 8 * m * m * n + 28 * m * m * m;
	else
		flops = MB_NS_ITERATIONS * (4 * m * m * n + 2 * m * m * m);
	return flops > UINT64_MAX ? UINT64_MAX : (uint64_t)flops;
}

uint64_t mb_ns_workspace_bytes(uint64_t rows, uint64_t cols, enum mb_ns_method method)
{
	uint64_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
	uint64_t squares = mb_ns_gram_iteration(method, rows, cols) ? 4 : 2;

	return sizeof(float) * (2 * m * n + squares * m * m + MB_NS_SCRATCH_FLOATS);
}

float mb_ns_scale(uint64_t rows, uint64_t cols)
{
	return (float)sqrt(fmax(1.0, (double)rows / (double)cols));
}

/*
 * Measured on PoCL (tests/test_gemm16.c's shapes 64x64 .. 1x1, and ns
 * --verify on 256x768, 1024x1024, 1000x3000, 768x256, 131x67), either
 * method, relative Frobenius error against float64 on the unrounded input:
 * bf16 at most 2.3e-2 (1.1e-2 to 1.2e-2 on the large shapes), fp16 at most
 * 3.7e-3 (1.1e-3 to 1.6e-3); the float64 reference on the input rounded to
 * the precision alone is off by 3.3e-3 (bf16) and 4.3e-4 (fp16): every one
 * of the iteration's GEMMs rounds its result, about 7x that. The bounds are
 * twice the largest measured.
 */
double mb_ns_tolerance(enum mb_precision precision)
{
	switch (precision) {
	case MB_PREC_BF16:
		return 5e-2;
	case MB_PREC_FP16:
		return 1e-2;
	default:
		return 1e-4;
	}
}
