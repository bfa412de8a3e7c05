/*
 * compare: NEW.csv against BASE.csv (mb_compare) as a Markdown table and a
 * one-line summary; exit 1 on a regression, or when nothing was compared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "mb_compare.h"
#include "mb_err.h"
#include "print.h"

struct side {
	const char *path;
	size_t nrows, ntables;
	struct mb_table *tables;
};

static int add_row(const struct mb_csv_row *row, void *ctx)
{
	struct side *s = ctx;

	s->nrows++;
	return mb_results_add(&s->tables, &s->ntables, row);
}

/* The file's rows into tables, one row at a time: memory as its cells', not its bytes'. */
static int load(struct side *s)
{
	int err;

	if ((err = mb_csv_read_each(s->path, add_row, s)))
		return err;
	if (!s->nrows)
		return mb_bad_input("'%s' holds no results rows", s->path);
	mb_results_finish(s->tables, s->ntables);
	return 0;
}

static void release(struct side *s)
{
	mb_results_release(s->tables, s->ntables);
}

/* Timings from another device, driver or tuning do not compare, unless asked. */
static int same_device(const struct side *b, const struct side *n, bool allow)
{
	const struct mb_csv_row *x = b->tables[0].first, *y;
	size_t i;

	for (i = 0; i < n->ntables; i++) {
		y = n->tables[i].first;
		if (!mb_results_same_device(x, y)) {
			if (allow)
				return 0;
			return mb_bad_input(
				"'%s' ran on '%s' (driver %s; CLBlast %s), '%s' on '%s' (driver "
				"%s; CLBlast %s): timings do not compare across devices or "
				"tunings; --allow-device-change compares them anyway",
				b->path, x->device, x->driver, x->tuning, n->path, y->device,
				y->driver, y->tuning);
		}
	}
	return 0;
}

/* Timing T's cell into BUF: base -> new, the change, its test and its noise; "-" when untimed. */
static const char *timing_cell(char *buf, size_t len, const struct mb_timing *t,
			       const struct mb_compare_settings *s)
{
	size_t n;

	if (!t->nbase || !t->nnew)
		return "-";
	n = (size_t)snprintf(buf, len, "%.4g -> %.4g (%+.1f%%, p %.2g", t->base_s, t->new_s,
			     t->change_pct, t->test.p);
	if (n < len && !isnan(t->noise_pct) && s->estimate == MB_ESTIMATE_FASTEST)
		n += (size_t)snprintf(buf + n, len - n, ", halves %.1f%% apart, floor %.1f%%",
				      t->noise_pct, t->noise_floor_pct);
	else if (n < len && !isnan(t->noise_pct))
		n += (size_t)snprintf(buf + n, len - n, ", %s sd %.1f%%, floor %.1f%%",
				      t->noise_new	 ? "new file's runs'"
				      : t->noise_typical ? "base file's runs'"
							 : "base runs'",
				      t->noise_pct, t->noise_floor_pct);
	if (n < len && !t->testable)
		n += (size_t)snprintf(buf + n, len - n, "; too few samples to reach alpha");
	else if (n < len && t->significant && t->verdict == MB_SAME &&
		 fabs(t->change_pct) > s->threshold_pct)
		n += (size_t)snprintf(buf + n, len - n, "; within the noise");
	if (n < len)
		snprintf(buf + n, len - n, ")");
	return buf;
}

/* Why phase T, which moved past its bar or was flagged, does not count, or "". */
static const char *not_counted(const struct mb_timing *t)
{
	if (t->verdict != MB_SAME)
		return t->counts ? "" : ", not counted: under the phase floor";
	return !t->testable ? "not flagged: too few samples" : "not flagged: not significant";
}

/* The table's headings: the timings' by what they are (seconds or ratios to master). */
struct heads {
	char iteration[48], apply[48];
	bool ranked; /* a file holds a world of several ranks: a Rank column */
};

/* Whether a table of S is of a world of several ranks (run under MPI). */
static bool ranked(const struct side *s)
{
	size_t i;

	for (i = 0; i < s->ntables; i++)
		if (s->tables[i].first->world_size > 1)
			return true;
	return false;
}

/* The phases past their bar (and why one does not count), then the other changes, into BUF. */
static const char *other_changes(char *buf, size_t len, const struct mb_compared *c)
{
	const char *others = "";
	size_t n = 0;
	int k;

	buf[0] = '\0';
	for (k = 2; k < MB_COMPARE_TIMINGS && n < len; k++) {
		const struct mb_timing *t = &c->timing[k];

		if (t->verdict == MB_SAME && !(fabs(t->change_pct) > t->bar_pct))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s %+.0f%% (%s%s)", others, t->name,
				      t->change_pct,
				      t->verdict == MB_SAME ? "" : mb_verdict_names[t->verdict],
				      not_counted(t));
		others = "; ";
	}
	if (c->changed[0] && n < len) {
		n += (size_t)snprintf(buf + n, len - n, "%s%s", others, c->changed);
		others = "; ";
	}
	if (c->shown[0] && n < len)
		snprintf(buf + n, len - n, "%snot compared (another device or tuning): %s", others,
			 c->shown);
	return buf;
}

static void print_row(const struct mb_compared *c, const struct mb_compare_settings *s,
		      const struct heads *h, bool first)
{
	const struct mb_cell *any = c->new_ ? c->new_ : c->base;
	char it[256], ap[256], other[2048], what[sizeof(c->base->failed->reason) + 64];
	struct mb_field f[] = {
		MB_FIELD_N("ZeRO", any->stage), MB_FIELD_T("Variant", any->variant),
		MB_FIELD_NONE(h->iteration),	MB_FIELD_NONE(h->apply),
		MB_FIELD_NONE("other changes"), MB_FIELD_T("verdict", mb_verdict_names[c->verdict]),
	};

	if (!c->base || !c->new_) {
		/* its model, which the knobs the reason names do not say */
		snprintf(what, sizeof(what), "only in %s (model %s)", c->base ? "BASE" : "NEW",
			 (c->base ? c->base_table : c->new_table)->first->model);
		f[4] = MB_FIELD_T("other changes", c->changed);
		f[5] = MB_FIELD_T("verdict", "unmatched");
	} else if (!c->new_->nruns || !c->base->nruns) {
		const struct mb_cell *fc = c->new_->nruns ? c->base : c->new_;

		snprintf(what, sizeof(what), "failed in %s: %s", c->new_->nruns ? "BASE" : "NEW",
			 fc->failed ? fc->failed->reason : "no runs");
	} else {
		f[3] = MB_FIELD_T(h->apply, timing_cell(ap, sizeof(ap), &c->timing[1], s));
		f[4] = MB_FIELD_T("other changes", other_changes(other, sizeof(other), c));
	}
	f[2] = MB_FIELD_T(h->iteration, c->base && c->new_ && c->new_->nruns && c->base->nruns
						? timing_cell(it, sizeof(it), &c->timing[0], s)
						: what);
	if (h->ranked) { /* rank matched with rank: which, after the variant */
		const struct mb_table *t = c->new_ ? c->new_table : c->base_table;
		struct mb_field r[7] = { f[0], f[1], MB_FIELD_N("Rank", t->first->rank), f[2], f[3],
					 f[4], f[5] };

		mb_printer(MB_FORMAT_MD)->record(r, 7, first);
		return;
	}
	mb_printer(MB_FORMAT_MD)->record(f, 6, first);
}

int mb_cmd_compare(const struct mb_args *args)
{
	struct mb_compare_settings s = { .alpha = args->alpha,
					 .threshold_pct = args->threshold,
					 .phase_floor_pct = args->phase_floor,
					 .noise_factor = args->noise_factor,
					 .estimate = args->estimate,
					 .ratios = args->ratios };
	struct side base = { 0 }, new_ = { 0 };
	/* what the timings are, by estimate and ratios */
	static const char *const heading[MB_NESTIMATES][2] = {
		[MB_ESTIMATE_FASTEST] = { "The fastest measured step of all runs (each phase: the "
					  "fastest run)",
					  "The fastest measured step of all runs over master's "
					  "fastest in its own file and stage (each phase: the "
					  "fastest run's)" },
		[MB_ESTIMATE_MEDIAN] = { "Medians", "Medians of each timing over master's in its "
						    "own file and stage (a run over master's run "
						    "of the same number, which ran in the same "
						    "round)" },
	};
	size_t n = 0, i, count[5] = { 0 }, unmatched = 0, untimed = 0;
	struct mb_compared *c = NULL;
	struct heads h;
	int err;

	if (args->nfiles != 2)
		return mb_bad_input("compare takes two results files: muonbench compare BASE.csv "
				    "NEW.csv");
	base.path = args->files[0];
	new_.path = args->files[1];
	if ((err = load(&base)) || (err = load(&new_)) ||
	    (err = same_device(&base, &new_, args->allow_device_change)) ||
	    (err = mb_compare(base.tables, base.ntables, new_.tables, new_.ntables, &s, &c, &n)))
		goto out;
	printf("# ");
	mb_print_md_text(new_.path);
	printf(" against ");
	mb_print_md_text(base.path);
	printf("\n\n%s, base -> new; two-sided Mann-Whitney U%s; alpha %g, "
	       "threshold %g%%. A change is flagged when significant and beyond a floor of %g %s; "
	       "no floor without two runs.\n\n",
	       heading[s.estimate][s.ratios],
	       s.estimate == MB_ESTIMATE_FASTEST ? " on the faster half of each side's steps" : "",
	       s.alpha, s.threshold_pct, s.noise_factor,
	       s.estimate == MB_ESTIMATE_FASTEST
		       ? "times how far apart the fastest steps of a cell's odd-numbered and "
			 "even-numbered runs are (the median of that over a file's cells, the "
			 "larger of the two files')"
		       : "standard errors, runs being the independent samples: the base's runs' "
			 "standard deviation (of their medians, over their median; or the median "
			 "of that over the base's cells when larger; the new file's, when the "
			 "base has no two runs) times sqrt(1/base runs + 1/new runs)");
	h.ranked = ranked(&base) || ranked(&new_);
	snprintf(h.iteration, sizeof(h.iteration), "iteration %s",
		 s.ratios ? "(ratio to master)" : "(s)");
	snprintf(h.apply, sizeof(h.apply), "Muon apply %s", s.ratios ? "(ratio to master)" : "(s)");
	for (i = 0; i < n; i++) {
		print_row(&c[i], &s, &h, !i);
		bool timed = c[i].base && c[i].new_ && c[i].base->nruns && c[i].new_->nruns;

		if (!c[i].base || !c[i].new_)
			unmatched++;
		else if (!timed)
			untimed++;
		/* a cell with no timings is ok or not by its other figures, but not "ok" */
		if (c[i].base && c[i].new_ && (timed || c[i].verdict != MB_SAME))
			count[c[i].verdict]++;
	}
	printf("\ncompare: %zu cells matched: %zu ok, %zu faster, %zu slower, %zu changed, %zu "
	       "REGRESSION; %zu unmatched",
	       n - unmatched, count[MB_SAME], count[MB_FASTER], count[MB_SLOWER], count[MB_CHANGED],
	       count[MB_REGRESSION], unmatched);
	if (untimed)
		printf("; %zu matched with no timings to compare (no ok run in one file or both)",
		       untimed);
	printf("\n");
	/* the gate must not pass on nothing */
	if (n == unmatched)
		err = mb_fail("nothing compared: no cell of '%s' matches one of '%s' (%s)",
			      new_.path, base.path, n ? c[0].changed : "no cells");
	else if (count[MB_REGRESSION])
		err = mb_fail("%zu regression(s) against '%s'", count[MB_REGRESSION], base.path);
	else if (n - unmatched == untimed)
		err = mb_fail("nothing compared: every cell that matches has no ok run in '%s', "
			      "'%s' or both",
			      base.path, new_.path);
	else if (args->exact && count[MB_CHANGED])
		err = mb_fail("%zu cell(s) changed an exact figure against '%s' (--exact)",
			      count[MB_CHANGED], base.path);
	else if (args->exact && unmatched)
		err = mb_fail("%zu cell(s) unmatched against '%s' (--exact)", unmatched, base.path);
out:
	free(c);
	release(&base);
	release(&new_);
	return err;
}
