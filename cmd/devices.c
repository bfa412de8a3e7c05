/*
 * devices: the OpenCL platforms and devices, as a Markdown table.
 */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "mb_cl.h"
#include "mb_num.h"
#include "mb_tuning.h"

/* What --tuning auto would apply to D, and how it was found, into BUF. */
static void auto_tuning(const struct mb_cl_device_info *d, char *buf, size_t len)
{
	enum mb_tuning_match match;
	char source[4096];
	struct mb_tuning t;
	int verdict;

	if (mb_tuning_find(d, &t, source, sizeof(source), &match) <= 0) {
		snprintf(buf, len, "default");
		return;
	}
	verdict = match == MB_TUNING_FAMILY ? mb_tuning_verdict(d, &t, source) : 1;
	snprintf(buf, len, "%s%s (%s%s)", verdict == 0 ? "default: " : "", source,
		 mb_tuning_match_names[match],
		 verdict < 0		     ? "; ns --verify checks it at first use"
		 : verdict == 0		     ? "; it failed ns --verify here"
		 : match == MB_TUNING_FAMILY ? "; it passed ns --verify here"
					     : "");
}

int mb_cmd_devices(const struct mb_args *args)
{
	struct mb_cl_device_info *devs;
	char mem[32], alloc[32], node[16], tuning[4300];
	size_t i, n;
	int err;

	(void)args;
	if ((err = mb_cl_list_devices(&devs, &n)))
		return err;
	printf("| platform | device | platform name | device name | vendor | driver | type | "
	       "architecture | global memory | compute units | max allocation | cl_khr_fp16 | "
	       "PCI address | NUMA node | CLBlast tuning (auto) |\n");
	printf("|---:|---:|---|---|---|---|---|---|---:|---:|---:|---|---|---:|---|\n");
	for (i = 0; i < n; i++) {
		const struct mb_cl_device_info *d = &devs[i];

		snprintf(node, sizeof(node), d->numa_node >= 0 ? "%d" : "unknown", d->numa_node);
		auto_tuning(d, tuning, sizeof(tuning));
		printf("| %u | %u | %s | %s | %s | %s | %s | %s | %s | %u | %s | %s | %s | %s | %s "
		       "|\n",
		       d->platform, d->device, d->platform_name, d->name, d->vendor, d->driver,
		       d->type, d->arch[0] ? d->arch : "unknown",
		       mb_fmt_gib(mem, sizeof(mem), d->global_mem_bytes), d->compute_units,
		       mb_fmt_gib(alloc, sizeof(alloc), d->max_alloc_bytes), d->fp16 ? "yes" : "no",
		       d->pci[0] ? d->pci : "unknown", node, tuning);
	}
	if (!n)
		printf("\n(OpenCL platforms were found, but no devices on them.)\n");
	free(devs);
	return 0;
}
