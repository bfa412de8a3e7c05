/*
 * setup: the library inputs that the command line describes (the model, the
 * plan settings), shared by every subcommand that takes a model.
 */
#include "setup.h"

#include <stdio.h>
#include <string.h>

#include "mb_config.h"
#include "mb_err.h"
#include "mb_tuning.h"

int mb_setup_model(const struct mb_args *args, struct mb_model *m)
{
	if (args->config)
		return mb_config_load_file(m, args->config, (unsigned)args->layers);
	return mb_config_load_builtin(m, args->model, (unsigned)args->layers);
}

void mb_setup_plan_settings(const struct mb_args *args, struct mb_plan_settings *s)
{
	s->stage = (unsigned)(args->stages[0] - '0'); /* checked by mb_setup_stages */
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

int mb_setup_device(const struct mb_args *args, struct mb_cl *cl)
{
	struct mb_cl_select sel;
	struct mb_tuning t;
	char source[4096];
	int found = 0, err;

	mb_setup_device_select(args, &sel);
	if ((err = mb_cl_open(cl, &sel)) || !strcmp(args->tuning, "off"))
		return err;
	if (!strcmp(args->tuning, "auto")) {
		found = mb_tuning_find(&cl->info, &t, source, sizeof(source));
		err = found < 0 ? found : 0;
	} else if (!(err = mb_tuning_load(args->tuning, &t))) {
		snprintf(source, sizeof(source), "%s", args->tuning);
		found = 1;
		if (!mb_tuning_matches(&t, &cl->info))
			err = mb_bad_input("--tuning %s: made for '%s' (%s, driver %s), not for "
					   "'%s' (%s, driver %s)",
					   args->tuning, t.device, t.platform, t.driver,
					   cl->info.name, cl->info.platform_name, cl->info.driver);
	}
	if (!err && found > 0 && !(err = mb_tuning_apply(&t, cl)))
		snprintf(cl->tuning, sizeof(cl->tuning), "%s", source);
	if (err)
		mb_cl_release(cl);
	return err;
}

int mb_setup_binding(const struct mb_args *args, struct mb_host *host)
{
	struct mb_cl_device_info dev;
	struct mb_cl_select sel;
	int err;

	if (strcmp(args->numa, "auto")) {
		if ((err = mb_host_bind(args->cpus, args->membind)))
			return err;
		mb_host_describe(host, args->cpus || args->membind ? "muonbench" : "inherited");
		return 0;
	}
	if (args->cpus || args->membind)
		return mb_bad_input("--numa auto chooses the CPUs and the memory itself: give it "
				    "or --cpus/--membind, not both");
	mb_setup_device_select(args, &sel);
	if ((err = mb_cl_find(&sel, &dev)))
		return err;
	if (dev.numa_node < 0) {
		if (dev.pci[0])
			fprintf(stderr,
				"muonbench: --numa auto: '%s' is at PCI %s, which sysfs puts on "
				"no NUMA node; the binding is left as it is\n",
				dev.name, dev.pci);
		else
			fprintf(stderr,
				"muonbench: --numa auto: '%s' has no PCI address that its driver "
				"tells (neither cl_khr_pci_bus_info nor a vendor's query); the "
				"binding is left as it is\n",
				dev.name);
		mb_host_describe(host, "inherited");
		return 0;
	}
	if ((err = mb_host_bind_node(dev.numa_node)))
		return err;
	fprintf(stderr,
		"muonbench: --numa auto: '%s' is at PCI %s on NUMA node %d; running and "
		"allocating there\n",
		dev.name, dev.pci, dev.numa_node);
	mb_host_describe(host, "numa auto");
	return 0;
}

int mb_setup_stages(const struct mb_args *args, unsigned *stages, size_t *n)
{
	const char *p = args->stages;
	size_t i;

	*n = 0;
	for (;;) {
		if (p[0] < '1' || p[0] > '3' || (p[1] && p[1] != ','))
			return mb_bad_input("--stage: invalid stage list '%s' (expected 1, 2 or 3, "
					    "or a list such as 2,3)",
					    args->stages);
		for (i = 0; i < *n; i++)
			if (stages[i] == (unsigned)(p[0] - '0'))
				return mb_bad_input("--stage: stage %c twice in '%s'", p[0],
						    args->stages);
		stages[(*n)++] = (unsigned)(p[0] - '0');
		if (!p[1])
			return 0;
		p += 2;
	}
}
