/*
 * tables: results tables (mb_results) printed in a format, to stdout.
 */
#ifndef MB_TABLES_H
#define MB_TABLES_H

#include <stddef.h>

#include "mb_results.h"
#include "options.h"

/*
 * The NTABLES TABLES in FORMAT: Markdown (the reference's tables, then a
 * trade-off table for each sweep among them), or one CSV row or JSON object
 * per cell. 0, or -MB_EFAIL out of memory (Markdown's trade-off tables).
 */
int mb_tables_print(const struct mb_table *tables, size_t ntables, enum mb_format format);

/* The tables of N ROWS (mb_results_gather), as mb_tables_print prints them. */
int mb_tables_print_rows(const struct mb_csv_row *rows, size_t n, enum mb_format format);

#endif
