/*
 * mb_step: the state of one rank (host and device buffers) and its step:
 * backward stand-in, Muon apply (synchronous or overlapped writeback),
 * host optimizer, params back; with a timeline of profiling events.
 */
#include "mb_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_clock.h"
#include "mb_err.h"
#include "mb_fwdbwd.h"
#include "mb_num.h"
#include "mb_rng.h"

#define PARAM_SCALE   0.02f
#define GRAD_SCALE    1e-3f
#define STREAM_PARAMS 0
#define STREAM_GRADS  1 /* + the step number */

/* ---- the timeline: the commands' own events, resolved after a step ---- */

/*
 * A span's kind is its phase (mb_phase's table; K_H2D is MB_PHASE_H2D), one
 * timed by device events: its time goes to the phase's field, and an apply
 * phase's span other than the writeback's is compute the writeback may hide
 * behind.
 */
#define KIND_(e, ...) K_##e = MB_PHASE_##e,
enum kind { MB_PHASES(KIND_) K_NKINDS };
#undef KIND_

/* From the START of FIRST to the END of LAST: one command (LAST NULL) or a run of them. */
struct span {
	cl_event first, last;
	enum kind kind;
};

struct timeline {
	struct span *v;
	size_t n, alloc;
};

/* Add a span; it takes over one reference to each event (LAST may be NULL). */
static int tl_add(struct timeline *t, cl_event first, cl_event last, enum kind kind)
{
	struct span *v;

	if (t->n == t->alloc) {
		size_t alloc = t->alloc ? 2 * t->alloc : 256;

		v = realloc(t->v, alloc * sizeof(*v));
		if (!v) {
			clReleaseEvent(first);
			if (last)
				clReleaseEvent(last);
			return mb_fail("out of host memory for %zu profiling events", alloc);
		}
		t->v = v;
		t->alloc = alloc;
	}
	t->v[t->n++] = (struct span){ first, last, kind };
	return 0;
}

static cl_event retain(cl_event e)
{
	clRetainEvent(e);
	return e;
}

static void tl_release(struct timeline *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		clReleaseEvent(t->v[i].first);
		if (t->v[i].last)
			clReleaseEvent(t->v[i].last);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

struct interval {
	double a, b;
};

static int cmp_interval(const void *x, const void *y)
{
	const struct interval *p = x, *q = y;

	return (p->a > q->a) - (p->a < q->a);
}

/*
 * Sum the spans by kind into *p, and how much of the D2H time the compute
 * queue was busy too (the part of the writeback that was hidden). A span
 * whose times the driver does not give makes its phase NaN (n/a), not 0;
 * the first such failure is kept in WHY (LEN bytes).
 */
static int tl_resolve(const struct mb_state *s, struct timeline *t, struct mb_phase_times *p,
		      char *why, size_t len)
{
	struct interval *busy, *d2h;
	size_t i, nb = 0, nd = 0, m = 0, j;
#define SUM_(e, f, ...) &p->f,
	double *sum[K_NKINDS] = { MB_PHASES(SUM_) };
#undef SUM_
	bool overlap_known = true;

	busy = malloc((t->n + 1) * sizeof(*busy));
	d2h = malloc((t->n + 1) * sizeof(*d2h));
	if (!busy || !d2h) {
		free(busy);
		free(d2h);
		return mb_fail("out of host memory resolving %zu profiling events", t->n);
	}
	for (i = 0; i < t->n; i++) {
		struct span *sp = &t->v[i];
		struct interval iv;
		double unused;

		if (mb_cl_event_span(s->cl, sp->first, mb_phases[sp->kind].span, &iv.a, &unused) ||
		    mb_cl_event_span(s->cl, sp->last ? sp->last : sp->first,
				     mb_phases[sp->kind].span, &unused, &iv.b)) {
			if (!why[0])
				snprintf(why, len, "%s", mb_errmsg());
			*sum[sp->kind] = NAN;
			if (mb_phases[sp->kind].apply)
				overlap_known = false;
			continue;
		}
		if (iv.b < iv.a)
			iv.b = iv.a;
		*sum[sp->kind] += iv.b - iv.a;
		if (sp->kind == K_D2H)
			d2h[nd++] = iv;
		else if (mb_phases[sp->kind].apply)
			busy[nb++] = iv;
	}
	/* merge the busy intervals, then intersect each D2H with them */
	qsort(busy, nb, sizeof(*busy), cmp_interval);
	for (i = 0; i < nb; i++) {
		if (m && busy[i].a <= busy[m - 1].b) {
			if (busy[i].b > busy[m - 1].b)
				busy[m - 1].b = busy[i].b;
		} else {
			busy[m++] = busy[i];
		}
	}
	for (i = 0; i < nd; i++)
		for (j = 0; j < m; j++) {
			double a = d2h[i].a > busy[j].a ? d2h[i].a : busy[j].a;
			double b = d2h[i].b < busy[j].b ? d2h[i].b : busy[j].b;

			if (b > a)
				p->d2h_hidden_s += b - a;
		}
	if (!overlap_known)
		p->d2h_hidden_s = NAN;
	free(busy);
	free(d2h);
	return 0;
}

/* ---- state ---- */

static int device_copy(struct mb_state *s, bool to_device, cl_command_queue q, cl_mem dev,
		       uint64_t dev_off, void *host, uint64_t bytes, cl_uint nwait,
		       const cl_event *wait, cl_event *ev, const char *what)
{
	cl_int st;

	if (to_device)
		st = clEnqueueWriteBuffer(q, dev, CL_FALSE, dev_off, bytes, host, nwait, wait, ev);
	else
		st = clEnqueueReadBuffer(q, dev, CL_FALSE, dev_off, bytes, host, nwait, wait, ev);
	return mb_cl_check(s->cl, st, to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer",
			   "%s, %llu bytes", what, (unsigned long long)bytes);
}

/*
 * Copy BYTES between DEV at DEV_OFF and host buffer HB at HOST_OFF on Q: one
 * command per chunk of HB that the range crosses, each waiting on WAIT and
 * timed as KIND on TL (when TL is not NULL). *last (when LAST is not NULL)
 * gets the last command's event, which the caller releases.
 */
static int host_copy(struct mb_state *s, bool to_device, cl_command_queue q, cl_mem dev,
		     uint64_t dev_off, const struct mb_hostbuf *hb, uint64_t host_off,
		     uint64_t bytes, cl_uint nwait, const cl_event *wait, struct timeline *tl,
		     enum kind kind, cl_event *last, const char *what)
{
	uint64_t done, run;
	cl_event ev;
	int err;

	for (done = 0; done < bytes; done += run) {
		void *host = mb_hostbuf_at(hb, host_off + done, &run);

		run = run < bytes - done ? run : bytes - done;
		if ((err = device_copy(s, to_device, q, dev, dev_off + done, host, run, nwait, wait,
				       tl || last ? &ev : NULL, what)))
			return err;
		if (last && done + run == bytes)
			*last = retain(ev);
		if (tl && (err = tl_add(tl, ev, NULL, kind)))
			return err;
		if (!tl && last)
			clReleaseEvent(ev);
	}
	return 0;
}

static int finish(struct mb_state *s, cl_command_queue q)
{
	return mb_cl_check(s->cl, clFinish(q), "clFinish", "%s queue",
			   q == s->cl->copy ? "copy" : "compute");
}

/* The byte offset of Muon parameter I's momentum (fp32 or bf16) in the host buffer. */
static uint64_t mom_byte(const struct mb_state *s, size_t i)
{
	return s->plan.momentum_bytes * s->state_offset[i];
}

/* Element OFF of the fp32 buffer B (its parameter lies within one chunk). */
static float *f32(const struct mb_hostbuf *b, uint64_t off)
{
	return mb_hostbuf_at(b, sizeof(float) * off, NULL);
}

/* The shapes of M's Muon matrices, into *ROWS and *COLS (one allocation, at *ROWS), *N of them. */
static int muon_shapes(const struct mb_model *m, uint64_t **rows, uint64_t **cols, size_t *n)
{
	size_t i;

	*n = 0;
	if (!(*rows = malloc((m->nparams + 1) * 2 * sizeof(**rows))))
		return mb_fail("out of host memory for %zu shapes", m->nparams);
	*cols = *rows + m->nparams + 1;
	for (i = 0; i < m->nparams; i++)
		if (m->params[i].muon) {
			(*rows)[*n] = m->params[i].rows;
			(*cols)[(*n)++] = m->params[i].cols;
		}
	return 0;
}

static int reserve_shapes(struct mb_state *s)
{
	uint64_t *rows, *cols;
	size_t n;
	int err;

	if ((err = muon_shapes(s->model, &rows, &cols, &n)))
		return err;
	/* the standard method until the settings carry one, as mb_plan's count does */
	s->ns.method = s->set.plan.ns_method; /* the plan's, whose workspace the ledger holds */
	s->ns.precision = s->set.plan.ns_precision;
	s->ns.rate_gflops = (double)s->set.plan.ns_rate_gflops;
	err = mb_ns_reserve(&s->ns, rows, cols, n);
	free(rows);
	return err;
}

int mb_step_clblast_bytes(const struct mb_model *m, const struct mb_plan_settings *set,
			  const struct mb_cl *cl, uint64_t *bytes)
{
	uint64_t *rows, *cols;
	size_t n;
	int err;

	*bytes = 0;
	if (set->ns_precision != MB_PREC_FP32 || set->ns_rate_gflops)
		return 0;
	if ((err = muon_shapes(m, &rows, &cols, &n)))
		return err;
	err = mb_ns_temp_bytes(cl, set->ns_method, rows, cols, n, bytes);
	free(rows);
	return err;
}

static void init_params(struct mb_state *s)
{
	const struct mb_model *m = s->model;
	uint64_t seed = s->set.seed;
	size_t i;

#pragma omp parallel private(i)
	for (i = 0; i < m->nparams; i++) {
		uint64_t off = s->offset[i];
		int64_t k, n = (int64_t)mb_param_numel(&m->params[i]);
		uint16_t *staging = mb_hostbuf_at(&s->staging, 2 * off, NULL);
		float *p = f32(&s->master, off);

#pragma omp for schedule(static) nowait
		for (k = 0; k < n; k++) {
			p[k] = PARAM_SCALE * mb_uniform(seed, STREAM_PARAMS, off + (uint64_t)k);
			staging[k] = mb_bf16(p[k]);
		}
	}
}

/* Host buffer B of the plan, pinned or not, in chunks of at most the limit. */
static int alloc_host_buffer(struct mb_state *s, struct mb_hostbuf *hb, enum mb_host_buffer b,
			     uint64_t bytes, bool pinned, const char *what, uint64_t *cuts)
{
	uint64_t limit = s->set.plan.pin_chunk_bytes, most = s->cl->info.max_alloc_bytes;
	size_t n;

	limit = limit && limit < most ? limit : most;
	/* cut even when pageable: a pageable buffer is pinned later in the same chunks */
	n = mb_host_buffer_on_bus(b) ? mb_plan_host_cuts(&s->plan, s->model, b, limit, cuts) : 0;
	return mb_hostbuf_alloc_cut(hb, s->cl, bytes, pinned, what, cuts, n);
}

static int alloc_host(struct mb_state *s)
{
	const struct mb_model *m = s->model;
	bool pin = s->set.pin_memory;
	uint64_t *cuts;
	int err;

	cuts = malloc((m->nparams + 1) * sizeof(*cuts));
	if (!cuts)
		return mb_fail("out of host memory for the chunks of %zu parameters", m->nparams);
	if ((err = alloc_host_buffer(s, &s->master, MB_HOST_MASTER, 4 * m->numel_total, false,
				     "master params", cuts)) ||
	    (err = alloc_host_buffer(s, &s->grads, MB_HOST_GRADS, 4 * m->numel_total, pin, "grads",
				     cuts)) ||
	    (err = alloc_host_buffer(
		     s, &s->momentum, MB_HOST_MOMENTUM, s->plan.momentum_bytes * m->numel_muon,
		     pin && mb_variant_pins(s->set.variant), "Muon momentum", cuts)) ||
	    (err = alloc_host_buffer(s, &s->adam_m, MB_HOST_ADAMW, 4 * m->numel_adamw, false,
				     "AdamW exp_avg", cuts)) ||
	    (err = alloc_host_buffer(s, &s->adam_v, MB_HOST_ADAMW, 4 * m->numel_adamw, false,
				     "AdamW exp_avg_sq", cuts)) ||
	    (err = alloc_host_buffer(s, &s->staging, MB_HOST_STAGING, 2 * m->numel_total,
				     pin && s->set.plan.params_back == MB_BACK_PINNED,
				     "bf16 staging", cuts)) ||
	    (s->plan.host_bytes[MB_HOST_GRADS_BF16] &&
	     (err = alloc_host_buffer(s, &s->grads_bf16, MB_HOST_GRADS_BF16,
				      s->plan.host_bytes[MB_HOST_GRADS_BF16], pin, "bf16 grads",
				      cuts)))) {
		free(cuts);
		return err;
	}
	free(cuts);
	return 0;
}

static int alloc_offsets(struct mb_state *s)
{
	const struct mb_model *m = s->model;
	uint64_t flat = 0, muon = 0, adamw = 0;
	size_t i;

	s->offset = calloc(m->nparams + 1, 2 * sizeof(uint64_t));
	s->spans = calloc(m->nparams + 1, sizeof(*s->spans));
	if (!s->offset || !s->spans)
		return mb_fail("out of host memory for %zu offsets", m->nparams);
	s->state_offset = s->offset + m->nparams + 1;
	for (i = 0; i < m->nparams; i++) {
		uint64_t n = mb_param_numel(&m->params[i]);

		s->offset[i] = flat;
		flat += n;
		if (!m->params[i].muon) {
			s->state_offset[i] = adamw;
			adamw += n;
		}
	}
	/* the momentum in the apply order, so that a batch's is one range */
	for (i = 0; i < s->plan.norder; i++) {
		s->state_offset[s->plan.order[i]] = muon;
		muon += mb_param_numel(&m->params[s->plan.order[i]]);
	}
	return 0;
}

/* The parts of a step whose device buffers are never alive together. */
enum { EPOCH_FWDBWD, EPOCH_BUCKET, EPOCH_APPLY };

/* The backward stand-in's buffers (struct bwd's) in EPOCH, for pieces of PIECE elements. */
static int reserve_bwd(struct mb_state *s, unsigned epoch, uint64_t piece)
{
	const char *knob = "a smaller --reduce-bucket-size needs less";
	const struct mb_plan *p = &s->plan;
	int err;

	if ((p->bucket_bf16_bytes && (err = mb_ledger_reserve(s->ledger, epoch, "bwd.bucket_bf16",
							      p->bucket_bf16_bytes, 1, knob))) ||
	    (err = mb_ledger_reserve(s->ledger, epoch, "bwd.grad_fp32", 4 * piece, 1, knob)) ||
	    (p->set.stage == 3 &&
	     (err = mb_ledger_reserve(s->ledger, epoch, "bwd.grad_bf16", 2 * piece, 1, knob))))
		return err;
	return mb_ledger_reserve(s->ledger, epoch, "bwd.norm", p->norm_bytes, 1, NULL);
}

/*
 * Reserve, from the plan, every device buffer a step allocates, and make
 * the pool: during the steps, nothing is allocated or released on the device.
 */
static int reserve_step(struct mb_state *s)
{
	const struct mb_model *m = s->model;
	const struct mb_plan *p = &s->plan;
	/* computing, writing back, and (pipeline, batched) arriving */
	unsigned alive = mb_variant_alive(s->set.variant) -
			 !mb_plan_batched(&s->set.plan) * mb_variant_prefetches(s->set.variant);
	uint64_t gathered = p->ngroups ? p->groups[p->largest_group].gathered_numel : 0,
		 largest = 0;
	uint64_t nb = mb_plan_nbuckets(p, m), after = mb_plan_reduced_after(p, m, s->set.fwd_bwd);
	size_t i;
	int err;

	for (i = 0; i < m->nparams; i++)
		if (m->params[i].muon && mb_param_numel(&m->params[i]) > largest)
			largest = mb_param_numel(&m->params[i]);
	if (s->set.fwd_bwd &&
	    (err = mb_fwdbwd_reserve(m, s->set.tokens, s->cl, s->ledger, EPOCH_FWDBWD)))
		return err;
	/* buckets reduced during the GEMMs are alive with the forward/backward's buffers */
	if ((after < nb &&
	     (err = reserve_bwd(s, EPOCH_FWDBWD, mb_plan_largest_piece(p, m, after, nb)))) ||
	    (after > 0 &&
	     (err = reserve_bwd(s, EPOCH_BUCKET, mb_plan_largest_piece(p, m, 0, after)))))
		return err;
	if (!mb_plan_batched(&s->set.plan))
		err = mb_ledger_reserve(s->ledger, EPOCH_APPLY, "apply.subgroup",
					mb_plan_subgroup_bytes(p, gathered), 1,
					"a smaller --sub-group-size needs less") ||
				      mb_ledger_reserve(s->ledger, EPOCH_APPLY, "apply.update",
							4 * largest, alive, NULL)
			      ? -MB_EFAIL
			      : 0;
	else
		err = mb_ledger_reserve(s->ledger, EPOCH_APPLY, "apply.batch",
					mb_plan_batch_bytes(p, gathered), alive,
					"a smaller --gather-budget needs less");
	return err ? err : mb_ledger_pool_make(s->ledger);
}

int mb_state_init(struct mb_state *s, const struct mb_model *m, const struct mb_step_settings *set,
		  const struct mb_cl *cl, struct mb_ledger *ledger)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->model = m;
	s->set = *set;
	s->set.plan.world_size = 1;
	s->set.plan.rank = 0;
	s->cl = cl;
	s->ledger = ledger;
	if ((err = mb_plan_build(&s->plan, m, &s->set.plan)) || (err = alloc_offsets(s)) ||
	    (err = alloc_host(s)))
		goto out_release;
	init_params(s);
	if ((err = mb_ledger_alloc(ledger, 2 * m->numel_total, "params.bf16", &s->params)) ||
	    (s->plan.ds_buffer_bytes && (err = mb_ledger_alloc(ledger, s->plan.ds_buffer_bytes,
							       s->plan.ds_buffer, &s->ds_buffer))))
		goto out_release;
	if ((err = host_copy(s, true, cl->compute, s->params, 0, &s->staging, 0, 2 * m->numel_total,
			     0, NULL, NULL, K_PARAMS_H2D, NULL, "initial bf16 params")) ||
	    (err = finish(s, cl->compute)) || (err = mb_ns_init(&s->ns, cl, ledger)) ||
	    (err = reserve_shapes(s)) || (err = reserve_step(s)))
		goto out_release;
	return 0;

out_release:
	mb_state_release(s);
	return err;
}

void mb_state_release(struct mb_state *s)
{
	if (s->cl) {
		clFinish(s->cl->compute);
		clFinish(s->cl->copy);
	}
	mb_ns_release(&s->ns);
	if (s->ledger) {
		mb_ledger_free(s->ledger, s->params);
		mb_ledger_free(s->ledger, s->ds_buffer);
	}
	mb_hostbuf_release(&s->master);
	mb_hostbuf_release(&s->grads);
	mb_hostbuf_release(&s->momentum);
	mb_hostbuf_release(&s->adam_m);
	mb_hostbuf_release(&s->adam_v);
	mb_hostbuf_release(&s->staging);
	mb_hostbuf_release(&s->grads_bf16);
	free(s->offset);
	free(s->spans);
	mb_plan_release(&s->plan);
	memset(s, 0, sizeof(*s));
}

/* ---- backward ---- */

/*
 * The backward stand-in, bucket by bucket: the plan's buckets, each once the
 * backward has made all its grads (mb_plan_bucket_stage), the last bucket
 * first, and each bucket a parameter's piece at a time (mb_plan_next_piece),
 * as DeepSpeed reduces its bucket a parameter at a time. The grads are made
 * on the device in fp32 (FP32, a piece) and rounded into the bf16 reduce
 * bucket: ZeRO-1/2's (BUCKET, allocated in the backward, as
 * stage_1_and_2.py's setup_buckets does), ZeRO-3's resident one
 * (ds_buffer). The gradient norm's partial sums are taken from the bucket,
 * read back at the end of each part and summed in bucket order.
 *
 * ZeRO-1/2, on the compute queue after the GEMMs (DeepSpeed's reduce runs on
 * the backward's own stream there): each piece widened into FP32 and copied
 * out, as copy_grads_in_partition's .to(fp32) and copy to the host. ZeRO-3,
 * on the copy queue (reduce_and_partition_stream, overlap_comm) while the
 * compute queue goes on with the GEMMs: the bucket to the host's bf16 grads;
 * then each piece back (BF16, partition_grads' grad_buffer.to(device)),
 * widened into FP32 and copied out in fp32; the next bucket's fill waits for
 * that last copy, which frees FP32 and the bucket. The buckets that the
 * last GEMMs make wait for the GEMMs' end (mb_plan_reduced_after), as
 * DeepSpeed's epilogue: two parts, each with buffers for its largest piece.
 */
struct bwd {
	struct mb_state *s;
	cl_mem bucket, fp32, bf16, sums; /* NULL: the part's buffers not allocated */
	float *partial;			 /* every bucket's partial sums, on the host */
	uint64_t left;	/* buckets not reduced yet: 0 .. left - 1, the highest next */
	uint64_t after; /* buckets 0 .. after - 1 are reduced after the GEMMs */
	cl_event freed; /* ZeRO-3: the last bucket's fp32 copy out */
};

/* Allocate the buffers of the part that reduces pieces of at most PIECE elements. */
static int bwd_alloc(struct bwd *b, uint64_t piece)
{
	struct mb_state *s = b->s;
	struct mb_ledger *l = s->ledger;
	int err;

	mb_ledger_phase(l, "backward");
	if ((s->plan.bucket_bf16_bytes && (err = mb_ledger_alloc(l, s->plan.bucket_bf16_bytes,
								 "bwd.bucket_bf16", &b->bucket))) ||
	    (err = mb_ledger_alloc(l, 4 * piece, "bwd.grad_fp32", &b->fp32)) ||
	    (s->set.plan.stage == 3 &&
	     (err = mb_ledger_alloc(l, 2 * piece, "bwd.grad_bf16", &b->bf16))))
		return err;
	return mb_ledger_alloc(l, s->plan.norm_bytes, "bwd.norm", &b->sums);
}

static void bwd_free(struct bwd *b)
{
	if (b->freed)
		clReleaseEvent(b->freed);
	b->freed = NULL;
	mb_ledger_free(b->s->ledger, b->sums);
	mb_ledger_free(b->s->ledger, b->bf16);
	mb_ledger_free(b->s->ledger, b->fp32);
	mb_ledger_free(b->s->ledger, b->bucket);
	b->sums = b->bf16 = b->fp32 = b->bucket = NULL;
}

/*
 * The end of a part that reduced buckets [FIRST, END): once the queues are
 * done, its partial sums into the host's, and its buffers freed.
 */
static int bwd_part_end(struct bwd *b, uint64_t first, uint64_t end)
{
	struct mb_state *s = b->s;
	int err;

	if (!b->sums)
		return 0;
	if (!(err = finish(s, s->cl->copy)) && end > first)
		err = mb_cl_check(
			s->cl,
			clEnqueueReadBuffer(s->cl->compute, b->sums, CL_TRUE,
					    sizeof(float) * MB_NS_PARTIALS * first,
					    sizeof(float) * MB_NS_PARTIALS * (end - first),
					    b->partial + MB_NS_PARTIALS * first, 0, NULL, NULL),
			"clEnqueueReadBuffer", "the gradient norm's partial sums");
	if (!err)
		err = finish(s, s->cl->compute);
	bwd_free(b);
	return err;
}

/* Bucket K's grads, made a piece at a time through FP32 into the bf16 BUCKET; the last cast's
 * event into *MADE. */
static int make_bucket(struct bwd *b, uint64_t k, cl_mem bucket, cl_event *made)
{
	struct mb_state *s = b->s;
	uint64_t lo = k * s->plan.bucket_elems;
	struct mb_plan_piece p = { 0 };
	int err = 0;

	while (!err && mb_plan_next_piece(&s->plan, s->model, k, &p)) {
		if (*made)
			clReleaseEvent(*made);
		*made = NULL;
		err = mb_rng_fill(s->cl, b->fp32, 0, p.len, s->set.seed,
				  STREAM_GRADS + s->steps_done, p.off, GRAD_SCALE);
		if (!err)
			err = mb_ns_cast_bf16(&s->ns, b->fp32, 0, bucket, p.off - lo, p.len, made);
	}
	return err;
}

/* Bucket K's pieces on Q: (ZeRO-3: back from the host's bf16 grads,) widened, copied out. */
static int copy_out(struct bwd *b, uint64_t k, cl_command_queue q, cl_mem bucket)
{
	struct mb_state *s = b->s;
	uint64_t lo = k * s->plan.bucket_elems;
	struct mb_plan_piece p = { 0 };
	bool z3 = s->set.plan.stage == 3;
	int err = 0;

	while (!err && mb_plan_next_piece(&s->plan, s->model, k, &p)) {
		if (b->freed)
			clReleaseEvent(b->freed);
		b->freed = NULL;
		if (z3 && (err = host_copy(s, true, q, b->bf16, 0, &s->grads_bf16, 2 * p.off,
					   2 * p.len, 0, NULL, NULL, K_H2D, NULL,
					   "bf16 gradients back to the device")))
			break;
		if (!(err = mb_ns_widen_bf16(&s->ns, q, z3 ? b->bf16 : bucket, z3 ? 0 : p.off - lo,
					     b->fp32, 0, p.len)))
			err = host_copy(s, false, q, b->fp32, 0, &s->grads, 4 * p.off, 4 * p.len, 0,
					NULL, NULL, K_D2H, z3 ? &b->freed : NULL,
					"gradients to the host");
	}
	return err;
}

static int reduce_bucket(struct bwd *b, uint64_t k)
{
	struct mb_state *s = b->s;
	const struct mb_cl *cl = s->cl;
	bool z3 = s->set.plan.stage == 3;
	cl_command_queue q = mb_plan_reduce_overlaps(&s->set.plan) ? cl->copy : cl->compute;
	cl_mem bucket = z3 ? s->ds_buffer : b->bucket;
	uint64_t n = s->model->numel_total, off = k * s->plan.bucket_elems;
	uint64_t len = n - off < s->plan.bucket_elems ? n - off : s->plan.bucket_elems;
	cl_event made = NULL;
	int err;

	if (b->freed) {
		err = mb_cl_check(cl, clEnqueueBarrierWithWaitList(cl->compute, 1, &b->freed, NULL),
				  "clEnqueueBarrierWithWaitList", "gradient bucket %llu",
				  (unsigned long long)k + 1);
		clReleaseEvent(b->freed);
		b->freed = NULL;
		if (err)
			return err;
	}
	err = make_bucket(b, k, bucket, &made);
	/* ZeRO-3: the bucket to the host's bf16 grads, once made (stage3.py's partition_grads) */
	if (!err && z3 &&
	    !(err = mb_cl_check(cl, clFlush(cl->compute), "clFlush", "compute queue")))
		err = host_copy(s, false, q, bucket, 0, &s->grads_bf16, 2 * off, 2 * len,
				made ? 1 : 0, made ? &made : NULL, NULL, K_D2H, NULL,
				"bf16 gradients to the host");
	if (made)
		clReleaseEvent(made);
	if (err ||
	    (err = mb_ns_sumsq_bf16(&s->ns, q, bucket, 0, len, b->sums, k * MB_NS_PARTIALS,
				    NULL)) ||
	    (err = copy_out(b, k, q, bucket)))
		return err;
	return q == cl->copy ? mb_cl_check(cl, clFlush(q), "clFlush", "copy queue") : 0;
}

/* Reduce the buckets the backward has made by STAGE, down to bucket FLOOR. */
static int reduce_down(struct bwd *b, uint64_t floor, unsigned stage)
{
	struct mb_state *s = b->s;
	int err = 0;

	while (b->left > floor && !err &&
	       mb_plan_bucket_stage(&s->plan, s->model, b->left - 1) >= stage) {
		if (!b->sums &&
		    (err = bwd_alloc(b, mb_plan_largest_piece(&s->plan, s->model, floor, b->left))))
			break;
		b->left--;
		err = reduce_bucket(b, b->left);
	}
	return err;
}

/* The hook: the GEMMs have made every grad of stage STAGE and above. */
static int stage_done(void *arg, unsigned stage)
{
	struct bwd *b = arg;

	return reduce_down(b, b->after, stage);
}

/*
 * The rest once the GEMMs are done: the end of the part during them, the
 * buckets left, then the gradient norm into *norm.
 */
static int backward_end(struct bwd *b, double *norm)
{
	struct mb_state *s = b->s;
	uint64_t k = mb_plan_nbuckets(&s->plan, s->model), i;
	double sum = 0;
	int err;

	if (!(err = bwd_part_end(b, b->after, k)) && !(err = reduce_down(b, 0, 0)))
		err = bwd_part_end(b, 0, b->after);
	for (i = 0; i < MB_NS_PARTIALS * k && !err; i++)
		sum += b->partial[i];
	*norm = sqrt(sum);
	return err;
}

/*
 * The synthetic forward/backward (with the settings' fwd_bwd) and the
 * backward stand-in: ZeRO-3's buckets reduced during the backward's GEMMs
 * (mb_plan_reduce_overlaps) but for the last ones, ZeRO-1/2's after them.
 * The times into T.
 */
static int backward(struct mb_state *s, struct mb_step_times *t)
{
	uint64_t k = mb_plan_nbuckets(&s->plan, s->model);
	struct bwd b = { .s = s,
			 .left = k,
			 .after = mb_plan_reduced_after(&s->plan, s->model, s->set.fwd_bwd) };
	struct mb_fwdbwd_hook hook = { stage_done, &b };
	double t1;
	int err = 0;

	b.partial = malloc(s->plan.norm_bytes);
	if (!b.partial)
		return mb_fail("out of host memory for %llu partial sums",
			       (unsigned long long)(MB_NS_PARTIALS * k));
	if (s->set.fwd_bwd)
		err = mb_fwdbwd_run(s->model, s->set.tokens, s->cl, s->ledger,
				    b.after < k ? &hook : NULL, &t->phase.forward_s,
				    &t->phase.backward_s);
	t1 = mb_now_s();
	if (!err)
		err = backward_end(&b, &t->grad_norm);
	t->phase.backward_s += mb_now_s() - t1;
	if (err) {
		clFinish(s->cl->compute);
		clFinish(s->cl->copy);
	}
	bwd_free(&b);
	free(b.partial);
	return err;
}

/* ---- the Muon apply ---- */

/* What one batch (ZeRO-1/2) or one matrix (ZeRO-3) writes back, and frees after. */
struct unit {
	cl_mem buf;		  /* freed once the writeback is done */
	cl_event arrived;	  /* pipeline: the marker after its gather on the prefetch queue */
	cl_event computed;	  /* its last compute command */
	cl_event written;	  /* its last read */
	cl_mem grad_src, mom_src; /* updates from grad_src at 0, momentum from mom_src */
	uint64_t mom_at;	  /* the momentum's byte offset in mom_src */
	size_t first, end;	  /* its parameters: the plan's order[first..end) */
};

struct apply {
	struct mb_state *s;
	struct timeline tl;
	bool overlap;
	bool prefetch;		       /* the next batch arrives on the prefetch queue */
	struct unit pending, inflight; /* computing, writing back */
	struct unit arriving;	       /* pipeline: the next batch, its gather enqueued */
	bool has_pending, has_inflight, has_arriving;
	cl_mem subgroup;
};

/* The parameter at place K of the apply order. */
static const struct mb_param *applied(const struct mb_state *s, size_t k)
{
	return &s->model->params[s->plan.order[k]];
}

/* Enqueue the reads of U on Q: each update into the grads, the momentum after. */
static int writeback(struct apply *a, struct unit *u, cl_command_queue q)
{
	struct mb_state *s = a->s;
	bool event_dep = s->set.writeback_event && q != s->cl->compute && u->computed;
	uint64_t lo = 0, n;
	size_t k;
	cl_event ev;
	int err;

	if (q != s->cl->compute && !event_dep && u->computed &&
	    (err = mb_cl_check(s->cl, clWaitForEvents(1, &u->computed), "clWaitForEvents",
			       "the compute of '%s' and %zu more", applied(s, u->first)->name,
			       u->end - u->first - 1)))
		return err;
	/* another queue may wait on the compute's event only once it has been submitted */
	if (event_dep &&
	    (err = mb_cl_check(s->cl, clFlush(s->cl->compute), "clFlush", "compute queue")))
		return err;
	for (k = u->first; k < u->end; k++) {
		n = mb_param_numel(applied(s, k));
		if ((err = device_copy(s, false, q, u->grad_src, 4 * lo,
				       f32(&s->grads, s->offset[s->plan.order[k]]), 4 * n,
				       event_dep, event_dep ? &u->computed : NULL, &ev,
				       applied(s, k)->name)) ||
		    (err = tl_add(&a->tl, ev, NULL, K_D2H)))
			return err;
		lo += n;
	}
	/* the momentum is laid out in the apply order: one range */
	if ((err = host_copy(s, false, q, u->mom_src, u->mom_at, &s->momentum,
			     mom_byte(s, s->plan.order[u->first]), s->plan.momentum_bytes * lo,
			     event_dep, event_dep ? &u->computed : NULL, &a->tl, K_D2H, &u->written,
			     "momentum to the host")))
		return err;
	return mb_cl_check(s->cl, clFlush(q), "clFlush", "writeback queue");
}

/* Wait for U's writeback and free its buffer. */
static int drain(struct apply *a, struct unit *u)
{
	int err = 0;

	if (u->written)
		err = mb_cl_check(a->s->cl, clWaitForEvents(1, &u->written), "clWaitForEvents",
				  "the writeback of '%s' and %zu more",
				  applied(a->s, u->first)->name, u->end - u->first - 1);
	if (u->written)
		clReleaseEvent(u->written);
	if (u->arrived)
		clReleaseEvent(u->arrived);
	if (u->computed)
		clReleaseEvent(u->computed);
	mb_ledger_free(a->s->ledger, u->buf);
	memset(u, 0, sizeof(*u));
	return err;
}

/* Before a unit's buffer is allocated: the one two back must be gone. */
static int make_room(struct apply *a)
{
	if (!a->has_inflight)
		return 0;
	a->has_inflight = false;
	return drain(a, &a->inflight);
}

/* A unit has been queued: write it back now, or the previous one on the copy queue. */
static int push(struct apply *a, struct unit *u)
{
	int err;

	if (!a->overlap) {
		err = writeback(a, u, a->s->cl->compute);
		return drain(a, u) ? -MB_EFAIL : err;
	}
	/* the apply owns both units before anything can fail: abort_apply frees them */
	a->inflight = a->pending;
	a->has_inflight = a->has_pending;
	a->pending = *u;
	a->has_pending = true;
	memset(u, 0, sizeof(*u));
	return a->has_inflight ? writeback(a, &a->inflight, a->s->cl->copy) : 0;
}

/* Drain everything: the host may read the buffers after this. */
static int flush(struct apply *a)
{
	int err;

	if ((err = make_room(a)))
		return err;
	if (!a->has_pending)
		return 0;
	a->has_pending = false;
	err = writeback(a, &a->pending, a->s->cl->copy);
	return drain(a, &a->pending) && !err ? -MB_EFAIL : err;
}

/* After a failure: stop the queues and free whatever is still alive. */
static void abort_apply(struct apply *a)
{
	clFinish(a->s->cl->compute);
	clFinish(a->s->cl->copy);
	clFinish(a->s->cl->prefetch);
	if (a->has_arriving)
		drain(a, &a->arriving);
	if (a->has_inflight)
		drain(a, &a->inflight);
	if (a->has_pending)
		drain(a, &a->pending);
	a->has_inflight = a->has_pending = a->has_arriving = false;
	mb_ledger_free(a->s->ledger, a->subgroup);
	a->subgroup = NULL;
}

/*
 * Gather group G's Muon grads (fp32) to BUF's first 4E bytes and momentum
 * after them, then momentum and Nesterov over all of it. *last is the momentum kernel's event
 * (NULL when the group has no Muon element).
 */
/*
 * The momentum of G to BUF, after its E fp32 grads. ZeRO-3's first step
 * copies none: DeepSpeed's _apply_muon_updates_cpu_offload creates that
 * momentum as zeros on the device (the host's is zero as well).
 */
static int momentum_in(struct apply *a, const struct mb_plan_group *g, cl_mem buf,
		       cl_command_queue q)
{
	struct mb_state *s = a->s;
	uint64_t e = g->gathered_numel;

	if (s->set.plan.stage == 3 && !s->steps_done)
		return mb_cl_zero(s->cl, q, buf, 4 * e, s->plan.momentum_bytes * e,
				  "the first step's momentum");
	return host_copy(s, true, q, buf, 4 * e, &s->momentum, mom_byte(s, s->plan.order[g->first]),
			 s->plan.momentum_bytes * e, 0, NULL, &a->tl, K_H2D, NULL,
			 "momentum to the device");
}

/* G's fp32 grads to BUF's first 4E bytes and its momentum after them, on Q. */
static int copy_in(struct apply *a, const struct mb_plan_group *g, cl_mem buf, cl_command_queue q)
{
	struct mb_state *s = a->s;
	uint64_t lo = 0, n;
	cl_event ev;
	size_t k;
	int err = 0;

	/* each copy timed by its own event: the H2D time is transfer time only */
	for (k = g->first; k < g->end && !err; k++) {
		n = mb_param_numel(applied(s, k));
		if (!(err = device_copy(s, true, q, buf, 4 * lo,
					f32(&s->grads, s->offset[s->plan.order[k]]), 4 * n, 0, NULL,
					&ev, applied(s, k)->name)))
			err = tl_add(&a->tl, ev, NULL, K_H2D);
		lo += n;
	}
	if (err || g->first == g->end)
		return err;
	return momentum_in(a, g, buf, q);
}

/*
 * Momentum and Nesterov over G's gathered grads and momentum in BUF. *last is
 * the momentum kernel's event (NULL when the group has no Muon element).
 */
static int momentum(struct apply *a, const struct mb_plan_group *g, cl_mem buf, cl_event *last)
{
	struct mb_state *s = a->s;
	uint64_t e = g->gathered_numel;
	cl_event first = NULL;
	int err;

	*last = NULL;
	if (g->first == g->end)
		return 0;
	if ((err = s->set.plan.momentum_dtype == MB_MOM_BF16
			   ? mb_ns_momentum_bf16(&s->ns, buf, 0, buf, 2 * e, e,
						 s->set.optim.muon_beta, &first, last)
			   : mb_ns_momentum(&s->ns, buf, 0, buf, e, e, s->set.optim.muon_beta,
					    &first, last)))
		return err;
	if (!first) /* nothing to do: no Muon element */
		return 0;
	if ((err = tl_add(&a->tl, first, retain(*last), K_MOMENTUM))) {
		clReleaseEvent(*last);
		*last = NULL;
	}
	return err;
}

/* Gather group G to BUF on the compute queue, then its momentum: *last as momentum's. */
static int gather(struct apply *a, const struct mb_plan_group *g, cl_mem buf, cl_event *last)
{
	int err;

	*last = NULL;
	return (err = copy_in(a, g, buf, a->s->cl->compute)) ? err : momentum(a, g, buf, last);
}

/*
 * Newton-Schulz on the parameter at place K of the apply order, from IN at
 * IN_OFF to OUT at OUT_OFF, timed from its first command to its last;
 * *after is the last (the caller owns it).
 */
static int orthogonalize(struct apply *a, size_t k, cl_mem in, uint64_t in_off, cl_mem out,
			 uint64_t out_off, cl_event *after)
{
	const struct mb_param *p = applied(a->s, k);
	cl_event first = NULL;
	int err;

	*after = NULL;
	if ((err = mb_ns_orthogonalize(&a->s->ns, in, in_off, p->rows, p->cols, out, out_off,
				       &first, after)))
		return err;
	if ((err = tl_add(&a->tl, first, retain(*after), K_NS))) {
		clReleaseEvent(*after);
		*after = NULL;
	}
	return err;
}

/*
 * ZeRO-3's bf16 copy of G's grads in BUF, after their momentum: what
 * DeepSpeed's all-gather of the grads makes with one rank. Timed with the
 * momentum, the other elementwise work of the gather.
 */
static int grads_bf16(struct apply *a, const struct mb_plan_group *g, cl_mem buf)
{
	struct mb_state *s = a->s;
	uint64_t e = g->gathered_numel;
	cl_event cast;
	int err;

	if ((err = mb_ns_cast_bf16(&s->ns, buf, 0, buf, (4 * e + s->plan.momentum_bytes * e) / 2, e,
				   &cast)))
		return err;
	return cast ? tl_add(&a->tl, cast, NULL, K_MOMENTUM) : 0;
}

/* A batch's buffer, after the one two back is gone: *U owns it. */
static int batch_buffer(struct apply *a, const struct mb_plan_group *g, struct unit *u)
{
	int err;

	memset(u, 0, sizeof(*u));
	u->first = g->first;
	u->end = g->end;
	if ((err = make_room(a)) ||
	    (err = mb_ledger_alloc(a->s->ledger,
				   mb_plan_batch_bytes(&a->s->plan, g->gathered_numel),
				   "apply.batch", &u->buf)))
		return err;
	u->grad_src = u->mom_src = u->buf;
	u->mom_at = 4 * g->gathered_numel;
	return 0;
}

/*
 * Pipeline: batch G's gather on the prefetch queue, into a->arriving, ended
 * by a marker that its compute waits on (on the host, or with
 * --writeback-dep event in the compute queue).
 */
static int arrive(struct apply *a, const struct mb_plan_group *g)
{
	struct mb_state *s = a->s;
	int err;

	if ((err = batch_buffer(a, g, &a->arriving)))
		return err;
	a->has_arriving = true;
	if ((err = copy_in(a, g, a->arriving.buf, s->cl->prefetch)) ||
	    (err = mb_cl_check(s->cl,
			       clEnqueueMarkerWithWaitList(s->cl->prefetch, 0, NULL,
							   &a->arriving.arrived),
			       "clEnqueueMarkerWithWaitList", "the gather of '%s' and %zu more",
			       applied(s, g->first)->name, g->end - g->first - 1)))
		return err;
	return mb_cl_check(s->cl, clFlush(s->cl->prefetch), "clFlush", "prefetch queue");
}

/* The compute of U waits for its gather, which arrived on the prefetch queue. */
static int await_arrival(struct apply *a, struct unit *u)
{
	const struct mb_cl *cl = a->s->cl;

	if (!u->arrived)
		return 0;
	if (a->s->set.writeback_event)
		return mb_cl_check(cl,
				   clEnqueueBarrierWithWaitList(cl->compute, 1, &u->arrived, NULL),
				   "clEnqueueBarrierWithWaitList",
				   "the gather of '%s' and %zu more", applied(a->s, u->first)->name,
				   u->end - u->first - 1);
	return mb_cl_check(cl, clWaitForEvents(1, &u->arrived), "clWaitForEvents",
			   "the gather of '%s' and %zu more", applied(a->s, u->first)->name,
			   u->end - u->first - 1);
}

/*
 * Batch GI: gathered now on the compute queue, or (pipeline) arrived on the
 * prefetch queue while the previous batch computed; then, before its own
 * compute, the next batch's gather is enqueued.
 */
static int apply_batch(struct apply *a, size_t gi)
{
	struct mb_state *s = a->s;
	const struct mb_plan_group *g = &s->plan.groups[gi];
	struct unit u;
	uint64_t lo = 0;
	cl_event after = NULL;
	size_t k;
	int err;

	if (!a->prefetch) {
		if ((err = batch_buffer(a, g, &u)))
			return err;
		err = gather(a, g, u.buf, &u.computed);
	} else {
		if (!a->has_arriving && (err = arrive(a, g)))
			return err;
		u = a->arriving;
		a->has_arriving = false;
		memset(&a->arriving, 0, sizeof(a->arriving));
		/* the last batch has no next one, but push needs the one two back gone */
		err = gi + 1 < s->plan.ngroups ? arrive(a, g + 1) : make_room(a);
		if (!err && !(err = await_arrival(a, &u)))
			err = momentum(a, g, u.buf, &u.computed);
	}
	if (!err && s->set.plan.stage == 3)
		err = grads_bf16(a, g, u.buf);
	for (k = g->first; k < g->end && !err; k++) {
		err = orthogonalize(a, k, u.buf, lo, u.buf, lo, &after);
		if (!err) {
			if (u.computed)
				clReleaseEvent(u.computed);
			u.computed = after;
		}
		lo += mb_param_numel(applied(s, k));
	}
	if (err) {
		drain(a, &u);
		return err;
	}
	return push(a, &u);
}

static int apply_subgroup(struct apply *a, const struct mb_plan_group *g)
{
	struct mb_state *s = a->s;
	uint64_t lo = 0, n;
	cl_event gathered;
	struct unit u;
	size_t k;
	int err;

	uint64_t e = g->gathered_numel;

	if ((err = mb_ledger_alloc(s->ledger, mb_plan_subgroup_bytes(&s->plan, e), "apply.subgroup",
				   &a->subgroup)) ||
	    (err = gather(a, g, a->subgroup, &gathered)))
		return err;
	if (gathered)
		clReleaseEvent(gathered);
	if ((err = grads_bf16(a, g, a->subgroup)))
		return err;
	for (k = g->first; k < g->end; k++) {
		n = mb_param_numel(applied(s, k));
		memset(&u, 0, sizeof(u));
		u.first = k;
		u.end = k + 1;
		if ((err = make_room(a)) ||
		    (err = mb_ledger_alloc(s->ledger, 4 * n, "apply.update", &u.buf)))
			return err;
		u.grad_src = u.buf;
		u.mom_src = a->subgroup;
		u.mom_at = 4 * g->gathered_numel + s->plan.momentum_bytes * lo;
		if ((err = orthogonalize(a, k, a->subgroup, lo, u.buf, 0, &u.computed))) {
			drain(a, &u);
			return err;
		}
		if ((err = push(a, &u)))
			return err;
		lo += n;
	}
	if ((err = flush(a)))
		return err;
	mb_ledger_free(s->ledger, a->subgroup);
	a->subgroup = NULL;
	return 0;
}

/* Say which batch or sub-group failed and what to change. */
static void explain(const struct mb_state *s, size_t gi)
{
	const struct mb_plan_group *g = &s->plan.groups[gi];
	bool memory = mb_err_kind() == MB_KIND_DEVICE_MEMORY;
	char size[32];

	/* an overlapped writeback that fails here may be the previous unit's: the
	 * message names the parameter it was copying */
	mb_fmt_bytes_iec(size, sizeof(size), mb_plan_batch_bytes(&s->plan, g->gathered_numel));
	if (!mb_plan_batched(&s->set.plan))
		mb_err_prefix("sub-group %zu of %zu (%zu matrices, %s gathered%s)", gi + 1,
			      s->plan.ngroups, g->matrices, size,
			      memory ? "; a smaller --sub-group-size needs less" : "");
	else
		mb_err_prefix("batch %zu of %zu (%zu matrices, %s%s)", gi + 1, s->plan.ngroups,
			      g->matrices, size,
			      memory ? "; a smaller --gather-budget needs less" : "");
}

static int apply(struct mb_state *s, struct timeline *tl)
{
	struct apply a = { .s = s,
			   .overlap = mb_variant_overlaps(s->set.variant),
			   .prefetch = mb_variant_prefetches(s->set.variant) &&
				       mb_plan_batched(&s->set.plan) };
	size_t gi;
	int err = 0;

	/* a checkpoint load left the momentum pageable: the pin variants re-pin it */
	if (s->set.pin_memory && mb_variant_pins(s->set.variant) && !s->momentum.pinned &&
	    (err = mb_hostbuf_move(&s->momentum, true)))
		return err;
	a.tl = *tl;
	for (gi = 0; gi < s->plan.ngroups && !err; gi++) {
		err = mb_plan_batched(&s->set.plan) ? apply_batch(&a, gi)
						    : apply_subgroup(&a, &s->plan.groups[gi]);
		if (err)
			explain(s, gi);
	}
	if (!err)
		err = flush(&a);
	if (err)
		abort_apply(&a);
	*tl = a.tl;
	return err;
}

/* ---- host optimizer and params back ---- */

/*
 * DeepSpeed's unscale_and_clip_grads: with clipping C > 0, the scale is
 * 1 / max(1, (NORM + 1e-6) / C) (bf16 training: no loss scale); 1 without.
 */
static double clip_scale(double norm, double clip)
{
	double c = clip > 0 ? (norm + 1e-6) / clip : 1.0;

	return c > 1.0 ? 1.0 / c : 1.0;
}

static void host_step(struct mb_state *s, const struct mb_model *m)
{
	bool cast = s->set.plan.params_back == MB_BACK_PAGEABLE;
	size_t i;

	for (i = 0; i < m->nparams; i++) {
		uint64_t off = s->offset[i], so = s->state_offset[i];
		uint64_t n = mb_param_numel(&m->params[i]);
		/* params back pageable: no bf16 in the optimizer's pass, a cast after */
		uint16_t *staging = cast ? NULL : mb_hostbuf_at(&s->staging, 2 * off, NULL);

		if (m->params[i].muon)
			mb_hostopt_muon(f32(&s->master, off), f32(&s->grads, off), staging, n,
					&s->set.optim);
		else
			mb_hostopt_adamw(f32(&s->master, off), f32(&s->grads, off),
					 f32(&s->adam_m, so), f32(&s->adam_v, so), staging, n,
					 s->steps_done + 1, &s->set.optim);
	}
	if (!cast)
		return;
		/* the host cast of ZeRO-3's copy_ from the fp32 params to the bf16 device params */
#pragma omp barrier
	for (i = 0; i < m->nparams; i++)
		mb_hostopt_cast(f32(&s->master, s->offset[i]),
				mb_hostbuf_at(&s->staging, 2 * s->offset[i], NULL),
				mb_param_numel(&m->params[i]));
}

static void host_optimizer(struct mb_state *s, float scale)
{
	const struct mb_model *m = s->model;
	size_t c;

	/* one parallel region for the whole step: each call shares out its elements */
#pragma omp parallel private(c)
	{
		/* the unscale-and-clip pass over the whole fp32 grad buffer, every step as
		 * DeepSpeed's: the Muon part holds the updates by now, and is scaled too */
		for (c = 0; c < s->grads.nchunks; c++) {
			float *g = s->grads.chunks[c].ptr;
			int64_t k, n = (int64_t)(s->grads.chunks[c].bytes / sizeof(float));

#pragma omp for schedule(static)
			for (k = 0; k < n; k++)
				g[k] *= scale;
		}
		host_step(s, m);
	}
}

static int params_back(struct mb_state *s, struct timeline *tl)
{
	int err;

	if ((err = host_copy(s, true, s->cl->compute, s->params, 0, &s->staging, 0,
			     2 * s->model->numel_total, 0, NULL, tl, K_PARAMS_H2D, NULL,
			     "bf16 params to the device")))
		return err;
	return finish(s, s->cl->compute);
}

int mb_step(struct mb_state *s, struct mb_step_times *t)
{
	struct timeline tl = { 0 };
	double t0 = mb_now_s(), t1;
	int err;

	memset(t, 0, sizeof(*t));
	if ((err = backward(s, t)))
		goto out;
	t->grad_scale = clip_scale(t->grad_norm, s->set.grad_clip);
	t1 = mb_now_s();
	mb_ledger_phase(s->ledger, "step");
	if ((err = apply(s, &tl)))
		goto out;
	t->apply_s = mb_now_s() - t1;
	t1 = mb_now_s();
	host_optimizer(s, (float)t->grad_scale);
	t->phase.host_opt_s = mb_now_s() - t1;
	if ((err = params_back(s, &tl)))
		goto out;
	t->iter_s = mb_now_s() - t0;
	err = tl_resolve(s, &tl, &t->phase, t->timing_error, sizeof(t->timing_error));
	s->steps_done++;
out:
	tl_release(&tl);
	return err;
}

/* ---- checkpoint, checksum ---- */

static int save_load(struct mb_hostbuf *b, FILE *f, bool save)
{
	size_t i, done;

	for (i = 0; i < b->nchunks; i++) {
		struct mb_hostchunk *c = &b->chunks[i];

		done = save ? fwrite(c->ptr, 1, c->bytes, f) : fread(c->ptr, 1, c->bytes, f);
		if (done != c->bytes)
			return mb_fail("cannot %s the checkpoint of '%s' (%llu bytes)",
				       save ? "write" : "read", b->what,
				       (unsigned long long)b->bytes);
	}
	return 0;
}

int mb_state_reload(struct mb_state *s)
{
	struct mb_hostbuf *bufs[] = { &s->master, &s->momentum, &s->adam_m, &s->adam_v };
	const char *dir = getenv("TMPDIR");
	char path[4096];
	size_t i;
	FILE *f;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/muonbench-checkpoint-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return mb_fail("cannot create a checkpoint file in '%s'",
			       dir && *dir ? dir : "/tmp");
	}
	unlink(path); /* gone when closed, whatever happens */
	for (i = 0; i < 4 && !err; i++)
		err = save_load(bufs[i], f, true);
	if (!err && fflush(f))
		err = mb_fail("cannot write the checkpoint file");
	rewind(f);
	for (i = 0; i < 4 && !err; i++) {
		struct mb_hostbuf fresh;

		/* a load makes new pageable tensors, as PyTorch's does */
		if ((err = mb_hostbuf_alloc_cut(&fresh, s->cl, bufs[i]->bytes, false, bufs[i]->what,
						bufs[i]->cuts, bufs[i]->ncuts)))
			break;
		mb_hostbuf_release(bufs[i]);
		*bufs[i] = fresh;
		err = save_load(bufs[i], f, false);
	}
	fclose(f);
	return err;
}

uint64_t mb_state_checksum(struct mb_state *s)
{
	const struct mb_model *m = s->model;
	size_t i, n = 0;

	/* the momentum in model order, whatever its layout: the same state, the same sum */
	for (i = 0; i < m->nparams; i++)
		if (m->params[i].muon)
			s->spans[n++] =
				(struct mb_span){ mb_hostbuf_at(&s->momentum, mom_byte(s, i), NULL),
						  s->plan.momentum_bytes *
							  mb_param_numel(&m->params[i]) };
	return mb_hostbuf_checksum(&s->master, mb_checksum_spans(s->spans, n, 0));
}

uint64_t mb_state_pinned_bytes(const struct mb_state *s)
{
	const struct mb_hostbuf *bufs[] = { &s->master, &s->grads,   &s->momentum,  &s->adam_m,
					    &s->adam_v, &s->staging, &s->grads_bf16 };
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (bufs[i]->pinned)
			sum += bufs[i]->bytes;
	return sum;
}
