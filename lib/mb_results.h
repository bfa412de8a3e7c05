/*
 * mb_results: rows of results files gathered into tables and cells.
 *
 * A table holds the rows that may be compared with each other: the same
 * device, driver, host, binding, model and knobs. Rows that differ in any of
 * those are never pooled: they make another table. Within a table a cell is
 * a (stage, variant); its figures are over its ok runs.
 */
#ifndef MB_RESULTS_H
#define MB_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_csv.h"
#include "mb_phase.h"

/* One ok run of a cell: what report, plot and compare read of it. */
struct mb_run {
	unsigned run; /* its number among its invocation's runs (1-based) */
	double iter_mean_s, apply_mean_s;
	double phase[MB_NPHASES]; /* its phases' figures, in the phase table's order */
	size_t nsteps;		  /* its measured steps, */
	double *iter_s, *apply_s; /* their iteration and apply samples */
	char checksum[24];	  /* of its final state */
};

struct mb_cell {
	unsigned stage;
	char variant[16];
	struct mb_run *runs; /* the ok ones, in the order read */
	size_t nruns, alloc;
	/* the figures of its first ok run that the plan and the math fix */
	uint64_t params_total, params_muon, pinned_host_bytes, plan_peak_step_bytes,
		clblast_temp_bytes;
	const struct mb_csv_row *failed;  /* a copy of a failed or interrupted run, if any */
	double iter_mean_s, apply_mean_s; /* means of the runs' figures */
	uint64_t peak_bytes, peak_forward_bytes, peak_backward_bytes, peak_step_bytes; /* max */
	uint64_t own_peak_bytes, own_peak_forward_bytes, own_peak_backward_bytes,
		own_peak_step_bytes; /* max, without CLBlast's temporaries */
	/* the driver's own figure (device_used_*): the smallest base and the largest peak of
	 * the runs that have one; MB_CSV_UNKNOWN where none has */
	uint64_t used_base_bytes, used_peak_bytes;
	struct {
		double MB_PHASE_FIELDS d2h_hidden_frac; /* mb_phase's table */
	} phase;					/* means over the runs */
	double h2d_gbs, d2h_gbs, params_h2d_gbs; /* achieved over the bus: means over the runs */
	/* the model's prediction of the cell (the pred_ columns) from the first ok run that has
	 * one (a cell's runs share it); predicted false: none had */
	bool predicted;
	double pred_iter_s, pred_apply_s;
	struct {
		double MB_PHASE_FIELDS d2h_hidden_frac;
	} pred;
};

struct mb_table {
	const struct mb_csv_row *first; /* a copy of its first row: its metadata */
	struct mb_cell *cells; /* by stage, then variant in master, pin, overlap, both order */
	size_t ncells;
};

/*
 * The most tables one gathering holds: each keeps a copy of a row and up to
 * 12 cells, so that the memory stays bounded (about 250 MB at most) and a
 * row is compared with at most this many tables.
 */
#define MB_RESULTS_TABLES_MAX 1000

/*
 * Add ROW to the tables *tables (*ntables of them; both 0 to begin; release
 * with mb_results_release), into its table's cell. The tables copy what they
 * use of ROW (its figures and measured samples, the first row of a table, a
 * cell's first failed run), so that their memory is that of their cells and
 * a few numbers a run, not of the rows: ROW may go once this returns. Call
 * mb_results_finish once the last row is added. A row that would make table
 * MB_RESULTS_TABLES_MAX + 1 is -MB_EINPUT.
 */
int mb_results_add(struct mb_table **tables, size_t *ntables, const struct mb_csv_row *row);

/* The cells in order and their figures (the means), after the last mb_results_add. */
void mb_results_finish(struct mb_table *tables, size_t ntables);

/*
 * Gather the N ROWS into tables (*tables, *ntables; release with
 * mb_results_release): mb_results_add for each, and finish.
 */
int mb_results_gather(const struct mb_csv_row *rows, size_t n, struct mb_table **tables,
		      size_t *ntables);

/*
 * Whether A and B ran on the same device (platform, name, driver) under the
 * same CLBlast parameters (the tuning and how it was chosen).
 */
bool mb_results_same_device(const struct mb_csv_row *a, const struct mb_csv_row *b);

/*
 * Knob K's word in R as a setting: "auto" where it is the word its stage
 * takes under auto (mb_knob.h's AUTO: fp32 momentum under ZeRO-1/2, bf16
 * under ZeRO-3), so that a default grid's ZeRO-2 and ZeRO-3 rows share a
 * table and an explicit other word does not; else the word.
 */
const char *mb_results_knob_setting(const struct mb_csv_row *r, enum mb_knob k);

/* Newton-Schulz's precision: the row's, and "fp32" for a row from before format 12. */
const char *mb_results_ns_precision_setting(const struct mb_csv_row *r);

/*
 * How pinned host memory was made: the row's pinned_alloc, and for a row
 * from before format 12 (empty) "alloc-host-ptr", the only way there was.
 */
const char *mb_results_pinned_alloc_setting(const struct mb_csv_row *r);

/* Whether A and B ran the same model with the same knobs (device aside). */
bool mb_results_same_knobs(const struct mb_csv_row *a, const struct mb_csv_row *b);

/*
 * Whether B is a row of another rank of A's invocation: the same world and
 * knobs but the rank (false without the memory to tell).
 */
bool mb_results_other_rank(const struct mb_csv_row *a, const struct mb_csv_row *b);

/*
 * Whether A and B are points of one sweep: the same device, tuning, host and
 * binding, and the same knobs but those that a list sweeps (the gather
 * budget, the sub-group size).
 */
bool mb_results_same_but_swept(const struct mb_csv_row *a, const struct mb_csv_row *b);

/*
 * The knobs that a table's rows share (the model first, the swept ones
 * among them): how many there are, and knob I's name, returned, with its
 * value in row R into BUF (LEN bytes) and whether it is text (else a whole
 * number, or "" where it is not known). The momentum dtype and how the
 * params go back are their settings ("auto" where the stage's default).
 */
size_t mb_results_nknobs(void);
const char *mb_results_knob(size_t i, const struct mb_csv_row *r, char *buf, size_t len,
			    bool *text);

/*
 * How many knobs (the model among them) differ between A and B, each as
 * "NAME A -> B" into BUF (LEN bytes, "; "-separated; may be NULL with LEN 0).
 */
size_t mb_results_knob_differences(const struct mb_csv_row *a, const struct mb_csv_row *b,
				   char *buf, size_t len);

/* The cell of STAGE and VARIANT in T, or NULL. */
const struct mb_cell *mb_results_cell(const struct mb_table *t, unsigned stage,
				      const char *variant);

void mb_results_release(struct mb_table *tables, size_t ntables);

/*
 * The NFILES results FILES read into tables (*tables, *ntables; release with
 * mb_results_release), a row at a time: the memory is that of the tables'
 * cells, whatever the files' lengths. A file given twice (by any name) is
 * bad input: its runs would count twice. Says on stderr when a file holds no
 * runs (a bandwidth calibration among results files): it is skipped.
 * *nrows: the rows read. On failure, no tables are left to release.
 */
int mb_results_read_files(char *const *files, int nfiles, struct mb_table **tables, size_t *ntables,
			  size_t *nrows);

#endif
