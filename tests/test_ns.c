/*
 * The OpenCL engine on the default device (PoCL in CI): Newton-Schulz by
 * either method against the float64 reference of the same method, the
 * GEMMs each method issues against its FLOP count, the momentum kernel against a host loop bit for
 * bit, the norm's sums in the device's order, the random numbers against the host, work-group
 * padding that writes nothing, the events that time a call, a driver that gives no times, the
 * ledger's books, the device-memory limit, and device selection.
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
#include "mb_ledger.h"
#include "mb_ns_cl.h"
#include "mb_nsbench.h"
#include "mb_rng_cl.h"

#include "device.h"

static void read_floats(cl_mem buf, uint64_t off, uint64_t n, float *out)
{
	assert_int_equal(clEnqueueReadBuffer(cl.compute, buf, CL_TRUE, off * sizeof(float),
					     n * sizeof(float), out, 0, NULL, NULL),
			 CL_SUCCESS);
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
	return sqrt(d / w);
}

/*
 * Two matrices of each shape at offsets in one buffer, by NS's method: the
 * first written to another buffer, the second in place. Both must match the
 * reference of the method; the GEMMs of each call add up to mb_ns_flops.
 * Returns the larger error, and the first result in OUT_FIRST (n floats).
 */
static double check_shape(struct mb_ns *ns, uint64_t rows, uint64_t cols, float *out_first)
{
	uint64_t n = rows * cols;
	float *in = malloc(2 * n * sizeof(float)), *out = malloc(2 * n * sizeof(float));
	double *ref = malloc(n * sizeof(double));
	double worst = 0;
	uint64_t flops;
	cl_mem a, b;
	int k;

	assert_int_equal(mb_ns_reserve(ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_ledger_alloc(ns->ledger, 2 * n * sizeof(float), "test.in", &a), 0);
	assert_int_equal(mb_ledger_alloc(ns->ledger, n * sizeof(float), "test.out", &b), 0);
	assert_int_equal(mb_rng_fill(&cl, a, 0, 2 * n, 7, rows * 100000 + cols, 0, 1.0f), 0);
	read_floats(a, 0, 2 * n, in);
	flops = ns->gemm_flops;
	assert_int_equal(mb_ns_orthogonalize(ns, a, 0, rows, cols, b, 0, NULL, NULL), 0);
	assert_int_equal(ns->gemm_flops - flops, mb_ns_flops(rows, cols, ns->method));
	assert_int_equal(mb_ns_orthogonalize(ns, a, n, rows, cols, a, n, NULL, NULL), 0);
	flops = ns->gemm_flops;
	assert_int_equal(mb_ns_gemms_only(ns, rows, cols, NULL, NULL), 0);
	assert_int_equal(ns->gemm_flops - flops, mb_ns_flops(rows, cols, ns->method));
	read_floats(b, 0, n, out);
	read_floats(a, n, n, out + n);
	for (k = 0; k < 2; k++) {
		double e;

		assert_int_equal(mb_ns_reference(in + k * n, rows, cols, ns->method, ref), 0);
		e = rel_err(out + k * n, ref, n);
		if (!(e < 1e-5))
			fail_msg("%s on %llux%llu, matrix %d: relative error %g",
				 mb_ns_method_names[ns->method], (unsigned long long)rows,
				 (unsigned long long)cols, k, e);
		worst = e > worst ? e : worst;
	}
	memcpy(out_first, out, n * sizeof(float));
	/* the first matrix's source is untouched by the in-place second */
	read_floats(a, 0, n, out);
	assert_memory_equal(out, in, n * sizeof(float));
	mb_ledger_free(ns->ledger, a);
	mb_ledger_free(ns->ledger, b);
	free(in);
	free(out);
	free(ref);
	return worst;
}

/*
 * Both methods against float64, on square, wide, tall and odd shapes. Gram
 * on a square matrix is the standard iteration, bit for bit; elsewhere it
 * is another computation (not the same bits) of the same matrix.
 */
static void ns_matches_float64(void **state)
{
	static const uint64_t shapes[][2] = {
		{ 64, 64 },  { 48, 160 }, { 160, 48 }, { 67, 131 },
		{ 131, 67 }, { 1, 50 },	  { 50, 1 },   { 1, 1 },
	};
	const size_t nshapes = sizeof(shapes) / sizeof(shapes[0]);
	double worst[MB_NS_NMETHODS] = { 0 };
	struct mb_ledger ledger;
	struct mb_ns ns;
	size_t i;
	int k;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
	assert_int_equal(ns.method, MB_NS_GRAM);
	for (i = 0; i < nshapes; i++) {
		uint64_t rows = shapes[i][0], cols = shapes[i][1], n = rows * cols;
		float *out[MB_NS_NMETHODS];
		double e;

		for (k = 0; k < MB_NS_NMETHODS; k++) {
			out[k] = malloc(n * sizeof(float));
			ns.method = (enum mb_ns_method)k;
			e = check_shape(&ns, rows, cols, out[k]);
			worst[k] = e > worst[k] ? e : worst[k];
		}
		if (rows == cols)
			assert_memory_equal(out[MB_NS_GRAM], out[MB_NS_STANDARD],
					    n * sizeof(float));
		else
			assert_memory_not_equal(out[MB_NS_GRAM], out[MB_NS_STANDARD],
						n * sizeof(float));
		for (k = 0; k < MB_NS_NMETHODS; k++)
			free(out[k]);
	}
	for (k = 0; k < MB_NS_NMETHODS; k++)
		print_message("%s: largest relative error vs float64 %.2e\n", mb_ns_method_names[k],
			      worst[k]);
	mb_ns_release(&ns);
	assert_int_equal(ledger.current_bytes, 0);
	mb_ledger_release(&ledger);
}

/*
 * The Gram iteration is the standard one rearranged: in float64 the two
 * references agree to rounding (a few 1e-15), so a bug in either shows
 * against the other.
 */
static void gram_equals_standard_in_float64(void **state)
{
	static const uint64_t shapes[][2] = { { 48, 160 }, { 131, 67 }, { 3, 200 } };
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		uint64_t rows = shapes[i][0], cols = shapes[i][1], n = rows * cols;
		float *in = malloc(n * sizeof(float));
		double *g = malloc(n * sizeof(double)), *st = malloc(n * sizeof(double));
		double d = 0, w = 0;

		for (k = 0; k < n; k++)
			in[k] = mb_uniform(9, (uint64_t)i, k);
		assert_int_equal(mb_ns_reference(in, rows, cols, MB_NS_GRAM, g), 0);
		assert_int_equal(mb_ns_reference(in, rows, cols, MB_NS_STANDARD, st), 0);
		for (k = 0; k < n; k++) {
			d += (g[k] - st[k]) * (g[k] - st[k]);
			w += st[k] * st[k];
		}
		if (!(sqrt(d / w) < 1e-12)) /* 1.5e-15 to 3.4e-15 here */
			fail_msg("%llux%llu: gram and standard differ by %g in float64",
				 (unsigned long long)rows, (unsigned long long)cols, sqrt(d / w));
		free(in);
		free(g);
		free(st);
	}
}

/* A workspace reserved for one method does not do for the other's larger one. */
static void ns_method_needs_its_reserve(void **state)
{
	uint64_t rows = 40, cols = 72;
	struct mb_ledger l;
	struct mb_ns ns;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &l), 0);
	ns.method = MB_NS_STANDARD;
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(ns.work_bytes,
			 mb_ns_workspace_bytes(rows, cols, MB_NS_STANDARD, MB_PREC_FP32));
	ns.method = MB_NS_GRAM;
	assert_int_equal(mb_ns_orthogonalize(&ns, ns.work, 0, rows, cols, ns.work, 0, NULL, NULL),
			 -MB_EFAIL);
	assert_string_equal(mb_errmsg(),
			    "Newton-Schulz (gram) on 40x72: no workspace reserved for that shape");
	assert_int_equal(mb_ns_gemms_only(&ns, rows, cols, NULL, NULL), -MB_EFAIL);
	/* reserved again, it grows to the Gram method's */
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(ns.work_bytes,
			 mb_ns_workspace_bytes(rows, cols, MB_NS_GRAM, MB_PREC_FP32));
	assert_true(ns.work_bytes >
		    mb_ns_workspace_bytes(rows, cols, MB_NS_STANDARD, MB_PREC_FP32));
	assert_int_equal(mb_ns_orthogonalize(&ns, ns.work, 0, rows, cols, ns.work, 0, NULL, NULL),
			 0);
	assert_int_equal(clFinish(cl.compute), CL_SUCCESS);
	mb_ns_release(&ns);
	assert_int_equal(l.current_bytes, 0);
	mb_ledger_release(&l);
	/* the names */
	assert_string_equal(mb_ns_method_names[MB_NS_GRAM], "gram");
	assert_string_equal(mb_ns_method_names[MB_NS_STANDARD], "standard");
}

/* A known matrix: NS of a scaled identity is a scaled identity, 1x1 is its sign. */
static void ns_of_known_matrices(void **state)
{
	const float three = -3.0f;
	uint64_t one = 1;
	struct mb_ledger ledger;
	struct mb_ns ns;
	double ref;
	float got;
	cl_mem a;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
	assert_int_equal(mb_ns_reserve(&ns, &one, &one, 1), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, sizeof(float), "test.one", &a), 0);
	assert_int_equal(clEnqueueWriteBuffer(cl.compute, a, CL_TRUE, 0, sizeof(three), &three, 0,
					      NULL, NULL),
			 CL_SUCCESS);
	assert_int_equal(mb_ns_orthogonalize(&ns, a, 0, 1, 1, a, 0, NULL, NULL), 0);
	read_floats(a, 0, 1, &got);
	assert_int_equal(mb_ns_reference(&three, 1, 1, MB_NS_STANDARD, &ref), 0);
	/* quintic NS does not converge to exactly 1: it lands near 0.7-1.2 */
	assert_true(got < -0.5f && got > -1.5f);
	assert_true(fabs(got - ref) < 1e-6);
	mb_ledger_free(&ledger, a);
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
}

static void momentum_bit_for_bit(void **state)
{
	const uint64_t n = 10007;
	const float beta = 0.95f;
	float *g = malloc(n * sizeof(float)), *m = malloc(n * sizeof(float));
	float *g_dev = malloc(n * sizeof(float)), *m_dev = malloc(n * sizeof(float));
	struct mb_ledger ledger;
	struct mb_ns ns;
	cl_mem grad, mom;
	uint64_t i;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, (n + 3) * sizeof(float), "test.grad", &grad), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, (n + 5) * sizeof(float), "test.mom", &mom), 0);
	assert_int_equal(mb_rng_fill(&cl, grad, 3, n, 11, 1, 0, 0.01f), 0);
	assert_int_equal(mb_rng_fill(&cl, mom, 5, n, 11, 2, 0, 0.1f), 0);
	read_floats(grad, 3, n, g);
	read_floats(mom, 5, n, m);
	assert_int_equal(mb_ns_momentum(&ns, grad, 3, mom, 5, n, beta, NULL, NULL), 0);
	read_floats(grad, 3, n, g_dev);
	read_floats(mom, 5, n, m_dev);
	for (i = 0; i < n; i++) {
		m[i] = beta * m[i] + (1.0f - beta) * g[i];
		g[i] = (1.0f - beta) * g[i] + beta * m[i];
	}
	assert_memory_equal(m_dev, m, n * sizeof(float));
	assert_memory_equal(g_dev, g, n * sizeof(float));
	mb_ledger_free(&ledger, grad);
	mb_ledger_free(&ledger, mom);
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
	free(g);
	free(m);
	free(g_dev);
	free(m_dev);
}

/*
 * The partial sums of squares of X (N floats) in the order that mb_ns's
 * kernels add them on a device whose reduction takes work-groups of LOCAL:
 * each work-item's contiguous runs (RUNS, a CPU device's sumsq_runs), or
 * the elements a global size apart (sumsq_partial), then each work-group's
 * items added as a tree.
 */
static void host_partials(const float *x, uint64_t n, size_t local, bool runs, float *partial)
{
	uint64_t global = MB_NS_PARTIALS * local, span = runs ? (n + global - 1) / global : 1;
	float *item = malloc(global * sizeof(float));
	uint64_t id, i, j, end, g, step, l;

	assert_non_null(item);
	for (id = 0; id < global; id++) {
		float a[4] = { 0 };

		for (i = id * span; i < n; i += global * span) {
			end = n - i < span ? n : i + span;
			for (j = i; j + 4 <= end; j += 4)
				for (l = 0; l < 4; l++)
					a[l] += x[j + l] * x[j + l];
			for (; j < end; j++)
				a[0] += x[j] * x[j];
		}
		item[id] = span == 1 ? a[0] : (a[0] + a[1]) + (a[2] + a[3]);
	}
	for (g = 0; g < MB_NS_PARTIALS; g++) {
		float *s = item + g * local;

		for (step = local / 2; step > 0; step /= 2)
			for (l = 0; l < step; l++)
				s[l] += s[l + step];
		partial[g] = s[0];
	}
	free(item);
}

/* The N partial sums that Newton-Schulz left in NS's workspace after a ROWS x COLS matrix. */
static void ns_partials(struct mb_ns *ns, uint64_t rows, uint64_t cols, float *out, uint64_t n)
{
	uint64_t scratch =
		mb_ns_workspace_bytes(rows, cols, ns->method, ns->precision) / sizeof(float) -
		MB_NS_PARTIALS - 1;

	read_floats(ns->work, scratch, n, out);
}

/*
 * The norm's sums in the device's order: contiguous runs on a CPU device, a
 * global size apart elsewhere, bit for bit as the host adds them in that
 * order (which differs in the last bits from the other order on this
 * input), for the backward's bf16 gradient norm (mb_ns_sumsq_bf16) and
 * Newton-Schulz's own: on the fp32 copies of the same bf16 values, the same
 * partial sums; and 1 / (norm + eps) from them.
 */
static void norm_in_the_devices_order(void **state)
{
	const uint64_t rows = 16, cols = 65537, n = rows * cols, off = 3;
	bool cpu = !strcmp(cl.info.type, "CPU");
	float *x = malloc(n * sizeof(float)), *wide = malloc(n * sizeof(float));
	uint16_t *half = malloc(n * sizeof(uint16_t));
	float got[MB_NS_PARTIALS], want[MB_NS_PARTIALS], other[MB_NS_PARTIALS];
	float ns_got[MB_NS_PARTIALS + 1];
	struct mb_ledger ledger;
	struct mb_ns ns;
	cl_mem in, bf16, wide_in, out, sums;
	uint64_t i;
	double sum = 0;

	(void)state;
	assert_true(x && wide && half);
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, (n + off) * sizeof(float), "test.in", &in), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, (n + off) * 2, "test.bf16", &bf16), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, n * sizeof(float), "test.wide", &wide_in), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, n * sizeof(float), "test.out", &out), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, sizeof(got), "test.sums", &sums), 0);
	assert_int_equal(mb_rng_fill(&cl, in, off, n, 5, 1, 0, 1.0f), 0);
	assert_int_equal(mb_ns_cast_bf16(&ns, in, off, bf16, off, n, NULL), 0);
	read_floats(in, off, n, x);
	assert_int_equal(clEnqueueReadBuffer(cl.compute, bf16, CL_TRUE, off * 2, n * 2, half, 0,
					     NULL, NULL),
			 CL_SUCCESS);
	for (i = 0; i < n; i++) {
		uint32_t bits = (uint32_t)half[i] << 16;

		memcpy(&wide[i], &bits, sizeof(bits));
	}
	assert_int_equal(clEnqueueWriteBuffer(cl.compute, wide_in, CL_TRUE, 0, n * sizeof(float),
					      wide, 0, NULL, NULL),
			 CL_SUCCESS);
	/* runs of more than one group of four on this device, so that every path adds */
	assert_true(n > 4 * MB_NS_PARTIALS * ns.reduce_local);
	/* the backward's norm of the bf16 grads */
	assert_int_equal(mb_ns_sumsq_bf16(&ns, cl.compute, bf16, off, n, sums, 0, NULL), 0);
	read_floats(sums, 0, MB_NS_PARTIALS, got);
	host_partials(wide, n, ns.reduce_local, cpu, want);
	host_partials(wide, n, ns.reduce_local, !cpu, other);
	assert_memory_equal(got, want, sizeof(got));
	assert_memory_not_equal(want, other, sizeof(want));
	/* Newton-Schulz's of their fp32 copies: the same partial sums, left in its scratch */
	assert_int_equal(mb_ns_orthogonalize(&ns, wide_in, 0, rows, cols, out, 0, NULL, NULL), 0);
	ns_partials(&ns, rows, cols, ns_got, MB_NS_PARTIALS);
	assert_memory_equal(ns_got, got, sizeof(got));
	/* and of the fp32 input, 1 / (norm + eps) after them */
	assert_int_equal(mb_ns_orthogonalize(&ns, in, off, rows, cols, out, 0, NULL, NULL), 0);
	ns_partials(&ns, rows, cols, ns_got, MB_NS_PARTIALS + 1);
	host_partials(x, n, ns.reduce_local, cpu, want);
	host_partials(x, n, ns.reduce_local, !cpu, other);
	assert_memory_equal(ns_got, want, sizeof(want));
	assert_memory_not_equal(want, other, sizeof(want));
	for (i = 0; i < n; i++)
		sum += (double)x[i] * x[i];
	assert_true(fabs(ns_got[MB_NS_PARTIALS] * (sqrt(sum) + MB_NS_EPS) - 1) < 1e-6);
	mb_ledger_free(&ledger, in);
	mb_ledger_free(&ledger, bf16);
	mb_ledger_free(&ledger, wide_in);
	mb_ledger_free(&ledger, out);
	mb_ledger_free(&ledger, sums);
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
	free(x);
	free(wide);
	free(half);
}

static void rng_matches_host(void **state)
{
	const uint64_t n = 4099;
	float *dev = malloc(n * sizeof(float));
	struct mb_ledger ledger;
	uint64_t i;
	cl_mem buf;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ledger_alloc(&ledger, n * sizeof(float), "test.rng", &buf), 0);
	assert_int_equal(mb_rng_fill(&cl, buf, 0, n, 42, 9, 1000, 0.5f), 0);
	read_floats(buf, 0, n, dev);
	for (i = 0; i < n; i++) {
		float want = 0.5f * mb_uniform(42, 9, 1000 + i);

		if (memcmp(&dev[i], &want, sizeof(want)))
			fail_msg("element %llu: device %a, host %a", (unsigned long long)i, dev[i],
				 want);
		assert_true(dev[i] >= -0.5f && dev[i] < 0.5f);
	}
	/* different streams differ */
	assert_true(mb_uniform(42, 9, 0) != mb_uniform(42, 10, 0));
	mb_ledger_release(&ledger);
	free(dev);
}

/* Fill all of BUF (FLOATS floats) with V. */
static void fill(cl_mem buf, uint64_t floats, float v)
{
	assert_int_equal(clEnqueueFillBuffer(cl.compute, buf, &v, sizeof(v), 0, floats * sizeof(v),
					     0, NULL, NULL),
			 CL_SUCCESS);
}

/* Elements [FROM, TO) of BUF (FLOATS floats) were written; the rest are still V. */
static void written_only(cl_mem buf, uint64_t floats, uint64_t from, uint64_t to, float v,
			 const char *what)
{
	float *got = malloc(floats * sizeof(float));
	uint64_t i;

	read_floats(buf, 0, floats, got);
	for (i = 0; i < floats; i++)
		if ((i >= from && i < to) == (got[i] == v))
			fail_msg("%s, element %llu of [%llu, %llu): %a", what,
				 (unsigned long long)i, (unsigned long long)from,
				 (unsigned long long)to, got[i]);
	free(got);
}

/*
 * Global sizes are rounded up to the work-group size: the work-items past
 * the end must write nothing. N is no multiple of any work-group size.
 */
static void padding_writes_nothing(void **state)
{
	const uint64_t n = 1001, guard = 300, all = n + 2 * guard;
	uint64_t rows = 33, cols = 17;
	struct mb_ledger ledger;
	struct mb_ns ns;
	cl_mem a, b;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
	assert_true(ns.momentum_local > 1 && n % ns.momentum_local);
	assert_true(ns.store_local[0] * ns.store_local[1] > 1 && cols % ns.store_local[0]);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, all * sizeof(float), "test.a", &a), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, all * sizeof(float), "test.b", &b), 0);
	fill(a, all, 7.0f);
	fill(b, all, 7.0f);
	/* values in [-0.5, 0.5), and momentum from them: never 7 */
	assert_int_equal(mb_rng_fill(&cl, a, guard, n, 1, 2, 0, 0.5f), 0);
	written_only(a, all, guard, guard + n, 7.0f, "fill_uniform");
	assert_int_equal(mb_ns_momentum(&ns, a, guard, b, guard, n, 0.9f, NULL, NULL), 0);
	written_only(a, all, guard, guard + n, 7.0f, "muon_momentum's gradient");
	written_only(b, all, guard, guard + n, 7.0f, "muon_momentum's momentum");
	/* Newton-Schulz's transposing load and store of 33 x 17 (561 elements) */
	fill(b, all, 7.0f);
	assert_int_equal(mb_ns_orthogonalize(&ns, a, guard, rows, cols, b, guard, NULL, NULL), 0);
	written_only(b, all, guard, guard + rows * cols, 7.0f, "Newton-Schulz's output");
	mb_ledger_free(&ledger, a);
	mb_ledger_free(&ledger, b);
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
}

/* The events of a call's first and last commands, and the time between them. */
static void events_of_own_commands(void **state)
{
	uint64_t rows = 40, cols = 72, n = rows * cols;
	cl_event first, last, only;
	struct mb_ledger ledger;
	struct mb_ns ns;
	double t, start, end;
	cl_mem a;

	(void)state;
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &ledger), 0);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_ledger_alloc(&ledger, 2 * n * sizeof(float), "test.events", &a), 0);
	assert_int_equal(mb_rng_fill(&cl, a, 0, 2 * n, 5, 6, 0, 1.0f), 0);

	/* momentum: one kernel, the same event twice, a reference each */
	assert_int_equal(mb_ns_momentum(&ns, a, 0, a, n, n, 0.9f, &first, &last), 0);
	assert_non_null(first);
	assert_ptr_equal(first, last);
	assert_int_equal(mb_ns_momentum(&ns, a, 0, a, n, n, 0.9f, NULL, &only), 0);
	assert_int_equal(clFinish(cl.compute), CL_SUCCESS);
	assert_int_equal(mb_cl_event_interval(&cl, first, last, "momentum", &t), 0);
	assert_true(t > 0);
	clReleaseEvent(first);
	clReleaseEvent(last);
	assert_int_equal(mb_cl_event_span(&cl, only, "momentum", &start, &end), 0);
	clReleaseEvent(only);
	/* nothing to do, nothing enqueued */
	first = last = only;
	assert_int_equal(mb_ns_momentum(&ns, a, 0, a, n, 0, 0.9f, &first, &last), 0);
	assert_null(first);
	assert_null(last);

	/* Newton-Schulz: the norm's first kernel to the store, two commands of ours */
	assert_int_equal(mb_ns_orthogonalize(&ns, a, 0, rows, cols, a, n, &first, &last), 0);
	assert_non_null(first);
	assert_non_null(last);
	assert_ptr_not_equal(first, last);
	assert_int_equal(clFinish(cl.compute), CL_SUCCESS);
	assert_int_equal(mb_cl_event_span(&cl, first, "first", &start, &t), 0);
	assert_int_equal(mb_cl_event_span(&cl, last, "last", &t, &end), 0);
	/* in order: the store starts after the norm ends, with the GEMMs between */
	assert_true(t > start);
	assert_int_equal(mb_cl_event_interval(&cl, first, last, "Newton-Schulz", &t), 0);
	assert_true(t > 0 && fabs(t - (end - start)) < 1e-9);
	/* backwards: refused, not a negative time */
	assert_int_equal(mb_cl_event_interval(&cl, last, first, "backwards", &t), -MB_EFAIL);
	assert_true(isnan(t));
	clReleaseEvent(first);
	clReleaseEvent(last);

	/* the GEMMs alone, between two empty kernels of ours */
	assert_int_equal(mb_ns_clear(&ns), 0);
	assert_int_equal(mb_ns_gemms_only(&ns, rows, cols, &first, &last), 0);
	assert_non_null(first);
	assert_non_null(last);
	assert_int_equal(clFinish(cl.compute), CL_SUCCESS);
	assert_int_equal(mb_cl_event_interval(&cl, first, last, "GEMMs", &t), 0);
	assert_true(t > 0);
	clReleaseEvent(first);
	clReleaseEvent(last);

	/* a failure leaves no event behind */
	first = last = only;
	assert_int_equal(mb_ns_orthogonalize(&ns, a, 0, 64, 64, a, 0, &first, &last), -MB_EFAIL);
	assert_null(first);
	assert_null(last);
	first = last = only;
	assert_int_equal(mb_ns_gemms_only(&ns, 64, 64, &first, &last), -MB_EFAIL);
	assert_null(first);
	assert_null(last);
	mb_ledger_free(&ledger, a);
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
}

/*
 * Queues without profiling (MUONBENCH_PROFILING=off): every event time is
 * refused. The benchmark then has no time, says why, and still checks.
 */
static void no_profiling_no_time(void **state)
{
	struct mb_nsbench_settings s = { .batch = 2, .reps = 2, .verify = true, .seed = 3 };
	struct mb_cl_select sel = { .platform = -1 };
	struct mb_nsbench_result r;
	uint64_t rows = 24, cols = 40;
	struct mb_ledger l;
	struct mb_ns ns;
	struct mb_cl off;
	cl_event first, last;
	double t = 0, start = 0, end = 0;

	(void)state;
	assert_int_equal(setenv("MUONBENCH_PROFILING", "off", 1), 0);
	assert_int_equal(mb_cl_open(&off, &sel), 0);
	assert_int_equal(unsetenv("MUONBENCH_PROFILING"), 0);
	mb_ledger_init(&l, &off, 0);
	assert_int_equal(mb_ns_init(&ns, &off, &l), 0);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_nsbench_run(&ns, &s, rows, cols, 0, &r), 0);
	assert_true(isnan(r.ns_s.median) && isnan(r.ns_s.min) && isnan(r.ns_s.max));
	assert_true(isnan(r.gemm_s.median) && isnan(r.gflops));
	assert_non_null(strstr(r.no_time, "clGetEventProfilingInfo(START) failed on '"));
	assert_non_null(strstr(r.no_time, "CL_PROFILING_INFO_NOT_AVAILABLE"));
	assert_true(r.rel_err < 1e-5);

	/* the events themselves: a status checked, NaN rather than 0 */
	assert_int_equal(
		mb_ns_orthogonalize(&ns, ns.work, 0, rows, cols, ns.work, 0, &first, &last), 0);
	assert_int_equal(clFinish(off.compute), CL_SUCCESS);
	assert_int_equal(mb_cl_event_span(&off, last, "the store", &start, &end), -MB_EFAIL);
	assert_true(isnan(start) && isnan(end));
	assert_int_equal(mb_cl_event_interval(&off, first, last, "Newton-Schulz", &t), -MB_EFAIL);
	assert_true(isnan(t));
	assert_non_null(strstr(mb_errmsg(), "(Newton-Schulz): CL_PROFILING_INFO_NOT_AVAILABLE"));
	clReleaseEvent(first);
	clReleaseEvent(last);
	mb_ns_release(&ns);
	mb_ledger_release(&l);
	mb_cl_release(&off);
}

static void ledger_books(void **state)
{
	struct mb_ledger l;
	cl_mem a, b, c, d;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	mb_ledger_phase(&l, "backward");
	assert_int_equal(mb_ledger_alloc(&l, 100, "a", &a), 0);
	assert_int_equal(mb_ledger_alloc(&l, 200, "b", &b), 0);
	mb_ledger_free(&l, a);
	mb_ledger_phase(&l, "step");
	assert_int_equal(mb_ledger_alloc(&l, 50, "c", &c), 0);
	assert_int_equal(l.current_bytes, 250);
	assert_int_equal(mb_ledger_phase_peak(&l, "step"), 250);
	assert_int_equal(l.peak_bytes, 300);
	assert_int_equal(mb_ledger_alloc(&l, 400, "d", &d), 0);
	assert_int_equal(l.peak_bytes, 650);
	assert_int_equal(mb_ledger_phase_peak(&l, "step"), 650);
	assert_int_equal(mb_ledger_phase_peak(&l, "backward"), 300);
	assert_int_equal(mb_ledger_phase_peak(&l, "forward"), 0);
	/* the largest buffers at the peak, largest first */
	assert_int_equal(l.ntop, 3);
	assert_string_equal(l.top[0].tag, "d");
	assert_string_equal(l.top[1].tag, "b");
	assert_string_equal(l.top[2].tag, "c");
	mb_ledger_free(&l, d);
	mb_ledger_free(&l, NULL);
	assert_int_equal(l.current_bytes, 250);
	/* entering a phase again goes on from its peak */
	mb_ledger_phase(&l, "backward");
	assert_int_equal(mb_ledger_phase_peak(&l, "backward"), 300);
	mb_ledger_release(&l);
	assert_int_equal(l.nlive, 0);
	assert_int_equal(l.current_bytes, 0);
}

static void device_mem_limit(void **state)
{
	uint64_t rows = 256, cols = 768;
	struct mb_ledger l;
	struct mb_ns ns;
	cl_mem a, b;

	(void)state;
	mb_ledger_init(&l, &cl, 1000);
	assert_int_equal(mb_ledger_alloc(&l, 600, "first", &a), 0);
	assert_int_equal(mb_ledger_alloc(&l, 500, "second", &b), -MB_EFAIL);
	assert_null(b);
	assert_non_null(strstr(mb_errmsg(), "clCreateBuffer failed on '"));
	assert_non_null(strstr(mb_errmsg(), "(second, 500 B): CL_MEM_OBJECT_ALLOCATION_FAILURE "
					    "(over the --device-mem-limit of 1000 B; 600 B in "
					    "use)"));
	assert_int_equal(l.current_bytes, 600);
	assert_int_equal(l.nlive, 1);
	assert_int_equal(mb_ledger_alloc(&l, 400, "third", &b), 0);
	mb_ledger_release(&l);

	/* Newton-Schulz's workspace refused: nothing is left allocated; the
	 * Gram method's, with R, Z, Q and P (4 x 256 KiB), is 2.5 MiB */
	mb_ledger_init(&l, &cl, 1 << 20);
	assert_int_equal(mb_ns_init(&ns, &cl, &l), 0);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "(ns.workspace, 2.50 MiB)"));
	ns.method = MB_NS_STANDARD;
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "(ns.workspace, 2.00 MiB)"));
	mb_ns_release(&ns);
	assert_int_equal(l.current_bytes, 0);
	assert_int_equal(l.nlive, 0);
	mb_ledger_release(&l);
}

/* Orthogonalizing an unreserved shape is an error, not a buffer overrun. */
static void ns_needs_reserve(void **state)
{
	uint64_t rows = 8, cols = 8;
	struct mb_ledger l;
	struct mb_ns ns;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &l), 0);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	assert_int_equal(mb_ns_orthogonalize(&ns, ns.work, 0, 16, 16, ns.work, 0, NULL, NULL),
			 -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "no workspace reserved"));
	mb_ns_release(&ns);
	mb_ledger_release(&l);
}

/*
 * A matrix whose fp32 workspace passes 2^31 floats is refused before anything
 * is allocated (CLBlast's int offsets would wrap), naming the shape; 16-bit
 * GEMMs index in 64 bits and are not refused for it.
 */
static void ns_workspace_within_int(void **state)
{
	uint64_t rows = 16384, cols = 65536;
	struct mb_ledger l;
	struct mb_ns ns;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &l), 0);
	assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "a 16384x65536 matrix needs"));
	assert_non_null(strstr(mb_errmsg(), "past 2^31-1"));
	assert_null(ns.work);
	mb_ns_release(&ns);
	mb_ledger_release(&l);
}

/* auto: DeepSpeed's precision (gram fp16, standard bf16) on a tensor-core device, else fp32. */
static void precision_auto_per_device(void **state)
{
	static const struct {
		const char *vendor, *arch;
		enum mb_precision gram, standard;
	} cases[] = {
		{ "NVIDIA Corporation", "sm_90", MB_PREC_FP16, MB_PREC_BF16 },
		{ "NVIDIA Corporation", "sm_80", MB_PREC_FP16, MB_PREC_BF16 },
		{ "NVIDIA Corporation", "sm_75", MB_PREC_FP32, MB_PREC_FP32 },
		{ "Advanced Micro Devices, Inc.", "gfx90a", MB_PREC_FP32, MB_PREC_FP32 },
		{ "GenuineIntel", "skylake-avx512", MB_PREC_FP32, MB_PREC_FP32 },
	};
	struct mb_cl_device_info info;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&info, 0, sizeof(info));
		snprintf(info.vendor, sizeof(info.vendor), "%s", cases[i].vendor);
		snprintf(info.arch, sizeof(info.arch), "%s", cases[i].arch);
		assert_int_equal(mb_ns_precision_auto(&info, MB_NS_GRAM), cases[i].gram);
		assert_int_equal(mb_ns_precision_auto(&info, MB_NS_STANDARD), cases[i].standard);
	}
	/* this device (PoCL in CI): no tensor-core path, the checksums of fp32 */
	if (strcmp(cl.info.type, "GPU"))
		assert_int_equal(mb_ns_precision_auto(&cl.info, MB_NS_GRAM), MB_PREC_FP32);
}

static void nsbench_verifies(void **state)
{
	struct mb_nsbench_settings s = { .batch = 2, .reps = 2, .verify = true, .seed = 3 };
	struct mb_nsbench_result r;
	uint64_t rows = 40, cols = 72;
	struct mb_ledger l;
	struct mb_ns ns;
	int k;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &l), 0);
	for (k = 0; k < MB_NS_NMETHODS; k++) {
		ns.method = (enum mb_ns_method)k;
		assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
		assert_int_equal(mb_nsbench_run(&ns, &s, rows, cols, 0, &r), 0);
		assert_int_equal(r.method, k);
		assert_int_equal(r.flops, mb_ns_flops(rows, cols, ns.method));
		assert_true(r.rel_err < 1e-5);
		assert_true(r.ns_s.min > 0 && r.ns_s.min <= r.ns_s.median &&
			    r.ns_s.median <= r.ns_s.max);
		assert_true(r.gemm_s.median > 0);
		assert_true(r.gflops > 0);
	}
	mb_ns_release(&ns);
	assert_int_equal(l.current_bytes, 0);
	mb_ledger_release(&l);
}

/*
 * A shape held across runs, as the profile's rounds time it: runs of either
 * method and of the GEMMs alone in any order, each timed; a refused output
 * buffer leaves nothing held.
 */
static void nsbench_holds_a_shape(void **state)
{
	uint64_t rows = 40, cols = 72, held, matrix = 40 * 72 * sizeof(float);
	struct mb_nsbench b;
	struct mb_ledger l;
	struct mb_ns ns;
	double t, e;
	int k;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	assert_int_equal(mb_ns_init(&ns, &cl, &l), 0);
	for (k = 0; k < MB_NS_NMETHODS; k++) {
		ns.method = (enum mb_ns_method)k;
		assert_int_equal(mb_ns_reserve(&ns, &rows, &cols, 1), 0);
	}
	held = l.current_bytes;
	assert_int_equal(mb_nsbench_init(&b, &ns, rows, cols, 1, 3, 0), 0);
	assert_int_equal(l.current_bytes, held + 2 * matrix);
	for (k = 0; k < 2 * MB_NS_NMETHODS; k++) {
		ns.method = (enum mb_ns_method)(k % MB_NS_NMETHODS);
		assert_int_equal(mb_nsbench_time(&b, k >= MB_NS_NMETHODS, &t, &e), 0);
		assert_true(t > 0 && isfinite(t));
		assert_true(e > 0 && isfinite(e)); /* the host's enqueue, by its clock */
	}
	mb_nsbench_release(&b);
	mb_nsbench_release(&b);
	assert_int_equal(l.current_bytes, held);

	l.limit_bytes = held + matrix;
	assert_int_equal(mb_nsbench_init(&b, &ns, rows, cols, 1, 3, 0), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "(ns.output, "));
	assert_int_equal(l.current_bytes, held);
	mb_nsbench_release(&b);
	mb_ns_release(&ns);
	mb_ledger_release(&l);
}

static void spread(void **state)
{
	double odd[] = { 3, 1, 2 }, even[] = { 4, 1, 3, 2 };
	struct mb_spread s;

	(void)state;
	s = mb_spread_of(odd, 3);
	assert_true(s.median == 2 && s.min == 1 && s.max == 3);
	s = mb_spread_of(even, 4);
	assert_true(s.median == 2.5 && s.min == 1 && s.max == 4);
}

static void device_selection(void **state)
{
	struct mb_cl_select sel = { .platform = -1, .device = "no-such-device" };
	struct mb_cl other;

	(void)state;
	assert_int_equal(mb_cl_open(&other, &sel), -MB_EINPUT);
	assert_string_equal(mb_errmsg(), "--device 'no-such-device': no device's name contains it "
					 "(see muonbench devices)");
	sel.device = "7";
	assert_int_equal(mb_cl_open(&other, &sel), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "--device 7: platform 0 has no device 7 (see muonbench devices)");
	sel.device = NULL;
	sel.platform = 9;
	assert_int_equal(mb_cl_open(&other, &sel), -MB_EINPUT);
	/* by a part of its name, in any case */
	sel.platform = -1;
	sel.device = cl.info.name + 1;
	assert_int_equal(mb_cl_open(&other, &sel), 0);
	assert_string_equal(other.info.name, cl.info.name);
	mb_cl_release(&other);
	/* errors name the call, the device and the shape */
	assert_int_equal(mb_cl_check(&cl, CL_OUT_OF_RESOURCES, "clEnqueueReadBuffer",
				     "batch %d, %d matrices", 3, 2),
			 -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "clEnqueueReadBuffer failed on '"));
	assert_non_null(strstr(mb_errmsg(), "' (batch 3, 2 matrices): CL_OUT_OF_RESOURCES"));
	assert_int_equal(mb_clblast_check(&cl, -2050, "CLBlastSgemm", "64x64x64"), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), ": CLBlastInsufficientMemoryTemp"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ns_matches_float64),
		cmocka_unit_test(gram_equals_standard_in_float64),
		cmocka_unit_test(ns_method_needs_its_reserve),
		cmocka_unit_test(ns_of_known_matrices),
		cmocka_unit_test(momentum_bit_for_bit),
		cmocka_unit_test(norm_in_the_devices_order),
		cmocka_unit_test(rng_matches_host),
		cmocka_unit_test(padding_writes_nothing),
		cmocka_unit_test(events_of_own_commands),
		cmocka_unit_test(no_profiling_no_time),
		cmocka_unit_test(ledger_books),
		cmocka_unit_test(device_mem_limit),
		cmocka_unit_test(ns_needs_reserve),
		cmocka_unit_test(ns_workspace_within_int),
		cmocka_unit_test(precision_auto_per_device),
		cmocka_unit_test(nsbench_verifies),
		cmocka_unit_test(nsbench_holds_a_shape),
		cmocka_unit_test(spread),
		cmocka_unit_test(device_selection),
	};

	return cmocka_run_group_tests_name("ns", tests, open_device, close_device);
}
