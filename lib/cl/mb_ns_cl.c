/*
 * mb_ns_cl: momentum and Newton-Schulz by either method on the device
 * (kernels/muon.cl and CLBlast), and the float64 host reference of each.
 */
#include "mb_ns_cl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "mb_err.h"

/*
 * Where the matrices and the scratch sit in the workspace: X and Y (the
 * next X), then the standard iteration's A and B, or the Gram iteration's
 * R, Z, Q and P (the next Q, or RZ) in their place, in elements of the
 * precision (fp32, or 16 bits); then the norm's scratch, in floats
 * (mb_ns_workspace_bytes).
 */
struct layout {
	bool gram; /* the Gram iteration */
	uint64_t m, n, x, y, a, b, r, z, q, p;
	uint64_t scratch; /* in floats */
};

static struct layout layout_of(uint64_t rows, uint64_t cols, enum mb_ns_method method,
			       enum mb_precision precision)
{
	struct layout w;

	w.gram = mb_ns_gram_iteration(method, rows, cols);
	w.m = rows < cols ? rows : cols;
	w.n = rows < cols ? cols : rows;
	w.x = 0;
	w.y = w.m * w.n;
	w.a = w.r = 2 * w.m * w.n;
	w.b = w.z = w.a + w.m * w.m;
	w.q = w.z + w.m * w.m;
	w.p = w.q + w.m * w.m;
	w.scratch = mb_ns_scratch_float(w.gram ? w.p + w.m * w.m : w.b + w.m * w.m, precision);
	return w;
}

/* Set the N arguments of K, given as (size, pointer) pairs. */
static cl_int set_args(cl_kernel k, cl_uint n, ...)
{
	cl_int st = CL_SUCCESS;
	va_list ap;
	cl_uint i;

	va_start(ap, n);
	for (i = 0; i < n && st == CL_SUCCESS; i++) {
		size_t size = va_arg(ap, size_t);
		const void *value = va_arg(ap, const void *);

		st = clSetKernelArg(k, i, size, value);
	}
	va_end(ap);
	return st;
}

#define ARG(v) sizeof(v), (const void *)&(v)

int mb_ns_init(struct mb_ns *ns, const struct mb_cl *cl, struct mb_ledger *ledger)
{
	int err;

	memset(ns, 0, sizeof(*ns));
	ns->cl = cl;
	ns->ledger = ledger;
	if ((err = mb_cl_kernel(cl, "muon_momentum", &ns->momentum)) ||
	    (err = mb_cl_kernel(cl, "muon_momentum_bf16", &ns->momentum_bf16)) ||
	    (err = mb_cl_kernel(cl, "cast_bf16", &ns->cast_bf16)) ||
	    (err = mb_cl_kernel(cl, "widen_bf16", &ns->widen_bf16)) ||
	    (err = mb_cl_kernel(cl, "sumsq_partial", &ns->sumsq)) ||
	    (err = mb_cl_kernel(cl, "sumsq_runs", &ns->sumsq_runs)) ||
	    (err = mb_cl_kernel(cl, "sumsq_runs_bf16", &ns->sumsq_runs_bf16)) ||
	    (err = mb_cl_kernel(cl, "norm_finish", &ns->finish)) ||
	    (err = mb_cl_kernel(cl, "ns_load", &ns->load)) ||
	    (err = mb_cl_kernel(cl, "ns_store", &ns->store)) ||
	    (err = mb_cl_kernel(cl, "ns_stamp", &ns->stamp)) ||
	    (err = mb_cl_kernel(cl, "ns_add_diagonal", &ns->diagonal)) ||
	    (err = mb_cl_local_size(cl, ns->momentum, "muon_momentum", 1, &ns->momentum_local)) ||
	    (err = mb_cl_local_size(cl, ns->momentum_bf16, "muon_momentum_bf16", 1,
				    &ns->momentum_bf16_local)) ||
	    (err = mb_cl_local_size(cl, ns->cast_bf16, "cast_bf16", 1, &ns->cast_local)) ||
	    (err = mb_cl_local_size(cl, ns->widen_bf16, "widen_bf16", 1, &ns->widen_local)) ||
	    (err = mb_cl_local_size(cl, ns->sumsq, "sumsq_partial", 1, &ns->reduce_local)) ||
	    (err = mb_cl_local_size(cl, ns->load, "ns_load", 2, ns->load_local)) ||
	    (err = mb_cl_local_size(cl, ns->store, "ns_store", 2, ns->store_local)) ||
	    (err = mb_cl_local_size(cl, ns->diagonal, "ns_add_diagonal", 1, &ns->diagonal_local)))
		goto out_release;
	return 0;

out_release:
	mb_ns_release(ns);
	return err;
}

/*
 * CLBlast's temporary bytes for one row-major GEMM C(m x n) = A(m x k) B(k x n),
 * asked with offsets that are not 0: a matrix at offset 0 whose sizes fit
 * CLBlast's tiles needs no temporary copy, one elsewhere does, and the
 * workspace's matrices sit at offsets that change from call to call. So this
 * is what the calls need at any offset, never less.
 */
static int gemm_temp(const struct mb_cl *cl, bool b_transposed, uint64_t m, uint64_t n, uint64_t k,
		     size_t *bytes)
{
	cl_command_queue q = cl->compute;
	int st;

	st = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo,
					b_transposed ? CLBlastTransposeYes : CLBlastTransposeNo, m,
					n, k, 1, k, 1, b_transposed ? k : n, 1, n, &q, bytes);
	return mb_clblast_check(cl, st, "CLBlastSGemmTempBufferSize", "%llux%llux%llu GEMM",
				(unsigned long long)m, (unsigned long long)n,
				(unsigned long long)k);
}

int mb_ns_temp_bytes(const struct mb_cl *cl, enum mb_ns_method method, const uint64_t *rows,
		     const uint64_t *cols, size_t n, uint64_t *bytes)
{
	size_t i, j, t1, t2, t3;
	struct layout w;
	int err;

	*bytes = 0;
	/* both methods' GEMMs are of these three shapes */
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && (rows[j] != rows[i] || cols[j] != cols[i]); j++)
			;
		if (j < i)
			continue; /* a model has a few shapes, many times over */
		w = layout_of(rows[i], cols[i], method, MB_PREC_FP32);
		if ((err = gemm_temp(cl, true, w.m, w.m, w.n, &t1)) ||
		    (err = gemm_temp(cl, false, w.m, w.m, w.m, &t2)) ||
		    (err = gemm_temp(cl, false, w.m, w.n, w.m, &t3)))
			return err;
		*bytes = t1 > *bytes ? t1 : *bytes;
		*bytes = t2 > *bytes ? t2 : *bytes;
		*bytes = t3 > *bytes ? t3 : *bytes;
	}
	return 0;
}

/* Make *BUF (of *HAVE bytes) at least NEED bytes, through the ledger. */
static int grow(struct mb_ns *ns, cl_mem *buf, uint64_t *have, uint64_t need, const char *tag)
{
	int err;

	if (need <= *have)
		return 0;
	mb_ledger_free(ns->ledger, *buf);
	*buf = NULL;
	*have = 0;
	if ((err = mb_ledger_alloc(ns->ledger, need, tag, buf)))
		return err;
	*have = need;
	return 0;
}

int mb_ns_reserve(struct mb_ns *ns, const uint64_t *rows, const uint64_t *cols, size_t n)
{
	/* CLBlast runs the GEMMs at fp32 alone, and calibrated mode runs none */
	bool clblast = ns->precision == MB_PREC_FP32 && !(ns->rate_gflops > 0);
	uint64_t work = 0, temp = 0;
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		uint64_t bytes = mb_ns_workspace_bytes(rows[i], cols[i], ns->method, ns->precision);

		if (bytes > work)
			work = bytes;
		/* CLBlast takes offsets and sizes as int and indexes in int */
		if (clblast && bytes / sizeof(float) > INT32_MAX)
			return mb_fail(
				"Newton-Schulz on a %llux%llu matrix needs %llu floats of "
				"workspace, past 2^31-1, where CLBlast's int offsets wrap; the "
				"16-bit GEMMs (--ns-precision bf16|fp16) index in 64 bits",
				(unsigned long long)rows[i], (unsigned long long)cols[i],
				(unsigned long long)(bytes / sizeof(float)));
	}
	if (ns->precision != MB_PREC_FP32 && !(ns->rate_gflops > 0) && !ns->gemm16.kernel[0] &&
	    (err = mb_gemm16_open(&ns->gemm16, ns->cl)))
		return err;
	if ((clblast && (err = mb_ns_temp_bytes(ns->cl, ns->method, rows, cols, n, &temp))) ||
	    (err = grow(ns, &ns->work, &ns->work_bytes, work, "ns.workspace")) ||
	    (err = grow(ns, &ns->temp, &ns->temp_bytes, temp, "clblast.temp")))
		return err;
	/* calibrated: the spin writes its float into the (unused) workspace */
	ns->spin.sink = ns->work;
	if (ns->rate_gflops > 0 && !ns->spin.kernel)
		return mb_spin_init(&ns->spin, ns->cl, ns->work, 0);
	return 0;
}

static int copy(struct mb_ns *ns, uint64_t from, uint64_t to, uint64_t count);

/*
 * Row-major C(m x n) = alpha A(m x k) B(k x n) + beta C_in, all in the
 * workspace: our kernel in bf16 or fp16, C_in read where it is; CLBlast's
 * SGEMM in fp32, C_in copied to C first (where it is elsewhere and COPIES,
 * off for the GEMMs alone).
 */
static int gemm(struct mb_ns *ns, bool copies, bool b_transposed, uint64_t m, uint64_t n,
		uint64_t k, float alpha, uint64_t a, uint64_t b, float beta, uint64_t c_in,
		uint64_t c)
{
	cl_command_queue q = ns->cl->compute;
	int st, err;

	if (ns->precision != MB_PREC_FP32) {
		ns->gemm_flops += 2 * m * n * k;
		if (!ns->gemm16.kernel[0])
			return mb_fail("Newton-Schulz in %s: its GEMM kernel is not built (call "
				       "mb_ns_reserve after setting the precision)",
				       mb_precision_names[ns->precision]);
		return mb_gemm16_enqueue(&ns->gemm16, q, ns->precision, b_transposed, m, n, k,
					 alpha, ns->work, a, ns->work, b, beta, ns->work, c_in, c,
					 NULL);
	}
	if (beta != 0.0f && c_in != c && copies && (err = copy(ns, c_in, c, m * n)))
		return err;
	ns->gemm_flops += 2 * m * n * k;
	st = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor, CLBlastTransposeNo,
					b_transposed ? CLBlastTransposeYes : CLBlastTransposeNo, m,
					n, k, alpha, ns->work, a, k, ns->work, b,
					b_transposed ? k : n, beta, ns->work, c, n, &q, NULL,
					ns->temp);
	return mb_clblast_check(ns->cl, st, "CLBlastSgemm", "Newton-Schulz %llux%llux%llu GEMM",
				(unsigned long long)m, (unsigned long long)n,
				(unsigned long long)k);
}

/* COUNT elements of the workspace from FROM to TO. */
static int copy(struct mb_ns *ns, uint64_t from, uint64_t to, uint64_t count)
{
	const uint64_t size = mb_ns_elem_bytes(ns->precision);
	cl_int st;

	st = clEnqueueCopyBuffer(ns->cl->compute, ns->work, ns->work, from * size, to * size,
				 count * size, 0, NULL, NULL);
	return mb_cl_check(ns->cl, st, "clEnqueueCopyBuffer",
			   "Newton-Schulz workspace, %llu elements", (unsigned long long)count);
}

/* Five iterations on the workspace; with COPIES off, the GEMMs alone. */
static int iterate(struct mb_ns *ns, struct layout *w, bool copies)
{
	uint64_t m = w->m, n = w->n, t;
	int i, err;

	for (i = 0; i < MB_NS_ITERATIONS; i++) {
		/* A = X Xᵀ, B = b A + c A A, Y = a X + B X */
		if ((err = gemm(ns, copies, true, m, m, n, 1.0f, w->x, w->x, 0.0f, w->a, w->a)) ||
		    (err = gemm(ns, copies, false, m, m, m, MB_NS_C, w->a, w->a, MB_NS_B, w->a,
				w->b)) ||
		    (err = gemm(ns, copies, false, m, n, m, 1.0f, w->b, w->x, MB_NS_A, w->x, w->y)))
			return err;
		t = w->x;
		w->x = w->y;
		w->y = t;
	}
	return 0;
}

static void swap(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

static int add_diagonal(struct mb_ns *ns, uint64_t at, uint64_t m);

/*
 * The Gram iteration on the workspace (m < n), as mb_ns.h writes it: Q and
 * P swap after each Q = a Q + Z Q, X and Y after each Q X; RZ goes in P,
 * free between iterations. With COPIES off, the GEMMs alone.
 */
static int iterate_gram(struct mb_ns *ns, struct layout *w, bool copies)
{
	uint64_t m = w->m, n = w->n, mm = w->m * w->m;
	bool have_q = false;
	int i, err;

	/* R = X Xᵀ */
	if ((err = gemm(ns, copies, true, m, m, n, 1.0f, w->x, w->x, 0.0f, w->r, w->r)))
		return err;
	for (i = 0; i < MB_NS_ITERATIONS; i++) {
		/* the restart: X = Q X, R = X Xᵀ, Q none */
		if (i == MB_NS_RESTART) {
			if ((err = gemm(ns, copies, false, m, n, m, 1.0f, w->q, w->x, 0.0f, w->y,
					w->y)) ||
			    (err = gemm(ns, copies, true, m, m, n, 1.0f, w->y, w->y, 0.0f, w->r,
					w->r)))
				return err;
			swap(&w->x, &w->y);
			have_q = false;
		}
		/* Z = b R + c R R */
		if ((err = gemm(ns, copies, false, m, m, m, MB_NS_C, w->r, w->r, MB_NS_B, w->r,
				w->z)))
			return err;
		if (!have_q) { /* Q = Z + a I */
			if (copies &&
			    ((err = copy(ns, w->z, w->q, mm)) || (err = add_diagonal(ns, w->q, m))))
				return err;
		} else { /* Q = a Q + Z Q */
			if ((err = gemm(ns, copies, false, m, m, m, 1.0f, w->z, w->q, MB_NS_A, w->q,
					w->p)))
				return err;
			swap(&w->q, &w->p);
		}
		have_q = true;
		if (i + 1 == MB_NS_ITERATIONS || i + 1 == MB_NS_RESTART)
			continue;
		/* RZ = a R + Z R (in P), then R = a RZ + Z RZ */
		if ((err = gemm(ns, copies, false, m, m, m, 1.0f, w->z, w->r, MB_NS_A, w->r,
				w->p)) ||
		    (err = gemm(ns, copies, false, m, m, m, 1.0f, w->z, w->p, MB_NS_A, w->p, w->r)))
			return err;
	}
	/* X = Q X */
	if ((err = gemm(ns, copies, false, m, n, m, 1.0f, w->q, w->x, 0.0f, w->y, w->y)))
		return err;
	swap(&w->x, &w->y);
	return 0;
}

/*
 * Enqueue K over N[0 .. DIMS) work-items in work-groups of LOCAL, the global
 * size rounded up to a multiple of it (the kernels skip the padding); its
 * event into *EV unless EV is NULL.
 */
static int enqueue(struct mb_ns *ns, cl_kernel k, const char *name, cl_uint dims, const size_t *n,
		   const size_t *local, uint64_t rows, uint64_t cols, cl_event *ev)
{
	size_t global[2];
	cl_uint d;
	cl_int st;

	for (d = 0; d < dims; d++)
		global[d] = mb_cl_round_up(n[d], local[d]);
	st = clEnqueueNDRangeKernel(ns->cl->compute, k, dims, NULL, global, local, 0, NULL, ev);
	return mb_cl_check(ns->cl, st, "clEnqueueNDRangeKernel", "%s, %llux%llu", name,
			   (unsigned long long)rows, (unsigned long long)cols);
}

/* The workspace's M x M matrix at AT += a I (ns_add_diagonal, or ns16_add_diagonal). */
static int add_diagonal(struct mb_ns *ns, uint64_t at, uint64_t m)
{
	const bool w16 = ns->precision != MB_PREC_FP32;
	cl_kernel k = w16 ? ns->gemm16.diagonal : ns->diagonal;
	const char *name = w16 ? "ns16_add_diagonal" : "ns_add_diagonal";
	cl_ulong off = at, count = m;
	cl_uint prec = mb_gemm16_prec_arg(ns->precision);
	size_t n = m;
	float a = MB_NS_A;
	cl_int st;
	int err;

	st = set_args(k, 4, ARG(ns->work), ARG(off), ARG(count), ARG(a));
	if (st == CL_SUCCESS && w16)
		st = clSetKernelArg(k, 4, sizeof(prec), &prec);
	if ((err = mb_cl_check(ns->cl, st, "clSetKernelArg", "%s, %llux%llu", name,
			       (unsigned long long)m, (unsigned long long)m)))
		return err;
	return enqueue(ns, k, name, 1, &n, w16 ? &ns->gemm16.diagonal_local : &ns->diagonal_local,
		       m, m, NULL);
}

static int check_reserved(const struct mb_ns *ns, uint64_t rows, uint64_t cols)
{
	if (rows && cols &&
	    mb_ns_workspace_bytes(rows, cols, ns->method, ns->precision) <= ns->work_bytes)
		return 0;
	return mb_fail("Newton-Schulz (%s) on %llux%llu: no workspace reserved for that shape",
		       mb_ns_method_names[ns->method], (unsigned long long)rows,
		       (unsigned long long)cols);
}

/*
 * Enqueue on Q elementwise KERNEL (named NAME, work-groups of LOCAL) on Y[YOFF + i] from X[XOFF +
 * i], i < N.
 */
static int convert(struct mb_ns *ns, cl_command_queue q, cl_kernel kernel, size_t local,
		   const char *name, cl_mem x, uint64_t xoff, cl_mem y, uint64_t yoff, uint64_t n,
		   cl_event *ev)
{
	cl_ulong xo = xoff, yo = yoff, count = n;
	size_t global = mb_cl_round_up(n, local);
	cl_int st;

	if (ev)
		*ev = NULL;
	if (!n)
		return 0;
	st = set_args(kernel, 5, ARG(x), ARG(xo), ARG(y), ARG(yo), ARG(count));
	if (st == CL_SUCCESS)
		st = clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, &local, 0, NULL, ev);
	return mb_cl_check(ns->cl, st, name, "%llu elements", (unsigned long long)n);
}

int mb_ns_cast_bf16(struct mb_ns *ns, cl_mem x, uint64_t xoff, cl_mem y, uint64_t yoff, uint64_t n,
		    cl_event *ev)
{
	return convert(ns, ns->cl->compute, ns->cast_bf16, ns->cast_local, "cast_bf16", x, xoff, y,
		       yoff, n, ev);
}

int mb_ns_widen_bf16(struct mb_ns *ns, cl_command_queue q, cl_mem x, uint64_t xoff, cl_mem y,
		     uint64_t yoff, uint64_t n)
{
	return convert(ns, q, ns->widen_bf16, ns->widen_local, "widen_bf16", x, xoff, y, yoff, n,
		       NULL);
}

/*
 * Enqueue on Q the sum of squares of X[OFF .. OFF+N), fp32 or (BF16) bf16,
 * in MB_NS_PARTIALS partial sums, into PARTIAL at element PART_OFF; its
 * event into *EV unless EV is NULL. A CPU device sums contiguous runs
 * (sumsq_runs, sumsq_runs_bf16), whose work-items one core runs one after
 * another; any other device the elements a global size apart, the order a
 * GPU wants: sumsq_partial for fp32, sumsq_runs_bf16 with a span of 1.
 */
static int partial_sums(struct mb_ns *ns, cl_command_queue q, bool bf16, cl_mem x, uint64_t off,
			uint64_t n, cl_mem partial, uint64_t part_off, cl_event *ev)
{
	size_t global = MB_NS_PARTIALS * ns->reduce_local;
	bool cpu = !strcmp(ns->cl->info.type, "CPU"), runs = cpu || bf16;
	cl_kernel k = bf16 ? ns->sumsq_runs_bf16 : cpu ? ns->sumsq_runs : ns->sumsq;
	const char *name = bf16 ? "sumsq_runs_bf16" : cpu ? "sumsq_runs" : "sumsq_partial";
	cl_ulong xoff = off, count = n, poff = part_off, span = cpu ? (n + global - 1) / global : 1;
	size_t scratch = ns->reduce_local * sizeof(float);
	cl_int st;

	st = set_args(k, 5, ARG(x), ARG(xoff), ARG(count), ARG(partial), ARG(poff));
	if (st == CL_SUCCESS && runs)
		st = clSetKernelArg(k, 5, sizeof(span), &span);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(k, runs ? 6 : 5, scratch, NULL);
	if (mb_cl_check(ns->cl, st, "clSetKernelArg", "%s, %llu elements", name,
			(unsigned long long)n))
		return -MB_EFAIL;
	st = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &ns->reduce_local, 0, NULL, ev);
	return mb_cl_check(ns->cl, st, "clEnqueueNDRangeKernel", "%s, %llu elements", name,
			   (unsigned long long)n);
}

int mb_ns_sumsq_bf16(struct mb_ns *ns, cl_command_queue q, cl_mem x, uint64_t off, uint64_t n,
		     cl_mem partial, uint64_t part_off, cl_event *ev)
{
	if (ev)
		*ev = NULL;
	return partial_sums(ns, q, true, x, off, n, partial, part_off, ev);
}

/*
 * Workspace[scratch + PARTIALS] = 1 / (|in|_F + eps), the sums in the
 * device's order (partial_sums, as the backward's gradient norm); the first
 * command's event into *EV.
 */
static int norm(struct mb_ns *ns, cl_mem in, uint64_t in_off, uint64_t rows, uint64_t cols,
		uint64_t scratch, cl_event *ev)
{
	size_t one = 1;
	cl_ulong part_off = scratch;
	cl_uint npartials = MB_NS_PARTIALS;
	float eps = MB_NS_EPS;
	cl_int st;
	int err;

	st = set_args(ns->finish, 4, ARG(ns->work), ARG(part_off), ARG(npartials), ARG(eps));
	if ((err = mb_cl_check(ns->cl, st, "clSetKernelArg", "norm of %llux%llu",
			       (unsigned long long)rows, (unsigned long long)cols)) ||
	    (err = partial_sums(ns, ns->cl->compute, false, in, in_off, rows * cols, ns->work,
				scratch, ev)))
		return err;
	if ((err = enqueue(ns, ns->finish, "norm_finish", 1, &one, &one, rows, cols, NULL)) && ev) {
		clReleaseEvent(*ev);
		*ev = NULL;
	}
	return err;
}

/* Release what *A and *B hold (either may be NULL) and empty them. */
static void release_events(cl_event *a, cl_event *b)
{
	if (a && *a) {
		clReleaseEvent(*a);
		*a = NULL;
	}
	if (b && *b) {
		clReleaseEvent(*b);
		*b = NULL;
	}
}

/*
 * Calibrated mode's stand-in for mb_ns_orthogonalize: OUT = IN (a copy
 * where they differ), then a spin of the FLOPs at NS's rate. *FIRST is the
 * copy, or the spin when there is none; *LAST the spin.
 */
static int calibrated(struct mb_ns *ns, cl_mem in, uint64_t in_off, uint64_t rows, uint64_t cols,
		      cl_mem out, uint64_t out_off, cl_event *first, cl_event *last)
{
	double seconds = (double)mb_ns_flops(rows, cols, ns->method) / (ns->rate_gflops * 1e9);
	cl_event copy = NULL, spin = NULL;
	bool moves = in != out || in_off != out_off;
	cl_int st;
	int err;

	if (moves) {
		st = clEnqueueCopyBuffer(ns->cl->compute, in, out, 4 * in_off, 4 * out_off,
					 4 * rows * cols, 0, NULL, first ? &copy : NULL);
		if ((err = mb_cl_check(ns->cl, st, "clEnqueueCopyBuffer",
				       "calibrated Newton-Schulz, %llux%llu",
				       (unsigned long long)rows, (unsigned long long)cols)))
			return err;
	}
	if ((err = mb_spin_enqueue(&ns->spin, ns->cl->compute, seconds,
				   first || last ? &spin : NULL))) {
		release_events(&copy, NULL);
		return err;
	}
	if (first && !copy && last)
		clRetainEvent(spin); /* one reference for each */
	if (first)
		*first = copy ? copy : spin;
	if (last)
		*last = spin;
	else if (spin && copy)
		clReleaseEvent(spin);
	return 0;
}

int mb_ns_orthogonalize(struct mb_ns *ns, cl_mem in, uint64_t in_off, uint64_t rows, uint64_t cols,
			cl_mem out, uint64_t out_off, cl_event *first, cl_event *last)
{
	struct layout w = layout_of(rows, cols, ns->method, ns->precision);
	cl_ulong r = rows, c = cols, ioff = in_off, ooff = out_off,
		 inv = w.scratch + MB_NS_PARTIALS;
	cl_ulong xoff;
	size_t load_n[2] = { w.n, w.m }, store_n[2] = { cols, rows };
	float scale = mb_ns_scale(rows, cols);
	/* a 16-bit workspace's load and store: ns_gemm.cl's, with the precision */
	const bool w16 = ns->precision != MB_PREC_FP32;
	cl_kernel load = w16 ? ns->gemm16.load : ns->load,
		  store = w16 ? ns->gemm16.store : ns->store;
	const size_t *load_local = w16 ? ns->gemm16.load_local : ns->load_local,
		     *store_local = w16 ? ns->gemm16.store_local : ns->store_local;
	cl_uint prec = mb_gemm16_prec_arg(ns->precision);
	cl_event start = NULL;
	cl_int st;
	int err;

	if (first)
		*first = NULL;
	if (last)
		*last = NULL;
	if ((err = check_reserved(ns, rows, cols)))
		return err;
	if (ns->rate_gflops > 0)
		return calibrated(ns, in, in_off, rows, cols, out, out_off, first, last);
	if ((err = norm(ns, in, in_off, rows, cols, w.scratch, first ? &start : NULL)))
		return err;
	xoff = w.x;
	st = set_args(load, 8, ARG(in), ARG(ioff), ARG(r), ARG(c), ARG(ns->work), ARG(inv),
		      ARG(ns->work), ARG(xoff));
	if (st == CL_SUCCESS && w16)
		st = clSetKernelArg(load, 8, sizeof(prec), &prec);
	if ((err = mb_cl_check(ns->cl, st, "clSetKernelArg", "%s, %llux%llu",
			       w16 ? "ns16_load" : "ns_load", (unsigned long long)rows,
			       (unsigned long long)cols)) ||
	    (err = enqueue(ns, load, w16 ? "ns16_load" : "ns_load", 2, load_n, load_local, rows,
			   cols, NULL)) ||
	    (err = w.gram ? iterate_gram(ns, &w, true) : iterate(ns, &w, true)))
		goto out_release;
	xoff = w.x;
	st = set_args(store, 7, ARG(ns->work), ARG(xoff), ARG(r), ARG(c), ARG(scale), ARG(out),
		      ARG(ooff));
	if (st == CL_SUCCESS && w16)
		st = clSetKernelArg(store, 7, sizeof(prec), &prec);
	if ((err = mb_cl_check(ns->cl, st, "clSetKernelArg", "%s, %llux%llu",
			       w16 ? "ns16_store" : "ns_store", (unsigned long long)rows,
			       (unsigned long long)cols)) ||
	    (err = enqueue(ns, store, w16 ? "ns16_store" : "ns_store", 2, store_n, store_local,
			   rows, cols, last)))
		goto out_release;
	if (first)
		*first = start;
	return 0;

out_release:
	release_events(&start, NULL);
	return err;
}

/* Enqueue the empty ns_stamp; its event into *EV. */
static int stamp(struct mb_ns *ns, uint64_t rows, uint64_t cols, cl_event *ev)
{
	size_t one = 1;

	return enqueue(ns, ns->stamp, "ns_stamp", 1, &one, &one, rows, cols, ev);
}

int mb_ns_gemms_only(struct mb_ns *ns, uint64_t rows, uint64_t cols, cl_event *first,
		     cl_event *last)
{
	struct layout w = layout_of(rows, cols, ns->method, ns->precision);
	int err;

	if (first)
		*first = NULL;
	if (last)
		*last = NULL;
	if ((err = check_reserved(ns, rows, cols)) ||
	    (first && (err = stamp(ns, rows, cols, first))) ||
	    (err = w.gram ? iterate_gram(ns, &w, false) : iterate(ns, &w, false)) ||
	    (last && (err = stamp(ns, rows, cols, last))))
		release_events(first, last);
	return err;
}

int mb_ns_clear(struct mb_ns *ns)
{
	return mb_cl_zero(ns->cl, ns->cl->compute, ns->work, 0, ns->work_bytes,
			  "the Newton-Schulz workspace");
}

/* The momentum kernel K (NAME) over N elements; see mb_ns_momentum. */
static int momentum(struct mb_ns *ns, cl_kernel k, size_t local, const char *name, cl_mem grad,
		    uint64_t grad_off, cl_mem mom, uint64_t mom_off, uint64_t n, float beta,
		    cl_event *first, cl_event *last)
{
	cl_ulong goff = grad_off, moff = mom_off, count = n;
	size_t global = mb_cl_round_up(n, local);
	cl_event ev = NULL;
	cl_int st;

	if (first)
		*first = NULL;
	if (last)
		*last = NULL;
	if (!n)
		return 0;
	st = set_args(k, 6, ARG(grad), ARG(goff), ARG(mom), ARG(moff), ARG(count), ARG(beta));
	if (st == CL_SUCCESS)
		st = clEnqueueNDRangeKernel(ns->cl->compute, k, 1, NULL, &global, &local, 0, NULL,
					    first || last ? &ev : NULL);
	if (mb_cl_check(ns->cl, st, name, "%llu elements", (unsigned long long)n))
		return -MB_EFAIL;
	/* one command: the same event for both, a reference for each */
	if (first && last &&
	    mb_cl_check(ns->cl, clRetainEvent(ev), "clRetainEvent", "%s's event", name)) {
		clReleaseEvent(ev);
		return -MB_EFAIL;
	}
	if (first)
		*first = ev;
	if (last)
		*last = ev;
	return 0;
}

int mb_ns_momentum(struct mb_ns *ns, cl_mem grad, uint64_t grad_off, cl_mem mom, uint64_t mom_off,
		   uint64_t n, float beta, cl_event *first, cl_event *last)
{
	return momentum(ns, ns->momentum, ns->momentum_local, "muon_momentum", grad, grad_off, mom,
			mom_off, n, beta, first, last);
}

int mb_ns_momentum_bf16(struct mb_ns *ns, cl_mem grad, uint64_t grad_off, cl_mem mom,
			uint64_t mom_off, uint64_t n, float beta, cl_event *first, cl_event *last)
{
	return momentum(ns, ns->momentum_bf16, ns->momentum_bf16_local, "muon_momentum_bf16", grad,
			grad_off, mom, mom_off, n, beta, first, last);
}

void mb_ns_release(struct mb_ns *ns)
{
	cl_kernel *k[] = {
		&ns->momentum, &ns->momentum_bf16, &ns->cast_bf16,	 &ns->widen_bf16,
		&ns->sumsq,    &ns->sumsq_runs,	   &ns->sumsq_runs_bf16, &ns->finish,
		&ns->load,     &ns->store,	   &ns->stamp,		 &ns->diagonal,
	};
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (*k[i])
			clReleaseKernel(*k[i]);
	mb_gemm16_release(&ns->gemm16);
	mb_spin_release(&ns->spin);
	if (ns->ledger) {
		mb_ledger_free(ns->ledger, ns->work);
		mb_ledger_free(ns->ledger, ns->temp);
	}
	memset(ns, 0, sizeof(*ns));
}

const char *mb_ns_kernel_name(const struct mb_ns *ns)
{
	if (ns->rate_gflops > 0)
		return "ns_spin";
	if (ns->precision == MB_PREC_FP32)
		return "clblast-sgemm";
	if (!ns->gemm16.kernel[0])
		return "ns_gemm";
	static const char *const names[MB_GEMM16_NPATHS] = {
		[MB_GEMM16_PORTABLE] = "ns_gemm-portable",
		[MB_GEMM16_MMA] = "ns_gemm-mma",
		[MB_GEMM16_MMA_EMUL] = "ns_gemm-mma-emul",
	};

	return names[ns->gemm16.path];
}

enum mb_precision mb_ns_precision_auto(const struct mb_cl_device_info *info,
				       enum mb_ns_method method)
{
	if (!mb_gemm16_mma_capable(info))
		return MB_PREC_FP32;
	return method == MB_NS_GRAM ? MB_PREC_FP16 : MB_PREC_BF16;
}

/* C(m x n) = A(m x k) B(k x n), or A Bᵀ with B as n x k, row-major doubles. */
static void ref_gemm(const double *a, const double *b, double *c, uint64_t m, uint64_t n,
		     uint64_t k, bool b_transposed)
{
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < (int64_t)m; i++) {
		double *ci = c + i * n;
		uint64_t j, l;

		if (b_transposed) {
			for (j = 0; j < n; j++) {
				double s = 0;

				for (l = 0; l < k; l++)
					s += a[i * k + l] * b[j * k + l];
				ci[j] = s;
			}
			continue;
		}
		memset(ci, 0, n * sizeof(*ci));
		for (l = 0; l < k; l++) {
			double ail = a[i * k + l];

			for (j = 0; j < n; j++)
				ci[j] += ail * b[l * n + j];
		}
	}
}

/* Y = a X + Y over N doubles. */
static void ref_axpy(double a, const double *x, double *y, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		y[i] += a * x[i];
}

static void ref_swap(double **a, double **b)
{
	double *t = *a;

	*a = *b;
	*b = t;
}

/* Five standard iterations on X (m x n) with Y, A and B; the result in *X. */
static void ref_standard(double **x, double **y, double *a, double *b, uint64_t m, uint64_t n)
{
	uint64_t i;
	int it;

	for (it = 0; it < MB_NS_ITERATIONS; it++) {
		ref_gemm(*x, *x, a, m, m, n, true);
		ref_gemm(a, a, b, m, m, m, false);
		for (i = 0; i < m * m; i++)
			b[i] = MB_NS_B * a[i] + MB_NS_C * b[i];
		ref_gemm(b, *x, *y, m, n, m, false);
		ref_axpy(MB_NS_A, *x, *y, m * n);
		ref_swap(x, y);
	}
}

/* The Gram iteration on X (m x n, m < n) with Y and four m x m; the result in *X. */
static void ref_gram(double **x, double **y, double *sq, uint64_t m, uint64_t n)
{
	double *r = sq, *z = r + m * m, *q = z + m * m, *p = q + m * m;
	uint64_t i;
	int it;

	ref_gemm(*x, *x, r, m, m, n, true);
	for (it = 0; it < MB_NS_ITERATIONS; it++) {
		if (it == MB_NS_RESTART) {
			ref_gemm(q, *x, *y, m, n, m, false);
			ref_swap(x, y);
			ref_gemm(*x, *x, r, m, m, n, true);
		}
		ref_gemm(r, r, z, m, m, m, false);
		for (i = 0; i < m * m; i++)
			z[i] = MB_NS_B * r[i] + MB_NS_C * z[i];
		if (it == 0 || it == MB_NS_RESTART) {
			memcpy(q, z, m * m * sizeof(*q));
			for (i = 0; i < m; i++)
				q[i * m + i] += MB_NS_A;
		} else {
			ref_gemm(z, q, p, m, m, m, false);
			ref_axpy(MB_NS_A, q, p, m * m);
			ref_swap(&q, &p);
		}
		if (it + 1 == MB_NS_ITERATIONS || it + 1 == MB_NS_RESTART)
			continue;
		ref_gemm(z, r, p, m, m, m, false); /* RZ */
		ref_axpy(MB_NS_A, r, p, m * m);
		ref_gemm(z, p, r, m, m, m, false);
		ref_axpy(MB_NS_A, p, r, m * m);
	}
	ref_gemm(q, *x, *y, m, n, m, false);
	ref_swap(x, y);
}

int mb_ns_reference(const float *in, uint64_t rows, uint64_t cols, enum mb_ns_method method,
		    double *out)
{
	struct layout w = layout_of(rows, cols, method, MB_PREC_FP32);
	uint64_t m = w.m, n = w.n, i, j;
	double *base, *x, *y, *sq, norm = 0, scale = mb_ns_scale(rows, cols);
	bool transpose = rows > cols;

	base = malloc(sizeof(double) * (2 * m * n + (w.gram ? 4 : 2) * m * m));
	if (!base)
		return mb_fail("out of host memory for the reference of %llux%llu",
			       (unsigned long long)rows, (unsigned long long)cols);
	x = base;
	y = x + m * n;
	sq = y + m * n;
	for (i = 0; i < rows * cols; i++)
		norm += (double)in[i] * in[i];
	norm = sqrt(norm) + MB_NS_EPS;
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++)
			x[i * n + j] = (transpose ? in[j * cols + i] : in[i * cols + j]) / norm;
	if (w.gram)
		ref_gram(&x, &y, sq, m, n);
	else
		ref_standard(&x, &y, sq, sq + m * m, m, n);
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++)
			out[i * cols + j] = scale * (transpose ? x[j * n + i] : x[i * n + j]);
	free(base);
	return 0;
}
