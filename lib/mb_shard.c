/*
 * mb_shard: a rank's share of a model, from its plan's share of each
 * parameter (mb_plan's local[]).
 */
#include "mb_shard.h"

#include <stdio.h>
#include <string.h>

#include "mb_err.h"

int mb_shard_model(struct mb_model *out, const struct mb_model *m,
		   const struct mb_plan_settings *set)
{
	struct mb_plan plan;
	const struct mb_param *p;
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	if ((err = mb_plan_build(&plan, m, set)))
		return err;
	for (i = 0; i < m->nparams && !err; i++) {
		p = &m->params[i];
		if (!plan.local[i])
			continue;
		err = p->muon ? mb_model_add(out, p->name, 2, p->rows, p->cols, p->layer)
			      : mb_model_add(out, p->name, 1, plan.local[i], 1, p->layer);
	}
	mb_plan_release(&plan);
	if (err) {
		mb_model_release(out);
		return err;
	}
	snprintf(out->name, sizeof(out->name), "%s", m->name);
	snprintf(out->source, sizeof(out->source), "%s", m->source);
	out->layers = m->layers;
	return 0;
}
