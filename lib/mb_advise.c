/*
 * mb_advise: the sweep around a baseline, each point planned, predicted and
 * held against memory; the points ranked (see mb_advise.h).
 */
#include "mb_advise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_grid.h"
#include "mb_plan.h"
#include "mb_predict.h"
#include "mb_shard.h"

bool mb_advise_beyond(const struct mb_step_settings *s)
{
	return mb_variant_prefetches(s->variant) ||
	       (s->plan.stage == 3 && s->plan.zero3_apply == MB_Z3_BATCHED);
}

const char *mb_advise_needs(const struct mb_step_settings *s)
{
	bool pins = mb_variant_pins(s->variant) && s->pin_memory,
	     overlaps = mb_variant_overlaps(s->variant);

	if (mb_advise_beyond(s)) {
		if (mb_variant_prefetches(s->variant))
			return s->plan.stage == 3 && s->plan.zero3_apply == MB_Z3_BATCHED
				       ? "beyond the reference: the next batch prefetched, and a "
					 "batched ZeRO-3 apply"
				       : "beyond the reference: the next batch prefetched";
		return pins && overlaps ? "the reference change, and a batched ZeRO-3 apply"
		       : pins		? "the pin change, and a batched ZeRO-3 apply"
		       : overlaps	? "the overlap change, and a batched ZeRO-3 apply"
					: "a batched ZeRO-3 apply (beyond the reference)";
	}
	return pins && overlaps ? "the reference change (pin and overlap)"
	       : pins		? "the pin change"
	       : overlaps	? "the overlap change"
				: "DeepSpeed master";
}

bool mb_advise_order_agrees(const double *predicted, const double *measured, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (predicted[j] > predicted[i] * (1 + MB_ADVISE_TIE) &&
			    !(measured[j] > measured[i]))
				return false;
	return true;
}

/* ---- the points ---- */

struct sweep {
	const struct mb_model *m; /* the rank's share */
	const struct mb_step_settings *base;
	const struct mb_profile *p;
	const struct mb_advise_memory *mem;
	struct mb_advise *a;
	size_t room;
	/* each kept point's plan, as a digest of its groups (points that differ in a knob
	 * that changes nothing: a gather budget past the model) */
	uint64_t *digest;
};

/* The groups of PLAN, as a number that two different cuts are unlikely to share. */
static uint64_t digest(const struct mb_plan *plan)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	size_t i;

	for (i = 0; i < plan->ngroups; i++) {
		h = (h ^ plan->groups[i].end) * 1099511628211ull;
		h = (h ^ plan->groups[i].subgroup) * 1099511628211ull;
	}
	return (h ^ plan->ngroups) * 1099511628211ull;
}

/*
 * Whether point PT fits MEM; if not, each shortfall into its reason, as the
 * fit check of run and fit words it (mb_fit_shortfalls).
 */
static int check_fit(const struct sweep *s, struct mb_advise_point *pt)
{
	struct mb_fit_cell c = {
		.plan = pt->set.plan,
		.pin_memory = pt->set.pin_memory,
		.pins_momentum = mb_variant_pins(pt->set.variant),
		.alive = mb_variant_alive(pt->set.variant),
		.tokens = pt->set.fwd_bwd ? pt->set.tokens : 0,
		.micro_batch = s->mem->micro_batch,
		.pinned_device_copy = s->mem->pinned_device_copy,
	};
	int fit;

	if (!s->mem->device && !s->mem->host)
		return 0;
	fit = mb_fit_shortfalls(s->m, &c, s->mem->host, s->mem->device, pt->reason,
				sizeof(pt->reason));
	if (fit < 0)
		return fit;
	if (!fit)
		pt->drop = MB_ADVISE_NO_FIT;
	return 0;
}

static unsigned changes(const struct mb_step_settings *b, const struct mb_step_settings *s)
{
	unsigned stage = s->plan.stage;

	return (s->variant != b->variant) + (s->pin_memory != b->pin_memory) +
	       (s->plan.zero3_apply != b->plan.zero3_apply && stage == 3) +
	       (s->plan.sub_group_size != b->plan.sub_group_size && stage == 3) +
	       (s->plan.gather_budget_bytes != b->plan.gather_budget_bytes &&
		mb_grid_reads_gather_budget(stage, s->plan.zero3_apply));
}

/*
 * Point SET: planned, predicted and checked into *pt; *dig its plan's
 * digest. A plan that cannot be made drops the point (its reason the plan's).
 */
static int point(const struct sweep *s, const struct mb_step_settings *set,
		 struct mb_advise_point *pt, uint64_t *dig)
{
	struct mb_step_settings one = *set;
	struct mb_plan plan;
	uint64_t step;
	int err;

	memset(pt, 0, sizeof(*pt));
	pt->set = *set;
	pt->changes = changes(s->base, set);
	/* the rank's share is planned as a world of one, as a rank runs it (mb_shard) */
	one.plan.world_size = 1;
	one.plan.rank = 0;
	if ((err = mb_plan_build(&plan, s->m, &one.plan))) {
		if (err != -MB_EINPUT)
			return err;
		pt->drop = MB_ADVISE_NO_PLAN;
		snprintf(pt->reason, sizeof(pt->reason), "%s", mb_errmsg());
		return 0;
	}
	*dig = digest(&plan);
	if ((err = mb_predict_step(s->m, &plan, &one, s->p, &pt->t)))
		goto out;
	step = mb_plan_peak_step_bytes(&plan, mb_variant_alive(set->variant));
	pt->peak_step_bytes = step;
	pt->peak_device_bytes = plan.peak_forward_bytes > plan.peak_backward_bytes
					? plan.peak_forward_bytes
					: plan.peak_backward_bytes;
	if (step > pt->peak_device_bytes)
		pt->peak_device_bytes = step;
	pt->pinned_host_bytes =
		set->pin_memory ? mb_plan_pinned_bytes(&plan, mb_variant_pins(set->variant)) : 0;
	err = check_fit(s, pt);
out:
	mb_plan_release(&plan);
	return err;
}

/* Whether a kept point of the same variant, pinning and apply has the plan DIG. */
static bool same_plan(const struct sweep *s, const struct mb_step_settings *set, uint64_t dig)
{
	size_t i;

	for (i = 0; i < s->a->npoints; i++) {
		const struct mb_step_settings *o = &s->a->points[i].set;

		if (s->a->points[i].drop == MB_ADVISE_KEPT && s->digest[i] == dig &&
		    o->variant == set->variant && o->pin_memory == set->pin_memory &&
		    o->plan.zero3_apply == set->plan.zero3_apply)
			return true;
	}
	return false;
}

static int add(struct sweep *s, const struct mb_step_settings *set)
{
	struct mb_advise_point pt, *grown;
	uint64_t dig = 0, *dgrown;
	int err;

	if ((err = point(s, set, &pt, &dig)))
		return err;
	if (pt.drop == MB_ADVISE_KEPT && same_plan(s, set, dig)) {
		s->a->nsame++;
		return 0;
	}
	if (s->a->npoints == s->room) {
		s->room = s->room ? 2 * s->room : 64;
		if (!(grown = realloc(s->a->points, s->room * sizeof(*grown))))
			return mb_fail("out of host memory for %zu points", s->room);
		s->a->points = grown;
		if (!(dgrown = realloc(s->digest, s->room * sizeof(*dgrown))))
			return mb_fail("out of host memory for %zu points", s->room);
		s->digest = dgrown;
	}
	s->digest[s->a->npoints] = dig;
	s->a->points[s->a->npoints++] = pt;
	return 0;
}

/* LIST (N values) with V first and once: the baseline's value leads its list. */
static size_t with_first(uint64_t *out, uint64_t v, const uint64_t *list, size_t n)
{
	size_t i, k = 0;

	out[k++] = v;
	for (i = 0; i < n && k < MB_ADVISE_LIST_MAX + 1; i++)
		if (list[i] != v)
			out[k++] = list[i];
	return k;
}

/* Every point of SPACE: variants, pinning, applies, budgets, sub-groups, the baseline's first. */
static int sweep_all(struct sweep *s, const struct mb_advise_space *space)
{
	const struct mb_step_settings *b = s->base;
	uint64_t budgets[MB_ADVISE_LIST_MAX + 1], groups[MB_ADVISE_LIST_MAX + 1];
	size_t nb, ng, v, p, z, i, k, nz = b->plan.stage == 3 ? space->napplies : 1;
	struct mb_step_settings set;
	int err;

	nb = with_first(budgets, b->plan.gather_budget_bytes, space->gather_budgets,
			space->ngather_budgets);
	ng = with_first(groups, b->plan.sub_group_size, space->sub_group_sizes,
			space->nsub_group_sizes);
	for (v = 0; v < space->nvariants; v++)
		for (p = 0; p < space->npin; p++)
			for (z = 0; z < nz; z++) {
				set = *b;
				set.variant = space->variants[v];
				set.pin_memory = space->pin_memory[p];
				/* unpinned, a pinning variant is its twin that does not pin */
				if (!set.pin_memory && mb_variant_pins(set.variant))
					continue;
				if (b->plan.stage == 3)
					set.plan.zero3_apply = space->applies[z];
				for (i = 0; i < nb; i++) {
					if (i && !mb_grid_reads_gather_budget(set.plan.stage,
									      set.plan.zero3_apply))
						break;
					set.plan.gather_budget_bytes = budgets[i];
					for (k = 0; k < ng; k++) {
						if (k &&
						    !mb_grid_reads_sub_group_size(set.plan.stage))
							break;
						set.plan.sub_group_size = groups[k];
						if ((err = add(s, &set)))
							return err;
					}
				}
			}
	return 0;
}

/* Whether A is to be advised over B, both within a tie of the fastest left. */
static bool cheaper(const struct mb_advise_point *a, const struct mb_advise_point *b)
{
	if (a->peak_device_bytes != b->peak_device_bytes)
		return a->peak_device_bytes < b->peak_device_bytes;
	if (a->peak_step_bytes != b->peak_step_bytes)
		return a->peak_step_bytes < b->peak_step_bytes;
	if (a->pinned_host_bytes != b->pinned_host_bytes)
		return a->pinned_host_bytes < b->pinned_host_bytes;
	if (a->changes != b->changes)
		return a->changes < b->changes;
	return a->t.iter_s < b->t.iter_s;
}

/*
 * Whether B, ranked below A, offers nothing A does not: the same code and
 * pinning, a tie in both times, the same peak and pinned memory and no
 * smaller step peak (the sub-group size of a batched apply, a budget that
 * changes the batches but not the time).
 */
static bool equivalent(const struct mb_advise_point *a, const struct mb_advise_point *b)
{
	return a->set.variant == b->set.variant && a->set.pin_memory == b->set.pin_memory &&
	       a->set.plan.zero3_apply == b->set.plan.zero3_apply &&
	       fabs(a->t.iter_s - b->t.iter_s) <= MB_ADVISE_TIE * a->t.iter_s &&
	       fabs(a->t.apply_s - b->t.apply_s) <= MB_ADVISE_TIE * a->t.apply_s &&
	       a->peak_device_bytes == b->peak_device_bytes &&
	       a->pinned_host_bytes == b->pinned_host_bytes &&
	       b->peak_step_bytes >= a->peak_step_bytes;
}

/*
 * The kept points first, ranked: again and again, of those left, the
 * cheapest of the ones within a tie of the fastest, and those equivalent to
 * it left out (counted in nsame); then the dropped, in the sweep's order.
 */
static void rank(struct mb_advise *a)
{
	struct mb_advise_point tmp;
	size_t i, k, best, done = 0;
	double fastest;

	for (i = 0; i < a->npoints; i++)
		if (a->points[i].drop == MB_ADVISE_KEPT) {
			tmp = a->points[i];
			memmove(&a->points[done + 1], &a->points[done],
				(i - done) * sizeof(a->points[0]));
			a->points[done++] = tmp;
		}
	a->nkept = done;
	for (k = 0; k < a->nkept; k++) {
		fastest = INFINITY;
		for (i = k; i < a->nkept; i++)
			fastest = fmin(fastest, a->points[i].t.iter_s);
		best = SIZE_MAX;
		for (i = k; i < a->nkept; i++)
			if (a->points[i].t.iter_s <= fastest * (1 + MB_ADVISE_TIE) &&
			    (best == SIZE_MAX || cheaper(&a->points[i], &a->points[best])))
				best = i;
		tmp = a->points[best];
		memmove(&a->points[k + 1], &a->points[k], (best - k) * sizeof(a->points[0]));
		a->points[k] = tmp;
		for (i = k + 1; i < a->nkept;) {
			if (!equivalent(&a->points[k], &a->points[i])) {
				i++;
				continue;
			}
			memmove(&a->points[i], &a->points[i + 1],
				(a->npoints - i - 1) * sizeof(a->points[0]));
			a->nkept--;
			a->npoints--;
			a->nsame++;
		}
	}
}

int mb_advise_sweep(struct mb_advise *a, const struct mb_model *m,
		    const struct mb_step_settings *base, const struct mb_advise_space *space,
		    const struct mb_profile *p, const struct mb_advise_memory *mem)
{
	struct sweep s = { .base = base, .mem = mem, .a = a, .p = &a->profile };
	struct mb_model share = { 0 };
	uint64_t dig;
	int err;

	memset(a, 0, sizeof(*a));
	mb_profile_for_ranks(&a->profile, p, base->plan.world_size);
	s.m = m;
	if (base->plan.world_size > 1) {
		if ((err = mb_shard_model(&share, m, &base->plan)))
			return err;
		s.m = &share;
	}
	if ((err = point(&s, base, &a->base, &dig)))
		goto out;
	if (a->base.drop == MB_ADVISE_NO_PLAN) {
		err = mb_bad_input("the baseline: %s", a->base.reason);
		goto out;
	}
	if ((err = sweep_all(&s, space)))
		goto out;
	rank(a);
out:
	free(s.digest);
	mb_model_release(&share);
	return err;
}

void mb_advise_release(struct mb_advise *a)
{
	free(a->points);
	a->points = NULL;
	a->npoints = a->nkept = 0;
}
