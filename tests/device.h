/*
 * The default OpenCL device (PoCL in CI), opened once for a cmocka group:
 * cmocka_run_group_tests(tests, open_device, close_device). Include after
 * cmocka.h.
 */
#ifndef MB_TEST_DEVICE_H
#define MB_TEST_DEVICE_H

#include <stdio.h>

#include "mb_cl.h"
#include "mb_err.h"

static struct mb_cl cl;

static int open_device(void **state)
{
	struct mb_cl_select sel = { .platform = -1 };

	(void)state;
	if (mb_cl_open(&cl, &sel)) {
		fprintf(stderr, "no device: %s\n", mb_errmsg());
		return -1;
	}
	return 0;
}

static int close_device(void **state)
{
	(void)state;
	mb_cl_release(&cl);
	return 0;
}

#endif
