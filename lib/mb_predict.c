/*
 * mb_predict: a discrete-event model of the step (see mb_predict.h).
 *
 * The host thread is plain code that mirrors mb_step's: it keeps its own
 * clock, and the device is simulated lazily, only as far as the host needs
 * it: up to the host's time before each enqueue, or until the command the
 * host waits for is done. That is exact, because nothing new reaches the
 * device while the host waits. Each queue is in order, so at most one
 * command runs on each: at most three at once (compute, copy, and pipeline's
 * prefetch), whose shared copy rate is
 * worked out between events.
 */
#include "mb_predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_fwdbwd.h"
#include "mb_hostopt.h"
#include "mb_ns.h"

enum queue { COMPUTE, COPY, PREFETCH, NQUEUES }; /* mb_cl's compute, copy and prefetch */
enum res { KERNEL, H2D, D2H };
/* what the run's timeline counts a command as (NONE: not in it) */
enum kind { NONE, K_H2D, K_MOMENTUM, K_NS, K_D2H, K_PARAMS_H2D };
enum state { QUEUED, RUNNING, DONE };

struct cmd {
	enum res res;
	enum kind kind;
	enum queue queue;
	bool pageable;
	double fixed; /* seconds of overhead left, before the work */
	double work;  /* bytes left of a copy, seconds left of a kernel */
	double enq, start, end;
	size_t dep;  /* 1 + the command it waits on; 0: none */
	size_t next; /* 1 + the next command on its queue; 0: none yet */
	enum state state;
};

struct sim {
	const struct mb_profile *prof;
	const struct mb_step_settings *set;
	const struct mb_plan *plan;
	const struct mb_model *m;
	struct cmd *v;
	size_t n, cap;
	size_t head[NQUEUES], tail[NQUEUES]; /* 1 + index; 0: none */
	double now;			     /* the device's time */
	double host;			     /* the host thread's */
	bool failed;
};

static double copy_rate(const struct sim *s, const struct cmd *c)
{
	const struct mb_profile *p = s->prof;

	if (c->res == H2D)
		return 1e9 * (c->pageable ? p->h2d_pageable_gbs : p->h2d_pinned_gbs);
	return 1e9 * (c->pageable ? p->d2h_pageable_gbs : p->d2h_pinned_gbs);
}

/*
 * The rate of running command C while the commands of RUN (one a queue,
 * NULL: none) run too: bytes or seconds of work a second. Copies in one
 * direction share the link evenly; against the other direction, the pair
 * is held to the profile's both-ways rate.
 */
static double rate(const struct sim *s, const struct cmd *c, struct cmd *const run[NQUEUES])
{
	double r, ro = 0, both;
	bool pageable = c->pageable, against = false;
	unsigned same = 1;
	int q;

	if (c->res == KERNEL)
		return 1.0;
	r = copy_rate(s, c);
	for (q = 0; q < NQUEUES; q++) {
		const struct cmd *o = run[q];

		if (!o || o == c || o->res == KERNEL || o->fixed > 0)
			continue;
		if (o->res == c->res) {
			same++;
		} else {
			against = true;
			ro = copy_rate(s, o);
			pageable = pageable || o->pageable;
		}
	}
	r /= same;
	if (!against)
		return r;
	both = 1e9 * (pageable ? s->prof->both_pageable_gbs : s->prof->both_pinned_gbs);
	return both < r + ro ? r * both / (r + ro) : r;
}

/* Start the queues' first commands that may start now. */
static void start_ready(struct sim *s)
{
	int q;

	for (q = 0; q < NQUEUES; q++) {
		struct cmd *c = s->head[q] ? &s->v[s->head[q] - 1] : NULL;

		if (!c || c->state != QUEUED || c->enq > s->now ||
		    (c->dep && s->v[c->dep - 1].state != DONE))
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
static int advance(struct sim *s, size_t wait, double until)
{
	for (;;) {
		struct cmd *run[NQUEUES] = { NULL };
		double dt = INFINITY, r[NQUEUES] = { 0 };
		int q, first = -1;

		start_ready(s);
		if (wait ? s->v[wait - 1].state == DONE : s->now >= until)
			return 0;
		for (q = 0; q < NQUEUES; q++)
			if (s->head[q] && s->v[s->head[q] - 1].state == RUNNING)
				run[q] = &s->v[s->head[q] - 1];
		for (q = 0; q < NQUEUES; q++) {
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
		for (q = 0; q < NQUEUES; q++) {
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
		for (q = 0; q < NQUEUES; q++) {
			struct cmd *c = run[q];

			if (!c || c->fixed > 0 || c->work > 0)
				continue;
			c->state = DONE;
			c->end = s->now;
			s->head[q] = c->next;
		}
	}
}

/* The host waits for command C (1 + index). */
static void host_wait(struct sim *s, size_t c)
{
	if (!c || s->failed)
		return;
	if (s->v[c - 1].state != DONE && advance(s, c, 0)) {
		s->failed = true;
		return;
	}
	if (s->v[c - 1].end > s->host)
		s->host = s->v[c - 1].end;
}

/*
 * The host enqueues a command on Q: WORK bytes of a copy (RES H2D or D2H,
 * from PAGEABLE host memory or not) or seconds of a kernel, waiting on DEP
 * (1 + index, or 0). Returns 1 + its index (0 when out of memory).
 */
static size_t enqueue(struct sim *s, enum queue q, enum res res, bool pageable, enum kind kind,
		      double work, size_t dep)
{
	struct cmd *c;
	size_t id;

	if (s->failed)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct cmd *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			s->failed = true;
			mb_fail("out of host memory for %zu commands of the model", cap);
			return 0;
		}
		s->v = v;
		s->cap = cap;
	}
	if (s->host > s->now && advance(s, 0, s->host)) {
		s->failed = true;
		return 0;
	}
	id = ++s->n;
	c = &s->v[id - 1];
	*c = (struct cmd){ .res = res,
			   .kind = kind,
			   .queue = q,
			   .pageable = pageable,
			   .fixed = 1e-6 * s->prof->command_overhead_us,
			   .work = work,
			   .enq = s->host,
			   .dep = dep };
	if (s->tail[q] && s->v[s->tail[q] - 1].state != DONE)
		s->v[s->tail[q] - 1].next = id;
	else
		s->head[q] = id;
	s->tail[q] = id;
	if (res != KERNEL && pageable && s->prof->pageable_holds_host)
		host_wait(s, id);
	return id;
}

static size_t kernel(struct sim *s, enum kind kind, double seconds)
{
	return enqueue(s, COMPUTE, KERNEL, false, kind, seconds, 0);
}

/* A kernel that waits on command DEP (1 + index, or 0) of another queue. */
static size_t kernel_after(struct sim *s, enum kind kind, double seconds, size_t dep)
{
	return enqueue(s, COMPUTE, KERNEL, false, kind, seconds, dep);
}

/* Seconds of an elementwise device kernel that moves BYTES. */
static double elementwise_s(const struct sim *s, double bytes)
{
	return bytes / (1e9 * s->prof->momentum_gbs);
}

/* Seconds of the norm's partial sums that read BYTES (of the bf16 grads: 2 an element). */
static double norm_s(const struct sim *s, double bytes)
{
	return bytes / (1e9 * s->prof->norm_gbs);
}

/* Seconds of a cast between fp32 and bf16 that moves BYTES. */
static double cast_s(const struct sim *s, double bytes)
{
	return bytes / (1e9 * s->prof->cast_gbs);
}

/* ---- what the host buffers are, as mb_step allocates them ---- */

static bool grads_pageable(const struct sim *s)
{
	return !s->set->pin_memory;
}

static bool momentum_pageable(const struct sim *s)
{
	return !(s->set->pin_memory && mb_variant_pins(s->set->variant));
}

static bool staging_pageable(const struct sim *s)
{
	return !s->set->pin_memory || s->plan->set.params_back == MB_BACK_PAGEABLE;
}

/* ---- forward, backward ---- */

/* The backward stand-in's buckets, as mb_step's struct bwd. */
struct bwd {
	struct sim *s;
	uint64_t left;	/* buckets not reduced yet: 0 .. left - 1, the highest next */
	uint64_t after; /* buckets 0 .. after - 1 are reduced after the GEMMs */
	bool part;	/* a part's buffers are allocated: its partial sums to read */
	size_t freed;	/* ZeRO-3: 1 + the last bucket's fp32 copy out; 0: none */
	size_t last;	/* 1 + the last command of the buckets' queue */
};

static void reduce_bucket(struct bwd *b, uint64_t k)
{
	struct sim *s = b->s;
	uint64_t n = s->m->numel_total, bucket = s->plan->bucket_elems, off = k * bucket;
	double e = (double)(n - off < bucket ? n - off : bucket), len;
	bool z3 = s->plan->set.stage == 3;
	enum queue q = mb_plan_reduce_overlaps(&s->plan->set) ? COPY : COMPUTE;
	struct mb_plan_piece p = { 0 };
	size_t made = 0;

	/* a piece at a time, the fp32 grads made once the last bucket's are out; rounded into
	 * the bucket */
	while (mb_plan_next_piece(s->plan, s->m, k, &p)) {
		len = (double)p.len;
		kernel_after(s, NONE, 4 * len / (1e9 * s->prof->fill_gbs), b->freed);
		b->freed = 0;
		made = kernel(s, NONE, cast_s(s, 6 * len));
	}
	if (z3) /* to the host's bf16 grads, on the copy queue */
		enqueue(s, q, D2H, grads_pageable(s), NONE, 2 * e, made);
	enqueue(s, q, KERNEL, false, NONE, norm_s(s, 2 * e), 0); /* the norm's sums */
	for (p = (struct mb_plan_piece){ 0 }; mb_plan_next_piece(s->plan, s->m, k, &p);) {
		len = (double)p.len;
		if (z3) /* back from the host */
			enqueue(s, q, H2D, grads_pageable(s), NONE, 2 * len, 0);
		enqueue(s, q, KERNEL, false, NONE, cast_s(s, 6 * len), 0); /* widened to fp32 */
		b->last = enqueue(s, q, D2H, grads_pageable(s), NONE, 4 * len, 0);
	}
	if (z3)
		b->freed = b->last;
}

/* As mb_step's reduce_down: the buckets that the backward has made by STAGE, down to FLOOR. */
static void reduce_down(struct bwd *b, uint64_t floor, unsigned stage)
{
	while (b->left > floor && mb_plan_bucket_stage(b->s->plan, b->s->m, b->left - 1) >= stage) {
		b->part = true;
		b->left--;
		reduce_bucket(b, b->left);
	}
}

/* As mb_step's bwd_part_end: the queues drained, the part's partial sums read (blocking). */
static void part_end(struct bwd *b, uint64_t first, uint64_t end)
{
	struct sim *s = b->s;

	if (!b->part)
		return;
	host_wait(s, b->last);
	if (end > first) /* into malloc'd memory */
		host_wait(s, enqueue(s, COMPUTE, D2H, true, NONE,
				     4.0 * MB_NS_PARTIALS * (double)(end - first), 0));
	host_wait(s, s->tail[COMPUTE]);
	b->part = false;
	b->freed = 0;
}

/* As mb_fwdbwd_run: the forward's GEMMs, then the backward's stage by stage. */
static void fwd_bwd(struct sim *s, struct bwd *b, struct mb_phase_times *p)
{
	double fwd, bwd, t0, rate_flops = 1e9 * s->prof->fwd_bwd_gflops,
			     overhead = 1e-6 * s->prof->command_overhead_us;
	size_t nf, nb, ng;
	unsigned stage;

	if (!s->set->fwd_bwd || !s->plan->set.tokens)
		return;
	mb_fwdbwd_flops(s->m, s->plan->set.tokens, &fwd, &bwd, &nf, &nb);
	t0 = s->host;
	/* one command for the GEMMs of the forward and of each backward stage, with the
	 * overhead of each GEMM */
	host_wait(s, kernel(s, NONE, fwd / rate_flops + (double)(nf - (nf > 0)) * overhead));
	p->forward_s = s->host - t0;
	t0 = s->host;
	for (stage = s->m->layers + 1; stage-- > 0;) {
		mb_fwdbwd_stage_flops(s->m, s->plan->set.tokens, stage, &bwd, &ng);
		if (ng)
			kernel(s, NONE, bwd / rate_flops + (double)(ng - 1) * overhead);
		reduce_down(b, b->after, stage);
	}
	host_wait(s, s->tail[COMPUTE]);
	p->backward_s = s->host - t0;
}

/* As mb_step's backward_end. */
static void backward(struct sim *s, struct bwd *b, struct mb_phase_times *p)
{
	double t0 = s->host;

	part_end(b, b->after, mb_plan_nbuckets(s->plan, s->m));
	reduce_down(b, 0, 0);
	part_end(b, 0, b->after);
	host_wait(s, s->tail[COMPUTE]);
	p->backward_s += s->host - t0;
}

/* ---- the Muon apply, as mb_step's ---- */

struct unit {
	size_t arrived;		  /* pipeline: 1 + index of its gather's last copy */
	size_t computed, written; /* 1 + index of the last compute command, of the last read */
	size_t first, end;	  /* the plan's order[first..end) */
};

struct apply {
	struct sim *s;
	bool overlap, prefetch;
	struct unit pending, inflight, arriving;
	bool has_pending, has_inflight, has_arriving;
};

static uint64_t numel_at(const struct sim *s, size_t k)
{
	return mb_param_numel(&s->m->params[s->plan->order[k]]);
}

static void writeback(struct apply *a, struct unit *u, enum queue q)
{
	struct sim *s = a->s;
	bool event_dep = s->set->writeback_event && q != COMPUTE && u->computed;
	size_t dep = event_dep ? u->computed : 0;
	uint64_t lo = 0;
	size_t k;

	if (q != COMPUTE && !event_dep)
		host_wait(s, u->computed);
	for (k = u->first; k < u->end; k++) {
		enqueue(s, q, D2H, grads_pageable(s), K_D2H, 4.0 * (double)numel_at(s, k), dep);
		lo += numel_at(s, k);
	}
	u->written = enqueue(s, q, D2H, momentum_pageable(s), K_D2H,
			     (double)s->plan->momentum_bytes * (double)lo, dep);
}

static void drain(struct apply *a, struct unit *u)
{
	host_wait(a->s, u->written);
	memset(u, 0, sizeof(*u));
}

static void make_room(struct apply *a)
{
	if (!a->has_inflight)
		return;
	a->has_inflight = false;
	drain(a, &a->inflight);
}

static void push(struct apply *a, struct unit *u)
{
	if (!a->overlap) {
		writeback(a, u, COMPUTE);
		drain(a, u);
		return;
	}
	a->inflight = a->pending;
	a->has_inflight = a->has_pending;
	a->pending = *u;
	a->has_pending = true;
	if (a->has_inflight)
		writeback(a, &a->inflight, COPY);
}

static void flush(struct apply *a)
{
	make_room(a);
	if (!a->has_pending)
		return;
	a->has_pending = false;
	writeback(a, &a->pending, COPY);
	drain(a, &a->pending);
}

/* Group G's grads and momentum to the device on Q: the last copy's command (0: none). */
static size_t copy_in(struct apply *a, const struct mb_plan_group *g, enum queue q)
{
	struct sim *s = a->s;
	double e = (double)g->gathered_numel, mb = (double)s->plan->momentum_bytes;
	size_t k, last = 0;

	for (k = g->first; k < g->end; k++)
		last = enqueue(s, q, H2D, grads_pageable(s), K_H2D, 4.0 * (double)numel_at(s, k),
			       0);
	if (g->first == g->end)
		return last;
	return enqueue(s, q, H2D, momentum_pageable(s), K_H2D, mb * e, 0);
}

/* The momentum kernel over G, after command DEP: its command (0: nothing to do). */
static size_t momentum(struct apply *a, const struct mb_plan_group *g, size_t dep)
{
	double e = (double)g->gathered_numel, mb = (double)a->s->plan->momentum_bytes;

	if (g->first == g->end)
		return 0;
	/* reads the grads and the momentum, writes the update and the momentum */
	return kernel_after(a->s, K_MOMENTUM, elementwise_s(a->s, 2 * (4 + mb) * e), dep);
}

/* Group G's grads and momentum to the device, then the momentum kernel: its command. */
static size_t gather(struct apply *a, const struct mb_plan_group *g)
{
	copy_in(a, g, COMPUTE);
	return momentum(a, g, 0);
}

/* Pipeline: G's gather on the prefetch queue, into a->arriving. */
static void arrive(struct apply *a, const struct mb_plan_group *g)
{
	make_room(a);
	memset(&a->arriving, 0, sizeof(a->arriving));
	a->arriving.first = g->first;
	a->arriving.end = g->end;
	a->arriving.arrived = copy_in(a, g, PREFETCH);
	a->has_arriving = true;
}

static size_t orthogonalize(struct apply *a, size_t k)
{
	const struct mb_param *p = &a->s->m->params[a->s->plan->order[k]];
	enum mb_ns_method method = a->s->plan->set.ns_method;
	double flops = (double)mb_ns_flops(p->rows, p->cols, method);
	/* the method's rate at this matrix's size: a CPU's is not one figure */
	double gflops = mb_profile_ladder_gflops(method == MB_NS_GRAM
							 ? &a->s->prof->ns_gram_gflops
							 : &a->s->prof->ns_standard_gflops,
						 flops);

	return kernel(a->s, K_NS, flops / (1e9 * gflops));
}

/* As mb_step's: pipeline's batch arrived while the previous one computed. */
static void apply_batch(struct apply *a, size_t gi)
{
	struct sim *s = a->s;
	const struct mb_plan_group *g = &s->plan->groups[gi];
	struct unit u = { .first = g->first, .end = g->end };
	size_t k;

	if (!a->prefetch) {
		make_room(a);
		u.computed = gather(a, g);
	} else {
		if (!a->has_arriving)
			arrive(a, g);
		u = a->arriving;
		a->has_arriving = false;
		if (gi + 1 < s->plan->ngroups)
			arrive(a, g + 1);
		else
			make_room(a);
		if (!s->set->writeback_event)
			host_wait(s, u.arrived);
		u.computed = momentum(a, g, s->set->writeback_event ? u.arrived : 0);
	}
	if (a->s->plan->set.stage == 3) /* ZeRO-3's bf16 copy of the batch's grads */
		kernel(a->s, K_MOMENTUM, cast_s(a->s, 6 * (double)g->gathered_numel));
	for (k = g->first; k < g->end; k++)
		u.computed = orthogonalize(a, k);
	push(a, &u);
}

static void apply_subgroup(struct apply *a, const struct mb_plan_group *g)
{
	double e = (double)g->gathered_numel;
	struct unit u;
	size_t k;

	gather(a, g);
	kernel(a->s, K_MOMENTUM, cast_s(a->s, 6 * e)); /* the bf16 copy of the grads */
	for (k = g->first; k < g->end; k++) {
		memset(&u, 0, sizeof(u));
		u.first = k;
		u.end = k + 1;
		make_room(a);
		u.computed = orthogonalize(a, k);
		push(a, &u);
	}
	flush(a);
}

static void apply(struct sim *s)
{
	struct apply a = { .s = s,
			   .overlap = mb_variant_overlaps(s->set->variant),
			   .prefetch = mb_variant_prefetches(s->set->variant) &&
				       mb_plan_batched(&s->plan->set) };
	size_t gi;

	for (gi = 0; gi < s->plan->ngroups; gi++) {
		if (mb_plan_batched(&s->plan->set))
			apply_batch(&a, gi);
		else
			apply_subgroup(&a, &s->plan->groups[gi]);
	}
	flush(&a);
}

/* ---- host optimizer, params back ---- */

static void host_optimizer(struct sim *s, struct mb_phase_times *p)
{
	const struct mb_model *m = s->m;
	double streamed = 8.0 * (double)m->numel_total; /* the unscale-and-clip pass */

	if (s->plan->set.params_back == MB_BACK_PAGEABLE)
		streamed += 6.0 * (double)m->numel_total; /* the host cast to bf16 */
	p->host_opt_s =
		mb_hostopt_bytes(m->numel_muon, m->numel_adamw) / (1e9 * s->prof->host_opt_gbs) +
		streamed / (1e9 * s->prof->memcpy_gbs);
	s->host += p->host_opt_s;
}

static void params_back(struct sim *s)
{
	enqueue(s, COMPUTE, H2D, staging_pageable(s), K_PARAMS_H2D, 2.0 * (double)s->m->numel_total,
		0);
	host_wait(s, s->tail[COMPUTE]);
}

/* ---- the phases, as the run's timeline sums them ---- */

static void phases(const struct sim *s, struct mb_phase_times *p)
{
	size_t i, j = 0, nbusy = 0;
	size_t *busy = NULL;

	for (i = 0; i < s->n; i++) {
		const struct cmd *c = &s->v[i];
		double d = c->end - c->start;

		switch (c->kind) {
		case K_H2D:
			p->h2d_s += d;
			break;
		case K_MOMENTUM:
			p->momentum_s += d;
			break;
		case K_NS:
			p->ns_s += d;
			break;
		case K_D2H:
			p->d2h_s += d;
			break;
		case K_PARAMS_H2D:
			p->params_h2d_s += d;
			break;
		case NONE:
			break;
		}
	}
	/* the compute spans are all on the compute queue: in order, apart */
	busy = malloc((s->n + 1) * sizeof(*busy));
	if (!busy) {
		p->d2h_hidden_s = NAN;
		return;
	}
	for (i = 0; i < s->n; i++)
		if (s->v[i].kind == K_H2D || s->v[i].kind == K_MOMENTUM || s->v[i].kind == K_NS)
			busy[nbusy++] = i;
	for (i = 0; i < s->n; i++) {
		const struct cmd *c = &s->v[i];

		if (c->kind != K_D2H || c->queue == COMPUTE)
			continue;
		while (j < nbusy && s->v[busy[j]].end <= c->start)
			j++;
		for (size_t k = j; k < nbusy && s->v[busy[k]].start < c->end; k++) {
			double lo = fmax(c->start, s->v[busy[k]].start);
			double hi = fmin(c->end, s->v[busy[k]].end);

			if (hi > lo)
				p->d2h_hidden_s += hi - lo;
		}
	}
	free(busy);
}

int mb_predict_step(const struct mb_model *m, const struct mb_plan *plan,
		    const struct mb_step_settings *set, const struct mb_profile *prof,
		    struct mb_step_times *t)
{
	struct sim s = { .prof = prof, .set = set, .plan = plan, .m = m };
	double t0;

	memset(t, 0, sizeof(*t));
	t->grad_norm = t->grad_scale = NAN;
	struct bwd b = { .s = &s,
			 .left = mb_plan_nbuckets(plan, m),
			 .after =
				 mb_plan_reduced_after(plan, m, set->fwd_bwd && plan->set.tokens) };

	fwd_bwd(&s, &b, &t->phase);
	backward(&s, &b, &t->phase);
	t0 = s.host;
	apply(&s);
	t->apply_s = s.host - t0;
	host_optimizer(&s, &t->phase);
	params_back(&s);
	t->iter_s = s.host;
	if (!s.failed)
		phases(&s, &t->phase);
	free(s.v);
	return s.failed ? -MB_EFAIL : 0;
}
