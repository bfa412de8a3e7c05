/*
 * mb_predict: the step's schedule (mb_sched) run on the model engine
 * (mb_engine_model).
 */
#include "mb_predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_engine_model.h"
#include "mb_sched.h"

/* The step on the model engine; with TR, its trace. */
static int predict(const struct mb_model *m, const struct mb_plan *plan,
		   const struct mb_step_settings *set, const struct mb_profile *prof,
		   struct mb_step_times *t, struct mb_predict_trace *tr)
{
	/* the resident buffers: tokens the model engine never reads, told apart by the
	 * race checker */
	static char params, ds_buffer;
	struct mb_sched s = { .model = m,
			      .set = set,
			      .plan = plan,
			      .steps_done = 1,
			      .params = (mb_devbuf)&params,
			      .ds_buffer = plan->ds_buffer_bytes ? (mb_devbuf)&ds_buffer : NULL };
	uint64_t *offset = NULL;
	int err;

	memset(t, 0, sizeof(*t));
	if (!(err = mb_sched_offsets(m, plan, &offset)) &&
	    !(err = mb_engine_model_new(prof, m, plan, set, &s.engine)) &&
	    !(err = set->race_check ? mb_engine_race_start(s.engine) : 0)) {
		mb_engine_name(s.engine, s.params, "params.bf16");
		mb_engine_name(s.engine, s.ds_buffer, plan->ds_buffer);
		s.offset = offset;
		s.state_offset = offset + m->nparams + 1;
		if (tr)
			mb_engine_log_start(s.engine);
		err = mb_sched_step(&s, t);
	}
	if (!err && tr) {
		tr->step_bytes = mb_engine_peak_bytes(s.engine);
		err = mb_engine_log_take(s.engine, &tr->ops, &tr->nops);
	}
	t->grad_norm = t->grad_scale = NAN;
	mb_engine_destroy(s.engine);
	free(offset);
	return err;
}

int mb_predict_step(const struct mb_model *m, const struct mb_plan *plan,
		    const struct mb_step_settings *set, const struct mb_profile *prof,
		    struct mb_step_times *t)
{
	return predict(m, plan, set, prof, t, NULL);
}

int mb_predict_trace(const struct mb_model *m, const struct mb_plan *plan,
		     const struct mb_step_settings *set, const struct mb_profile *prof,
		     struct mb_predict_trace *tr)
{
	struct mb_step_times t;

	memset(tr, 0, sizeof(*tr));
	return predict(m, plan, set, prof, &t, tr);
}
