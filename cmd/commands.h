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
int mb_cmd_advise(const struct mb_args *args);

#endif
