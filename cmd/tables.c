/*
 * tables: results tables (mb_results) as the reference's tables, in
 * Markdown, or one CSV row / JSON object per cell, to stdout: what report
 * prints of its files, and run of its own rows. A table none of whose cells
 * ran is its failures alone, one line per cell.
 */
#include "tables.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_num.h"
#include "mb_phase.h"
#include "mb_plan.h"
#include "mb_stats.h"
#include "mb_variant.h"
#include "print.h"

#define GIB (1ull << 30)

static const char *peak_change(char *buf, size_t len, uint64_t x, uint64_t base, bool is_base)
{
	char d[24];
	uint64_t diff = x > base ? x - base : base - x;

	buf[0] = '\0';
	if (is_base || !base || x == base)
		return buf;
	if (diff >= GIB / 100 || x >= GIB)
		mb_fmt_real(d, sizeof(d), (double)diff / GIB, 2);
	else
		mb_fmt_bytes_iec(d, sizeof(d), diff);
	snprintf(buf, len, " (%c%s)", x > base ? '+' : '-', d);
	return buf;
}

/* The free text of a results file (names, not words of a list) as Markdown. */
#define MD(buf, text) mb_md(buf, sizeof(buf), text)

/* Knob K of R as the header says it: its word, or what auto means (mb_knob_auto_text). */
static const char *knob_setting(char *buf, size_t len, const struct mb_csv_row *r, enum mb_knob k)
{
	const char *s = mb_results_knob_setting(r, k);

	return strcmp(s, "auto") ? s : mb_knob_auto_text(k, buf, len);
}

static void md_header(const struct mb_table *t)
{
	const struct mb_csv_row *r = t->first;
	char a[32], b[32], budget[32], chunk[32], sub[32], momentum[64], back[64];
	char md[10][MB_MD_LEN(sizeof(r->tuning))]; /* the tuning: the longest of them */

	printf("# %s on '%s' (%s, driver %s)", MD(md[0], r->model), MD(md[1], r->device),
	       MD(md[2], r->platform), MD(md[3], r->driver));
	if (r->world_size > 1) /* run under MPI: a table per rank */
		printf(", rank %llu of %llu (local rank %llu)", (unsigned long long)r->rank,
		       (unsigned long long)r->world_size, (unsigned long long)r->local_rank);
	printf("\n\n");
	/* the rows say which tuning, not what it held (CLBlast parameters, Newton-Schulz tiles) */
	printf("Tuning: %s (%s).\n", MD(md[4], r->tuning), r->tuning_match);
	printf("Host %s (%s), CPUs %s, memory nodes %s (%s). Model %s: %llu layer%s, %s "
	       "parameters, %s Muon. Steps %llu-%llu of %llu per run; gather budget %s; "
	       "sub-group %s elements; pin_memory %s (chunks of %s, %s); writeback %s; "
	       "parameter order %s; momentum %s; Newton-Schulz %s in %s; params back %s; ZeRO-3 apply "
	       "%s; forward/backward %s (seq %llu x %llu); seed %llu.\n\n",
	       MD(md[5], r->host), MD(md[6], r->cpu_model), MD(md[7], r->cpus), MD(md[8], r->mems),
	       r->binding, MD(md[9], r->source), (unsigned long long)r->layers,
	       r->layers == 1 ? "" : "s", mb_fmt_count(a, sizeof(a), r->params_total),
	       mb_fmt_count(b, sizeof(b), r->params_muon), (unsigned long long)r->measure_first,
	       (unsigned long long)r->measure_last, (unsigned long long)r->steps,
	       mb_fmt_bytes_iec(budget, sizeof(budget), r->gather_budget_bytes),
	       mb_fmt_count(sub, sizeof(sub), r->sub_group_size_elems), r->knob[MB_KNOB_PIN_MEMORY],
	       mb_fmt_bytes_iec(chunk, sizeof(chunk), r->pin_chunk_bytes),
	       mb_results_pinned_alloc_setting(r), r->knob[MB_KNOB_WRITEBACK_DEP],
	       r->knob[MB_KNOB_PARAM_ORDER],
	       knob_setting(momentum, sizeof(momentum), r, MB_KNOB_MOMENTUM_DTYPE),
	       r->knob[MB_KNOB_NS_METHOD], mb_results_ns_precision_setting(r),
	       knob_setting(back, sizeof(back), r, MB_KNOB_PARAMS_BACK),
	       r->knob[MB_KNOB_ZERO3_APPLY], r->knob[MB_KNOB_FWD_BWD], (unsigned long long)r->seq,
	       (unsigned long long)r->micro_batch, (unsigned long long)r->seed);
}

/* What every cell is compared with, and the reference change's variant. */
#define BASE	  mb_variant_name(MB_VARIANT_BASE)
#define REFERENCE mb_variant_name(MB_VARIANT_REFERENCE)

/* Markdown's printer, and its fields' shorthands. */
#define MD_PR	     mb_printer(MB_FORMAT_MD)
#define T(key, v)    MB_FIELD_T(key, v)
#define NONE	     MB_FIELD_NONE("")
#define CELL(c, ...) MB_FIELD_N("ZeRO", (c)->stage), T("Variant", (c)->variant), __VA_ARGS__

/* "failed: REASON", the cell of a cell that did not run, into BUF. */
static const char *failure(char *buf, size_t len, const struct mb_cell *c)
{
	snprintf(buf, len, "%s: %s", c->failed ? c->failed->status : "failed",
		 c->failed ? c->failed->reason : "no runs");
	return buf;
}

/* A row of the main or breakdown table (two where a run failed); FIRST: the table's first. */
static void md_cell(const struct mb_table *t, const struct mb_cell *c, bool first)
{
	const struct mb_cell *base = mb_results_cell(t, c->stage, BASE);
	bool is_base = base == c || !base || !base->nruns;
	char s[32], ch[32], it[64], ap[64], pk[64], why[sizeof(c->failed->reason) + 64];
	char *runs;
	size_t i, used = 0;

	if (!c->nruns) {
		struct mb_field f[] = { CELL(c,
					     T("Iteration (s), runs", failure(why, sizeof(why), c)),
					     NONE, NONE, NONE) };

		MD_PR->record(f, 6, first);
		return;
	}
	if ((runs = malloc(c->nruns * sizeof(s) + 1))) /* else the cell is empty */
		for (runs[0] = '\0', i = 0; i < c->nruns; i++)
			used += (size_t)sprintf(runs + used, "%s%s", i ? " / " : "",
						mb_fmt_secs(s, sizeof(s), c->runs[i].iter_mean_s));
	snprintf(it, sizeof(it), "%s%s", mb_fmt_secs(s, sizeof(s), c->iter_mean_s),
		 mb_fmt_change(ch, sizeof(ch), c->iter_mean_s, is_base ? NAN : base->iter_mean_s));
	snprintf(ap, sizeof(ap), "%s s%s", mb_fmt_secs(s, sizeof(s), c->apply_mean_s),
		 mb_fmt_change(ch, sizeof(ch), c->apply_mean_s,
			       is_base ? NAN : base->apply_mean_s));
	snprintf(pk, sizeof(pk), "%s%s", mb_fmt_peak(s, sizeof(s), c->peak_bytes),
		 peak_change(ch, sizeof(ch), c->peak_bytes, is_base ? 0 : base->peak_bytes,
			     is_base));
	struct mb_field f[] = { CELL(c, T("Iteration (s), runs", runs ? runs : ""),
				     T("Iteration mean", it), T("Muon apply mean", ap),
				     T("Peak device memory", pk)) };

	MD_PR->record(f, 6, first);
	free(runs);
	if (c->failed) {
		snprintf(why, sizeof(why), "(also %s %s run: %s)",
			 strchr("aeiou", c->failed->status[0]) ? "an" : "a", c->failed->status,
			 c->failed->reason);
		f[2] = T("Iteration (s), runs", why);
		f[3] = f[4] = f[5] = NONE;
		MD_PR->record(f, 6, false);
	}
}

static void md_main(const struct mb_table *t)
{
	size_t i;
	bool any = false;

	/* the reference's first table: master against both, where a stage has both */
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];

		if (strcmp(c->variant, BASE) && strcmp(c->variant, REFERENCE))
			continue;
		if (!mb_results_cell(t, c->stage, BASE) || !mb_results_cell(t, c->stage, REFERENCE))
			continue;
		md_cell(t, c, !any);
		any = true;
	}
	if (any)
		printf("\n");
	printf("Breakdown of the variants:\n\n");
	for (i = 0; i < t->ncells; i++)
		md_cell(t, &t->cells[i], !i);
}

static void md_phase_peaks(const struct mb_table *t)
{
	const struct mb_cell *per[4] = { NULL };
	const char *names[] = { "forward", "backward", "step" };
	char pk[3][32], head[3][sizeof(per[0]->variant) + 16];
	struct mb_field f[4];
	unsigned stage;
	size_t i, n;

	/* per stage: the 'both' cell as the reference's, else the first with runs */
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];

		if (c->nruns && (!per[c->stage] || !strcmp(c->variant, REFERENCE)))
			per[c->stage] = c;
	}
	printf("\nPeak device memory per phase:\n\n");
	for (i = 0; i < 3; i++) {
		f[0] = T("Phase", names[i]);
		for (n = 1, stage = 1; stage <= 3; stage++) {
			const struct mb_cell *c = per[stage];

			if (!c)
				continue;
			snprintf(head[n - 1], sizeof(head[0]), "ZeRO-%u (%s)", stage, c->variant);
			f[n] = T(head[n - 1], mb_fmt_peak(pk[n - 1], sizeof(pk[0]),
							  i == 0   ? c->peak_forward_bytes
							  : i == 1 ? c->peak_backward_bytes
								   : c->peak_step_bytes));
			n++;
		}
		MD_PR->record(f, n, !i);
	}
}

/*
 * The driver's own figure beside the ledger's, where some run has it: the
 * ledger counts what muonbench allocates (the framework's figure, as the
 * reference's tables); the driver's peak counts all the device holds, other
 * processes and the driver's own copies of pinned host memory included.
 */
static void md_driver_peaks(const struct mb_table *t)
{
	char pk[4][32];
	size_t i;
	bool any = false, first = true;

	for (i = 0; i < t->ncells; i++)
		any |= t->cells[i].nruns && t->cells[i].used_peak_bytes != MB_CSV_UNKNOWN;
	if (!any)
		return;
	printf("\nDevice memory, muonbench's ledger against the driver's own figure (%s; the "
	       "peaks of the measured steps, the base before the run's first allocation):\n\n",
	       t->first->device_used_source);
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];
		bool known = c->used_peak_bytes != MB_CSV_UNKNOWN;
		bool base = known && c->used_base_bytes != MB_CSV_UNKNOWN &&
			    c->used_base_bytes <= c->used_peak_bytes;

		if (!c->nruns)
			continue;
		struct mb_field f[] = { CELL(
			c, T("Ledger peak", mb_fmt_peak(pk[0], sizeof(pk[0]), c->peak_bytes)),
			T("Driver's peak",
			  known ? mb_fmt_peak(pk[1], sizeof(pk[1]), c->used_peak_bytes) : "n/a"),
			T("Driver's base",
			  base ? mb_fmt_peak(pk[2], sizeof(pk[2]), c->used_base_bytes) : "n/a"),
			T("Driver's peak less base",
			  base ? mb_fmt_peak(pk[3], sizeof(pk[3]),
					     c->used_peak_bytes - c->used_base_bytes)
			       : "n/a")) };

		MD_PR->record(f, 6, first);
		first = false;
	}
}

static void md_phase_times(const struct mb_table *t)
{
	char v[MB_NPHASES + 1][32];
	const char *text[MB_NPHASES + 1];
	struct mb_field f[MB_NPHASES + 3];
	size_t i, k;
	bool first = true;

	printf("\nTime per phase (s, means of the measured steps):\n\n");
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];
#define VALUE_(e, f, ...) c->phase.f,
		double secs[] = { MB_PHASES(VALUE_) };
#undef VALUE_

		if (!c->nruns)
			continue;
		for (k = 0; k < MB_NPHASES; k++)
			text[k] = mb_fmt_secs(v[k], 32, secs[k]);
		if (isnan(c->phase.d2h_hidden_frac))
			snprintf(v[k], 32, "n/a");
		else
			snprintf(v[k], 32, "%.0f%%", 100 * c->phase.d2h_hidden_frac);
		text[k] = v[k];
		f[0] = MB_FIELD_N("ZeRO", c->stage);
		f[1] = T("Variant", c->variant);
		MD_PR->record(f, 2 + mb_phase_fields(f + 2, "writeback hidden", text), first);
		first = false;
	}
}

static void md_bus(const struct mb_table *t)
{
	char v[3][32];
	size_t i;
	bool first = true;

	printf("\nAchieved over the bus (GB/s: the plan's bytes over the phase's device time; "
	       "read against muonbench bandwidth):\n\n");
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];

		if (!c->nruns)
			continue;
		struct mb_field f[] = { CELL(c, T("H2D", mb_fmt_secs(v[0], 32, c->h2d_gbs)),
					     T("D2H", mb_fmt_secs(v[1], 32, c->d2h_gbs)),
					     T("params H2D",
					       mb_fmt_secs(v[2], 32, c->params_h2d_gbs))) };

		MD_PR->record(f, 5, first);
		first = false;
	}
}

/* "0.118 / 0.106 (+11%)": measured, predicted, the residual; bold past 25%. */
static const char *beside(char *buf, size_t len, double measured, double predicted)
{
	char m[32], p[32], rs[32];
	double r = 100 * (measured / predicted - 1);

	if (isnan(measured) || isnan(predicted) || !(predicted > 0)) {
		snprintf(buf, len, "%s / %s", mb_fmt_secs(m, sizeof(m), measured),
			 mb_fmt_secs(p, sizeof(p), predicted));
		return buf;
	}
	/* a residual past fixed notation's room in scientific, as every figure (mb_fmt_real) */
	snprintf(rs, sizeof(rs), fabs(r) >= 1e6 ? "%+.3g%%" : "%+.0f%%", r);
	snprintf(buf, len, fabs(r) > 25 ? "%s / %s (**%s**)" : "%s / %s (%s)",
		 mb_fmt_secs(m, sizeof(m), measured), mb_fmt_secs(p, sizeof(p), predicted), rs);
	return buf;
}

/*
 * The median over C's runs of figure K (a phase; ITER: the iteration, APPLY:
 * the Muon apply), of the runs that have it; NaN where none has. The model
 * predicts from the profile's median samples, the device at the level it
 * runs at most of the time: a run that met a shared VM's slow spell moves
 * the mean over the runs, not their median.
 */
enum { ITER = -1, APPLY = -2 };
static double runs_median(const struct mb_cell *c, int k)
{
	double *v = malloc(c->nruns * sizeof(*v)), m = NAN;
	size_t i, n = 0;

	if (!v)
		return NAN;
	for (i = 0; i < c->nruns; i++) {
		const struct mb_run *r = &c->runs[i];
		double x = k == ITER ? r->iter_mean_s : k == APPLY ? r->apply_mean_s : r->phase[k];

		if (!isnan(x))
			v[n++] = x;
	}
	if (n)
		m = mb_spread_of(v, n).median;
	free(v);
	return m;
}

/* Cell C's phases, mb_phase's order: PHASE[k] is { the median run's, predicted }. */
static void cell_phases(const struct mb_cell *c, double phase[MB_NPHASES][2])
{
#define VALUE_(e, f, ...) { runs_median(c, MB_PHASE_##e), c->pred.f },
	const double v[][2] = { MB_PHASES(VALUE_) };
#undef VALUE_

	memcpy(phase, v, sizeof(v));
}

/* The phases that time the device's compute alone, and their names in the note. */
static const enum mb_phase compute[] = { MB_PHASE_FORWARD, MB_PHASE_BACKWARD, MB_PHASE_NS };
static const char *const compute_names[] = { "the forward", "the backward", "Newton-Schulz" };
#define NCOMPUTE (sizeof(compute) / sizeof(compute[0]))

/*
 * Whether T's device computed at another speed than its profile says: the
 * residuals (measured over predicted, less 1) of the compute phases that
 * ran, at least two of them, all past 25% one way in every predicted cell,
 * as where the profile was measured on another load of the machine, clock
 * or driver than the run had; *median their median, *RAN the phases that
 * ran (a bit a place of compute[]).
 */
static bool off_profile(const struct mb_table *t, double *median, unsigned *ran)
{
	double *r = malloc(t->ncells * NCOMPUTE * sizeof(*r));
	struct mb_spread s = { 0 };
	size_t i, k, n = 0;

	*ran = 0;
	if (!r) /* a note unsaid */
		return false;
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];
		double phase[MB_NPHASES][2];

		if (!c->nruns || !c->predicted)
			continue;
		cell_phases(c, phase);
		for (k = 0; k < NCOMPUTE; k++)
			if (phase[compute[k]][0] > 0 && phase[compute[k]][1] > 0) {
				r[n++] = phase[compute[k]][0] / phase[compute[k]][1] - 1;
				*ran |= 1u << k;
			}
	}
	if (n >= 2)
		s = mb_spread_of(r, n);
	free(r);
	*median = s.median;
	return n >= 2 && (s.min > 0.25 || s.max < -0.25);
}

/* The note under the predicted table where off_profile says so. */
static void say_off_profile(const struct mb_table *t)
{
	char names[96] = "";
	unsigned ran, k, said = 0, all;
	double median;

	if (!off_profile(t, &median, &ran))
		return;
	for (all = 0, k = 0; k < NCOMPUTE; k++)
		all += ran >> k & 1u;
	for (k = 0; k < NCOMPUTE; k++) {
		if (!(ran & 1u << k))
			continue;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 !said		   ? ""
			 : said + 1 == all ? " and "
					   : ", ",
			 compute_names[k]);
		said++;
	}
	printf("\n**The device computed at %.3gx the speed its profile says**: in every cell %s "
	       "ran past 25%% %s than predicted (their median %+.0f%%). It is not what it was when "
	       "it was profiled (the load on the machine, a clock, a driver), and every prediction "
	       "above is off by that; `muonbench profile` measures the profile again.\n",
	       1 / (1 + median), names, median < 0 ? "faster" : "slower", 100 * median);
}

/* Each cell beside the model's prediction (mb_predict), where the run had a profile. */
static void md_predicted(const struct mb_table *t)
{
	char v[MB_NPHASES + 2][96], md[MB_MD_LEN(sizeof(t->first->profile))];
	const char *profile = t->first->profile[0] ? MD(md, t->first->profile) : "of the runs";
	struct mb_field f[MB_NPHASES + 4];
	bool any = false, first = true;
	size_t i, k;

	for (i = 0; i < t->ncells; i++)
		any |= t->cells[i].nruns && t->cells[i].predicted;
	if (!any)
		return;
	printf("\nMeasured (the median of the cell's runs) / predicted (s) from the device profile "
	       "%s, and the residual (measured over predicted); **past 25%%**: the device does "
	       "something the model does not know:\n\n",
	       profile);
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];
		double phase[MB_NPHASES][2];

		if (!c->nruns || !c->predicted)
			continue;
		cell_phases(c, phase);
		f[0] = MB_FIELD_N("ZeRO", c->stage);
		f[1] = T("Variant", c->variant);
		f[2] = T("iteration", beside(v[0], 96, runs_median(c, ITER), c->pred_iter_s));
		f[3] = T("Muon apply", beside(v[1], 96, runs_median(c, APPLY), c->pred_apply_s));
		for (k = 0; k < MB_NPHASES; k++)
			f[4 + k] = T(mb_phases[k].name,
				     beside(v[2 + k], 96, phase[k][0], phase[k][1]));
		MD_PR->record(f, 4 + MB_NPHASES, first);
		first = false;
	}
	say_off_profile(t);
}

static bool any_ran(const struct mb_table *t)
{
	size_t i;

	for (i = 0; i < t->ncells; i++)
		if (t->cells[i].nruns)
			return true;
	return false;
}

/* A table none of whose cells ran: one line per cell with its reason, no empty tables. */
static void md_failures(const struct mb_table *t)
{
	char why[sizeof(t->cells[0].failed->reason) + 64];
	size_t i;

	printf("No cell ran:\n\n");
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];
		struct mb_field f[] = { CELL(c, T("Result", failure(why, sizeof(why), c))) };

		MD_PR->record(f, 3, !i);
	}
}

/* A cell of a sweep's trade-off table, and the table that holds it. */
struct point {
	const struct mb_table *t;
	const struct mb_cell *c;
};

static int point_rank(const struct point *p)
{
	int v = mb_variant_find(p->c->variant, strlen(p->c->variant));

	return v < 0 ? MB_NVARIANTS : v;
}

/* By stage, gather budget, sub-group size, then variant. */
static int cmp_point(const void *x, const void *y)
{
	const struct point *a = x, *b = y;
	const struct mb_csv_row *ra = a->t->first, *rb = b->t->first;

	if (a->c->stage != b->c->stage)
		return a->c->stage < b->c->stage ? -1 : 1;
	if (ra->gather_budget_bytes != rb->gather_budget_bytes)
		return ra->gather_budget_bytes < rb->gather_budget_bytes ? -1 : 1;
	if (ra->sub_group_size_elems != rb->sub_group_size_elems)
		return ra->sub_group_size_elems < rb->sub_group_size_elems ? -1 : 1;
	return point_rank(a) - point_rank(b);
}

/* One row of the trade-off table; a knob that the cell's stage does not read is "-". */
static void md_point(const struct point *p, bool first)
{
	const struct mb_csv_row *r = p->t->first;
	bool budget = p->c->stage != 3 ||
		      !strcmp(r->knob[MB_KNOB_ZERO3_APPLY], mb_zero3_apply_names[MB_Z3_BATCHED]);
	char a[32] = "-", b[32] = "-", it[32], s[32], ap[40], pk[32];

	if (budget)
		mb_fmt_bytes_iec(a, sizeof(a), r->gather_budget_bytes);
	if (p->c->stage == 3)
		mb_fmt_count(b, sizeof(b), r->sub_group_size_elems);
	snprintf(ap, sizeof(ap), "%s s", mb_fmt_secs(s, sizeof(s), p->c->apply_mean_s));
	struct mb_field f[] = {
		T("--gather-budget", a), T("--sub-group-size", b),
		CELL(p->c, T("Iteration mean", mb_fmt_secs(it, sizeof(it), p->c->iter_mean_s)),
		     T("Muon apply mean", ap),
		     T("Step peak", mb_fmt_peak(pk, sizeof(pk), p->c->peak_step_bytes)))
	};

	MD_PR->record(f, 7, first);
}

/*
 * Where tables are the points of one sweep (the same but for the gather
 * budget or the sub-group size: run with a list), their cells that ran in
 * one table after them, the memory-speed trade-off the sweep measured.
 */
static int md_tradeoffs(const struct mb_table *t, size_t nt)
{
	char md[MB_MD_LEN(sizeof(t->first->model))];
	struct point *p;
	size_t k, j, i, n, tables;

	for (k = 0; k < nt; k++) {
		for (j = 0; j < k && !mb_results_same_but_swept(t[j].first, t[k].first); j++)
			;
		if (j < k)
			continue; /* told with its sweep's first table */
		for (tables = 0, n = 0, j = k; j < nt; j++)
			if (mb_results_same_but_swept(t[k].first, t[j].first)) {
				tables++;
				n += t[j].ncells;
			}
		if (tables < 2)
			continue;
		if (!(p = malloc(n * sizeof(*p))))
			return mb_fail("out of host memory for a trade-off table");
		for (n = 0, j = k; j < nt; j++)
			for (i = 0; i < t[j].ncells; i++)
				if (t[j].cells[i].nruns &&
				    mb_results_same_but_swept(t[k].first, t[j].first))
					p[n++] = (struct point){ &t[j], &t[j].cells[i] };
		qsort(p, n, sizeof(*p), cmp_point);
		printf("\n## The trade-off: %s, every point of the sweep (means of the runs, the "
		       "step peak measured)\n\n",
		       MD(md, t[k].first->model));
		for (i = 0; i < n; i++)
			md_point(&p[i], !i);
		free(p);
	}
	return 0;
}

static const struct mb_cell *cell_of(const struct mb_table *t, const struct mb_cell *c)
{
	size_t i;

	for (i = 0; i < t->ncells; i++)
		if (t->cells[i].stage == c->stage && !strcmp(t->cells[i].variant, c->variant) &&
		    t->cells[i].nruns)
			return &t->cells[i];
	return NULL;
}

/*
 * The runs of several ranks (run under MPI): each rank's rows are a table of
 * their own (rank is one of the knobs); the tables of one invocation's ranks
 * side by side, cell by cell: the slowest rank (whose apply is the step's,
 * the ranks being in lockstep) and the spread across the ranks. None where
 * every table is a world of one.
 */
static void md_ranks(const struct mb_table *t, size_t nt)
{
	size_t k, j, i;
	bool said = false, headed = false;

	for (k = 0; k < nt; k++) {
		const struct mb_csv_row *a = t[k].first;

		if (a->world_size < 2 || a->rank)
			continue;
		if (!headed)
			printf("\n# Ranks (run under MPI, in lockstep: a step takes as long as its "
			       "slowest rank)\n\n");
		headed = true;
		for (i = 0; i < t[k].ncells; i++) {
			const struct mb_cell *c = &t[k].cells[i], *o;
			double max = c->apply_mean_s, min = c->apply_mean_s, iter = c->iter_mean_s;
			unsigned slowest = 0, ranks = 1;

			if (!c->nruns)
				continue;
			for (j = 0; j < nt; j++) {
				if (j == k || !mb_results_other_rank(a, t[j].first) ||
				    !(o = cell_of(&t[j], c)))
					continue;
				ranks++;
				if (o->apply_mean_s > max) {
					max = o->apply_mean_s;
					slowest = (unsigned)t[j].first->rank;
				}
				if (o->apply_mean_s < min)
					min = o->apply_mean_s;
				if (o->iter_mean_s > iter)
					iter = o->iter_mean_s;
			}
			char of[48], s[6][24];

			snprintf(of, sizeof(of), "%u of %llu", ranks,
				 (unsigned long long)a->world_size);
			snprintf(s[0], sizeof(s[0]), "%u", c->stage);
			snprintf(s[1], sizeof(s[1]), "%u", slowest);
			mb_fmt_real(s[2], sizeof(s[2]), max, 4);
			mb_fmt_real(s[3], sizeof(s[3]), min, 4);
			snprintf(s[4], sizeof(s[4]), "%.1f%%",
				 max > 0 ? 100.0 * (max - min) / max : 0.0);
			mb_fmt_real(s[5], sizeof(s[5]), iter, 4);
			struct mb_field f[] = { MB_FIELD_T("ZeRO", s[0]),
						MB_FIELD_T("Variant", c->variant),
						MB_FIELD_T("Ranks", of),
						MB_FIELD_T("Slowest rank", s[1]),
						MB_FIELD_T("Its apply (s)", s[2]),
						MB_FIELD_T("Fastest apply (s)", s[3]),
						MB_FIELD_T("Spread", s[4]),
						MB_FIELD_T("Slowest iteration (s)", s[5]) };

			mb_printer(MB_FORMAT_MD)->record(f, 8, !said);
			said = true;
		}
	}
}

static int print_md(const struct mb_table *t, size_t nt)
{
	size_t k;

	for (k = 0; k < nt; k++) {
		if (k)
			printf("\n");
		md_header(&t[k]);
		if (!any_ran(&t[k])) {
			md_failures(&t[k]);
			continue;
		}
		md_main(&t[k]);
		md_phase_peaks(&t[k]);
		md_driver_peaks(&t[k]);
		md_phase_times(&t[k]);
		md_predicted(&t[k]);
		md_bus(&t[k]);
	}
	md_ranks(t, nt);
	return md_tradeoffs(t, nt);
}

#undef MD_PR
#undef T
#undef NONE
#undef CELL

/* The most fields of a cell's record: its table, 9 of the device and host, the knobs, 13 of
 * the cell's own */
#define NFIELDS_MAX 96

/*
 * One record a cell (--format csv or json): its table's device, host, model
 * and knobs (what tells its cells from another table's), then its figures;
 * none where no run ran, or none was predicted.
 */
static void print_flat(const struct mb_table *t, size_t nt, enum mb_format format)
{
	const struct mb_printer *pr = mb_printer(format);
	char knobs[NFIELDS_MAX][256];
	struct mb_field f[NFIELDS_MAX];
	size_t k, i, j, n;
	bool text, first = true;

	for (k = 0; k < nt; k++)
		for (i = 0; i < t[k].ncells; i++) {
			const struct mb_cell *c = &t[k].cells[i];
			const struct mb_csv_row *r = t[k].first;
			bool ran = c->nruns > 0;

			n = 0;
			f[n++] = MB_FIELD_N("table", k + 1);
#define T(key, v) f[n++] = MB_FIELD_T(key, v)
			T("platform", r->platform);
			T("device", r->device);
			T("driver", r->driver);
			T("tuning", r->tuning);
			T("tuning_match", r->tuning_match);
			T("host", r->host);
			T("cpus", r->cpus);
			T("mems", r->mems);
			T("binding", r->binding);
			for (j = 0; j < mb_results_nknobs() && n < NFIELDS_MAX - 13; j++) {
				const char *key =
					mb_results_knob(j, r, knobs[j], sizeof(knobs[j]), &text);

				f[n++] = text ? MB_FIELD_T(key, knobs[j])
					      : MB_FIELD_RAW(key, knobs[j]);
			}
			f[n++] = MB_FIELD_N("stage", c->stage);
			T("variant", c->variant);
#undef T
			f[n++] = MB_FIELD_N("runs", c->nruns);
			f[n++] = MB_FIELD_B("failed", c->failed);
			f[n++] = c->failed ? MB_FIELD_T("reason", c->failed->reason)
					   : MB_FIELD_NONE("reason");
#define R(key, have, v) f[n++] = (have) ? MB_FIELD_R(key, v) : MB_FIELD_NONE(key)
#define N(key, v)	f[n++] = ran ? MB_FIELD_N(key, v) : MB_FIELD_NONE(key)
			R("iter_mean_s", ran, c->iter_mean_s);
			R("apply_mean_s", ran, c->apply_mean_s);
			N("peak_device_bytes", c->peak_bytes);
			N("peak_forward_bytes", c->peak_forward_bytes);
			N("peak_backward_bytes", c->peak_backward_bytes);
			N("peak_step_bytes", c->peak_step_bytes);
			R("pred_iter_s", c->predicted, c->pred_iter_s);
			R("pred_apply_s", c->predicted, c->pred_apply_s);
#undef R
#undef N
			pr->record(f, n, first);
			first = false;
		}
	pr->end(!first);
}

int mb_tables_print(const struct mb_table *tables, size_t ntables, enum mb_format format)
{
	if (format == MB_FORMAT_MD)
		return print_md(tables, ntables);
	print_flat(tables, ntables, format);
	return 0;
}

int mb_tables_print_rows(const struct mb_csv_row *rows, size_t n, enum mb_format format)
{
	struct mb_table *tables;
	size_t nt;
	int err;

	if ((err = mb_results_gather(rows, n, &tables, &nt)))
		return err;
	err = mb_tables_print(tables, nt, format);
	mb_results_release(tables, nt);
	return err;
}
