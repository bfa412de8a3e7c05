/*
 * mb_compare: matching cells, testing timings, diffing the exact figures.
 */
#include "mb_compare.h"
#include "mb_phase.h"
#include "mb_variant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

const char *const mb_verdict_names[] = { "ok", "faster", "slower", "changed", "REGRESSION" };

/* The samples of timing K of run R into V (room for R's measured steps, at least one). */
static size_t run_samples(const struct mb_run *r, int k, double *v)
{
	if (k >= 2) { /* a phase: the run's figure */
		if (isnan(r->phase[k - 2]))
			return 0;
		v[0] = r->phase[k - 2];
		return 1;
	}
	/* iteration and apply: every measured step */
	memcpy(v, k ? r->apply_s : r->iter_s, r->nsteps * sizeof(*v));
	return r->nsteps;
}

/* Room for the samples of any timing of C. */
static size_t room(const struct mb_cell *c)
{
	size_t n = 0, i;

	for (i = 0; i < c->nruns; i++)
		n += c->runs[i].nsteps ? c->runs[i].nsteps : 1;
	return n ? n : 1;
}

/* The samples of timing K of cell C into V (room(C)). */
static size_t raw_samples(const struct mb_cell *c, int k, double *v)
{
	size_t n = 0, i;

	for (i = 0; i < c->nruns; i++)
		n += run_samples(&c->runs[i], k, v + n);
	return n;
}

/* The location of the N samples V (sorted in place) that estimate E takes. */
static double location(double *v, size_t n, enum mb_estimate e)
{
	struct mb_spread sp = mb_spread_of(v, n);

	return e == MB_ESTIMATE_FASTEST ? sp.min : sp.median;
}

/* Master's location (E) of timing K in table T's stage STAGE (for ratios), or NaN. */
static double master_location(const struct mb_table *t, unsigned stage, int k, enum mb_estimate e)
{
	const struct mb_cell *master = mb_results_cell(t, stage, mb_variant_name(MB_VARIANT_BASE));
	double m, *w;

	if (!master || !master->nruns)
		return NAN; /* no base for a ratio */
	w = malloc(room(master) * sizeof(*w));
	if (!w)
		return NAN;
	m = location(w, raw_samples(master, k, w), e);
	free(w);
	return m > 0 ? m : NAN;
}

/* The median of timing K in run R, or NaN. */
static double run_median(const struct mb_run *r, int k)
{
	double *v = malloc((r->nsteps ? r->nsteps : 1) * sizeof(*v)), m = NAN;
	size_t n;

	if (v && (n = run_samples(r, k, v)))
		m = mb_spread_of(v, n).median;
	free(v);
	return m;
}

/*
 * What run R of a cell of table T's stage STAGE is divided by for ratios:
 * the median of timing K in master's run of the same number, which an
 * interleaved run measured in the same round, so that the machine's state
 * of the moment cancels; where master has no such run, OVERALL, master's
 * median over all its runs.
 */
static double ratio_base(const struct mb_table *t, unsigned stage, const struct mb_run *r, int k,
			 double overall)
{
	const struct mb_cell *master = mb_results_cell(t, stage, mb_variant_name(MB_VARIANT_BASE));
	double m;
	size_t i;

	for (i = 0; master && i < master->nruns; i++)
		if (master->runs[i].run == r->run)
			return (m = run_median(&master->runs[i], k)) > 0 ? m : overall;
	return overall;
}

/*
 * The samples, divided for ratios (S's) by what run R is held against: under
 * the median, ratio_base (master's run of the same round); under the
 * fastest, master's fastest over all its runs, since one run's fastest step
 * says less about the machine's quiet level than all of them.
 */
static size_t samples(const struct mb_table *t, const struct mb_cell *c, int k,
		      const struct mb_compare_settings *s, double *v)
{
	size_t n = 0, i, j, nr;
	double overall, b;

	if (!s->ratios)
		return raw_samples(c, k, v);
	if (isnan(overall = master_location(t, c->stage, k, s->estimate)))
		return 0;
	for (i = 0; i < c->nruns; i++) {
		nr = run_samples(&c->runs[i], k, v + n);
		b = s->estimate == MB_ESTIMATE_FASTEST
			    ? overall
			    : ratio_base(t, c->stage, &c->runs[i], k, overall);
		for (j = 0; j < nr; j++)
			v[n + j] /= b;
		n += nr;
	}
	return n;
}

/*
 * The run-to-run spread of timing K in cell C of table T, under the median,
 * into *PCT: the standard deviation of its runs' figures (each run's median
 * of its steps, or its phase figure; as ratios when S says so) in percent of
 * their median. NaN with fewer than two runs. Returns 0, or -MB_EFAIL out of
 * host memory.
 */
static int run_spread_pct(const struct mb_table *t, const struct mb_cell *c, int k,
			  const struct mb_compare_settings *s, double *pct)
{
	double m = s->ratios ? master_location(t, c->stage, k, MB_ESTIMATE_MEDIAN) : 1, *v, *runs,
	       mean = 0, ss = 0, md, b;
	size_t i, n = 0, ns;

	*pct = NAN;
	if (c->nruns < 2 || isnan(m))
		return 0;
	if (!(v = malloc((room(c) + c->nruns) * sizeof(*v))))
		return mb_fail("out of host memory comparing results");
	runs = v + room(c);
	for (i = 0; i < c->nruns; i++)
		if ((ns = run_samples(&c->runs[i], k, v))) {
			b = s->ratios ? ratio_base(t, c->stage, &c->runs[i], k, m) : 1;
			runs[n++] = mb_spread_of(v, ns).median / b;
		}
	if (n >= 2) {
		for (i = 0; i < n; i++)
			mean += runs[i] / (double)n;
		for (i = 0; i < n; i++)
			ss += (runs[i] - mean) * (runs[i] - mean);
		md = mb_spread_of(runs, n).median;
		if (md > 0)
			*pct = 100 * sqrt(ss / (double)(n - 1)) / md;
	}
	free(v);
	return 0;
}

/*
 * How far apart the fastest of timing K is in the two halves of cell C's
 * runs (the odd-numbered and the even-numbered, in their order; as ratios
 * when S says so), in percent of the smaller, into *PCT: how well the
 * quiet level repeats from run to run. NaN with fewer than two runs.
 * Returns 0, or -MB_EFAIL out of host memory.
 */
static int halves_spread_pct(const struct mb_table *t, const struct mb_cell *c, int k,
			     const struct mb_compare_settings *s, double *pct)
{
	double m = s->ratios ? master_location(t, c->stage, k, MB_ESTIMATE_FASTEST) : 1, *v,
	       half[2] = { INFINITY, INFINITY };
	size_t i, j, ns;

	*pct = NAN;
	if (c->nruns < 2 || isnan(m))
		return 0;
	if (!(v = malloc(room(c) * sizeof(*v))))
		return mb_fail("out of host memory comparing results");
	for (i = 0; i < c->nruns; i++)
		for (ns = run_samples(&c->runs[i], k, v), j = 0; j < ns; j++)
			half[i % 2] = fmin(half[i % 2], v[j] / m);
	if (isfinite(half[0]) && isfinite(half[1]) && fmin(half[0], half[1]) > 0)
		*pct = 100 * fabs(half[0] - half[1]) / fmin(half[0], half[1]);
	free(v);
	return 0;
}

/* The spread of timing K in cell C of table T that S's estimate reads, into *PCT. */
static int spread_pct(const struct mb_table *t, const struct mb_cell *c, int k,
		      const struct mb_compare_settings *s, double *pct)
{
	return s->estimate == MB_ESTIMATE_FASTEST ? halves_spread_pct(t, c, k, s, pct)
						  : run_spread_pct(t, c, k, s, pct);
}

/*
 * The median spread of timing K over the cells of table T into *PCT (NaN
 * when no cell has two runs): how noisy the machine was while T ran.
 * Returns 0, or -MB_EFAIL out of host memory.
 */
static int typical_spread_pct(const struct mb_table *t, int k, const struct mb_compare_settings *s,
			      double *pct)
{
	double *all = malloc((t->ncells ? t->ncells : 1) * sizeof(*all)), x;
	size_t i, n = 0;
	int err = 0;

	*pct = NAN;
	if (!all)
		return mb_fail("out of host memory comparing results");
	for (i = 0; i < t->ncells && !err; i++)
		if (!(err = spread_pct(t, &t->cells[i], k, s, &x)) && !isnan(x))
			all[n++] = x;
	if (!err)
		*pct = mb_spread_of(all, n).median;
	free(all);
	return err;
}

/*
 * The noise of timing T (K) of cell C, from TYPICAL, each file's median
 * spread of it (base, new). Under the median: the baseline runs' spread, or
 * its file's typical spread when that is larger (three runs that happen to
 * agree say less about the machine than a dozen cells measured in the same
 * session); when the baseline has no cell of two runs, the new file's
 * typical spread. Under the fastest: the larger of the two files' typical
 * spreads, since one cell's two halves are one sample of how well the
 * machine's quiet level repeats, and either file may have run on a noisier
 * machine.
 */
static int noise_of(const struct mb_compared *c, int k, const struct mb_compare_settings *s,
		    const double typical[2], struct mb_timing *t)
{
	int err = 0;

	if (s->estimate == MB_ESTIMATE_FASTEST) {
		t->noise_pct = fmax(typical[0], typical[1]); /* NaN only when both are */
		t->noise_typical = true;
		return 0;
	}
	err = run_spread_pct(c->base_table, c->base, k, s, &t->noise_pct);
	if (!err && !isnan(typical[0]) && (isnan(t->noise_pct) || typical[0] > t->noise_pct)) {
		t->noise_pct = typical[0];
		t->noise_typical = true;
	}
	if (!err && isnan(t->noise_pct) && !isnan(typical[1])) { /* a baseline of single runs */
		t->noise_pct = typical[1];
		t->noise_typical = t->noise_new = true;
	}
	return err;
}

static int test_timing(const struct mb_compared *c, int k, const struct mb_compare_settings *s,
		       const double typical[2], struct mb_timing *t, double *vb, double *vn)
{
#define NAME_(e, f, name, ...) name,
	static const char *const names[] = { "iteration", "apply", MB_PHASES(NAME_) };
#undef NAME_

	_Static_assert(sizeof(names) / sizeof(names[0]) == MB_COMPARE_TIMINGS, "one name a timing");
	bool fast;
	int err;

	memset(t, 0, sizeof(*t));
	t->name = names[k];
	if ((err = noise_of(c, k, s, typical, t)))
		return err;
	t->nbase = samples(c->base_table, c->base, k, s, vb);
	t->nnew = samples(c->new_table, c->new_, k, s, vn);
	if (!t->nbase || !t->nnew)
		return 0;
	t->base_s = location(vb, t->nbase, s->estimate); /* sorts them */
	t->new_s = location(vn, t->nnew, s->estimate);
	/*
	 * Under the fastest, the test reads the faster half of each side's
	 * per-step samples (the iteration, the apply), where the quiet level
	 * shows: the slower half is the machine. A phase's figures, one a run,
	 * are each a mean over the run's steps already: all of them.
	 */
	fast = s->estimate == MB_ESTIMATE_FASTEST && k < 2;
	if ((err = mb_mann_whitney(vn, fast ? (t->nnew + 1) / 2 : t->nnew, vb,
				   fast ? (t->nbase + 1) / 2 : t->nbase, &t->test)))
		return err;
	t->base_raw_s = t->base_s;
	t->new_raw_s = t->new_s;
	if (s->ratios) {
		t->base_raw_s = location(vb, raw_samples(c->base, k, vb), s->estimate);
		t->new_raw_s = location(vn, raw_samples(c->new_, k, vn), s->estimate);
	}
	t->change_pct = t->base_s > 0 ? 100 * (t->new_s - t->base_s) / t->base_s : 0;
	t->testable = t->test.p_min < s->alpha;
	t->significant = t->test.p < s->alpha;
	/*
	 * The noise floor: the change must also pass the noise factor times the
	 * baseline's spread. Under the median, that is the standard error the
	 * runs' spread gives the difference of the two cells' medians, runs being
	 * the independent samples; under the fastest, how far the halves of the
	 * baseline's runs disagree on their quiet level.
	 */
	t->noise_floor_pct =
		isnan(t->noise_pct) ? 0
		: s->estimate == MB_ESTIMATE_FASTEST
			? s->noise_factor * t->noise_pct
			: s->noise_factor * t->noise_pct *
				  sqrt(1.0 / (double)c->base->nruns + 1.0 / (double)c->new_->nruns);
	t->bar_pct = s->threshold_pct > t->noise_floor_pct ? s->threshold_pct : t->noise_floor_pct;
	if (!t->significant || fabs(t->change_pct) <= t->noise_floor_pct)
		t->verdict = MB_SAME;
	else if (t->change_pct > t->bar_pct)
		t->verdict = MB_REGRESSION;
	else if (t->change_pct < -t->bar_pct)
		t->verdict = MB_FASTER;
	else if (t->change_pct > 0)
		t->verdict = MB_SLOWER; /* real, but within the threshold */
	return 0;
}

/* Append "WHAT A -> B" to TEXT (of LEN bytes) when A and B differ. */
static void differs(char *text, size_t len, const char *what, unsigned long long a,
		    unsigned long long b)
{
	size_t used = strlen(text);

	if (a == b)
		return;
	snprintf(text + used, len - used, "%s%s %llu -> %llu", used ? "; " : "", what, a, b);
}

/* The first checksum of C's runs that is not WANT, or NULL. */
static const char *other_checksum(const struct mb_cell *c, const char *want)
{
	size_t i;

	for (i = 0; i < c->nruns; i++)
		if (strcmp(c->runs[i].checksum, want))
			return c->runs[i].checksum;
	return NULL;
}

static void exact_figures(struct mb_compared *c)
{
	const struct mb_cell *b = c->base, *n = c->new_;
	const char *want = b->runs[0].checksum;
	/*
	 * The figures that the plan and the math fix, the same on any device,
	 * then those that CLBlast's temporaries (the device, its tuning) enter.
	 * A rise in a peak is a regression.
	 */
	const struct {
		const char *name;
		uint64_t base, new_;
		bool device_dependent, peak;
	} f[] = {
		{ "params_total", b->params_total, n->params_total, false, false },
		{ "params_muon", b->params_muon, n->params_muon, false, false },
		{ "pinned_host_bytes", b->pinned_host_bytes, n->pinned_host_bytes, false, false },
		{ "plan_peak_step_bytes", b->plan_peak_step_bytes, n->plan_peak_step_bytes, false,
		  true },
		{ "peak_device_own_bytes", b->own_peak_bytes, n->own_peak_bytes, false, true },
		{ "peak_forward_own_bytes", b->own_peak_forward_bytes, n->own_peak_forward_bytes,
		  false, true },
		{ "peak_backward_own_bytes", b->own_peak_backward_bytes, n->own_peak_backward_bytes,
		  false, true },
		{ "peak_step_own_bytes", b->own_peak_step_bytes, n->own_peak_step_bytes, false,
		  true },
		{ "clblast_temp_bytes", b->clblast_temp_bytes, n->clblast_temp_bytes, true, false },
		{ "peak_device_bytes", b->peak_bytes, n->peak_bytes, true, true },
		{ "peak_forward_bytes", b->peak_forward_bytes, n->peak_forward_bytes, true, true },
		{ "peak_backward_bytes", b->peak_backward_bytes, n->peak_backward_bytes, true,
		  true },
		{ "peak_step_bytes", b->peak_step_bytes, n->peak_step_bytes, true, true },
	};
	bool compared = false,
	     same = mb_results_same_device(c->base_table->first, c->new_table->first);
	const char *other;
	size_t i, used;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		compared = same || !f[i].device_dependent;
		if (compared)
			differs(c->changed, sizeof(c->changed), f[i].name, f[i].base, f[i].new_);
		else
			differs(c->shown, sizeof(c->shown), f[i].name, f[i].base, f[i].new_);
		if (compared && f[i].peak && f[i].new_ > f[i].base)
			c->verdict = MB_REGRESSION;
	}
	/* every run of both, against the baseline's first */
	other = other_checksum(n, want);
	if (!other)
		other = other_checksum(b, want);
	if (other) {
		used = strlen(c->changed);
		snprintf(c->changed + used, sizeof(c->changed) - used, "%schecksum %s -> %s",
			 used ? "; " : "", want, other);
	}
	if (c->changed[0] && c->verdict < MB_CHANGED)
		c->verdict = MB_CHANGED;
	/* a run that fails now, where none failed before */
	if (n->failed && !b->failed) {
		used = strlen(c->changed);
		snprintf(c->changed + used, sizeof(c->changed) - used, "%sa run %s: %.160s",
			 used ? "; " : "", n->failed->status, n->failed->reason);
		c->verdict = MB_REGRESSION;
	}
}

/* Compare cell C; TYPICAL: its two files' spreads of each timing (base, new), as typicals' rows. */
static int compare_cell(struct mb_compared *c, const struct mb_compare_settings *s,
			const double *typical_base, const double *typical_new)
{
	double *vb = malloc(room(c->base) * sizeof(double)),
	       *vn = malloc(room(c->new_) * sizeof(double));
	int k, err = 0;

	if (!vb || !vn)
		err = mb_fail("out of host memory comparing results");
	for (k = 0; k < MB_COMPARE_TIMINGS && !err; k++) {
		struct mb_timing *t = &c->timing[k];
		double typical[2] = { typical_base[k], typical_new[k] };

		err = test_timing(c, k, s, typical, t, vb, vn);
		/* a phase counts only when testable, significant and past the floor */
		t->counts = k < 2 || (t->testable && t->test.p < s->alpha &&
				      fabs(t->new_raw_s - t->base_raw_s) >
					      s->phase_floor_pct / 100 * c->timing[1].base_raw_s);
		/* verdicts are ordered by severity: the cell takes the worst that counts */
		if (t->counts && t->verdict > c->verdict)
			c->verdict = t->verdict;
	}
	free(vb);
	free(vn);
	if (!err && s->ratios &&
	    !(c->timing[0].nbase && c->timing[0].nnew && c->timing[1].nbase && c->timing[1].nnew)) {
		snprintf(c->changed, sizeof(c->changed),
			 "no master in its stage to divide by (--ratios)");
		c->verdict = MB_CHANGED;
	}
	if (!err)
		exact_figures(c);
	return err;
}

static int push(struct mb_compared **out, size_t *n, const struct mb_table *bt,
		const struct mb_cell *b, const struct mb_table *nt, const struct mb_cell *nw)
{
	struct mb_compared *grown = realloc(*out, (*n + 1) * sizeof(**out));

	if (!grown)
		return mb_fail("out of host memory comparing results");
	*out = grown;
	memset(&grown[*n], 0, sizeof(grown[*n]));
	grown[*n].base_table = bt;
	grown[*n].new_table = nt;
	grown[*n].base = b;
	grown[*n].new_ = nw;
	++*n;
	return 0;
}

/* The cell of TABLES matching cell C of table T (and its table), or NULL. */
static const struct mb_cell *match(const struct mb_table *tables, size_t nt,
				   const struct mb_table *t, const struct mb_cell *c,
				   const struct mb_table **in)
{
	size_t k;

	for (k = 0; k < nt; k++)
		if (mb_results_same_knobs(tables[k].first, t->first)) {
			*in = &tables[k];
			return mb_results_cell(&tables[k], c->stage, c->variant);
		}
	*in = NULL;
	return NULL;
}

/*
 * Why cell C of table T has no match among TABLES (called OTHER): no table
 * of its knobs (then what differs from the closest one), or no such cell.
 */
static void why_unmatched(const struct mb_table *tables, size_t nt, const struct mb_table *t,
			  const struct mb_cell *c, const char *other, char *buf, size_t len)
{
	size_t k, d, best = 0, fewest = (size_t)-1;
	char knobs[400];

	for (k = 0; k < nt; k++)
		if ((d = mb_results_knob_differences(tables[k].first, t->first, NULL, 0)) <
		    fewest) {
			fewest = d;
			best = k;
		}
	if (!nt) {
		snprintf(buf, len, "%s has no results", other);
	} else if (!fewest) {
		snprintf(buf, len, "%s has no stage %u %s with these knobs", other, c->stage,
			 c->variant);
	} else {
		mb_results_knob_differences(tables[best].first, t->first, knobs, sizeof(knobs));
		snprintf(buf, len,
			 "%s has nothing with these knobs; the closest differs in %s (%s "
			 "-> %s)",
			 other, knobs, other, strcmp(other, "BASE") ? "BASE" : "NEW");
	}
}

/*
 * Each of the N TABLES' typical spread of each timing, once, into *OUT (N
 * rows of MB_COMPARE_TIMINGS; freed by the caller).
 */
static int typicals(const struct mb_table *tables, size_t n, const struct mb_compare_settings *s,
		    double **out)
{
	size_t k;
	int t, err = 0;

	if (!(*out = malloc((n ? n : 1) * MB_COMPARE_TIMINGS * sizeof(**out))))
		return mb_fail("out of host memory comparing results");
	for (k = 0; k < n && !err; k++)
		for (t = 0; t < MB_COMPARE_TIMINGS && !err; t++)
			err = typical_spread_pct(&tables[k], t, s,
						 &(*out)[k * MB_COMPARE_TIMINGS + t]);
	return err;
}

int mb_compare(const struct mb_table *base, size_t nbase, const struct mb_table *new_, size_t nnew,
	       const struct mb_compare_settings *s, struct mb_compared **out, size_t *n)
{
	double *typical_base = NULL, *typical_new = NULL;
	const struct mb_table *bt;
	size_t k, i;
	int err;

	*out = NULL;
	*n = 0;
	if ((err = typicals(base, nbase, s, &typical_base)) ||
	    (err = typicals(new_, nnew, s, &typical_new)))
		goto out;
	for (k = 0; k < nnew && !err; k++)
		for (i = 0; i < new_[k].ncells && !err; i++) {
			const struct mb_cell *nc = &new_[k].cells[i];
			const struct mb_cell *bc = match(base, nbase, &new_[k], nc, &bt);

			if ((err = push(out, n, bt, bc, &new_[k], nc)))
				break;
			if (!bc)
				why_unmatched(base, nbase, &new_[k], nc, "BASE",
					      (*out)[*n - 1].changed,
					      sizeof((*out)[*n - 1].changed));
			if (bc && bc->nruns && nc->nruns)
				err = compare_cell(&(*out)[*n - 1], s,
						   typical_base + (bt - base) * MB_COMPARE_TIMINGS,
						   typical_new + k * MB_COMPARE_TIMINGS);
			else if (bc && bc->nruns) /* ran before, fails now */
				(*out)[*n - 1].verdict = MB_REGRESSION;
		}
	/* baseline cells that the new file lacks */
	for (k = 0; k < nbase && !err; k++)
		for (i = 0; i < base[k].ncells && !err; i++)
			if (!match(new_, nnew, &base[k], &base[k].cells[i], &bt) &&
			    !(err = push(out, n, &base[k], &base[k].cells[i], NULL, NULL)))
				why_unmatched(new_, nnew, &base[k], &base[k].cells[i], "NEW",
					      (*out)[*n - 1].changed,
					      sizeof((*out)[*n - 1].changed));
out:
	free(typical_base);
	free(typical_new);
	return err;
}
