/*
 * advise: the offload settings of a DeepSpeed config worth changing, what
 * each buys and costs, from a device profile (mb_advise's sweep: plans,
 * predictions, the fit check's figures); printed as a table of the baseline
 * and the best points, and the DeepSpeed config patch of the best. With
 * --confirm, the baseline and the two best points run on the device (this
 * program's run, in a child per run, the points taking turns) and their
 * measured order is held against the predicted one.
 */
#define _DEFAULT_SOURCE /* mkdtemp, realpath */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "commands.h"
#include "mb_advise.h"
#include "mb_cl.h"
#include "mb_clock.h"
#include "mb_dsconfig.h"
#include "mb_err.h"
#include "mb_host.h"
#include "mb_num.h"
#include "mb_results.h"
#include "print.h"
#include "setup.h"

#define SHOWN	 5 /* the best points in the table */
#define CONFIRMS 3 /* the baseline and the two best */

struct advice {
	const struct mb_args *args;
	struct mb_model model;
	struct mb_step_settings base;
	struct mb_advise_space space;
	struct mb_profile profile;
	char profile_why[512]; /* where the profile comes from, for people */
	struct mb_cl_device_info dev;
	bool have_dev, local; /* a device found; the memory checked is its and this host's */
	struct mb_fit_device fit_dev;
	struct mb_fit_host fit_host;
	char memory_why[512];
	struct mb_advise a;
	/* --confirm: the points run (the baseline first), measured */
	const struct mb_advise_point *run[CONFIRMS];
	double meas_iter[CONFIRMS], meas_apply[CONFIRMS];
	size_t nrun;
	bool agrees;
};

/* ---- setup ---- */

/* The ds-config must offload the optimizer to the CPU: advise reads its offload settings. */
static int check_ds_config(const struct mb_args *args)
{
	struct mb_dsconfig ds;
	int err;

	if (!args->ds_config)
		return mb_bad_input("advise needs --ds-config FILE: the DeepSpeed config whose "
				    "offload settings are the baseline");
	err = mb_dsconfig_load_file(&ds, args->ds_config);
	if (!err && !ds.offload_cpu)
		err = mb_bad_input("%s: no zero_optimization.offload_optimizer with \"device\": "
				   "\"cpu\": the config does not offload the optimizer, and advise "
				   "advises on CPU offload",
				   ds.source);
	mb_dsconfig_release(&ds);
	return err;
}

/* The variants without a prefetch: those some DeepSpeed has (mb_advise_needs). */
static void deepspeed_variants(struct mb_advise_space *sp)
{
	unsigned v;

	for (v = 0; v < MB_NVARIANTS; v++)
		if (!mb_variant_prefetches((enum mb_variant)v))
			sp->variants[sp->nvariants++] = (enum mb_variant)v;
}

/*
 * What is swept: an option given on the command line fixes its setting (or
 * its list sweeps those values); the others are swept, the baseline's
 * value among them.
 */
static void build_space(struct advice *ad)
{
	static const uint64_t budgets[] = MB_ADVISE_GATHER_BUDGETS,
			      groups[] = MB_ADVISE_SUB_GROUP_SIZES;
	const struct mb_args *args = ad->args;
	struct mb_advise_space *sp = &ad->space;
	enum mb_zero3_apply apply = (enum mb_zero3_apply)mb_args_knob(args, MB_KNOB_ZERO3_APPLY, 3);
	size_t i;

	if (mb_args_given(args, "variant"))
		for (i = 0; i < args->nvariants; i++)
			sp->variants[sp->nvariants++] = args->variant_list[i];
	else
		deepspeed_variants(sp);
	sp->pin_memory[sp->npin++] = args->pin_memory_on;
	if (!mb_args_given(args, "pin-memory"))
		sp->pin_memory[sp->npin++] = !args->pin_memory_on;
	if (mb_args_given(args, "gather-budget"))
		for (i = 0; i < args->gather_budgets.n && i < MB_ADVISE_LIST_MAX; i++)
			sp->gather_budgets[sp->ngather_budgets++] = args->gather_budgets.v[i];
	else
		for (i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++)
			sp->gather_budgets[sp->ngather_budgets++] = budgets[i];
	if (mb_args_given(args, "sub-group-size"))
		for (i = 0; i < args->sub_group_sizes.n && i < MB_ADVISE_LIST_MAX; i++)
			sp->sub_group_sizes[sp->nsub_group_sizes++] = args->sub_group_sizes.v[i];
	else
		for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
			sp->sub_group_sizes[sp->nsub_group_sizes++] = groups[i];
	sp->applies[sp->napplies++] = apply;
	if (!mb_args_given(args, "zero3-apply"))
		sp->applies[sp->napplies++] = apply == MB_Z3_SUBGROUP ? MB_Z3_BATCHED
								      : MB_Z3_SUBGROUP;
}

/* The baseline: the config's settings, the first variant asked, the first of each list. */
static void build_base(struct advice *ad)
{
	const struct mb_args *args = ad->args;
	struct mb_grid_cell c = {
		.stage = args->stage_list[0],
		.variant = ad->space.variants[0],
		.gather_budget_bytes = args->gather_budget,
		.sub_group_size = args->sub_group_size,
	};

	/* no device: Newton-Schulz's rates are the profile's (as predict's) */
	mb_setup_step_settings(args, &c, MB_PREC_FP32, &ad->base);
}

/*
 * The profile: --profile's; else the device's own, as profile measured and
 * cached it; else the reference's, said.
 */
static int load_profile(struct advice *ad)
{
	const struct mb_args *args = ad->args;
	struct mb_cl_select sel;
	char path[4096];
	int err;

	mb_setup_device_select(args, &sel);
	ad->have_dev = !mb_cl_find(&sel, &ad->dev);
	if (!ad->have_dev && args->confirm)
		return mb_fail("--confirm runs on a device: %s", mb_errmsg());
	if (args->profile) {
		if ((err = mb_profile_load(&ad->profile, args->profile)))
			return err;
		snprintf(ad->profile_why, sizeof(ad->profile_why), "--profile %s", args->profile);
		return 0;
	}
	if (ad->have_dev) {
		mb_profile_cache_path(&ad->dev, path, sizeof(path));
		if (!access(path, F_OK) && !mb_profile_load(&ad->profile, path)) {
			snprintf(ad->profile_why, sizeof(ad->profile_why),
				 "the device's own, which muonbench profile measured (%.400s)",
				 path);
			ad->local = true;
			return 0;
		}
	}
	if ((err = mb_profile_load(&ad->profile, "reference")))
		return err;
	snprintf(ad->profile_why, sizeof(ad->profile_why),
		 "the reference profile (the reference change's machine, docs/predict.md): %s",
		 ad->have_dev ? "this device has no profile yet (muonbench profile measures one)"
			      : "no device here");
	fprintf(stderr, "muonbench: advise predicts from %s\n", ad->profile_why);
	return 0;
}

/*
 * The memory the points are held against: the device's and this host's
 * where the profile is the device's own or --confirm runs here; else only
 * --device-mem-limit, if given (the profile's machine is not this one).
 */
static int memory(struct advice *ad, struct mb_advise_memory *mem)
{
	const struct mb_args *args = ad->args;
	char a[32];

	memset(mem, 0, sizeof(*mem));
	mem->micro_batch = args->micro_batch;
	if (ad->local || args->confirm) {
		snprintf(ad->fit_dev.name, sizeof(ad->fit_dev.name), "%s", ad->dev.name);
		ad->fit_dev.global_mem_bytes = ad->dev.global_mem_bytes;
		ad->fit_dev.max_alloc_bytes = ad->dev.max_alloc_bytes;
		ad->fit_dev.device_alloc_limit = mb_cl_alloc_limit(&ad->dev);
		ad->fit_dev.limit_bytes = args->device_mem_limit;
		ad->fit_dev.host_memory = !strcmp(ad->dev.type, "CPU");
		if (mb_host_mem_available(&ad->fit_host.available_bytes, ad->fit_host.where,
					  sizeof(ad->fit_host.where)))
			return mb_fail("%s", mb_errmsg());
		ad->fit_host.ranks = (unsigned)args->world_size;
		mem->device = &ad->fit_dev;
		mem->host = &ad->fit_host;
		snprintf(ad->memory_why, sizeof(ad->memory_why),
			 "'%.128s' (%s%s%s) and this host (%s), CLBlast's temporaries aside",
			 ad->dev.name,
			 mb_fmt_bytes_iec(a, sizeof(a),
					  args->device_mem_limit && args->device_mem_limit <
									    ad->dev.global_mem_bytes
						  ? args->device_mem_limit
						  : ad->dev.global_mem_bytes),
			 args->device_mem_limit ? ", --device-mem-limit" : "",
			 ad->fit_dev.host_memory ? ", the host's memory" : "", ad->fit_host.where);
		return 0;
	}
	if (args->device_mem_limit) {
		snprintf(ad->fit_dev.name, sizeof(ad->fit_dev.name), "the profile's device");
		ad->fit_dev.global_mem_bytes = args->device_mem_limit;
		ad->fit_dev.max_alloc_bytes = UINT64_MAX;
		ad->fit_dev.device_alloc_limit = UINT64_MAX;
		ad->fit_dev.limit_bytes = args->device_mem_limit;
		mem->device = &ad->fit_dev;
		snprintf(ad->memory_why, sizeof(ad->memory_why),
			 "--device-mem-limit %s for the device; the host's not (the profile is "
			 "not this machine's)",
			 mb_fmt_bytes_iec(a, sizeof(a), args->device_mem_limit));
		return 0;
	}
	snprintf(ad->memory_why, sizeof(ad->memory_why),
		 "nothing: the profile is not this machine's (--device-mem-limit sets the "
		 "device's)");
	return 0;
}

static int setup(struct advice *ad)
{
	const struct mb_args *args = ad->args;
	struct mb_advise_memory mem;
	int err;

	if ((err = check_ds_config(args)))
		return err;
	if (args->nstages != 1)
		return mb_bad_input("--stage %s: advise takes one stage (the config's)",
				    args->stages);
	if (args->confirm && args->world_size > 1)
		return mb_bad_input("--confirm runs one rank here: with --world-size %llu the "
				    "ranks run under MPI (muonbench run, docs/mpi.md)",
				    (unsigned long long)args->world_size);
	build_space(ad);
	build_base(ad);
	if ((err = mb_setup_model(args, &ad->model)) || (err = load_profile(ad)) ||
	    (err = memory(ad, &mem)))
		return err;
	return mb_advise_sweep(&ad->a, &ad->model, &ad->base, &ad->space, &ad->profile, &mem);
}

/* ---- the points, for people ---- */

static const char *onoff(bool b)
{
	return b ? "on" : "off";
}

/* "both, pin_memory on, sub-group 250,000,000": the settings a point has, into BUF. */
static const char *settings(char *buf, size_t len, const struct mb_step_settings *s)
{
	char a[32], b[32];
	size_t n;

	n = (size_t)snprintf(buf, len, "%s, pin_memory %s", mb_variant_name(s->variant),
			     onoff(s->pin_memory));
	if (s->plan.stage == 3 && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", sub_group_size %s, %s apply",
				      mb_fmt_grouped(a, sizeof(a), s->plan.sub_group_size),
				      mb_zero3_apply_names[s->plan.zero3_apply]);
	if (mb_grid_reads_gather_budget(s->plan.stage, s->plan.zero3_apply) && n < len)
		snprintf(buf + n, len - n, ", gather budget %s",
			 mb_fmt_bytes_iec(b, sizeof(b), s->plan.gather_budget_bytes));
	return buf;
}

/* The points of the table: the baseline, then the best SHOWN. */
static size_t shown(const struct advice *ad)
{
	return ad->a.nkept < SHOWN ? ad->a.nkept : SHOWN;
}

/* Where point PT was measured under --confirm, or -1. */
static int measured_at(const struct advice *ad, const struct mb_advise_point *pt)
{
	size_t i;

	for (i = 0; i < ad->nrun; i++)
		if (ad->run[i] == pt)
			return (int)i;
	return -1;
}

static void md_row(const struct advice *ad, const char *which, const struct mb_advise_point *pt,
		   bool first)
{
	const struct mb_advise_point *b = &ad->a.base;
	char it[64], ap[64], x[32], y[32], pk[32], st[32], pin[32], sg[32], gb[32], mi[64];
	const struct mb_step_settings *s = &pt->set;
	int k = measured_at(ad, pt);
	bool gbr = mb_grid_reads_gather_budget(s->plan.stage, s->plan.zero3_apply);

	snprintf(it, sizeof(it), "%s s%s", mb_fmt_secs(x, sizeof(x), pt->t.iter_s),
		 pt == b ? "" : mb_fmt_change(y, sizeof(y), pt->t.iter_s, b->t.iter_s));
	snprintf(ap, sizeof(ap), "%s s%s", mb_fmt_secs(x, sizeof(x), pt->t.apply_s),
		 pt == b ? "" : mb_fmt_change(y, sizeof(y), pt->t.apply_s, b->t.apply_s));
	mi[0] = '\0';
	if (k >= 0)
		snprintf(mi, sizeof(mi), "%s / %s s", mb_fmt_secs(x, sizeof(x), ad->meas_iter[k]),
			 mb_fmt_secs(y, sizeof(y), ad->meas_apply[k]));
	struct mb_field f[] = {
		MB_FIELD_T("", which),
		MB_FIELD_T("Variant", mb_variant_name(s->variant)),
		MB_FIELD_T("pin_memory", onoff(s->pin_memory)),
		MB_FIELD_T("sub_group_size",
			   s->plan.stage == 3
				   ? mb_fmt_grouped(sg, sizeof(sg), s->plan.sub_group_size)
				   : "-"),
		MB_FIELD_T("ZeRO-3 apply",
			   s->plan.stage == 3 ? mb_zero3_apply_names[s->plan.zero3_apply] : "-"),
		MB_FIELD_T("gather budget",
			   gbr ? mb_fmt_bytes_iec(gb, sizeof(gb), s->plan.gather_budget_bytes)
			       : "-"),
		MB_FIELD_TR("Iteration", it),
		MB_FIELD_TR("Muon apply", ap),
		MB_FIELD_TR("Peak device memory",
			    mb_fmt_peak(pk, sizeof(pk), pt->peak_device_bytes)),
		MB_FIELD_TR("step peak", mb_fmt_peak(st, sizeof(st), pt->peak_step_bytes)),
		MB_FIELD_TR("Pinned host", mb_fmt_peak(pin, sizeof(pin), pt->pinned_host_bytes)),
		MB_FIELD_T("Needs", mb_advise_needs(s)),
		MB_FIELD_TR("Measured iteration / apply", mi),
	};

	mb_printer(MB_FORMAT_MD)->record(f, sizeof(f) / sizeof(f[0]) - (ad->nrun ? 0 : 1), first);
}

/* The dropped points, up to a few, each with why. */
static void md_dropped(const struct advice *ad)
{
	size_t i, n = ad->a.npoints - ad->a.nkept, said = 0;
	char buf[160], why[MB_MD_LEN(sizeof(((struct mb_advise_point *)0)->reason))];

	if (!n)
		return;
	printf("\nDropped, %zu point%s:\n\n", n, n > 1 ? "s" : "");
	for (i = ad->a.nkept; i < ad->a.npoints && said < 8; i++, said++)
		printf("- %s: %s%s\n", settings(buf, sizeof(buf), &ad->a.points[i].set),
		       ad->a.points[i].drop == MB_ADVISE_NO_FIT ? "does not fit: " : "",
		       mb_md(why, sizeof(why), ad->a.points[i].reason));
	if (n > said)
		printf("- and %zu more\n", n - said);
}

/* The DeepSpeed config patch of point PT, as DeepSpeed spells its keys, to OUT. */
static void write_patch(FILE *out, const struct advice *ad, const struct mb_advise_point *pt)
{
	const struct mb_plan_settings *p = &pt->set.plan;

	fprintf(out, "{\n  \"zero_optimization\": {\n    \"stage\": %u,\n", p->stage);
	if (p->stage == 3)
		fprintf(out, "    \"sub_group_size\": %llu,\n",
			(unsigned long long)p->sub_group_size);
	fprintf(out, "    \"reduce_bucket_size\": %llu,\n",
		(unsigned long long)(p->reduce_bucket_elems ? p->reduce_bucket_elems
							    : MB_PLAN_REDUCE_BUCKET));
	fprintf(out,
		"    \"offload_optimizer\": {\n      \"device\": \"cpu\",\n"
		"      \"pin_memory\": %s\n    }\n  }\n}\n",
		pt->set.pin_memory ? "true" : "false");
	(void)ad;
}

/* What the patch cannot say: the code the point needs and the gather budget. */
static void md_patch_notes(const struct mb_advise_point *pt)
{
	const struct mb_step_settings *s = &pt->set;
	char gb[32];

	printf("\nThe code it needs: %s%s.", mb_advise_needs(s),
	       mb_advise_beyond(s) ? " (no DeepSpeed has it yet: predicted, not measured there)"
				   : "");
	if (mb_grid_reads_gather_budget(s->plan.stage, s->plan.zero3_apply))
		printf(" The Muon gather budget: %s, which the patch leaves out (the reference "
		       "change does not publish its DeepSpeed name).",
		       mb_fmt_bytes_iec(gb, sizeof(gb), s->plan.gather_budget_bytes));
	printf(" The patch merges into the config (RFC 7386): its other keys stay.\n");
}

static void md_confirm(const struct advice *ad)
{
	if (!ad->nrun)
		return;
	printf("\nConfirmed on '%s': %zu points run (the measured figures beside the predicted "
	       "above). %s\n",
	       ad->dev.name, ad->nrun,
	       ad->agrees ? "The measured order of the iterations agrees with the predicted: the "
			    "advice stands."
			  : "The measured order of the iterations does NOT agree with the "
			    "predicted: the advice does not stand on this device (a profile "
			    "of it, muonbench profile, predicts it better).");
}

static const struct mb_advise_point *best(const struct advice *ad)
{
	return ad->a.nkept ? &ad->a.points[0] : NULL;
}

static int print_md(const struct advice *ad)
{
	const struct mb_args *args = ad->args;
	char name[MB_MD_LEN(sizeof(ad->model.name))], why[MB_MD_LEN(512)], mwhy[MB_MD_LEN(512)],
		src[MB_MD_LEN(256)], which[16];
	size_t i;

	printf("# Advice: %s, %u layer%s, ZeRO-%u, from %s\n\n",
	       mb_md(name, sizeof(name), ad->model.name), ad->model.layers,
	       ad->model.layers == 1 ? "" : "s", ad->base.plan.stage,
	       mb_md(src, sizeof(src), args->ds_config));
	printf("Predicted from %s", mb_md(why, sizeof(why), ad->profile_why));
	if (args->world_size > 1)
		printf(", as a rank of %llu on one host sees it (the host's memory and cores "
		       "shared)",
		       (unsigned long long)args->world_size);
	printf(". Memory checked against %s. %zu points swept around the baseline (%s first), "
	       "%zu fit, %zu dropped%s%s%s; predictions within %g%% of each other are a tie, "
	       "which the one with less memory wins.\n\n",
	       mb_md(mwhy, sizeof(mwhy), ad->memory_why), ad->a.npoints + ad->a.nsame,
	       mb_variant_name(ad->base.variant), ad->a.nkept, ad->a.npoints - ad->a.nkept,
	       ad->a.nsame ? ", " : "", ad->a.nsame ? "some the same plan as another" : "",
	       ad->a.nsame ? " (left out)" : "", MB_ADVISE_TIE * 100);
	md_row(ad, ad->a.base.drop == MB_ADVISE_KEPT ? "baseline" : "baseline (does not fit)",
	       &ad->a.base, true);
	for (i = 0; i < shown(ad); i++) {
		snprintf(which, sizeof(which), "%zu%s", i + 1,
			 ad->a.points[i].changes ? "" : " (baseline)");
		md_row(ad, which, &ad->a.points[i], false);
	}
	md_dropped(ad);
	md_confirm(ad);
	if (!args->out) {
		printf("\nThe best point's DeepSpeed config (a patch of %s):\n\n```json\n",
		       mb_md(src, sizeof(src), args->ds_config));
		write_patch(stdout, ad, best(ad));
		printf("```\n");
	} else {
		printf("\nThe best point's DeepSpeed config: written to %s.\n",
		       mb_md(src, sizeof(src), args->out));
	}
	md_patch_notes(best(ad));
	return 0;
}

/* ---- CSV, JSON ---- */

static void record(const struct advice *ad, const char *role, size_t rank,
		   const struct mb_advise_point *pt, bool first)
{
	const struct mb_advise_point *b = &ad->a.base;
	const struct mb_step_settings *s = &pt->set;
	int k = measured_at(ad, pt);
	bool kept = pt->drop == MB_ADVISE_KEPT;
	struct mb_field f[] = {
		MB_FIELD_T("role", role),
		MB_FIELD_N("rank", rank),
		MB_FIELD_T("profile", ad->profile.name),
		MB_FIELD_T("model", ad->model.name),
		MB_FIELD_N("stage", s->plan.stage),
		MB_FIELD_T("variant", mb_variant_name(s->variant)),
		MB_FIELD_T("pin_memory", onoff(s->pin_memory)),
		MB_FIELD_N("gather_budget_bytes", s->plan.gather_budget_bytes),
		MB_FIELD_N("sub_group_size_elems", s->plan.sub_group_size),
		MB_FIELD_T("zero3_apply", mb_zero3_apply_names[s->plan.zero3_apply]),
		MB_FIELD_T("needs", mb_advise_needs(s)),
		MB_FIELD_B("fits", pt->drop != MB_ADVISE_NO_FIT),
		MB_FIELD_T("reason", pt->reason),
		MB_FIELD_F("pred_iter_s",
			   kept || pt->drop == MB_ADVISE_NO_FIT ? pt->t.iter_s : NAN),
		MB_FIELD_F("pred_apply_s",
			   kept || pt->drop == MB_ADVISE_NO_FIT ? pt->t.apply_s : NAN),
		MB_FIELD_F("iter_change_frac", pt->t.iter_s / b->t.iter_s - 1),
		MB_FIELD_F("apply_change_frac", pt->t.apply_s / b->t.apply_s - 1),
		MB_FIELD_N("peak_device_bytes", pt->peak_device_bytes),
		MB_FIELD_N("peak_step_bytes", pt->peak_step_bytes),
		MB_FIELD_N("pinned_host_bytes", pt->pinned_host_bytes),
		MB_FIELD_N("world_size", ad->args->world_size),
		MB_FIELD_F("meas_iter_s", k >= 0 ? ad->meas_iter[k] : NAN),
		MB_FIELD_F("meas_apply_s", k >= 0 ? ad->meas_apply[k] : NAN),
		MB_FIELD_T("order_agrees", !ad->nrun	? ""
					   : ad->agrees ? "yes"
							: "no"),
	};

	if (pt->drop == MB_ADVISE_NO_PLAN)
		f[15] = MB_FIELD_NONE("iter_change_frac"),
		f[16] = MB_FIELD_NONE("apply_change_frac");
	mb_printer(ad->args->format)->record(f, sizeof(f) / sizeof(f[0]), first);
}

static int print_rows(const struct advice *ad)
{
	size_t i;

	record(ad, "baseline", 0, &ad->a.base, true);
	for (i = 0; i < shown(ad); i++)
		record(ad, "advised", i + 1, &ad->a.points[i], false);
	for (i = ad->a.nkept; i < ad->a.npoints; i++)
		record(ad, "dropped", 0, &ad->a.points[i], false);
	mb_printer(ad->args->format)->end(true);
	return 0;
}

static int save_patch(const struct advice *ad)
{
	FILE *f;

	if (!ad->args->out) {
		if (ad->args->format != MB_FORMAT_MD)
			fprintf(stderr, "muonbench: --out FILE writes the best point's DeepSpeed "
					"config patch\n");
		return 0;
	}
	if (!(f = fopen(ad->args->out, "w")))
		return mb_bad_input("--out: cannot write '%s': %s", ad->args->out, strerror(errno));
	write_patch(f, ad, best(ad));
	if (fclose(f))
		return mb_fail("--out: cannot write '%s': %s", ad->args->out, strerror(errno));
	return 0;
}

/* ---- --confirm ---- */

/* An argv under construction: the words point into TEXT. */
struct words {
	char *v[96];
	size_t n;
	char text[8192];
	size_t used;
};

static void word(struct words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void word(struct words *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->n + 2 >= sizeof(w->v) / sizeof(w->v[0]) || w->used >= sizeof(w->text))
		return;
	va_start(ap, fmt);
	n = vsnprintf(w->text + w->used, sizeof(w->text) - w->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(w->text) - w->used)
		return;
	w->v[w->n++] = w->text + w->used;
	w->v[w->n] = NULL;
	w->used += (size_t)n + 1;
}

/* An option of ARGS passed on to run when the command line gave it. */
static void pass(struct words *w, const struct mb_args *args, const char *name, const char *value)
{
	if (mb_args_given(args, name) && value) {
		word(w, "--%s", name);
		word(w, "%s", value);
	}
}

/* `muonbench run` of point PT: one run, its row appended to FILE. */
static void run_argv(struct words *w, const struct advice *ad, const struct mb_advise_point *pt,
		     const char *file)
{
	const struct mb_args *args = ad->args;
	const struct mb_step_settings *s = &pt->set;
	char path[PATH_MAX], n[32];

	word(w, "/proc/self/exe");
	word(w, "run");
	if (args->config)
		word(w, "--config"),
			word(w, "%s", realpath(args->config, path) ? path : args->config);
	else
		word(w, "--model"), word(w, "%s", args->model);
	if (args->layers)
		word(w, "--layers"), word(w, "%llu", (unsigned long long)args->layers);
	word(w, "--stage"), word(w, "%u", s->plan.stage);
	word(w, "--variant"), word(w, "%s", mb_variant_name(s->variant));
	word(w, "--pin-memory"), word(w, "%s", onoff(s->pin_memory));
	word(w, "--gather-budget"),
		word(w, "%llu", (unsigned long long)s->plan.gather_budget_bytes);
	word(w, "--sub-group-size"), word(w, "%llu", (unsigned long long)s->plan.sub_group_size);
	word(w, "--zero3-apply"), word(w, "%s", mb_zero3_apply_names[s->plan.zero3_apply]);
	word(w, "--reduce-bucket-size"),
		word(w, "%llu", (unsigned long long)args->reduce_bucket_size);
	word(w, "--micro-batch"), word(w, "%llu", (unsigned long long)args->micro_batch);
	word(w, "--seq"), word(w, "%llu", (unsigned long long)args->seq);
	word(w, "--fwd-bwd"), word(w, "%s", args->knob[MB_KNOB_FWD_BWD]);
	word(w, "--param-order"), word(w, "%s", args->knob[MB_KNOB_PARAM_ORDER]);
	word(w, "--ns-method"),
		word(w, "%s", s->plan.ns_method == MB_NS_GRAM ? "gram" : "standard");
	word(w, "--writeback-dep"), word(w, "%s", args->knob[MB_KNOB_WRITEBACK_DEP]);
	if (strcmp(args->knob[MB_KNOB_MOMENTUM_DTYPE], "auto"))
		word(w, "--momentum-dtype"), word(w, "%s", args->knob[MB_KNOB_MOMENTUM_DTYPE]);
	pass(w, args, "params-back", args->knob[MB_KNOB_PARAMS_BACK]);
	word(w, "--platform"), word(w, "%u", ad->dev.platform);
	word(w, "--device"), word(w, "%u", ad->dev.device);
	pass(w, args, "tuning",
	     args->tuning && strcmp(args->tuning, "auto") && strcmp(args->tuning, "off") &&
			     realpath(args->tuning, path)
		     ? path
		     : args->tuning);
	if (args->device_mem_limit)
		word(w, "--device-mem-limit"),
			word(w, "%llu", (unsigned long long)args->device_mem_limit);
	snprintf(n, sizeof(n), "%llu", (unsigned long long)args->steps);
	word(w, "--steps"), word(w, "%s", n);
	word(w, "--runs"), word(w, "1");
	word(w, "--profile"), word(w, "off");
	word(w, "--quiet");
	word(w, "--out"), word(w, "%s", file);
}

/* The last line of DIR/log.txt, into BUF: why a child failed. */
static const char *last_line(const char *dir, char *buf, size_t len)
{
	char path[4200], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/log.txt", dir);
	buf[0] = '\0';
	if (!(f = fopen(path, "r")))
		return buf;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\n')
			snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
	fclose(f);
	return buf;
}

/* Point K's measured means from its file. */
static int read_measured(struct advice *ad, size_t k, const char *file)
{
	char *files[] = { (char *)file };
	struct mb_table *t = NULL;
	size_t nt = 0, nrows;
	int err;

	if ((err = mb_results_read_files(files, 1, &t, &nt, &nrows)))
		return err;
	if (nt != 1 || t[0].ncells != 1 || !t[0].cells[0].nruns) {
		err = mb_fail("the confirming runs of %s left no ok run%s%s",
			      mb_variant_name(ad->run[k]->set.variant),
			      nt && t[0].ncells && t[0].cells[0].failed ? ": " : "",
			      nt && t[0].ncells && t[0].cells[0].failed
				      ? t[0].cells[0].failed->reason
				      : "");
	} else {
		ad->meas_iter[k] = t[0].cells[0].iter_mean_s;
		ad->meas_apply[k] = t[0].cells[0].apply_mean_s;
	}
	mb_results_release(t, nt);
	return err;
}

/* The baseline and the two best points (the best first), to run. */
static void choose_runs(struct advice *ad)
{
	size_t i;

	ad->nrun = 0;
	if (ad->a.base.drop == MB_ADVISE_KEPT)
		ad->run[ad->nrun++] = &ad->a.base;
	for (i = 0; i < ad->a.nkept && ad->nrun < CONFIRMS; i++)
		if (ad->a.points[i].changes)
			ad->run[ad->nrun++] = &ad->a.points[i];
}

static void remove_dir(const char *dir, size_t n)
{
	char path[4200];
	size_t k;

	for (k = 0; k < n; k++) {
		snprintf(path, sizeof(path), "%s/point-%zu.csv", dir, k);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/log.txt", dir);
	unlink(path);
	rmdir(dir);
}

/*
 * Run the chosen points on the device, the points taking turns (round r runs
 * each point's run r), each run a child `muonbench run`; then their measured
 * order against the predicted.
 */
static int confirm(struct advice *ad)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], file[4200], why[1024];
	double pred[CONFIRMS], meas[CONFIRMS];
	size_t r, k, i, order[CONFIRMS];
	struct words w;
	int rc, err = 0;

	choose_runs(ad);
	snprintf(dir, sizeof(dir), "%s/muonbench-advise-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return mb_fail("cannot make a directory for the confirming runs in '%s': %s",
			       tmp && *tmp ? tmp : "/tmp", strerror(errno));
	fprintf(stderr, "muonbench: --confirm: %zu points on '%s', %llu runs of %llu steps each\n",
		ad->nrun, ad->dev.name, (unsigned long long)ad->args->runs,
		(unsigned long long)ad->args->steps);
	for (r = 0; r < ad->args->runs && !err; r++)
		for (k = 0; k < ad->nrun && !err; k++) {
			memset(&w, 0, sizeof(w));
			snprintf(file, sizeof(file), "%s/point-%zu.csv", dir, k);
			run_argv(&w, ad, ad->run[k], file);
			rc = mb_child_run(dir, w.v, mb_now_s() + 3600, NULL, NULL);
			if (rc)
				err = mb_fail(
					"the confirming run of %s (run %zu) failed, exit %d: %s",
					mb_variant_name(ad->run[k]->set.variant), r + 1, rc,
					last_line(dir, why, sizeof(why)));
		}
	for (k = 0; k < ad->nrun && !err; k++) {
		snprintf(file, sizeof(file), "%s/point-%zu.csv", dir, k);
		err = read_measured(ad, k, file);
	}
	remove_dir(dir, ad->nrun);
	if (err)
		return err;
	/* by predicted iteration, then measured against it */
	for (k = 0; k < ad->nrun; k++)
		order[k] = k;
	for (k = 1; k < ad->nrun; k++)
		for (i = k; i > 0 && ad->run[order[i]]->t.iter_s < ad->run[order[i - 1]]->t.iter_s;
		     i--) {
			size_t t = order[i];

			order[i] = order[i - 1];
			order[i - 1] = t;
		}
	for (k = 0; k < ad->nrun; k++) {
		pred[k] = ad->run[order[k]]->t.iter_s;
		meas[k] = ad->meas_iter[order[k]];
	}
	ad->agrees = mb_advise_order_agrees(pred, meas, ad->nrun);
	return 0;
}

int mb_cmd_advise(const struct mb_args *args)
{
	struct advice *ad;
	int err;

	if (!(ad = calloc(1, sizeof(*ad))))
		return mb_fail("out of host memory");
	ad->args = args;
	if ((err = setup(ad)))
		goto out;
	if (!ad->a.nkept) {
		err = mb_bad_input("nothing fits: none of the %zu points swept fits the memory "
				   "checked (%s); the baseline: %s",
				   ad->a.npoints, ad->memory_why,
				   ad->a.base.reason[0] ? ad->a.base.reason : "fits");
		goto out;
	}
	if (args->confirm && (err = confirm(ad)))
		goto out;
	err = args->format == MB_FORMAT_MD ? print_md(ad) : print_rows(ad);
	if (!err)
		err = save_patch(ad);
out:
	mb_advise_release(&ad->a);
	mb_model_release(&ad->model);
	free(ad);
	return err;
}
