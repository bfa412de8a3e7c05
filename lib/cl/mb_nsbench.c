/*
 * mb_nsbench: timed Newton-Schulz and GEMM-only runs, and the check against
 * the float64 reference.
 */
#include "mb_nsbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_clock.h"
#include "mb_err.h"
#include "mb_rng_cl.h"

static int finish(const struct mb_nsbench *b)
{
	return mb_cl_check(b->ns->cl, clFinish(b->ns->cl->compute), "clFinish",
			   "Newton-Schulz on %llux%llu", (unsigned long long)b->rows,
			   (unsigned long long)b->cols);
}

static int poison(const struct mb_nsbench *b)
{
	return mb_cl_fill(b->ns->cl, b->ns->cl->compute, b->out, 0,
			  b->batch * b->numel * sizeof(float), 0x7fc00000u /* a quiet NaN */,
			  "NaN into the output");
}

int mb_nsbench_time(const struct mb_nsbench *b, bool gemms_only, double *seconds, double *enqueue_s)
{
	cl_event first = NULL, last = NULL;
	char what[96];
	unsigned i;
	double t0;
	int err;

	*seconds = NAN;
	if (enqueue_s)
		*enqueue_s = NAN;
	if ((err = poison(b)) || (gemms_only && (err = mb_ns_clear(b->ns))) || (err = finish(b)))
		return err;
	for (i = 0; i < b->batch && !err; i++) {
		cl_event *f = i == 0 ? &first : NULL, *l = i + 1 == b->batch ? &last : NULL;

		t0 = mb_now_s();
		err = gemms_only ? mb_ns_gemms_only(b->ns, b->rows, b->cols, f, l)
				 : mb_ns_orthogonalize(b->ns, b->in, i * b->numel, b->rows, b->cols,
						       b->out, i * b->numel, f, l);
		if (i == 0 && enqueue_s && !err)
			*enqueue_s = mb_now_s() - t0;
	}
	if (!err && !(err = finish(b))) {
		snprintf(what, sizeof(what), "%s%s on %llux%llu",
			 gemms_only ? "the GEMMs alone of " : "", mb_ns_method_names[b->ns->method],
			 (unsigned long long)b->rows, (unsigned long long)b->cols);
		(void)mb_cl_event_interval(b->ns->cl, first, last, what, seconds);
	}
	if (first)
		clReleaseEvent(first);
	if (last)
		clReleaseEvent(last);
	return err;
}

/* The largest relative Frobenius error of the batch against the reference. */
static int verify(const struct mb_nsbench *b, double *rel_err)
{
	uint64_t total = b->batch * b->numel, i;
	float *in, *out;
	double *ref, diff, norm;
	unsigned k;
	cl_int st;
	int err = 0;

	in = malloc(2 * total * sizeof(float));
	ref = malloc(b->numel * sizeof(double));
	if (!in || !ref) {
		err = mb_fail("out of host memory verifying %llux%llu", (unsigned long long)b->rows,
			      (unsigned long long)b->cols);
		goto out_free;
	}
	out = in + total;
	st = clEnqueueReadBuffer(b->ns->cl->compute, b->in, CL_TRUE, 0, total * sizeof(float), in,
				 0, NULL, NULL);
	if (st == CL_SUCCESS)
		st = clEnqueueReadBuffer(b->ns->cl->compute, b->out, CL_TRUE, 0,
					 total * sizeof(float), out, 0, NULL, NULL);
	if ((err = mb_cl_check(b->ns->cl, st, "clEnqueueReadBuffer", "Newton-Schulz %llux%llu",
			       (unsigned long long)b->rows, (unsigned long long)b->cols)))
		goto out_free;
	*rel_err = 0;
	for (k = 0; k < b->batch && !err; k++) {
		if ((err = mb_ns_reference(in + k * b->numel, b->rows, b->cols, b->ns->method,
					   ref)))
			break;
		diff = norm = 0;
		for (i = 0; i < b->numel; i++) {
			double d = out[k * b->numel + i] - ref[i];

			diff += d * d;
			norm += ref[i] * ref[i];
		}
		diff = norm > 0 ? sqrt(diff / norm) : sqrt(diff);
		/* NaN (an element never written) must win the max */
		if (!(diff <= *rel_err))
			*rel_err = diff;
	}
out_free:
	free(in);
	free(ref);
	return err;
}

/* A time that could not be had: why, into R, unless it already says. */
static void note(const double *seconds, struct mb_nsbench_result *r)
{
	if (isnan(*seconds) && !r->no_time[0])
		snprintf(r->no_time, sizeof(r->no_time), "%s", mb_errmsg());
}

/* A GEMMs-only run, then Newton-Schulz: last, so that the check reads its output. */
static int pair(const struct mb_nsbench *b, double *gemm_s, double *ns_s,
		struct mb_nsbench_result *r)
{
	int err;

	if (!(err = mb_nsbench_time(b, true, gemm_s, NULL)))
		note(gemm_s, r);
	if (!err && !(err = mb_nsbench_time(b, false, ns_s, NULL)))
		note(ns_s, r);
	return err;
}

static int measure(const struct mb_nsbench *b, unsigned reps, struct mb_nsbench_result *r)
{
	unsigned i;
	double *ns_t, *gemm_t, warm[2];
	int err = 0;

	ns_t = calloc(2 * (size_t)reps, sizeof(double));
	if (!ns_t)
		return mb_fail("out of host memory for %u timings", reps);
	gemm_t = ns_t + reps;
	/* the warm-up compiles every kernel and CLBlast routine on the way; the
	 * pairs alternate, so that drift in the machine's speed hits both alike */
	err = pair(b, &warm[0], &warm[1], r);
	for (i = 0; i < reps && !err && !r->no_time[0]; i++)
		err = pair(b, &gemm_t[i], &ns_t[i], r);
	if (!err && !r->no_time[0]) {
		r->ns_s = mb_spread_of(ns_t, reps);
		r->gemm_s = mb_spread_of(gemm_t, reps);
		r->gflops = (double)b->batch * (double)r->flops / r->ns_s.median / 1e9;
	}
	free(ns_t);
	return err;
}

int mb_nsbench_init(struct mb_nsbench *b, struct mb_ns *ns, uint64_t rows, uint64_t cols,
		    unsigned batch, uint64_t seed, unsigned index)
{
	uint64_t bytes = batch * rows * cols * sizeof(float);
	int err;

	memset(b, 0, sizeof(*b));
	b->ns = ns;
	b->rows = rows;
	b->cols = cols;
	b->numel = rows * cols;
	b->batch = batch;
	if ((err = mb_ledger_alloc(ns->ledger, bytes, "ns.input", &b->in)) ||
	    (err = mb_ledger_alloc(ns->ledger, bytes, "ns.output", &b->out)) ||
	    (err = mb_rng_fill(ns->cl, b->in, 0, batch * b->numel, seed, index, 0, 1.0f)))
		mb_nsbench_release(b);
	return err;
}

void mb_nsbench_release(struct mb_nsbench *b)
{
	if (!b->ns)
		return;
	mb_ledger_free(b->ns->ledger, b->in);
	mb_ledger_free(b->ns->ledger, b->out);
	b->in = b->out = NULL;
}

int mb_nsbench_run(struct mb_ns *ns, const struct mb_nsbench_settings *s, uint64_t rows,
		   uint64_t cols, unsigned index, struct mb_nsbench_result *r)
{
	struct mb_nsbench b;
	int err;

	memset(r, 0, sizeof(*r));
	r->rows = rows;
	r->cols = cols;
	r->method = ns->method;
	r->flops = mb_ns_flops(rows, cols, ns->method);
	r->ns_s.median = r->ns_s.min = r->ns_s.max = NAN;
	r->gemm_s = r->ns_s;
	r->gflops = NAN;
	r->rel_err = NAN;
	if ((err = mb_nsbench_init(&b, ns, rows, cols, s->batch, s->seed, index)))
		return err;
	if (!(err = measure(&b, s->reps, r)) && s->verify)
		err = verify(&b, &r->rel_err);
	mb_nsbench_release(&b);
	return err;
}
