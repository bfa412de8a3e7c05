/*
 * mb_compare: a new results file against a baseline, cell by cell, as a CI
 * gate.
 *
 * Cells are matched by model, stage, variant and every knob. Timings (the
 * iteration and the apply over the per-step samples of the measured steps,
 * each phase over the runs' figures) are compared by their location, the
 * estimate, and a two-sided Mann-Whitney U test on the samples. A change is
 * flagged only when it is both significant (p < alpha) and larger than the
 * noise floor, the noise factor times the baseline's own spread (or the
 * median of that over the baseline's cells, when larger). The estimate is
 * one of:
 *  - the median of all samples (the default). Its spread is the standard
 *    error of the difference of the two medians that the baseline's runs
 *    give (the standard deviation of its runs' medians over their median,
 *    times sqrt(1/runs + 1/new runs)), runs being the independent samples.
 *  - the fastest: the fastest sample of all runs. A step on a shared
 *    machine takes its code's time plus whatever the machine adds (other
 *    processes, a VM's neighbours, a CPU at its slow level), which is never
 *    negative: the fastest steps show the code with the least of the
 *    machine in them (Chen and Revels, "Robust benchmarking in noisy
 *    environments", 2016). The test reads the faster half of each side's
 *    per-step samples. Its spread is how far the fastest of a cell's
 *    odd-numbered runs is from that of its even-numbered ones, the median
 *    of that over a file's cells, the larger of the two files'. Where most
 *    runs reach the machine's quiet level it repeats from one invocation to
 *    the next far better than a median does; where few do, it is a rare
 *    event and moves more. It does not see a change that leaves the fastest
 *    steps alone and slows the others (a stall now and then).
 * The test pools the steps of all runs as if each were independent, but the
 * steps of one run share that run's machine: a shift of a whole run is
 * significant to the test and yet is noise, which only the spread between
 * runs shows. A flagged slowdown beyond the threshold as well is a
 * regression, one within it is slower; a flagged speed-up beyond the
 * threshold is faster.
 *
 * The figures that the plan and the math fix (parameter counts, pinned host
 * bytes, the plan's step peak, the ledger's peaks without CLBlast's
 * temporaries, the checksum) are compared exactly on any device. Those that CLBlast's
 * temporaries enter (their size, the ledger's whole peaks) depend on the
 * device and its tuning: they are compared exactly only when both files ran
 * on the same device under the same tuning, and shown otherwise. Any
 * difference compared is reported, and a rise in a peak is a regression.
 *
 * With ratios on, every run's timings are first divided by master's in the
 * same file and stage: under the median, by the median of master's run of
 * the same number (measured in the same round of an interleaved run;
 * master's median over all its runs where it has no such run); under the
 * fastest, by master's fastest over all its runs. What is compared is each
 * variant against master measured beside it, which survives a slower or
 * busier machine.
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

/* What a timing is taken as (--estimate): its fastest sample, or its median. */
#define MB_ESTIMATES(X, SEP)	  X(FASTEST, "fastest") SEP X(MEDIAN, "median")
#define MB_ESTIMATE_ENUM_(e, ...) MB_ESTIMATE_##e,
enum mb_estimate { MB_ESTIMATES(MB_ESTIMATE_ENUM_, ) MB_NESTIMATES };

enum mb_verdict { MB_SAME, MB_FASTER, MB_SLOWER, MB_CHANGED, MB_REGRESSION };

extern const char *const mb_verdict_names[]; /* ok, faster, slower, changed, REGRESSION */

struct mb_compare_settings {
	double alpha;		/* significance */
	double threshold_pct;	/* smallest slowdown that counts */
	double phase_floor_pct; /* a phase's smallest change that counts, in % of the apply */
	double noise_factor;	/* a change must pass this many times the baseline's spread */
	enum mb_estimate estimate;
	bool ratios; /* timings as ratios to master's of the same file and stage */
};

#define MB_COMPARE_TIMINGS (2 + MB_NPHASES) /* iteration, apply, the phases */

struct mb_timing {
	const char *name;		  /* "iteration", "apply", "h2d", ... */
	double base_s, new_s, change_pct; /* locations (the estimate's) */
	size_t nbase, nnew;
	struct mb_mwu test;
	double noise_pct;	/* the baseline's spread in % (the estimate's; NaN: one run) */
	bool noise_typical;	/* that is its file's median spread, larger than its own */
	bool noise_new;		/* that is the new file's (the baseline has no two runs) */
	double noise_floor_pct; /* the noise floor from that (0 for one run) */
	double bar_pct;		/* the larger of the threshold and the noise floor */
	bool testable;		/* the sample sizes can reach alpha */
	bool significant;	/* p < alpha */
	bool counts; /* it may move the cell's verdict (headline, or a phase past the floor) */
	double base_raw_s, new_raw_s; /* locations in seconds, ratios or not */
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
