/*
 * run_watchdog: run's signals. A signal sets mb_run_stop, which a run reads
 * between steps, and wakes the watchdog thread: a process blocked in the
 * driver never reads mb_run_stop, so after the grace the watchdog writes the
 * run in progress's row as interrupted and ends the process. A second
 * signal exits at once.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_clock.h"
#include "mb_err.h"
#include "run_grid.h"

volatile sig_atomic_t mb_run_stop;
static sem_t wake; /* the watchdog's: a first signal, or the grid's end */
static volatile sig_atomic_t wake_ready;

static void on_signal(int sig)
{
	static const char msg[] = "\nmuonbench: a second signal: exiting now, the rows of the "
				  "finished runs are kept\n";

	(void)sig;
	if (mb_run_stop) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			_exit(1);
		_exit(1);
	}
	mb_run_stop = 1;
	if (wake_ready)
		sem_post(&wake);
}

/* Seconds between a first signal and the exit, if the device never returns. */
#define STOP_GRACE_S 30

/* The grace after a signal, in seconds: STOP_GRACE_S, or MUONBENCH_STOP_GRACE_S (1 to 3600). */
static long stop_grace_s(void)
{
	const char *v = getenv("MUONBENCH_STOP_GRACE_S");
	char *end;
	long s;

	if (!v || !*v)
		return STOP_GRACE_S;
	errno = 0;
	s = strtol(v, &end, 10);
	if (!errno && !*end && s >= 1 && s <= 3600)
		return s;
	fprintf(stderr,
		"muonbench: MUONBENCH_STOP_GRACE_S '%s' is not 1 to 3600 seconds: %d it is\n", v,
		STOP_GRACE_S);
	return STOP_GRACE_S;
}

/*
 * The run in progress has not returned within the grace after a signal:
 * its row as interrupted (unless the main thread has finished it), a line
 * on stderr, and the exit, from this thread, with the main thread still in
 * the driver. The rows of the finished runs are in the file already.
 */
static void give_up(struct mb_run_grid *g, long grace)
{
	struct mb_csv_row *row = malloc(sizeof(*row));
	struct mb_run_result *r = malloc(sizeof(*r));
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	int owner, k;
	bool cut = false;

	/* a row being appended is let finish (it takes milliseconds); then the file is ours */
	for (k = 0; k < 200 && atomic_load(&g->run_owner) == RUN_SAVING; k++)
		nanosleep(&tick, NULL);
	owner = RUN_IDLE;
	if (!atomic_compare_exchange_strong(&g->run_owner, &owner, RUN_WATCHDOG) &&
	    owner == RUN_MAIN && row && r &&
	    atomic_compare_exchange_strong(&g->run_owner, &owner, RUN_WATCHDOG)) {
		mb_run_result_unrun(r);
		mb_run_fill_meta(g, row);
		row->run = g->cell_run;
		mb_run_fill_results(row, r);
		snprintf(row->status, sizeof(row->status), "interrupted");
		snprintf(row->reason, sizeof(row->reason),
			 "stopped by a signal after %u of %u steps; the device had not returned "
			 "%ld s later",
			 atomic_load(&g->run_steps_done), g->run.steps, grace);
		cut = !mb_csv_append(g->out, row);
	}
	mb_run_clear_progress(g);
	if (g->out[0])
		fprintf(stderr,
			"muonbench: the device did not return within %ld s of the signal: exiting "
			"with the rows of the finished runs%s in '%s'\n",
			grace, cut ? ", and the cut one as interrupted," : "", g->out);
	else if (atomic_load(&g->set_up)) /* under MPI, a rank other than 0 */
		fprintf(stderr,
			"muonbench: the device did not return within %ld s of the signal: exiting; "
			"the rows of the finished runs are in rank 0's results\n",
			grace);
	else
		fprintf(stderr,
			"muonbench: still setting up %ld s after the signal: exiting before any "
			"run\n",
			grace);
	_exit(1);
}

/*
 * The watchdog thread: after a first signal, it waits the grace for the
 * grid to end, and ends the process if it has not (give_up). At the grid's
 * end it returns.
 */
static void *watchdog(void *arg)
{
	struct mb_run_grid *g = arg;
	long grace = stop_grace_s();
	double start;
	struct timespec until;

	while (sem_wait(&wake) && errno == EINTR)
		;
	if (atomic_load(&g->ending))
		return NULL;
	/* the grace on the monotonic clock, in short waits (sem_timedwait's is the wall clock's) */
	start = mb_now_s();
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 200 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (!sem_timedwait(&wake, &until))
			return NULL; /* the grid has ended */
		if (mb_now_s() - start >= (double)grace)
			give_up(g, grace);
	}
}

int mb_run_watch(struct mb_run_grid *g, pthread_t *watcher)
{
	sigset_t block, was;
	int err;

	/* one semaphore for the process, never destroyed (a signal may post it at any time) */
	if (!wake_ready && sem_init(&wake, 0, 0))
		return mb_fail("cannot make the watchdog's semaphore: %s", strerror(errno));
	while (!sem_trywait(&wake)) /* an earlier invocation's posts */
		;
	wake_ready = 1;
	/* the signals go to the main thread, not to the watchdog */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &was);
	err = pthread_create(watcher, NULL, watchdog, g);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (err)
		return mb_fail("cannot start the watchdog thread: %s", strerror(err));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* a closed terminal or ssh session: as SIGTERM, unless ignored (nohup) */
	if (signal(SIGHUP, on_signal) == SIG_IGN)
		signal(SIGHUP, SIG_IGN);
	/* past a file size limit, a write fails: the fallback takes over */
	signal(SIGXFSZ, SIG_IGN);
	return 0;
}

void mb_run_unwatch(struct mb_run_grid *g, pthread_t watcher)
{
	atomic_store(&g->ending, true);
	sem_post(&wake);
	pthread_join(watcher, NULL);
}
