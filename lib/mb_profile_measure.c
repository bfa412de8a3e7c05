/*
 * mb_profile_measure: a device profile from the benchmark's own measurements.
 */
#include "mb_profile_measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_bandwidth.h"
#include "mb_clock.h"
#include "mb_err.h"
#include "mb_hostopt.h"
#include "mb_ledger.h"
#include "mb_ns.h"
#include "mb_nsbench.h"
#include "mb_rng.h"

#define TINY_COPY  4096
#define HOLD_RATIO 1.5
/* Newton-Schulz's FLOPs a matrix past which a point is timed fewer times (512x1536's, gram) */
#define NS_REPS_FLOPS 7e9

/* The device's rate, else the host clock's. */
static double rate_of(const struct mb_bw_result *r)
{
	return isfinite(r->device_gbs.median) && r->device_gbs.median > 0 ? r->device_gbs.median
									  : r->host_gbs.median;
}

static int copies(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
		  struct mb_profile *p)
{
	struct mb_bw_result r[2][MB_BW_NDIRS], tiny;
	struct mb_bw_buffers *b;
	double ratio[2];
	int pinned, d, err = 0;

	for (pinned = 0; pinned < 2 && !err; pinned++) {
		if ((err = mb_bw_buffers_new(cl, s->copy_bytes, pinned, &b)))
			return err;
		for (d = 0; d < MB_BW_NDIRS && !err; d++)
			err = mb_bw_measure(b, s->copy_bytes, d, s->reps, &r[pinned][d]);
		if (!err && pinned)
			err = mb_bw_measure(b, TINY_COPY, MB_BW_H2D, s->reps, &tiny);
		mb_bw_buffers_free(b);
	}
	if (err)
		return err;
	p->h2d_pinned_gbs = rate_of(&r[1][MB_BW_H2D]);
	p->d2h_pinned_gbs = rate_of(&r[1][MB_BW_D2H]);
	p->both_pinned_gbs = rate_of(&r[1][MB_BW_BOTH]);
	p->h2d_pageable_gbs = r[0][MB_BW_H2D].host_gbs.median;
	p->d2h_pageable_gbs = r[0][MB_BW_D2H].host_gbs.median;
	p->both_pageable_gbs = r[0][MB_BW_BOTH].host_gbs.median;
	for (pinned = 0; pinned < 2; pinned++)
		ratio[pinned] =
			rate_of(&r[pinned][MB_BW_H2D]) / r[pinned][MB_BW_H2D].host_gbs.median;
	p->pageable_holds_host = ratio[0] > HOLD_RATIO * ratio[1];
	p->memcpy_gbs = r[0][MB_BW_H2D].memcpy_gbs;
	p->command_overhead_us = 1e6 * TINY_COPY / (1e9 * tiny.host_gbs.median);
	return 0;
}

/* GFLOPS at F FLOPs into L, kept in increasing FLOPs; two shapes of one F are refused. */
static int add_point(const struct mb_cl *cl, struct mb_profile_ladder *l, double f, double gflops)
{
	size_t i;

	for (i = l->n; i > 0 && l->flops[i - 1] > f; i--) {
		l->flops[i] = l->flops[i - 1];
		l->gflops[i] = l->gflops[i - 1];
	}
	if (i > 0 && l->flops[i - 1] == f)
		return mb_bad_input("Newton-Schulz on '%s': two shapes of %.0f FLOPs (the ladder "
				    "wants one rate a size)",
				    cl->info.name, f);
	l->flops[i] = f;
	l->gflops[i] = gflops;
	l->n++;
	return 0;
}

/* Each method on shape I into its ladder (the forward/backward's rate from the last, standard). */
static int ns_shape(struct mb_ns *ns, const struct mb_profile_measure_settings *s, size_t i,
		    struct mb_profile *p)
{
	struct mb_nsbench_settings ns_set = { .batch = 1, .seed = s->seed };
	uint64_t rows = s->ns_rows[i], cols = s->ns_cols[i];
	const struct mb_cl *cl = ns->cl;
	struct mb_nsbench_result r;
	int k, err = 0;

	for (k = 0; k < MB_NS_NMETHODS && !err; k++) {
		double f = (double)mb_ns_flops(rows, cols, (enum mb_ns_method)k);

		/* a large shape fewer times, each point about as long as NS_REPS_FLOPS's */
		ns_set.reps = f > NS_REPS_FLOPS ? (unsigned)fmax(1, s->reps * NS_REPS_FLOPS / f)
						: s->reps;
		ns->method = (enum mb_ns_method)k;
		if ((err = mb_ns_reserve(ns, &rows, &cols, 1)) ||
		    (err = mb_nsbench_run(ns, &ns_set, rows, cols, 0, &r)))
			break;
		if (!isfinite(r.gflops) || r.gflops <= 0)
			return mb_fail("Newton-Schulz on '%s' (%llux%llu) was not timed: %s",
				       cl->info.name, (unsigned long long)rows,
				       (unsigned long long)cols, r.no_time);
		err = add_point(
			cl, ns->method == MB_NS_GRAM ? &p->ns_gram_gflops : &p->ns_standard_gflops,
			(double)r.flops, r.gflops);
		if (ns->method != MB_NS_GRAM && i + 1 == s->ns_nshapes)
			p->fwd_bwd_gflops = (double)r.flops / r.gemm_s.median / 1e9;
	}
	return err;
}

static int newton_schulz(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
			 struct mb_profile *p)
{
	struct mb_ledger ledger;
	struct mb_ns ns;
	size_t i;
	int err;

	if (s->ns_nshapes < 1 || s->ns_nshapes > MB_PROFILE_LADDER_MAX)
		return mb_bad_input("Newton-Schulz: 1 to %d shapes, got %zu", MB_PROFILE_LADDER_MAX,
				    s->ns_nshapes);
	mb_ledger_init(&ledger, cl, 0);
	if ((err = mb_ns_init(&ns, cl, &ledger)))
		goto out;
	for (i = 0; i < s->ns_nshapes && !err; i++)
		err = ns_shape(&ns, s, i, p);
	mb_ns_release(&ns);
out:
	mb_ledger_release(&ledger);
	return err;
}

/*
 * Finish the compute queue, and past the warm-up (I > 0) keep the span of
 * event EV (WHAT) as T[I - 1]; EV is released either way.
 */
static int keep_span(const struct mb_cl *cl, unsigned i, cl_event ev, const char *what, double *t)
{
	double a, b;
	int err = mb_cl_check(cl, clFinish(cl->compute), "clFinish", "%s", what);

	if (!err && i && !ev)
		err = mb_fail("%s gave no event to time it by", what);
	if (!err && i && !(err = mb_cl_event_span(cl, ev, what, &a, &b)))
		t[i - 1] = b - a;
	if (ev)
		clReleaseEvent(ev);
	return err;
}

/* GB/s of BYTES an element over N elements in the median of the REPS times T (sorted). */
static double median_gbs(double *t, unsigned reps, double bytes, uint64_t n)
{
	return bytes * (double)n / mb_spread_of(t, reps).median / 1e9;
}

/*
 * The fp32 momentum kernel over N elements (16 bytes an element) by its
 * events, the backward's gradient fill (4 bytes written an element), the
 * bf16 cast, and the norm's partial sums of the cast's bf16 values (2 bytes
 * read an element) with the kernel the step runs on this device
 * (mb_ns_sumsq_bf16: contiguous runs on a CPU), by its events.
 */
static int momentum(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
		    struct mb_profile *p)
{
	double *t = calloc(s->reps, sizeof(*t));
	cl_mem grad = NULL, mom = NULL, sums = NULL;
	cl_event first, last, ev;
	struct mb_ledger ledger;
	struct mb_ns ns;
	unsigned i;
	int err;

	if (!t)
		return mb_fail("out of host memory");
	mb_ledger_init(&ledger, cl, 0);
	if ((err = mb_ns_init(&ns, cl, &ledger)) ||
	    (err = mb_ledger_alloc(&ledger, 4 * s->elementwise_elems, "profile.grad", &grad)) ||
	    (err = mb_ledger_alloc(&ledger, 4 * s->elementwise_elems, "profile.mom", &mom)) ||
	    (err = mb_ledger_alloc(&ledger, 4 * MB_NS_PARTIALS, "profile.sums", &sums)))
		goto out;
	for (i = 0; i <= s->reps && !err; i++) { /* the first is the warm-up */
		if ((err = mb_ns_momentum(&ns, grad, 0, mom, 0, s->elementwise_elems, 0.95f, &first,
					  &last)))
			break;
		clReleaseEvent(last);
		err = keep_span(cl, i, first, "the momentum kernel", t);
	}
	if (!err)
		p->momentum_gbs = median_gbs(t, s->reps, 16, s->elementwise_elems);
	/* the backward's fill: it has no event of its own, so the host clock to clFinish */
	for (i = 0; i <= s->reps && !err; i++) {
		double t0 = mb_now_s();

		if ((err = mb_rng_fill(cl, grad, 0, s->elementwise_elems, s->seed, 1, 0, 1e-3f)) ||
		    (err = mb_cl_check(cl, clFinish(cl->compute), "clFinish", "the gradient fill")))
			break;
		if (i)
			t[i - 1] = mb_now_s() - t0;
	}
	if (!err)
		p->fill_gbs = median_gbs(t, s->reps, 4, s->elementwise_elems);
	/* the cast to bf16 (reads 4 bytes, writes 2), by its event */
	for (i = 0; i <= s->reps && !err; i++) {
		ev = NULL;
		if ((err = mb_ns_cast_bf16(&ns, grad, 0, mom, 0, s->elementwise_elems, &ev)))
			break;
		err = keep_span(cl, i, ev, "the bf16 cast", t);
	}
	if (!err)
		p->cast_gbs = median_gbs(t, s->reps, 6, s->elementwise_elems);
	/* the norm's partial sums over the cast's bf16 grads (in MOM), by its event */
	for (i = 0; i <= s->reps && !err; i++) {
		ev = NULL;
		if ((err = mb_ns_sumsq_bf16(&ns, cl->compute, mom, 0, s->elementwise_elems, sums, 0,
					    &ev)))
			break;
		err = keep_span(cl, i, ev, "the norm's sums", t);
	}
	if (!err)
		p->norm_gbs = median_gbs(t, s->reps, 2, s->elementwise_elems);
out:
	mb_ledger_free(&ledger, grad);
	mb_ledger_free(&ledger, mom);
	mb_ledger_free(&ledger, sums);
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
	free(t);
	return err;
}

/* The host optimizer's loops over N Muon and N AdamW elements, as a step runs them. */
static int host_optimizer(const struct mb_profile_measure_settings *s, struct mb_profile *p)
{
	uint64_t n = s->elementwise_elems;
	struct mb_optim o = MB_OPTIM_DEFAULTS;
	float *buf = calloc(4 * n, sizeof(float));
	uint16_t *staging = calloc(n, sizeof(uint16_t));
	double best = INFINITY, t;
	unsigned i;

	if (!buf || !staging) {
		free(buf);
		free(staging);
		return mb_fail("out of host memory for %llu elements", (unsigned long long)n);
	}
	for (i = 0; i <= s->reps; i++) {
		t = mb_now_s();
#pragma omp parallel
		{
			mb_hostopt_muon(buf, buf + n, staging, n, &o);
			mb_hostopt_adamw(buf + n, buf, buf + 2 * n, buf + 3 * n, staging, n, i + 1,
					 &o);
		}
		t = mb_now_s() - t;
		if (i && t < best)
			best = t;
	}
	p->host_opt_gbs = mb_hostopt_bytes(n, n) / best / 1e9;
	free(buf);
	free(staging);
	return 0;
}

int mb_profile_measure(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
		       struct mb_profile *p)
{
	int err;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%.63s", cl->info.name);
	snprintf(p->device, sizeof(p->device), "%.100s (%.60s, driver %.60s), measured",
		 cl->info.name, cl->info.platform_name, cl->info.driver);
	if ((err = copies(cl, s, p)) || (err = newton_schulz(cl, s, p)) ||
	    (err = momentum(cl, s, p)) || (err = host_optimizer(s, p)))
		return err;
	return 0;
}
