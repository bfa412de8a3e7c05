/*
 * mb_sched: the step's schedule on an engine (see mb_sched.h), as
 * DeepSpeed's code runs it (docs/design.md): the backward stand-in's buckets,
 * the Muon apply by batches or sub-groups, the host's pass, the params back.
 */
#include "mb_sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_hostopt.h"
#include "mb_ns.h"
#include "mb_num.h"
#include "mb_timeline.h"

/* Whether the test's ordering bug X is planted (enum mb_plant). */
#define PLANTED(s, x) ((s)->set->plant == MB_PLANT_##x)

#define GRAD_SCALE   1e-3f
#define STREAM_GRADS 1 /* + the step number; the params are stream 0 (mb_step) */

int mb_sched_offsets(const struct mb_model *m, const struct mb_plan *plan, uint64_t **offset)
{
	uint64_t flat = 0, muon = 0, adamw = 0, *off, *state;
	size_t i;

	if (!(*offset = off = calloc(m->nparams + 1, 2 * sizeof(uint64_t))))
		return mb_fail("out of host memory for %zu offsets", m->nparams);
	state = off + m->nparams + 1;
	for (i = 0; i < m->nparams; i++) {
		uint64_t n = mb_param_numel(&m->params[i]);

		off[i] = flat;
		flat += n;
		if (!m->params[i].muon) {
			state[i] = adamw;
			adamw += n;
		}
	}
	/* the momentum in the apply order, so that a batch's is one range */
	for (i = 0; i < plan->norder; i++) {
		state[plan->order[i]] = muon;
		muon += mb_param_numel(&m->params[plan->order[i]]);
	}
	return 0;
}

bool mb_sched_pinned(const struct mb_step_settings *set, enum mb_host_buffer b)
{
	switch (b) {
	case MB_HOST_GRADS:
	case MB_HOST_GRADS_BF16:
		return set->pin_memory;
	case MB_HOST_MOMENTUM:
		return set->pin_memory && mb_variant_pins(set->variant);
	case MB_HOST_STAGING:
		return set->pin_memory && set->plan.params_back == MB_BACK_PINNED;
	default:
		return false;
	}
}

/* The parameter at place K of the apply order. */
static const struct mb_param *applied(const struct mb_sched *s, size_t k)
{
	return &s->model->params[s->plan->order[k]];
}

/* The byte offset of Muon parameter I's momentum (fp32 or bf16) in the host buffer. */
static uint64_t mom_byte(const struct mb_sched *s, size_t i)
{
	return s->plan->momentum_bytes * s->state_offset[i];
}

/*
 * The step's part in a collective over the ranks' GPUs (DeepSpeed's NCCL
 * reduce-scatter of a gradient bucket, all-gather of the params): BYTES of
 * this rank's share, sent and received once for each other rank (a ring's
 * traffic), on Q after AFTER. It crosses no host, so the OpenCL engine does
 * not replay it and the model times it only from a link rate it is given.
 */
static int collective(struct mb_sched *s, enum mb_queue q, uint64_t bytes, mb_event after)
{
	struct mb_work w = { .kind = MB_WORK_COLLECTIVE,
			     .queue = q,
			     .n = bytes * (s->set->ranks - 1),
			     .after = after,
			     .phase = MB_NPHASES };

	return s->set->ranks > 1 ? mb_engine_work(s->engine, &w, NULL) : 0;
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
	struct mb_sched *s;
	mb_devbuf bucket, fp32, bf16, sums; /* NULL: the part's buffers not allocated */
	float *partial;			    /* every bucket's partial sums, on the host */
	uint64_t left;	/* buckets not reduced yet: 0 .. left - 1, the highest next */
	uint64_t after; /* buckets 0 .. after - 1 are reduced after the GEMMs */
	mb_event freed; /* ZeRO-3: the last bucket's fp32 copy out */
};

/* Allocate the buffers of the part that reduces pieces of at most PIECE elements. */
static int bwd_alloc(struct bwd *b, uint64_t piece)
{
	struct mb_sched *s = b->s;
	struct mb_engine *e = s->engine;
	int err;

	mb_engine_phase(e, "backward");
	if ((s->plan->bucket_bf16_bytes &&
	     (err = mb_engine_alloc(e, s->plan->bucket_bf16_bytes, "bwd.bucket_bf16",
				    &b->bucket))) ||
	    (err = mb_engine_alloc(e, 4 * piece, "bwd.grad_fp32", &b->fp32)) ||
	    (s->set->plan.stage == 3 &&
	     (err = mb_engine_alloc(e, 2 * piece, "bwd.grad_bf16", &b->bf16))))
		return err;
	return mb_engine_alloc(e, s->plan->norm_bytes, "bwd.norm", &b->sums);
}

static int bwd_free(struct bwd *b)
{
	struct mb_engine *e = b->s->engine;
	int err = 0, e1 = mb_engine_free(e, b->sums), e2 = mb_engine_free(e, b->bf16),
	    e3 = mb_engine_free(e, b->fp32), e4 = mb_engine_free(e, b->bucket);

	b->freed = 0;
	b->sums = b->bf16 = b->fp32 = b->bucket = NULL;
	if (e1 || e2 || e3 || e4)
		err = -MB_EFAIL;
	return err;
}

/*
 * The end of a part that reduced buckets [FIRST, END): once the queues are
 * done, its partial sums into the host's, and its buffers freed.
 */
static int bwd_part_end(struct bwd *b, uint64_t first, uint64_t end)
{
	struct mb_engine *e = b->s->engine;
	int err = 0;

	if (!b->sums)
		return 0;
	if (!PLANTED(b->s, SUMS_EARLY))
		err = mb_engine_finish(e, MB_QUEUE_COPY);
	if (!err && end > first)
		err = mb_engine_read(e, MB_QUEUE_COMPUTE, b->sums,
				     sizeof(float) * MB_NS_PARTIALS * first,
				     sizeof(float) * MB_NS_PARTIALS * (end - first),
				     b->partial + MB_NS_PARTIALS * first);
	if (!err && PLANTED(b->s, SUMS_EARLY))
		err = mb_engine_finish(e, MB_QUEUE_COPY);
	if (!err)
		err = mb_engine_finish(e, MB_QUEUE_COMPUTE);
	return bwd_free(b) && !err ? -MB_EFAIL : err;
}

/* Bucket K's grads, made a piece at a time through FP32 into BUCKET; the last cast into *MADE. */
static int make_bucket(struct bwd *b, uint64_t k, mb_devbuf bucket, mb_event *made)
{
	struct mb_sched *s = b->s;
	uint64_t lo = k * s->plan->bucket_elems;
	struct mb_plan_piece p = { 0 };
	int err = 0;

	while (!err && mb_plan_next_piece(s->plan, s->model, k, &p)) {
		struct mb_work fill = { .kind = MB_WORK_GRADS,
					.out = b->fp32,
					.n = p.len,
					.seed = s->set->seed,
					.stream = STREAM_GRADS + s->steps_done,
					.first = p.off,
					.scale = GRAD_SCALE,
					.phase = MB_NPHASES };
		struct mb_work cast = { .kind = MB_WORK_CAST,
					.in = b->fp32,
					.out = bucket,
					.out_off = p.off - lo,
					.n = p.len,
					.phase = MB_NPHASES };

		if (!(err = mb_engine_work(s->engine, &fill, NULL)))
			err = mb_engine_work(s->engine, &cast, made);
	}
	return err;
}

/* Bucket K's pieces on Q: (ZeRO-3: back from the host's bf16 grads,) widened, copied out. */
static int copy_out(struct bwd *b, uint64_t k, enum mb_queue q, mb_devbuf bucket)
{
	struct mb_sched *s = b->s;
	uint64_t lo = k * s->plan->bucket_elems;
	struct mb_plan_piece p = { 0 };
	bool z3 = s->set->plan.stage == 3;
	int err = 0;

	while (!err && mb_plan_next_piece(s->plan, s->model, k, &p)) {
		struct mb_copy back = { .to_device = true,
					.queue = q,
					.host = MB_HOST_GRADS_BF16,
					.host_off = 2 * p.off,
					.dev = b->bf16,
					.bytes = 2 * p.len,
					.phase = MB_NPHASES,
					.what = "bf16 gradients back to the device" };
		struct mb_work widen = { .kind = MB_WORK_WIDEN,
					 .queue = q,
					 .in = z3 ? b->bf16 : bucket,
					 .in_off = z3 ? 0 : p.off - lo,
					 .out = b->fp32,
					 .n = p.len,
					 .phase = MB_NPHASES };
		struct mb_copy out = { .queue = q,
				       .host = MB_HOST_GRADS,
				       .host_off = 4 * p.off,
				       .dev = b->fp32,
				       .bytes = 4 * p.len,
				       .phase = MB_NPHASES,
				       .what = "gradients to the host" };

		b->freed = 0;
		if ((!z3 || !(err = mb_engine_copy(s->engine, &back, NULL))) &&
		    !(err = mb_engine_work(s->engine, &widen, NULL)))
			err = mb_engine_copy(s->engine, &out, z3 ? &b->freed : NULL);
	}
	return err;
}

static int reduce_bucket(struct bwd *b, uint64_t k)
{
	struct mb_sched *s = b->s;
	struct mb_engine *e = s->engine;
	bool z3 = s->set->plan.stage == 3;
	enum mb_queue q = mb_plan_reduce_overlaps(&s->set->plan) ? MB_QUEUE_COPY : MB_QUEUE_COMPUTE;
	mb_devbuf bucket = z3 ? s->ds_buffer : b->bucket;
	uint64_t n = s->model->numel_total, off = k * s->plan->bucket_elems;
	uint64_t len = n - off < s->plan->bucket_elems ? n - off : s->plan->bucket_elems;
	struct mb_work sumsq = { .kind = MB_WORK_SUMSQ,
				 .queue = q,
				 .in = bucket,
				 .n = len,
				 .out = b->sums,
				 .out_off = k * MB_NS_PARTIALS,
				 .phase = MB_NPHASES };
	mb_event made = 0;
	int err;

	if ((err = mb_engine_after(e, MB_QUEUE_COMPUTE,
				   PLANTED(s, BUCKET_NO_AFTER) ? 0 : b->freed)))
		return err;
	b->freed = 0;
	err = make_bucket(b, k, bucket, &made);
	/* the reduce's queue waits on the bucket's last cast: submitted first (a queue
	 * that waits on a command never flushed may wait for ever) */
	if (!err && q != MB_QUEUE_COMPUTE)
		err = mb_engine_flush(e, MB_QUEUE_COMPUTE);
	/* the bucket reduced across the ranks, on the reduce's queue, before it leaves */
	if (!err)
		err = collective(s, q, 2 * len, made);
	/* ZeRO-3: the bucket to the host's bf16 grads, once made (stage3.py's partition_grads) */
	if (!err && z3) {
		struct mb_copy out = { .queue = q,
				       .host = MB_HOST_GRADS_BF16,
				       .host_off = 2 * off,
				       .dev = bucket,
				       .bytes = 2 * len,
				       .after = made,
				       .phase = MB_NPHASES,
				       .what = "bf16 gradients to the host" };

		err = mb_engine_copy(e, &out, NULL);
	}
	if (err || (err = mb_engine_work(e, &sumsq, NULL)) || (err = copy_out(b, k, q, bucket)))
		return err;
	return q == MB_QUEUE_COPY ? mb_engine_flush(e, q) : 0;
}

/* Reduce the buckets the backward has made by STAGE, down to bucket FLOOR. */
static int reduce_down(struct bwd *b, uint64_t floor, unsigned stage)
{
	struct mb_sched *s = b->s;
	int err = 0;

	while (b->left > floor && !err &&
	       mb_plan_bucket_stage(s->plan, s->model, b->left - 1) >= stage) {
		if (!b->sums &&
		    (err = bwd_alloc(b, mb_plan_largest_piece(s->plan, s->model, floor, b->left))))
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
	struct mb_sched *s = b->s;
	uint64_t k = mb_plan_nbuckets(s->plan, s->model), i;
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
static int backward(struct mb_sched *s, struct mb_step_times *t)
{
	uint64_t k = mb_plan_nbuckets(s->plan, s->model);
	struct bwd b = { .s = s,
			 .left = k,
			 .after = mb_plan_reduced_after(s->plan, s->model, s->set->fwd_bwd) };
	struct mb_fwdbwd_hook hook = { stage_done, &b };
	double t1;
	int err = 0;

	/* zeros: an engine with no device reads nothing into them */
	b.partial = calloc(1, s->plan->norm_bytes + sizeof(float));
	if (!b.partial)
		return mb_fail("out of host memory for %llu partial sums",
			       (unsigned long long)(MB_NS_PARTIALS * k));
	if (s->set->fwd_bwd)
		err = mb_engine_fwd_bwd(s->engine, b.after < k ? &hook : NULL, &t->phase.forward_s,
					&t->phase.backward_s);
	t1 = mb_engine_now(s->engine);
	if (!err)
		err = backward_end(&b, &t->grad_norm);
	t->phase.backward_s += mb_engine_now(s->engine) - t1;
	if (err)
		mb_engine_abort(s->engine);
	if (bwd_free(&b) && !err)
		err = -MB_EFAIL;
	free(b.partial);
	return err;
}

/* ---- the Muon apply ---- */

/* What one batch (ZeRO-1/2) or one matrix (ZeRO-3) writes back, and frees after. */
struct unit {
	mb_devbuf buf;	   /* freed once the writeback is done */
	mb_event arrived;  /* pipeline: the marker after its gather on the prefetch queue */
	mb_event computed; /* its last compute command */
	mb_event written;  /* its last read */
	mb_devbuf grad_src, mom_src; /* updates from grad_src at 0, momentum from mom_src */
	uint64_t mom_at;	     /* the momentum's byte offset in mom_src */
	size_t first, end;	     /* its parameters: the plan's order[first..end) */
};

struct apply {
	struct mb_sched *s;
	struct mb_engine *e;
	bool overlap;
	bool prefetch;		       /* the next batch arrives on the prefetch queue */
	struct unit pending, inflight; /* computing, writing back */
	struct unit arriving;	       /* pipeline: the next batch, its gather enqueued */
	bool has_pending, has_inflight, has_arriving;
	mb_devbuf subgroup;
};

/* "'<first matrix>' and N more", for errors about unit U's commands. */
static const char *unit_name(const struct apply *a, const char *what, size_t first, size_t end,
			     char *buf, size_t len)
{
	snprintf(buf, len, "%s of '%s' and %zu more", what, applied(a->s, first)->name,
		 end - first - 1);
	return buf;
}

/* Enqueue the reads of U on Q: each update into the grads, the momentum after. */
static int writeback(struct apply *a, struct unit *u, enum mb_queue q)
{
	const struct mb_sched *s = a->s;
	bool event_dep = s->set->knob[MB_KNOB_WRITEBACK_DEP] == MB_WRITEBACK_EVENT &&
			 q != MB_QUEUE_COMPUTE && u->computed;
	mb_event dep = event_dep && !PLANTED(s, WRITEBACK_NO_AFTER) ? u->computed : 0;
	bool host_waits = q != MB_QUEUE_COMPUTE && !event_dep;
	bool wait_late = PLANTED(s, WAIT_AFTER_COPIES);
	uint64_t lo = 0, n;
	char name[256];
	size_t k;
	int err;

#ifdef MB_TEST_KNOB
	/* mb_knob's test-only row: the host waits for the unit's compute, on any queue */
	host_waits = host_waits || s->set->knob[MB_KNOB_PROBE_WAIT];
#endif
	if (host_waits && !wait_late &&
	    (err = mb_engine_wait(a->e, u->computed,
				  unit_name(a, "the compute", u->first, u->end, name,
					    sizeof(name)))))
		return err;
	/* another queue may wait on the compute's event only once it has been submitted */
	if (event_dep && !PLANTED(s, NO_FLUSH) && (err = mb_engine_flush(a->e, MB_QUEUE_COMPUTE)))
		return err;
	for (k = u->first; k < u->end; k++) {
		struct mb_copy c = { .queue = q,
				     .host = MB_HOST_GRADS,
				     .host_off = 4 * s->offset[s->plan->order[k]],
				     .dev = u->grad_src,
				     .dev_off = 4 * lo,
				     .bytes = 4 * mb_param_numel(applied(s, k)),
				     .after = dep,
				     .phase = MB_PHASE_D2H,
				     .what = applied(s, k)->name };

		if ((err = mb_engine_copy(a->e, &c, NULL)))
			return err;
		n = mb_param_numel(applied(s, k));
		lo += n;
	}
	/* the momentum is laid out in the apply order: one range */
	struct mb_copy mom = { .queue = q,
			       .host = MB_HOST_MOMENTUM,
			       .host_off = mom_byte(s, s->plan->order[u->first]),
			       .dev = u->mom_src,
			       .dev_off = u->mom_at,
			       .bytes = s->plan->momentum_bytes * lo,
			       .after = dep,
			       .phase = MB_PHASE_D2H,
			       .what = "momentum to the host" };

	if ((err = mb_engine_copy(a->e, &mom, &u->written)))
		return err;
	if (host_waits && wait_late &&
	    (err = mb_engine_wait(a->e, u->computed,
				  unit_name(a, "the compute", u->first, u->end, name,
					    sizeof(name)))))
		return err;
	return mb_engine_flush(a->e, q);
}

/* Wait for U's writeback and free its buffer. */
static int drain(struct apply *a, struct unit *u)
{
	mb_event done = PLANTED(a->s, EARLY_EVENT) && u->computed ? u->computed : u->written;
	char name[256];
	int err = 0;

	if (PLANTED(a->s, FREE_BEFORE_WAIT) && mb_engine_free(a->e, u->buf))
		err = -MB_EFAIL;
	if (u->written && !err)
		err = mb_engine_wait(a->e, done,
				     unit_name(a, "the writeback", u->first, u->end, name,
					       sizeof(name)));
	if (!PLANTED(a->s, FREE_BEFORE_WAIT) && mb_engine_free(a->e, u->buf) && !err)
		err = -MB_EFAIL;
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
		err = writeback(a, u, MB_QUEUE_COMPUTE);
		return drain(a, u) ? -MB_EFAIL : err;
	}
	/* the apply owns both units before anything can fail: abort_apply frees them */
	a->inflight = a->pending;
	a->has_inflight = a->has_pending;
	a->pending = *u;
	a->has_pending = true;
	memset(u, 0, sizeof(*u));
	return a->has_inflight ? writeback(a, &a->inflight, MB_QUEUE_COPY) : 0;
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
	err = writeback(a, &a->pending, MB_QUEUE_COPY);
	return drain(a, &a->pending) && !err ? -MB_EFAIL : err;
}

/* After a failure: stop the queues and free whatever is still alive. */
static void abort_apply(struct apply *a)
{
	mb_engine_abort(a->e);
	if (a->has_arriving)
		drain(a, &a->arriving);
	if (a->has_inflight)
		drain(a, &a->inflight);
	if (a->has_pending)
		drain(a, &a->pending);
	a->has_inflight = a->has_pending = a->has_arriving = false;
	mb_engine_free(a->e, a->subgroup);
	a->subgroup = NULL;
}

/*
 * The momentum of G to BUF, after its E fp32 grads. ZeRO-3's first step
 * copies none: DeepSpeed's _apply_muon_updates_cpu_offload creates that
 * momentum as zeros on the device (the host's is zero as well).
 */
static int momentum_in(struct apply *a, const struct mb_plan_group *g, mb_devbuf buf,
		       enum mb_queue q)
{
	const struct mb_sched *s = a->s;
	uint64_t e = g->gathered_numel, bytes = s->plan->momentum_bytes * e;

	if (s->set->plan.stage == 3 && !s->steps_done) {
		struct mb_work zero = { .kind = MB_WORK_ZERO,
					.queue = q,
					.out = buf,
					.out_off = 4 * e,
					.n = bytes,
					.phase = MB_NPHASES };

		return mb_engine_work(a->e, &zero, NULL);
	}
	struct mb_copy c = { .to_device = true,
			     .queue = q,
			     .host = MB_HOST_MOMENTUM,
			     .host_off = mom_byte(s, s->plan->order[g->first]),
			     .dev = buf,
			     .dev_off = 4 * e,
			     .bytes = bytes,
			     .phase = MB_PHASE_H2D,
			     .what = "momentum to the device" };

	return mb_engine_copy(a->e, &c, NULL);
}

/* G's fp32 grads to BUF's first 4E bytes and its momentum after them, on Q. */
static int copy_in(struct apply *a, const struct mb_plan_group *g, mb_devbuf buf, enum mb_queue q)
{
	const struct mb_sched *s = a->s;
	uint64_t lo = 0;
	size_t k;
	int err = 0;

	/* each copy timed by its own event: the H2D time is transfer time only */
	for (k = g->first; k < g->end && !err; k++) {
		uint64_t n = mb_param_numel(applied(s, k));
		struct mb_copy c = { .to_device = true,
				     .queue = q,
				     .host = MB_HOST_GRADS,
				     .host_off = 4 * s->offset[s->plan->order[k]],
				     .dev = buf,
				     .dev_off = 4 * lo,
				     .bytes = 4 * n,
				     .phase = MB_PHASE_H2D,
				     .what = applied(s, k)->name };

		err = mb_engine_copy(a->e, &c, NULL);
		lo += n;
	}
	if (err || g->first == g->end)
		return err;
	return momentum_in(a, g, buf, q);
}

/*
 * Momentum and Nesterov over G's gathered grads and momentum in BUF. *last is
 * the momentum kernel's event (0 when the group has no Muon element).
 */
static int momentum(struct apply *a, const struct mb_plan_group *g, mb_devbuf buf, mb_event *last)
{
	const struct mb_sched *s = a->s;
	uint64_t e = g->gathered_numel;
	bool bf16 = s->set->plan.momentum_dtype == MB_MOM_BF16;
	struct mb_work w = { .kind = MB_WORK_MOMENTUM,
			     .in = buf,
			     .out = buf,
			     .out_off = bf16 ? 2 * e : e,
			     .n = e,
			     .beta = s->set->optim.muon_beta,
			     .bf16 = bf16,
			     .phase = MB_PHASE_MOMENTUM };

	*last = 0;
	if (g->first == g->end)
		return 0;
	return mb_engine_work(a->e, &w, last);
}

/* Gather group G to BUF on the compute queue, then its momentum: *last as momentum's. */
static int gather(struct apply *a, const struct mb_plan_group *g, mb_devbuf buf, mb_event *last)
{
	int err;

	*last = 0;
	enum mb_queue q = PLANTED(a->s, GATHER_WRONG_QUEUE) ? MB_QUEUE_COPY : MB_QUEUE_COMPUTE;

	return (err = copy_in(a, g, buf, q)) ? err : momentum(a, g, buf, last);
}

/* Newton-Schulz on the parameter at place K of the apply order; *after is its last command. */
static int orthogonalize(struct apply *a, size_t k, mb_devbuf in, uint64_t in_off, mb_devbuf out,
			 uint64_t out_off, mb_event *after)
{
	const struct mb_param *p = applied(a->s, k);
	struct mb_work w = { .kind = MB_WORK_NS,
			     .in = in,
			     .in_off = in_off,
			     .out = out,
			     .out_off = out_off,
			     .rows = p->rows,
			     .cols = p->cols,
			     .phase = MB_PHASE_NS,
			     .what = p->name };

	return mb_engine_work(a->e, &w, after);
}

/*
 * ZeRO-3's bf16 copy of G's grads in BUF, after their momentum: what
 * DeepSpeed's all-gather of the grads makes with one rank. Timed with the
 * momentum, the other elementwise work of the gather.
 */
static int grads_bf16(struct apply *a, const struct mb_plan_group *g, mb_devbuf buf)
{
	uint64_t e = g->gathered_numel;
	struct mb_work w = { .kind = MB_WORK_CAST,
			     .in = buf,
			     .out = buf,
			     .out_off = (4 * e + a->s->plan->momentum_bytes * e) / 2,
			     .n = e,
			     .phase = MB_PHASE_MOMENTUM };

	return mb_engine_work(a->e, &w, NULL);
}

/* A batch's buffer, after the one two back is gone: *U owns it. */
static int batch_buffer(struct apply *a, const struct mb_plan_group *g, struct unit *u)
{
	int err;

	memset(u, 0, sizeof(*u));
	u->first = g->first;
	u->end = g->end;
	if ((err = make_room(a)) ||
	    (err = mb_engine_alloc(a->e, mb_plan_batch_bytes(a->s->plan, g->gathered_numel),
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
	int err;

	if ((err = batch_buffer(a, g, &a->arriving)))
		return err;
	a->has_arriving = true;
	if ((err = copy_in(a, g, a->arriving.buf, MB_QUEUE_PREFETCH)) ||
	    (err = mb_engine_marker(a->e, MB_QUEUE_PREFETCH, &a->arriving.arrived)))
		return err;
	return mb_engine_flush(a->e, MB_QUEUE_PREFETCH);
}

/* The compute of U waits for its gather, which arrived on the prefetch queue. */
static int await_arrival(struct apply *a, struct unit *u)
{
	char name[256];

	if (a->s->set->knob[MB_KNOB_WRITEBACK_DEP] == MB_WRITEBACK_EVENT)
		return mb_engine_after(a->e, MB_QUEUE_COMPUTE, u->arrived);
	return mb_engine_wait(a->e, u->arrived,
			      unit_name(a, "the gather", u->first, u->end, name, sizeof(name)));
}

/*
 * Batch GI: gathered now on the compute queue, or (pipeline) arrived on the
 * prefetch queue while the previous batch computed; then, before its own
 * compute, the next batch's gather is enqueued.
 */
static int apply_batch(struct apply *a, size_t gi)
{
	const struct mb_sched *s = a->s;
	const struct mb_plan_group *g = &s->plan->groups[gi];
	struct unit u;
	uint64_t lo = 0;
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
		err = gi + 1 < s->plan->ngroups ? arrive(a, g + 1) : make_room(a);
		if (!err && !PLANTED(s, NO_ARRIVAL))
			err = await_arrival(a, &u);
		if (!err)
			err = momentum(a, g, u.buf, &u.computed);
	}
	if (!err && s->set->plan.stage == 3)
		err = grads_bf16(a, g, u.buf);
	for (k = g->first; k < g->end && !err; k++) {
		err = orthogonalize(a, k, u.buf, lo, u.buf, lo, &u.computed);
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
	const struct mb_sched *s = a->s;
	uint64_t lo = 0, n, e = g->gathered_numel;
	mb_event gathered;
	struct unit u;
	size_t k;
	int err;

	if ((err = mb_engine_alloc(a->e, mb_plan_subgroup_bytes(s->plan, e), "apply.subgroup",
				   &a->subgroup)) ||
	    (err = gather(a, g, a->subgroup, &gathered)) || (err = grads_bf16(a, g, a->subgroup)))
		return err;
	for (k = g->first; k < g->end; k++) {
		n = mb_param_numel(applied(s, k));
		memset(&u, 0, sizeof(u));
		u.first = k;
		u.end = k + 1;
		if ((err = make_room(a)) ||
		    (err = mb_engine_alloc(a->e, 4 * n, "apply.update", &u.buf)))
			return err;
		u.grad_src = u.buf;
		u.mom_src = a->subgroup;
		u.mom_at = 4 * g->gathered_numel + s->plan->momentum_bytes * lo;
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
	err = mb_engine_free(a->e, a->subgroup);
	a->subgroup = NULL;
	return err;
}

/* Say which batch or sub-group failed and what to change. */
static void explain(const struct mb_sched *s, size_t gi)
{
	const struct mb_plan_group *g = &s->plan->groups[gi];
	bool memory = mb_err_kind() == MB_KIND_DEVICE_MEMORY;
	char size[32];

	/* an overlapped writeback that fails here may be the previous unit's: the
	 * message names the parameter it was copying */
	mb_fmt_bytes_iec(size, sizeof(size), mb_plan_batch_bytes(s->plan, g->gathered_numel));
	if (!mb_plan_batched(&s->set->plan))
		mb_err_prefix("sub-group %zu of %zu (%zu matrices, %s gathered%s)", gi + 1,
			      s->plan->ngroups, g->matrices, size,
			      memory ? "; a smaller --sub-group-size needs less" : "");
	else
		mb_err_prefix("batch %zu of %zu (%zu matrices, %s%s)", gi + 1, s->plan->ngroups,
			      g->matrices, size,
			      memory ? "; a smaller --gather-budget needs less" : "");
}

static int apply(struct mb_sched *s)
{
	struct apply a = { .s = s,
			   .e = s->engine,
			   .overlap = mb_variant_overlaps(s->set->variant),
			   .prefetch = mb_variant_prefetches(s->set->variant) &&
				       mb_plan_batched(&s->set->plan) };
	size_t gi;
	int err = 0;

	/* a checkpoint load left the momentum pageable: the pin variants re-pin it */
	if (mb_sched_pinned(s->set, MB_HOST_MOMENTUM) &&
	    (err = mb_engine_pin(s->engine, MB_HOST_MOMENTUM)))
		return err;
	for (gi = 0; gi < s->plan->ngroups && !err; gi++) {
		err = mb_plan_batched(&s->set->plan) ? apply_batch(&a, gi)
						     : apply_subgroup(&a, &s->plan->groups[gi]);
		if (err)
			explain(s, gi);
	}
	if (!err)
		err = flush(&a);
	if (err)
		abort_apply(&a);
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

/*
 * The host's pass: Muon's update and AdamW (mb_hostopt_bytes), the
 * unscale-and-clip pass over the fp32 grads (8 bytes an element) and, with
 * the params back pageable, the cast to bf16 (6 bytes an element).
 */
static int host_optimizer(struct mb_sched *s, float scale)
{
	const struct mb_model *m = s->model;
	double streamed = 8.0 * (double)m->numel_total;
	/* the grads (the updates by now) scaled and read, the params and AdamW's moments
	 * stepped, the bf16 params written for the way back */
	const struct mb_host_access access[] = {
		{ MB_HOST_GRADS, 0, MB_RACE_ALL, true },
		{ MB_HOST_MASTER, 0, MB_RACE_ALL, true },
		{ MB_HOST_ADAMW, 0, MB_RACE_ALL, true },
		{ MB_HOST_STAGING, 0, MB_RACE_ALL, true },
	};

	if (s->set->plan.params_back == MB_BACK_PAGEABLE)
		streamed += 6.0 * (double)m->numel_total;
	return mb_engine_host(
		s->engine,
		&(struct mb_host_work){ s->host_pass, s->host_arg, scale,
					mb_hostopt_bytes(m->numel_muon, m->numel_adamw), streamed,
					access, sizeof(access) / sizeof(access[0]) });
}

/* The bf16 params back to the device, enqueued (the step finishes the compute queue after). */
static int params_back(struct mb_sched *s)
{
	struct mb_copy c = { .to_device = true,
			     .queue = MB_QUEUE_COMPUTE,
			     .host = MB_HOST_STAGING,
			     .dev = s->params,
			     .bytes = 2 * s->model->numel_total,
			     .phase = MB_PHASE_PARAMS_H2D,
			     .what = "bf16 params to the device" };
	int err;

	if ((err = mb_engine_copy(s->engine, &c, NULL)))
		return err;
	/* ZeRO-1/2: each rank's updated partition gathered by all (ZeRO-3 gathers its
	 * params in the next forward) */
	return s->set->plan.stage != 3
		       ? collective(s, MB_QUEUE_COMPUTE, 2 * s->model->numel_total, 0)
		       : 0;
}

int mb_sched_step(struct mb_sched *s, struct mb_step_times *t)
{
	struct mb_engine *e = s->engine;
	double t0 = mb_engine_now(e), t1;
	int err;

	memset(t, 0, sizeof(*t));
	if ((err = backward(s, t)))
		goto out;
	t->grad_scale = clip_scale(t->grad_norm, s->set->grad_clip);
	t1 = mb_engine_now(e);
	mb_engine_phase(e, "step");
	if ((err = apply(s)))
		goto out;
	t->apply_s = mb_engine_now(e) - t1;
	if (PLANTED(s, PARAMS_EARLY) && (err = params_back(s)))
		goto out_abort;
	t1 = mb_engine_now(e);
	if ((err = host_optimizer(s, (float)t->grad_scale)))
		goto out_abort;
	t->phase.host_opt_s = mb_engine_now(e) - t1;
	if ((!PLANTED(s, PARAMS_EARLY) && (err = params_back(s))) ||
	    (err = mb_engine_finish(e, MB_QUEUE_COMPUTE)))
		goto out_abort;
	t->iter_s = mb_engine_now(e) - t0;
	mb_timeline_step(s->set->timeline, e, s->set, (unsigned long)s->steps_done + 1);
	return mb_engine_end_step(e, &t->phase, t->timing_error, sizeof(t->timing_error));
out_abort:
	mb_engine_abort(e);
out:
	mb_engine_end_step(e, NULL, NULL, 0);
	return err;
}
