/*
 * Model shapes: both config forms, the shipped models, the Muon/AdamW split,
 * --layers, and every bad input with its one-line error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mb_config.h"
#include "mb_embedded.h"
#include "mb_err.h"

static const struct mb_param *find(const struct mb_model *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->nparams; i++)
		if (!strcmp(m->params[i].name, name))
			return &m->params[i];
	return NULL;
}

static void assert_shape(const struct mb_model *m, const char *name, uint64_t rows, uint64_t cols,
			 int muon)
{
	const struct mb_param *p = find(m, name);

	if (!p)
		fail_msg("no parameter '%s'", name);
	assert_int_equal(p->rows, rows);
	assert_int_equal(p->cols, cols);
	assert_int_equal(p->muon, muon);
}

/* The check figure of docs/design.md ("The model"). */
static void qwen3_4b(void **state)
{
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 0), 0);
	assert_string_equal(m.name, "qwen3-4b");
	assert_int_equal(m.layers, 36);
	assert_int_equal(m.numel_total, 4022468096ull);
	assert_int_equal(m.numel_muon, 3633315840ull);
	assert_int_equal(m.numel_adamw, m.numel_total - m.numel_muon);
	assert_int_equal(m.nparams_muon, 36 * 7);
	/* embed, 36 x (7 matrices + q/k norm + 2 layer norms), final norm; tied head */
	assert_int_equal(m.nparams, 1 + 36 * 11 + 1);
	assert_shape(&m, "model.embed_tokens.weight", 151936, 2560, 0);
	assert_shape(&m, "model.layers.0.self_attn.q_proj.weight", 4096, 2560, 1);
	assert_shape(&m, "model.layers.0.self_attn.k_proj.weight", 1024, 2560, 1);
	assert_shape(&m, "model.layers.35.self_attn.v_proj.weight", 1024, 2560, 1);
	assert_shape(&m, "model.layers.35.self_attn.o_proj.weight", 2560, 4096, 1);
	assert_shape(&m, "model.layers.7.mlp.gate_proj.weight", 9728, 2560, 1);
	assert_shape(&m, "model.layers.7.mlp.down_proj.weight", 2560, 9728, 1);
	assert_shape(&m, "model.layers.7.self_attn.q_norm.weight", 128, 1, 0);
	assert_shape(&m, "model.norm.weight", 2560, 1, 0);
	assert_null(find(&m, "lm_head.weight"));
	assert_null(find(&m, "model.layers.36.mlp.up_proj.weight"));
	/* model order: embeddings first, the final norm last */
	assert_string_equal(m.params[0].name, "model.embed_tokens.weight");
	assert_string_equal(m.params[m.nparams - 1].name, "model.norm.weight");
	mb_model_release(&m);
}

static void untied_head_takes_adamw(void **state)
{
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-8b", 0), 0);
	assert_shape(&m, "lm_head.weight", 151936, 4096, 0);
	assert_string_equal(m.params[m.nparams - 1].name, "lm_head.weight");
	mb_model_release(&m);
	assert_int_equal(mb_config_load_builtin(&m, "llama-3.1-8b", 0), 0);
	/* Llama 3.1 8B: 8.03 B parameters, no q/k norms */
	assert_int_equal(m.numel_total, 8030261248ull);
	assert_null(find(&m, "model.layers.0.self_attn.q_norm.weight"));
	mb_model_release(&m);
}

static void every_builtin_loads(void **state)
{
	const char *want[] = { "tiny",	   "qwen3-0.6b",   "qwen3-1.7b", "qwen3-4b",
			       "qwen3-8b", "llama-3.1-8b", "uneven" };
	char names[512];
	struct mb_model m;
	size_t i;

	(void)state;
	mb_config_builtin_names(names, sizeof(names));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_non_null(strstr(names, want[i]));
		if (mb_config_load_builtin(&m, want[i], 0))
			fail_msg("%s: %s", want[i], mb_errmsg());
		assert_true(m.nparams_muon > 0);
		assert_int_equal(m.numel_muon + m.numel_adamw, m.numel_total);
		mb_model_release(&m);
	}
}

static void tiny_is_small(void **state)
{
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "tiny", 0), 0);
	assert_int_equal(m.layers, 2);
	assert_int_equal(m.nparams_muon, 14);
	assert_int_equal(m.numel_muon, 1572864);
	assert_int_equal(m.numel_total, 2098688);
	assert_shape(&m, "model.layers.1.mlp.down_proj.weight", 256, 768, 1);
	assert_shape(&m, "lm_head.weight", 1024, 256, 0);
	mb_model_release(&m);
}

/* uneven's layer 0 has a dense MLP its layer 1 lacks: a parameter list's layers need not match */
static void uneven_layers_differ(void **state)
{
	uint64_t per_layer[2] = { 0, 0 };
	struct mb_model m;
	size_t i;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "uneven", 0), 0);
	assert_int_equal(m.layers, 2);
	for (i = 0; i < m.nparams; i++)
		if (m.params[i].layer >= 0)
			per_layer[m.params[i].layer] += mb_param_numel(&m.params[i]);
	assert_shape(&m, "model.layers.0.mlp.dense_down_proj.weight", 256, 1024, 1);
	assert_null(find(&m, "model.layers.1.mlp.dense_down_proj.weight"));
	assert_shape(&m, "model.layers.1.mlp.gate_proj.weight", 384, 256, 1);
	assert_int_equal(per_layer[0] - per_layer[1], 3 * 1024 * 256);
	assert_int_equal(m.numel_muon, 1769472);
	mb_model_release(&m);
}

static const char list_json[] = "{\"name\": \"listed\", \"parameters\": [\n"
				" {\"name\": \"tok_embeddings\", \"shape\": [100, 8]},\n"
				" {\"name\": \"blk.{i}.attn\", \"shape\": [8, 8], \"repeat\": 3},\n"
				" {\"name\": \"ffn\", \"shape\": [16, 8], \"repeat\": 2},\n"
				" {\"name\": \"blk.{i}.norm\", \"shape\": [8], \"repeat\": 3},\n"
				" {\"name\": \"head.bias\", \"shape\": [8]},\n"
				" {\"name\": \"lm_head\", \"shape\": [100, 8]},\n"
				" {\"name\": \"proj\", \"shape\": [4, 8]}\n"
				"]}";

static void explicit_list_expands_layer_by_layer(void **state)
{
	const char *order[] = { "tok_embeddings", "blk.0.attn",	  "layers.0.ffn", "blk.0.norm",
				"blk.1.attn",	  "layers.1.ffn", "blk.1.norm",	  "blk.2.attn",
				"blk.2.norm",	  "head.bias",	  "lm_head",	  "proj" };
	struct mb_model m;
	size_t i;

	(void)state;
	assert_int_equal(mb_config_parse(&m, list_json, strlen(list_json), "list.json", 0), 0);
	assert_string_equal(m.name, "listed");
	assert_int_equal(m.layers, 3);
	assert_int_equal(m.nparams, sizeof(order) / sizeof(order[0]));
	for (i = 0; i < m.nparams; i++)
		assert_string_equal(m.params[i].name, order[i]);
	assert_int_equal(m.params[2].layer, 0);
	assert_int_equal(m.params[0].layer, -1);
	/* attn x3 + ffn x2 + proj are Muon; embeddings, norms, bias, head are not */
	assert_int_equal(m.nparams_muon, 6);
	assert_int_equal(m.numel_muon, 3 * 64 + 2 * 128 + 32);
	assert_int_equal(m.numel_total, m.numel_muon + 800 + 3 * 8 + 8 + 800);
	mb_model_release(&m);

	assert_int_equal(mb_config_parse(&m, list_json, strlen(list_json), "list.json", 1), 0);
	assert_int_equal(m.layers, 1);
	assert_int_equal(m.nparams, 7);
	assert_null(find(&m, "blk.1.attn"));
	mb_model_release(&m);
}

static void classification(void **state)
{
	(void)state;
	assert_true(mb_param_is_muon("model.layers.0.mlp.up_proj.weight", 2));
	assert_true(mb_param_is_muon("anything", 2));
	assert_false(mb_param_is_muon("model.embed_tokens.weight", 2));
	assert_false(mb_param_is_muon("wte_embedding", 2));
	assert_false(mb_param_is_muon("lm_head.weight", 2));
	assert_false(mb_param_is_muon("model.norm.weight", 1));
	assert_false(mb_param_is_muon("model.layers.0.self_attn.q_proj.bias", 1));
}

static void hf_defaults_and_biases(void **state)
{
	/* head_dim absent: hidden / heads; Qwen2 has q/k/v biases; kv defaults to heads */
	const char *qwen2 = "{\"model_type\": \"qwen2\", \"hidden_size\": 64, "
			    "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
			    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
			    "\"vocab_size\": 100, \"tie_word_embeddings\": true}";
	const char *mistral = "{\"model_type\": \"mistral\", \"hidden_size\": 64, "
			      "\"intermediate_size\": 128, \"num_hidden_layers\": 1, "
			      "\"num_attention_heads\": 4, \"vocab_size\": 100}";
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_parse(&m, qwen2, strlen(qwen2), "dir/qwen2.json", 0), 0);
	assert_string_equal(m.name, "qwen2");
	assert_shape(&m, "model.layers.1.self_attn.k_proj.weight", 32, 64, 1);
	assert_shape(&m, "model.layers.1.self_attn.k_proj.bias", 32, 1, 0);
	assert_null(find(&m, "model.layers.1.self_attn.o_proj.bias"));
	assert_null(find(&m, "lm_head.weight"));
	mb_model_release(&m);
	assert_int_equal(
		mb_config_parse(&m, mistral, strlen(mistral), "/hf/Mistral-7B/config.json", 0), 0);
	assert_string_equal(m.name, "Mistral-7B");
	assert_shape(&m, "model.layers.0.self_attn.v_proj.weight", 64, 64, 1);
	assert_null(find(&m, "model.layers.0.self_attn.v_proj.bias"));
	assert_shape(&m, "lm_head.weight", 100, 64, 0);
	mb_model_release(&m);
}

/* transformers' null means absent; a zero expert count is a dense model;
 * biases follow the family: Llama's attention_bias covers o_proj too, mlp_bias
 * the MLP, and Mistral has none whatever its config says. */
static void hf_nulls_experts_and_bias_families(void **state)
{
	const char *llama = "{\"model_type\": \"llama\", \"hidden_size\": 64, "
			    "\"intermediate_size\": 128, \"num_hidden_layers\": 1, "
			    "\"num_attention_heads\": 4, \"vocab_size\": 100, \"head_dim\": null, "
			    "\"num_key_value_heads\": null, \"num_experts\": 0, "
			    "\"attention_bias\": true, \"mlp_bias\": true}";
	const char *mistral = "{\"model_type\": \"mistral\", \"hidden_size\": 64, "
			      "\"intermediate_size\": 128, \"num_hidden_layers\": 1, "
			      "\"num_attention_heads\": 4, \"vocab_size\": 100, "
			      "\"attention_bias\": true}";
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_parse(&m, llama, strlen(llama), "llama.json", 0), 0);
	assert_shape(&m, "model.layers.0.self_attn.k_proj.weight", 64, 64, 1);
	assert_shape(&m, "model.layers.0.self_attn.o_proj.bias", 64, 1, 0);
	assert_shape(&m, "model.layers.0.mlp.down_proj.bias", 64, 1, 0);
	assert_shape(&m, "model.layers.0.mlp.gate_proj.bias", 128, 1, 0);
	mb_model_release(&m);
	assert_int_equal(mb_config_parse(&m, mistral, strlen(mistral), "mistral.json", 0), 0);
	assert_null(find(&m, "model.layers.0.self_attn.q_proj.bias"));
	assert_null(find(&m, "model.layers.0.self_attn.o_proj.bias"));
	mb_model_release(&m);
}

static void layers_option(void **state)
{
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 2), 0);
	assert_int_equal(m.layers, 2);
	assert_int_equal(m.numel_muon, 2 * 100925440ull);
	assert_non_null(find(&m, "model.layers.1.mlp.up_proj.weight"));
	assert_null(find(&m, "model.layers.2.mlp.up_proj.weight"));
	assert_string_equal(m.params[m.nparams - 1].name, "model.norm.weight");
	mb_model_release(&m);
	assert_int_equal(mb_config_load_builtin(&m, "qwen3-4b", 37), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "builtin qwen3-4b: cannot keep 37 layers, the model has 36");
	assert_null(m.params);
}

/* Every file in tests/data/bad, the line its error must contain. */
static const struct {
	const char *file, *error;
} bad[] = {
	{ "missing-comma.json", "missing-comma.json:4:3: expected ',' or '}' after an object "
				"member, found '\"'" },
	{ "trailing-comma.json", "trailing-comma.json:1:48: expected a value, found ']'" },
	{ "unterminated-string.json", "unterminated-string.json:1:12: expected a printable "
				      "character" },
	{ "empty.json", "empty.json:1:1: expected a value, found the end of the input" },
	{ "trailing-garbage.json", "trailing-garbage.json:2:47: expected the end of the input "
				   "after the top-level value, found 'e'" },
	{ "missing-key.json", "missing-key.json: missing key \"intermediate_size\"" },
	{ "zero-dim.json", "\"hidden_size\" must be a positive integer no larger than 16777216, "
			   "got 0" },
	{ "negative-dim.json", "\"num_hidden_layers\" must be a positive integer no larger than "
			       "65536, got -3" },
	{ "overflow-dim.json", "\"vocab_size\" must be a positive integer no larger than "
			       "16777216, got 1e+30" },
	{ "fractional-dim.json", "\"hidden_size\" must be a positive integer no larger than "
				 "16777216, got 64.5" },
	{ "string-dim.json", "\"hidden_size\" must be a positive integer, got a string" },
	{ "heads-do-not-divide.json", "num_attention_heads (7) does not divide hidden_size (100) "
				      "and head_dim is absent" },
	{ "kv-heads-do-not-divide.json", "num_attention_heads (4) is not a multiple of "
					 "num_key_value_heads (3)" },
	{ "moe.json", "mixture-of-experts models are not supported" },
	{ "shape-3d.json", "parameters[0] ('w'): \"shape\" must be a list [rows, cols] or [size]" },
	{ "shape-overflow.json", "parameters[0] ('w') shape[0] must be a positive integer no "
				 "larger than 16777216, got 99999999999" },
	{ "shape-zero.json", "parameters[0] ('w') shape[1] must be a positive integer" },
	{ "unknown-key.json", "parameters[0]: unknown key \"shap\" (expected name, shape, "
			      "repeat)" },
	{ "no-parameters.json", "\"parameters\" must be a non-empty list" },
	{ "no-name.json", "parameters[0]: \"name\" must be a non-empty string" },
	{ "repeat-zero.json", "parameters[0] ('w') \"repeat\" must be a positive integer" },
	{ "too-large.json",
	  "too-large.json: model too large at parameter 'w4': more than 2^50 elements" },
	{ "lone-surrogate.json", "lone-surrogate.json:1:34: expected \\u and a low surrogate "
				 "after a high surrogate, found '\"'" },
	{ "nul-escape.json", "nul-escape.json:1:28: expected a character other than \\u0000" },
	{ "utf8-surrogate.json", "utf8-surrogate.json:1:28: expected UTF-8 text (the file must be "
				 "UTF-8), found byte 0xed at byte offset 27" },
	{ "utf8-overlong.json", "utf8-overlong.json:1:28: expected UTF-8 text (the file must be "
				"UTF-8), found byte 0xc0 at byte offset 27" },
	{ "duplicate-key.json", "duplicate-key.json: parameters[0]: duplicate key \"shape\"" },
	{ "name-twice.json", "name-twice.json: the parameter 'layers.1.w' is named twice" },
	{ "top-level-list.json", "a model config must be a JSON object, got a list" },
	{ "not-a-config.json", "not a model config: expected a \"parameters\" list or Hugging "
			       "Face keys" },
};

static void bad_configs(void **state)
{
	char path[256];
	struct mb_model m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "tests/data/bad/%s", bad[i].file);
		if (mb_config_load_file(&m, path, 0) != -MB_EINPUT)
			fail_msg("%s: accepted, or not as bad input", path);
		if (!strstr(mb_errmsg(), bad[i].error))
			fail_msg("%s: got \"%s\", want \"%s\"", path, mb_errmsg(), bad[i].error);
		assert_null(strchr(mb_errmsg(), '\n'));
		assert_null(m.params);
	}
}

static void bad_names_and_files(void **state)
{
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_load_builtin(&m, "qwen9", 0), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "unknown model 'qwen9' (known: llama-3.1-8b, qwen3-0.6b, "
			    "qwen3-1.7b, qwen3-4b, qwen3-8b, tiny, uneven; or --config FILE)");
	assert_int_equal(mb_config_load_builtin(&m, "../configs/tiny", 0), -MB_EINPUT);
	assert_int_equal(mb_config_load_file(&m, "tests/data/no-such.json", 0), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "cannot open 'tests/data/no-such.json': No such file or directory");
	assert_int_equal(mb_config_load_file(&m, "tests/data", 0), -MB_EINPUT);
	assert_string_equal(mb_errmsg(),
			    "'tests/data' is a directory, not a regular file: not a model config");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(qwen3_4b),
		cmocka_unit_test(untied_head_takes_adamw),
		cmocka_unit_test(every_builtin_loads),
		cmocka_unit_test(tiny_is_small),
		cmocka_unit_test(uneven_layers_differ),
		cmocka_unit_test(explicit_list_expands_layer_by_layer),
		cmocka_unit_test(classification),
		cmocka_unit_test(hf_defaults_and_biases),
		cmocka_unit_test(hf_nulls_experts_and_bias_families),
		cmocka_unit_test(layers_option),
		cmocka_unit_test(bad_configs),
		cmocka_unit_test(bad_names_and_files),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
