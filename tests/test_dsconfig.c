/*
 * DeepSpeed configs as option settings: the files of tests/data/ds, where
 * each value is, "auto", the keys not read, and every bad input with its
 * FILE:LINE:COL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mb_dsconfig.h"
#include "mb_err.h"
#include "mb_json.h"

/* The setting for KEY, or NULL. */
static const struct mb_dsconfig_setting *setting(const struct mb_dsconfig *ds, const char *key)
{
	size_t i;

	for (i = 0; i < ds->nsettings; i++)
		if (!strcmp(ds->settings[i].key, key))
			return &ds->settings[i];
	return NULL;
}

static void assert_setting(const struct mb_dsconfig *ds, const char *key, const char *option,
			   const char *value, size_t line, size_t col)
{
	const struct mb_dsconfig_setting *s = setting(ds, key);

	if (!s)
		fail_msg("no setting for '%s'", key);
	if (option)
		assert_string_equal(s->option, option);
	else
		assert_null(s->option);
	assert_false(s->is_auto);
	assert_string_equal(s->value, value);
	assert_int_equal(s->line, line);
	assert_int_equal(s->col, col);
}

static void assert_auto(const struct mb_dsconfig *ds, const char *key, const char *option,
			const char *value)
{
	const struct mb_dsconfig_setting *s = setting(ds, key);

	if (!s)
		fail_msg("no setting for '%s'", key);
	assert_true(s->is_auto);
	if (option)
		assert_string_equal(s->option, option);
	else
		assert_null(s->option);
	assert_string_equal(s->value, value);
}

static int parse(struct mb_dsconfig *ds, const char *text)
{
	return mb_dsconfig_parse(ds, text, strlen(text), "ds.json");
}

/* Parse TEXT, which must fail as bad input with exactly the message WANT. */
static void assert_refused(const char *text, const char *want)
{
	struct mb_dsconfig ds;

	assert_int_equal(parse(&ds, text), -MB_EINPUT);
	assert_string_equal(mb_errmsg(), want);
	mb_dsconfig_release(&ds);
}

static void stage3_file(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/stage3.json"), 0);
	assert_string_equal(ds.source, "tests/data/ds/stage3.json");
	assert_int_equal(ds.nsettings, 6);
	assert_setting(&ds, "train_micro_batch_size_per_gpu", "micro-batch", "2", 2, 37);
	assert_setting(&ds, "gradient_clipping", "grad-clip", "0.5", 3, 24);
	assert_setting(&ds, "zero_optimization.stage", "stage", "3", 8, 14);
	assert_setting(&ds, "zero_optimization.sub_group_size", "sub-group-size", "2e4", 9, 23);
	assert_setting(&ds, "zero_optimization.reduce_bucket_size", "reduce-bucket-size", "1e5", 10,
		       27);
	assert_setting(&ds, "zero_optimization.offload_optimizer.pin_memory", "pin-memory", "off",
		       13, 21);
	/* in the file's order */
	assert_string_equal(ds.settings[0].key, "train_micro_batch_size_per_gpu");
	assert_string_equal(ds.settings[5].key, "zero_optimization.offload_optimizer.pin_memory");
	assert_string_equal(ds.unused, "");
	assert_int_equal(ds.nunused, 0);
	mb_dsconfig_release(&ds);
}

static void stage1_and_2_files(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/stage1.json"), 0);
	assert_setting(&ds, "zero_optimization.stage", "stage", "1", 8, 14);
	assert_setting(&ds, "zero_optimization.reduce_bucket_size", "reduce-bucket-size", "5e8", 9,
		       27);
	assert_setting(&ds, "zero_optimization.offload_optimizer.pin_memory", "pin-memory", "on",
		       12, 21);
	assert_setting(&ds, "gradient_clipping", "grad-clip", "1.0", 3, 24);
	assert_null(setting(&ds, "bf16.enabled")); /* true: nothing to change */
	assert_int_equal(ds.nunused, 0);
	mb_dsconfig_release(&ds);

	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/stage2.json"), 0);
	assert_setting(&ds, "zero_optimization.stage", "stage", "2", 9, 14);
	assert_string_equal(ds.unused,
			    "gradient_accumulation_steps, zero_optimization.overlap_comm, "
			    "zero_optimization.contiguous_gradients");
	assert_int_equal(ds.nunused, 3);
	mb_dsconfig_release(&ds);
}

static void auto_values(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/auto.json"), 0);
	assert_auto(&ds, "train_micro_batch_size_per_gpu", "micro-batch", "");
	assert_auto(&ds, "gradient_clipping", "grad-clip", "");
	assert_auto(&ds, "zero_optimization.reduce_bucket_size", "reduce-bucket-size", "");
	assert_auto(&ds, "bf16.enabled", NULL, "true");
	assert_auto(&ds, "fp16.enabled", NULL, "false");
	assert_setting(&ds, "zero_optimization.stage", "stage", "3", 13, 14);
	assert_setting(&ds, "zero_optimization.sub_group_size", "sub-group-size", "1e9", 17, 23);
	/* "auto" on a key muonbench does not read: not used, like any other value */
	assert_string_equal(ds.unused, "train_batch_size, gradient_accumulation_steps, "
				       "zero_optimization.stage3_prefetch_bucket_size, "
				       "zero_optimization.stage3_param_persistence_threshold");
	mb_dsconfig_release(&ds);

	assert_int_equal(parse(&ds, "{\"zero_optimization\": {\"stage\": \"auto\", "
				    "\"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": "
				    "\"auto\"}}}"),
			 0);
	assert_auto(&ds, "zero_optimization.stage", "stage", "");
	assert_auto(&ds, "zero_optimization.offload_optimizer.pin_memory", "pin-memory", "");
	mb_dsconfig_release(&ds);
}

static void unknown_keys_are_listed(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/unknown-keys.json"), 0);
	/* a section muonbench does not read is one key, not its members */
	assert_string_equal(ds.unused,
			    "steps_per_print, wall_clock_breakdown, optimizer, scheduler, "
			    "fp16.loss_scale, zero_optimization.allgather_partitions, "
			    "zero_optimization.offload_optimizer.buffer_count, "
			    "zero_optimization.offload_param");
	assert_int_equal(ds.nunused, 8);
	assert_int_equal(ds.nsettings, 2);
	assert_setting(&ds, "zero_optimization.stage", "stage", "2", 17, 14);
	mb_dsconfig_release(&ds);

	/* a key with a dot is not a path; control characters do not reach stderr */
	assert_int_equal(parse(&ds, "{\"zero_optimization.stage\": 0, \"a\\nb\": 1}"), 0);
	assert_string_equal(ds.unused, "zero_optimization.stage, a?b");
	assert_int_equal(ds.nsettings, 0);
	mb_dsconfig_release(&ds);
}

static void bf16_off_is_fp32_momentum(void **state)
{
	const struct mb_dsconfig_setting *s;
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/bf16-off.json"), 0);
	assert_setting(&ds, "bf16.enabled", "momentum-dtype", "fp32", 3, 16);
	s = setting(&ds, "bf16.enabled");
	assert_non_null(s->note);
	assert_non_null(strstr(s->note, "fp32, not bf16 (--momentum-dtype fp32)"));
	mb_dsconfig_release(&ds);
}

/* Empty, absent and null set nothing; an empty object is a config too. */
static void absent_and_null(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(parse(&ds, "{}"), 0);
	assert_int_equal(ds.nsettings, 0);
	assert_int_equal(ds.nunused, 0);
	mb_dsconfig_release(&ds);
	assert_int_equal(parse(&ds, "{\"zero_optimization\": null, \"gradient_clipping\": null, "
				    "\"bf16\": {\"enabled\": null}}"),
			 0);
	assert_int_equal(ds.nsettings, 0);
	assert_int_equal(ds.nunused, 0);
	mb_dsconfig_release(&ds);
	assert_int_equal(parse(&ds, "{\"zero_optimization\": {}, \"fp16\": {\"enabled\": false}, "
				    "\"bf16\": {\"enabled\": true}}"),
			 0);
	assert_int_equal(ds.nsettings, 0);
	mb_dsconfig_release(&ds);
}

/* The file's own digits go to the option parser, whatever JSON allows. */
static void numbers_keep_their_digits(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(parse(&ds,
			       "{\"train_micro_batch_size_per_gpu\":1E1,\n"
			       "\"gradient_clipping\": -0.25,\n"
			       " \"zero_optimization\": {\"sub_group_size\": 1.5e9,"
			       "\"stage\": 2.0, \"reduce_bucket_size\": 18446744073709551616}}"),
			 0);
	assert_setting(&ds, "train_micro_batch_size_per_gpu", "micro-batch", "1E1", 1, 35);
	assert_setting(&ds, "gradient_clipping", "grad-clip", "-0.25", 2, 22);
	assert_setting(&ds, "zero_optimization.sub_group_size", "sub-group-size", "1.5e9", 3, 42);
	assert_setting(&ds, "zero_optimization.stage", "stage", "2", 3, 57);
	assert_setting(&ds, "zero_optimization.reduce_bucket_size", "reduce-bucket-size",
		       "18446744073709551616", 3, 84);
	mb_dsconfig_release(&ds);
	assert_refused("{\"gradient_clipping\": 1"
		       "000000000000000000000000000000000000000000000000000000000000000}",
		       "ds.json:1:23: gradient_clipping: the number 1000000000000000000000000000000"
		       "000000000... is longer than 63 characters");
}

/* A key whose name is escaped is that key, and its line is still right. */
static void escaped_keys_and_lines(void **state)
{
	struct mb_dsconfig ds;

	(void)state;
	assert_int_equal(parse(&ds, "{\n  \"\\u007a\\u0065ro_optimization\": {\n\n"
				    "\t\"st\\u0061ge\": [1, {\"x\": 2}] ,\n"
				    "    \"stage\": 1 }}"),
			 -MB_EINPUT);
	assert_string_equal(mb_errmsg(), "ds.json:4:16: zero_optimization.stage: must be 1, 2 or "
					 "3, got a list");
	mb_dsconfig_release(&ds);
	assert_int_equal(parse(&ds, "{\"optimizer\": {\"params\": [1, 2, {\"stage\": 0}]},\n"
				    "\"zero_optimization\": {\"x\": [[]], \"st\\u0061ge\": 3}}"),
			 0);
	assert_setting(&ds, "zero_optimization.stage", "stage", "3", 2, 48);
	mb_dsconfig_release(&ds);
}

static void bad_values(void **state)
{
	(void)state;
	assert_refused("{\"zero_optimization\": {\"stage\": 4}}",
		       "ds.json:1:33: zero_optimization.stage: must be 1, 2 or 3, got 4");
	assert_refused("{\"zero_optimization\": {\"stage\": 2.5}}",
		       "ds.json:1:33: zero_optimization.stage: must be 1, 2 or 3, got 2.5");
	assert_refused("{\"zero_optimization\": {\"stage\": \"3\"}}",
		       "ds.json:1:33: zero_optimization.stage: must be 1, 2 or 3, got a string");
	assert_refused("{\"zero_optimization\": 3}",
		       "ds.json:1:23: zero_optimization: must be an object, got a number");
	assert_refused("{\"bf16\": true}", "ds.json:1:10: bf16: must be an object, got a boolean");
	assert_refused("{\"bf16\": {\"enabled\": \"yes\"}}",
		       "ds.json:1:22: bf16.enabled: must be true or false, got a string");
	assert_refused("{\"fp16\": {\"enabled\": 1}}",
		       "ds.json:1:22: fp16.enabled: must be true or false, got a number");
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {\"pin_memory\": 1}}}",
		       "ds.json:1:60: zero_optimization.offload_optimizer.pin_memory: must be "
		       "true or false, got a number");
	assert_refused("{\"gradient_clipping\": \"1.0\"}",
		       "ds.json:1:23: gradient_clipping: must be a number, got a string");
	assert_refused("{\"train_micro_batch_size_per_gpu\": true}",
		       "ds.json:1:36: train_micro_batch_size_per_gpu: must be a number, got a "
		       "boolean");
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"gpu\"}}}",
		       "ds.json:1:56: zero_optimization.offload_optimizer.device: must be \"cpu\" "
		       "(DeepSpeed's cpu, nvme or none), got \"gpu\"");
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"auto\"}}}",
		       "ds.json:1:56: zero_optimization.offload_optimizer.device: must be \"cpu\" "
		       "(DeepSpeed's cpu, nvme or none), got \"auto\"");
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": null, "
		       "\"device\": 1}}}",
		       "ds.json:1:72: zero_optimization.offload_optimizer.device: given twice "
		       "(first at line 1)");
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"none\"}}}",
		       "ds.json:1:56: zero_optimization.offload_optimizer.device: \"none\" is not "
		       "replayed: muonbench replays the optimizer offloaded to the CPU (\"cpu\"), "
		       "not kept on the accelerator");
	/* DeepSpeed's offload_optimizer.device defaults to "none": no CPU offload */
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {}}}",
		       "ds.json:1:45: zero_optimization.offload_optimizer: no \"device\": "
		       "DeepSpeed's default is \"none\", the optimizer kept on the accelerator, "
		       "which is not replayed: muonbench replays the optimizer offloaded to the "
		       "CPU (\"device\": \"cpu\")");
	assert_refused("{\"zero_optimization\": {\"offload_optimizer\": {\"device\": null}}}",
		       "ds.json:1:45: zero_optimization.offload_optimizer: no \"device\": "
		       "DeepSpeed's default is \"none\", the optimizer kept on the accelerator, "
		       "which is not replayed: muonbench replays the optimizer offloaded to the "
		       "CPU (\"device\": \"cpu\")");
	assert_refused("[]", "ds.json: a DeepSpeed config must be a JSON object, got a list");
	assert_refused("{\"zero_optimization\": {\"stage\": 3,}}",
		       "ds.json:1:35: expected '\"' to start a key, found '}'");
}

/* The bad files that tests/cli.sh gives muonbench, and their messages. */
static void bad_files(void **state)
{
	static const struct {
		const char *file, *msg;
	} bad[] = {
		{ "bad-type.json", "tests/data/ds/bad-type.json:4:23: "
				   "zero_optimization.sub_group_size: must be a number, got a "
				   "string" },
		{ "stage0.json",
		  "tests/data/ds/stage0.json:3:14: zero_optimization.stage: 0 is not "
		  "replayed: muonbench replays ZeRO-1, 2 and 3 with the optimizer "
		  "offloaded to the CPU" },
		{ "nvme.json", "tests/data/ds/nvme.json:5:17: "
			       "zero_optimization.offload_optimizer.device: \"nvme\" is not "
			       "replayed: muonbench replays the optimizer offloaded to the CPU "
			       "(\"cpu\"), not to NVMe" },
		{ "no-device.json",
		  "tests/data/ds/no-device.json:4:26: zero_optimization.offload_optimizer: no "
		  "\"device\": DeepSpeed's default is \"none\", the optimizer kept on the "
		  "accelerator, which is not replayed: muonbench replays the optimizer "
		  "offloaded to the CPU (\"device\": \"cpu\")" },
		{ "fp16.json",
		  "tests/data/ds/fp16.json:3:16: fp16.enabled: fp16 training is not "
		  "replayed: muonbench replays bf16 training (bf16.enabled), with bf16 "
		  "params and grads" },
	};
	struct mb_dsconfig ds;
	char path[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "tests/data/ds/%s", bad[i].file);
		assert_int_equal(mb_dsconfig_load_file(&ds, path), -MB_EINPUT);
		assert_string_equal(mb_errmsg(), bad[i].msg);
		mb_dsconfig_release(&ds);
	}
	/* an impossible value the option parser refuses: the module passes it on */
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/bad-value.json"), 0);
	assert_setting(&ds, "train_micro_batch_size_per_gpu", "micro-batch", "0", 2, 37);
	mb_dsconfig_release(&ds);
	assert_int_equal(mb_dsconfig_load_file(&ds, "tests/data/ds/no-such.json"), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "cannot open 'tests/data/ds/no-such.json': No such file or directory");
	mb_dsconfig_release(&ds);
}

/* mb_json_where finds every value of a tree, and nothing outside it. */
static void json_where(void **state)
{
	static const char text[] = "{\"a\": [1, \"x\\\"y\", {\"b\": null}],\n \"c\": -2.5e3 , "
				   "\"a\": {}}";
	struct mb_json_span at;
	cJSON *root, *other;

	(void)state;
	assert_int_equal(mb_json_parse(text, strlen(text), "t", &root), 0);
	assert_true(mb_json_where(text, strlen(text), root, root, &at));
	assert_int_equal(at.start, 0);
	assert_int_equal(at.end, strlen(text));
	assert_true(mb_json_where(text, strlen(text), root, root->child->child->next, &at));
	assert_int_equal(at.end - at.start, 6);
	assert_memory_equal(text + at.start, "\"x\\\"y\"", 6);
	assert_true(mb_json_where(text, strlen(text), root, root->child->child->next->next->child,
				  &at));
	assert_memory_equal(text + at.start, "null", 4);
	assert_true(mb_json_where(text, strlen(text), root, root->child->next, &at));
	assert_memory_equal(text + at.start, "-2.5e3", at.end - at.start);
	assert_int_equal(at.line, 2);
	assert_int_equal(at.col, 7);
	assert_true(mb_json_where(text, strlen(text), root, root->child->next->next, &at));
	assert_memory_equal(text + at.start, "{}", 2);
	other = cJSON_CreateNull();
	assert_false(mb_json_where(text, strlen(text), root, other, &at));
	cJSON_Delete(other);
	cJSON_Delete(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stage3_file),
		cmocka_unit_test(stage1_and_2_files),
		cmocka_unit_test(auto_values),
		cmocka_unit_test(unknown_keys_are_listed),
		cmocka_unit_test(bf16_off_is_fp32_momentum),
		cmocka_unit_test(absent_and_null),
		cmocka_unit_test(numbers_keep_their_digits),
		cmocka_unit_test(escaped_keys_and_lines),
		cmocka_unit_test(bad_values),
		cmocka_unit_test(bad_files),
		cmocka_unit_test(json_where),
	};

	return cmocka_run_group_tests_name("dsconfig", tests, NULL, NULL);
}
