/*
 * mb_step: the state of one rank (host and device buffers), its step (the
 * schedule, mb_sched, on the OpenCL engine, mb_engine_cl), its host
 * optimizer, checkpoint and checksum.
 */
#include "mb_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_engine_cl.h"
#include "mb_err.h"
#include "mb_fwdbwd_cl.h"
#include "mb_num.h"
#include "mb_rng.h"
#include "mb_sched.h"

#define PARAM_SCALE   0.02f
#define STREAM_PARAMS 0 /* the grads' streams follow (mb_sched) */

/* ---- state ---- */

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
	const struct mb_step_settings *set = &s->set;
	uint64_t *cuts;
	int err;

	cuts = malloc((m->nparams + 1) * sizeof(*cuts));
	if (!cuts)
		return mb_fail("out of host memory for the chunks of %zu parameters", m->nparams);
	if ((err = alloc_host_buffer(s, &s->master, MB_HOST_MASTER, 4 * m->numel_total, false,
				     "master params", cuts)) ||
	    (err = alloc_host_buffer(s, &s->grads, MB_HOST_GRADS, 4 * m->numel_total,
				     mb_sched_pinned(set, MB_HOST_GRADS), "grads", cuts)) ||
	    (err = alloc_host_buffer(
		     s, &s->momentum, MB_HOST_MOMENTUM, s->plan.momentum_bytes * m->numel_muon,
		     mb_sched_pinned(set, MB_HOST_MOMENTUM), "Muon momentum", cuts)) ||
	    (err = alloc_host_buffer(s, &s->adam_m, MB_HOST_ADAMW, 4 * m->numel_adamw, false,
				     "AdamW exp_avg", cuts)) ||
	    (err = alloc_host_buffer(s, &s->adam_v, MB_HOST_ADAMW, 4 * m->numel_adamw, false,
				     "AdamW exp_avg_sq", cuts)) ||
	    (err = alloc_host_buffer(s, &s->staging, MB_HOST_STAGING, 2 * m->numel_total,
				     mb_sched_pinned(set, MB_HOST_STAGING), "bf16 staging",
				     cuts)) ||
	    (s->plan.host_bytes[MB_HOST_GRADS_BF16] &&
	     (err = alloc_host_buffer(
		      s, &s->grads_bf16, MB_HOST_GRADS_BF16, s->plan.host_bytes[MB_HOST_GRADS_BF16],
		      mb_sched_pinned(set, MB_HOST_GRADS_BF16), "bf16 grads", cuts)))) {
		free(cuts);
		return err;
	}
	free(cuts);
	return 0;
}

static int alloc_offsets(struct mb_state *s)
{
	int err;

	if ((err = mb_sched_offsets(s->model, &s->plan, &s->offset)))
		return err;
	s->state_offset = s->offset + s->model->nparams + 1;
	if (!(s->spans = calloc(s->model->nparams + 1, sizeof(*s->spans))))
		return mb_fail("out of host memory for %zu spans", s->model->nparams);
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

/* The initial bf16 params to the device, once. */
static int initial_params(struct mb_state *s)
{
	struct mb_copy c = { .to_device = true,
			     .queue = MB_QUEUE_COMPUTE,
			     .host = MB_HOST_STAGING,
			     .dev = (mb_devbuf)s->params,
			     .bytes = 2 * s->model->numel_total,
			     .phase = MB_NPHASES,
			     .what = "initial bf16 params" };
	int err;

	if ((err = mb_engine_copy(s->engine, &c, NULL)) ||
	    (err = mb_engine_finish(s->engine, MB_QUEUE_COMPUTE)))
		return err;
	return mb_engine_end_step(s->engine, NULL, NULL, 0);
}

static void host_pass(void *arg, float scale);

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
	if ((err = mb_engine_cl_new(cl, ledger, &s->ns,
				    (struct mb_hostbuf *const[MB_HOST_NBUFFERS]){
					    &s->master, &s->grads, &s->momentum, &s->adam_m,
					    &s->staging, &s->grads_bf16 },
				    m, s->set.tokens, &s->engine)) ||
	    (s->set.race_check && (err = mb_engine_race_start(s->engine))))
		goto out_release;
	mb_engine_name(s->engine, (mb_devbuf)s->params, "params.bf16");
	mb_engine_name(s->engine, (mb_devbuf)s->ds_buffer, s->plan.ds_buffer);
	if ((err = initial_params(s)) || (err = mb_ns_init(&s->ns, cl, ledger)) ||
	    (err = reserve_shapes(s)) || (err = reserve_step(s)))
		goto out_release;
	s->sched = (struct mb_sched){ .model = m,
				      .set = &s->set,
				      .plan = &s->plan,
				      .offset = s->offset,
				      .state_offset = s->state_offset,
				      .params = (mb_devbuf)s->params,
				      .ds_buffer = (mb_devbuf)s->ds_buffer,
				      .engine = s->engine,
				      .host_pass = host_pass,
				      .host_arg = s };
	return 0;

out_release:
	mb_state_release(s);
	return err;
}

void mb_state_release(struct mb_state *s)
{
	if (s->engine)
		mb_engine_abort(s->engine);
	mb_engine_destroy(s->engine);
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

/* ---- host optimizer and params back ---- */

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

/* The host's pass of the step (struct mb_sched's host_pass). */
static void host_pass(void *arg, float scale)
{
	host_optimizer(arg, scale);
}

int mb_step(struct mb_state *s, struct mb_step_times *t)
{
	int err;

	s->sched.steps_done = s->steps_done;
	if (!(err = mb_sched_step(&s->sched, t)))
		s->steps_done++;
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

/* What a checkpoint saves and a resume replaces. */
static const struct mb_host_access checkpointed[] = {
	{ MB_HOST_MASTER, 0, MB_RACE_ALL, true },
	{ MB_HOST_MOMENTUM, 0, MB_RACE_ALL, true },
	{ MB_HOST_ADAMW, 0, MB_RACE_ALL, true },
};

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
	if ((err = mb_engine_touch(s->engine, "checkpoint and resume", checkpointed, 3))) {
		fclose(f);
		return err;
	}
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

/* The resident bf16 params read back a piece at a time, hashed on from H into *SUM. */
static int params_checksum(struct mb_state *s, uint64_t h, uint64_t *sum)
{
	uint64_t bytes = 2 * s->model->numel_total, at, run, piece = 64u << 20;
	void *buf = malloc(bytes < piece ? (bytes ? bytes : 1) : piece);
	int err = 0;

	if (!buf)
		return mb_fail("out of host memory reading back the bf16 params");
	for (at = 0; at < bytes && !err; at += run) {
		run = bytes - at < piece ? bytes - at : piece;
		if (!(err = mb_engine_read(s->engine, MB_QUEUE_COMPUTE, (mb_devbuf)s->params, at,
					   run, buf)))
			h = mb_checksum_spans(&(struct mb_span){ buf, run }, 1, h);
	}
	free(buf);
	*sum = h;
	return err;
}

int mb_state_checksum(struct mb_state *s, uint64_t *sum)
{
	const struct mb_model *m = s->model;
	const struct mb_host_access read[] = { { MB_HOST_MASTER, 0, MB_RACE_ALL, false },
					       { MB_HOST_MOMENTUM, 0, MB_RACE_ALL, false } };
	size_t i, n = 0;
	uint64_t h;
	int err;

	*sum = 0;
	if ((err = mb_engine_touch(s->engine, "checksum", read, 2)))
		return err;
	/* the momentum in model order, whatever its layout: the same state, the same sum */
	for (i = 0; i < m->nparams; i++)
		if (m->params[i].muon)
			s->spans[n++] =
				(struct mb_span){ mb_hostbuf_at(&s->momentum, mom_byte(s, i), NULL),
						  s->plan.momentum_bytes *
							  mb_param_numel(&m->params[i]) };
	h = mb_hostbuf_checksum(&s->master, mb_checksum_spans(s->spans, n, 0));
	return params_checksum(s, h, sum);
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
