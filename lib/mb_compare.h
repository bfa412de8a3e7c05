/*
 * mb_compare: a new results file against a baseline, cell by cell, as a CI
 * gate.
 *
 * Cells are matched by model, stage, variant and every knob. Timings (the
 * iteration and the apply over the per-step samples of the measured steps,
 * each phase over the runs' means) are compared by their medians and a
 * two-sided Mann-Whitney U test. A change is flagged only when it is both
 * significant (p < alpha) and larger than the noise floor: the noise factor
 * times the standard error of the difference of the two medians that the
 * baseline's run-to-run spread gives (the standard deviation of its runs'
 * medians over their median, or the median of that over the baseline's
 * cells when larger, times sqrt(1/runs + 1/new runs)). The test pools the
 * steps of all runs as if each were independent, but the steps of one run
 * share that run's machine (another process, the VM's neighbours): a shift
 * of a whole run is significant to the test and yet is noise, which only
 * the spread between runs shows, and which more runs average out. A
 * flagged slowdown beyond the threshold as well is a regression, one within
 * it is slower; a flagged speed-up beyond the threshold is faster.
 *
 * The figures that the plan and the math fix (parameter counts, pinned host
 * bytes, the plan's step peak, the ledger's peaks without CLBlast's
 * temporaries, the checksum) are compared exactly on any device. Those that CLBlast's
 * temporaries enter (their size, the ledger's whole peaks) depend on the
 * device and its tuning: they are compared exactly only when both files ran
 * on the same device under the same tuning, and shown otherwise. Any
 * difference compared is reported, and a rise in a peak is a regression.
 *
 * With ratios on, every run's timings are first divided by the median of
 * master's run of the same number in the same file and stage (measured in
 * the same round of an interleaved run; master's median over all its runs
 * where it has no such run): what is compared is each variant against
 * master measured beside it, which survives a slower or busier machine.
 *
 * A cell's verdict comes from its headline figures, the iteration and the
 * Muon apply (the per-step samples). A phase (a figure a run) moves it only
 * when its sample sizes can reach alpha, its change is flagged (as a
 * timing's above) and the change in seconds is larger than the phase
 * floor, a share of the cell's apply time: a 1 ms phase doubling on a busy
 * machine is not a regression of a 100 ms step.
 */
#ifndef MB_COMPARE_H
#define MB_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "mb_phase.h"
#include "mb_results.h"
#include "mb_stats.h"

enum mb_verdict { MB_SAME, MB_FASTER, MB_SLOWER, MB_CHANGED, MB_REGRESSION };

extern const char *const mb_verdict_names[]; /* ok, faster, slower, changed, REGRESSION */

struct mb_compare_settings {
	double alpha;		/* significance */
	double threshold_pct;	/* smallest slowdown that counts */
	double phase_floor_pct; /* a phase's smallest change that counts, in % of the apply */
	double noise_factor;	/* a change must pass this many standard errors (runs' spread) */
	bool ratios; /* timings as ratios to master's median of the same file and stage */
};

#define MB_COMPARE_TIMINGS (2 + MB_NPHASES) /* iteration, apply, the phases */

struct mb_timing {
	const char *name;		  /* "iteration", "apply", "h2d", ... */
	double base_s, new_s, change_pct; /* medians */
	size_t nbase, nnew;
	struct mb_mwu test;
	double noise_pct;	/* the baseline's runs' standard deviation in % (NaN: one run) */
	bool noise_typical;	/* that is its file's median spread, larger than its own */
	double noise_floor_pct; /* noise_factor standard errors from that (0 for one run) */
	double bar_pct;		/* the larger of the threshold and the noise floor */
	bool testable;		/* the sample sizes can reach alpha */
	bool significant;	/* p < alpha */
	bool counts; /* it may move the cell's verdict (headline, or a phase past the floor) */
	double base_raw_s, new_raw_s; /* medians in seconds, ratios or not */
	enum mb_verdict verdict;
};

struct mb_compared {
	const struct mb_cell *base, *new_;	       /* either NULL: unmatched */
	const struct mb_table *base_table, *new_table; /* theirs */
	struct mb_timing timing[MB_COMPARE_TIMINGS];
	char changed[512]; /* the exact figures compared that differ, "" if none; or why unmatched
			    */
	char shown[512];   /* the device-dependent ones that differ, not compared */
	enum mb_verdict verdict; /* the worst of its figures */
};

/*
 * Compare the cells of NEW against BASE (tables from mb_results_gather)
 * into *out (an array of *n, freed by the caller).
 */
int mb_compare(const struct mb_table *base, size_t nbase, const struct mb_table *new_, size_t nnew,
	       const struct mb_compare_settings *s, struct mb_compared **out, size_t *n);

#endif
