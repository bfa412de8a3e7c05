/*
 * Sizes and counts as the command line takes them, and their printing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mb_err.h"
#include "mb_num.h"

static void assert_size(const char *text, uint64_t want)
{
	uint64_t v = 0;

	assert_int_equal(mb_parse_size("--x", text, 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, want);
}

static void assert_bad_size(const char *text, const char *why)
{
	uint64_t v = 0;

	assert_int_equal(mb_parse_size("--gather-budget", text, 1, UINT64_MAX, &v), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "--gather-budget"));
	assert_non_null(strstr(mb_errmsg(), text));
	assert_non_null(strstr(mb_errmsg(), why));
}

static void sizes_with_units(void **state)
{
	(void)state;
	assert_size("0", 0);
	assert_size("7", 7);
	assert_size("4K", 4000);
	assert_size("4k", 4000);
	assert_size("4Ki", 4096);
	assert_size("512M", 512000000);
	assert_size("512Mi", 536870912);
	assert_size("512MiB", 536870912);
	assert_size("1GB", 1000000000);
	assert_size("2Gi", 2147483648ull);
	assert_size("1Ti", 1ull << 40);
	assert_size("1.5Ki", 1536);
	assert_size("0.5Gi", 536870912);
	assert_size("1.00000000000000000000000Gi", 1ull << 30);
	assert_size("1.2500Ki", 1280);
	assert_size("100.0", 100);
	assert_size("18446744073709551615", UINT64_MAX);
}

static void scientific_notation(void **state)
{
	(void)state;
	assert_size("1e9", 1000000000);
	assert_size("2.5e8", 250000000);
	assert_size("1E3", 1000);
	assert_size("1e+3", 1000);
	assert_size("1500e-3Ki", 1536);
	assert_size("1e3Ki", 1024000);
	assert_size("0e99999", 0);
}

static void malformed_sizes(void **state)
{
	(void)state;
	assert_bad_size("", "invalid size");
	assert_bad_size("abc", "invalid size");
	assert_bad_size("12X", "invalid size");
	assert_bad_size("Mi", "invalid size");
	assert_bad_size("-5", "invalid size");
	assert_bad_size("+5", "invalid size");
	assert_bad_size(" 5", "invalid size");
	assert_bad_size("5 ", "invalid size");
	assert_bad_size("0x10", "invalid size");
	assert_bad_size("1..2", "invalid size");
	assert_bad_size("1e", "invalid size");
	assert_bad_size("1Mii", "invalid size");
	assert_bad_size("1.5", "not a whole number");
	assert_bad_size("1e-3", "not a whole number");
	assert_bad_size("1.1Ki", "not a whole number");
	assert_bad_size("1.000000000000000000000001", "more than 20 significant digits");
	assert_bad_size("18446744073709551616", "too large");
	assert_bad_size("1e30", "too large");
	assert_bad_size("17179869184Gi", "too large");
	assert_bad_size("123456789012345678901234", "more than 20 significant digits");
	assert_bad_size("0", "out of range");
}

static void counts_take_no_units(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(mb_parse_count("--sub-group-size", "1e9", 1, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1000000000);
	assert_int_equal(mb_parse_count("--sub-group-size", "4K", 1, UINT64_MAX, &v), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "invalid number '4K'"));
	assert_int_equal(mb_parse_count("--stage", "4", 1, 3, &v), -MB_EINPUT);
	assert_string_equal(mb_errmsg(), "--stage: number '4' is out of range (1 to 3)");
	assert_int_equal(mb_parse_count("--layers", "2.5", 1, 10, &v), -MB_EINPUT);
	assert_string_equal(mb_errmsg(), "--layers: number '2.5' is not a whole number");
}

static void size_lists(void **state)
{
	uint64_t v[64];
	size_t n;

	(void)state;
	/* the default of bandwidth: 4 KiB to 1 GiB, doubling: 19 sizes */
	assert_int_equal(mb_parse_size_list("--sizes", "4Ki..1Gi", 1, UINT64_MAX, v, 64, &n), 0);
	assert_int_equal(n, 19);
	assert_int_equal(v[0], 4096);
	assert_int_equal(v[1], 8192);
	assert_int_equal(v[18], 1ull << 30);
	/* items and ranges, in the order given, each once; B only when reached by doubling */
	assert_int_equal(mb_parse_size_list("--sizes", "256Mi,1Ki..5Ki,2Ki,1e6", 1, UINT64_MAX, v,
					    64, &n),
			 0);
	assert_int_equal(n, 5);
	assert_true(v[0] == 256u << 20 && v[1] == 1024 && v[2] == 2048 && v[3] == 4096 &&
		    v[4] == 1000000);
	/* a range up to the largest size does not wrap */
	assert_int_equal(mb_parse_size_list("--sizes", "9223372036854775808..18446744073709551615",
					    1, UINT64_MAX, v, 64, &n),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(mb_parse_size_list("--sizes", "4Ki..2Ki", 1, UINT64_MAX, v, 64, &n),
			 -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "runs backwards"));
	assert_int_equal(mb_parse_size_list("--sizes", "4Ki,,8Ki", 1, UINT64_MAX, v, 64, &n),
			 -MB_EINPUT);
	assert_int_equal(mb_parse_size_list("--sizes", "4Ki..", 1, UINT64_MAX, v, 64, &n),
			 -MB_EINPUT);
	assert_int_equal(mb_parse_size_list("--sizes", "0", 1, UINT64_MAX, v, 64, &n), -MB_EINPUT);
	assert_int_equal(mb_parse_size_list("--sizes", "1..1Ti", 1, UINT64_MAX, v, 8, &n),
			 -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "more than 8 sizes"));
}

static void durations(void **state)
{
	uint64_t s = 0;

	(void)state;
	assert_true(!mb_parse_duration("--time-budget", "90s", &s) && s == 90);
	assert_true(!mb_parse_duration("--time-budget", "10m", &s) && s == 600);
	assert_true(!mb_parse_duration("--time-budget", "2h", &s) && s == 7200);
	assert_true(!mb_parse_duration("--time-budget", "45", &s) && s == 45);
	assert_int_equal(mb_parse_duration("--time-budget", "10 m", &s), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "invalid duration '10 m'"));
	assert_int_equal(mb_parse_duration("--time-budget", "0s", &s), -MB_EINPUT);
	assert_int_equal(mb_parse_duration("--time-budget", "1.5h", &s), -MB_EINPUT);
	assert_int_equal(mb_parse_duration("--time-budget", "3d", &s), -MB_EINPUT);
	assert_int_equal(mb_parse_duration("--time-budget", "8000h", &s), -MB_EINPUT);
	assert_int_equal(mb_parse_duration("--time-budget", "-5s", &s), -MB_EINPUT);
}

static void printing(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(mb_fmt_bytes(buf, sizeof(buf), 14533263360ull), "14.5 GB");
	assert_string_equal(mb_fmt_bytes(buf, sizeof(buf), 999), "999 B");
	assert_string_equal(mb_fmt_bytes(buf, sizeof(buf), 999999), "1.00 MB");
	assert_string_equal(mb_fmt_count(buf, sizeof(buf), 4022468096ull), "4.02 B");
	assert_string_equal(mb_fmt_count(buf, sizeof(buf), 3633315840ull), "3.63 B");
	assert_string_equal(mb_fmt_count(buf, sizeof(buf), 12), "12");
	assert_string_equal(mb_fmt_bytes_iec(buf, sizeof(buf), 536870912), "512 MiB");
	assert_string_equal(mb_fmt_bytes_iec(buf, sizeof(buf), 1536), "1.50 KiB");
	assert_string_equal(mb_fmt_gib(buf, sizeof(buf), 12981807350ull), "12.09 GiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_with_units), cmocka_unit_test(scientific_notation),
		cmocka_unit_test(malformed_sizes),  cmocka_unit_test(counts_take_no_units),
		cmocka_unit_test(size_lists),	    cmocka_unit_test(durations),
		cmocka_unit_test(printing),
	};

	return cmocka_run_group_tests_name("num", tests, NULL, NULL);
}
