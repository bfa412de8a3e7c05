/*
 * mb_run: one run of a cell (model, stage, variant): a fresh rank, S steps,
 * the figures of the measured steps, the peaks of the ledger, the checksum
 * of the final state.
 */
#ifndef MB_RUN_H
#define MB_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "mb_csv.h"
#include "mb_step.h"

struct mb_run_settings {
	struct mb_step_settings step;
	unsigned steps, measure_first, measure_last; /* 1-based, inclusive */
	unsigned resume_at;			     /* 0: never; else reload after this step */
	uint64_t device_mem_limit;		     /* 0: none */
	void (*on_step)(void *ctx, unsigned step);   /* after each step, if set */
	void *on_step_ctx;
};

struct mb_run_result {
	bool interrupted; /* stopped by the flag before its last step */
	unsigned steps_done;
	double iter_s[MB_CSV_STEPS_MAX], apply_s[MB_CSV_STEPS_MAX];
	double iter_mean_s, apply_mean_s;
	struct mb_phase_times phase; /* means over the measured steps */
	char timing_error[256];	     /* why a measured phase is NaN (n/a); "" if none */
	uint64_t peak_bytes, peak_forward_bytes, peak_backward_bytes, peak_step_bytes;
	uint64_t plan_peak_step_bytes, clblast_temp_bytes, pinned_host_bytes;
	/* the peaks without CLBlast's temporaries (the ledger's own peaks) */
	uint64_t own_peak_bytes, own_peak_forward_bytes, own_peak_backward_bytes,
		own_peak_step_bytes;
	bool momentum_pinned;
	uint64_t checksum;
	char ns_kernel[24];  /* the GEMM kernel Newton-Schulz ran (mb_ns_kernel_name); "" if none */
	double host_opt_gbs; /* bytes the host optimizer reads and writes, per second */
	double memcpy_gbs;   /* a plain memcpy on this host, in the same run, for scale */
	/* achieved over the bus: the plan's bytes over the phase's event time; NaN without */
	double h2d_gbs, d2h_gbs, params_h2d_gbs;
};

/* *R as a run that never started: no steps, no peaks, every time NaN. */
void mb_run_result_unrun(struct mb_run_result *r);

/*
 * Run model M once under S on device CL into *r. STOP, when it becomes
 * non-zero, ends the run after the current step (r->interrupted). Returns 0
 * or the failure's status with its message; *r holds what was measured.
 */
int mb_run_once(const struct mb_model *m, const struct mb_run_settings *s, const struct mb_cl *cl,
		volatile sig_atomic_t *stop, struct mb_run_result *r);

#endif
