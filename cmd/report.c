/*
 * report: results files as the reference's tables (mb_results, printed by
 * tables), in Markdown, or one CSV row / JSON object per cell.
 */
#include "commands.h"
#include "mb_err.h"
#include "mb_results.h"
#include "tables.h"

int mb_cmd_report(const struct mb_args *args)
{
	struct mb_table *tables;
	size_t n, nt;
	int err;

	if (!args->nfiles)
		return mb_bad_input("report needs results files: muonbench report FILE.csv...");
	if ((err = mb_results_read_files(args->files, args->nfiles, &tables, &nt, &n)))
		return err;
	if (!n)
		err = mb_bad_input("no rows in %s",
				   args->nfiles > 1 ? "these files" : args->files[0]);
	else
		err = mb_tables_print(tables, nt, args->format);
	mb_results_release(tables, nt);
	return err;
}
