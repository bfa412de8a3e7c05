/*
 * libFuzzer target: the model-config loader (both forms), fed arbitrary
 * bytes, with all layers and with --layers 1. Anything but a clean success
 * or a bad-input error is a finding; so is a table whose counts disagree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mb_config.h"
#include "mb_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mb_model m;
	unsigned layers;
	int err;

	for (layers = 0; layers < 2; layers++) {
		err = mb_config_parse(&m, (const char *)data, size, "fuzz.json", layers);
		if (err && err != -MB_EINPUT)
			abort();
		if (!err && m.numel_total != m.numel_muon + m.numel_adamw)
			abort();
		mb_model_release(&m);
	}
	return 0;
}
