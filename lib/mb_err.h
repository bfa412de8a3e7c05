/*
 * mb_err: how the library reports failure.
 *
 * Library functions never print and never exit. A function that fails records
 * one line saying what went wrong (lowercase, culprit quoted) and returns a
 * negative status; the command layer prints the line and turns the status into
 * the exit code: -MB_EINPUT (bad usage or input) exits 2, -MB_EFAIL (a failed
 * run) exits 1. The message lives in a per-thread buffer until the next error.
 */
#ifndef MB_ERR_H
#define MB_ERR_H

enum mb_status {
	MB_OK = 0,
	MB_EFAIL = 1,  /* the run failed: device, driver, host resources */
	MB_EINPUT = 2, /* bad usage or bad input: the user must change something */
};

/* Record a failure message; return -MB_EFAIL. */
int mb_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record a bad-input message; return -MB_EINPUT. */
int mb_bad_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last recorded message of this thread ("" if none). */
const char *mb_errmsg(void);

/* Prefix the recorded message with "context: " (for callers adding where). */
void mb_err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
