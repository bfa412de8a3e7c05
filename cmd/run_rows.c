/*
 * run_rows: run's results rows and their file. Where the rows go (--out, or
 * a new file under results/ named for the model, the stages and the time),
 * what a row says (the run's settings, host and device; its prediction; its
 * figures), and how it is written: every rank's row through rank 0, kept and
 * appended as each run ends, to a fallback file in $TMPDIR once the results
 * file stops taking rows.
 */
#define _DEFAULT_SOURCE /* mkstemps */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mb_err.h"
#include "mb_phase.h"
#include "run_grid.h"
#include "version.h"

/*
 * NAME (a config's, any bytes) as a file name that stays in results/:
 * letters, digits, '-', '_' and '.' kept, any other byte '_', a leading '.'
 * too (no hidden files, no ".."); "model" if nothing is left.
 */
static void file_name(char *buf, size_t len, const char *name)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = isalnum((unsigned char)name[i]) || strchr("-_.", name[i]) ? name[i] : '_';
	buf[i] = '\0';
	if (buf[0] == '.')
		buf[0] = '_';
	if (!buf[0])
		snprintf(buf, len, "model");
}

int mb_run_default_out(struct mb_run_grid *g)
{
	char stages[8] = "", stamp[32], name[sizeof(g->model.name)];
	time_t now = time(NULL);
	size_t i;

	if (g->args->out) {
		snprintf(g->out, sizeof(g->out), "%s", g->args->out);
		return 0;
	}
	for (i = 0; i < g->nstages; i++)
		snprintf(stages + strlen(stages), sizeof(stages) - strlen(stages), "%s%u",
			 i ? "-" : "", g->stages[i]);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", gmtime(&now));
	if (mkdir("results", 0755) && errno != EEXIST)
		return mb_bad_input("cannot create the directory 'results': %s", strerror(errno));
	file_name(name, sizeof(name), g->model.name);
	/* a new file, created here so that a second invocation started in the same
	   second takes the next name rather than appending its rows to this one's */
	for (i = 1; i <= 100; i++) {
		char n[16] = "";
		int fd;

		if (i > 1)
			snprintf(n, sizeof(n), "-%zu", i);
		snprintf(g->out, sizeof(g->out), "results/%s-stage%s-%s%s.csv", name, stages, stamp,
			 n);
		fd = open(g->out, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			close(fd);
			g->out_created = true;
			return 0;
		}
		if (errno != EEXIST)
			return mb_bad_input("cannot create '%s': %s", g->out, strerror(errno));
	}
	return mb_bad_input("'%s' and 99 more names like it exist already; give --out", g->out);
}

void mb_run_fill_meta(const struct mb_run_grid *g, struct mb_csv_row *row)
{
	const struct mb_args *a = g->args;
	const struct mb_run_settings *s = &g->run;
	time_t now = time(NULL);
	size_t k;

	memset(row, 0, sizeof(*row));
	strftime(row->timestamp_utc, sizeof(row->timestamp_utc), "%Y-%m-%dT%H:%M:%SZ",
		 gmtime(&now));
	snprintf(row->version, sizeof(row->version), "%s", MB_VERSION);
	snprintf(row->git_rev, sizeof(row->git_rev), "%s", MB_GIT_REV);
	snprintf(row->host, sizeof(row->host), "%s", g->host.name);
	row->rank = g->args->rank;
	row->world_size = g->args->world_size;
	row->local_rank = g->args->local_rank;
	snprintf(row->cpu_model, sizeof(row->cpu_model), "%s", g->host.cpu_model);
	snprintf(row->platform, sizeof(row->platform), "%s", g->cl.info.platform_name);
	snprintf(row->device, sizeof(row->device), "%s", g->cl.info.name);
	snprintf(row->vendor, sizeof(row->vendor), "%s", g->cl.info.vendor);
	snprintf(row->driver, sizeof(row->driver), "%s", g->cl.info.driver);
	snprintf(row->device_pci, sizeof(row->device_pci), "%s", g->cl.info.pci);
	if (g->cl.info.numa_node >= 0)
		snprintf(row->device_numa_node, sizeof(row->device_numa_node), "%d",
			 g->cl.info.numa_node);
	snprintf(row->tuning, sizeof(row->tuning), "%.511s", g->cl.tuning);
	snprintf(row->tuning_match, sizeof(row->tuning_match), "%s", g->cl.tuning_match);
	snprintf(row->cpus, sizeof(row->cpus), "%s", g->host.cpus);
	snprintf(row->mems, sizeof(row->mems), "%s", g->host.mems);
	snprintf(row->binding, sizeof(row->binding), "%s", g->host.binding);
	snprintf(row->model, sizeof(row->model), "%s", g->model.name);
	snprintf(row->source, sizeof(row->source), "%s", g->model.source);
	row->layers = g->model.layers;
	/* the whole model's, also where a rank runs its share */
	row->params_total = (g->full.nparams ? &g->full : &g->model)->numel_total;
	row->params_muon = (g->full.nparams ? &g->full : &g->model)->numel_muon;
	row->stage = s->step.plan.stage;
	snprintf(row->variant, sizeof(row->variant), "%s", mb_variant_name(s->step.variant));
	for (k = 0; mb_knobs[k].field; k++) /* "auto" as the word the stage took */
		mb_knob_name(k, s->step.knob[k], row->knob[k], sizeof(row->knob[k]));
	row->runs = a->runs;
	row->steps = s->steps;
	row->measure_first = s->measure_first;
	row->measure_last = s->measure_last;
	row->gather_budget_bytes = s->step.plan.gather_budget_bytes;
	row->sub_group_size_elems = s->step.plan.sub_group_size;
	snprintf(row->pinned_alloc, sizeof(row->pinned_alloc), "%s",
		 mb_pinned_alloc_names[g->cl.pinned_alloc]);
	snprintf(row->ns_precision, sizeof(row->ns_precision), "%s",
		 s->step.plan.ns_rate_gflops ? "calibrated"
					     : mb_precision_names[s->step.plan.ns_precision]);
	row->ns_rate_gflops = s->step.plan.ns_rate_gflops ? s->step.plan.ns_rate_gflops
							  : MB_CSV_UNKNOWN;
	row->pin_chunk_bytes = s->step.plan.pin_chunk_bytes;
	row->reduce_bucket_size = s->step.plan.reduce_bucket_elems;
	snprintf(row->grad_clip, sizeof(row->grad_clip), "%g", s->step.grad_clip);
	row->seed = s->step.seed;
	row->resume_at = s->resume_at;
	row->seq = a->seq;
	row->micro_batch = a->micro_batch;
	snprintf(row->device_used_source, sizeof(row->device_used_source), "%s",
		 mb_devmem_source_names[g->devmem.source]);
	row->device_used_base_bytes = row->device_used_peak_bytes = MB_CSV_UNKNOWN;
	snprintf(row->pinned_device_copy, sizeof(row->pinned_device_copy), "%s",
		 mb_pinned_copy_names[g->pinned_copy]);
	row->pinned_device_copy_bytes = MB_CSV_UNKNOWN;
	row->pred_iter_s = row->pred_apply_s = row->pred_d2h_hidden_frac = NAN;
#define NAN_(e, f, ...) row->pred_##f = NAN;
	MB_PHASES(NAN_)
#undef NAN_
}

void mb_run_fill_prediction(const struct mb_run_grid *g, struct mb_csv_row *row,
			    const struct mb_step_times *t)
{
	const struct mb_phase_times *p = &t->phase;

	snprintf(row->profile, sizeof(row->profile), "%s", g->profile_src);
	row->pred_iter_s = t->iter_s;
	row->pred_apply_s = t->apply_s;
#define PRED_(e, f, ...) row->pred_##f = p->f;
	MB_PHASES(PRED_)
#undef PRED_
	row->pred_d2h_hidden_frac = p->d2h_s > 0 ? p->d2h_hidden_s / p->d2h_s : 0;
}

void mb_run_fill_results(struct mb_csv_row *row, const struct mb_run_result *r)
{
	const struct mb_phase_times *p = &r->phase;

	row->iter_mean_s = r->iter_mean_s;
	row->apply_mean_s = r->apply_mean_s;
#define PHASE_(e, f, ...) row->f = p->f;
	MB_PHASES(PHASE_)
#undef PHASE_
	/* NaN (n/a) when either is; 0 of 0 is nothing hidden */
	row->d2h_hidden_frac = isnan(p->d2h_s) || isnan(p->d2h_hidden_s) ? NAN
			       : p->d2h_s > 0 ? p->d2h_hidden_s / p->d2h_s
					      : 0;
	row->host_opt_gbs = r->host_opt_gbs;
	row->memcpy_gbs = r->memcpy_gbs;
	row->h2d_gbs = r->h2d_gbs;
	row->d2h_gbs = r->d2h_gbs;
	row->params_h2d_gbs = r->params_h2d_gbs;
	row->peak_device_bytes = r->peak_bytes;
	row->peak_forward_bytes = r->peak_forward_bytes;
	row->peak_backward_bytes = r->peak_backward_bytes;
	row->peak_step_bytes = r->peak_step_bytes;
	row->plan_peak_step_bytes = r->plan_peak_step_bytes;
	row->clblast_temp_bytes = r->clblast_temp_bytes;
	row->pinned_host_bytes = r->pinned_host_bytes;
	row->peak_device_own_bytes = r->own_peak_bytes;
	row->peak_forward_own_bytes = r->own_peak_forward_bytes;
	row->peak_backward_own_bytes = r->own_peak_backward_bytes;
	row->peak_step_own_bytes = r->own_peak_step_bytes;
	snprintf(row->momentum_pinned, sizeof(row->momentum_pinned), "%s",
		 r->momentum_pinned ? "yes" : "no");
	snprintf(row->checksum, sizeof(row->checksum), "%016llx", (unsigned long long)r->checksum);
	row->nsamples = r->steps_done;
	memcpy(row->iter_samples_s, r->iter_s, r->steps_done * sizeof(double));
	memcpy(row->apply_samples_s, r->apply_s, r->steps_done * sizeof(double));
}

/*
 * When the results file stops taking rows mid-run (a full disk, a file size
 * limit), this invocation's rows so far and all later ones go to a new file
 * in $TMPDIR instead, named on stderr: a finished run is never lost.
 */
static int fall_back(struct mb_run_grid *g)
{
	const char *tmpdir = getenv("TMPDIR");
	char why[512], path[4096];
	size_t i;
	int fd, err = 0;

	snprintf(why, sizeof(why), "%s", mb_errmsg());
	snprintf(path, sizeof(path), "%s/muonbench-XXXXXX.csv",
		 tmpdir && *tmpdir ? tmpdir : "/tmp");
	if ((fd = mkstemps(path, 4)) < 0)
		return mb_fail("%s; and no fallback file could be made in '%s': %s", why,
			       tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
	close(fd);
	for (i = 0; !err && i < g->nrows; i++)
		err = mb_csv_append(path, &g->rows[i]);
	if (err)
		return err;
	/* one line now, one at the end (verdict): the run goes on meanwhile */
	fprintf(stderr,
		"muonbench: %s; this invocation's results (%zu earlier row%s too) now go to "
		"'%s'\n",
		why, g->nrows - 1, g->nrows == 2 ? "" : "s", path);
	snprintf(g->given_out, sizeof(g->given_out), "%s", g->out);
	snprintf(g->out, sizeof(g->out), "%s", path);
	g->fallback = true;
	return 0;
}

/*
 * Keep ROW, and append it to the results file or, when that fails, the
 * fallback; the watchdog does not end the process in the middle of it.
 */
static int keep_row(struct mb_run_grid *g, const struct mb_csv_row *row);

/*
 * Every rank's ROW of this run to rank 0, which keeps and appends them in
 * rank order. The ranks agree on rank 0's room for them before the gather
 * and on its writing them after: a failure there ends every rank.
 */
int mb_run_save_row(struct mb_run_grid *g, const struct mb_csv_row *row)
{
	struct mb_csv_row *all = NULL;
	unsigned k;
	int err = 0;

	if (!g->ranks.mpi)
		return keep_row(g, row);
	if (!g->ranks.rank && !(all = calloc(g->ranks.world_size, sizeof(*all))))
		err = mb_fail("out of host memory for the ranks' rows");
	if ((err = mb_run_ranks_agree(&g->ranks, err)))
		return err;
	err = mb_ranks_gather(&g->ranks, row, sizeof(*row), all);
	for (k = 0; !err && all && k < g->ranks.world_size; k++)
		err = keep_row(g, &all[k]);
	free(all);
	return mb_run_ranks_agree(&g->ranks, err);
}

static int keep_row(struct mb_run_grid *g, const struct mb_csv_row *row)
{
	struct mb_csv_row *rows = realloc(g->rows, (g->nrows + 1) * sizeof(*rows));
	int idle = RUN_IDLE, err = 0;

	if (!rows)
		return mb_fail("out of host memory keeping a results row");
	g->rows = rows;
	g->rows[g->nrows++] = *row;
	if (!atomic_compare_exchange_strong(&g->run_owner, &idle, RUN_SAVING))
		for (;;) /* the watchdog is ending the process */
			pause();
	if (mb_csv_append(g->out, row))
		err = g->fallback ? -MB_EFAIL : fall_back(g);
	atomic_store(&g->run_owner, RUN_IDLE);
	return err;
}
