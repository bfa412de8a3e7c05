/*
 * mb_clock: the host's monotonic clock, in seconds.
 */
#ifndef MB_CLOCK_H
#define MB_CLOCK_H

#include <time.h>

static inline double mb_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
