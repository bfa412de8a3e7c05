/*
 * mb_plan: the rank's share, the Muon batches or sub-groups, the traffic,
 * the FLOPs and the predicted step-phase device memory (see mb_plan.h).
 */
#include "mb_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_fwdbwd.h"
#include "mb_num.h"

const char *const mb_host_buffer_names[MB_HOST_NBUFFERS] = {
	[MB_HOST_MASTER] = "master params (fp32)",
	[MB_HOST_GRADS] = "grads (fp32)",
	[MB_HOST_MOMENTUM] = "Muon momentum",
	[MB_HOST_ADAMW] = "AdamW moments (fp32)",
	[MB_HOST_STAGING] = "staging params (bf16)",
	[MB_HOST_GRADS_BF16] = "grad partitions (bf16)",
};

const char *const mb_param_order_names[MB_NORDERS] = { MB_PARAM_ORDERS(MB_NAME_, ) };
const char *const mb_zero3_apply_names[MB_NZ3_APPLIES] = { MB_ZERO3_APPLIES(MB_NAME_, ) };
const char *const mb_momentum_dtype_names[MB_NMOM_DTYPES] = { MB_MOMENTUM_DTYPES(MB_NAME_, ) };
const char *const mb_params_back_names[MB_NBACKS] = { MB_PARAMS_BACKS(MB_NAME_, ) };

bool mb_host_buffer_on_bus(enum mb_host_buffer b)
{
	return b == MB_HOST_GRADS || b == MB_HOST_MOMENTUM || b == MB_HOST_STAGING ||
	       b == MB_HOST_GRADS_BF16;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* Elements of [lo, hi) that fall in [a, b). */
static uint64_t overlap(uint64_t lo, uint64_t hi, uint64_t a, uint64_t b)
{
	lo = lo > a ? lo : a;
	hi = hi < b ? hi : b;
	return hi > lo ? hi - lo : 0;
}

/*
 * This rank's elements of every parameter, into local[]. ZeRO-1/2: a
 * contiguous range of each optimizer's flat group; ZeRO-3: a slice of each.
 */
static void share(const struct mb_plan *plan, const struct mb_model *m, uint64_t *local)
{
	const struct mb_plan_settings *s = &plan->set;
	uint64_t w = s->world_size, r = s->rank, part_muon, part_adamw, at_muon = 0, at_adamw = 0,
		 n;
	size_t i, k;

	part_muon = div_up(m->numel_muon, w);
	part_adamw = div_up(m->numel_adamw, w);
	for (i = 0; i < m->nparams; i++) {
		n = mb_param_numel(&m->params[i]);
		if (s->stage == 3) {
			local[i] = div_up(n, w);
		} else if (!m->params[i].muon) {
			local[i] = overlap(at_adamw, at_adamw + n, r * part_adamw,
					   (r + 1) * part_adamw);
			at_adamw += n;
		}
	}
	/* the Muon group is flattened in the apply order */
	for (k = 0; k < plan->norder && s->stage != 3; k++) {
		i = plan->order[k];
		n = mb_param_numel(&m->params[i]);
		local[i] = overlap(at_muon, at_muon + n, r * part_muon, (r + 1) * part_muon);
		at_muon += n;
	}
}

/* By shape, largest first: rows, then columns; ties keep the model's order. */
static const struct mb_model *sort_model;

static int cmp_shape(const void *x, const void *y)
{
	const struct mb_param *a = &sort_model->params[*(const size_t *)x],
			      *b = &sort_model->params[*(const size_t *)y];

	if (a->rows != b->rows)
		return a->rows > b->rows ? -1 : 1;
	if (a->cols != b->cols)
		return a->cols > b->cols ? -1 : 1;
	return (*(const size_t *)x > *(const size_t *)y) -
	       (*(const size_t *)x < *(const size_t *)y);
}

/* The Muon parameters in the apply order, into plan->order. */
static int apply_order(struct mb_plan *plan, const struct mb_model *m)
{
	size_t i;

	plan->order = malloc((m->nparams ? m->nparams : 1) * sizeof(*plan->order));
	if (!plan->order)
		return mb_fail("out of host memory ordering %zu parameters", m->nparams);
	for (i = 0; i < m->nparams; i++)
		if (m->params[i].muon)
			plan->order[plan->norder++] = i;
	if (plan->set.order == MB_ORDER_SHAPE) {
		sort_model = m; /* qsort has no context argument in C11 */
		qsort(plan->order, plan->norder, sizeof(*plan->order), cmp_shape);
	}
	return 0;
}

static int push_group(struct mb_plan *plan, size_t first)
{
	struct mb_plan_group *g;

	g = realloc(plan->groups, (plan->ngroups + 1) * sizeof(*g));
	if (!g)
		return mb_fail("out of host memory planning %zu batches", plan->ngroups + 1);
	plan->groups = g;
	g = &plan->groups[plan->ngroups++];
	memset(g, 0, sizeof(*g));
	g->first = g->end = first;
	return 0;
}

/* The largest Muon matrix this rank works on must fit the budget alone. */
static int check_budget(const struct mb_plan *plan, const struct mb_model *m, const uint64_t *local)
{
	const struct mb_plan_settings *s = &plan->set;
	const struct mb_param *big = NULL;
	char a[32], b[32];
	uint64_t need;
	size_t i;

	for (i = 0; i < m->nparams; i++)
		if (m->params[i].muon && local[i] &&
		    (!big || mb_param_numel(&m->params[i]) > mb_param_numel(big)))
			big = &m->params[i];
	if (!big)
		return 0;
	need = mb_plan_batch_bytes(plan, mb_param_numel(big));
	if (need <= s->gather_budget_bytes)
		return 0;
	return mb_bad_input("gather budget %s (%llu bytes) is smaller than the largest Muon "
			    "matrix: '%s' (%llux%llu) needs %s (%llu bytes) for its fp32 grads%s"
			    "%s momentum%s; raise --gather-budget",
			    mb_fmt_bytes_iec(a, sizeof(a), s->gather_budget_bytes),
			    (unsigned long long)s->gather_budget_bytes, big->name,
			    (unsigned long long)big->rows, (unsigned long long)big->cols,
			    mb_fmt_bytes_iec(b, sizeof(b), need), (unsigned long long)need,
			    s->stage == 3 ? ", " : " and ",
			    plan->momentum_bytes == 4 ? "fp32" : "bf16",
			    s->stage == 3 ? " and the bf16 copy of its grads" : "");
}

/*
 * ZeRO-1/2, and ZeRO-3 batched: Muon matrices this rank holds a piece of, in
 * greedy batches; under ZeRO-3 a batch also ends where its sub-group does
 * (DeepSpeed's rule, as plan_sub_groups applies it).
 */
static int plan_batches(struct mb_plan *plan, const struct mb_model *m, const uint64_t *local)
{
	const struct mb_plan_settings *s = &plan->set;
	struct mb_plan_group *g = NULL;
	uint64_t n, prev = 0, in_subgroup = 0;
	size_t i, k, subgroup = 0;
	bool closed = false; /* the sub-group of the last batch is full */
	int err;

	if ((err = check_budget(plan, m, local)))
		return err;
	for (k = 0; k < plan->norder; k++) {
		i = plan->order[k];
		if (!local[i])
			continue;
		n = mb_param_numel(&m->params[i]);
		if (!g || closed ||
		    mb_plan_batch_bytes(plan, g->gathered_numel + n) > s->gather_budget_bytes) {
			prev = g ? g->gathered_numel : 0;
			if ((err = push_group(plan, k)))
				return err;
			g = &plan->groups[plan->ngroups - 1];
			g->subgroup = subgroup;
			closed = false;
		}
		g->end = k + 1;
		g->matrices++;
		g->gathered_numel += n;
		g->local_numel += local[i];
		g->apply_bytes_sync = mb_plan_batch_bytes(plan, g->gathered_numel);
		g->apply_bytes_overlap = mb_plan_batch_bytes(plan, prev + g->gathered_numel);
		if (s->stage == 3 && (in_subgroup += local[i]) >= s->sub_group_size) {
			closed = true;
			in_subgroup = 0;
			subgroup++;
		}
	}
	/* pipeline: the previous batch going back, this one, the next arriving */
	for (k = 0; k < plan->ngroups; k++) {
		g = &plan->groups[k];
		n = g->gathered_numel + (k ? g[-1].gathered_numel : 0) +
		    (k + 1 < plan->ngroups ? g[1].gathered_numel : 0);
		g->apply_bytes_pipeline = mb_plan_batch_bytes(plan, n);
	}
	return 0;
}

/*
 * ZeRO-3: DeepSpeed's sub-groups of the Muon parameter group (Muon and AdamW
 * are separate param groups, each cut into sub-groups of its own): in the
 * apply order, a sub-group closes once it holds sub_group_size local elements.
 */
static int plan_sub_groups(struct mb_plan *plan, const struct mb_model *m, const uint64_t *local)
{
	struct mb_plan_group *g = NULL;
	uint64_t n, prev_n = 0, one = 0, two = 0;
	size_t i, k;
	int err;

	for (k = 0; k < plan->norder; k++) {
		i = plan->order[k];
		if (!g) {
			if ((err = push_group(plan, k)))
				return err;
			g = &plan->groups[plan->ngroups - 1];
			g->subgroup = plan->ngroups - 1;
			prev_n = one = two = 0;
		}
		n = mb_param_numel(&m->params[i]);
		g->end = k + 1;
		g->matrices++;
		g->gathered_numel += n;
		g->local_numel += local[i];
		/* the update buffers: one, or two adjacent ones when overlapped */
		one = n > one ? n : one;
		two = prev_n + n > two ? prev_n + n : two;
		prev_n = n;
		g->apply_bytes_sync =
			mb_plan_subgroup_bytes(plan, g->gathered_numel) + sizeof(float) * one;
		g->apply_bytes_overlap =
			mb_plan_subgroup_bytes(plan, g->gathered_numel) + sizeof(float) * two;
		g->apply_bytes_pipeline = g->apply_bytes_overlap; /* no prefetch of a sub-group */
		if (g->local_numel >= plan->set.sub_group_size)
			g = NULL;
	}
	return 0;
}

/*
 * The backward's pieces and peak: with the forward/backward's buffers ALL
 * (0: none), the stand-in's for the buckets reduced during its GEMMs; after
 * them, the stand-in's for the others. BASE: what every phase holds.
 */
static void backward_totals(struct mb_plan *plan, const struct mb_model *m, uint64_t base,
			    uint64_t all)
{
	uint64_t nb = mb_plan_nbuckets(plan, m),
		 after = mb_plan_reduced_after(plan, m, plan->set.tokens), during_bytes = 0,
		 after_bytes = 0;

	plan->piece_during_elems = mb_plan_largest_piece(plan, m, after, nb);
	plan->piece_after_elems = mb_plan_largest_piece(plan, m, 0, after);
	if (after < nb)
		during_bytes =
			mb_plan_piece_bytes(plan, plan->piece_during_elems) + plan->norm_bytes;
	if (after > 0)
		after_bytes = plan->bucket_bf16_bytes +
			      mb_plan_piece_bytes(plan, plan->piece_after_elems) + plan->norm_bytes;
	all = all ? sat_add(all, during_bytes) : 0;
	plan->peak_backward_bytes = sat_add(base, all > after_bytes ? all : after_bytes);
}

static void plan_totals(struct mb_plan *plan, const struct mb_model *m, const uint64_t *local)
{
	const struct mb_param *p;
	uint64_t *h = plan->host_bytes;
	size_t i, k, gi;

	for (i = 0; i < m->nparams; i++) {
		if (m->params[i].muon)
			plan->local_muon += local[i];
		else
			plan->local_adamw += local[i];
	}
	plan->local_numel = plan->local_muon + plan->local_adamw;
	h[MB_HOST_MASTER] = sizeof(float) * plan->local_numel;
	h[MB_HOST_GRADS] = sizeof(float) * plan->local_numel;
	h[MB_HOST_MOMENTUM] = plan->momentum_bytes * plan->local_muon;
	h[MB_HOST_ADAMW] = 2 * sizeof(float) * plan->local_adamw;
	h[MB_HOST_STAGING] = 2 * plan->local_numel;
	h[MB_HOST_GRADS_BF16] = plan->set.stage == 3 ? 2 * plan->local_numel : 0;

	/* ZeRO-3: bf16 out and back in (partition_grads), then fp32 out */
	plan->bwd_d2h_bytes = sizeof(float) * plan->local_numel + h[MB_HOST_GRADS_BF16];
	plan->bwd_h2d_bytes = h[MB_HOST_GRADS_BF16];
	plan->apply_h2d_bytes = mb_plan_gathered_bytes(plan, plan->local_muon);
	plan->apply_d2h_bytes = mb_plan_gathered_bytes(plan, plan->local_muon);
	plan->params_h2d_bytes = 2 * plan->local_numel;
	for (i = 0; i < MB_HOST_NBUFFERS; i++)
		plan->host_chunks[i] =
			mb_host_buffer_on_bus(i)
				? mb_plan_host_cuts(plan, m, i, plan->set.pin_chunk_bytes, NULL)
				: 1;
	plan->resident_bytes = 2 * (plan->set.stage == 3 ? plan->local_numel : m->numel_total);
	plan->bucket_elems = plan->set.reduce_bucket_elems ? plan->set.reduce_bucket_elems
							   : MB_PLAN_REDUCE_BUCKET;
	plan->bucket_elems = plan->bucket_elems < m->numel_total ? plan->bucket_elems
								 : m->numel_total;
	plan->bucket_bf16_bytes = plan->set.stage == 3 ? 0 : 2 * plan->bucket_elems;
	plan->norm_bytes = sizeof(float) * MB_NS_PARTIALS *
			   (plan->bucket_elems ? div_up(m->numel_total, plan->bucket_elems) : 1);
	if (plan->set.stage == 3) {
		plan->ds_buffer = "ds.ipg_bucket";
		plan->ds_buffer_bytes = 2 * plan->bucket_elems;
	} else {
		plan->ds_buffer = "ds.temp_grad_buffer";
		for (i = 0; i < m->nparams; i++)
			if (2 * mb_param_numel(&m->params[i]) > plan->ds_buffer_bytes)
				plan->ds_buffer_bytes = 2 * mb_param_numel(&m->params[i]);
	}

	for (gi = 0; gi < plan->ngroups; gi++) {
		const struct mb_plan_group *g = &plan->groups[gi];

		if (g->gathered_numel > plan->groups[plan->largest_group].gathered_numel)
			plan->largest_group = gi;
		if (g->apply_bytes_sync > plan->apply_bytes_sync)
			plan->apply_bytes_sync = g->apply_bytes_sync;
		if (g->apply_bytes_overlap > plan->apply_bytes_overlap)
			plan->apply_bytes_overlap = g->apply_bytes_overlap;
		if (g->apply_bytes_pipeline > plan->apply_bytes_pipeline)
			plan->apply_bytes_pipeline = g->apply_bytes_pipeline;
		for (k = g->first; k < g->end; k++) {
			i = plan->order[k];
			p = &m->params[i];
			if (plan->set.stage != 3 && !local[i])
				continue;
			plan->matrices++;
			/* the standard method until the settings carry one */
			if (__builtin_add_overflow(plan->ns_flops,
						   mb_ns_flops(p->rows, p->cols,
							       plan->set.ns_method),
						   &plan->ns_flops))
				plan->ns_flops = UINT64_MAX;
			if (mb_ns_workspace_bytes(p->rows, p->cols, plan->set.ns_method,
						  plan->set.ns_precision) >
			    plan->ns_workspace_bytes)
				plan->ns_workspace_bytes =
					mb_ns_workspace_bytes(p->rows, p->cols, plan->set.ns_method,
							      plan->set.ns_precision);
		}
	}
	{
		uint64_t base = plan->resident_bytes + plan->ds_buffer_bytes +
				plan->ns_workspace_bytes,
			 fwd = 0, all = 0, largest;
		const char *tag;

		if (plan->set.tokens)
			all = mb_fwdbwd_bytes(m, plan->set.tokens, &largest, &tag, &fwd);
		plan->peak_forward_bytes = plan->set.tokens ? sat_add(base, fwd) : 0;
		backward_totals(plan, m, base, all);
	}
	plan->peak_step_bytes_sync = plan->resident_bytes + plan->ds_buffer_bytes +
				     plan->apply_bytes_sync + plan->ns_workspace_bytes;
	plan->peak_step_bytes_overlap = plan->resident_bytes + plan->ds_buffer_bytes +
					plan->apply_bytes_overlap + plan->ns_workspace_bytes;
	plan->peak_step_bytes_pipeline = plan->resident_bytes + plan->ds_buffer_bytes +
					 plan->apply_bytes_pipeline + plan->ns_workspace_bytes;
}

uint64_t mb_plan_nbuckets(const struct mb_plan *plan, const struct mb_model *m)
{
	return plan->bucket_elems ? div_up(m->numel_total, plan->bucket_elems) : 0;
}

unsigned mb_plan_bucket_stage(const struct mb_plan *plan, const struct mb_model *m, uint64_t k)
{
	uint64_t lo = k * plan->bucket_elems, hi = lo + plan->bucket_elems, off = 0;
	unsigned stage = m->layers;
	bool after_layers = false;
	size_t i;

	for (i = 0; i < m->nparams && off < hi; i++) {
		const struct mb_param *p = &m->params[i];
		uint64_t n = mb_param_numel(p);
		unsigned at = p->layer >= 0 ? (unsigned)p->layer : after_layers ? m->layers : 0;

		after_layers = after_layers || p->layer >= 0;
		if (off + n > lo && at < stage)
			stage = at;
		off += n;
	}
	return stage;
}

uint64_t mb_plan_reduced_after(const struct mb_plan *plan, const struct mb_model *m, bool gemms)
{
	uint64_t off = 0, end = 0, n;
	bool after_layers = false;
	size_t i;

	if (!gemms || !mb_plan_reduce_overlaps(&plan->set) || !plan->bucket_elems)
		return mb_plan_nbuckets(plan, m);
	/* the end of the last grad of stage 0, as mb_plan_bucket_stage numbers them */
	for (i = 0; i < m->nparams; i++) {
		const struct mb_param *p = &m->params[i];

		n = mb_param_numel(p);
		if (p->layer >= 0 ? p->layer == 0 : !after_layers)
			end = off + n;
		after_layers = after_layers || p->layer >= 0;
		off += n;
	}
	return div_up(end, plan->bucket_elems);
}

bool mb_plan_next_piece(const struct mb_plan *plan, const struct mb_model *m, uint64_t k,
			struct mb_plan_piece *p)
{
	uint64_t lo = k * plan->bucket_elems, hi = lo + plan->bucket_elems,
		 at = p->len ? p->off + p->len : lo, n;

	hi = hi < m->numel_total ? hi : m->numel_total;
	/* on to the parameter that holds AT */
	while (p->param < m->nparams && p->start + mb_param_numel(&m->params[p->param]) <= at) {
		p->start += mb_param_numel(&m->params[p->param]);
		p->param++;
	}
	if (at >= hi || p->param == m->nparams)
		return false;
	n = mb_param_numel(&m->params[p->param]);
	p->off = at;
	p->len = (p->start + n < hi ? p->start + n : hi) - at;
	return true;
}

uint64_t mb_plan_largest_piece(const struct mb_plan *plan, const struct mb_model *m, uint64_t first,
			       uint64_t end)
{
	uint64_t b = plan->bucket_elems, lo, hi, off = 0, largest = 0, a, z, cut, piece;
	size_t i;

	if (!b || first >= end)
		return 0;
	lo = first * b;
	hi = end * b < m->numel_total ? end * b : m->numel_total;
	for (i = 0; i < m->nparams; off += mb_param_numel(&m->params[i]), i++) {
		a = off > lo ? off : lo;
		z = off + mb_param_numel(&m->params[i]);
		z = z < hi ? z : hi;
		if (a >= z)
			continue;
		/* its piece in the bucket it starts in, then whole buckets or the rest */
		cut = (a / b + 1) * b;
		piece = (z < cut ? z : cut) - a;
		if (z > cut && (z - cut < b ? z - cut : b) > piece)
			piece = z - cut < b ? z - cut : b;
		largest = piece > largest ? piece : largest;
	}
	return largest;
}

static int check_settings(const struct mb_plan_settings *s)
{
	if (s->stage < 1 || s->stage > 3)
		return mb_bad_input("stage %u is not a ZeRO stage (1, 2 or 3)", s->stage);
	if (!s->world_size || s->rank >= s->world_size)
		return mb_bad_input("rank %u is outside a world of %u rank%s (%s %u)", s->rank,
				    s->world_size, s->world_size == 1 ? "" : "s",
				    s->world_size == 1 ? "the one rank is" : "ranks are 0 to",
				    s->world_size ? s->world_size - 1 : 0);
	if (s->stage == 3 && !s->sub_group_size)
		return mb_bad_input("sub_group_size must be at least 1 element");
	return 0;
}

/* Whether ZeRO-1/2's Muon group cut into W ranges leaves the last rank (and so some) none. */
static bool leaves_a_rank_none(uint64_t numel_muon, uint64_t w)
{
	return w > 1 && numel_muon && (w - 1) * div_up(numel_muon, w) >= numel_muon;
}

/*
 * Under ZeRO-1/2, a world whose Muon group leaves a rank no element (more
 * ranks than the group has room for): refused, for every rank alike, so
 * that plan, predict and run say the same before anything runs.
 */
static int check_world(const struct mb_model *m, const struct mb_plan_settings *s)
{
	uint64_t w = s->world_size, most = w, first;
	char which[64];

	if (s->stage == 3 || !leaves_a_rank_none(m->numel_muon, w))
		return 0;
	while (most > 1 && leaves_a_rank_none(m->numel_muon, most))
		most--;
	first = div_up(m->numel_muon, div_up(m->numel_muon, w));
	if (first + 1 < w)
		snprintf(which, sizeof(which), "ranks %llu to %llu", (unsigned long long)first,
			 (unsigned long long)(w - 1));
	else
		snprintf(which, sizeof(which), "rank %llu", (unsigned long long)first);
	return mb_bad_input("a world of %llu ranks leaves %s no Muon matrix under ZeRO-%u (the "
			    "model's %llu Muon elements, %llu a rank): run at most %llu ranks",
			    (unsigned long long)w, which, s->stage,
			    (unsigned long long)m->numel_muon,
			    (unsigned long long)div_up(m->numel_muon, w), (unsigned long long)most);
}

int mb_plan_build(struct mb_plan *plan, const struct mb_model *m, const struct mb_plan_settings *s)
{
	uint64_t *local;
	int err;

	memset(plan, 0, sizeof(*plan));
	if ((err = check_settings(s)) || (err = check_world(m, s)))
		return err;
	plan->set = *s;
	plan->momentum_bytes = s->momentum_dtype == MB_MOM_BF16 ? 2 : sizeof(float);
	local = plan->local = calloc(m->nparams ? m->nparams : 1, sizeof(*local));
	if (!local)
		return mb_fail("out of host memory planning %zu parameters", m->nparams);
	if ((err = apply_order(plan, m))) {
		mb_plan_release(plan);
		return err;
	}
	share(plan, m, local);
	err = mb_plan_batched(s) ? plan_batches(plan, m, local) : plan_sub_groups(plan, m, local);
	if (!err)
		plan_totals(plan, m, local);
	if (!err && plan->ns_flops == UINT64_MAX)
		err = mb_bad_input("model too large: its Newton-Schulz FLOPs per step do not fit "
				   "in 64 bits");
	if (err)
		mb_plan_release(plan);
	return err;
}

void mb_plan_release(struct mb_plan *plan)
{
	free(plan->groups);
	free(plan->local);
	free(plan->order);
	memset(plan, 0, sizeof(*plan));
}

/* Bytes an element of parameter P takes in host buffer B (0: P is not in it). */
static uint64_t elem_bytes(const struct mb_plan *plan, enum mb_host_buffer b,
			   const struct mb_param *p)
{
	switch (b) {
	case MB_HOST_MOMENTUM:
		return p->muon ? plan->momentum_bytes : 0;
	case MB_HOST_ADAMW:
		return p->muon ? 0 : 2 * sizeof(float);
	case MB_HOST_STAGING:
		return 2;
	case MB_HOST_GRADS_BF16:
		return plan->set.stage == 3 ? 2 : 0;
	default:
		return sizeof(float);
	}
}

size_t mb_plan_host_cuts(const struct mb_plan *plan, const struct mb_model *m,
			 enum mb_host_buffer b, uint64_t limit, uint64_t *cuts)
{
	bool muon_only = b == MB_HOST_MOMENTUM; /* laid out in the apply order */
	uint64_t at = 0, start = 0, piece;
	size_t i, k, n = 0;

	for (k = 0; k < (muon_only ? plan->norder : m->nparams); k++) {
		i = muon_only ? plan->order[k] : k;
		piece = elem_bytes(plan, b, &m->params[i]) * plan->local[i];
		if (!piece)
			continue;
		/* close the chunk before a piece that would take it over the limit */
		if (limit && at > start && at - start + piece > limit) {
			if (cuts)
				cuts[n] = at;
			n++;
			start = at;
		}
		at += piece;
	}
	if (cuts)
		cuts[n] = at;
	return n + 1;
}

uint64_t mb_plan_host_largest_piece(const struct mb_plan *plan, const struct mb_model *m,
				    enum mb_host_buffer b)
{
	uint64_t top = 0, piece;
	size_t i;

	for (i = 0; i < m->nparams; i++) {
		piece = elem_bytes(plan, b, &m->params[i]) * plan->local[i];
		top = piece > top ? piece : top;
	}
	return top;
}

uint64_t mb_plan_pinned_bytes(const struct mb_plan *plan, bool momentum_pinned)
{
	uint64_t sum = 0;
	int b;

	for (b = 0; b < MB_HOST_NBUFFERS; b++)
		if (mb_host_buffer_on_bus(b) && (b != MB_HOST_MOMENTUM || momentum_pinned) &&
		    (b != MB_HOST_STAGING || plan->set.params_back == MB_BACK_PINNED))
			sum += plan->host_bytes[b];
	return sum;
}
