/*
 * mb_csv: the results file, a versioned contract.
 *
 * One row per run. Every column is declared once in mb_csv.c (name, type,
 * field), and the same table writes the header and the rows; the schema is
 * documented in docs/results-format.md. Units are in the column names (_s, _bytes,
 * _elems). Numbers are written without the locale (printf in the C locale).
 * Rows are appended whole, one write each, so a file is never left with half
 * a row; the header is written once, when the file is new.
 */
#ifndef MB_CSV_H
#define MB_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "mb_knob.h"

#include "mb_phase.h"

/*
 * What is written, and the oldest version read. 11: the same columns as 10,
 * a variant more (pipeline) among the words of `variant`: a reader of 10
 * that knows no pipeline refuses the file for its version, not for a row.
 * This reader reads 10 (whose later files hold pipeline rows too) as 11.
 * 12: the device's used memory as its driver sees it (device_used_*); rows
 * of 10 and 11 are read with those columns empty.
 * 13: the rank's columns (rank, world_size, local_rank: under MPI, one row
 * per rank per run); rows of 10 to 12 are read as rank 0 of a world of one.
 */
#define MB_CSV_FORMAT_VERSION 13
#define MB_CSV_FORMAT_OLDEST  10
#define MB_CSV_STEPS_MAX      1000
#define MB_CSV_UNKNOWN	      UINT64_MAX /* a whole number written empty: not known */

struct mb_csv_row {
	char status[16]; /* ok, failed, interrupted */
	char reason[1024];

	char timestamp_utc[32], version[32], git_rev[48], host[128], cpu_model[128];
	/* the rank that ran it (13): its rank, of how many, and its rank on its host */
	uint64_t rank, world_size, local_rank;
	char platform[128], device[128], vendor[128], driver[64];
	char device_pci[20], device_numa_node[16]; /* empty when unknown */
	char tuning[512]; /* CLBlast's parameters: "default", or where the applied tuning came from
			   */
	char tuning_match[16]; /* how it was chosen: exact, architecture, family, given or none */
	char cpus[256], mems[128], binding[16]; /* binding: muonbench, numa auto or inherited */

	char model[64], source[256];
	uint64_t layers, params_total, params_muon;
	uint64_t stage;
	char variant[16];
	uint64_t run, runs, steps, measure_first, measure_last;
	uint64_t gather_budget_bytes, sub_group_size_elems;
	char pinned_alloc[16]; /* alloc-host-ptr or nv (12; empty in older rows: alloc-host-ptr) */
	/* whether the driver keeps pinned host memory on the device too (12): yes, no or unknown,
	 * and then how much: the pinned bytes, 0, or MB_CSV_UNKNOWN (empty) */
	char pinned_device_copy[8];
	uint64_t pinned_device_copy_bytes;
	/* Newton-Schulz's GEMMs (12): fp32|bf16|fp16, and the kernel that ran them
	 * (clblast-sgemm, ns_gemm-portable, ns_gemm-mma); empty in older rows: fp32 */
	char ns_precision[12], ns_kernel[24];
	uint64_t ns_rate_gflops; /* calibrated mode's rate (12); MB_CSV_UNKNOWN (empty) if not */
	uint64_t pin_chunk_bytes, reduce_bucket_size; /* bytes, elements */
	char grad_clip[24]; /* gradient_clipping as %g prints it: "1", "0" (none) */
	uint64_t seed, resume_at;
	uint64_t seq, micro_batch;
	/* mb_knob's table: each knob's word, in its column (momentum_dtype, params_back, ...) */
	char knob[MB_KNOBS_ROOM][16];

	double iter_mean_s, apply_mean_s;
	double MB_PHASE_FIELDS d2h_hidden_frac; /* forward_s, ...: mb_phase's table */
	double host_opt_gbs, memcpy_gbs;
	double h2d_gbs, d2h_gbs, params_h2d_gbs; /* achieved: the plan's bytes over the phase */
	uint64_t peak_device_bytes, peak_forward_bytes, peak_backward_bytes, peak_step_bytes,
		plan_peak_step_bytes, clblast_temp_bytes, pinned_host_bytes;
	/* the same peaks without CLBlast's temporaries: fixed by the plan, on any device */
	uint64_t peak_device_own_bytes, peak_forward_own_bytes, peak_backward_own_bytes,
		peak_step_own_bytes;
	char momentum_pinned[4];
	char checksum[24];
	/* the driver's own figure (mb_devmem): where from, the used bytes before the run's
	 * first allocation and the peak over its measured steps; MB_CSV_UNKNOWN (empty) if none */
	char device_used_source[8]; /* nvml, amd or none */
	uint64_t device_used_base_bytes, device_used_peak_bytes;

	/* the model's prediction of the cell (mb_predict) from a device profile: where the
	 * profile came from ("" and NaN figures when there was none), and its figures */
	char profile[512];
	double pred_iter_s, pred_apply_s;
	double MB_PHASE_PRED_FIELDS pred_d2h_hidden_frac; /* pred_forward_s, ... */

	size_t nsamples; /* steps run */
	double iter_samples_s[MB_CSV_STEPS_MAX], apply_samples_s[MB_CSV_STEPS_MAX];
};

/* The header line, with its newline, into a new string (the caller frees it). */
char *mb_csv_header(void);

/* ROW as one line, with its newline, into a new string (the caller frees it). */
char *mb_csv_format(const struct mb_csv_row *row);

/*
 * Check that PATH can take rows: it can be opened for appending, and is new,
 * empty, or has this version's header. Bad input (-MB_EINPUT) otherwise.
 */
int mb_csv_check(const char *path);

/*
 * Append ROW to PATH (the header first if the file is new or empty). A write
 * that fails (a full disk) leaves the file as it was: no part of a row.
 */
int mb_csv_append(const char *path, const struct mb_csv_row *row);

/*
 * Called for each row read, in the file's order. ROW is the reader's, and
 * valid only during the call: copy what is kept. A non-zero return stops
 * the reading, and the reader returns it.
 */
typedef int (*mb_csv_each_fn)(const struct mb_csv_row *row, void *ctx);

/*
 * Read the results file PATH one row at a time, calling EACH(row, CTX) for
 * each: the reader's memory is that of one row, whatever the file's length.
 * A file that is not muonbench results, is of a format_version outside
 * MB_CSV_FORMAT_OLDEST to MB_CSV_FORMAT_VERSION,
 * holds a second header (two files joined), or has a row whose field does
 * not fit its column's type and range (a status other than ok, failed or
 * interrupted, a negative time, a checksum not of 16 hex digits, ...) is
 * -MB_EINPUT, saying "PATH:LINE:", the column, and what was expected there.
 * A bandwidth calibration (muonbench bandwidth --format csv) holds no runs:
 * EACH is not called.
 */
int mb_csv_read_each(const char *path, mb_csv_each_fn each, void *ctx);

/* The same for LEN bytes of TEXT, called NAME in errors. */
int mb_csv_parse_each(const char *text, size_t len, const char *name, mb_csv_each_fn each,
		      void *ctx);

/*
 * mb_csv_read_each appending every row to *rows (an array of *n, grown with
 * realloc; the caller frees it). Each row takes sizeof(struct mb_csv_row),
 * about 20 KiB: for files of many rows, read them with mb_csv_read_each.
 */
int mb_csv_read(const char *path, struct mb_csv_row **rows, size_t *n);

/* The same for LEN bytes of TEXT, called NAME in errors. */
int mb_csv_parse(const char *text, size_t len, const char *name, struct mb_csv_row **rows,
		 size_t *n);

#endif
