/*
 * mb_config: model shapes from JSON into a parameter table.
 *
 * Two forms are read. A Hugging Face config.json of the Llama/Qwen/Mistral
 * family (hidden_size, intermediate_size, num_hidden_layers,
 * num_attention_heads, vocab_size; optional num_key_value_heads, head_dim,
 * tie_word_embeddings, attention_bias, model_type) expands into the
 * parameters that family's model has. An explicit list,
 *   {"name": "...", "parameters": [{"name": "...", "shape": [rows, cols],
 *                                   "repeat": N}, ...]},
 * is taken as written: consecutive entries with "repeat" form the decoder
 * layer and expand layer by layer ("{i}" in a name is the layer index).
 *
 * LAYERS, when not 0, keeps only the first LAYERS decoder layers. All errors
 * are bad input (-MB_EINPUT) naming the source and the culprit. The model is
 * filled only on success; on failure it is left empty.
 */
#ifndef MB_CONFIG_H
#define MB_CONFIG_H

#include <stddef.h>

#include "mb_model.h"

/* Parse LEN bytes of JSON TEXT; SOURCE names it in errors and in the model. */
int mb_config_parse(struct mb_model *m, const char *text, size_t len, const char *source,
		    unsigned layers);

/* Load the file at PATH (at most 16 MiB). */
int mb_config_load_file(struct mb_model *m, const char *path, unsigned layers);

/* Load a built-in model by NAME; an unknown name's error lists the known ones. */
int mb_config_load_builtin(struct mb_model *m, const char *name, unsigned layers);

/* The built-in names, comma-separated, into BUF. Returns BUF. */
const char *mb_config_builtin_names(char *buf, size_t len);

#endif
