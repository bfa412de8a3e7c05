/*
 * mb_model: a model as the optimizer sees it, a table of named parameters.
 *
 * Parameters are in the order the model stores them (embeddings, then layer by
 * layer, then the final norm and head); that order decides batching. Muon
 * takes every 2-D parameter whose name contains neither "embed" nor "lm_head";
 * AdamW takes the rest (embeddings, norms, biases). The config module fills a
 * model; the model owns its table.
 */
#ifndef MB_MODEL_H
#define MB_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MB_PARAM_NAME_MAX 128 /* bytes, NUL included */

struct mb_param {
	char name[MB_PARAM_NAME_MAX];
	unsigned ndim;	     /* 1 or 2 */
	uint64_t rows, cols; /* a 1-D parameter has cols == 1 */
	int layer;	     /* decoder layer index, -1 outside the layers */
	bool muon;
};

struct mb_model {
	char name[64];
	char source[256]; /* where it came from: "builtin qwen3-4b" or a path */
	unsigned layers;  /* decoder layers in the table */
	struct mb_param *params;
	size_t nparams, params_alloc;
	uint64_t numel_total, numel_muon, numel_adamw;
	size_t nparams_muon;
};

/* Elements of P. */
static inline uint64_t mb_param_numel(const struct mb_param *p)
{
	return p->rows * p->cols;
}

/* Whether a parameter of this name and dimension count takes Muon. */
bool mb_param_is_muon(const char *name, unsigned ndim);

/*
 * Append a parameter (name truncated to fit is refused) and classify it.
 * Returns 0, or -MB_EINPUT when the name is too long or the total overflows.
 */
int mb_model_add(struct mb_model *m, const char *name, unsigned ndim, uint64_t rows, uint64_t cols,
		 int layer);

/* Free the table and zero the model. */
void mb_model_release(struct mb_model *m);

#endif
