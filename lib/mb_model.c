/*
 * mb_model: the parameter table and its Muon/AdamW split.
 */
#include "mb_model.h"

#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

/* No model parameter count past this: 2^50 elements is 4 PB of fp32. */
#define MODEL_NUMEL_MAX (1ull << 50)

bool mb_param_is_muon(const char *name, unsigned ndim)
{
	return ndim == 2 && !strstr(name, "embed") && !strstr(name, "lm_head");
}

int mb_model_add(struct mb_model *m, const char *name, unsigned ndim, uint64_t rows, uint64_t cols,
		 int layer)
{
	struct mb_param *p;
	uint64_t numel;

	if (strlen(name) >= MB_PARAM_NAME_MAX)
		return mb_bad_input("parameter name '%.40s...' is longer than %d bytes", name,
				    MB_PARAM_NAME_MAX - 1);
	if (ndim != 2)
		cols = 1;
	if (__builtin_mul_overflow(rows, cols, &numel) || numel > MODEL_NUMEL_MAX - m->numel_total)
		return mb_bad_input("model too large at parameter '%s': more than 2^50 "
				    "elements",
				    name);
	if (m->nparams == m->params_alloc) {
		size_t alloc = m->params_alloc ? 2 * m->params_alloc : 64;

		p = realloc(m->params, alloc * sizeof(*p));
		if (!p)
			return mb_fail("out of host memory for %zu parameters", alloc);
		m->params = p;
		m->params_alloc = alloc;
	}
	p = &m->params[m->nparams++];
	memset(p, 0, sizeof(*p));
	strcpy(p->name, name);
	p->ndim = ndim;
	p->rows = rows;
	p->cols = cols;
	p->layer = layer;
	p->muon = mb_param_is_muon(name, ndim);
	m->numel_total += numel;
	if (p->muon) {
		m->numel_muon += numel;
		m->nparams_muon++;
	} else {
		m->numel_adamw += numel;
	}
	return 0;
}

void mb_model_release(struct mb_model *m)
{
	free(m->params);
	memset(m, 0, sizeof(*m));
}
