/*
 * mb_err: the last error's kind travels with its message, is set anew by
 * every error and kept by a prefix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mb_err.h"

static void kind_comes_with_the_error(void **state)
{
	(void)state;
	assert_int_equal(mb_fail_kind(MB_KIND_DEVICE_MEMORY, "cannot allocate '%s'", "x"),
			 -MB_EFAIL);
	assert_int_equal(mb_err_kind(), MB_KIND_DEVICE_MEMORY);
	assert_string_equal(mb_errmsg(), "cannot allocate 'x'");
	assert_int_equal(mb_fail_kind(MB_KIND_HOST_MEMORY, "out of host memory"), -MB_EFAIL);
	assert_int_equal(mb_err_kind(), MB_KIND_HOST_MEMORY);
	/* bad input of a kind: an old file, which the caller may write anew */
	assert_int_equal(mb_bad_input_kind(MB_KIND_OLD_FORMAT, "'%s': version 1", "f"), -MB_EINPUT);
	assert_int_equal(mb_err_kind(), MB_KIND_OLD_FORMAT);
	assert_string_equal(mb_errmsg(), "'f': version 1");
}

static void every_new_error_resets_it(void **state)
{
	(void)state;
	mb_fail_kind(MB_KIND_DEVICE_MEMORY, "first");
	assert_int_equal(mb_fail("second"), -MB_EFAIL);
	assert_int_equal(mb_err_kind(), MB_KIND_OTHER);
	mb_fail_kind(MB_KIND_DEVICE_MEMORY, "third");
	assert_int_equal(mb_bad_input("fourth"), -MB_EINPUT);
	assert_int_equal(mb_err_kind(), MB_KIND_OTHER);
}

static void a_prefix_keeps_it(void **state)
{
	(void)state;
	mb_fail_kind(MB_KIND_DEVICE_MEMORY, "clCreateBuffer failed");
	mb_err_prefix("batch %d of %d", 2, 5);
	assert_string_equal(mb_errmsg(), "batch 2 of 5: clCreateBuffer failed");
	assert_int_equal(mb_err_kind(), MB_KIND_DEVICE_MEMORY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kind_comes_with_the_error),
		cmocka_unit_test(every_new_error_resets_it),
		cmocka_unit_test(a_prefix_keeps_it),
	};

	return cmocka_run_group_tests_name("err", tests, NULL, NULL);
}
