/*
 * Tuning files: written and read back, bad ones refused; CLBlast's tuner
 * output read as the kernel and parameters CLBlastOverrideParameters takes
 * (real files from clblast-utils 1.5.3 on PoCL); the cache found by the
 * device's key; the fallback levels (exact, architecture, family, none) on
 * fake device keys, against the shipped tuning and planted cache files;
 * cached verdicts; and parameters applied to the default device, an
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
#include "mb_tuning_cl.h"

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
	REFUSED("{\"muonbench_tuning\": 1, \"platform\": \"p\", \"device\": \"d\", \"driver\": "
		"\"v\", \"tuned_utc\": \"\", \"gemm\": \"\", \"kernels\": {}, \"ns_gemm\": 7}",
		"'ns_gemm' must be a string");
#undef REFUSED

	/* tune --ns's tiles: kept beside CLBlast's kernels, or alone */
	snprintf(t.ns_gemm, sizeof(t.ns_gemm), "262144:64x64x32/128/2,128x128x32/256/4");
	snprintf(t.ns_gemm_tuned_utc, sizeof(t.ns_gemm_tuned_utc), "2026-12-07T03:00:00Z");
	snprintf(t.ns_gemm_at, sizeof(t.ns_gemm_at), "fp16 on 2560x9728");
	t.nkernels = 0;
	text = mb_tuning_format(&t);
	assert_non_null(text);
	assert_int_equal(mb_tuning_parse(text, strlen(text), "t.json", &back), 0);
	free(text);
	assert_int_equal(back.nkernels, 0);
	assert_string_equal(back.ns_gemm, t.ns_gemm);
	assert_string_equal(back.ns_gemm_tuned_utc, t.ns_gemm_tuned_utc);
	assert_string_equal(back.ns_gemm_at, t.ns_gemm_at);
}

static void cache_by_key(void **state)
{
	char dir[] = "/tmp/muonbench-test-XXXXXX", path[4096], source[4096];
	struct mb_tuning t = { 0 }, found;
	enum mb_tuning_match match;
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
	assert_int_equal(mb_tuning_find(&cl.info, &found, source, sizeof(source), &match), 1);
	assert_int_equal(match, MB_TUNING_EXACT);
	assert_string_equal(source, path);
	assert_string_equal(found.kernel[0].name, "Copy");
	/* a cached file of another driver is no exact match (at best one of the family) */
	snprintf(t.driver, sizeof(t.driver), "another driver");
	assert_int_equal(mb_tuning_save(path, &t), 0);
	assert_true(mb_tuning_find(&cl.info, &found, source, sizeof(source), &match) >= 0);
	assert_true(match != MB_TUNING_EXACT || strcmp(source, path));
	setenv("MUONBENCH_SHIPPED_TUNINGS", "off", 1);
	assert_int_equal(mb_tuning_find(&cl.info, &found, source, sizeof(source), &match), 1);
	assert_int_equal(match, MB_TUNING_FAMILY);
	unsetenv("MUONBENCH_SHIPPED_TUNINGS");
	unlink(path);
	path[strlen(path) - strlen(strrchr(path, '/'))] = '\0';
	rmdir(path);
	rmdir(dir);
	unsetenv("XDG_CACHE_HOME");
}

/* A PoCL CPU device as the shipped tuning's key has it, NAME and ARCH aside. */
static struct mb_cl_device_info pocl_cpu(const char *name, const char *arch, const char *driver)
{
	struct mb_cl_device_info d = { .type = "CPU" };

	snprintf(d.platform_name, sizeof(d.platform_name), "Portable Computing Language");
	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.arch, sizeof(d.arch), "%s", arch);
	snprintf(d.driver, sizeof(d.driver), "%s", driver);
	return d;
}

/* What --tuning auto finds for D: its match, and the source's name into SOURCE. */
static enum mb_tuning_match found_for(const struct mb_cl_device_info *d, char *source, size_t len)
{
	enum mb_tuning_match match;
	struct mb_tuning t;

	assert_true(mb_tuning_find(d, &t, source, len, &match) >= 0);
	return match;
}

static void fallback_levels(void **state)
{
	char dir[] = "/tmp/muonbench-test-XXXXXX", path[4096], source[4096], arch[64];
	struct mb_cl_device_info d;
	struct mb_tuning t;

	(void)state;
	assert_non_null(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1); /* an empty cache: the shipped tunings alone */
	/* the shipped tuning's own device: exact */
	d = pocl_cpu("pthread-haswell-AMD EPYC", "haswell", "3.1+debian");
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_EXACT);
	assert_string_equal(source, "shipped tuning/pocl-3.1-haswell-amd-epyc.json");
	/* another CPU model of the same LLVM target and driver: architecture */
	d = pocl_cpu("pthread-haswell-Intel(R) Xeon(R) CPU E5-2690 v3", "haswell", "3.1+debian");
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_ARCHITECTURE);
	assert_string_equal(source, "shipped tuning/pocl-3.1-haswell-amd-epyc.json");
	/* the same target under another driver version, or another target: family */
	d = pocl_cpu("pthread-haswell-AMD EPYC", "haswell", "5.0");
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_FAMILY);
	d = pocl_cpu("pthread-fakecpu-Fake CPU", "fakecpu", "3.1+debian");
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_FAMILY);
	/* another platform, or a GPU of PoCL's: nothing, CLBlast's defaults */
	snprintf(d.platform_name, sizeof(d.platform_name), "NVIDIA CUDA");
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_NONE);
	d = pocl_cpu("pthread-fakecpu-Fake CPU", "fakecpu", "3.1+debian");
	d.type = "GPU";
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_NONE);
	/* the shipped ones can be left out */
	d = pocl_cpu("pthread-haswell-AMD EPYC", "haswell", "3.1+debian");
	setenv("MUONBENCH_SHIPPED_TUNINGS", "off", 1);
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_NONE);
	unsetenv("MUONBENCH_SHIPPED_TUNINGS");
	/* a cache file of another device of the same architecture beats a shipped family one */
	d = pocl_cpu("pthread-fakecpu-Fake CPU", "fakecpu", "3.1+debian");
	memset(&t, 0, sizeof(t));
	mb_tuning_set_key(&t, &d);
	snprintf(t.device, sizeof(t.device), "pthread-fakecpu-Another Fake CPU");
	mb_tuning_put(
		&t, &(struct mb_tuning_kernel){
			    .name = "Copy", .nparams = 1, .param = { "COPY_VW" }, .value = { 4 } });
	snprintf(path, sizeof(path), "%s/muonbench/clblast-another.json", dir);
	assert_int_equal(mb_tuning_save(path, &t), 0);
	assert_int_equal(found_for(&d, source, sizeof(source)), MB_TUNING_ARCHITECTURE);
	assert_string_equal(source, path);
	/* verdicts: none, then the last one recorded */
	assert_int_equal(mb_tuning_verdict(&d, &t, path), -1);
	assert_int_equal(mb_tuning_record_verdict(&d, &t, path, false), 0);
	assert_int_equal(mb_tuning_verdict(&d, &t, path), 0);
	assert_int_equal(mb_tuning_record_verdict(&d, &t, path, true), 0);
	assert_int_equal(mb_tuning_verdict(&d, &t, path), 1);
	/* for another device, or another tuning of the same name, nothing is known */
	d = pocl_cpu("pthread-other-Other CPU", "other", "3.1+debian");
	assert_int_equal(mb_tuning_verdict(&d, &t, path), -1);
	d = pocl_cpu("pthread-fakecpu-Fake CPU", "fakecpu", "3.1+debian");
	snprintf(t.tuned_utc, sizeof(t.tuned_utc), "2030-01-01T00:00:00Z");
	assert_int_equal(mb_tuning_verdict(&d, &t, path), -1);
	mb_cl_pocl_cpu("pthread-skylake-avx512-AMD EPYC", arch, sizeof(arch));
	assert_string_equal(arch, "skylake-avx512");
	mb_cl_pocl_cpu("cpu-x86-64-v3-Intel(R) Xeon(R)", arch, sizeof(arch));
	assert_string_equal(arch, "x86-64-v3");
	mb_cl_pocl_cpu("NVIDIA H200", arch, sizeof(arch));
	assert_string_equal(arch, "");
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		fail_msg("cannot remove '%s'", dir);
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
		cmocka_unit_test(tuner_output),		 cmocka_unit_test(round_trip_and_bad_files),
		cmocka_unit_test(cache_by_key),		 cmocka_unit_test(fallback_levels),
		cmocka_unit_test(applied_to_the_device),
	};

	return cmocka_run_group_tests(tests, open_device, close_device);
}
