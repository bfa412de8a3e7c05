/*
 * Our 16-bit GEMM (kernels/ns_gemm.cl) on the default device (PoCL in CI):
 * the portable kernel and the mma path's tiling with mma.sync emulated, at
 * both precisions, op(B) both ways, with alpha and beta, at shapes that are
 * not multiples of the tiles (64 x 64 x 16, mma's 128 x 128 x 32), from
 * odd and from 16-byte-aligned offsets, against a host reference on the
 * same rounded inputs; the choice of path from a device's description;
 * mb_gemm16_open on this device; and Newton-Schulz at bf16 and fp16 by
 * either method, on either path, against the float64 reference within
 * mb_ns_tolerance.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_err.h"
#include "mb_gemm16.h"
#include "mb_ledger.h"
#include "mb_ns_cl.h"
#include "mb_rng_cl.h"

#include "device.h"

/* X rounded to bf16, nearest even, as the kernel rounds it. */
static float host_bf16(float x)
{
	uint32_t bits;

	memcpy(&bits, &x, sizeof(bits));
	bits += 0x7fffu + ((bits >> 16) & 1u);
	bits &= 0xffff0000u;
	memcpy(&x, &bits, sizeof(x));
	return x;
}

/* X rounded to fp16, nearest even (11 significant bits, subnormals below 2^-14). */
static float host_fp16(float x)
{
	double ax = fabs(x), scale;
	int e;

	if (ax == 0)
		return x;
	frexp(ax, &e); /* ax = f 2^e, f in [0.5, 1) */
	scale = e - 1 < -14 ? ldexp(1, -24) : ldexp(1, e - 11);
	ax = nearbyint(ax / scale) * scale;
	if (ax >= 65520)
		ax = INFINITY;
	return (float)(x < 0 ? -ax : ax);
}

static float host_round(float x, enum mb_precision p)
{
	return p == MB_PREC_BF16 ? host_bf16(x) : host_fp16(x);
}

/*
 * mb_ns_bits16 and mb_ns_value16 (the host's side of the 16-bit workspace)
 * round as the rounding above and the kernels do: on random values of every
 * magnitude, ties, the largest fp16 and past it, subnormals, zeros, NaN.
 */
static void host_bits16(void **state)
{
	static const float edges[] = { 0.0f,	 -0.0f,		 1.0f,		-1.0f,
				       65504.0f, 65519.0f,	 65520.0f,	1e9f,
				       -1e9f,	 6.1035156e-05f, 6.0e-08f,	2.98e-08f,
				       1e-10f,	 1.00048828125f, 1.0009765625f, 3.4028235e38f,
				       INFINITY, -INFINITY };
	uint32_t state32 = 99;
	int p, i;

	(void)state;
	for (p = MB_PREC_BF16; p <= MB_PREC_FP16; p++) {
		for (i = 0; i < 200000 + (int)(sizeof(edges) / sizeof(edges[0])); i++) {
			float x, want, got;
			uint32_t b;

			if (i < (int)(sizeof(edges) / sizeof(edges[0]))) {
				x = edges[i];
			} else {
				state32 = state32 * 1664525u + 1013904223u;
				b = state32 & 0x7fffffffu;
				/* magnitudes from 2^-40 to 2^30, either sign */
				b = ((b % (70u << 23)) + (87u << 23)) | (state32 & 0x80000000u);
				memcpy(&x, &b, sizeof(x));
			}
			want = host_round(x, (enum mb_precision)p);
			got = mb_ns_value16(mb_ns_bits16(x, (enum mb_precision)p),
					    (enum mb_precision)p);
			if (!(got == want && signbit(got) == signbit(want)))
				fail_msg("%s of %.9g: %.9g, want %.9g", mb_precision_names[p], x,
					 got, want);
		}
		assert_true(isnan(mb_ns_value16(mb_ns_bits16(NAN, (enum mb_precision)p),
						(enum mb_precision)p)));
	}
	assert_int_equal(mb_ns_bits16(1.0f, MB_PREC_FP16), 0x3c00);
	assert_int_equal(mb_ns_bits16(1.0f, MB_PREC_BF16), 0x3f80);
	assert_int_equal(mb_ns_bits16(-2.0f, MB_PREC_FP16), 0xc000);
}

static void fill_random(float *x, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = (float)((double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0);
	}
}

/*
 * One GEMM on the device by G and on the host, in one 16-bit buffer with A,
 * B and C at odd or (ALIGNED) 16-byte offsets, C_in at C's place or
 * (C_APART) after it; each element within a 16-bit rounding of its own size
 * plus one of the sum of the magnitudes (the order of the sum differs).
 */
static void check_in(const struct mb_gemm16 *g, enum mb_precision p, bool bt, uint64_t m,
		     uint64_t n, uint64_t k, float alpha, float beta, bool aligned, bool c_apart)
{
	/* odd offsets (loads one by one), or multiples of 8 (16-byte loads where rows allow) */
	const uint64_t a_off = aligned ? 8 : 3;
	const uint64_t b_off = aligned ? (a_off + m * k + 15) / 8 * 8 : a_off + m * k + 5;
	const uint64_t c_off = aligned ? (b_off + n * k + 15) / 8 * 8 : b_off + n * k + 7;
	const uint64_t cin_off = c_apart ? c_off + m * n + 5 : c_off;
	const uint64_t total = cin_off + m * n + 11;
	const double eps = p == MB_PREC_BF16 ? 1.0 / 256 : 1.0 / 2048;
	float *x = malloc(total * sizeof(float)), *out = malloc(m * n * sizeof(float));
	uint16_t *bits = malloc(total * sizeof(uint16_t));
	uint64_t i, j, l;
	cl_mem buf;
	cl_int st;

	assert_non_null(x);
	assert_non_null(out);
	assert_non_null(bits);
	fill_random(x, total, (uint32_t)(m * 7919 + n * 131 + k + bt));
	if (beta == 0) /* beta 0 reads nothing: NaN in C_in must not show */
		for (i = 0; i < m * n; i++)
			x[cin_off + i] = NAN;
	for (i = 0; i < total; i++) { /* the workspace holds the precision's values */
		bits[i] = mb_ns_bits16(x[i], p);
		x[i] = host_round(x[i], p);
	}
	buf = clCreateBuffer(cl.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
			     total * sizeof(uint16_t), bits, &st);
	assert_int_equal(st, CL_SUCCESS);
	assert_int_equal(mb_gemm16_enqueue(g, cl.compute, p, bt, m, n, k, alpha, buf, a_off, buf,
					   b_off, beta, buf, cin_off, c_off, NULL),
			 0);
	assert_int_equal(clEnqueueReadBuffer(cl.compute, buf, CL_TRUE, c_off * sizeof(uint16_t),
					     (m * n + 1) * sizeof(uint16_t), bits, 0, NULL, NULL),
			 CL_SUCCESS);
	for (i = 0; i < m * n; i++)
		out[i] = mb_ns_value16(bits[i], p);
	/* the element after C is untouched, and so is C_in apart */
	assert_true(mb_ns_value16(bits[m * n], p) == x[c_off + m * n]);
	if (c_apart) {
		assert_int_equal(clEnqueueReadBuffer(cl.compute, buf, CL_TRUE,
						     cin_off * sizeof(uint16_t),
						     m * n * sizeof(uint16_t), bits, 0, NULL, NULL),
				 CL_SUCCESS);
		for (i = 0; i < m * n; i++)
			assert_true(mb_ns_value16(bits[i], p) == x[cin_off + i] ||
				    (isnan(x[cin_off + i]) && isnan(mb_ns_value16(bits[i], p))));
	}
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			double s = 0, mag = 0, want, c = x[cin_off + i * n + j];

			for (l = 0; l < k; l++) {
				double av = host_round(x[a_off + i * k + l], p);
				double bv = host_round(
					bt ? x[b_off + j * k + l] : x[b_off + l * n + j], p);

				s += av * bv;
				mag += fabs(av * bv);
			}
			want = alpha * s + (beta != 0 ? beta * c : 0);
			mag = fabs(alpha) * mag + (beta != 0 ? fabs(beta * c) : 0);
			if (!(fabs(out[i * n + j] - want) <= eps * (fabs(want) + mag / 8) + 1e-30))
				fail_msg(
					"%s %s %s %llux%llux%llu alpha %g beta %g: C[%llu][%llu] = "
					"%.8g, want %.8g",
					mb_gemm16_path_names[g->path], mb_precision_names[p],
					bt ? "Bᵀ" : "B", (unsigned long long)m,
					(unsigned long long)n, (unsigned long long)k, alpha, beta,
					(unsigned long long)i, (unsigned long long)j,
					out[i * n + j], want);
			/* the result is a value of the precision */
			assert_true(host_round(out[i * n + j], p) == out[i * n + j]);
		}
	clReleaseMemObject(buf);
	free(x);
	free(out);
	free(bits);
}

static void check_one(const struct mb_gemm16 *g, enum mb_precision p, bool bt, uint64_t m,
		      uint64_t n, uint64_t k, float alpha, float beta, bool aligned)
{
	check_in(g, p, bt, m, n, k, alpha, beta, aligned, false);
}

/* Shapes: one element, odd edges, several tiles, and NS's on the tests' matrices. */
static const uint64_t shapes[][3] = {
	{ 1, 1, 1 },	 { 17, 33, 9 },	  { 100, 70, 130 }, { 64, 64, 16 },   { 65, 129, 17 },
	{ 48, 48, 160 }, { 48, 160, 48 }, { 67, 67, 131 },  { 200, 150, 70 }, { 129, 260, 36 },
};

static void check_path(enum mb_gemm16_path path, unsigned flags)
{
	struct mb_gemm16 g;
	size_t s;
	int p;

	if (mb_gemm16_init(&g, &cl, path, flags, NULL))
		fail_msg("%s", mb_errmsg());
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (p = MB_PREC_BF16; p <= MB_PREC_FP16; p++) {
			const uint64_t *d = shapes[s];

			check_one(&g, (enum mb_precision)p, false, d[0], d[1], d[2], 1.0f, 0.0f,
				  false);
			check_one(&g, (enum mb_precision)p, true, d[0], d[1], d[2], 1.0f, 0.0f,
				  false);
			check_one(&g, (enum mb_precision)p, false, d[0], d[1], d[2], 1.0f, 0.0f,
				  true);
			check_one(&g, (enum mb_precision)p, true, d[0], d[1], d[2], 1.0f, 0.0f,
				  true);
			check_one(&g, (enum mb_precision)p, s % 2, d[0], d[1], d[2], 2.0315f,
				  -4.775f, s % 3 == 0);
			/* the iteration's additions: C_in elsewhere, no copy */
			check_in(&g, (enum mb_precision)p, s % 2 == 0, d[0], d[1], d[2], 1.0f,
				 3.4445f, s % 3 != 0, true);
		}
	mb_gemm16_release(&g);
}

static void portable_matches_host(void **state)
{
	(void)state;
	check_path(MB_GEMM16_PORTABLE, 0);
}

static void emulated_mma_matches_host(void **state)
{
	(void)state;
	check_path(MB_GEMM16_MMA_EMUL, 0);
}

/*
 * G on a few shapes, both precisions, op(B) both ways, with alpha and beta
 * and C_in apart: odd sizes in one work-group and sizes over several.
 */
static void check_some(const struct mb_gemm16 *g)
{
	static const uint64_t some[][3] = { { 17, 33, 9 }, { 100, 70, 130 }, { 129, 260, 72 } };
	size_t s;
	int p;

	for (s = 0; s < sizeof(some) / sizeof(some[0]); s++)
		for (p = MB_PREC_BF16; p <= MB_PREC_FP16; p++) {
			check_one(g, (enum mb_precision)p, s % 2, some[s][0], some[s][1],
				  some[s][2], 1.0f, 0.0f, s != 1);
			check_in(g, (enum mb_precision)p, s % 2 == 0, some[s][0], some[s][1],
				 some[s][2], 2.0315f, -4.775f, s == 1, true);
		}
}

/*
 * Whether the emulation of mma tile T (TEXT) fits this device's local
 * memory: its tiles and the emulation's scratch (768 bytes a warp); said
 * where not (skipped).
 */
static bool emulation_fits(const char *text, const struct mb_gemm16_tile *t)
{
	cl_ulong local = 0;

	assert_int_equal(clGetDeviceInfo(cl.device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local,
					 NULL),
			 CL_SUCCESS);
	if (4ull * (t->bm + t->bn) * t->bk + t->threads / 32 * 768ull <= local)
		return true;
	print_message("tile %s: past this device's %llu bytes of local memory with the "
		      "emulation's scratch: skipped\n",
		      text, (unsigned long long)local);
	return false;
}

/*
 * Other tiles of the mma path, emulated: smaller blocks of 4 warps, k 16
 * and 64 at a time (the swizzle's other widths), 64 x 64 warp tiles, a
 * 32-wide B (the k x n tile's narrow swizzle), tiles filled by cp.async
 * (emulated: a plain 16-byte copy, so the addresses are what is tested;
 * groups at the edges or unaligned still through registers); a few
 * shapes each, both precisions, op(B) both ways, C_in apart.
 */
static void emulated_mma_tiles_match_host(void **state)
{
	static const char *const tiles[] = { "64x64x16/128/2",	       "64x128x64/128/2",
					     "128x256x32/256/4",       "64x32x32/128/2",
					     "128x128x32/256/4/async", "64x32x32/128/2/async" };
	struct mb_gemm16_tile t;
	struct mb_gemm16 g;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tiles) / sizeof(tiles[0]); i++) {
		assert_int_equal(mb_gemm16_tile_parse(tiles[i], &t), 0);
		if (!emulation_fits(tiles[i], &t))
			continue;
		struct mb_gemm16_classes one = { .n = 1, .tile = { t } };

		if (mb_gemm16_init(&g, &cl, MB_GEMM16_MMA_EMUL, 0, &one))
			fail_msg("%s: %s", tiles[i], mb_errmsg());
		assert_int_equal(g.classes.tile[0].bn, t.bn);
		print_message("tile %s\n", tiles[i]);
		check_some(&g);
		mb_gemm16_release(&g);
	}
}

/*
 * What tune --ns tries: tiles of each path, the path's default first, none
 * twice; each of the mma path's emulated on one shape that spans several
 * work-groups with edges, op(B) both ways, so that no configuration the
 * tuner may store reaches a GPU untried.
 */
/* TEXT, an mma tile, emulated on one shape, op(B) both ways, C_in apart once. */
static void emulate_tile(const char *text)
{
	struct mb_gemm16_classes one = { .n = 1 };
	struct mb_gemm16 g;

	assert_int_equal(mb_gemm16_tile_parse(text, &one.tile[0]), 0);
	if (!emulation_fits(text, &one.tile[0]))
		return;
	if (mb_gemm16_init(&g, &cl, MB_GEMM16_MMA_EMUL, 0, &one))
		fail_msg("%s: %s", text, mb_errmsg());
	check_one(&g, MB_PREC_BF16, false, 300, 270, 72, 1.0f, 0.0f, true);
	check_in(&g, MB_PREC_FP16, true, 300, 270, 40, 2.0315f, -4.775f, true, true);
	/* n a multiple of 8, aligned: a B that is not transposed filled whole (cp.async's k x n) */
	check_one(&g, MB_PREC_FP16, false, 130, 136, 72, 1.0f, 0.0f, true);
	mb_gemm16_release(&g);
}

static void tune_tiles_emulated(void **state)
{
	static const enum mb_gemm16_path paths[] = { MB_GEMM16_PORTABLE, MB_GEMM16_MMA };
	struct mb_gemm16_tile t, d;
	const char *const *tiles;
	size_t p, i, j, n;

	(void)state;
	for (p = 0; p < 2; p++) {
		tiles = mb_gemm16_tune_tiles(paths[p], &n);
		assert_true(n >= 4);
		d = mb_gemm16_default_tile(paths[p]);
		for (i = 0; i < n; i++) {
			if (mb_gemm16_tile_parse(tiles[i], &t))
				fail_msg("%s: %s", tiles[i], mb_errmsg());
			assert_int_equal(!t.warps_n, paths[p] == MB_GEMM16_PORTABLE);
			if (!i)
				assert_memory_equal(&t, &d, sizeof(t));
			for (j = 0; j < i; j++)
				assert_string_not_equal(tiles[i], tiles[j]);
			if (paths[p] == MB_GEMM16_MMA)
				emulate_tile(tiles[i]);
		}
	}
}

/*
 * ptxas's verbose log (-cl-nv-verbose, or ptxas -v): ns_gemm's registers,
 * stack frame and spills, not another kernel's.
 */
static void registers_from_the_log(void **state)
{
	static const char log[] =
		"ptxas info    : 0 bytes gmem\n"
		"ptxas info    : Compiling entry function 'ns16_load' for 'sm_90'\n"
		"ptxas info    : Function properties for ns16_load\n"
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		"ptxas info    : Used 18 registers, 412 bytes cmem[0]\n"
		"ptxas info    : Compiling entry function 'ns_gemm' for 'sm_90'\n"
		"ptxas info    : Function properties for ns_gemm\n"
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		"ptxas info    : Used 168 registers, 32768 bytes smem, 464 bytes cmem[0]\n";
	/* ns_gemm's accumulators in local memory, then another kernel's figures after it */
	static const char local[] =
		"ptxas info    : Compiling entry function 'ns_gemm' for 'sm_80'\n"
		"ptxas info    : Function properties for ns_gemm\n"
		"    320 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
		"ptxas info    : Used 116 registers, used 1 barriers, 320 bytes cumulative stack "
		"size, 32768 bytes smem\n"
		"ptxas info    : Compiling entry function 'ns16_load' for 'sm_80'\n"
		"ptxas info    : Function properties for ns16_load\n"
		"    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
		"ptxas info    : Used 18 registers\n";
	/* ns_gemm's lines without a stack frame's, then another kernel's that has one */
	static const char other[] =
		"ptxas info    : Compiling entry function 'ns_gemm' for 'sm_90'\n"
		"ptxas info    : Used 99 registers\n"
		"ptxas info    : Compiling entry function 'ns16_store' for 'sm_90'\n"
		"    64 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n";
	/* the driver's own log (-cl-nv-verbose, as NVIDIA's OpenCL writes it) */
	static const char driver[] =
		"ptxas         : info    : Compiling entry function 'ns_gemm' for 'sm_90'\n"
		"ptxas         : info    : Function properties for ns_gemm\n"
		"ptxas         .     320 bytes stack frame, 8 bytes spill stores, 8 bytes spill "
		"loads\n"
		"ptxas         : info    : Used 116 registers, 32768 bytes smem, 464 bytes cmem[0]\n";
	const struct {
		const char *log;
		unsigned registers, stack_bytes, spill_bytes;
	} cases[] = { { driver, 116, 320, 16 },
		      { log, 168, 0, 0 },
		      { local, 116, 320, 20 },
		      { other, 99, 0, 0 } };
	struct mb_gemm16_ptxas p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(mb_gemm16_ptxas_info(cases[i].log, &p));
		assert_int_equal(p.registers, cases[i].registers);
		assert_int_equal(p.stack_bytes, cases[i].stack_bytes);
		assert_int_equal(p.spill_bytes, cases[i].spill_bytes);
	}
	assert_false(mb_gemm16_ptxas_info("Build succeeded.\n", &p));
	assert_int_equal(p.registers, 0);
	assert_false(mb_gemm16_ptxas_info("", &p));
}

/* A tile the kernel cannot run is refused, saying why. */
static void tiles_refused(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "128x128x32", "expected BMxBNxBK" },
		{ "128x128x32/256/4x", "expected BMxBNxBK" },
		{ "64x64x16/128/async", "expected BMxBNxBK" },
		{ "128x128x32/256/4/asyn", "expected BMxBNxBK" },
		{ "128x128x32/256/4/async/async", "expected BMxBNxBK" },
		{ "/async", "expected BMxBNxBK" },
		{ "-128x128x32/256/4", "expected BMxBNxBK" },
		{ "128x-128x32/256/4", "expected BMxBNxBK" },
		{ "128x 128x32/256/4", "expected BMxBNxBK" },
		{ "128x99999x32/256/4", "at most 4096" },
		{ "4294967424x128x32/256/4", "at most 4096" },
		{ "64x4294967360x16/128", "at most 4096" },
		{ "128x96x32/128/2", "BN must be 16, 32 or a multiple of 64" },
		{ "64x48x32/64/1", "BN must be 16, 32 or a multiple of 64" },
		{ "128x128x48/256/4", "BK must be" },
		{ "128x128x32/100/4", "whole warps" },
		{ "128x128x32/256/3", "whole warps" },
		{ "128x128x32/2048/4", "whole warps" },
		{ "120x128x32/256/4", "whole 16 x 16s" },
		{ "128x64x32/256/8", "whole 16 x 16s" },
		{ "32x32x16/128/2", "groups of 8" },
		{ "256x256x32/256/4", "past 49152" },
		{ "64x64x12/128", "BK must be 8" },
		{ "64x64x16/100", "whole rows of 4" },
		{ "64x62x16/128", "whole rows of 4" },
		{ "64x64x16/32", "whole rows of 4" },
		{ "32x32x8/64", "groups of 8" },
		{ "128x128x32/256", "past 49152" },
	};
	struct mb_gemm16_tile t;
	char text[64];
	size_t i;

	(void)state;
	assert_int_equal(mb_gemm16_tile_parse("128x128x32/256/4", &t), 0);
	assert_int_equal(t.bm, 128);
	assert_int_equal(t.warps_n, 4);
	assert_int_equal(t.async, 0);
	assert_int_equal(mb_gemm16_tile_parse("128x64x32/128/2/async", &t), 0);
	assert_true(t.bn == 64 && t.warps_n == 2 && t.async);
	mb_gemm16_tile_text(&t, text, sizeof(text));
	assert_string_equal(text, "128x64x32/128/2/async");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (mb_gemm16_tile_parse(bad[i].text, &t) != -MB_EINPUT ||
		    !strstr(mb_errmsg(), bad[i].why))
			fail_msg("%s: '%s', want '%s'", bad[i].text, mb_errmsg(), bad[i].why);
	}
}

/*
 * Other tiles of the portable path: fewer work-items, k 8 and 32 at a time,
 * 16 and 4 rows a work-item, wider than tall and taller than wide; a few
 * shapes each, both precisions, op(B) both ways, C_in apart.
 */
static void portable_tiles_match_host(void **state)
{
	static const char *const tiles[] = { "32x64x16/64", "64x32x8/32", "128x64x32/256",
					     "32x32x32/64" };
	struct mb_gemm16_classes one = { .n = 1 };
	struct mb_gemm16 g;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tiles) / sizeof(tiles[0]); i++) {
		assert_int_equal(mb_gemm16_tile_parse(tiles[i], &one.tile[0]), 0);
		assert_int_equal(one.tile[0].warps_n, 0);
		if (mb_gemm16_init(&g, &cl, MB_GEMM16_PORTABLE, 0, &one))
			fail_msg("%s: %s", tiles[i], mb_errmsg());
		print_message("tile %s\n", tiles[i]);
		check_some(&g);
		mb_gemm16_release(&g);
	}
	/* a tile of the other path is refused */
	assert_int_equal(mb_gemm16_tile_parse("64x64x16/128/2", &one.tile[0]), 0);
	assert_int_equal(mb_gemm16_init(&g, &cl, MB_GEMM16_PORTABLE, 0, &one), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "not one of the portable path's"));
}

/*
 * Classes: a GEMM runs the kernel of the first class whose bound holds its
 * C (m n elements), the last class the rest; each class's kernel is its
 * own tile's (a small and a large GEMM through one mb_gemm16 of two
 * portable tiles, both right); the text round-trips; lists that are not
 * classes are refused, saying why.
 */
static void classes_choose_by_size(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "", "expected BMxBNxBK" },
		{ "4096:64x64x16/128", "the last entry has no bound" },
		{ "64x64x16/128,128x128x32/256/4", "only the last entry" },
		{ "4096:32x64x16/64,1024:64x64x16/128,64x64x16/128", "not a bound past" },
		{ "0:32x64x16/64,64x64x16/128", "not a bound past" },
		{ "-5:32x64x16/64,64x64x16/128", "not a bound past" },
		{ "4096:64x64x16/128/2,64x64x16/128", "mixed" },
		{ "1:32x64x16/64,2:32x64x16/64,3:32x64x16/64,4:32x64x16/64,5:32x64x16/64,"
		  "6:32x64x16/64,64x64x16/128",
		  "more than 6" },
		{ "4096:64x64x12/128,64x64x16/128", "BK must be" },
	};
	struct mb_gemm16_classes c;
	struct mb_gemm16 g;
	char text[256];
	size_t i;

	(void)state;
	assert_int_equal(mb_gemm16_classes_parse("4096:32x64x16/64,65536:64x64x16/128,"
						 "128x128x16/256",
						 &c),
			 0);
	assert_int_equal(c.n, 3);
	assert_true(c.outputs[0] == 4096 && c.outputs[1] == 65536 && c.outputs[2] == 0);
	assert_int_equal(mb_gemm16_class_of(&c, 64, 64), 0); /* 4096: the bound holds */
	assert_int_equal(mb_gemm16_class_of(&c, 64, 65), 1);
	assert_int_equal(mb_gemm16_class_of(&c, 256, 256), 1);
	assert_int_equal(mb_gemm16_class_of(&c, 256, 257), 2);
	assert_int_equal(mb_gemm16_class_of(&c, 1ull << 40, 1ull << 40), 2); /* no overflow */
	mb_gemm16_classes_text(&c, text, sizeof(text));
	assert_string_equal(text, "4096:32x64x16/64,65536:64x64x16/128,128x128x16/256");
	assert_int_equal(mb_gemm16_classes_parse("128x128x32/256/4", &c), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(mb_gemm16_class_of(&c, 1, 1), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mb_gemm16_classes_parse(bad[i].text, &c) != -MB_EINPUT ||
		    !strstr(mb_errmsg(), bad[i].why))
			fail_msg("'%s': '%s', want '%s'", bad[i].text, mb_errmsg(), bad[i].why);

	/* two tiles in one mb_gemm16: GEMMs on either side of the bound, each right */
	assert_int_equal(mb_gemm16_classes_parse("2000:32x64x16/64,64x128x16/128", &c), 0);
	assert_int_equal(mb_gemm16_class_of(&c, 40, 50), 0);
	assert_int_equal(mb_gemm16_class_of(&c, 100, 130), 1);
	assert_int_equal(mb_gemm16_class_of(&c, 129, 260), 1);
	if (mb_gemm16_init(&g, &cl, MB_GEMM16_PORTABLE, 0, &c))
		fail_msg("%s", mb_errmsg());
	assert_true(g.kernel[0] && g.kernel[1] && g.kernel[0] != g.kernel[1]);
	check_one(&g, MB_PREC_BF16, false, 40, 50, 70, 1.0f, 0.0f, true);   /* 2000 */
	check_one(&g, MB_PREC_FP16, true, 100, 130, 33, 1.0f, 0.0f, false); /* 13000 */
	check_in(&g, MB_PREC_BF16, true, 129, 260, 72, 2.0315f, -4.775f, true, true);
	mb_gemm16_release(&g);
}

/*
 * mb_gemm16_open's tries on the mma path: as given, then every tile without
 * cp.async (only where one had it), then also without ldmatrix; the tiles
 * otherwise as given.
 */
static void fallback_tries(void **state)
{
	struct mb_gemm16_classes given, out;
	unsigned flags;

	(void)state;
	assert_int_equal(
		mb_gemm16_classes_parse("4096:64x64x32/128/2,128x128x32/256/4/async", &given), 0);
	assert_true(mb_gemm16_fallback(&given, 0, &out, &flags));
	assert_int_equal(flags, 0);
	assert_memory_equal(&out, &given, sizeof(out));
	assert_true(mb_gemm16_fallback(&given, 1, &out, &flags));
	assert_int_equal(flags, 0);
	assert_true(out.n == 2 && !out.tile[0].async && !out.tile[1].async);
	assert_true(out.outputs[0] == 4096 && out.tile[1].bn == 128);
	assert_true(mb_gemm16_fallback(&given, 2, &out, &flags));
	assert_int_equal(flags, MB_GEMM16_NO_LDMATRIX);
	assert_true(!out.tile[0].async && !out.tile[1].async);
	/* no cp.async given: the second try is the first again */
	assert_int_equal(mb_gemm16_classes_parse("128x128x32/256/4", &given), 0);
	assert_false(mb_gemm16_fallback(&given, 1, &out, &flags));
	assert_true(mb_gemm16_fallback(&given, 2, &out, &flags));
	assert_int_equal(flags, MB_GEMM16_NO_LDMATRIX);
	memset(&given, 0, sizeof(given)); /* the default */
	assert_false(mb_gemm16_fallback(&given, 1, &out, &flags));
	assert_true(mb_gemm16_fallback(&given, 2, &out, &flags) && out.n == 0);
}

/* The mma path's fallback: its fragments read one by one from the swizzled tiles. */
static void emulated_mma_without_ldmatrix_matches_host(void **state)
{
	(void)state;
	check_path(MB_GEMM16_MMA_EMUL, MB_GEMM16_NO_LDMATRIX);
}

/* The mma path itself, on a device that has it (NVIDIA sm_80+); elsewhere nothing to test. */
static void mma_matches_host_where_capable(void **state)
{
	(void)state;
	if (!mb_gemm16_mma_capable(&cl.info)) {
		print_message("no mma path on '%s': skipped\n", cl.info.name);
		return;
	}
	check_path(MB_GEMM16_MMA, 0);
	check_path(MB_GEMM16_MMA, MB_GEMM16_NO_LDMATRIX);
}

/* k = 0 is C = beta C, rounded; m or n = 0 enqueues nothing; fp32 is no kernel of ours. */
static void degenerate(void **state)
{
	struct mb_gemm16 g;
	cl_event ev = (cl_event)1;

	(void)state;
	assert_int_equal(mb_gemm16_init(&g, &cl, MB_GEMM16_PORTABLE, 0, NULL), 0);
	check_one(&g, MB_PREC_BF16, false, 5, 7, 0, 1.0f, 0.5f, false);
	assert_int_equal(mb_gemm16_enqueue(&g, cl.compute, MB_PREC_BF16, false, 0, 5, 5, 1.0f, NULL,
					   0, NULL, 0, 0.0f, NULL, 0, 0, &ev),
			 0);
	assert_null(ev);
	assert_int_equal(mb_gemm16_enqueue(&g, cl.compute, MB_PREC_FP32, false, 5, 5, 5, 1.0f, NULL,
					   0, NULL, 0, 0.0f, NULL, 0, 0, NULL),
			 -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "no fp32 kernel"));
	mb_gemm16_release(&g);
}

/* The mma path only where the device is NVIDIA at sm_80 or above. */
static void mma_capable(void **state)
{
	static const struct {
		const char *vendor, *platform, *arch;
		bool want;
	} cases[] = {
		{ "NVIDIA Corporation", "NVIDIA CUDA", "sm_90", true },
		{ "NVIDIA Corporation", "NVIDIA CUDA", "sm_80", true },
		{ "NVIDIA Corporation", "NVIDIA CUDA", "sm_120", true },
		{ "NVIDIA Corporation", "NVIDIA CUDA", "sm_75", false },
		{ "NVIDIA Corporation", "NVIDIA CUDA", "", false },
		{ "NVIDIA Corporation", "NVIDIA CUDA", "sm_8x", false },
		{ "Advanced Micro Devices, Inc.", "AMD Accelerated Parallel Processing", "gfx90a",
		  false },
		{ "GenuineIntel", "Portable Computing Language", "haswell", false },
		{ "pocl", "Portable Computing Language", "sm_90", false },
	};
	struct mb_cl_device_info info;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&info, 0, sizeof(info));
		snprintf(info.vendor, sizeof(info.vendor), "%s", cases[i].vendor);
		snprintf(info.platform_name, sizeof(info.platform_name), "%s", cases[i].platform);
		snprintf(info.arch, sizeof(info.arch), "%s", cases[i].arch);
		if (mb_gemm16_mma_capable(&info) != cases[i].want)
			fail_msg("%s, %s: want %d", cases[i].vendor, cases[i].arch, cases[i].want);
	}
}

/* On this device: the portable path unless it is NVIDIA sm_80+, and why is said. */
static void open_picks_a_path(void **state)
{
	struct mb_gemm16 g;

	(void)state;
	assert_int_equal(mb_gemm16_open(&g, &cl), 0);
	assert_non_null(g.kernel[0]);
	if (!mb_gemm16_mma_capable(&cl.info)) {
		assert_int_equal(g.path, MB_GEMM16_PORTABLE);
		assert_non_null(strstr(g.why, "no mma path"));
	}
	print_message("%s: %s\n", mb_gemm16_path_names[g.path], g.why);
	check_one(&g, MB_PREC_FP16, true, 100, 70, 132, 1.0f, 0.0f, true);
	mb_gemm16_release(&g);
}

/* Relative Frobenius distance of N floats from N doubles. */
static double rel_err(const float *got, const double *want, uint64_t n)
{
	double d = 0, w = 0;
	uint64_t i;

	for (i = 0; i < n; i++) {
		d += (got[i] - want[i]) * (got[i] - want[i]);
		w += want[i] * want[i];
	}
	return w > 0 ? sqrt(d / w) : sqrt(d);
}

/*
 * Newton-Schulz of ROWS x COLS by NS's method and precision against the
 * float64 reference of the unrounded input; returns the relative error.
 * FLOOR gets the error of the reference itself on the input rounded to the
 * precision: what rounding the input alone costs.
 */
static double ns_error(struct mb_ns *ns, uint64_t rows, uint64_t cols, double *floor)
{
	uint64_t n = rows * cols, i;
	float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
	float *rounded = malloc(n * sizeof(float));
	double *ref = malloc(n * sizeof(double)), *ref16 = malloc(n * sizeof(double)), e;
	cl_mem a, b;

	assert_non_null(in);
	assert_non_null(out);
	assert_non_null(rounded);
	assert_non_null(ref);
	assert_non_null(ref16);
	assert_int_equal(mb_ns_reserve(ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_ledger_alloc(ns->ledger, n * sizeof(float), "test.in", &a), 0);
	assert_int_equal(mb_ledger_alloc(ns->ledger, n * sizeof(float), "test.out", &b), 0);
	assert_int_equal(mb_rng_fill(&cl, a, 0, n, 7, rows * 100000 + cols, 0, 1.0f), 0);
	assert_int_equal(mb_ns_orthogonalize(ns, a, 0, rows, cols, b, 0, NULL, NULL), 0);
	assert_int_equal(clEnqueueReadBuffer(cl.compute, a, CL_TRUE, 0, n * sizeof(float), in, 0,
					     NULL, NULL),
			 CL_SUCCESS);
	assert_int_equal(clEnqueueReadBuffer(cl.compute, b, CL_TRUE, 0, n * sizeof(float), out, 0,
					     NULL, NULL),
			 CL_SUCCESS);
	assert_int_equal(mb_ns_reference(in, rows, cols, ns->method, ref), 0);
	for (i = 0; i < n; i++)
		rounded[i] = host_round(in[i], ns->precision);
	assert_int_equal(mb_ns_reference(rounded, rows, cols, ns->method, ref16), 0);
	for (i = 0; i < n; i++)
		rounded[i] = (float)ref16[i];
	*floor = rel_err(rounded, ref, n);
	e = rel_err(out, ref, n);
	mb_ledger_free(ns->ledger, a);
	mb_ledger_free(ns->ledger, b);
	free(in);
	free(out);
	free(rounded);
	free(ref);
	free(ref16);
	return e;
}

/*
 * Newton-Schulz at bf16 and fp16, both methods, on the portable path and
 * the emulated mma path, at the shapes tests/test_ns.c uses: within
 * mb_ns_tolerance of float64, and the errors measured are printed.
 */
static void ns_16bit_within_tolerance(void **state)
{
	static const uint64_t ns_shapes[][2] = {
		{ 64, 64 }, { 48, 160 }, { 160, 48 }, { 67, 131 }, { 1, 50 }, { 50, 1 }, { 1, 1 },
	};
	struct mb_ledger ledger;
	struct mb_ns ns;
	int path, method, p;
	size_t i;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	for (path = 0; path < 2; path++) {
		assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
		/* built before the first reserve: the path a test asks for */
		if (mb_gemm16_init(&ns.gemm16, &cl, path ? MB_GEMM16_MMA_EMUL : MB_GEMM16_PORTABLE,
				   0, NULL))
			fail_msg("%s", mb_errmsg());
		for (p = MB_PREC_BF16; p <= MB_PREC_FP16; p++) {
			for (method = 0; method < MB_NS_NMETHODS; method++) {
				double worst = 0, worst_floor = 0;

				ns.precision = (enum mb_precision)p;
				ns.method = (enum mb_ns_method)method;
				for (i = 0; i < sizeof(ns_shapes) / sizeof(ns_shapes[0]); i++) {
					double floor, e;

					e = ns_error(&ns, ns_shapes[i][0], ns_shapes[i][1], &floor);
					if (!(e <= mb_ns_tolerance(ns.precision)))
						fail_msg("%s %s (%s) on %llux%llu: off by %.3g",
							 mb_ns_method_names[method],
							 mb_precision_names[p],
							 mb_gemm16_path_names[ns.gemm16.path],
							 (unsigned long long)ns_shapes[i][0],
							 (unsigned long long)ns_shapes[i][1], e);
					worst = e > worst ? e : worst;
					worst_floor = floor > worst_floor ? floor : worst_floor;
				}
				print_message("%s %s on %s: largest error vs float64 %.2e (the "
					      "rounded input alone: %.2e)\n",
					      mb_ns_method_names[method], mb_precision_names[p],
					      mb_gemm16_path_names[ns.gemm16.path], worst,
					      worst_floor);
			}
		}
		assert_string_equal(mb_ns_kernel_name(&ns),
				    path ? "ns_gemm-mma-emul" : "ns_gemm-portable");
		mb_ns_release(&ns);
	}
	assert_int_equal(ledger.current_bytes, 0);
	mb_ledger_release(&ledger);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_bits16),
		cmocka_unit_test(portable_matches_host),
		cmocka_unit_test(emulated_mma_matches_host),
		cmocka_unit_test(emulated_mma_without_ldmatrix_matches_host),
		cmocka_unit_test(emulated_mma_tiles_match_host),
		cmocka_unit_test(tiles_refused),
		cmocka_unit_test(tune_tiles_emulated),
		cmocka_unit_test(registers_from_the_log),
		cmocka_unit_test(fallback_tries),
		cmocka_unit_test(portable_tiles_match_host),
		cmocka_unit_test(classes_choose_by_size),
		cmocka_unit_test(mma_matches_host_where_capable),
		cmocka_unit_test(degenerate),
		cmocka_unit_test(mma_capable),
		cmocka_unit_test(open_picks_a_path),
		cmocka_unit_test(ns_16bit_within_tolerance),
	};

	return cmocka_run_group_tests_name("gemm16", tests, open_device, close_device);
}
