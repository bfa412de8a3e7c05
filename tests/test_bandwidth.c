/*
 * Copy bandwidth on the default device (PoCL in CI): every direction and
 * kind of host memory gives a plausible spread, real copies are not taken
 * for zero-copy mappings, and the zero-copy rule flags what is too fast.
 * Copies around the buffers move, every other one, what was written
 * shortly before it.
 * On queues without profiling (MUONBENCH_PROFILING=off) the event rates are
 * NaN with the driver's reason, never 0, and the host clock's rates remain.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_bandwidth.h"
#include "mb_err.h"

#include "device.h"

static void zero_copy_rule(void **state)
{
	(void)state;
	/* 1 GiB "copied" in 10 us beside a 10 GB/s memcpy: no transfer took place */
	assert_true(mb_bw_zero_copy((double)(1u << 30) / 10e-6 / 1e9, 10));
	/* a bus faster than one memcpy, as NVLink-C2C can be: still a transfer */
	assert_false(mb_bw_zero_copy(3 * 10.0, 10));
	assert_true(mb_bw_zero_copy((MB_BW_ZERO_COPY_FACTOR + 0.1) * 10.0, 10));
	assert_false(mb_bw_zero_copy(NAN, 10));
}

static void check_spread(const struct mb_spread *s)
{
	assert_true(isfinite(s->median) && s->median > 0);
	assert_true(s->min <= s->median && s->median <= s->max);
	assert_true(s->cv >= 0 && isfinite(s->cv));
}

static void every_direction_and_memory(void **state)
{
	const uint64_t sizes[] = { 4096, 3u << 20 };
	struct mb_bw_buffers *b;
	struct mb_bw_result r;
	int pinned, dir;
	size_t i;

	(void)state;
	for (pinned = 0; pinned <= 1; pinned++) {
		assert_int_equal(mb_bw_buffers_new(&cl, 3u << 20, pinned, &b), 0);
		for (i = 0; i < 2; i++) {
			for (dir = 0; dir < MB_BW_NDIRS; dir++) {
				assert_int_equal(mb_bw_measure(b, sizes[i], dir, 3, &r), 0);
				assert_true(r.bytes == sizes[i] && r.dir == (enum mb_bw_dir)dir &&
					    r.pinned == pinned && r.reps == 3);
				/* "both": one host thread a direction */
				assert_int_equal(r.threads, dir == MB_BW_BOTH ? 2 : 1);
				assert_string_equal(r.device_error, "");
				check_spread(&r.device_gbs);
				check_spread(&r.host_gbs);
				assert_true(r.memcpy_gbs > 0);
				/* PoCL copies with memcpy: a real copy, never flagged */
				assert_false(r.zero_copy);
			}
		}
		/* a copy larger than the buffers is refused, not run past their end */
		assert_int_equal(mb_bw_measure(b, (3u << 20) + 1, MB_BW_H2D, 1, &r), -MB_EFAIL);
		mb_bw_buffers_free(b);
	}
}

/*
 * Copies around the buffers: each at the next place, wrapping where the next
 * would pass their end (1 MiB + 1 in 3 MiB: two places, the second ending
 * 1 byte short of 2 MiB + 2, where an offset past the buffers would be a
 * driver's error), the whole buffers at their start; larger is refused.
 */
static void spread_copies(void **state)
{
	const uint64_t sizes[] = { 1u << 20, (1u << 20) + 1, 3u << 20 };
	struct mb_bw_buffers *b;
	struct mb_bw_result r;
	int pinned, dir;
	size_t i;

	(void)state;
	for (pinned = 0; pinned <= 1; pinned++) {
		assert_int_equal(mb_bw_buffers_new(&cl, 3u << 20, pinned, &b), 0);
		for (i = 0; i < 3; i++)
			for (dir = 0; dir < MB_BW_NDIRS; dir++) {
				assert_int_equal(mb_bw_measure_spread(b, sizes[i], dir, 7, &r), 0);
				assert_true(r.bytes == sizes[i] && r.reps == 7);
				check_spread(&r.device_gbs);
				check_spread(&r.host_gbs);
				/* the copies' bytes over their summed time: between the
				 * slowest copy's rate and the fastest's */
				assert_true(r.device_overall_gbs >= r.device_gbs.min * (1 - 1e-9) &&
					    r.device_overall_gbs <= r.device_gbs.max * (1 + 1e-9));
				assert_true(r.host_overall_gbs >= r.host_gbs.min * (1 - 1e-9) &&
					    r.host_overall_gbs <= r.host_gbs.max * (1 + 1e-9));
				/* judged beside a memcpy of the whole buffers: a real copy */
				assert_true(r.memcpy_gbs > 0);
				assert_false(r.zero_copy);
			}
		assert_int_equal(mb_bw_measure_spread(b, (3u << 20) + 1, MB_BW_D2H, 1, &r),
				 -MB_EFAIL);
		mb_bw_buffers_free(b);
	}
}

/*
 * Every other spread copy moves what was written shortly before it: by the
 * host for an H2D, by the device for a D2H, copy i's bytes all i + 1 (the
 * warm-up is copy 0); the others move what their place last held. The
 * warm-up and seven timed copies of 1 MiB in 3 MiB, at 0, 1, 2, 0, 1, 2, 0
 * and 1 MiB, the odd ones written: the targets end with copies 6, 7 and 5,
 * the first moving copy 3's bytes (4), the others their own (8, 6), each
 * from its first byte to its last; "both" the same each way. A plain copy
 * moves the buffers' own fill, which is no such value.
 */
static void spread_copies_move_produced_data(void **state)
{
	const uint64_t mib = 1u << 20;
	const unsigned char last[3] = { 4, 8, 6 };
	struct mb_bw_buffers *b;
	struct mb_bw_result r;
	unsigned char got;
	int dir, side;
	uint64_t k;

	(void)state;
	for (dir = 0; dir < MB_BW_NDIRS; dir++) {
		assert_int_equal(mb_bw_buffers_new(&cl, 3 * mib, dir == MB_BW_D2H, &b), 0);
		assert_int_equal(mb_bw_measure_spread(b, mib, dir, 7, &r), 0);
		for (side = MB_BW_H2D; side <= MB_BW_D2H; side++) {
			if (dir != MB_BW_BOTH && side != dir)
				continue;
			for (k = 0; k < 3; k++) {
				assert_int_equal(mb_bw_target_at(b, side, k * mib, &got), 0);
				assert_int_equal(got, last[k]);
				assert_int_equal(mb_bw_target_at(b, side, k * mib + mib - 1, &got),
						 0);
				assert_int_equal(got, last[k]);
			}
		}
		/* one timed copy: its source written before the warm-up */
		if (dir != MB_BW_BOTH) {
			assert_int_equal(mb_bw_measure_spread(b, mib, dir, 1, &r), 0);
			assert_int_equal(mb_bw_target_at(b, dir, mib, &got), 0);
			assert_int_equal(got, 2);
		}
		mb_bw_buffers_free(b);
	}
	/* a plain copy moves the source's fill, whose every byte is odd */
	assert_int_equal(mb_bw_buffers_new(&cl, 3 * mib, false, &b), 0);
	assert_int_equal(mb_bw_measure(b, mib, MB_BW_H2D, 2, &r), 0);
	assert_int_equal(mb_bw_target_at(b, MB_BW_H2D, 0, &got), 0);
	assert_int_equal(got, 1);
	assert_int_equal(mb_bw_target_at(b, MB_BW_H2D, 3 * mib, &got), -MB_EFAIL);
	assert_int_equal(mb_bw_target_at(b, MB_BW_BOTH, 0, &got), -MB_EFAIL);
	mb_bw_buffers_free(b);
}

static void no_profiling(void **state)
{
	struct mb_cl_select sel = { .platform = -1 };
	struct mb_cl plain;
	struct mb_bw_buffers *b;
	struct mb_bw_result r;
	int dir, err;

	(void)state;
	assert_int_equal(setenv("MUONBENCH_PROFILING", "off", 1), 0);
	err = mb_cl_open(&plain, &sel);
	unsetenv("MUONBENCH_PROFILING");
	assert_int_equal(err, 0);
	assert_int_equal(mb_bw_buffers_new(&plain, 1u << 16, false, &b), 0);
	for (dir = 0; dir < MB_BW_NDIRS; dir++) {
		/* not a failure: the host clock's rates are there */
		assert_int_equal(mb_bw_measure(b, 1u << 16, dir, 2, &r), 0);
		assert_true(isnan(r.device_gbs.median) && isnan(r.device_gbs.min) &&
			    isnan(r.device_gbs.max) && isnan(r.device_gbs.cv) &&
			    isnan(r.device_overall_gbs));
		assert_true(r.host_overall_gbs > 0);
		check_spread(&r.host_gbs);
		/* the reason names the copy: the direction (the first, for "both") and size */
		assert_non_null(strstr(r.device_error, dir == MB_BW_D2H
							       ? "D2H copy of 65536 bytes"
							       : "H2D copy of 65536 bytes"));
		assert_int_equal(r.threads, dir == MB_BW_BOTH ? 2 : 1);
	}
	mb_bw_buffers_free(b);
	mb_cl_release(&plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(zero_copy_rule),
		cmocka_unit_test(every_direction_and_memory),
		cmocka_unit_test(spread_copies),
		cmocka_unit_test(spread_copies_move_produced_data),
		cmocka_unit_test(no_profiling),
	};

	return cmocka_run_group_tests(tests, open_device, close_device);
}
