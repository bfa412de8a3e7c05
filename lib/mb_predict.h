/*
 * mb_predict: one step predicted from a device profile (mb_profile) with
 * no device, for any model, like mb_plan: the step's own schedule
 * (mb_sched) run on the model engine (mb_engine_model), which says how
 * each command is timed.
 */
#ifndef MB_PREDICT_H
#define MB_PREDICT_H

#include "mb_engine.h"
#include "mb_model.h"
#include "mb_plan.h"
#include "mb_profile.h"
#include "mb_sched.h"

/*
 * Predict one step of model M (a step after the first: ZeRO-3's first makes
 * its momentum on the device instead of copying it, and the run measures
 * from the second) under plan PLAN (built from SET->plan) and
 * step settings SET, on the device PROF describes, into *t: iter_s and
 * apply_s as the host clock would read them, and every phase of t->phase as
 * the run times it (device spans summed by kind, d2h_hidden_s the D2H time
 * the compute queue was busy too). grad_norm and grad_scale are NaN. Returns
 * 0, or -MB_EFAIL (out of host memory).
 */
int mb_predict_step(const struct mb_model *m, const struct mb_plan *plan,
		    const struct mb_step_settings *set, const struct mb_profile *prof,
		    struct mb_step_times *t);

/* What the prediction's step did on the model engine, for tests. */
struct mb_predict_trace {
	struct mb_engine_op *ops; /* its operations in order (mb_engine_op), freed by the caller */
	size_t nops;
	uint64_t step_bytes; /* the most bytes of the apply's own buffers alive at once */
};

/* The same prediction, with its trace into *TR. */
int mb_predict_trace(const struct mb_model *m, const struct mb_plan *plan,
		     const struct mb_step_settings *set, const struct mb_profile *prof,
		     struct mb_predict_trace *tr);

#endif
