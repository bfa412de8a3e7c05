/*
 * setup: the library inputs that the command line describes (the model, the
 * plan settings), shared by every subcommand that takes a model.
 */
#include "setup.h"

#include "mb_config.h"

int mb_setup_model(const struct mb_args *args, struct mb_model *m)
{
	if (args->config)
		return mb_config_load_file(m, args->config, (unsigned)args->layers);
	return mb_config_load_builtin(m, args->model, (unsigned)args->layers);
}

void mb_setup_plan_settings(const struct mb_args *args, struct mb_plan_settings *s)
{
	s->stage = (unsigned)args->stage;
	s->gather_budget_bytes = args->gather_budget;
	s->sub_group_size = args->sub_group_size;
	s->world_size = (unsigned)args->world_size;
	s->rank = (unsigned)args->rank;
}

void mb_setup_device_select(const struct mb_args *args, struct mb_cl_select *sel)
{
	sel->platform = mb_args_given(args, "platform") ? (int)args->platform : -1;
	sel->device = args->device;
}
