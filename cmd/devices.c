/*
 * devices: the OpenCL platforms and devices, as a Markdown table.
 */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "mb_cl.h"
#include "mb_num.h"
#include "mb_tuning.h"

int mb_cmd_devices(const struct mb_args *args)
{
	struct mb_cl_device_info *devs;
	char mem[32], alloc[32], node[16], tuning[4096];
	struct mb_tuning t;
	size_t i, n;
	int err;

	(void)args;
	if ((err = mb_cl_list_devices(&devs, &n)))
		return err;
	printf("| platform | device | platform name | device name | vendor | driver | type | "
	       "global memory | compute units | max allocation | cl_khr_fp16 | PCI address | NUMA "
	       "node | CLBlast tuning (auto) |\n");
	printf("|---:|---:|---|---|---|---|---|---:|---:|---:|---|---|---:|---|\n");
	for (i = 0; i < n; i++) {
		const struct mb_cl_device_info *d = &devs[i];

		snprintf(node, sizeof(node), d->numa_node >= 0 ? "%d" : "unknown", d->numa_node);
		if (mb_tuning_find(d, &t, tuning, sizeof(tuning)) <= 0)
			snprintf(tuning, sizeof(tuning), "default");
		printf("| %u | %u | %s | %s | %s | %s | %s | %s | %u | %s | %s | %s | %s | %s |\n",
		       d->platform, d->device, d->platform_name, d->name, d->vendor, d->driver,
		       d->type, mb_fmt_gib(mem, sizeof(mem), d->global_mem_bytes), d->compute_units,
		       mb_fmt_gib(alloc, sizeof(alloc), d->max_alloc_bytes), d->fp16 ? "yes" : "no",
		       d->pci[0] ? d->pci : "unknown", node, tuning);
	}
	if (!n)
		printf("\n(OpenCL platforms were found, but no devices on them.)\n");
	free(devs);
	return 0;
}
