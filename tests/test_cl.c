/*
 * mb_cl without a device: the kind of error each OpenCL and CLBlast status
 * records, PCI addresses with 32-bit domains, and work-group shapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mb_cl.h"
#include "mb_err.h"

/* mb_cl_check reads only the device's name */
static const struct mb_cl fake = { .info = { .name = "Fake GPU" } };

static enum mb_err_kind cl_kind(cl_int status)
{
	assert_int_equal(mb_cl_check(&fake, status, "clEnqueueWriteBuffer", "batch %d", 1),
			 -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "clEnqueueWriteBuffer failed on 'Fake GPU' (batch 1)"));
	return mb_err_kind();
}

static enum mb_err_kind clblast_kind(int status)
{
	assert_int_equal(mb_clblast_check(&fake, status, "CLBlastSgemm", "8x8x8"), -MB_EFAIL);
	return mb_err_kind();
}

static void status_kinds(void **state)
{
	(void)state;
	assert_int_equal(cl_kind(CL_MEM_OBJECT_ALLOCATION_FAILURE), MB_KIND_DEVICE_MEMORY);
	assert_non_null(strstr(mb_errmsg(), ": CL_MEM_OBJECT_ALLOCATION_FAILURE"));
	assert_int_equal(cl_kind(CL_OUT_OF_RESOURCES), MB_KIND_DEVICE_MEMORY);
	assert_int_equal(cl_kind(CL_OUT_OF_HOST_MEMORY), MB_KIND_HOST_MEMORY);
	assert_int_equal(cl_kind(CL_INVALID_VALUE), MB_KIND_OTHER);
	assert_int_equal(cl_kind(CL_PROFILING_INFO_NOT_AVAILABLE), MB_KIND_OTHER);
	/* success records nothing: the last error and its kind stay */
	mb_fail_kind(MB_KIND_HOST_MEMORY, "earlier");
	assert_int_equal(mb_cl_check(&fake, CL_SUCCESS, "clFinish", "x"), 0);
	assert_int_equal(mb_err_kind(), MB_KIND_HOST_MEMORY);
	assert_string_equal(mb_errmsg(), "earlier");
}

static void clblast_kinds(void **state)
{
	(void)state;
	/* OpenCL's codes, as CLBlast passes them on (-4: CLBlastTempBufferAllocFailure) */
	assert_int_equal(clblast_kind(-4), MB_KIND_DEVICE_MEMORY);
	assert_int_equal(clblast_kind(-5), MB_KIND_DEVICE_MEMORY);
	assert_int_equal(clblast_kind(-6), MB_KIND_HOST_MEMORY);
	/* a buffer given to CLBlast that is too small for the shape is no memory shortage */
	assert_int_equal(clblast_kind(-2050), MB_KIND_OTHER);
	assert_non_null(strstr(mb_errmsg(), ": CLBlastInsufficientMemoryTemp"));
	assert_int_equal(clblast_kind(-1011), MB_KIND_OTHER);
	assert_int_equal(clblast_kind(-1017), MB_KIND_OTHER);
}

static void pci_addresses(void **state)
{
	char buf[16];

	(void)state;
	assert_true(mb_cl_pci_format(buf, sizeof(buf), 0, 0x3b, 0, 0));
	assert_string_equal(buf, "0000:3b:00.0");
	/* a domain past 16 bits (Intel's VMD) in full */
	assert_true(mb_cl_pci_format(buf, sizeof(buf), 0x10000, 0xe1, 0x1f, 7));
	assert_string_equal(buf, "10000:e1:1f.7");
	assert_true(mb_cl_pci_format(buf, sizeof(buf), 0xfffffff, 0xff, 0x1f, 7));
	assert_string_equal(buf, "fffffff:ff:1f.7");
	/* 8 hex digits do not fit 16 bytes: nothing rather than a cut address */
	assert_false(mb_cl_pci_format(buf, sizeof(buf), 0xabcdef12, 1, 2, 3));
	assert_string_equal(buf, "");
	{
		char big[20];

		assert_true(mb_cl_pci_format(big, sizeof(big), 0xabcdef12, 1, 2, 3));
		assert_string_equal(big, "abcdef12:01:02.3");
	}
}

static void local_shapes(void **state)
{
	size_t items[3] = { 1024, 1024, 64 }, small[3] = { 8, 4, 1 }, l[2];

	(void)state;
	mb_cl_local_shape(4096, items, 1, l);
	assert_int_equal(l[0], MB_CL_LOCAL_MAX);
	mb_cl_local_shape(4096, items, 2, l);
	assert_true(l[0] == 16 && l[1] == 16);
	/* a kernel that allows fewer, not a power of two: the power of two below */
	mb_cl_local_shape(192, items, 1, l);
	assert_int_equal(l[0], 128);
	mb_cl_local_shape(192, items, 2, l);
	assert_true(l[0] == 16 && l[1] == 8);
	mb_cl_local_shape(1, items, 2, l);
	assert_true(l[0] == 1 && l[1] == 1);
	mb_cl_local_shape(0, items, 1, l);
	assert_int_equal(l[0], 1);
	/* the device's per-dimension limits */
	mb_cl_local_shape(256, small, 1, l);
	assert_int_equal(l[0], 8);
	mb_cl_local_shape(256, small, 2, l);
	assert_true(l[0] == 8 && l[1] == 4);
}

/* Intel's GPUs take buffers over their cap with the unrestricted flag; no other device does. */
static void buffers_over_the_cap(void **state)
{
	struct mb_cl_device_info intel = { .max_alloc_bytes = 4ull << 30,
					   .unrestricted_size = true },
				 other = { .max_alloc_bytes = 4ull << 30 };

	(void)state;
	assert_true(mb_cl_buffer_flags(&intel, 4ull << 30) == CL_MEM_READ_WRITE);
	assert_true(mb_cl_buffer_flags(&intel, (4ull << 30) + 1) ==
		    (CL_MEM_READ_WRITE | (cl_mem_flags)(1u << 23)));
	assert_true(mb_cl_buffer_flags(&other, 8ull << 30) == CL_MEM_READ_WRITE);
	assert_true(mb_cl_alloc_limit(&intel) == UINT64_MAX);
	assert_true(mb_cl_alloc_limit(&other) == 4ull << 30);
}

static void global_sizes(void **state)
{
	(void)state;
	assert_int_equal(mb_cl_round_up(1000, 256), 1024);
	assert_int_equal(mb_cl_round_up(1024, 256), 1024);
	assert_int_equal(mb_cl_round_up(1, 256), 256);
	assert_int_equal(mb_cl_round_up(0, 256), 0);
	assert_int_equal(mb_cl_round_up(17, 1), 17);
	assert_int_equal(mb_cl_round_up((size_t)3 << 32, 256), (size_t)3 << 32);
	assert_int_equal(mb_cl_round_up(((size_t)3 << 32) + 1, 256), ((size_t)3 << 32) + 256);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(status_kinds),	 cmocka_unit_test(clblast_kinds),
		cmocka_unit_test(pci_addresses), cmocka_unit_test(local_shapes),
		cmocka_unit_test(global_sizes),	 cmocka_unit_test(buffers_over_the_cap),
	};

	return cmocka_run_group_tests_name("cl", tests, NULL, NULL);
}
