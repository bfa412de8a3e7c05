/*
 * mb_err: how the library reports failure.
 *
 * Library functions never print and never exit. A function that fails records
 * one line saying what went wrong (lowercase, culprit quoted) and returns a
 * negative status; the command layer prints the line and turns the status into
 * the exit code: -MB_EINPUT (bad usage or input) exits 2, -MB_EFAIL (a failed
 * run) exits 1. The message lives in a per-thread buffer until the next error,
 * with its kind: what a caller may act on without reading the text (out of
 * device memory: a smaller batch may fit).
 */
#ifndef MB_ERR_H
#define MB_ERR_H

enum mb_status {
	MB_OK = 0,
	MB_EFAIL = 1,  /* the run failed: device, driver, host resources */
	MB_EINPUT = 2, /* bad usage or bad input: the user must change something */
};

/* What kind of failure the last message records. */
enum mb_err_kind {
	MB_KIND_OTHER = 0,
	MB_KIND_DEVICE_MEMORY,	/* the device is out of memory, or of resources for a command */
	MB_KIND_HOST_MEMORY,	/* the host is out of memory */
	MB_KIND_OLD_FORMAT,	/* an input an older muonbench wrote: writing it anew mends it */
	MB_KIND_DEVICE_LOST,	/* the device's context is dead: only opening it anew goes on */
	MB_KIND_SAID_ELSEWHERE, /* another process (MPI's rank 0) says it: this one stays quiet */
};

/* Record a failure message of kind MB_KIND_OTHER; return -MB_EFAIL. */
int mb_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record a failure message of kind KIND; return -MB_EFAIL. */
int mb_fail_kind(enum mb_err_kind kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record a bad-input message (kind MB_KIND_OTHER); return -MB_EINPUT. */
int mb_bad_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record a bad-input message of kind KIND; return -MB_EINPUT. */
int mb_bad_input_kind(enum mb_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The last recorded message of this thread ("" if none). */
const char *mb_errmsg(void);

/*
 * The kind of this thread's last recorded message (MB_KIND_OTHER if none).
 * Every new message sets it; mb_err_prefix keeps it.
 */
enum mb_err_kind mb_err_kind(void);

/* Prefix the recorded message with "context: " (for callers adding where); the kind stays. */
void mb_err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
