/*
 * predict: the model of the step (mb_predict) for each stage and variant
 * asked, from a device profile (--profile, then the options that set its
 * fields), as the reference's tables, CSV rows or JSON. One option's list
 * sweeps its field: the cells are predicted for each value. With
 * --world-size W, rank --rank of W ranks on one host: its share of the model
 * (mb_shard, as run under MPI runs it) on the profile that a rank sees when W
 * share the host (mb_profile_for_ranks).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "mb_err.h"
#include "mb_grid.h"
#include "mb_num.h"
#include "mb_phase.h"
#include "mb_plan.h"
#include "mb_predict.h"
#include "mb_profile.h"
#include "mb_shard.h"
#include "mb_timeline.h"
#include "print.h"
#include "setup.h"

#define SWEEP_MAX  64
#define NCELLS_MAX (3 * MB_NVARIANTS)

/* predict's options that set profile fields, and the fields they set */
struct flag {
	const char *option, *key, *key2;
};

#define FLAG_ENTRY(id, name, key, key2, help) [MB_PF_##id] = { name, key, key2 },
static const struct flag flags[MB_PREDICT_NFLAGS] = { MB_PREDICT_FLAGS(FLAG_ENTRY) };
#undef FLAG_ENTRY

/* Set flag F's fields of *P to VALUE; --ns-gflops sets METHOD's rate. */
static int set_flag(struct mb_profile *p, size_t f, const char *value, enum mb_ns_method method)
{
	const char *key = flags[f].key;
	char what[64];
	int err;

	snprintf(what, sizeof(what), "--%s", flags[f].option);
	if (f == MB_PF_NS)
		key = method == MB_NS_GRAM ? "ns_gram_gflops" : "ns_standard_gflops";
	if ((err = mb_profile_set(p, key, value, what)))
		return err;
	return flags[f].key2 ? mb_profile_set(p, flags[f].key2, value, what) : 0;
}

/*
 * Whether flag G sets one of the fields that flag F sets with another
 * (--pageable-h2d-gbs against --pageable-gbs): the rule is that the narrower
 * option, given, wins over the wider one, given or swept.
 */
static bool narrower(size_t g, size_t f)
{
	const struct flag *a = &flags[g], *b = &flags[f];

	return g != f && a->key && !a->key2 && b->key && b->key2 &&
	       (!strcmp(a->key, b->key) || !strcmp(a->key, b->key2));
}

/* Set flag F's fields of *P to VALUE, then again every narrower flag that ARGS gives one value. */
static int set_wider(struct mb_profile *p, const struct mb_args *args, size_t f, const char *value,
		     enum mb_ns_method method)
{
	size_t g;
	int err;

	if ((err = set_flag(p, f, value, method)))
		return err;
	for (g = 0; g < MB_PREDICT_NFLAGS; g++)
		if (args->profile_flags[g] && !strchr(args->profile_flags[g], ',') &&
		    narrower(g, f) && (err = set_flag(p, g, args->profile_flags[g], method)))
			return err;
	return 0;
}

struct sweep {
	int flag; /* -1: none */
	char copy[512];
	const char *values[SWEEP_MAX];
	size_t n;
};

/* Split LIST (of flag F) into S's values. */
static int split(struct sweep *s, size_t f, const char *list)
{
	char *p;

	if (strlen(list) >= sizeof(s->copy))
		return mb_bad_input("--%s: the list '%.40s...' is too long", flags[f].option, list);
	snprintf(s->copy, sizeof(s->copy), "%s", list);
	s->flag = (int)f;
	s->n = 0;
	for (p = s->copy;; p++) {
		if (s->n == SWEEP_MAX)
			return mb_bad_input("--%s: more than %d values in '%s'", flags[f].option,
					    SWEEP_MAX, list);
		s->values[s->n++] = p;
		if (!(p = strchr(p, ',')))
			return 0;
		*p = '\0';
	}
}

/*
 * The profile of --profile with the options' fields set into *base, and the
 * sweep (the one option given a list) into *s, each of its values checked.
 */
static int build_profile(const struct mb_args *args, enum mb_ns_method method,
			 struct mb_profile *base, struct sweep *s)
{
	struct mb_profile scratch;
	size_t f, i;
	int err;

	s->flag = -1;
	if ((err = mb_profile_load(base, args->profile ? args->profile : "reference")))
		return err;
	for (f = 0; f < MB_PREDICT_NFLAGS; f++) {
		const char *v = args->profile_flags[f];

		if (!v)
			continue;
		if (!strchr(v, ',')) {
			if ((err = set_wider(base, args, f, v, method)))
				return err;
			continue;
		}
		if (s->flag >= 0)
			return mb_bad_input("--%s and --%s both give a list: predict sweeps one "
					    "field at a time",
					    flags[s->flag].option, flags[f].option);
		if ((err = split(s, f, v)))
			return err;
	}
	for (i = 0; s->flag >= 0 && i < s->n; i++) {
		scratch = *base;
		if ((err = set_wider(&scratch, args, (size_t)s->flag, s->values[i], method)))
			return err;
	}
	return 0;
}

struct cell {
	unsigned stage;
	enum mb_variant variant;
	struct mb_step_times t;
	uint64_t peak_step_bytes, peak_device_own_bytes;
};

struct grid {
	const struct mb_args *args;
	struct mb_model model;
	struct mb_model shard[4]; /* by stage: the rank's share, with --world-size over 1 */
	struct mb_grid grid;	  /* every cell, in mb_grid's order */
	/* the cells at the point of the --gather-budget, --sub-group-size sweep in hand: */
	const struct mb_grid_cell *at[NCELLS_MAX];
	const struct mb_model *models[NCELLS_MAX]; /* the model each cell's plan is of */
	struct mb_plan plans[NCELLS_MAX];
	struct mb_step_settings set[NCELLS_MAX];
	struct cell cells[NCELLS_MAX]; /* their predictions */
	size_t ncells;
	uint64_t budget, sub_group; /* the point */
	struct point *points;	    /* every point's cells, for the trade-off table */
	size_t npoints;
	struct mb_timeline timeline; /* --timeline's; its f NULL: none */
};

/* One cell at one point of a sweep of the gather budget and the sub-group size. */
struct point {
	uint64_t budget, sub_group;
	struct cell cell;
};

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* Every cell at G's point on the device *P describes. */
static int predict_cells(struct grid *g, const struct mb_profile *p)
{
	size_t i;
	int err;

	for (i = 0; i < g->ncells; i++) {
		const struct mb_plan *plan = &g->plans[i];
		struct cell *c = &g->cells[i];

		c->stage = g->at[i]->stage;
		c->variant = g->at[i]->variant;
		if ((err = mb_predict_step(g->models[i], plan, &g->set[i], p, &c->t)))
			return err;
		c->peak_step_bytes = mb_plan_peak_step_bytes(plan, mb_variant_alive(c->variant));
		c->peak_device_own_bytes = max3(plan->peak_forward_bytes, plan->peak_backward_bytes,
						c->peak_step_bytes);
	}
	return 0;
}

/* ---- Markdown ---- */

/* The base variant (master) of C's stage, unless C is it or there is none. */
static const struct cell *base_of(const struct grid *g, const struct cell *c)
{
	size_t i;

	if (c->variant == MB_VARIANT_BASE)
		return NULL;
	for (i = 0; i < g->ncells; i++)
		if (g->cells[i].stage == c->stage && g->cells[i].variant == MB_VARIANT_BASE)
			return &g->cells[i];
	return NULL;
}

static void md_tables(const struct grid *g)
{
	const struct mb_printer *md = mb_printer(MB_FORMAT_MD);
	char a[32], b[32], c1[32], c2[32], it[64], ap[64], pk[2][32], v[MB_NPHASES + 1][32];
	const char *text[MB_NPHASES + 1];
	struct mb_field f[MB_NPHASES + 3];
	size_t i, k;

	for (i = 0; i < g->ncells; i++) {
		const struct cell *c = &g->cells[i], *base = base_of(g, c);

		snprintf(it, sizeof(it), "%s%s", mb_fmt_secs(a, sizeof(a), c->t.iter_s),
			 mb_fmt_change(c1, sizeof(c1), c->t.iter_s, base ? base->t.iter_s : NAN));
		snprintf(ap, sizeof(ap), "%s s%s", mb_fmt_secs(b, sizeof(b), c->t.apply_s),
			 mb_fmt_change(c2, sizeof(c2), c->t.apply_s, base ? base->t.apply_s : NAN));
		f[0] = MB_FIELD_N("ZeRO", c->stage);
		f[1] = MB_FIELD_T("Variant", mb_variant_name(c->variant));
		f[2] = MB_FIELD_T("Iteration mean", it);
		f[3] = MB_FIELD_T("Muon apply mean", ap);
		f[4] = MB_FIELD_T("Peak device memory (plan)",
				  mb_fmt_peak(pk[0], sizeof(pk[0]), c->peak_device_own_bytes));
		f[5] = MB_FIELD_T("step peak (plan)",
				  mb_fmt_peak(pk[1], sizeof(pk[1]), c->peak_step_bytes));
		md->record(f, 6, !i);
	}
	printf("\nPhases (s): the run's, device spans summed by kind; D2H hidden is the part of "
	       "the D2H the compute queue was busy too.\n\n");
#define VALUE_(e, f, ...) p->f,
	for (i = 0; i < g->ncells; i++) {
		const struct mb_phase_times *p = &g->cells[i].t.phase;
		double secs[] = { MB_PHASES(VALUE_) p->d2h_hidden_s };

		for (k = 0; k <= MB_NPHASES; k++)
			text[k] = mb_fmt_secs(v[k], sizeof(v[k]), secs[k]);
		f[0] = MB_FIELD_N("ZeRO", g->cells[i].stage);
		f[1] = MB_FIELD_T("Variant", mb_variant_name(g->cells[i].variant));
		md->record(f, 2 + mb_phase_fields(f + 2, "d2h hidden", text), !i);
	}
#undef VALUE_
}

/* "104887" for one rate, else "15.5 to 36.9 (3 sizes)", into BUF. */
static const char *ladder_text(char *buf, size_t len, const struct mb_profile_ladder *l)
{
	double lo = l->value[0], hi = l->value[0];
	size_t i;

	for (i = 1; i < l->n; i++) {
		lo = fmin(lo, l->value[i]);
		hi = fmax(hi, l->value[i]);
	}
	if (lo == hi)
		snprintf(buf, len, "%g", lo);
	else
		snprintf(buf, len, "%g to %g (%zu sizes)", lo, hi, l->n);
	return buf;
}

static void md_profile(const struct mb_profile *p)
{
	char gram[64], standard[64], name[MB_MD_LEN(sizeof(p->name))],
		device[MB_MD_LEN(sizeof(p->device))];

	printf("Profile '%s' (%s): H2D %g / D2H %g GB/s pinned (%g both at once), %g / %g "
	       "pageable (%g), pageable copies %s the host, %g of one exposed beside a kernel; Newton-Schulz %s GFLOP/s gram (%s), "
	       "%s standard (%s); momentum kernel %g GB/s, norm %g GB/s; forward/backward %g GFLOP/s; "
	       "host optimizer %g GB/s, memcpy %g GB/s; %g us a command.\n\n",
	       mb_md(name, sizeof(name), p->name), mb_md(device, sizeof(device), p->device),
	       p->h2d_pinned_gbs, p->d2h_pinned_gbs, p->both_pinned_gbs, p->h2d_pageable_gbs,
	       p->d2h_pageable_gbs, p->both_pageable_gbs,
	       p->pageable_holds_host ? "hold" : "do not hold", p->pageable_exposed_frac,
	       ladder_text(gram, sizeof(gram), &p->ns_gram_gflops),
	       p->ns_gram_precision[0] ? p->ns_gram_precision : "fp32",
	       ladder_text(standard, sizeof(standard), &p->ns_standard_gflops),
	       p->ns_standard_precision[0] ? p->ns_standard_precision : "fp32", p->momentum_gbs,
	       p->norm_gbs, p->fwd_bwd_gflops, p->host_opt_gbs, p->memcpy_gbs,
	       p->command_overhead_us);
}

/* ---- CSV, JSON ---- */

static void print_cells(const struct grid *g, const struct mb_profile *p, const char *option,
			const char *value, bool *first)
{
	size_t i;

	for (i = 0; i < g->ncells; i++) {
		const struct cell *c = &g->cells[i];
		const struct mb_phase_times *ph = &c->t.phase;
		struct mb_field f[] = {
			MB_FIELD_T("profile", p->name),
			MB_FIELD_T("model", g->model.name),
			MB_FIELD_T("sweep_option", option),
			MB_FIELD_T("sweep_value", value),
			MB_FIELD_N("stage", c->stage),
			MB_FIELD_T("variant", mb_variant_name(c->variant)),
			MB_FIELD_F("iter_mean_s", c->t.iter_s),
			MB_FIELD_F("apply_mean_s", c->t.apply_s),
			MB_FIELD_N("peak_step_bytes", c->peak_step_bytes),
			MB_FIELD_N("peak_device_own_bytes", c->peak_device_own_bytes),
#define FIELD_(e, f, ...) MB_FIELD_F(#f, ph->f),
			MB_PHASES_TO_D2H(FIELD_)
				MB_FIELD_F("d2h_hidden_frac",
					   ph->d2h_s > 0 ? ph->d2h_hidden_s / ph->d2h_s : NAN),
			MB_PHASES_AFTER_D2H(FIELD_)
#undef FIELD_
				MB_FIELD_N("gather_budget_bytes", g->budget),
			MB_FIELD_N("sub_group_size_elems", g->sub_group),
			MB_FIELD_N("world_size", g->args->world_size),
			MB_FIELD_N("rank", g->args->rank),
		};

		mb_printer(g->args->format)->record(f, sizeof(f) / sizeof(f[0]), *first);
		*first = false;
	}
}

static int setup_grid(struct grid *g, const struct mb_args *args)
{
	int err;

	if ((err = mb_setup_grid(args, true, &g->grid)))
		return err;
	if (g->grid.npoints > 1 &&
	    !(g->points = calloc(g->grid.npoints * NCELLS_MAX, sizeof(*g->points)))) {
		mb_grid_release(&g->grid);
		return mb_fail("out of host memory for %zu points of the sweep", g->grid.npoints);
	}
	if ((err = mb_setup_model(args, &g->model))) {
		mb_grid_release(&g->grid);
		free(g->points);
		return err;
	}
	return 0;
}

static void release_plans(struct grid *g)
{
	size_t i;

	for (i = 0; i < g->ncells; i++)
		mb_plan_release(&g->plans[i]);
	g->ncells = 0;
}

/*
 * The model of cell C's plan, and its plan settings' world: the whole model
 * in a world of one; else the rank's share of the stage's (built once a
 * stage), run as a world of one, as a rank runs under MPI (mb_shard).
 */
static int model_of(struct grid *g, const struct mb_grid_cell *c, struct mb_step_settings *set,
		    const struct mb_model **m)
{
	struct mb_model *shard = &g->shard[c->stage];
	int err;

	*m = &g->model;
	if (set->plan.world_size <= 1)
		return 0;
	if (!shard->nparams && (err = mb_shard_model(shard, &g->model, &set->plan)))
		return err;
	set->plan.world_size = 1;
	set->plan.rank = 0;
	*m = shard;
	return 0;
}

/* The settings and plan of each cell at the sweep's point POINT; none: g->ncells 0. */
static int build_plans(struct grid *g, size_t point)
{
	const struct mb_u64_list *gb = &g->args->gather_budgets, *sg = &g->args->sub_group_sizes;
	size_t i;
	int err;

	g->ncells = 0;
	g->budget = gb->v[point / sg->n];
	g->sub_group = sg->v[point % sg->n];
	for (i = 0; i < g->grid.ncells; i++) {
		const struct mb_grid_cell *c = &g->grid.cells[i];

		if (c->point != point)
			continue;
		/* predict has no device: Newton-Schulz's rates are the profile's */
		mb_setup_step_settings(g->args, c, MB_PREC_FP32, &g->set[g->ncells]);
		g->set[g->ncells].timeline = g->timeline.f ? &g->timeline : NULL;
		if ((err = model_of(g, c, &g->set[g->ncells], &g->models[g->ncells])) ||
		    (err = mb_plan_build(&g->plans[g->ncells], g->models[g->ncells],
					 &g->set[g->ncells].plan))) {
			release_plans(g);
			return err;
		}
		g->at[g->ncells++] = c;
	}
	return 0;
}

static void release_grid(struct grid *g)
{
	unsigned stage;

	for (stage = 0; stage < 4; stage++)
		mb_model_release(&g->shard[stage]);
	mb_model_release(&g->model);
	mb_grid_release(&g->grid);
	free(g->points);
}

/* The sweep's memory-speed trade-off: every point's cells in one table. */
static void md_tradeoff(const struct grid *g)
{
	char a[32], b[32], c[32], d[32], ap[40], pk[32];
	size_t i;

	printf("\n## The trade-off: every point of the sweep\n\n");
	for (i = 0; i < g->npoints; i++) {
		const struct point *p = &g->points[i];

		snprintf(ap, sizeof(ap), "%s s", mb_fmt_secs(d, sizeof(d), p->cell.t.apply_s));
		struct mb_field f[] = {
			MB_FIELD_T("--gather-budget", mb_fmt_bytes_iec(a, sizeof(a), p->budget)),
			MB_FIELD_T("--sub-group-size (elements)",
				   mb_fmt_grouped(b, sizeof(b), p->sub_group)),
			MB_FIELD_N("ZeRO", p->cell.stage),
			MB_FIELD_T("Variant", mb_variant_name(p->cell.variant)),
			MB_FIELD_T("Iteration", mb_fmt_secs(c, sizeof(c), p->cell.t.iter_s)),
			MB_FIELD_T("Muon apply", ap),
			MB_FIELD_T("step peak (plan)",
				   mb_fmt_peak(pk, sizeof(pk), p->cell.peak_step_bytes)),
		};

		mb_printer(MB_FORMAT_MD)->record(f, 7, !i);
	}
}

/* The sweep's point as sweep_option and sweep_value ("" where nothing is swept). */
static void point_names(const struct mb_args *args, const struct grid *g, char *opt, size_t nopt,
			char *val, size_t nval)
{
	bool gb = args->gather_budgets.n > 1, sg = args->sub_group_sizes.n > 1;

	snprintf(opt, nopt, "%s%s%s", gb ? "gather-budget" : "", gb && sg ? "," : "",
		 sg ? "sub-group-size" : "");
	if (gb && sg)
		snprintf(val, nval, "%llu,%llu", (unsigned long long)g->budget,
			 (unsigned long long)g->sub_group);
	else if (gb || sg)
		snprintf(val, nval, "%llu", (unsigned long long)(gb ? g->budget : g->sub_group));
	else
		val[0] = '\0';
}

/* The cells of one point: predicted under each profile of the profile sweep, printed. */
static int predict_point(struct grid *g, const struct mb_profile *base, const struct sweep *sw,
			 bool md, bool *first)
{
	const struct mb_args *args = g->args;
	bool knobs = g->points != NULL;
	char opt[64], val[64];
	struct mb_profile swept, p;
	size_t i, k, n = sw->flag >= 0 ? sw->n : 1;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		swept = *base;
		if (sw->flag >= 0)
			set_wider(&swept, args, (size_t)sw->flag, sw->values[i],
				  mb_args_ns_method(args));
		mb_profile_for_ranks(&p, &swept, (unsigned)args->world_size);
		if ((err = predict_cells(g, &p)))
			break;
		for (k = 0; knobs && k < g->ncells; k++)
			g->points[g->npoints++] =
				(struct point){ g->budget, g->sub_group, g->cells[k] };
		if (!md) {
			if (knobs)
				point_names(args, g, opt, sizeof(opt), val, sizeof(val));
			print_cells(g, &p,
				    knobs	    ? opt
				    : sw->flag >= 0 ? flags[sw->flag].option
						    : "",
				    knobs	    ? val
				    : sw->flag >= 0 ? sw->values[i]
						    : "",
				    first);
			continue;
		}
		if (sw->flag >= 0)
			printf("%s## --%s %s\n\n", *first ? "" : "\n", flags[sw->flag].option,
			       sw->values[i]);
		if (knobs)
			printf("%s## --gather-budget %s --sub-group-size %s elements\n\n",
			       *first ? "" : "\n", mb_fmt_bytes_iec(opt, sizeof(opt), g->budget),
			       mb_fmt_grouped(val, sizeof(val), g->sub_group));
		*first = false;
		md_profile(&p);
		md_tables(g);
	}
	return err;
}

int mb_cmd_predict(const struct mb_args *args)
{
	bool md = args->format == MB_FORMAT_MD, first = true;
	struct mb_profile base;
	struct sweep sw;
	struct grid *g;
	size_t point;
	int err;

	if (!(g = calloc(1, sizeof(*g))))
		return mb_fail("out of host memory");
	g->args = args;
	if ((err = setup_grid(g, args))) {
		free(g);
		return err;
	}
	if ((err = build_plans(g, 0))) /* a bad budget refused before anything is printed */
		goto out;
	release_plans(g);
	if ((err = build_profile(args, mb_args_ns_method(args), &base, &sw)))
		goto out;
	if (sw.flag >= 0 && g->points) {
		err = mb_bad_input("--%s and --gather-budget or --sub-group-size give lists: "
				   "predict sweeps the profile or the knobs, not both",
				   flags[sw.flag].option);
		goto out;
	}
	if (args->timeline && sw.flag >= 0) {
		err = mb_bad_input("--timeline and a list for --%s: a timeline's rows do not say "
				   "which profile predicted them; give one value",
				   flags[sw.flag].option);
		goto out;
	}
	if (args->timeline && (err = mb_timeline_open(&g->timeline, args->timeline)))
		goto out;
	if (md) {
		char name[MB_MD_LEN(sizeof(g->model.name))],
			source[MB_MD_LEN(sizeof(g->model.source))];

		printf("# Predicted: %s (%s), %u layer%s, %s\n\n",
		       mb_md(name, sizeof(name), g->model.name),
		       mb_md(source, sizeof(source), g->model.source), g->model.layers,
		       g->model.layers == 1 ? "" : "s",
		       "from the device profile below, with no device");
		if (args->world_size > 1)
			printf("Rank %llu of %llu ranks on one host, in lockstep: its share of the "
			       "model, each rank's own device and link, the host's memory and "
			       "cores shared by all (the profile below is a rank's; "
			       "docs/predict.md).\n\n",
			       (unsigned long long)args->rank,
			       (unsigned long long)args->world_size);
	}
	for (point = 0; point < g->grid.npoints && !err; point++) {
		if ((err = build_plans(g, point)) || !g->ncells) /* none: no stage reads it */
			continue;
		err = predict_point(g, &base, &sw, md, &first);
		release_plans(g);
	}
	if (md && !err && g->points)
		md_tradeoff(g);
	if (!md && !err)
		mb_printer(args->format)->end(!first);
out:
	err = mb_timeline_close(&g->timeline, err);
	release_grid(g);
	free(g);
	return err;
}
