/*
 * muonbench: parse the command line, run the subcommand, turn its status
 * into the exit code (0 success, 1 a failed run, 2 bad usage or input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "child.h"
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
	case MB_CMD_PREDICT:
		return mb_cmd_predict(args);
	case MB_CMD_PROFILE:
		return mb_cmd_profile(args);
	case MB_CMD_ADVISE:
		return mb_cmd_advise(args);
	case MB_CMD_RUN:
	default:
		return mb_cmd_run(args);
	}
}

/*
 * OpenMP's threads wait passively (asleep in the kernel) unless the user
 * says otherwise. libgomp's default is to spin GOMP_SPINCOUNT = 300000
 * times first, about 7 ms of a core on a 2-core EPYC VM, at the end of
 * every parallel region; the host optimizer ran one region per parameter
 * (it runs one a step now, which passive waiting made worth it).
 * When another process holds one of two cores, the spinner keeps the core
 * left busy while the thread it waits for queues for a core, behind the
 * spinner or the other process, until the scheduler preempts one of them:
 * the tiny model's 14 regions then take 0.11 s instead of 0.0014 s, for as
 * long as the other process runs.
 * Passive waiting costs a wake-up per region (tens of microseconds),
 * whatever the load.
 *
 * libgomp reads OMP_WAIT_POLICY once, in its constructor, before main (a
 * setenv here is too late), so the program runs itself again with the
 * variable set (by the path /proc/self/exe links to, which names the
 * process muonbench). Not when the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT,
 * nor under valgrind, whose /proc/self/exe is its own tool, which refuses
 * to run. If the exec fails, the run goes on with the runtime's default.
 */
static void wait_passively(char **argv)
{
	char self[4096];
	ssize_t n;

	if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || !mb_child_possible())
		return;
	if (setenv("OMP_WAIT_POLICY", "passive", 1))
		return;
	/* by its name, so that ps and pkill see muonbench, not "exe" */
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		execv(self, argv);
	}
	execv("/proc/self/exe", argv); /* the file was replaced or removed since */
	unsetenv("OMP_WAIT_POLICY");
}

int main(int argc, char **argv)
{
	struct mb_args args;
	int err;

	wait_passively(argv);
	err = mb_args_parse(&args, argc, argv);
	if (!err && args.help)
		mb_print_help(stdout, args.command);
	else if (!err && args.version)
		printf("muonbench %s (git %s)\n", MB_VERSION, MB_GIT_REV);
	else if (!err)
		err = dispatch(&args);
	if (fflush(stdout) && !err)
		err = mb_fail("cannot write the output: standard output failed");
	/* under MPI, a refusal that every rank agreed on is said by rank 0 alone */
	if (err && mb_err_kind() != MB_KIND_SAID_ELSEWHERE)
		fprintf(stderr, "muonbench: %s\n", mb_errmsg());
	return err ? -err : 0;
}
