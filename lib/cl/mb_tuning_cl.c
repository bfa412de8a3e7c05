/*
 * mb_tuning_cl: CLBlast's kernel parameters overridden from a tuning.
 */
#include "mb_tuning_cl.h"

#include <clblast_c.h>

#include "mb_err.h"

int mb_tuning_apply(const struct mb_tuning *t, const struct mb_cl *cl)
{
	const char *names[MB_TUNING_PARAMS_MAX];
	size_t i, j;
	int st;

	for (i = 0; i < t->nkernels; i++) {
		const struct mb_tuning_kernel *k = &t->kernel[i];

		for (j = 0; j < k->nparams; j++)
			names[j] = k->param[j];
		st = CLBlastOverrideParameters(cl->device, k->name, CLBlastPrecisionSingle,
					       k->nparams, names, k->value);
		if (st)
			return mb_clblast_check(cl, st, "CLBlastOverrideParameters",
						"tuning kernel '%s'", k->name);
	}
	return 0;
}
