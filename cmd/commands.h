/*
 * commands: one function per subcommand. Each returns 0 or a negative
 * mb_status with the message recorded (mb_err.h); main prints it and exits.
 */
#ifndef MB_COMMANDS_H
#define MB_COMMANDS_H

#include <stddef.h>

#include "options.h"

int mb_cmd_run(const struct mb_args *args);
int mb_cmd_plan(const struct mb_args *args);
int mb_cmd_devices(const struct mb_args *args);
int mb_cmd_ns(const struct mb_args *args);
int mb_cmd_bandwidth(const struct mb_args *args);
int mb_cmd_tune(const struct mb_args *args);
int mb_cmd_report(const struct mb_args *args);
int mb_cmd_compare(const struct mb_args *args);
int mb_cmd_plot(const struct mb_args *args);
int mb_cmd_predict(const struct mb_args *args);
int mb_cmd_profile(const struct mb_args *args);

struct mb_cl_device_info;

/* Where the cache keeps device D's profile (what profile writes and run reads). */
void mb_profile_cache_path(const struct mb_cl_device_info *d, char *buf, size_t len);

struct mb_csv_row;
struct mb_table;

/*
 * The NFILES results FILES gathered into tables (mb_results_add; release
 * with mb_results_release), read a row at a time: the memory is that of the
 * tables' cells, whatever the files' lengths. Says on stderr when a file
 * holds no runs (a bandwidth calibration among results files): it is
 * skipped. *nrows: the rows read.
 */
int mb_gather_files(char *const *files, int nfiles, struct mb_table **tables, size_t *ntables,
		    size_t *nrows);

/* The tables of report for N ROWS, in FORMAT (md, csv or json), to stdout. */
int mb_report_rows(const struct mb_csv_row *rows, size_t n, enum mb_format format);

#endif
