/*
 * child: fork, exec this program's own file, wait with a deadline.
 */
#define _DEFAULT_SOURCE /* usleep */
#include "child.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mb_clock.h"

bool mb_child_possible(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return !(preload && strstr(preload, "vgpreload"));
}

int mb_child_run(const char *dir, char *const *argv, double deadline_s, const char *out_name,
		 volatile sig_atomic_t *stop)
{
	char log[4200], out[4200];
	pid_t pid, done;
	int status = 0, fd, fo;

	snprintf(log, sizeof(log), "%s/log.txt", dir);
	snprintf(out, sizeof(out), "%s/%s", dir, out_name ? out_name : "log.txt");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		fo = out_name ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;
		if (chdir(dir) || fd < 0 || fo < 0 || dup2(fo, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	while ((done = waitpid(pid, &status, WNOHANG)) == 0) {
		if ((stop && *stop) || mb_now_s() > deadline_s) {
			kill(pid, SIGTERM);
			usleep(500000);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 124;
		}
		usleep(20000);
	}
	if (done < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int mb_child_ns(const char *dir, const struct mb_tuning *t, const struct mb_cl_device_info *d,
		const char *shapes, bool verify, double deadline_s, volatile sig_atomic_t *stop)
{
	/* /proc/self/exe: this very program, even if its file was replaced (a rebuild) */
	char file[4400], self[] = "/proc/self/exe", plat[16], devn[16];
	char *argv[] = { self,
			 "ns",
			 "--format",
			 "csv",
			 "--tuning",
			 file,
			 "--platform",
			 plat,
			 "--device",
			 devn,
			 "--shape",
			 verify ? (char *)MB_CHILD_VERIFY_SHAPES : (char *)shapes,
			 "--reps",
			 verify ? "1" : "3",
			 verify ? "--verify" : NULL,
			 NULL };

	snprintf(plat, sizeof(plat), "%u", d->platform);
	snprintf(devn, sizeof(devn), "%u", d->device);
	snprintf(file, sizeof(file), "%s/tuning.json", dir);
	if (mb_tuning_save(file, t))
		return -1;
	return mb_child_run(dir, argv, deadline_s, "ns.csv", stop);
}

void mb_child_remove(const char *dir)
{
	static const char *const files[] = { "tuning.json", "ns.csv", "log.txt" };
	char path[4200];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
