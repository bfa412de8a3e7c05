/*
 * run: the benchmark. For each cell asked (a stage, a variant, and a value of
 * each list that --gather-budget and --sub-group-size sweep), R runs of S
 * steps (mb_run), the cells taking turns run by run unless --interleave off;
 * one CSV row per run, appended as it finishes; the reference's
 * table on stdout; and the checks: every run ends in the same state, and
 * the step-phase peak of the ledger is what the plan predicted. A cell whose
 * plan cannot fit the host and the device (mb_fit) is a failed row at once,
 * and the others still run. Under MPI (cmd/ranks.c), each process runs its
 * rank's share, the ranks in lockstep step by step, and rank 0 writes every
 * rank's rows; a failed rank ends the invocation on all of them.
 *
 * This file sets up and walks the cells; the rows and their file are
 * run_rows.c's, the signals and the watchdog run_watchdog.c's, and what the
 * three share is run_grid.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "mb_clock.h"
#include "mb_devmem.h"
#include "mb_err.h"
#include "mb_fit.h"
#include "mb_fwdbwd_cl.h"
#include "mb_host.h"
#include "mb_num.h"
#include "mb_phase.h"
#include "mb_predict.h"
#include "mb_run.h"
#include "ranks.h"
#include "run_grid.h"
#include "setup.h"
#include "tables.h"

#include <clblast_c.h> /* after mb_cl.h, which sets the OpenCL version */

static int parse_measure(struct mb_run_grid *g)
{
	const struct mb_args *a = g->args;
	unsigned steps = (unsigned)a->steps, first, last;
	char tail;

	if (!a->measure) {
		g->run.measure_first = steps < 2 ? steps : 2;
		g->run.measure_last = steps < 6 ? steps : 6;
		return 0;
	}
	if (sscanf(a->measure, "%u-%u%c", &first, &last, &tail) != 2 || !first || first > last ||
	    last > steps)
		return mb_bad_input("--measure: invalid range '%s' (expected A-B with 1 <= A <= B "
				    "<= the %u steps)",
				    a->measure, steps);
	g->run.measure_first = first;
	g->run.measure_last = last;
	return 0;
}

/* The model's prediction of the cell now in g->run into *t; false if there is no profile. */
static int predict_cell(struct mb_run_grid *g, struct mb_step_times *t, bool *have)
{
	const struct mb_plan_settings *set = &g->run.step.plan;
	struct mb_profile prof = g->profile;
	struct mb_plan plan;
	const char *had;
	int err;

	*have = false;
	if (!g->profile_src[0])
		return 0;
	/* under MPI, the profile a rank sees beside the others on its host, as predict's */
	mb_profile_for_ranks(&prof, &g->profile, g->ranks.mpi ? g->ranks.local_size : 1);
	had = set->ns_method == MB_NS_GRAM ? prof.ns_gram_precision : prof.ns_standard_precision;
	if (set->ns_rate_gflops) { /* calibrated: the rate asked, at every size */
		prof.ns_gram_gflops = (struct mb_profile_ladder){ 1, { 1 }, { 0 } };
		prof.ns_gram_gflops.value[0] = (double)set->ns_rate_gflops;
		prof.ns_standard_gflops = prof.ns_gram_gflops;
	} else if (strcmp(had, mb_precision_names[set->ns_precision])) {
		if (!g->precision_unpredicted++)
			fprintf(stderr,
				"muonbench: the cells are not predicted: the profile '%s' times "
				"Newton-Schulz at %s, this run runs it at %s (muonbench profile "
				"--ns-precision %s measures it so)\n",
				g->profile_src, had, mb_precision_names[set->ns_precision],
				mb_precision_names[set->ns_precision]);
		return 0;
	}
	if ((err = mb_plan_build(&plan, &g->model, set)))
		return err;
	g->timeline.run = 0; /* the prediction's rows */
	err = mb_predict_step(&g->model, &plan, &g->run.step, &prof, t);
	mb_plan_release(&plan);
	*have = !err;
	return err;
}

/* The progress line: where the grid is, how long it took, how long is left. */
static void on_step(void *ctx, unsigned step)
{
	struct mb_run_grid *g = ctx;
	double elapsed = mb_now_s() - g->started_s, left;

	g->steps_done++;
	atomic_store(&g->run_steps_done, step);
	/* lockstep: every rank well, or all end the run after this step */
	if (mb_ranks_boundary(&g->ranks, mb_run_stop ? MB_RANK_STOPPED : MB_RANK_OK) !=
		    MB_RANK_OK &&
	    !mb_run_stop)
		mb_run_stop = g->ranks_stopped = 1;
	/* the driver's peak over the measured steps alone */
	if (step + 1 == g->run.measure_first)
		mb_devmem_sampler_window(&g->sampler, true);
	if (step == g->run.measure_last)
		mb_devmem_sampler_window(&g->sampler, false);
	if (!g->tty)
		return;
	left = elapsed / (double)g->steps_done * (double)(g->steps_total - g->steps_done);
	fprintf(stderr,
		"\r\033[Kstage %u %s, run %u/%llu, step %u/%u; %.0f s elapsed, about %.0f s "
		"left",
		g->cell_stage, mb_variant_name(g->cell_variant), g->cell_run,
		(unsigned long long)g->args->runs, step, g->run.steps, elapsed, left);
}

/* The self-checks of an ok run: same final state as every other, peak as planned. */
static void check(struct mb_run_grid *g, const struct mb_run_result *r)
{
	enum mb_momentum_dtype d = g->run.step.plan.momentum_dtype;
	enum mb_ns_method ns = g->run.step.plan.ns_method;

	if (!g->checked_math[d][ns]++)
		g->checksum[d][ns] = r->checksum;
	g->checked++;
	if (r->checksum != g->checksum[d][ns]) {
		g->mismatched++;
		g->mismatched_math[d][ns]++;
	}
	if (r->own_peak_step_bytes != r->plan_peak_step_bytes) {
		fprintf(stderr,
			"muonbench: stage %u %s: the step-phase peak, %llu bytes without CLBlast's "
			"temporaries, is not the plan's %llu\n",
			g->run.step.plan.stage, mb_variant_name(g->run.step.variant),
			(unsigned long long)r->own_peak_step_bytes,
			(unsigned long long)r->plan_peak_step_bytes);
		g->mismatched++;
	}
}

/*
 * After the device was lost: every object of its dead context released,
 * CLBlast's programs (built for that context) dropped, and the device
 * opened anew with its tuning for the next cells. Where it cannot be,
 * g->device_gone says why, and no cell runs again.
 */
static void reopen_device(struct mb_run_grid *g)
{
	struct mb_cl *was = malloc(sizeof(*was));

	if (was)
		*was = g->cl;
	mb_cl_release(&g->cl);
	CLBlastClearCache();
	if (was && !mb_setup_device(g->args, &g->cl)) {
		fprintf(stderr, "muonbench: '%s' opened anew for the next runs\n", was->info.name);
		free(was);
		return;
	}
	fprintf(stderr, "muonbench: '%s' could not be opened again: %s\n",
		was ? was->info.name : g->cl.info.name, was ? mb_errmsg() : "out of host memory");
	snprintf(g->device_gone, sizeof(g->device_gone),
		 "not run: the device was lost and could not be opened again: %s",
		 was ? mb_errmsg() : "out of host memory");
	if (!was)
		return;
	/* the rows still describe it: its name, tuning and pinning, none of its handles */
	memset(&g->cl, 0, sizeof(g->cl));
	g->cl.info = was->info;
	g->cl.pinned_alloc = was->pinned_alloc;
	memcpy(g->cl.tuning, was->tuning, sizeof(g->cl.tuning));
	memcpy(g->cl.tuning_match, was->tuning_match, sizeof(g->cl.tuning_match));
	memcpy(g->cl.tuning_why, was->tuning_why, sizeof(g->cl.tuning_why));
	memcpy(g->cl.ns_gemm, was->ns_gemm, sizeof(g->cl.ns_gemm));
	g->cl.tuning_kernels = was->tuning_kernels;
	free(was);
}

/*
 * mb_run_once, then whether the device survived it, into *lost: a fault
 * (MB_KIND_DEVICE_LOST) or a queue that no longer finishes, during the run
 * or at its end (where a run's last waits are its release's). On failure
 * the message is the run's own, its first cause.
 */
static int run_checked(struct mb_run_grid *g, struct mb_run_result *r, bool *lost)
{
	char why[sizeof(((struct mb_csv_row *)0)->reason)];
	int owner = RUN_MAIN, err;

	atomic_store(&g->run_steps_done, 0);
	if (g->devmem.source == MB_DEVMEM_NONE || mb_devmem_used(&g->devmem, &g->used_base))
		g->used_base = MB_CSV_UNKNOWN;
	mb_devmem_sampler_reset(&g->sampler);
	if (g->run.measure_first == 1)
		mb_devmem_sampler_window(&g->sampler, true);
	atomic_store(&g->run_owner, RUN_MAIN);
	err = mb_run_once(&g->model, &g->run, &g->cl, &mb_run_stop, r);
	mb_devmem_sampler_window(&g->sampler, false);
	*lost = err && mb_err_kind() == MB_KIND_DEVICE_LOST;
	if (err)
		snprintf(why, sizeof(why), "%s", mb_errmsg());
	if (!*lost && mb_cl_alive(&g->cl)) {
		*lost = true;
		if (!err)
			err = -MB_EFAIL;
		else
			mb_fail("%s", why);
	}
	if (!atomic_compare_exchange_strong(&g->run_owner, &owner, RUN_IDLE))
		for (;;) /* the watchdog writes this run's row and ends the process */
			pause();
	return err;
}

/* Run I (1-based) of cell C, which is now in g->run; append its row. */
static int run_once(struct mb_run_grid *g, struct mb_run_cell *c, unsigned i)
{
	struct mb_csv_row *row = malloc(sizeof(*row));
	struct mb_run_result *r = malloc(sizeof(*r));
	int err, run_err;
	bool lost, stopped;

	if (!row || !r) {
		free(row);
		free(r);
		return mb_fail("out of host memory for a results row");
	}
	g->cell_run = g->timeline.run = i;
	mb_ranks_run_start(&g->ranks);
	run_err = run_checked(g, r, &lost);
	run_err = mb_run_ranks_end(&g->ranks, g->run.steps, run_err,
				   mb_run_stop && !g->ranks_stopped, &g->ranks_ended, &stopped);
	if (g->ranks_stopped && g->ranks_ended) /* a rank failed: no signal here */
		mb_run_stop = 0;
	if (stopped) /* a signal on any rank, its last step boundary past too: all end here */
		mb_run_stop = g->ranks_stop_agreed = 1;
	g->ranks_stopped = 0;
	mb_run_clear_progress(g);
	mb_run_fill_meta(g, row);
	row->run = i;
	mb_run_fill_results(row, r);
	row->device_used_base_bytes = g->used_base;
	if (g->pinned_copy != MB_PINNED_COPY_UNKNOWN)
		row->pinned_device_copy_bytes =
			g->pinned_copy == MB_PINNED_COPY_YES ? r->pinned_host_bytes : 0;
	snprintf(row->ns_kernel, sizeof(row->ns_kernel), "%s", r->ns_kernel);
	if (r->ns_kernel[0])
		snprintf(g->ns_kernel, sizeof(g->ns_kernel), "%s", r->ns_kernel);
	if (mb_devmem_sampler_peak(&g->sampler) && r->steps_done >= g->run.measure_last)
		row->device_used_peak_bytes = mb_devmem_sampler_peak(&g->sampler);
	if (c->predicted)
		mb_run_fill_prediction(g, row, &c->pred);
	if (run_err) {
		snprintf(row->status, sizeof(row->status), "failed");
		snprintf(row->reason, sizeof(row->reason), "%s%s", lost ? "device lost: " : "",
			 mb_errmsg());
		fprintf(stderr, "muonbench: stage %u %s run %u failed: %s\n", g->cell_stage,
			mb_variant_name(g->cell_variant), i, row->reason);
		g->failed++;
		c->done = true; /* the other runs of a failed cell would fail alike */
		g->steps_total -= (unsigned long)((g->args->runs - i) * g->args->steps);
	} else if (r->interrupted) {
		snprintf(row->status, sizeof(row->status), "interrupted");
		snprintf(row->reason, sizeof(row->reason),
			 "stopped by a signal after %u of %u steps", r->steps_done, g->run.steps);
		g->interrupted++;
	} else {
		snprintf(row->status, sizeof(row->status), "ok");
		check(g, r);
		if (r->timing_error[0]) { /* the figures are right; some are missing */
			snprintf(row->reason, sizeof(row->reason), "phase timings n/a: %s",
				 r->timing_error);
			fprintf(stderr, "muonbench: stage %u %s run %u: %s\n", g->cell_stage,
				mb_variant_name(g->cell_variant), i, row->reason);
			g->incomplete++;
		}
		if (!g->args->quiet)
			fprintf(stderr,
				"stage %u %-7s run %u/%llu: iteration %.4f s, apply %.4f s\n",
				g->cell_stage, mb_variant_name(g->cell_variant), i,
				(unsigned long long)g->args->runs, r->iter_mean_s, r->apply_mean_s);
	}
	err = mb_run_save_row(g, row);
	free(row);
	free(r);
	if (!err && lost)
		reopen_device(g);
	return err;
}

/* The failed row of the cell now in g->run, which never started, for REASON. */
static int unrun_row(struct mb_run_grid *g, const char *reason)
{
	struct mb_csv_row *row = malloc(sizeof(*row));
	struct mb_run_result *r = malloc(sizeof(*r));
	int err;

	if (!row || !r) {
		free(row);
		free(r);
		return mb_fail("out of host memory for a results row");
	}
	mb_run_result_unrun(r);
	mb_run_fill_meta(g, row);
	row->run = 1;
	mb_run_fill_results(row, r);
	snprintf(row->status, sizeof(row->status), "failed");
	snprintf(row->reason, sizeof(row->reason), "%s", reason);
	fprintf(stderr, "muonbench: stage %u %s %s\n", g->cell_stage,
		mb_variant_name(g->cell_variant), reason);
	g->failed++;
	g->steps_total -= (unsigned long)(g->args->runs * g->args->steps);
	err = mb_run_save_row(g, row);
	free(row);
	free(r);
	return err;
}

/*
 * CLBlast's temporaries on this device for model M under cell C (the fit
 * check's mb_fit_device clblast); where CLBlast cannot say, they are left
 * out, and the cell's state fails as it would, its row saying why.
 */
static int clblast_bytes(const struct mb_model *m, struct mb_fit_cell *c, void *ctx)
{
	const struct mb_cl *cl = ctx;

	c->clblast_fwd_bytes = 0;
	return mb_step_clblast_bytes(m, &c->plan, cl, &c->clblast_bytes) ||
	       (c->tokens && mb_fwdbwd_temp_bytes(m, c->tokens, cl, &c->clblast_fwd_bytes));
}

/*
 * Whether the cell now in g->run fits the host and the device (mb_fit),
 * into *fits; when it does not, its failed row, whose reason says why and
 * what would fit, is written.
 */
static int fit_cell(struct mb_run_grid *g, bool *fits)
{
	const struct mb_step_settings *s = &g->run.step;
	struct mb_fit_cell cell = {
		.plan = s->plan,
		.pin_memory = s->pin_memory,
		.pins_momentum = mb_variant_pins(s->variant),
		.alive = mb_variant_alive(s->variant),
		.tokens = s->fwd_bwd ? s->tokens : 0,
		.micro_batch = g->args->micro_batch,
		.pinned_device_copy = g->pinned_copy == MB_PINNED_COPY_YES,
		.nv_pinning = g->cl.create_buffer_nv && g->cl.pinned_alloc != MB_PINNED_NV,
	};
	struct mb_fit_host host;
	char reason[sizeof(((struct mb_csv_row *)0)->reason)];
	int ok;

	*fits = true;
	if (!g->args->fit_check_on)
		return 0;
	if (mb_host_mem_available(&host.available_bytes, host.where, sizeof(host.where))) {
		snprintf(reason, sizeof(reason), "%s", mb_errmsg());
		ok = mb_fail("%s (--fit-check off runs without the check)", reason);
	} else {
		host.ranks = g->ranks.local_size; /* this host's ranks, each with its share */
		ok = mb_fit_check(&g->model, &cell, &host, &g->fit, reason, sizeof(reason));
	}
	/* every rank agrees, whatever failed where: each calls this once a cell */
	ok = mb_run_ranks_fit(&g->ranks, ok, reason, sizeof(reason));
	if (ok != 0)
		return ok < 0 ? ok : 0;
	*fits = false;
	return unrun_row(g, reason);
}

/* The report of this invocation's rows, in --format. */
static int report(const struct mb_run_grid *g)
{
	return g->nrows ? mb_tables_print_rows(g->rows, g->nrows, g->args->format) : 0;
}

/*
 * The cells (mb_grid), each with its run's state. Every plan is built once
 * here, so that a bad budget is refused before any run.
 */
static int build_cells(struct mb_run_grid *g)
{
	struct mb_step_settings set;
	struct mb_grid grid;
	struct mb_plan plan;
	size_t i;
	int err;

	if ((err = mb_setup_grid(g->args, true, &grid)))
		return err;
	if (!(g->cells = calloc(grid.ncells, sizeof(*g->cells)))) {
		mb_grid_release(&grid);
		return mb_fail("out of host memory for the cells");
	}
	for (i = 0; i < grid.ncells; i++) {
		g->cells[i].at = grid.cells[i];
		/* a plan a stage and point: the variants share it */
		if (i && grid.cells[i].stage == grid.cells[i - 1].stage &&
		    grid.cells[i].point == grid.cells[i - 1].point)
			continue;
		mb_setup_step_settings(g->args, &grid.cells[i], g->ns_precision, &set);
		if ((err = mb_plan_build(&plan, &g->model, &set.plan)))
			break;
		mb_plan_release(&plan);
	}
	g->ncells = grid.ncells;
	mb_grid_release(&grid);
	return err;
}

/*
 * The profile each cell is predicted from: --profile's (off: none), else the
 * device's own in the cache, if muonbench profile made one (and not an older
 * muonbench, whose profile this one does not read: said on stderr).
 */
static int load_profile(struct mb_run_grid *g)
{
	const char *name = g->args->profile;
	char path[4096];
	int err;

	if (name && !strcmp(name, "off"))
		return 0;
	if (!name) {
		mb_profile_cache_path(&g->cl.info, path, sizeof(path));
		if (access(path, F_OK)) {
			if (g->tty) /* a hint for people; scripts' stderr stays as it was */
				fprintf(stderr,
					"muonbench: no device profile for '%s' yet (muonbench "
					"profile measures one): the cells are not predicted\n",
					g->cl.info.name);
			return 0;
		}
		name = path;
	}
	if ((err = mb_profile_load(&g->profile, name))) {
		/* the cache's, from an older muonbench or damaged: no prediction, and how to mend
		 * it; a --profile FILE that cannot be read is the user's to mend */
		if (name != path || err != -MB_EINPUT)
			return err;
		if (mb_err_kind() == MB_KIND_OLD_FORMAT)
			fprintf(stderr, "muonbench: %s: the cells are not predicted\n",
				mb_errmsg());
		else
			fprintf(stderr,
				"muonbench: the cached profile cannot be read: %s; the cells are not "
				"predicted (muonbench profile measures it again)\n",
				mb_errmsg());
		return 0;
	}
	if (name == path && g->profile.lacks) /* an older muonbench's: predicted less well */
		fprintf(stderr,
			"muonbench: the cached profile %s has no \"%s\" (an older muonbench's): "
			"the cells are predicted without it (muonbench profile measures it "
			"again)\n",
			path, g->profile.lacks);
	snprintf(g->profile_src, sizeof(g->profile_src), "%.511s", name);
	return 0;
}

/*
 * Whether a note about the device (said once) is worth stderr: where someone
 * would look for it, a GPU's run or a person's terminal; a script's stderr on
 * a CPU device stays as it was.
 */
static bool worth_saying(const struct mb_run_grid *g)
{
	return g->tty || !strcmp(g->cl.info.type, "GPU");
}

/*
 * Whether the driver keeps pinned host memory on the device too: as
 * --pinned-device-copy says, or (auto) measured where the driver gives its
 * used memory; said once where it does, on a GPU or a terminal.
 */
static int pinned_copy(struct mb_run_grid *g)
{
	const char *said = g->args->pinned_device_copy;
	char grew[32];
	uint64_t bytes;
	int err;

	if (strcmp(said, "auto")) {
		g->pinned_copy = !strcmp(said, "yes") ? MB_PINNED_COPY_YES : MB_PINNED_COPY_NO;
		return 0;
	}
	if ((err = mb_devmem_pinned_copy(&g->devmem, &g->cl, &g->pinned_copy, &bytes)))
		return err;
	if (g->pinned_copy == MB_PINNED_COPY_YES && worth_saying(g))
		fprintf(stderr,
			"muonbench: pinned host memory (%s) takes device memory too on '%s' (+%s for "
			"%u MiB): the fit check counts it, and the rows' pinned_device_copy_bytes "
			"%s\n",
			mb_pinned_alloc_names[g->cl.pinned_alloc], g->cl.info.name,
			mb_fmt_bytes_iec(grew, sizeof(grew), bytes), MB_DEVMEM_PROBE_BYTES >> 20,
			g->cl.create_buffer_nv ? "(--pinned-alloc nv pins without it)" : "");
	return 0;
}

static int setup(struct mb_run_grid *g)
{
	int err;

	if ((err = mb_setup_stages(g->args, g->stages, &g->nstages)) || (err = parse_measure(g)))
		return err;
	if (g->args->resume_at && g->args->resume_at >= g->args->steps)
		return mb_bad_input("--resume-at %llu: a reload needs a step after it (--steps is "
				    "%llu)",
				    (unsigned long long)g->args->resume_at,
				    (unsigned long long)g->args->steps);
	/* the precision's words and the calibrated mode's, checked before the device opens */
	if ((err = mb_setup_precision(g->args, NULL, mb_args_ns_method(g->args), &g->ns_precision)))
		return err;
	if (g->args->ns_rate && mb_args_given(g->args, "ns-precision"))
		return mb_bad_input("--ns-rate replaces Newton-Schulz by a calibrated kernel: "
				    "--ns-precision %s does not apply",
				    g->args->ns_precisions);
	if ((err = mb_setup_binding(g->args, &g->host)))
		return err;
	if ((err = mb_setup_model(g->args, &g->model)) || (err = build_cells(g)))
		return err;
	/* the whole model, which each cell's share is cut from (mb_run_ranks_shard) */
	if (g->args->world_size > 1 && (err = mb_setup_model(g->args, &g->full)))
		return err;
	/* rank 0 alone writes the results */
	if (!g->ranks.rank && (err = mb_run_default_out(g)))
		return err;
	g->out_existed = !g->out_created && g->out[0] && !access(g->out, F_OK);
	if ((g->out[0] && (err = mb_csv_check(g->out))) || (err = mb_setup_device(g->args, &g->cl)))
		return err;
	if ((err = load_profile(g)))
		return err;
	/* rank 0's steps, as it alone writes the results */
	if (g->args->timeline && !g->ranks.rank &&
	    (err = mb_timeline_open(&g->timeline, g->args->timeline)))
		return err;
	snprintf(g->fit.name, sizeof(g->fit.name), "%s", g->cl.info.name);
	g->fit.global_mem_bytes = g->cl.info.global_mem_bytes;
	g->fit.max_alloc_bytes = g->cl.info.max_alloc_bytes;
	g->fit.device_alloc_limit = mb_cl_alloc_limit(&g->cl.info);
	g->fit.limit_bytes = g->args->device_mem_limit;
	g->fit.host_memory = !strcmp(g->cl.info.type, "CPU");
	g->fit.clblast = clblast_bytes;
	g->fit.clblast_ctx = &g->cl;
	/* auto, resolved for the device */
	if ((err = mb_setup_precision(g->args, &g->cl.info, mb_args_ns_method(g->args),
				      &g->ns_precision)))
		return err;
	if (g->ns_precision == MB_PREC_FP32 && !mb_args_given(g->args, "ns-precision") &&
	    !g->args->ns_rate && worth_saying(g))
		fprintf(stderr,
			"muonbench: Newton-Schulz in fp32 on CLBlast: '%s' has no tensor-core path "
			"(NVIDIA sm_80 and up), where DeepSpeed runs it in fp16 (gram) or bf16 "
			"(standard); --ns-precision bf16|fp16 runs our portable 16-bit kernel\n",
			g->cl.info.name);
	mb_devmem_open(&g->devmem, &g->cl);
	if ((err = pinned_copy(g)))
		return err;
	if (g->devmem.source != MB_DEVMEM_NONE)
		return mb_devmem_sampler_start(&g->sampler, &g->devmem);
	if (worth_saying(g))
		fprintf(stderr,
			"muonbench: no driver's figure of the memory used on '%s' (%s): the "
			"device_used_* columns are empty\n",
			g->cl.info.name, g->devmem.why);
	return 0;
}

/* Cell C's settings into g->run, its plan's knobs as the cell has them. */
static void select_cell(struct mb_run_grid *g, const struct mb_run_cell *c)
{
	g->cell_stage = c->at.stage;
	g->cell_variant = c->at.variant;
	mb_setup_step_settings(g->args, &c->at, g->ns_precision, &g->run.step);
	g->run.step.timeline = g->timeline.f ? &g->timeline : NULL;
	/* a rank of several runs its share as a world of one (mb_shard) */
	g->run.step.plan.world_size = 1;
	g->run.step.plan.rank = 0;
}

/*
 * The first run of cell C, now in g->run: whether it fits (else its failed
 * row, and no more runs), and its prediction.
 */
static int start_cell(struct mb_run_grid *g, struct mb_run_cell *c)
{
	bool fits;
	int err;

	if ((err = fit_cell(g, &fits)))
		return err;
	if (!fits) {
		c->done = true;
		return 0;
	}
	return predict_cell(g, &c->pred, &c->predicted);
}

/*
 * Whether the grid ends before its next run on a signal. Alone, at once.
 * Under MPI, only once the ranks agreed on it at a run's end: a signal that
 * comes after that agreement is this rank's alone, and were it to leave the
 * grid the others would start the next run and wait for it at its first
 * step boundary for ever; so it goes into that run, whose first boundary
 * ends it on every rank.
 */
static bool stopping(const struct mb_run_grid *g)
{
	return g->ranks.mpi ? g->ranks_stop_agreed : mb_run_stop;
}

/*
 * Every run of every cell. Interleaved (the default), run 1 of each cell,
 * then run 2 of each, and so on: a change in the machine's speed during the
 * invocation falls on every cell alike instead of on the cells that ran
 * then. Else each cell's runs back to back, cell after cell.
 */
static int run_grid(struct mb_run_grid *g)
{
	unsigned runs = (unsigned)g->args->runs;
	unsigned rounds = g->args->interleave_on ? runs : 1, per = runs / rounds, r, k, i;
	struct mb_run_cell *c;
	size_t ci;
	int err = 0;

	for (r = 0; r < rounds && !err && !stopping(g) && !g->ranks_ended; r++)
		for (ci = 0; ci < g->ncells && !err && !stopping(g) && !g->ranks_ended; ci++) {
			c = &g->cells[ci];
			for (k = 1; k <= per && !c->done && !err && !stopping(g) && !g->ranks_ended;
			     k++) {
				i = r * per + k;
				select_cell(g, c);
				if ((err = mb_run_ranks_shard(g->args, &g->full, &g->model,
							      c->at.stage, &g->shard_stage)))
					break;
				if (g->device_gone[0]) {
					c->done = true;
					err = unrun_row(g, g->device_gone);
					break;
				}
				if (i == 1 && ((err = start_cell(g, c)) || c->done))
					break;
				err = run_once(g, c, i);
			}
		}
	return err;
}

static int verdict(const struct mb_run_grid *g)
{
	/* after Markdown on stdout; with csv or json, stdout stays machine-read */
	FILE *out = g->args->format == MB_FORMAT_MD && !g->ranks.rank ? stdout : stderr;
	char tuning[MB_SETUP_TUNING_SAID_LEN];
	int d, ns;

	if (g->out[0])
		fprintf(out, "\nResults: %s\n", g->out);
	else /* under MPI, a rank other than 0 */
		fprintf(out,
			"\nRank %llu of %llu (local rank %llu on %s): its rows are in rank 0's "
			"results\n",
			(unsigned long long)g->args->rank, (unsigned long long)g->args->world_size,
			(unsigned long long)g->args->local_rank, g->host.name);
	fprintf(out, "%s.\n", mb_setup_tuning_said(&g->cl, tuning, sizeof(tuning)));
	if (g->ns_kernel[0] && g->args->ns_rate)
		fprintf(out,
			"Newton-Schulz calibrated: %s at %llu GFLOP/s, the update not "
			"orthogonalized.\n",
			g->ns_kernel, (unsigned long long)g->args->ns_rate);
	else if (g->ns_kernel[0])
		fprintf(out, "Newton-Schulz's GEMMs: %s, on %s.\n",
			mb_precision_names[g->ns_precision], g->ns_kernel);
	for (d = 0; d < MB_NMOM_DTYPES; d++)
		for (ns = 0; ns < MB_NS_NMETHODS; ns++)
			if (g->checked_math[d][ns] == 1) /* nothing to compare it with */
				fprintf(out,
					"Final state, %s momentum, %s Newton-Schulz: one run, no other "
					"to compare (checksum %016llx); step-phase peak %s the "
					"plan.\n",
					mb_momentum_dtype_names[d], mb_ns_method_names[ns],
					(unsigned long long)g->checksum[d][ns],
					g->mismatched ? "checked against" : "as predicted by");
			else if (g->checked_math[d][ns])
				fprintf(out,
					"Final state, %s momentum, %s Newton-Schulz: %s over %u runs "
					"(checksum %016llx); step-phase peak %s the plan.\n",
					mb_momentum_dtype_names[d], mb_ns_method_names[ns],
					g->mismatched_math[d][ns] ? "MISMATCH"
								  : "bitwise identical",
					g->checked_math[d][ns],
					(unsigned long long)g->checksum[d][ns],
					g->mismatched ? "checked against" : "as predicted by");
	/* the fallback said once more at the end: on its own line where another error ends it */
	if (g->fallback &&
	    (g->interrupted || mb_run_stop || g->mismatched || g->failed || g->incomplete))
		fprintf(stderr,
			"muonbench: the results could not be written to '%s'; they are in '%s'\n",
			g->given_out, g->out);
	if (g->interrupted || mb_run_stop)
		return g->out[0]
			       ? mb_fail("interrupted: the runs that finished are in '%s'", g->out)
			       : mb_fail("interrupted: the runs that finished are in rank 0's "
					 "results");
	if (g->mismatched)
		return mb_fail("self-check failed: the final states differ between runs, or a "
			       "step-phase peak is not the plan's (see above)");
	if (g->failed)
		return mb_fail("%u run(s) failed; their rows in '%s' say why", g->failed,
			       g->out[0] ? g->out : "rank 0's results");
	if (g->incomplete)
		return mb_fail(
			"%u run(s) incomplete: the driver gave no time for some phases, which "
			"are n/a (empty in '%s'; see above)",
			g->incomplete, g->out);
	if (g->fallback)
		return mb_fail("the results could not be written to '%s'; they are in the fallback "
			       "file '%s'",
			       g->given_out, g->out);
	return 0;
}

int mb_cmd_run(const struct mb_args *args)
{
	struct mb_run_grid *g = calloc(1, sizeof(*g));
	pthread_t watcher;
	struct stat st;
	bool set_up;
	int err;

	if (!g)
		return mb_fail("out of host memory");
	g->ranked = *args;
	g->args = &g->ranked;
	g->run.steps = (unsigned)args->steps;
	g->run.resume_at = (unsigned)args->resume_at;
	g->run.device_mem_limit = args->device_mem_limit;
	g->run.on_step = on_step;
	g->run.on_step_ctx = g;
	g->tty = !args->quiet && isatty(STDERR_FILENO);
	g->started_s = mb_now_s();
	if ((err = mb_run_watch(g, &watcher))) {
		free(g);
		return err;
	}
	set_up = !(err = mb_run_ranks_init(&g->ranks, &g->ranked)) &&
		 !(err = mb_run_ranks_same(&g->ranks, &g->ranked)) &&
		 !(err = mb_run_ranks_agree(&g->ranks, setup(g)));
	if (set_up) {
		atomic_store(&g->set_up, true);
		g->steps_total = (unsigned long)(g->ncells * args->runs * args->steps);
		err = run_grid(g);
	}
	mb_run_unwatch(g, watcher);
	if (!err && set_up && !g->ranks.rank)
		err = report(g);
	if (!err && set_up)
		err = verdict(g);
	if (err && !g->nrows && g->out[0] && !g->out_existed && !stat(g->out, &st) && !st.st_size)
		unlink(g->out); /* checked, created, and then nothing ran */
	err = mb_timeline_close(&g->timeline, err);
	mb_cl_release(&g->cl);
	mb_devmem_sampler_stop(&g->sampler);
	mb_devmem_close(&g->devmem);
	mb_model_release(&g->model);
	mb_model_release(&g->full);
	mb_ranks_finalize(&g->ranks);
	free(g->rows);
	free(g->cells);
	free(g);
	return err;
}
