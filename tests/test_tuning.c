/*
 * Tuning files: written and read back, bad ones refused; CLBlast's tuner
 * output read as the kernel and parameters CLBlastOverrideParameters takes
 * (real files from clblast-utils 1.5.3 on PoCL); the cache found by the
 * device's key only; and parameters applied to the default device, an
 * incomplete set refused with the kernel's name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mb_err.h"
#include "mb_tuning.h"

#define TUNER "tests/data/tuner/"

#include "device.h"

static size_t value_of(const struct mb_tuning_kernel *k, const char *param)
{
	size_t i;

	for (i = 0; i < k->nparams; i++)
		if (!strcmp(k->param[i], param))
			return k->value[i];
	fail_msg("no parameter %s in %s", param, k->name);
	return 0;
}

static void tuner_output(void **state)
{
	struct mb_tuning_kernel k;
	char gemm[64];
	double ms;

	(void)state;
	assert_int_equal(mb_tuning_read_tuner(TUNER "clblast_xgemm_1_32.json", &k, &ms, gemm,
					      sizeof(gemm)),
			 0);
	/* PRECISION is the tuner's, not a kernel parameter: 16 of the 17 remain */
	assert_string_equal(k.name, "Xgemm");
	assert_int_equal(k.nparams, 16);
	assert_true(value_of(&k, "MWG") == 64 && value_of(&k, "VWM") == 4);
	assert_true(ms > 126 && ms < 127);
	assert_string_equal(gemm, "1024x1024x1024");
	assert_int_equal(mb_tuning_read_tuner(TUNER "clblast_xgemm_direct_1_32.json", &k, &ms, gemm,
					      sizeof(gemm)),
			 0);
	assert_string_equal(k.name, "XgemmDirect");
	assert_int_equal(k.nparams, 10);
	assert_int_equal(
		mb_tuning_read_tuner(TUNER "clblast_copy_32.json", &k, &ms, gemm, sizeof(gemm)), 0);
	assert_string_equal(k.name, "Copy");
	assert_int_equal(value_of(&k, "COPY_DIMX"), 32);
	assert_string_equal(gemm, "1024x1024"); /* the copy tuners take no k */
	assert_int_equal(mb_tuning_read_tuner(TUNER "clblast_gemm_routine_32.json", &k, &ms, gemm,
					      sizeof(gemm)),
			 0);
	assert_string_equal(k.name, "GemmRoutine");
	assert_int_equal(value_of(&k, "XGEMM_MIN_INDIRECT_SIZE"), 1984);
	/* a single-size routine comparison has no parameters to apply */
	assert_int_equal(mb_tuning_read_tuner(TUNER "clblast_gemm_routine_single_size_32.json", &k,
					      &ms, gemm, sizeof(gemm)),
			 -MB_EINPUT);
}

static void round_trip_and_bad_files(void **state)
{
	struct mb_tuning t = { 0 }, back;
	struct mb_tuning_kernel k;
	char gemm[64], *text;
	double ms;

	(void)state;
	mb_tuning_set_key(&t, &cl.info);
	snprintf(t.tuned_utc, sizeof(t.tuned_utc), "2026-11-30T06:00:00Z");
	snprintf(t.gemm, sizeof(t.gemm), "256x256x768");
	assert_int_equal(mb_tuning_read_tuner(TUNER "clblast_xgemm_1_32.json", &k, &ms, gemm,
					      sizeof(gemm)),
			 0);
	mb_tuning_put(&t, &k);
	mb_tuning_put(&t, &k); /* replaced, not added twice */
	assert_int_equal(t.nkernels, 1);
	text = mb_tuning_format(&t);
	assert_non_null(text);
	assert_int_equal(mb_tuning_parse(text, strlen(text), "t.json", &back), 0);
	free(text);
	assert_true(mb_tuning_matches(&back, &cl.info));
	assert_int_equal(back.nkernels, 1);
	assert_memory_equal(&back.kernel[0], &t.kernel[0], sizeof(k));
	snprintf(back.driver, sizeof(back.driver), "another driver");
	assert_false(mb_tuning_matches(&back, &cl.info));

#define REFUSED(json, why)                                                             \
	do {                                                                           \
		assert_int_equal(mb_tuning_parse(json, strlen(json), "t.json", &back), \
				 -MB_EINPUT);                                          \
		if (!strstr(mb_errmsg(), why))                                         \
			fail_msg("got \"%s\", want \"%s\"", mb_errmsg(), why);         \
	} while (0)
	REFUSED("{\"kernels\": {}}", "not a muonbench tuning file");
	REFUSED("{\"muonbench_tuning\": 2}", "tuning file version 2");
	REFUSED("{\"muonbench_tuning\": 1, \"platform\": \"p\"}", "'device' must be a string");
	REFUSED("{\"muonbench_tuning\": 1, \"platform\": \"p\", \"device\": \"d\", \"driver\": "
		"\"v\", \"tuned_utc\": \"\", \"gemm\": \"\", \"kernels\": {\"Xgemm\": {\"MWG\": "
		"-64}}}",
		"Xgemm.MWG must be a whole number");
	REFUSED("{\"muonbench_tuning\": 1, \"platform\": \"p\", \"device\": \"d\", \"driver\": "
		"\"v\", \"tuned_utc\": \"\", \"gemm\": \"\", \"kernels\": {}}",
		"'kernels' must be an object of CLBlast kernels");
	REFUSED("{\"muonbench_tuning\": 1,", "t.json:1:");
#undef REFUSED
}

static void cache_by_key(void **state)
{
	char dir[] = "/tmp/muonbench-test-XXXXXX", path[4096], source[4096];
	struct mb_tuning t = { 0 }, found;
	struct mb_tuning_kernel k;
	char gemm[64];
	double ms;

	(void)state;
	assert_non_null(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
	mb_tuning_cache_path(&cl.info, path, sizeof(path));
	assert_int_equal(strncmp(path, dir, strlen(dir)), 0);
	assert_non_null(strstr(path, "/muonbench/clblast-"));
	mb_tuning_set_key(&t, &cl.info);
	assert_int_equal(
		mb_tuning_read_tuner(TUNER "clblast_copy_32.json", &k, &ms, gemm, sizeof(gemm)), 0);
	mb_tuning_put(&t, &k);
	assert_int_equal(mb_tuning_save(path, &t), 0);
	assert_int_equal(mb_tuning_find(&cl.info, &found, source, sizeof(source)), 1);
	assert_string_equal(source, path);
	assert_string_equal(found.kernel[0].name, "Copy");
	/* a cached file of another driver is not applied (a shipped one may be) */
	snprintf(t.driver, sizeof(t.driver), "another driver");
	assert_int_equal(mb_tuning_save(path, &t), 0);
	assert_true(mb_tuning_find(&cl.info, &found, source, sizeof(source)) == 0 ||
		    strcmp(source, path));
	unlink(path);
	path[strlen(path) - strlen(strrchr(path, '/'))] = '\0';
	rmdir(path);
	rmdir(dir);
	unsetenv("XDG_CACHE_HOME");
}

static void applied_to_the_device(void **state)
{
	struct mb_tuning t = { 0 };
	struct mb_tuning_kernel k;
	char gemm[64];
	double ms;

	(void)state;
	mb_tuning_set_key(&t, &cl.info);
	assert_int_equal(mb_tuning_read_tuner(TUNER "clblast_xgemm_1_32.json", &k, &ms, gemm,
					      sizeof(gemm)),
			 0);
	mb_tuning_put(&t, &k);
	assert_int_equal(mb_tuning_apply(&t, &cl), 0);
	/* every parameter must be given: one left out is refused, naming the kernel */
	t.kernel[0].nparams--;
	assert_int_equal(mb_tuning_apply(&t, &cl), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "tuning kernel 'Xgemm'"));
	assert_non_null(strstr(mb_errmsg(), "CLBlastOverrideParameters"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tuner_output),
		cmocka_unit_test(round_trip_and_bad_files),
		cmocka_unit_test(cache_by_key),
		cmocka_unit_test(applied_to_the_device),
	};

	return cmocka_run_group_tests(tests, open_device, close_device);
}
