/*
 * mb_config: JSON (either form) to struct mb_model. The cJSON tree is read
 * here and deleted here; only the parameter table leaves.
 */
#include "mb_config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_embedded.h"
#include "mb_err.h"
#include "mb_json.h"

#define DIM_MAX	  (1u << 24) /* rows, cols, hidden sizes, vocabulary */
#define COUNT_MAX (1u << 16) /* layers, heads, repeats */

/* What a config is being read as, for error messages. */
struct reader {
	const char *source;
	unsigned layers_wanted; /* 0: all */
	bool named;		/* the config gives its "name" */
};

/*
 * Read V (named WHAT in errors) as a whole number in [1, max]. WHAT is already
 * quoted or indexed by the caller.
 */
static int whole(const struct reader *r, const char *what, const cJSON *v, unsigned max,
		 unsigned *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return mb_bad_input("%s: %s must be a positive integer, got %s", r->source, what,
				    mb_json_type_name(v));
	d = v->valuedouble;
	if (!(d >= 1 && d <= max && d == floor(d)))
		return mb_bad_input("%s: %s must be a positive integer no larger than %u, got "
				    "%.17g",
				    r->source, what, max, d);
	*out = (unsigned)d;
	return 0;
}

static int key_whole(const struct reader *r, const cJSON *obj, const char *key, bool required,
		     unsigned max, unsigned *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char what[64];

	if (!v || cJSON_IsNull(v)) { /* transformers writes None as null */
		if (!required)
			return 0;
		return mb_bad_input("%s: missing key \"%s\" (a Hugging Face config needs "
				    "hidden_size, intermediate_size, num_hidden_layers, "
				    "num_attention_heads and vocab_size)",
				    r->source, key);
	}
	snprintf(what, sizeof(what), "\"%s\"", key);
	return whole(r, what, v, max, out);
}

static int key_bool(const struct reader *r, const cJSON *obj, const char *key, bool *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return mb_bad_input("%s: \"%s\" must be true or false, got %s", r->source, key,
				    mb_json_type_name(v));
	*out = cJSON_IsTrue(v);
	return 0;
}

static int keep_layers(const struct reader *r, unsigned have, unsigned *keep)
{
	*keep = have;
	if (!r->layers_wanted)
		return 0;
	if (r->layers_wanted > have)
		return mb_bad_input("%s: cannot keep %u layers, the model has %u", r->source,
				    r->layers_wanted, have);
	*keep = r->layers_wanted;
	return 0;
}

/* The first key that OBJ holds twice, or NULL. */
static const char *duplicate_key(const cJSON *obj)
{
	const cJSON *a, *b;

	for (a = obj->child; a; a = a->next)
		for (b = a->next; b; b = b->next)
			if (a->string && b->string && !strcmp(a->string, b->string))
				return a->string;
	return NULL;
}

/* Whether a config describes a mixture of experts. */
static bool is_moe(const cJSON *root, const char *model_type)
{
	static const char *const keys[] = { "num_local_experts", "num_experts",
					    "n_routed_experts" };
	const cJSON *v;
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(root, keys[i]);
		if (cJSON_IsNumber(v) && v->valuedouble > 0)
			return true;
	}
	return strstr(model_type, "moe") != NULL;
}

/* The shape of a Hugging Face Llama/Qwen/Mistral model. */
struct hf_shape {
	unsigned hidden, inter, layers, heads, kv_heads, head_dim, vocab;
	bool tied, qk_norm;
	bool qkv_bias, o_bias, mlp_bias;
};

static int hf_read(const struct reader *r, const cJSON *root, struct hf_shape *s)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
	const char *mt = cJSON_IsString(type) ? type->valuestring : "";
	bool attention_bias = false;
	int err;

	if ((err = key_whole(r, root, "hidden_size", true, DIM_MAX, &s->hidden)) ||
	    (err = key_whole(r, root, "intermediate_size", true, DIM_MAX, &s->inter)) ||
	    (err = key_whole(r, root, "num_hidden_layers", true, COUNT_MAX, &s->layers)) ||
	    (err = key_whole(r, root, "num_attention_heads", true, COUNT_MAX, &s->heads)) ||
	    (err = key_whole(r, root, "vocab_size", true, DIM_MAX, &s->vocab)))
		return err;
	s->kv_heads = s->heads;
	s->head_dim = 0;
	s->tied = s->mlp_bias = false;
	s->qk_norm = !strcmp(mt, "qwen3");
	if ((err = key_whole(r, root, "num_key_value_heads", false, COUNT_MAX, &s->kv_heads)) ||
	    (err = key_whole(r, root, "head_dim", false, DIM_MAX, &s->head_dim)) ||
	    (err = key_bool(r, root, "tie_word_embeddings", &s->tied)) ||
	    (err = key_bool(r, root, "attention_bias", &attention_bias)) ||
	    (err = key_bool(r, root, "mlp_bias", &s->mlp_bias)))
		return err;
	/* Qwen2 always has q/k/v biases; Mistral has none; Llama and Qwen3 follow
	 * attention_bias, for all four projections */
	s->qkv_bias = !strcmp(mt, "qwen2") || (attention_bias && strcmp(mt, "mistral"));
	s->o_bias = attention_bias && strcmp(mt, "qwen2") && strcmp(mt, "mistral");
	if (is_moe(root, mt))
		return mb_bad_input("%s: mixture-of-experts models are not supported; list "
				    "the parameters explicitly instead",
				    r->source);
	if (s->heads % s->kv_heads)
		return mb_bad_input("%s: num_attention_heads (%u) is not a multiple of "
				    "num_key_value_heads (%u)",
				    r->source, s->heads, s->kv_heads);
	if (!s->head_dim) {
		if (s->hidden % s->heads)
			return mb_bad_input("%s: num_attention_heads (%u) does not divide "
					    "hidden_size (%u) and head_dim is absent",
					    r->source, s->heads, s->hidden);
		s->head_dim = s->hidden / s->heads;
	}
	if ((uint64_t)s->heads * s->head_dim > DIM_MAX)
		return mb_bad_input("%s: num_attention_heads x head_dim (%u x %u) is larger "
				    "than %u",
				    r->source, s->heads, s->head_dim, DIM_MAX);
	return 0;
}

/* mb_model_add, its error prefixed with the source. */
static int model_add(const struct reader *r, struct mb_model *m, const char *name, unsigned ndim,
		     uint64_t rows, uint64_t cols, int layer)
{
	int err = mb_model_add(m, name, ndim, rows, cols, layer);

	if (err)
		mb_err_prefix("%s", r->source);
	return err;
}

/* Add "model.layers.L.SUFFIX" (or NAME as is when L < 0). */
static int add(const struct reader *r, struct mb_model *m, int layer, const char *name,
	       unsigned ndim, unsigned rows, unsigned cols)
{
	char full[MB_PARAM_NAME_MAX];

	if (layer < 0)
		return model_add(r, m, name, ndim, rows, cols, -1);
	snprintf(full, sizeof(full), "model.layers.%d.%s", layer, name);
	return model_add(r, m, full, ndim, rows, cols, layer);
}

static int hf_layer(const struct reader *r, struct mb_model *m, const struct hf_shape *s, int l)
{
	unsigned q = s->heads * s->head_dim, kv = s->kv_heads * s->head_dim, h = s->hidden;
	int err;

	if ((err = add(r, m, l, "self_attn.q_proj.weight", 2, q, h)) ||
	    (s->qkv_bias && (err = add(r, m, l, "self_attn.q_proj.bias", 1, q, 1))) ||
	    (err = add(r, m, l, "self_attn.k_proj.weight", 2, kv, h)) ||
	    (s->qkv_bias && (err = add(r, m, l, "self_attn.k_proj.bias", 1, kv, 1))) ||
	    (err = add(r, m, l, "self_attn.v_proj.weight", 2, kv, h)) ||
	    (s->qkv_bias && (err = add(r, m, l, "self_attn.v_proj.bias", 1, kv, 1))) ||
	    (err = add(r, m, l, "self_attn.o_proj.weight", 2, h, q)) ||
	    (s->o_bias && (err = add(r, m, l, "self_attn.o_proj.bias", 1, h, 1))) ||
	    (s->qk_norm && (err = add(r, m, l, "self_attn.q_norm.weight", 1, s->head_dim, 1))) ||
	    (s->qk_norm && (err = add(r, m, l, "self_attn.k_norm.weight", 1, s->head_dim, 1))) ||
	    (err = add(r, m, l, "mlp.gate_proj.weight", 2, s->inter, h)) ||
	    (s->mlp_bias && (err = add(r, m, l, "mlp.gate_proj.bias", 1, s->inter, 1))) ||
	    (err = add(r, m, l, "mlp.up_proj.weight", 2, s->inter, h)) ||
	    (s->mlp_bias && (err = add(r, m, l, "mlp.up_proj.bias", 1, s->inter, 1))) ||
	    (err = add(r, m, l, "mlp.down_proj.weight", 2, h, s->inter)) ||
	    (s->mlp_bias && (err = add(r, m, l, "mlp.down_proj.bias", 1, h, 1))) ||
	    (err = add(r, m, l, "input_layernorm.weight", 1, h, 1)) ||
	    (err = add(r, m, l, "post_attention_layernorm.weight", 1, h, 1)))
		return err;
	return 0;
}

static int hf_expand(const struct reader *r, const cJSON *root, struct mb_model *m)
{
	struct hf_shape s;
	unsigned keep, l;
	int err;

	if ((err = hf_read(r, root, &s)) || (err = keep_layers(r, s.layers, &keep)))
		return err;
	if ((err = add(r, m, -1, "model.embed_tokens.weight", 2, s.vocab, s.hidden)))
		return err;
	for (l = 0; l < keep; l++)
		if ((err = hf_layer(r, m, &s, (int)l)))
			return err;
	if ((err = add(r, m, -1, "model.norm.weight", 1, s.hidden, 1)) ||
	    (!s.tied && (err = add(r, m, -1, "lm_head.weight", 2, s.vocab, s.hidden))))
		return err;
	m->layers = keep;
	return 0;
}

/* One entry of an explicit list, checked. */
struct entry {
	const char *name;
	unsigned ndim, shape[2], repeat; /* repeat 0: not a layer entry */
};

static int entry_read(const struct reader *r, const cJSON *e, int index, struct entry *out)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
	const cJSON *repeat = cJSON_GetObjectItemCaseSensitive(e, "repeat");
	const cJSON *key, *dim;
	char what[96];
	int err, n;

	if (!cJSON_IsObject(e))
		return mb_bad_input("%s: parameters[%d] must be an object with \"name\" and "
				    "\"shape\", got %s",
				    r->source, index, mb_json_type_name(e));
	if (duplicate_key(e))
		return mb_bad_input("%s: parameters[%d]: duplicate key \"%s\"", r->source, index,
				    duplicate_key(e));
	cJSON_ArrayForEach(key, e) {
		if (strcmp(key->string, "name") && strcmp(key->string, "shape") &&
		    strcmp(key->string, "repeat"))
			return mb_bad_input("%s: parameters[%d]: unknown key \"%s\" (expected "
					    "name, shape, repeat)",
					    r->source, index, key->string);
	}
	if (!cJSON_IsString(name) || !*name->valuestring)
		return mb_bad_input("%s: parameters[%d]: \"name\" must be a non-empty string",
				    r->source, index);
	out->name = name->valuestring;
	n = cJSON_GetArraySize(shape);
	if (!cJSON_IsArray(shape) || n < 1 || n > 2)
		return mb_bad_input("%s: parameters[%d] ('%s'): \"shape\" must be a list "
				    "[rows, cols] or [size]",
				    r->source, index, out->name);
	out->ndim = (unsigned)n;
	out->shape[1] = 1;
	n = 0;
	cJSON_ArrayForEach(dim, shape) {
		snprintf(what, sizeof(what), "parameters[%d] ('%.40s') shape[%d]", index, out->name,
			 n);
		if ((err = whole(r, what, dim, DIM_MAX, &out->shape[n++])))
			return err;
	}
	out->repeat = 0;
	if (repeat) {
		snprintf(what, sizeof(what), "parameters[%d] ('%.40s') \"repeat\"", index,
			 out->name);
		if ((err = whole(r, what, repeat, COUNT_MAX, &out->repeat)))
			return err;
	}
	return 0;
}

/* NAME with "{i}" replaced by LAYER, or "layers.LAYER.NAME" without it. */
static void layer_name(char *buf, size_t len, const char *name, unsigned layer)
{
	const char *at = strstr(name, "{i}");

	if (!at)
		snprintf(buf, len, "layers.%u.%s", layer, name);
	else
		snprintf(buf, len, "%.*s%u%s", (int)(at - name), name, layer, at + 3);
}

/* Expand entries [first, end) which all repeat: layer by layer. */
static int expand_block(const struct reader *r, struct mb_model *m, const struct entry *e,
			size_t first, size_t end, unsigned keep)
{
	char name[MB_PARAM_NAME_MAX + 16];
	unsigned l;
	size_t i;
	int err;

	for (l = 0; l < keep; l++) {
		for (i = first; i < end; i++) {
			if (l >= e[i].repeat)
				continue;
			layer_name(name, sizeof(name), e[i].name, l);
			if ((err = model_add(r, m, name, e[i].ndim, e[i].shape[0], e[i].shape[1],
					     (int)l)))
				return err;
		}
	}
	return 0;
}

static int list_expand_entries(const struct reader *r, struct mb_model *m, const struct entry *e,
			       size_t n)
{
	unsigned have = 0, keep;
	size_t i, end;
	int err;

	for (i = 0; i < n; i++)
		if (e[i].repeat > have)
			have = e[i].repeat;
	if (r->layers_wanted && !have)
		return mb_bad_input("%s: cannot keep %u layers, no parameter has \"repeat\"",
				    r->source, r->layers_wanted);
	if ((err = keep_layers(r, have, &keep)))
		return err;
	for (i = 0; i < n; i = end) {
		end = i + 1;
		if (!e[i].repeat) {
			err = model_add(r, m, e[i].name, e[i].ndim, e[i].shape[0], e[i].shape[1],
					-1);
		} else {
			while (end < n && e[end].repeat)
				end++;
			err = expand_block(r, m, e, i, end, keep);
		}
		if (err)
			return err;
	}
	m->layers = keep;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const struct mb_param *const *)a)->name,
		      (*(const struct mb_param *const *)b)->name);
}

/* Each parameter's name once, as in a model's state dict: sorted, no two neighbours equal. */
static int names_unique(const struct reader *r, const struct mb_model *m)
{
	const struct mb_param **sorted = malloc(m->nparams * sizeof(*sorted));
	size_t i;
	int err = 0;

	if (!sorted)
		return mb_fail("out of host memory reading %s", r->source);
	for (i = 0; i < m->nparams; i++)
		sorted[i] = &m->params[i];
	qsort(sorted, m->nparams, sizeof(*sorted), by_name);
	for (i = 1; i < m->nparams && !err; i++)
		if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
			err = mb_bad_input("%s: the parameter '%s' is named twice: a model's "
					   "parameters have one name each",
					   r->source, sorted[i]->name);
	free(sorted);
	return err;
}

static int list_expand(struct reader *r, const cJSON *root, struct mb_model *m)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "parameters");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name"), *item;
	struct entry *entries;
	int n = cJSON_GetArraySize(list), i = 0, err = 0;

	if (!cJSON_IsArray(list) || !n)
		return mb_bad_input("%s: \"parameters\" must be a non-empty list", r->source);
	if (name && cJSON_IsString(name)) {
		/* cut, two models would share a name, and pool in report */
		if (!*name->valuestring || strlen(name->valuestring) >= sizeof(m->name))
			return mb_bad_input("%s: \"name\" must be 1 to %zu bytes, got %zu",
					    r->source, sizeof(m->name) - 1,
					    strlen(name->valuestring));
		snprintf(m->name, sizeof(m->name), "%s", name->valuestring);
		r->named = true;
	}
	entries = calloc((size_t)n, sizeof(*entries));
	if (!entries)
		return mb_fail("out of host memory reading %s", r->source);
	cJSON_ArrayForEach(item, list) {
		if ((err = entry_read(r, item, i, &entries[i])))
			break;
		i++;
	}
	if (!err)
		err = list_expand_entries(r, m, entries, (size_t)n);
	if (!err)
		err = names_unique(r, m);
	free(entries);
	return err;
}

/*
 * The model name when the config does not give one: the file's base name
 * without ".json", or the directory's name for a Hugging Face "config.json"
 * (".../Qwen3-4B/config.json" is "Qwen3-4B").
 */
static size_t default_name(struct mb_model *m, const char *source)
{
	const char *base = strrchr(source, '/'), *dir;
	size_t n;

	base = base ? base + 1 : source;
	if (!strcmp(base, "config.json") && base - source >= 2) {
		for (dir = base - 2; dir > source && dir[-1] != '/'; dir--)
			;
		n = (size_t)(base - 1 - dir);
		if (n && strncmp(dir, ".", n) && strncmp(dir, "..", n)) {
			snprintf(m->name, sizeof(m->name), "%.*s", (int)n, dir);
			return n;
		}
	}
	n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".json"))
		n -= 5;
	snprintf(m->name, sizeof(m->name), "%.*s", (int)n, base);
	return n;
}

int mb_config_parse(struct mb_model *m, const char *text, size_t len, const char *source,
		    unsigned layers)
{
	struct reader r = { .source = source, .layers_wanted = layers };
	size_t name_len;
	cJSON *root;
	int err;

	memset(m, 0, sizeof(*m));
	if ((err = mb_json_parse(text, len, source, &root)))
		return err;
	name_len = default_name(m, source);
	snprintf(m->source, sizeof(m->source), "%s", source);
	if (!cJSON_IsObject(root))
		err = mb_bad_input("%s: a model config must be a JSON object, got %s", source,
				   mb_json_type_name(root));
	else if (duplicate_key(root))
		err = mb_bad_input("%s: duplicate key \"%s\"", source, duplicate_key(root));
	else if (cJSON_GetObjectItemCaseSensitive(root, "parameters"))
		err = list_expand(&r, root, m);
	else if (cJSON_GetObjectItemCaseSensitive(root, "hidden_size"))
		err = hf_expand(&r, root, m);
	else
		err = mb_bad_input("%s: not a model config: expected a \"parameters\" list or "
				   "Hugging Face keys (hidden_size, ...)",
				   source);
	cJSON_Delete(root);
	if (!err && !r.named && name_len >= sizeof(m->name))
		err = mb_bad_input("%s: the model's name, from the file's, is %zu bytes, over %zu: "
				   "give the config a shorter \"name\"",
				   source, name_len, sizeof(m->name) - 1);
	if (err)
		mb_model_release(m);
	return err;
}

int mb_config_load_file(struct mb_model *m, const char *path, unsigned layers)
{
	char *text;
	size_t len;
	int err;

	memset(m, 0, sizeof(*m));
	if ((err = mb_json_read_file(path, "model config", &text, &len)))
		return err;
	err = mb_config_parse(m, text, len, path, layers);
	free(text);
	return err;
}

static const char prefix[] = "configs/", suffix[] = ".json";

/* The built-in name of an embedded file, or NULL when it is not a config. */
static const char *builtin_name(const struct mb_embedded_file *f, size_t *len)
{
	size_t n = strlen(f->path);

	if (strncmp(f->path, prefix, sizeof(prefix) - 1) || n <= sizeof(prefix) + 4 ||
	    strcmp(f->path + n - 5, suffix))
		return NULL;
	*len = n - (sizeof(prefix) - 1) - 5;
	return f->path + sizeof(prefix) - 1;
}

const char *mb_config_builtin_names(char *buf, size_t len)
{
	const struct mb_embedded_file *f;
	const char *name;
	size_t n, used = 0;

	buf[0] = '\0';
	for (f = mb_embedded_files; f->path; f++) {
		if (!(name = builtin_name(f, &n)))
			continue;
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%.*s",
					 used ? ", " : "", (int)n, name);
	}
	return buf;
}

int mb_config_load_builtin(struct mb_model *m, const char *name, unsigned layers)
{
	const struct mb_embedded_file *f;
	char path[256], known[512];
	int err;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "%s%s%s", prefix, name, suffix);
	f = strchr(name, '/') ? NULL : mb_embedded_find(path);
	if (!f)
		return mb_bad_input("unknown model '%s' (known: %s; or --config FILE)", name,
				    mb_config_builtin_names(known, sizeof(known)));
	snprintf(path, sizeof(path), "builtin %s", name);
	if ((err = mb_config_parse(m, f->data, f->size, path, layers)))
		return err;
	snprintf(m->name, sizeof(m->name), "%s", name);
	return 0;
}
