/*
 * devices: the OpenCL platforms and devices, as a Markdown table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "mb_cl.h"
#include "mb_err.h"
#include "mb_num.h"
#include "mb_tuning.h"
#include "print.h"

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
	for (i = 0; i < n; i++) {
		const struct mb_cl_device_info *d = &devs[i];

		snprintf(node, sizeof(node), d->numa_node >= 0 ? "%d" : "unknown", d->numa_node);
		auto_tuning(d, tuning, sizeof(tuning));
		struct mb_field f[] = {
			MB_FIELD_NR("platform", d->platform),
			MB_FIELD_NR("device", d->device),
			MB_FIELD_T("platform name", d->platform_name),
			MB_FIELD_T("device name", d->name),
			MB_FIELD_T("vendor", d->vendor),
			MB_FIELD_T("driver", d->driver),
			MB_FIELD_T("type", d->type),
			MB_FIELD_T("architecture", d->arch[0] ? d->arch : "unknown"),
			MB_FIELD_TR("global memory",
				    mb_fmt_gib(mem, sizeof(mem), d->global_mem_bytes)),
			MB_FIELD_NR("compute units", d->compute_units),
			MB_FIELD_TR("max allocation",
				    mb_fmt_gib(alloc, sizeof(alloc), d->max_alloc_bytes)),
			MB_FIELD_B("cl_khr_fp16", d->fp16),
			MB_FIELD_T("PCI address", d->pci[0] ? d->pci : "unknown"),
			MB_FIELD_TR("NUMA node", node),
			MB_FIELD_T("CLBlast tuning (auto)", tuning),
		};

		mb_printer(MB_FORMAT_MD)->record(f, sizeof(f) / sizeof(f[0]), !i);
	}
	if (!n) {
		printf("\n(OpenCL platforms were found, but no devices on them.)\n");
		mb_cl_no_device(); /* PoCL's cache that cannot be made, said */
		if (strcmp(mb_errmsg(), "no OpenCL device found"))
			fprintf(stderr, "muonbench: %s\n", mb_errmsg());
	}
	free(devs);
	return 0;
}
