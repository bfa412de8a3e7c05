/*
 * mb_ns: Newton-Schulz's methods, precisions, FLOPs and workspace, with no
 * device (mb_ns_cl runs it).
 */
#include "mb_ns.h"

#include <math.h>
#include <string.h>

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

uint64_t mb_ns_elem_bytes(enum mb_precision precision)
{
	return precision == MB_PREC_FP32 ? sizeof(float) : sizeof(uint16_t);
}

uint64_t mb_ns_scratch_float(uint64_t matrix_elems, enum mb_precision precision)
{
	return (matrix_elems * mb_ns_elem_bytes(precision) + sizeof(float) - 1) / sizeof(float);
}

uint64_t mb_ns_workspace_bytes(uint64_t rows, uint64_t cols, enum mb_ns_method method,
			       enum mb_precision precision)
{
	uint64_t m = rows < cols ? rows : cols, n = rows < cols ? cols : rows;
	uint64_t squares = mb_ns_gram_iteration(method, rows, cols) ? 4 : 2;

	return sizeof(float) *
	       (mb_ns_scratch_float(2 * m * n + squares * m * m, precision) + MB_NS_SCRATCH_FLOATS);
}

uint16_t mb_ns_bits16(float x, enum mb_precision precision)
{
	uint32_t bits, sign;
	double ax, scaled;
	int e;

	memcpy(&bits, &x, sizeof(bits));
	if (precision == MB_PREC_BF16) {
		if ((bits & 0x7fffffffu) > 0x7f800000u)
			return (uint16_t)((bits >> 16) | 0x40); /* a quiet NaN */
		bits += 0x7fffu + ((bits >> 16) & 1u);
		return (uint16_t)(bits >> 16);
	}
	sign = (bits >> 16) & 0x8000u;
	ax = fabs((double)x);
	if (isnan(x))
		return (uint16_t)(sign | 0x7e00u);
	if (isinf(x))
		return (uint16_t)(sign | 0x7c00u);
	if (ax < ldexp(1, -14)) /* subnormal (or the smallest normal, rounded up) */
		return (uint16_t)(sign | (uint32_t)nearbyint(ax / ldexp(1, -24)));
	frexp(ax, &e);				   /* ax = f 2^e, f in [0.5, 1): 1.x 2^(e - 1) */
	scaled = nearbyint(ax / ldexp(1, e - 11)); /* 1024 .. 2048 */
	if (scaled == 2048)
		scaled = 1024, e++;
	if (e - 1 > 15)
		return (uint16_t)(sign | 0x7c00u);
	return (uint16_t)(sign | (uint32_t)(e - 1 + 15) << 10 | ((uint32_t)scaled - 1024));
}

float mb_ns_value16(uint16_t h, enum mb_precision precision)
{
	uint32_t bits = (uint32_t)h << 16, e = h >> 10 & 31u, mant = h & 1023u;
	double v;
	float f;

	if (precision == MB_PREC_BF16) {
		memcpy(&f, &bits, sizeof(f));
		return f;
	}
	if (e == 31)
		v = mant ? NAN : INFINITY;
	else
		v = e ? ldexp(1024 + mant, (int)e - 25) : ldexp(mant, -24);
	return (float)(h & 0x8000u ? -v : v);
}

float mb_ns_scale(uint64_t rows, uint64_t cols)
{
	return (float)sqrt(fmax(1.0, (double)rows / (double)cols));
}

/*
 * Measured on PoCL (tests/test_gemm16.c's shapes 64x64 .. 1x1, and ns
 * --verify on 256x768, 1024x1024, 768x256, 131x67), either method,
 * relative Frobenius error against float64 on the unrounded input, with the
 * 16-bit workspace (X, the Gram matrices and the products rounded where
 * they are stored, as a framework's): bf16 at most 2.7e-2 (9.5e-3 to
 * 1.2e-2 on the large shapes), fp16 at most 3.7e-3 (1.2e-3 to 1.6e-3); the
 * fp32 workspace before it measured 2.3e-2 and 3.7e-3. The float64
 * reference on the input rounded to the precision alone is off by 3.3e-3
 * (bf16) and 4.3e-4 (fp16): every one of the iteration's GEMMs rounds its
 * result, about 8x that. The bounds (5e-2, 1e-2) are 1.9x and 2.7x the
 * largest measured.
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
