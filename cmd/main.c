/*
 * muonbench: parse the command line, run the subcommand, turn its status
 * into the exit code (0 success, 1 a failed run, 2 bad usage or input).
 */
#include <stdio.h>

#include "commands.h"
#include "mb_err.h"
#include "options.h"
#include "version.h" /* generated: MB_VERSION, MB_GIT_REV */

static int dispatch(const struct mb_args *args)
{
	switch (args->command) {
	case MB_CMD_PLAN:
		return mb_cmd_plan(args);
	case MB_CMD_DEVICES:
		return mb_cmd_devices(args);
	case MB_CMD_NS:
		return mb_cmd_ns(args);
	case MB_CMD_TUNE:
		return mb_cmd_tune(args);
	case MB_CMD_BANDWIDTH:
		return mb_cmd_bandwidth(args);
	case MB_CMD_REPORT:
		return mb_cmd_report(args);
	case MB_CMD_COMPARE:
		return mb_cmd_compare(args);
	case MB_CMD_PLOT:
		return mb_cmd_plot(args);
	case MB_CMD_RUN:
	default:
		return mb_cmd_run(args);
	}
}

int main(int argc, char **argv)
{
	struct mb_args args;
	int err;

	err = mb_args_parse(&args, argc, argv);
	if (!err && args.help) {
		mb_print_help(stdout, args.command);
		return 0;
	}
	if (!err && args.version) {
		printf("muonbench %s (git %s)\n", MB_VERSION, MB_GIT_REV);
		return 0;
	}
	if (!err)
		err = dispatch(&args);
	if (fflush(stdout) && !err)
		err = mb_fail("cannot write the output: standard output failed");
	if (err)
		fprintf(stderr, "muonbench: %s\n", mb_errmsg());
	return err ? -err : 0;
}
