/*
 * mb_profile_measure: a device profile from the benchmark's own measurements.
 */
#include "mb_profile_measure.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_bandwidth.h"
#include "mb_clock.h"
#include "mb_err.h"
#include "mb_fwdbwd_cl.h"
#include "mb_hostopt.h"
#include "mb_ledger.h"
#include "mb_ns.h"
#include "mb_nsbench.h"
#include "mb_rng_cl.h"
#include "mb_spin.h"
#include "mb_stats.h"

#define TINY_COPY 4096
/* a small copy's figures, each the median of this many copies a --reps (each ~0.1 ms) */
#define SMALL_COPY_REPS 16
/* a pageable copy whose enqueue returns after this part of its time holds the host */
#define HOLD_PART 0.5
/* the spin beside a pageable copy, in copy times: long enough that the copy ends first */
#define BESIDE_SPIN	2.0
#define BESIDE_REPS_MAX 32
/*
 * A wait with the device busy behind it: this many momentum kernels over
 * the rig's elements behind a tiny copy (a few ms: as long as a scheduler's
 * slice), and this many such waits a --reps
 */
#define BUSY_KERNELS 2
#define BUSY_SAMPLES 4
/* the elements of each of the host's loops where its pass's fixed cost is timed */
#define HOST_PASS_ELEMS 1024
/* the host's threads whose loops are timed each (a machine's more run untimed) */
#define MAX_THREADS 256
/* Newton-Schulz's the host enqueues behind a kernel, to time what that costs the kernel */
#define NS_BEHIND 3
/* Newton-Schulz's FLOPs a matrix past which a point is timed in fewer rounds (512x1536's, gram) */
#define NS_REPS_FLOPS 7e9
/*
 * but in this many at least: a large model's step is nearly all its largest
 * shapes, and a point timed in one or two samples of seconds each lands on
 * the host's level of those seconds (1024x3072's gram rate came out 11% apart
 * in two profiles a minute apart on PoCL, the small shapes' within 1-3%)
 */
#define NS_MIN_SAMPLES 4
/* and a sample's FLOPs, by either method, that a small shape's batch makes up to (256x768's) */
#define NS_BATCH_FLOPS 8.7e8
#define NS_BATCH_MAX   16
/*
 * The synthetic forward/backward's passes, a point each of their ladders
 * by tokens: a layer of the ladder's shapes but the last at each of the
 * small token counts (a small model's GEMMs, whose rate on a CPU device
 * goes with the tokens: 128 ran 1.4x slower than 256 on PoCL), and the
 * last shape alone at the large one (a large model's)
 */
static const uint64_t pass_small_tokens[] = { 128, 256 };
#define PASS_LARGE_TOKENS 512
#define MAX_PASSES	  3
/* The rounds, a multiple of --reps */
#define ROUNDS_PER_REP 4

/* The device's rate, else the host clock's. */
static double rate_of(const struct mb_bw_result *r)
{
	return isfinite(r->device_gbs.median) && r->device_gbs.median > 0 ? r->device_gbs.median
									  : r->host_gbs.median;
}

/*
 * The host's memcpy (beside a pageable copy of the profile's size), and a
 * tiny pinned copy: a command's own time as its events see it, and what
 * the host loses beyond it waiting (the launch, the wake-up). The copy
 * rates are timed in the rounds, below.
 */
static int copies(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
		  struct mb_profile *p)
{
	struct mb_bw_result r, tiny;
	struct mb_bw_buffers *b;
	int err;

	if ((err = mb_bw_buffers_new(cl, s->copy_bytes, false, &b)))
		return err;
	err = mb_bw_measure(b, s->copy_bytes, MB_BW_H2D, s->reps, &r);
	mb_bw_buffers_free(b);
	if (err || (err = mb_bw_buffers_new(cl, TINY_COPY, true, &b)))
		return err;
	err = mb_bw_measure(b, TINY_COPY, MB_BW_H2D, s->reps, &tiny);
	mb_bw_buffers_free(b);
	if (err)
		return err;
	p->memcpy_gbs = r.memcpy_gbs;
	/* a step's phases are timed by the events, its iteration by the host */
	p->command_overhead_us = 1e6 * TINY_COPY / (1e9 * rate_of(&tiny));
	p->command_latency_us =
		fmax(0, 1e6 * TINY_COPY / (1e9 * tiny.host_gbs.median) - p->command_overhead_us);
	return 0;
}

/* The seconds of one pageable D2H of BYTES from DEV to HOST into *COPY, its enqueue's into *ENQ. */
static int pageable_read(const struct mb_cl *cl, cl_mem dev, void *host, uint64_t bytes,
			 double *enq, double *copy)
{
	double t0 = mb_now_s();
	int err;

	if ((err = mb_cl_check(cl,
			       clEnqueueReadBuffer(cl->copy, dev, CL_FALSE, 0, bytes, host, 0, NULL,
						   NULL),
			       "clEnqueueReadBuffer", "a pageable copy of %llu bytes",
			       (unsigned long long)bytes)))
		return err;
	*enq = mb_now_s() - t0;
	err = mb_cl_check(cl, clFinish(cl->copy), "clFinish", "copy queue");
	*copy = mb_now_s() - t0;
	return err;
}

/*
 * Whether a pageable copy's enqueue holds the host for its length
 * (pageable_holds_host): the enqueue call's time against the copy's, a
 * D2H of COPY_BYTES, medians of REPS (at most BESIDE_REPS_MAX), by the host
 * clock alone. A driver that so stages a pageable copy does it before the
 * copy's event starts, so the rounds time pageable copies by the host
 * clock there (an H2D too, as drivers stage both ways alike), else by
 * their events: it is measured before them.
 */
static int pageable_holds(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
			  struct mb_profile *p)
{
	unsigned i, reps = s->reps < BESIDE_REPS_MAX ? s->reps : BESIDE_REPS_MAX;
	double enq[BESIDE_REPS_MAX], copy[BESIDE_REPS_MAX], unused;
	struct mb_ledger l;
	cl_mem dev = NULL;
	void *host = malloc(s->copy_bytes);
	int err;

	if (!host)
		return mb_fail("out of host memory for a pageable copy of %llu bytes",
			       (unsigned long long)s->copy_bytes);
	mb_ledger_init(&l, cl, 0);
	if (!(err = mb_ledger_alloc(&l, s->copy_bytes, "profile.pageable", &dev)) &&
	    !(err = pageable_read(cl, dev, host, s->copy_bytes, &unused, &unused)))
		for (i = 0; i < reps && !err; i++)
			err = pageable_read(cl, dev, host, s->copy_bytes, &enq[i], &copy[i]);
	if (!err)
		p->pageable_holds_host = mb_spread_of(enq, reps).median >
					 HOLD_PART * mb_spread_of(copy, reps).median;
	clFinish(cl->copy);
	mb_ledger_free(&l, dev);
	mb_ledger_release(&l);
	free(host);
	return err;
}

/*
 * A pageable D2H beside a kernel on the compute queue, medians of REPS
 * (at most BESIDE_REPS_MAX): what part of its time C the kernel cannot
 * hide (pageable_exposed_frac): a spin of BESIDE_SPIN C alone takes T,
 * with the copy beside it W; (W - T) / C, from 0 (hidden) to 1 (serial).
 */
static int pageable_beside(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
			   struct mb_profile *p)
{
	unsigned i, reps = s->reps < BESIDE_REPS_MAX ? s->reps : BESIDE_REPS_MAX;
	double exposed[BESIDE_REPS_MAX], c, spin, t0, unused;
	struct mb_spin sp = { 0 };
	struct mb_ledger l;
	cl_mem dev = NULL, sink = NULL;
	void *host = malloc(s->copy_bytes);
	int err;

	if (!host)
		return mb_fail("out of host memory for a pageable copy of %llu bytes",
			       (unsigned long long)s->copy_bytes);
	mb_ledger_init(&l, cl, 0);
	if ((err = mb_ledger_alloc(&l, s->copy_bytes, "profile.pageable", &dev)) ||
	    (err = mb_ledger_alloc(&l, sizeof(float), "profile.spin", &sink)) ||
	    (err = mb_spin_init(&sp, cl, sink, 0)) ||
	    (err = pageable_read(cl, dev, host, s->copy_bytes, &unused, &unused)))
		goto out;
	for (i = 0; i < reps && !err; i++) {
		if ((err = pageable_read(cl, dev, host, s->copy_bytes, &unused, &c)))
			break;
		t0 = mb_now_s();
		if ((err = mb_spin_enqueue(&sp, cl->compute, BESIDE_SPIN * c, NULL)) ||
		    (err = mb_cl_check(cl, clFinish(cl->compute), "clFinish", "compute queue")))
			break;
		spin = mb_now_s() - t0;
		t0 = mb_now_s();
		if ((err = mb_spin_enqueue(&sp, cl->compute, BESIDE_SPIN * c, NULL)) ||
		    (err = mb_cl_check(cl, clFlush(cl->compute), "clFlush", "compute queue")) ||
		    (err = pageable_read(cl, dev, host, s->copy_bytes, &unused, &unused)) ||
		    (err = mb_cl_check(cl, clFinish(cl->compute), "clFinish", "compute queue")))
			break;
		exposed[i] = fmin(1, fmax(0, (mb_now_s() - t0 - spin) / c));
	}
	if (!err)
		p->pageable_exposed_frac = mb_spread_of(exposed, reps).median;
out:
	/* nothing of ours may still run when its memory goes */
	clFinish(cl->compute);
	clFinish(cl->copy);
	mb_spin_release(&sp);
	mb_ledger_free(&l, sink);
	mb_ledger_free(&l, dev);
	mb_ledger_release(&l);
	free(host);
	return err;
}

/* GFLOPS at F FLOPs into L, kept in increasing FLOPs; two shapes of one F are refused. */
static int add_point(const struct mb_cl *cl, struct mb_profile_ladder *l, double f, double gflops)
{
	size_t i;

	for (i = l->n; i > 0 && l->flops[i - 1] > f; i--) {
		l->flops[i] = l->flops[i - 1];
		l->value[i] = l->value[i - 1];
	}
	if (i > 0 && l->flops[i - 1] == f)
		return mb_bad_input("Newton-Schulz on '%s': two shapes of %.0f FLOPs (a ladder "
				    "holds one figure a size)",
				    cl->info.name, f);
	l->flops[i] = f;
	l->value[i] = gflops;
	l->n++;
	return 0;
}

/*
 * The rounds: every figure below (the copies' rates too, but not the memcpy
 * and the tiny copy above) is timed a sample at a time,
 * round after round, each figure in its turn in a round (Newton-Schulz's
 * large shapes in fewer rounds, spread evenly), after one untimed sample of
 * each that compiles its kernels. A figure's rate is its work over its
 * median sample's time. The rounds spread a figure's samples over the whole
 * profile, so the median is the device at the level it runs at most of that
 * time: on a VM whose host is shared the speed moves between levels (this
 * one, idle, ran Newton-Schulz 1.54x slower in spells of 3-12 s, a quarter
 * of the time; bench/cpu-levels.sh saw another switch every 0.1-1 s), and a
 * mean went with how many spells the profile met: three profiles back to
 * back put one Newton-Schulz point 22% apart by their means, 1-2% by their
 * medians. (Version 3's medians, of samples back to back, landed on the
 * level of that burst.) Where the levels switch within a run's steps but
 * not within a sample, the median is the level most samples met and a run's
 * mean of steps their mix: the model then predicts the run short.
 * A small shape's sample is a batch of its matrices back to back, as a step
 * runs one matrix right behind another: alone, from an idle device, a
 * 128x256 runs 1.4x slower than in a batch on PoCL here.
 */

/* What the rounds time, held across them. */
struct rig {
	const struct mb_cl *cl;
	const struct mb_profile_measure_settings *s;
	struct mb_ledger ledger;
	struct mb_ns ns;
	struct mb_nsbench shape[MB_PROFILE_LADDER_MAX];
	cl_mem grad, mom, bf16, sums, mom_bf16; /* the elementwise kernels' */
	float *host;				/* the host optimizer's p, u (and g), m, v */
	uint16_t *staging;
	uint64_t host_step;	     /* AdamW's, from 1 */
	struct mb_bw_buffers *bw[2]; /* the copies': pageable, pinned */
	double latency_us;	     /* the profile's command_latency_us, measured before */
	bool pageable_holds_host;    /* and its pageable_holds_host */
	/* the synthetic forward/backward's passes, each a layer of some of the ladder's shapes */
	struct mb_model pass[MAX_PASSES];
	uint64_t pass_tokens[MAX_PASSES];
	size_t npasses;
	/* the last sample's second figure: a pass's forward, a Newton-Schulz's enqueue */
	double second_s;
};

/* One figure, timed a sample a round. */
struct probe {
	int (*once)(struct rig *g, const struct probe *p, double *seconds);
	size_t shape;		  /* Newton-Schulz's: of the rig's; the pass's: of its passes */
	enum mb_ns_method method; /* and by which method */
	bool gemms_only;	  /* its GEMMs alone: the forward/backward's rate */
	enum mb_bw_dir dir;	  /* a copy's: its direction, */
	bool pinned;		  /* from pinned memory or not, */
	bool spread;		  /* and small, around the buffers (mb_bw_measure_spread) */
	double work;		  /* FLOPs or bytes of a sample */
	double work2;		  /* the pass's: the backward's FLOPs (its sample, both) */
	uint64_t elems;		  /* an elementwise or host figure's elements */
	/* a small figure's: its work done once untimed right before, as a step's small
	 * batch finds its data in the caches (the host's threads awake) */
	bool warm;
	double flops;	  /* a point of its ladder: NS a matrix's FLOPs, a pass's tokens */
	unsigned samples; /* rounds it is timed in */
	unsigned wanted;  /* before the time bound */
	unsigned n;	  /* so far */
	double total_s;
	double *sample_s; /* each sample's seconds, SAMPLES of them at most */
	double *second_s; /* each sample's second figure (the rig's second_s) */
	double warm_s;	  /* its untimed first sample's (kernels built: an upper bound) */
	/* its rate goes to a point of LADDER, else into *RATE; the pass's backward to LADDER2's;
	 * a Newton-Schulz's enqueue, us, to ENQUEUE_US's */
	struct mb_profile_ladder *ladder, *ladder2, *enqueue_us;
	double *rate;
};

/*
 * The most figures: both methods on each shape, the GEMMs, the passes, five
 * kernels, the host optimizer and its streaming pass, four of those at the
 * small size, and the copies: each direction and both at once, pinned and
 * pageable, large and small.
 */
#define MAX_PROBES (2 * MB_PROFILE_LADDER_MAX + MAX_PASSES + 12 + 2 * MB_BW_NDIRS * 2)

/* Finish the compute queue and keep the span of event EV (WHAT) in *T; EV is released. */
static int span_of(const struct mb_cl *cl, cl_event ev, const char *what, double *t)
{
	double a, b;
	int err = mb_cl_check(cl, clFinish(cl->compute), "clFinish", "%s", what);

	if (!err && !ev)
		err = mb_fail("%s gave no event to time it by", what);
	if (!err && !(err = mb_cl_event_span(cl, ev, what, &a, &b)))
		*t = b - a;
	if (ev)
		clReleaseEvent(ev);
	return err;
}

/* Newton-Schulz, or its GEMMs alone, on P's shape by P's method. */
static int ns_once(struct rig *g, const struct probe *p, double *t)
{
	const struct mb_nsbench *b = &g->shape[p->shape];
	int err;

	g->ns.method = p->method;
	/* the forward/backward's rate is CLBlast's fp32, whatever Newton-Schulz's */
	g->ns.precision = p->gemms_only ? MB_PREC_FP32 : g->s->ns_precision[p->method];
	if ((err = mb_nsbench_time(b, p->gemms_only, t, &g->second_s)))
		return err;
	if (isnan(*t)) {
		mb_err_prefix("Newton-Schulz on '%s' (%llux%llu) was not timed", g->cl->info.name,
			      (unsigned long long)b->rows, (unsigned long long)b->cols);
		return -MB_EFAIL;
	}
	return 0;
}

/* The fp32 momentum kernel over the rig's grads and momentum, by its event. */
static int momentum_once(struct rig *g, const struct probe *p, double *t)
{
	cl_event first, last;
	int err;

	if (p->warm &&
	    (err = mb_ns_momentum(&g->ns, g->grad, 0, g->mom, 0, p->elems, 0.95f, NULL, NULL)))
		return err;
	if ((err = mb_ns_momentum(&g->ns, g->grad, 0, g->mom, 0, p->elems, 0.95f, &first, &last)))
		return err;
	clReleaseEvent(last);
	return span_of(g->cl, first, "the momentum kernel", t);
}

/* The bf16-momentum kernel over the rig's grads and its bf16 momentum, by its event. */
static int momentum_bf16_once(struct rig *g, const struct probe *p, double *t)
{
	cl_event first, last;
	int err;

	if (p->warm && (err = mb_ns_momentum_bf16(&g->ns, g->grad, 0, g->mom_bf16, 0, p->elems,
						  0.95f, NULL, NULL)))
		return err;
	if ((err = mb_ns_momentum_bf16(&g->ns, g->grad, 0, g->mom_bf16, 0, p->elems, 0.95f, &first,
				       &last)))
		return err;
	clReleaseEvent(last);
	return span_of(g->cl, first, "the bf16-momentum kernel", t);
}

/* The backward's gradient fill: it has no event of its own, so the host clock to clFinish. */
static int fill_once(struct rig *g, const struct probe *p, double *t)
{
	double t0 = mb_now_s();
	int err;

	(void)p;
	if ((err = mb_rng_fill(g->cl, g->grad, 0, g->s->elementwise_elems, g->s->seed, 1, 0,
			       1e-3f)) ||
	    (err = mb_cl_check(g->cl, clFinish(g->cl->compute), "clFinish", "the gradient fill")))
		return err;
	*t = mb_now_s() - t0;
	return 0;
}

/* The cast of the grads to bf16, by its event. */
static int cast_once(struct rig *g, const struct probe *p, double *t)
{
	cl_event ev = NULL;
	int err;

	(void)p;
	if ((err = mb_ns_cast_bf16(&g->ns, g->grad, 0, g->bf16, 0, g->s->elementwise_elems, &ev)))
		return err;
	return span_of(g->cl, ev, "the bf16 cast", t);
}

/* The norm's partial sums of the cast's bf16 grads, with the step's kernel, by its event. */
static int norm_once(struct rig *g, const struct probe *p, double *t)
{
	cl_event ev = NULL;
	int err;

	(void)p;
	if ((err = mb_ns_sumsq_bf16(&g->ns, g->cl->compute, g->bf16, 0, g->s->elementwise_elems,
				    g->sums, 0, &ev)))
		return err;
	return span_of(g->cl, ev, "the norm's sums", t);
}

/*
 * A copy figure's sample: one copy of the whole buffers, or SMALL_COPY_REPS
 * small ones around them (mb_bw_measure_spread: half of them of a source
 * written shortly before, so their bytes over their summed time, not a
 * median), by
 * the events, as a step times its copies, except for a pageable copy that
 * holds the host (pageable_holds_host: the driver stages it in the enqueue
 * call, before its event starts), and where the driver gives no event
 * times: by the host clock, what a caller waits, less, for a small
 * pageable copy, what the host loses on any command (the profile's
 * command_latency_us, which the model charges apart): a small copy's host
 * time is otherwise much of it the launch's. On PoCL that latency moved
 * by 20-80 us from one profile to the next, most of a 1 MiB copy's time.
 */
static int copy_once(struct rig *g, const struct probe *p, double *t)
{
	uint64_t bytes = p->spread ? g->s->copy_bytes < MB_PROFILE_COPY_SMALL_BYTES
					     ? g->s->copy_bytes
					     : MB_PROFILE_COPY_SMALL_BYTES
				   : g->s->copy_bytes;
	unsigned n = p->spread ? SMALL_COPY_REPS : 1;
	double moved = (double)bytes * (p->dir == MB_BW_BOTH ? 2 : 1), one, events;
	struct mb_bw_result r;
	int err;

	if ((err = p->spread ? mb_bw_measure_spread(g->bw[p->pinned], bytes, p->dir, n, &r)
			     : mb_bw_measure(g->bw[p->pinned], bytes, p->dir, n, &r)))
		return err;
	events = p->pinned || !g->pageable_holds_host ? r.device_overall_gbs : NAN;
	if (isfinite(events) && events > 0) {
		*t = n * moved / (1e9 * events);
		return 0;
	}
	one = moved / (1e9 * r.host_overall_gbs);
	if (!p->pinned && p->spread && one > 1e-6 * g->latency_us)
		one -= 1e-6 * g->latency_us;
	*t = n * one;
	return 0;
}

/*
 * The host's passes are timed by each thread's own loops, the slowest
 * thread's: what a region's threads wait for each other in its barriers
 * is left out, and charged once a pass (host_pass_us, below). OpenMP's
 * threads wait asleep (main.c's wait_passively), and a barrier's sleeper
 * wakes tens of microseconds late on a CPU whose cores the device's workers
 * share: a small sample timed from its barrier to the region's end took
 * that much more, 330 us where its loops took 250 on PoCL here, while a step's pass
 * of several such samples' work pays it about once a barrier.
 */
static double slowest(const double *span, int n)
{
	double m = 0;
	int i;

	for (i = 0; i < n && i < MAX_THREADS; i++)
		m = fmax(m, span[i]);
	return m;
}

/* The host optimizer's loops over N Muon and N AdamW elements, as a step runs them. */
static int host_opt_once(struct rig *g, const struct probe *p, double *t)
{
	uint64_t n = p->elems, step = ++g->host_step;
	struct mb_optim o = MB_OPTIM_DEFAULTS;
	float *buf = g->host;
	uint16_t *staging = g->staging;
	double span[MAX_THREADS] = { 0 };
	int nt = 1;

#pragma omp parallel
	{
		int me = omp_get_thread_num();
		double t0;

		if (p->warm) {
			mb_hostopt_muon(buf, buf + n, staging, n, &o);
			mb_hostopt_adamw(buf + n, buf, buf + 2 * n, buf + 3 * n, staging, n, step,
					 &o);
#pragma omp barrier
		}
		t0 = mb_now_s();
		mb_hostopt_muon(buf, buf + n, staging, n, &o);
		mb_hostopt_adamw(buf + n, buf, buf + 2 * n, buf + 3 * n, staging, n, step, &o);
		if (me < MAX_THREADS)
			span[me] = mb_now_s() - t0;
		if (!me)
			nt = omp_get_num_threads();
	}
	*t = slowest(span, nt);
	return 0;
}

/*
 * The step's unscale-and-clip pass over 2N fp32 grads (a Muon's and an
 * AdamW's N, as the grads buffer holds both), as the step runs it: every
 * thread, a static schedule; it reads and writes 8 bytes an element.
 */
static int host_stream_once(struct rig *g, const struct probe *p, double *t)
{
	int64_t k, n = (int64_t)(2 * p->elems);
	volatile float one = 1.0f; /* a scale the compiler cannot drop; the values stay */
	float scale = one, *buf = g->host;
	double span[MAX_THREADS] = { 0 };
	int nt = 1;

#pragma omp parallel private(k)
	{
		/* the static schedule's share by hand, timed before the barrier that the
		 * step's loop ends in (left out, the momentum kernel timed next in the round
		 * ran 2.5x slower on PoCL here, for a reason not found) */
		int me = omp_get_thread_num(), all = omp_get_num_threads();
		int64_t lo = n * me / all, hi = n * (me + 1) / all;
		double t0;

		if (p->warm) {
#pragma omp for schedule(static)
			for (k = 0; k < n; k++)
				buf[k] *= scale;
		}
		t0 = mb_now_s();
		for (k = lo; k < hi; k++)
			buf[k] *= scale;
		if (me < MAX_THREADS)
			span[me] = mb_now_s() - t0;
		if (!me)
			nt = all;
#pragma omp barrier
	}
	*t = slowest(span, nt);
	return 0;
}

/*
 * The synthetic forward and backward of P's pass, as a step runs them (its
 * buffers allocated and freed with it): their sum into *T, the forward's
 * kept for its own rate.
 */
static int fwd_bwd_once(struct rig *g, const struct probe *p, double *t)
{
	double fwd, bwd;
	int err;

	if ((err = mb_fwdbwd_run(&g->pass[p->shape], g->pass_tokens[p->shape], g->cl, &g->ledger,
				 NULL, &fwd, &bwd)))
		return err;
	g->second_s = fwd;
	*t = fwd + bwd;
	return 0;
}

/* Rounds a FLOPS shape is timed in, of ROUNDS: fewer past NS_REPS_FLOPS, NS_MIN_SAMPLES at least */
static unsigned ns_samples(double flops, unsigned rounds)
{
	if (flops <= NS_REPS_FLOPS)
		return rounds;
	return (unsigned)fmin(rounds, fmax(NS_MIN_SAMPLES, rounds * NS_REPS_FLOPS / flops));
}

/* Matrices of ROWS x COLS in a sample: NS_BATCH_FLOPS by the costlier method, 1 to NS_BATCH_MAX. */
static unsigned ns_batch(uint64_t rows, uint64_t cols)
{
	double flops = fmax((double)mb_ns_flops(rows, cols, MB_NS_GRAM),
			    (double)mb_ns_flops(rows, cols, MB_NS_STANDARD));

	return (unsigned)fmin(NS_BATCH_MAX, fmax(1, NS_BATCH_FLOPS / flops));
}

/* Newton-Schulz on shape I by METHOD, into the method's ladder. */
static struct probe ns_probe(const struct rig *g, size_t i, enum mb_ns_method method,
			     unsigned rounds, struct mb_profile *prof)
{
	struct probe p = { .once = ns_once, .shape = i, .method = method };

	p.flops = (double)mb_ns_flops(g->s->ns_rows[i], g->s->ns_cols[i], method);
	p.work = g->shape[i].batch * p.flops;
	p.samples = ns_samples(p.flops, rounds);
	p.ladder = method == MB_NS_GRAM ? &prof->ns_gram_gflops : &prof->ns_standard_gflops;
	p.enqueue_us = method == MB_NS_GRAM ? &prof->ns_gram_enqueue_us
					    : &prof->ns_standard_enqueue_us;
	return p;
}

/* Each method on each shape, and the GEMMs alone of the last shape's standard method. */
static size_t ns_probes(const struct rig *g, unsigned rounds, struct mb_profile *prof,
			struct probe *p)
{
	size_t i, last = g->s->ns_nshapes - 1, n = 0;

	for (i = 0; i <= last; i++) {
		p[n++] = ns_probe(g, i, MB_NS_GRAM, rounds, prof);
		p[n++] = ns_probe(g, i, MB_NS_STANDARD, rounds, prof);
	}
	p[n] = ns_probe(g, last, MB_NS_STANDARD, rounds, prof);
	p[n].gemms_only = true;
	p[n].ladder = p[n].enqueue_us = NULL;
	p[n].rate = &prof->fwd_bwd_gflops;
	return n + 1;
}

/*
 * The synthetic forward/backward's passes: a point of the forward's ladder
 * and of the backward's each, at the pass's tokens (the model reads them
 * so; the passes' tokens go up), a pass past NS_REPS_FLOPS in fewer rounds.
 */
static size_t fwd_bwd_probes(const struct rig *g, unsigned rounds, struct mb_profile *prof,
			     struct probe *p)
{
	size_t i, nf, nb;

	for (i = 0; i < g->npasses; i++) {
		p[i] = (struct probe){ .once = fwd_bwd_once, .shape = i, .samples = rounds };
		mb_fwdbwd_flops(&g->pass[i], g->pass_tokens[i], &p[i].work, &p[i].work2, &nf, &nb);
		p[i].flops = (double)g->pass_tokens[i];
		/* the large pass in fewer rounds, as a large Newton-Schulz shape */
		p[i].samples = ns_samples(p[i].work + p[i].work2, rounds);
		p[i].ladder = &prof->forward_gflops;
		p[i].ladder2 = &prof->backward_gflops;
	}
	return g->npasses;
}

/* The small figures' elements: MB_PROFILE_SMALL_ELEMS, or the rig's all where it has fewer. */
static uint64_t small_elems(const struct rig *g)
{
	return g->s->elementwise_elems < MB_PROFILE_SMALL_ELEMS ? g->s->elementwise_elems
								: MB_PROFILE_SMALL_ELEMS;
}

/*
 * The kernels over the rig's elements (grads written by the fill before the
 * momentum and the cast read them; the norm reads the cast's bf16: the
 * momentum kernel reads and writes 16 bytes an element, the bf16-momentum
 * one 12, the fill writes 4, the cast moves 6, the norm reads 2), and the
 * host optimizer and its streaming pass (8 bytes an element of its 2N).
 */
static size_t elementwise_probes(const struct rig *g, unsigned rounds, struct mb_profile *prof,
				 struct probe *p)
{
	uint64_t m = g->s->elementwise_elems, ms = small_elems(g);
	double e = (double)m, es = (double)ms;
	const struct probe list[] = {
		{ .once = fill_once, .work = 4 * e, .rate = &prof->fill_gbs },
		{ .once = momentum_once, .work = 16 * e, .elems = m, .rate = &prof->momentum_gbs },
		{ .once = momentum_bf16_once,
		  .work = 12 * e,
		  .elems = m,
		  .rate = &prof->momentum_bf16_gbs },
		{ .once = cast_once, .work = 6 * e, .rate = &prof->cast_gbs },
		{ .once = norm_once, .work = 2 * e, .rate = &prof->norm_gbs },
		{ .once = host_opt_once,
		  .work = mb_hostopt_bytes(m, m),
		  .elems = m,
		  .rate = &prof->host_opt_gbs },
		{ .once = host_stream_once,
		  .work = 16 * e,
		  .elems = m,
		  .rate = &prof->host_stream_gbs },
		/* the small ones: a small model's batch, in the caches */
		{ .once = momentum_once,
		  .work = 16 * es,
		  .elems = ms,
		  .warm = true,
		  .rate = &prof->momentum_small_gbs },
		{ .once = momentum_bf16_once,
		  .work = 12 * es,
		  .elems = ms,
		  .warm = true,
		  .rate = &prof->momentum_bf16_small_gbs },
		{ .once = host_opt_once,
		  .work = mb_hostopt_bytes(ms, ms),
		  .elems = ms,
		  .warm = true,
		  .rate = &prof->host_opt_small_gbs },
		{ .once = host_stream_once,
		  .work = 16 * es,
		  .elems = ms,
		  .warm = true,
		  .rate = &prof->host_stream_small_gbs },
	};
	size_t i, n = sizeof(list) / sizeof(list[0]);

	for (i = 0; i < n; i++) {
		p[i] = list[i];
		p[i].samples = rounds;
	}
	return n;
}

/*
 * The copies: each direction and both at once (the bytes of both), pinned
 * and pageable, of the whole buffers and small (a sample a batch of them).
 */
static size_t copy_probes(unsigned rounds, const struct mb_profile_measure_settings *s,
			  struct mb_profile *prof, struct probe *p)
{
	double *const rate[2][2][MB_BW_NDIRS] = {
		{ { &prof->h2d_pageable_gbs, &prof->d2h_pageable_gbs, &prof->both_pageable_gbs },
		  { &prof->h2d_pinned_gbs, &prof->d2h_pinned_gbs, &prof->both_pinned_gbs } },
		{ { &prof->h2d_pageable_small_gbs, &prof->d2h_pageable_small_gbs,
		    &prof->both_pageable_small_gbs },
		  { &prof->h2d_pinned_small_gbs, &prof->d2h_pinned_small_gbs,
		    &prof->both_pinned_small_gbs } },
	};
	uint64_t small = s->copy_bytes < MB_PROFILE_COPY_SMALL_BYTES ? s->copy_bytes
								     : MB_PROFILE_COPY_SMALL_BYTES;
	int spread, pinned, d;
	size_t n = 0;

	for (spread = 0; spread < 2; spread++)
		for (pinned = 0; pinned < 2; pinned++)
			for (d = 0; d < MB_BW_NDIRS; d++)
				p[n++] = (struct probe){
					.once = copy_once,
					.dir = (enum mb_bw_dir)d,
					.pinned = pinned,
					.spread = spread,
					.work = (double)(spread ? SMALL_COPY_REPS * small
								: s->copy_bytes) *
						(d == MB_BW_BOTH ? 2 : 1),
					.samples = rounds,
					.rate = rate[spread][pinned][d],
				};
	return n;
}

/*
 * Whether P's next sample falls in round R of ROUNDS: its samples spread
 * evenly over them (one whose round went by, as the time bound cut its
 * samples, in the next).
 */
static bool due(const struct probe *p, unsigned r, unsigned rounds)
{
	return p->n < p->samples && (2ull * p->n + 1) * rounds / (2ull * p->samples) <= r;
}

/* A sample of P, as long as its samples so far took, or its warm-up before any. */
static double sample_s(const struct probe *p)
{
	return p->n ? p->total_s / p->n : p->warm_s;
}

/*
 * P's samples still to come, of those it wants, if they may take C seconds
 * in all; LEAST in all at least (or what it wants, if fewer).
 */
static unsigned left_within(const struct probe *p, double c, unsigned least)
{
	double left = p->wanted - p->n, fit = floor(c / fmax(sample_s(p), 1e-9));
	double floor_left = fmax(0, fmin(p->wanted, least) - (double)p->n);

	return (unsigned)fmax(floor_left, fmin(left, fit));
}

/* Seconds of the samples still to come, each figure's held to C with LEAST at least. */
static double need_within(const struct probe *p, size_t n, double c, unsigned least)
{
	double need = 0;
	size_t i;

	for (i = 0; i < n; i++)
		need += left_within(&p[i], c, least) * sample_s(&p[i]);
	return need;
}

/*
 * Hold the samples still to come to LEFT_S seconds: each figure's to at
 * most C seconds, C as large as fits (a bisection), so that the slow ones
 * are cut first and the fast ones not at all; NS_MIN_SAMPLES a figure at
 * least while that fits, else one. Worked out again each round, from the
 * samples' own times as they come (a warm-up's compiling makes the first
 * guess high): a cut that proves too deep is undone.
 */
static void bound_time(struct probe *p, size_t n, double left_s)
{
	unsigned least = NS_MIN_SAMPLES;
	double lo = 0, hi = 0, c;
	size_t i;
	int it;

	for (i = 0; i < n; i++) {
		p[i].samples = p[i].wanted;
		hi = fmax(hi, (p[i].wanted - p[i].n) * sample_s(&p[i]));
	}
	if (need_within(p, n, hi, least) <= left_s)
		return;
	if (need_within(p, n, 0, least) > left_s)
		least = 1;
	for (it = 0; it < 60; it++) {
		c = (lo + hi) / 2;
		if (need_within(p, n, c, least) <= left_s)
			lo = c;
		else
			hi = c;
	}
	for (i = 0; i < n; i++)
		p[i].samples = p[i].n + left_within(&p[i], lo, least);
}

/* The warm-up, then the ROUNDS, held to about BUDGET_S seconds in all (0: no bound). */
static int run_rounds(struct rig *g, struct probe *p, size_t n, unsigned rounds, double budget_s)
{
	double t, t0 = mb_now_s();
	unsigned r;
	size_t i;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		p[i].wanted = p[i].samples;
		err = p[i].once(g, &p[i], &p[i].warm_s);
	}
	for (r = 0; r < rounds && !err; r++) {
		if (budget_s > 0)
			bound_time(p, n, budget_s - (mb_now_s() - t0));
		for (i = 0; i < n && !err; i++)
			if (due(&p[i], r, rounds) && !(err = p[i].once(g, &p[i], &t))) {
				p[i].total_s += t;
				p[i].sample_s[p[i].n] = t;
				p[i].second_s[p[i].n] =
					p[i].ladder2 || p[i].enqueue_us ? g->second_s : 0;
				p[i].n++;
			}
	}
	return err;
}

/* What the time bound cut, into R. */
static void report_cuts(const struct rig *g, const struct probe *p, size_t n,
			struct mb_profile_measure_report *r)
{
	size_t i, used = 0;
	int k;

	for (i = 0; i < n; i++) {
		if (p[i].n >= p[i].wanted)
			continue;
		r->ncut++;
		if (used >= sizeof(r->cut))
			continue;
		if (p[i].once == ns_once)
			k = snprintf(r->cut + used, sizeof(r->cut) - used,
				     "%s%llux%llu %s%s %u of %u", used ? ", " : "",
				     (unsigned long long)g->s->ns_rows[p[i].shape],
				     (unsigned long long)g->s->ns_cols[p[i].shape],
				     mb_ns_method_names[p[i].method],
				     p[i].gemms_only ? " GEMMs" : "", p[i].n, p[i].wanted);
		else
			k = snprintf(r->cut + used, sizeof(r->cut) - used, "%s%s %u of %u",
				     used ? ", " : "",
				     p[i].ladder2	      ? "a forward/backward"
				     : p[i].once == copy_once ? "a copy figure"
							      : "an elementwise figure",
				     p[i].n, p[i].wanted);
		used += k > 0 ? (size_t)k : 0;
	}
}

/*
 * Each probe's rate, its work over its median sample's time (in 10^9 units
 * a second): the median, which a shared machine's slow spells do not move
 * while they take less than half the rounds; and a Newton-Schulz's enqueue,
 * its median sample's. Its samples are sorted.
 */
static int keep_rates(const struct mb_cl *cl, struct probe *p, size_t n)
{
	size_t i;
	unsigned k;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		struct probe *q = &p[i];
		double rate;

		if (q->ladder2) { /* a pass: its forward, then its backward (the rest) */
			for (k = 0; k < q->n; k++)
				q->sample_s[k] -= q->second_s[k];
			rate = q->work / mb_spread_of(q->second_s, q->n).median / 1e9;
			if (!(err = add_point(cl, q->ladder, q->flops, rate)))
				err = add_point(cl, q->ladder2, q->flops,
						q->work2 / mb_spread_of(q->sample_s, q->n).median /
							1e9);
			continue;
		}
		if (q->enqueue_us &&
		    (err = add_point(cl, q->enqueue_us, q->flops,
				     1e6 * mb_spread_of(q->second_s, q->n).median)))
			break;
		rate = q->work / mb_spread_of(q->sample_s, q->n).median / 1e9;
		if (q->ladder)
			err = add_point(cl, q->ladder, q->flops, rate);
		else
			*q->rate = rate;
	}
	return err;
}

static void rig_release(struct rig *g)
{
	size_t i;

	for (i = 0; i < MB_PROFILE_LADDER_MAX; i++)
		mb_nsbench_release(&g->shape[i]);
	mb_ledger_free(&g->ledger, g->grad);
	mb_ledger_free(&g->ledger, g->mom);
	mb_ledger_free(&g->ledger, g->bf16);
	mb_ledger_free(&g->ledger, g->sums);
	mb_ledger_free(&g->ledger, g->mom_bf16);
	mb_ns_release(&g->ns);
	mb_ledger_release(&g->ledger);
	mb_bw_buffers_free(g->bw[0]);
	mb_bw_buffers_free(g->bw[1]);
	for (i = 0; i < MAX_PASSES; i++)
		mb_model_release(&g->pass[i]);
	free(g->host);
	free(g->staging);
}

/* Add ladder shapes [FIRST, END) to pass K, a layer of one matrix of each, at TOKENS tokens. */
static int rig_pass(struct rig *g, size_t k, size_t first, size_t end, uint64_t tokens)
{
	struct mb_model *m = &g->pass[k];
	char name[48];
	size_t i;
	int err = 0;

	for (i = first; i < end && !err; i++) {
		snprintf(name, sizeof(name), "layers.0.shape%zu", i);
		err = mb_model_add(m, name, 2, g->s->ns_rows[i], g->s->ns_cols[i], 0);
	}
	m->layers = 1;
	snprintf(m->name, sizeof(m->name), "profile pass %zu", k);
	g->pass_tokens[k] = tokens;
	return err;
}

/* The synthetic forward/backward's passes (the small ones where the ladder has two shapes). */
static int rig_passes(struct rig *g)
{
	size_t k, last = g->s->ns_nshapes - 1;
	int err = 0;

	for (k = 0;
	     last > 0 && k < sizeof(pass_small_tokens) / sizeof(pass_small_tokens[0]) && !err; k++)
		err = rig_pass(g, g->npasses++, 0, last, pass_small_tokens[k]);
	return err ? err : rig_pass(g, g->npasses++, last, last + 1, PASS_LARGE_TOKENS);
}

/* Newton-Schulz's workspace for every shape by either method, and each shape's matrices. */
static int rig_shapes(struct rig *g)
{
	const struct mb_profile_measure_settings *s = g->s;
	size_t i;
	int k, err = 0;

	/* a 16-bit precision's reserve builds our GEMM kernel (mb_gemm16); an fp32 one holds
	 * CLBlast's temporary, which the forward/backward's GEMMs alone need too */
	for (k = 0; k < MB_NS_NMETHODS && !err; k++) {
		g->ns.method = (enum mb_ns_method)k;
		g->ns.precision = s->ns_precision[k];
		err = mb_ns_reserve(&g->ns, s->ns_rows, s->ns_cols, s->ns_nshapes);
		g->ns.precision = MB_PREC_FP32;
		if (!err)
			err = mb_ns_reserve(&g->ns, s->ns_rows, s->ns_cols, s->ns_nshapes);
	}
	/* the same stream for each shape, as ns times them */
	for (i = 0; i < s->ns_nshapes && !err; i++)
		err = mb_nsbench_init(&g->shape[i], &g->ns, s->ns_rows[i], s->ns_cols[i],
				      ns_batch(s->ns_rows[i], s->ns_cols[i]), s->seed, 0);
	return err ? err : rig_passes(g);
}

/* The elementwise figures' buffers, the momentum seeded (the fill's warm-up writes the grads). */
static int rig_buffers(struct rig *g)
{
	uint64_t e = g->s->elementwise_elems;
	int err;

	g->host = calloc(4 * e, sizeof(float));
	g->staging = calloc(e, sizeof(uint16_t));
	if (!g->host || !g->staging)
		return mb_fail("out of host memory for %llu elements", (unsigned long long)e);
	if ((err = mb_ledger_alloc(&g->ledger, 4 * e, "profile.grad", &g->grad)) ||
	    (err = mb_ledger_alloc(&g->ledger, 4 * e, "profile.mom", &g->mom)) ||
	    (err = mb_ledger_alloc(&g->ledger, 2 * e, "profile.bf16", &g->bf16)) ||
	    (err = mb_ledger_alloc(&g->ledger, 4 * MB_NS_PARTIALS, "profile.sums", &g->sums)) ||
	    (err = mb_ledger_alloc(&g->ledger, 2 * e, "profile.mom_bf16", &g->mom_bf16)) ||
	    (err = mb_cl_zero(g->cl, g->cl->compute, g->mom_bf16, 0, 2 * e,
			      "the bf16 momentum's zeros")))
		return err;
	return mb_rng_fill(g->cl, g->mom, 0, e, g->s->seed, 2, 0, 1e-3f);
}

/* Everything the rounds time; on failure, nothing. */
static int rig_init(struct rig *g, const struct mb_cl *cl,
		    const struct mb_profile_measure_settings *s)
{
	int err;

	memset(g, 0, sizeof(*g));
	g->cl = cl;
	g->s = s;
	mb_ledger_init(&g->ledger, cl, 0);
	if ((err = mb_ns_init(&g->ns, cl, &g->ledger))) {
		mb_ledger_release(&g->ledger);
		return err;
	}
	if ((err = rig_shapes(g)) || (err = rig_buffers(g)) ||
	    (err = mb_bw_buffers_new(cl, s->copy_bytes, false, &g->bw[0])) ||
	    (err = mb_bw_buffers_new(cl, s->copy_bytes, true, &g->bw[1])))
		rig_release(g);
	return err;
}

/*
 * What the host loses waiting on a command that the device follows with
 * more work (command_latency_busy_us): a tiny copy on the compute queue,
 * then BUSY_KERNELS momentum kernels over the rig's elements behind it
 * (flushed before the wait, as a step's next batch is queued before the
 * host waits for the last one); the host's time from the copy's enqueue
 * to its wait's return less the copy's own (its events'). On a CPU device
 * the host thread shares the cores with the device's workers, which the
 * kernels keep busy: it wakes a scheduler's slice late at times (PoCL
 * here: a median of 0.1 ms, a mean of 1-1.5 ms under load, against 0.03
 * idle). The mean of BUSY_SAMPLES a --reps, as a mean over a run's steps
 * sees it.
 */
static int busy_latency(struct rig *g, struct mb_profile *prof)
{
	unsigned i, k, n = BUSY_SAMPLES * g->s->reps;
	double total = 0, t0, host, a, b;
	char tiny[TINY_COPY] = { 0 };
	cl_event ev;
	int err = 0;

	for (i = 0; i <= n && !err; i++) { /* the first untimed */
		ev = NULL;
		t0 = mb_now_s();
		err = mb_cl_check(g->cl,
				  clEnqueueWriteBuffer(g->cl->compute, g->bf16, CL_FALSE, 0,
						       TINY_COPY, tiny, 0, NULL, &ev),
				  "clEnqueueWriteBuffer", "a tiny copy before the kernels");
		for (k = 0; k < BUSY_KERNELS && !err; k++)
			err = mb_ns_momentum(&g->ns, g->grad, 0, g->mom, 0, g->s->elementwise_elems,
					     0.95f, NULL, NULL);
		if (!err)
			err = mb_cl_check(g->cl, clFlush(g->cl->compute), "clFlush",
					  "compute queue");
		if (!err)
			err = mb_cl_check(g->cl, clWaitForEvents(1, &ev), "clWaitForEvents",
					  "a tiny copy before the kernels");
		host = mb_now_s() - t0;
		if (!err && !(err = mb_cl_event_span(g->cl, ev, "a tiny copy", &a, &b)) && i)
			total += fmax(0, host - (b - a));
		if (mb_cl_check(g->cl, clFinish(g->cl->compute), "clFinish", "compute queue") &&
		    !err)
			err = -MB_EFAIL;
		if (ev)
			clReleaseEvent(ev);
	}
	if (!err)
		prof->command_latency_busy_us = 1e6 * total / n;
	return err;
}

/*
 * What the host's enqueue of a Newton-Schulz costs it, and a kernel beside
 * it (ns_enqueue_us, enqueue_contention_frac): the momentum kernel on the
 * small elements (warm: run once right before, as in the rounds) alone
 * takes T; again, flushed, with NS_BEHIND Newton-Schulz's of the rig's
 * first shape enqueued behind it, W, and the host's enqueue of them E. The
 * kernel ran beside the enqueue for min(E, W) and lost W - T of it. On a
 * CPU device the host thread's enqueue work takes a core from the device's
 * workers, as in a step, where the host enqueues a batch's Newton-Schulz
 * while its momentum kernel runs (PoCL on 2 cores: a momentum kernel with
 * three behind it ran a fifth longer, in every process; with one, whose
 * enqueue is shorter, in some). Medians of --reps (at most BESIDE_REPS_MAX).
 */
static int enqueue_beside(struct rig *g, struct mb_profile *prof)
{
	const struct mb_nsbench *b = &g->shape[0];
	unsigned i, k, reps = g->s->reps < BESIDE_REPS_MAX ? g->s->reps : BESIDE_REPS_MAX;
	uint64_t n = small_elems(g);
	double enq[BESIDE_REPS_MAX], lost[BESIDE_REPS_MAX], alone = 0, beside = 0, t0, e = 0;
	cl_event first, last;
	int err = 0, pass;

	g->ns.method = MB_NS_GRAM;
	g->ns.precision = g->s->ns_precision[MB_NS_GRAM];
	for (i = 0; i <= reps && !err; i++) {		   /* the first untimed */
		for (pass = 0; pass < 2 && !err; pass++) { /* alone, then beside the enqueue */
			/* warm, and done before the timed kernel starts */
			if ((err = mb_ns_momentum(&g->ns, g->grad, 0, g->mom, 0, n, 0.95f, NULL,
						  NULL)) ||
			    (err = mb_cl_check(g->cl, clFinish(g->cl->compute), "clFinish",
					       "compute queue")) ||
			    (err = mb_ns_momentum(&g->ns, g->grad, 0, g->mom, 0, n, 0.95f, &first,
						  &last)))
				break;
			clReleaseEvent(last);
			err = mb_cl_check(g->cl, clFlush(g->cl->compute), "clFlush",
					  "compute queue");
			t0 = mb_now_s();
			for (k = 0; pass && k < NS_BEHIND && !err; k++)
				err = mb_ns_orthogonalize(&g->ns, b->in, 0, b->rows, b->cols,
							  b->out, 0, NULL, NULL);
			e = mb_now_s() - t0;
			/* it finishes the queue, the Newton-Schulz's with it, and releases FIRST */
			if (!err)
				err = span_of(g->cl, first, "the momentum kernel",
					      pass ? &beside : &alone);
			else
				clReleaseEvent(first);
		}
		if (!err && i) {
			enq[i - 1] = e / NS_BEHIND;
			lost[i - 1] =
				fmin(1, fmax(0, (beside - alone) / fmax(1e-9, fmin(e, beside))));
		}
	}
	/* nothing of ours may still run when the rig's buffers go */
	if (err)
		clFinish(g->cl->compute);
	else {
		prof->ns_enqueue_us = 1e6 * mb_spread_of(enq, reps).median;
		prof->enqueue_contention_frac = mb_spread_of(lost, reps).median;
	}
	return err;
}

/*
 * What the host's pass costs beyond its loops (host_pass_us): the pass as a
 * step runs it (one region: the streaming loop and its barrier, then the
 * Muon and AdamW loops) on HOST_PASS_ELEMS elements, whose loops take a
 * microsecond or two, right after a momentum kernel as a step's pass comes
 * after its apply; the host clock around the region, the median of
 * BUSY_SAMPLES a --reps. On a CPU device that is the threads' wake-ups (a
 * region's start and its barriers, tens of microseconds each here), which
 * the loops' rates leave out.
 */
static int host_pass_fixed(struct rig *g, struct mb_profile *prof)
{
	unsigned i, n = BUSY_SAMPLES * g->s->reps;
	uint64_t e = HOST_PASS_ELEMS, step;
	volatile float one = 1.0f; /* a scale the compiler cannot drop; the values stay */
	float scale = one;
	struct mb_optim o = MB_OPTIM_DEFAULTS;
	float *buf = g->host;
	uint16_t *staging = g->staging;
	double *t = malloc(n * sizeof(*t)), t0;
	int err = 0;

	if (!t)
		return mb_fail("out of host memory for %u samples", n);
	for (i = 0; i <= n && !err; i++) { /* the first untimed */
		if ((err = mb_ns_momentum(&g->ns, g->grad, 0, g->mom, 0, small_elems(g), 0.95f,
					  NULL, NULL)) ||
		    (err = mb_cl_check(g->cl, clFinish(g->cl->compute), "clFinish",
				       "compute queue")))
			break;
		step = ++g->host_step;
		t0 = mb_now_s();
#pragma omp parallel
		{
			int64_t k;

#pragma omp for schedule(static)
			for (k = 0; k < (int64_t)(2 * e); k++)
				buf[k] *= scale;
			mb_hostopt_muon(buf, buf + e, staging, e, &o);
			mb_hostopt_adamw(buf + e, buf, buf + 2 * e, buf + 3 * e, staging, e, step,
					 &o);
		}
		if (i)
			t[i - 1] = mb_now_s() - t0;
	}
	if (!err)
		prof->host_pass_us = 1e6 * mb_spread_of(t, n).median;
	free(t);
	return err;
}

/*
 * Newton-Schulz's ladders, the forward/backward's GEMMs, the kernels, the
 * host optimizer, the copies.
 */
static int rates_in_rounds(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
			   struct mb_profile *prof)
{
	unsigned nrounds = ROUNDS_PER_REP * s->reps;
	struct probe p[MAX_PROBES];
	double t0 = mb_now_s(), *samples;
	struct rig g;
	size_t n, i;
	int err;

	if (s->ns_nshapes < 1 || s->ns_nshapes > MB_PROFILE_LADDER_MAX)
		return mb_bad_input("Newton-Schulz: 1 to %d shapes, got %zu", MB_PROFILE_LADDER_MAX,
				    s->ns_nshapes);
	if ((err = rig_init(&g, cl, s)))
		return err;
	g.latency_us = prof->command_latency_us;
	g.pageable_holds_host = prof->pageable_holds_host;
	n = ns_probes(&g, nrounds, prof, p);
	n += fwd_bwd_probes(&g, nrounds, prof, p + n);
	n += elementwise_probes(&g, nrounds, prof, p + n);
	n += copy_probes(nrounds, s, prof, p + n);
	if (!(samples = malloc(2 * n * nrounds * sizeof(*samples)))) {
		rig_release(&g);
		return mb_fail("out of host memory for %zu figures' samples", n);
	}
	for (i = 0; i < n; i++) {
		p[i].sample_s = samples + 2 * i * nrounds;
		p[i].second_s = p[i].sample_s + nrounds;
	}
	prof->median_rates = true;
	if (!(err = run_rounds(&g, p, n, nrounds, s->rounds_budget_s)) &&
	    !(err = keep_rates(cl, p, n)) && !(err = busy_latency(&g, prof)) &&
	    !(err = enqueue_beside(&g, prof)))
		err = host_pass_fixed(&g, prof);
	if (!err && s->report) {
		s->report->rounds = nrounds;
		s->report->rounds_s = mb_now_s() - t0;
		report_cuts(&g, p, n, s->report);
	}
	free(samples);
	rig_release(&g);
	return err;
}

int mb_profile_measure(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
		       struct mb_profile *p)
{
	double t0 = mb_now_s();
	int err;

	memset(p, 0, sizeof(*p));
	if (s->report)
		memset(s->report, 0, sizeof(*s->report));
	snprintf(p->name, sizeof(p->name), "%.63s", cl->info.name);
	snprintf(p->ns_gram_precision, sizeof(p->ns_gram_precision), "%s",
		 mb_precision_names[s->ns_precision[MB_NS_GRAM]]);
	snprintf(p->ns_standard_precision, sizeof(p->ns_standard_precision), "%s",
		 mb_precision_names[s->ns_precision[MB_NS_STANDARD]]);
	snprintf(p->device, sizeof(p->device), "%.100s (%.60s, driver %.60s), measured",
		 cl->info.name, cl->info.platform_name, cl->info.driver);
	/* pageable_holds first: whether a pageable copy holds the host decides its clock */
	if (!(err = copies(cl, s, p)) && !(err = pageable_holds(cl, s, p)) &&
	    !(err = rates_in_rounds(cl, s, p)) && !(err = pageable_beside(cl, s, p)) && s->report)
		s->report->total_s = mb_now_s() - t0;
	return err;
}
