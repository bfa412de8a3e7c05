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
#include "mb_step.h"

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

/*
 * The same prediction's operations on the model engine, in order, as the
 * engine layer logs them (mb_engine_op): into *OPS (freed by the caller),
 * *N of them. What a test holds against the OpenCL engine's.
 */
int mb_predict_ops(const struct mb_model *m, const struct mb_plan *plan,
		   const struct mb_step_settings *set, const struct mb_profile *prof,
		   struct mb_engine_op **ops, size_t *n);

#endif
