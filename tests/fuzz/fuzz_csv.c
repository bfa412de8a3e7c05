/*
 * libFuzzer target: the results-CSV reader that report and compare use,
 * followed by the grouping into tables. Anything but success or a bad-input
 * error is a finding, and so is a crash in the grouping of what was read.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mb_csv.h"
#include "mb_err.h"
#include "mb_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mb_csv_row *rows = NULL;
	struct mb_table *tables;
	size_t n = 0, nt;
	int err;

	err = mb_csv_parse((const char *)data, size, "fuzz.csv", &rows, &n);
	if (err && err != -MB_EINPUT)
		abort();
	if (!err && !mb_results_gather(rows, n, &tables, &nt))
		mb_results_release(tables, nt);
	free(rows);
	return 0;
}
