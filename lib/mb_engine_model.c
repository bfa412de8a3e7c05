/*
 * mb_engine_model: the schedule's operations timed on a discrete-event
 * model of the device (see mb_engine_model.h).
 *
 * The host thread is the schedule itself: the engine keeps its clock, and
 * the device is simulated lazily, only as far as the host needs it: up to
 * the host's time before each enqueue, or until the command the host waits
 * for is done. That is exact, because nothing new reaches the device while
 * the host waits. Each queue is in order, so at most one command runs on
 * each: at most three at once (compute, copy, and pipeline's prefetch),
 * whose shared copy rate is worked out between events.
 */
#include "mb_engine_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_fwdbwd.h"
#include "mb_hostopt.h"
#include "mb_ns.h"

enum res { KERNEL, H2D, D2H, PEER }; /* PEER: a collective over the link between GPUs */
enum state { QUEUED, RUNNING, DONE };

struct cmd {
	enum res res;
	enum mb_queue queue;
	bool pageable;
	double fixed; /* seconds of overhead left, before the work */
	double work;  /* bytes left of a copy, seconds left of a kernel */
	double bytes; /* a copy's in all: its rate goes with its size */
	double enq, start, end;
	size_t dep[2]; /* 1 + the commands it waits on (its own, a barrier's); 0: none */
	size_t next;   /* 1 + the next command on its queue; 0: none yet */
	enum state state;
};

struct model_engine {
	struct mb_engine base; /* first: the engine is this struct */
	const struct mb_profile *prof;
	const struct mb_model *m;
	const struct mb_plan *plan;
	bool pinned[MB_HOST_NBUFFERS];
	struct cmd *v;
	size_t n, cap;
	size_t head[MB_NQUEUES], tail[MB_NQUEUES]; /* 1 + index; 0: none */
	size_t barrier[MB_NQUEUES]; /* what the next command of the queue waits on too */
	double now;		    /* the device's time */
	double host;		    /* the host thread's */
	/* 1 + the command the host is enqueuing now (its own time in its rate); 0: none */
	size_t enqueuing;
};

static struct model_engine *of(struct mb_engine *e)
{
	return (struct model_engine *)e;
}

/* A copy rate at BYTES from its LARGE and SMALL figures (SMALL 0: LARGE at every size), B/s. */
static double copy_sized(double large, double small, double bytes)
{
	return 1e9 * mb_profile_sized_rate(large, small, bytes, (double)MB_PROFILE_COPY_SMALL_BYTES,
					   (double)MB_PROFILE_COPY_LARGE_BYTES);
}

static double copy_rate(const struct model_engine *s, const struct cmd *c)
{
	const struct mb_profile *p = s->prof;

	if (c->res == PEER)
		return 1e9 * p->peer_gbs;
	if (c->res == H2D)
		return c->pageable
			       ? copy_sized(p->h2d_pageable_gbs, p->h2d_pageable_small_gbs,
					    c->bytes)
			       : copy_sized(p->h2d_pinned_gbs, p->h2d_pinned_small_gbs, c->bytes);
	return c->pageable ? copy_sized(p->d2h_pageable_gbs, p->d2h_pageable_small_gbs, c->bytes)
			   : copy_sized(p->d2h_pinned_gbs, p->d2h_pinned_small_gbs, c->bytes);
}

/*
 * The rate of running command C while the commands of RUN (one a queue,
 * NULL: none) run too: bytes or seconds of work a second. A copy runs at
 * its direction's rate at its size; copies in one direction share the link
 * evenly; against the other direction, the pair is held to the profile's
 * both-ways rate at their mean size.
 */
static double rate(const struct model_engine *s, const struct cmd *c,
		   struct cmd *const run[MB_NQUEUES])
{
	double r, ro = 0, both, pair = c->bytes;
	bool pageable = c->pageable, against = false;
	unsigned same = 1;
	int q;

	if (c->res == KERNEL) {
		/* the host's enqueue of another command takes a part of the device's cores */
		r = s->enqueuing && c != &s->v[s->enqueuing - 1]
			    ? 1.0 - s->prof->enqueue_contention_frac
			    : 1.0;
		for (q = 0; q < MB_NQUEUES; q++)
			if (run[q] && run[q]->res != KERNEL && run[q]->pageable &&
			    !(run[q]->fixed > 0))
				return r * (1.0 - s->prof->pageable_exposed_frac);
		return r;
	}
	r = copy_rate(s, c);
	for (q = 0; q < MB_NQUEUES; q++) {
		const struct cmd *o = run[q];

		if (!o || o == c || o->res == KERNEL || o->fixed > 0)
			continue;
		/* a collective and a host copy share a link only where it is the same one */
		if (o->res == PEER || c->res == PEER) {
			same += o->res == c->res || s->prof->peer_shares_pcie;
			continue;
		}
		if (o->res == c->res) {
			same++;
		} else {
			against = true;
			ro = copy_rate(s, o);
			pageable = pageable || o->pageable;
			pair = (c->bytes + o->bytes) / 2;
		}
	}
	r /= same;
	if (!against)
		return r;
	/* the pair's both-ways rate at the mean of their sizes */
	both = pageable
		       ? copy_sized(s->prof->both_pageable_gbs, s->prof->both_pageable_small_gbs,
				    pair)
		       : copy_sized(s->prof->both_pinned_gbs, s->prof->both_pinned_small_gbs, pair);
	return both < r + ro ? r * both / (r + ro) : r;
}

static bool waits(const struct model_engine *s, const struct cmd *c)
{
	return (c->dep[0] && s->v[c->dep[0] - 1].state != DONE) ||
	       (c->dep[1] && s->v[c->dep[1] - 1].state != DONE);
}

/* Start the queues' first commands that may start now. */
static void start_ready(struct model_engine *s)
{
	int q;

	for (q = 0; q < MB_NQUEUES; q++) {
		struct cmd *c = s->head[q] ? &s->v[s->head[q] - 1] : NULL;

		if (!c || c->state != QUEUED || c->enq > s->now || waits(s, c))
			continue;
		c->state = RUNNING;
		c->start = s->now;
	}
}

/*
 * Run the device until command WAIT (1 + index) is done or, with WAIT 0,
 * until time UNTIL. A wait that nothing can end is a bug of the schedule:
 * -MB_EFAIL.
 */
static int advance(struct model_engine *s, size_t wait, double until)
{
	for (;;) {
		struct cmd *run[MB_NQUEUES] = { NULL };
		double dt = INFINITY, r[MB_NQUEUES] = { 0 };
		int q, first = -1;

		start_ready(s);
		if (wait ? s->v[wait - 1].state == DONE : s->now >= until)
			return 0;
		for (q = 0; q < MB_NQUEUES; q++)
			if (s->head[q] && s->v[s->head[q] - 1].state == RUNNING)
				run[q] = &s->v[s->head[q] - 1];
		for (q = 0; q < MB_NQUEUES; q++) {
			double left;

			if (!run[q])
				continue;
			r[q] = rate(s, run[q], run);
			left = run[q]->fixed > 0 ? run[q]->fixed : run[q]->work / r[q];
			if (left < dt) {
				dt = left;
				first = q;
			}
		}
		if (!wait && until - s->now <= dt) {
			dt = until - s->now;
			first = -1;
		}
		if (!isfinite(dt))
			return mb_fail("predict: the schedule waits for a command that cannot "
				       "start (a bug of the model)");
		for (q = 0; q < MB_NQUEUES; q++) {
			struct cmd *c = run[q];

			if (!c)
				continue;
			if (c->fixed > 0) /* what is left of less than a femtosecond is nothing */
				c->fixed = q == first || c->fixed - dt < 1e-15 ? 0 : c->fixed - dt;
			else
				c->work = q == first || c->work - r[q] * dt < r[q] * 1e-15
						  ? 0
						  : c->work - r[q] * dt;
		}
		s->now += dt;
		for (q = 0; q < MB_NQUEUES; q++) {
			struct cmd *c = run[q];

			if (!c || c->fixed > 0 || c->work > 0)
				continue;
			c->state = DONE;
			c->end = s->now;
			s->head[q] = c->next;
		}
	}
}

/*
 * Whether the device has a kernel running or ready to start now: on a CPU
 * device a kernel takes every worker, a copy one, which leaves the host a core.
 */
static bool kernel_busy(struct model_engine *s)
{
	int q;

	start_ready(s);
	for (q = 0; q < MB_NQUEUES; q++)
		if (s->head[q] && s->v[s->head[q] - 1].state == RUNNING &&
		    s->v[s->head[q] - 1].res == KERNEL)
			return true;
	return false;
}

/* The host waits for command C (1 + index; 0: nothing). */
static int host_wait(struct model_engine *s, size_t c)
{
	const struct mb_profile *p = s->prof;
	double latency;
	int err;

	if (!c || c > s->n)
		return 0;
	if (s->v[c - 1].state != DONE && (err = advance(s, c, 0)))
		return err;
	/* the host wakes a latency after the command ends; one that slept in the wait
	 * (the command ended after the host came to it) a longer one where the device
	 * goes on with a kernel (its workers may hold the host's cores) */
	latency = 1e-6 *
		  (s->v[c - 1].end > s->host && p->command_latency_busy_us > 0 && kernel_busy(s)
			   ? p->command_latency_busy_us
			   : p->command_latency_us);
	if (s->v[c - 1].end + latency > s->host)
		s->host = s->v[c - 1].end + latency;
	return 0;
}

/*
 * The host enqueues a command on Q: WORK bytes of a copy (RES H2D or D2H,
 * from PAGEABLE host memory or not) or seconds of a kernel, waiting on DEP
 * (1 + index, or 0) and on the queue's barrier. Its id into *ID.
 */
static int enqueue(struct model_engine *s, enum mb_queue q, enum res res, bool pageable,
		   double work, size_t dep, size_t *id)
{
	struct cmd *c;
	int err;

	*id = 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct cmd *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return mb_fail("out of host memory for %zu commands of the model", cap);
		s->v = v;
		s->cap = cap;
	}
	if (s->host > s->now && (err = advance(s, 0, s->host)))
		return err;
	*id = ++s->n;
	c = &s->v[*id - 1];
	*c = (struct cmd){ .res = res,
			   .queue = q,
			   .pageable = pageable,
			   .fixed = 1e-6 * s->prof->command_overhead_us,
			   .work = work,
			   .bytes = res == KERNEL ? 0 : work,
			   .enq = s->host,
			   .dep = { dep, s->barrier[q] } };
	s->barrier[q] = 0;
	if (s->tail[q] && s->v[s->tail[q] - 1].state != DONE)
		s->v[s->tail[q] - 1].next = *id;
	else
		s->head[q] = *id;
	s->tail[q] = *id;
	if (res != KERNEL && pageable && s->prof->pageable_holds_host)
		return host_wait(s, *id);
	return 0;
}

/* A buffer is a byte of host memory: a handle of its own, that the layer above counts. */
static int model_alloc(struct mb_engine *e, uint64_t bytes, const char *tag, mb_devbuf *out)
{
	(void)e;
	if (!(*out = malloc(1)))
		return mb_fail("out of host memory for the model's buffer '%s' (%llu bytes)", tag,
			       (unsigned long long)bytes);
	return 0;
}

static void model_free(struct mb_engine *e, mb_devbuf buf)
{
	(void)e;
	free(buf);
}

static int model_copy(struct mb_engine *e, const struct mb_copy *c, size_t after, size_t *done)
{
	struct model_engine *s = of(e);
	int err;

	if ((err = enqueue(s, c->queue, c->to_device ? H2D : D2H, !s->pinned[c->host],
			   (double)c->bytes, after, done)))
		return err;
	return mb_engine_span(e, *done, 0, c->phase);
}

/* A blocking read into malloc'd memory: pageable. */
static int model_read(struct mb_engine *e, enum mb_queue q, mb_devbuf dev, uint64_t dev_off,
		      uint64_t bytes, void *dst)
{
	struct model_engine *s = of(e);
	size_t id;
	int err;

	(void)dev;
	(void)dev_off;
	(void)dst;
	if ((err = enqueue(s, q, D2H, true, (double)bytes, 0, &id)))
		return err;
	return host_wait(s, id);
}

/* The momentum kernel's GB/s over N elements: fp32 or bf16, at their size. */
static double momentum_rate(const struct mb_profile *p, bool bf16, double n)
{
	bool own = bf16 && p->momentum_bf16_gbs > 0;

	return mb_profile_sized_rate(own ? p->momentum_bf16_gbs : p->momentum_gbs,
				     own ? p->momentum_bf16_small_gbs : p->momentum_small_gbs, n,
				     MB_PROFILE_SMALL_ELEMS, MB_PROFILE_LARGE_ELEMS);
}

/* Seconds of work W on the device the profile describes. */
static double work_s(const struct model_engine *s, const struct mb_work *w)
{
	const struct mb_profile *p = s->prof;
	double n = (double)w->n;
	enum mb_ns_method method = s->plan->set.ns_method;
	double flops;

	switch (w->kind) {
	case MB_WORK_GRADS:
		return 4 * n / (1e9 * p->fill_gbs);
	case MB_WORK_ZERO:
		return n / (1e9 * p->fill_gbs);
	case MB_WORK_CAST:
	case MB_WORK_WIDEN:
		return 6 * n / (1e9 * p->cast_gbs);
	case MB_WORK_SUMSQ:
		return 2 * n / (1e9 * p->norm_gbs);
	case MB_WORK_MOMENTUM: /* reads the grads and the momentum, writes both */
		return 2 * (4 + (w->bf16 ? 2 : 4)) * n / (1e9 * momentum_rate(p, w->bf16, n));
	case MB_WORK_COLLECTIVE: /* a copy over the GPUs' link: model_work times it */
		return 0;
	case MB_WORK_NS:
		/* the method's rate at this matrix's size: a CPU's is not one figure; its norm
		 * is timed with it, not charged apart */
		flops = (double)mb_ns_flops(w->rows, w->cols, method);
		return flops /
		       (1e9 * mb_profile_ladder_at(method == MB_NS_GRAM ? &p->ns_gram_gflops
									: &p->ns_standard_gflops,
						   flops));
	case MB_NWORKS:
		break;
	}
	return 0;
}

/*
 * Seconds the host's enqueue of Newton-Schulz W holds it: the method's ladder
 * at W's FLOPs, or the one figure (ns_enqueue_us) where the profile has no
 * ladder. The device's kernels beside it are slowed (enqueue_contention_frac)
 * for ns_enqueue_us of it at most, the span over which the fraction was
 * measured: a larger shape's longer hold (PoCL here, 400-500 us against 150)
 * did not slow them longer (charged over the whole hold, stage 2 master's and
 * pin's momentum kernels were predicted 30-40% long).
 */
static double ns_enqueue_s(const struct model_engine *s, const struct mb_work *w)
{
	enum mb_ns_method method = s->plan->set.ns_method;
	const struct mb_profile_ladder *l = method == MB_NS_GRAM ? &s->prof->ns_gram_enqueue_us
								 : &s->prof->ns_standard_enqueue_us;

	return 1e-6 * (l->n ? mb_profile_ladder_at(l, (double)mb_ns_flops(w->rows, w->cols, method))
			    : s->prof->ns_enqueue_us);
}

static int model_work(struct mb_engine *e, const struct mb_work *w, size_t after, size_t *done)
{
	struct model_engine *s = of(e);
	double hold;
	int err;

	if (!w->n && w->kind != MB_WORK_NS) /* an empty kernel is not enqueued */
		return 0;
	if (w->kind == MB_WORK_COLLECTIVE) /* its bytes over the GPUs' link, if given a rate */
		err = s->prof->peer_gbs > 0
			      ? enqueue(s, w->queue, PEER, false, (double)w->n, after, done)
			      : 0;
	else
		err = enqueue(s, w->queue, KERNEL, false, work_s(s, w), after, done);
	if (!err && w->kind == MB_WORK_NS && (hold = ns_enqueue_s(s, w)) > 0) {
		/* the host goes on enqueueing its GEMMs: held that long, the device's other
		 * kernels slowed meanwhile (its own are, in the rate the profile gives it),
		 * for as long as the enqueue the fraction was measured beside at most */
		double contended = fmin(hold, 1e-6 * s->prof->ns_enqueue_us);

		s->enqueuing = *done;
		err = advance(s, 0, s->host + contended);
		s->enqueuing = 0;
		if (!err && contended < hold)
			err = advance(s, 0, s->host + hold);
		s->host += hold;
	}
	if (err)
		return err;
	return mb_engine_span(e, *done, 0, w->phase);
}

/*
 * FLOPS of the pass at L's rate for its tokens (mb_profile_ladder_at),
 * or at fwd_bwd_gflops where L has no point.
 */
static double pass_s(const struct model_engine *s, const struct mb_profile_ladder *l, double flops)
{
	double gflops = l->n ? mb_profile_ladder_at(l, (double)s->plan->set.tokens)
			     : s->prof->fwd_bwd_gflops;

	return flops / (1e9 * gflops);
}

/* As mb_fwdbwd_run: the forward's GEMMs, then the backward's stage by stage. */
static int model_fwd_bwd(struct mb_engine *e, const struct mb_fwdbwd_hook *hook, double *forward_s,
			 double *backward_s)
{
	struct model_engine *s = of(e);
	uint64_t tokens = s->plan->set.tokens;
	const struct mb_profile *p = s->prof;
	double fwd, bwd, t0, overhead = 1e-6 * p->command_overhead_us;
	size_t nf, nb, ng, id;
	unsigned stage;
	int err;

	*forward_s = *backward_s = 0;
	if (!tokens)
		return 0;
	mb_fwdbwd_flops(s->m, tokens, &fwd, &bwd, &nf, &nb);
	t0 = s->host;
	/* one command for the GEMMs of the forward and of each backward stage, with the
	 * overhead of each GEMM */
	if ((err = enqueue(s, MB_QUEUE_COMPUTE, KERNEL, false,
			   pass_s(s, &p->forward_gflops, fwd) + (double)(nf - (nf > 0)) * overhead,
			   0, &id)) ||
	    (err = host_wait(s, id)))
		return err;
	*forward_s = s->host - t0;
	t0 = s->host;
	for (stage = s->m->layers + 1; stage-- > 0;) {
		mb_fwdbwd_stage_flops(s->m, tokens, stage, &bwd, &ng);
		if (ng && (err = enqueue(s, MB_QUEUE_COMPUTE, KERNEL, false,
					 pass_s(s, &p->backward_gflops, bwd) +
						 (double)(ng - 1) * overhead,
					 0, &id)))
			return err;
		if (hook && (err = hook->stage_done(hook->arg, stage)))
			return err;
	}
	if ((err = host_wait(s, s->tail[MB_QUEUE_COMPUTE])))
		return err;
	*backward_s = s->host - t0;
	return 0;
}

static int model_wait(struct mb_engine *e, size_t ev, const char *what)
{
	(void)what;
	return host_wait(of(e), ev);
}

static int model_after(struct mb_engine *e, enum mb_queue q, size_t ev)
{
	of(e)->barrier[q] = ev;
	return 0;
}

/* A marker is the queue's last command: it costs nothing more. */
static int model_marker(struct mb_engine *e, enum mb_queue q, size_t *done)
{
	*done = of(e)->tail[q];
	return 0;
}

static int model_flush(struct mb_engine *e, enum mb_queue q)
{
	(void)e;
	(void)q;
	return 0;
}

static int model_finish(struct mb_engine *e, enum mb_queue q)
{
	return host_wait(of(e), of(e)->tail[q]);
}

static int model_pin(struct mb_engine *e, enum mb_host_buffer b)
{
	(void)e;
	(void)b;
	return 0;
}

static void model_host(struct mb_engine *e, const struct mb_host_work *h)
{
	struct model_engine *s = of(e);
	const struct mb_profile *p = s->prof;
	/* each at its size: the optimizer's bytes against its figures' (44 an element of a
	 * Muon's and an AdamW's), the passes' against theirs (16 an element) */
	double opt = mb_profile_sized_rate(
		p->host_opt_gbs, p->host_opt_small_gbs, h->bytes,
		mb_hostopt_bytes(MB_PROFILE_SMALL_ELEMS, MB_PROFILE_SMALL_ELEMS),
		mb_hostopt_bytes(MB_PROFILE_LARGE_ELEMS, MB_PROFILE_LARGE_ELEMS));
	double stream = p->host_stream_gbs > 0
				? mb_profile_sized_rate(p->host_stream_gbs,
							p->host_stream_small_gbs, h->streamed,
							16.0 * MB_PROFILE_SMALL_ELEMS,
							16.0 * MB_PROFILE_LARGE_ELEMS)
				: p->memcpy_gbs;

	s->host += h->bytes / (1e9 * opt) + h->streamed / (1e9 * stream) + 1e-6 * p->host_pass_us;
}

static double model_now(struct mb_engine *e)
{
	return of(e)->host;
}

static void model_phase(struct mb_engine *e, const char *name)
{
	(void)e;
	(void)name;
}

static int model_interval(struct mb_engine *e, size_t first, size_t last, const char *what,
			  double *start, double *end)
{
	struct model_engine *s = of(e);

	(void)what;
	*start = s->v[first - 1].start;
	*end = s->v[last - 1].end;
	return 0;
}

static void model_abort(struct mb_engine *e)
{
	(void)e;
}

/* The next step starts on an idle device at time 0. */
static void model_end_step(struct mb_engine *e)
{
	struct model_engine *s = of(e);

	s->n = 0;
	s->now = s->host = 0;
	memset(s->head, 0, sizeof(s->head));
	memset(s->tail, 0, sizeof(s->tail));
	memset(s->barrier, 0, sizeof(s->barrier));
}

static void model_destroy(struct mb_engine *e)
{
	struct model_engine *s = of(e);

	free(s->v);
	mb_engine_release(e);
	free(s);
}

static const struct mb_engine_ops model_ops = {
	.name = "model",
	.alloc = model_alloc,
	.free = model_free,
	.copy = model_copy,
	.read = model_read,
	.work = model_work,
	.fwd_bwd = model_fwd_bwd,
	.wait = model_wait,
	.after = model_after,
	.marker = model_marker,
	.flush = model_flush,
	.finish = model_finish,
	.pin = model_pin,
	.host = model_host,
	.now = model_now,
	.phase = model_phase,
	.interval = model_interval,
	.abort = model_abort,
	.end_step = model_end_step,
	.destroy = model_destroy,
};

int mb_engine_model_new(const struct mb_profile *prof, const struct mb_model *m,
			const struct mb_plan *plan, const struct mb_step_settings *set,
			struct mb_engine **out)
{
	struct model_engine *s = calloc(1, sizeof(*s));
	int b;

	*out = NULL;
	if (!s)
		return mb_fail("out of host memory for the model engine");
	s->base.ops = &model_ops;
	s->prof = prof;
	s->m = m;
	s->plan = plan;
	for (b = 0; b < MB_HOST_NBUFFERS; b++)
		s->pinned[b] = mb_sched_pinned(set, (enum mb_host_buffer)b);
	*out = &s->base;
	return 0;
}
