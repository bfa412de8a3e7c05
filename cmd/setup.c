/*
 * setup: the library inputs that the command line describes (the model, the
 * plan settings), shared by every subcommand that takes a model.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "mb_clock.h"
#include "mb_config.h"
#include "mb_err.h"
#include "mb_gemm16.h"
#include "mb_step.h"
#include "mb_tuning_cl.h"

int mb_setup_model(const struct mb_args *args, struct mb_model *m)
{
	if (args->config)
		return mb_config_load_file(m, args->config, (unsigned)args->layers);
	return mb_config_load_builtin(m, args->model, (unsigned)args->layers);
}

void mb_setup_plan_settings(const struct mb_args *args, unsigned stage, struct mb_plan_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->stage = stage;
	s->gather_budget_bytes = args->gather_budget;
	s->sub_group_size = args->sub_group_size;
	s->pin_chunk_bytes = args->pin_chunk;
	s->reduce_bucket_elems = args->reduce_bucket_size;
	s->tokens = args->fwd_bwd_on ? args->seq * args->micro_batch : 0;
	s->order = (enum mb_param_order)mb_args_knob(args, MB_KNOB_PARAM_ORDER, stage);
	s->params_back = (enum mb_params_back)mb_args_knob(args, MB_KNOB_PARAMS_BACK, stage);
	s->zero3_apply = (enum mb_zero3_apply)mb_args_knob(args, MB_KNOB_ZERO3_APPLY, stage);
	s->ns_method = (enum mb_ns_method)mb_args_knob(args, MB_KNOB_NS_METHOD, stage);
	s->momentum_dtype =
		(enum mb_momentum_dtype)mb_args_knob(args, MB_KNOB_MOMENTUM_DTYPE, stage);
	s->world_size = (unsigned)args->world_size;
	s->rank = (unsigned)args->rank;
}

int mb_setup_grid(const struct mb_args *args, bool variants, struct mb_grid *g)
{
	const enum mb_variant base = MB_VARIANT_BASE;
	struct mb_grid_lists l = {
		.stages = args->stage_list,
		.nstages = args->nstages,
		.variants = variants ? args->variant_list : &base,
		.nvariants = variants ? args->nvariants : 1,
		.gather_budgets = args->gather_budgets.v,
		.ngather_budgets = args->gather_budgets.n,
		.sub_group_sizes = args->sub_group_sizes.v,
		.nsub_group_sizes = args->sub_group_sizes.n,
		/* the knob is not a stage's own: any stage's word is its word */
		.zero3_apply = (enum mb_zero3_apply)mb_args_knob(args, MB_KNOB_ZERO3_APPLY, 3),
	};

	/* parsed with the options: never here for a command with --stage or --variant */
	if (!args->nstages || (variants && !args->nvariants))
		return mb_bad_input("--%s: none given", args->nstages ? "variant" : "stage");
	return mb_grid_init(g, &l);
}

bool mb_setup_race_check(void)
{
	const char *v = getenv("MUONBENCH_RACE_CHECK");

	return v && *v && strcmp(v, "0");
}

void mb_setup_step_settings(const struct mb_args *args, const struct mb_grid_cell *c,
			    enum mb_precision precision, struct mb_step_settings *s)
{
	struct mb_optim optim = MB_OPTIM_DEFAULTS;
	size_t k;

	memset(s, 0, sizeof(*s));
	mb_setup_plan_settings(args, c->stage, &s->plan);
	s->plan.gather_budget_bytes = c->gather_budget_bytes;
	s->plan.sub_group_size = c->sub_group_size;
	s->plan.ns_precision = precision;
	s->plan.ns_rate_gflops = args->ns_rate;
	s->variant = c->variant;
	s->pin_memory = args->pin_memory_on;
	s->seed = args->seed;
	s->optim = optim;
	s->grad_clip = args->grad_clip;
	s->fwd_bwd = args->fwd_bwd_on;
	s->tokens = args->seq * args->micro_batch;
	s->ranks = (unsigned)args->world_size; /* whose collectives a rank's step joins */
	/* the race checker (lib/mb_race): on in the tests, on a device when asked */
	s->race_check = mb_setup_race_check();
	for (k = 0; mb_knobs[k].field; k++)
		s->knob[k] = mb_args_knob(args, (enum mb_knob)k, c->stage);
}

int mb_setup_muon_shapes(const struct mb_args *args, struct mb_shape *shapes, size_t max, size_t *n)
{
	struct mb_model model;
	size_t i;
	int err;

	*n = 0;
	if (args->shapes)
		return mb_parse_shapes("--shape", args->shapes, shapes, max, n);
	if ((err = mb_setup_model(args, &model)))
		return err;
	for (i = 0; i < model.nparams && *n < max; i++)
		if (model.params[i].muon)
			shapes[(*n)++] =
				(struct mb_shape){ model.params[i].rows, model.params[i].cols };
	mb_model_release(&model);
	if (!*n)
		return mb_bad_input("the model has no Muon matrices to tune for");
	return 0;
}

void mb_setup_device_select(const struct mb_args *args, struct mb_cl_select *sel)
{
	sel->platform = mb_args_given(args, "platform") ? (int)args->platform : -1;
	sel->device = args->device;
	sel->nth = (unsigned)args->local_rank;
}

/*
 * Whether tuning T (from SOURCE, made for another device of D's family)
 * passes ns --verify on D, in a child: a bad kernel may crash or hang, and
 * CLBlast keeps parameters once set. 1 it passed, 0 it failed (the verdict
 * is cached per device), -1 it could not be checked (said on stderr).
 */
static int verified_on(const struct mb_cl_device_info *d, const struct mb_tuning *t,
		       const char *source)
{
	const char *tmp = getenv("TMPDIR");
	struct mb_tuning keyed = *t;
	char dir[4096];
	int verdict = mb_tuning_verdict(d, t, source), rc;

	if (verdict >= 0)
		return verdict;
	if (!mb_child_possible()) {
		fprintf(stderr,
			"muonbench: --tuning auto: %s was made for '%s' and cannot be "
			"checked here (under valgrind); CLBlast's defaults instead\n",
			source, t->device);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/muonbench-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr,
			"muonbench: --tuning auto: cannot make a directory in '%s' to check "
			"%s: %s; CLBlast's defaults instead\n",
			tmp && *tmp ? tmp : "/tmp", source, strerror(errno));
		return -1;
	}
	fprintf(stderr,
		"muonbench: --tuning auto: %s was made for '%s'; checking it on '%s' with ns "
		"--verify (once: the verdict is cached)\n",
		source, t->device, d->name);
	mb_tuning_set_key(&keyed, d);
	rc = mb_child_ns(dir, &keyed, d, NULL, true, mb_now_s() + 600, NULL);
	/* a child that could not start (127: no exec) says nothing of the tuning */
	if (rc != 127 && rc >= 0 && mb_tuning_record_verdict(d, t, source, rc == 0))
		fprintf(stderr, "muonbench: %s (the check is not cached)\n", mb_errmsg());
	if (rc == 127 || rc < 0) {
		fprintf(stderr,
			"muonbench: --tuning auto: no child could be started to check %s (see "
			"'%s'); CLBlast's defaults instead\n",
			source, dir);
		return -1;
	}
	if (rc) {
		fprintf(stderr,
			"muonbench: --tuning auto: %s failed ns --verify on '%s' (exit %d; see "
			"'%s/log.txt'); CLBlast's defaults instead\n",
			source, d->name, rc, dir);
		return 0;
	}
	mb_child_remove(dir);
	return 1;
}

/* Why --tuning auto found nothing for D, into WHY. */
static void why_default(const struct mb_cl_device_info *d, char *why, size_t len)
{
	snprintf(why, len,
		 "no tuning for '%s' (driver %s)%s%s%s, nor for another %s device of %s; "
		 "`muonbench tune` makes one",
		 d->name, d->driver, d->arch[0] ? ", for its architecture '" : "",
		 d->arch[0] ? d->arch : "", d->arch[0] ? "'" : "", d->type, d->platform_name);
}

int mb_setup_tuning(const struct mb_args *args, const struct mb_cl_device_info *d,
		    struct mb_tuning *t, struct mb_setup_tuning *chosen)
{
	int found, err, verdict;

	memset(chosen, 0, sizeof(*chosen));
	chosen->match = MB_TUNING_NONE;
	snprintf(chosen->source, sizeof(chosen->source), "default");
	if (!strcmp(args->tuning, "off")) {
		snprintf(chosen->why, sizeof(chosen->why), "--tuning off");
		return 0;
	}
	if (strcmp(args->tuning, "auto")) {
		if ((err = mb_tuning_load(args->tuning, t)))
			return err;
		if (!mb_tuning_matches(t, d))
			return mb_bad_input("--tuning %s: made for '%s' (%s, driver %s), not for "
					    "'%s' (%s, driver %s)",
					    args->tuning, t->device, t->platform, t->driver,
					    d->name, d->platform_name, d->driver);
		snprintf(chosen->source, sizeof(chosen->source), "%s", args->tuning);
		chosen->match = MB_TUNING_GIVEN;
		snprintf(chosen->why, sizeof(chosen->why), "--tuning %s", args->tuning);
		return 0;
	}
	found = mb_tuning_find(d, t, chosen->source, sizeof(chosen->source), &chosen->match);
	if (found < 0)
		return found;
	if (!found) {
		why_default(d, chosen->why, sizeof(chosen->why));
		return 0;
	}
	if (chosen->match == MB_TUNING_EXACT)
		snprintf(chosen->why, sizeof(chosen->why), "made for this device");
	else if (chosen->match == MB_TUNING_ARCHITECTURE)
		snprintf(chosen->why, sizeof(chosen->why),
			 "made for '%s', of the same architecture '%s' and driver %s", t->device,
			 t->arch, t->driver);
	else if ((verdict = verified_on(d, t, chosen->source)) > 0)
		snprintf(chosen->why, sizeof(chosen->why),
			 "made for '%s', another %s of %s; it passed ns --verify here", t->device,
			 t->type, t->platform);
	else {
		snprintf(chosen->why, sizeof(chosen->why),
			 "%.512s (made for '%s', another %s of %s) %s", chosen->source, t->device,
			 t->type, t->platform,
			 verdict ? "could not be checked here" : "failed ns --verify here");
		snprintf(chosen->source, sizeof(chosen->source), "default");
		chosen->match = MB_TUNING_NONE;
	}
	return 0;
}

int mb_setup_device(const struct mb_args *args, struct mb_cl *cl)
{
	struct mb_setup_tuning chosen;
	struct mb_cl_device_info d;
	struct mb_cl_select sel;
	struct mb_tuning t;
	int err;

	/* the tuning is chosen, and checked if need be, before the device is opened */
	mb_setup_device_select(args, &sel);
	if ((err = mb_cl_find(&sel, &d)) || (err = mb_setup_tuning(args, &d, &t, &chosen)) ||
	    (err = mb_cl_open(cl, &sel)))
		return err;
	if ((err = mb_cl_pinned_choose(cl, args->pinned_alloc)) ||
	    (chosen.match != MB_TUNING_NONE && (err = mb_tuning_apply(&t, cl)))) {
		mb_cl_release(cl);
		return err;
	}
	/*
	 * the tuning's tiles for our 16-bit kernel: made for this device or its
	 * architecture (another device of the family would run them, checked,
	 * but tuned for another); bad ones refused when given, set aside and said
	 * under auto
	 */
	if (chosen.match <= MB_TUNING_ARCHITECTURE && t.ns_gemm[0]) {
		struct mb_gemm16_classes classes;

		if ((err = mb_gemm16_classes_parse(t.ns_gemm, &classes)) &&
		    chosen.match == MB_TUNING_GIVEN) {
			mb_cl_release(cl);
			mb_err_prefix("%s: ns_gemm", chosen.source);
			return err;
		}
		if (err)
			snprintf(chosen.why + strlen(chosen.why),
				 sizeof(chosen.why) - strlen(chosen.why),
				 "; its ns_gemm set aside: %.200s", mb_errmsg());
		else
			snprintf(cl->ns_gemm, sizeof(cl->ns_gemm), "%s", t.ns_gemm);
	}
	snprintf(cl->tuning, sizeof(cl->tuning), "%s", chosen.source);
	snprintf(cl->tuning_match, sizeof(cl->tuning_match), "%s",
		 mb_tuning_match_names[chosen.match]);
	snprintf(cl->tuning_why, sizeof(cl->tuning_why), "%s", chosen.why);
	cl->tuning_kernels = chosen.match != MB_TUNING_NONE ? t.nkernels : 0;
	return 0;
}

const char *mb_setup_tuning_said(const struct mb_cl *cl, char *buf, size_t len)
{
	bool none = !strcmp(cl->tuning_match, "none");

	if (none || (cl->tuning_kernels && !cl->ns_gemm[0]))
		snprintf(buf, len, "CLBlast parameters: %s (%s: %s)", cl->tuning, cl->tuning_match,
			 cl->tuning_why);
	else if (cl->tuning_kernels)
		snprintf(buf, len, "CLBlast parameters and Newton-Schulz tiles: %s (%s: %s)",
			 cl->tuning, cl->tuning_match, cl->tuning_why);
	else if (cl->ns_gemm[0])
		snprintf(buf, len,
			 "Newton-Schulz tiles: %s (%s: %s); CLBlast parameters: default (none in "
			 "it)",
			 cl->tuning, cl->tuning_match, cl->tuning_why);
	else
		snprintf(buf, len, "CLBlast parameters: default (none in %s, %s: %s)", cl->tuning,
			 cl->tuning_match, cl->tuning_why);
	return buf;
}

int mb_setup_precisions(const struct mb_args *args, int *precisions, size_t *n)
{
	/* the option's words, each checked once where the options were parsed (cmd/options.c) */
	const char *at = args->ns_precisions;
	size_t len;
	int k;

	for (*n = 0; *at && *n <= MB_NPRECISIONS; at += len + (at[len] == ',')) {
		len = strcspn(at, ",");
		for (k = 0; k < MB_NPRECISIONS; k++)
			if (strlen(mb_precision_names[k]) == len &&
			    !strncmp(at, mb_precision_names[k], len))
				break;
		precisions[(*n)++] = k < MB_NPRECISIONS ? k : MB_SETUP_PRECISION_AUTO;
	}
	return 0;
}

int mb_setup_precision(const struct mb_args *args, const struct mb_cl_device_info *info,
		       enum mb_ns_method method, enum mb_precision *p)
{
	int precisions[MB_NPRECISIONS + 1];
	size_t n;
	int err;

	if ((err = mb_setup_precisions(args, precisions, &n)))
		return err;
	if (n != 1)
		return mb_bad_input("--ns-precision '%s': one precision here (ns times a list side "
				    "by side)",
				    args->ns_precisions);
	if (precisions[0] != MB_SETUP_PRECISION_AUTO)
		*p = (enum mb_precision)precisions[0];
	else
		*p = info ? mb_ns_precision_auto(info, method) : MB_PREC_FP32;
	return 0;
}

int mb_setup_binding(const struct mb_args *args, struct mb_host *host)
{
	struct mb_cl_device_info dev;
	struct mb_cl_select sel;
	int err;

	if (!args->numa_auto) {
		if ((err = mb_host_bind(args->cpus, args->membind)))
			return err;
		mb_host_describe(host, args->cpus || args->membind ? "muonbench" : "inherited");
		return 0;
	}
	if (args->cpus || args->membind)
		return mb_bad_input("--numa auto chooses the CPUs and the memory itself: give it "
				    "or --cpus/--membind, not both");
	mb_setup_device_select(args, &sel);
	if ((err = mb_cl_find(&sel, &dev)))
		return err;
	if (dev.numa_node < 0) {
		if (dev.pci[0])
			fprintf(stderr,
				"muonbench: --numa auto: '%s' is at PCI %s, which sysfs puts on "
				"no NUMA node; the binding is left as it is\n",
				dev.name, dev.pci);
		else
			fprintf(stderr,
				"muonbench: --numa auto: '%s' has no PCI address that its driver "
				"tells (neither cl_khr_pci_bus_info nor a vendor's query); the "
				"binding is left as it is\n",
				dev.name);
		mb_host_describe(host, "inherited");
		return 0;
	}
	if ((err = mb_host_bind_node(dev.numa_node)))
		return err;
	fprintf(stderr,
		"muonbench: --numa auto: '%s' is at PCI %s on NUMA node %d; running and "
		"allocating there\n",
		dev.name, dev.pci, dev.numa_node);
	mb_host_describe(host, "numa auto");
	return 0;
}

int mb_setup_stages(const struct mb_args *args, unsigned *stages, size_t *n)
{
	size_t i;

	if (!args->nstages) /* parsed with the options: never here for a command with --stage */
		return mb_bad_input("--stage: no stage given");
	for (i = 0; i < args->nstages; i++)
		stages[i] = args->stage_list[i];
	*n = args->nstages;
	return 0;
}

int mb_setup_variants(const struct mb_args *args, unsigned *variants, size_t *n)
{
	size_t i;

	if (!args->nvariants) /* parsed with the options: never here for a command with --variant */
		return mb_bad_input("--variant: no variant given");
	for (i = 0; i < args->nvariants; i++)
		variants[i] = args->variant_list[i];
	*n = args->nvariants;
	return 0;
}
