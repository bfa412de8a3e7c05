/*
 * libFuzzer target: the DeepSpeed-config reader, fed arbitrary bytes.
 * Anything but a clean success or a bad-input error is a finding: a value
 * of cJSON's tree that mb_json_where cannot find in the text fails the
 * run, as does a setting out of bounds or without a line.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mb_dsconfig.h"
#include "mb_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mb_dsconfig ds;
	size_t i;
	int err;

	err = mb_dsconfig_parse(&ds, (const char *)data, size, "fuzz.json");
	if (err && err != -MB_EINPUT)
		abort();
	if (ds.nsettings > MB_DSCONFIG_MAX)
		abort();
	for (i = 0; !err && i < ds.nsettings; i++)
		if (!ds.settings[i].line || !ds.settings[i].col ||
		    strlen(ds.settings[i].value) >= sizeof(ds.settings[i].value))
			abort();
	mb_dsconfig_release(&ds);
	return 0;
}
