/*
 * mb_grid: the cells of an invocation, the product of its lists, built once.
 */
#include "mb_grid.h"

#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

bool mb_grid_reads_gather_budget(unsigned stage, enum mb_zero3_apply zero3_apply)
{
	return stage != 3 || zero3_apply == MB_Z3_BATCHED;
}

bool mb_grid_reads_sub_group_size(unsigned stage)
{
	return stage == 3;
}

int mb_grid_init(struct mb_grid *g, const struct mb_grid_lists *l)
{
	size_t si, bi, gi, vi, nb, ng, n = 0;
	unsigned stage;

	memset(g, 0, sizeof(*g));
	g->npoints = l->ngather_budgets * l->nsub_group_sizes;
	g->cells = calloc(l->nstages * g->npoints * l->nvariants, sizeof(*g->cells));
	if (!g->cells)
		return mb_fail("out of host memory for the cells");
	for (si = 0; si < l->nstages; si++) {
		stage = l->stages[si];
		nb = mb_grid_reads_gather_budget(stage, l->zero3_apply) ? l->ngather_budgets : 1;
		ng = mb_grid_reads_sub_group_size(stage) ? l->nsub_group_sizes : 1;
		for (bi = 0; bi < nb; bi++)
			for (gi = 0; gi < ng; gi++)
				for (vi = 0; vi < l->nvariants; vi++)
					g->cells[n++] = (struct mb_grid_cell){
						.stage = stage,
						.variant = l->variants[vi],
						.gather_budget_bytes = l->gather_budgets[bi],
						.sub_group_size = l->sub_group_sizes[gi],
						.point = bi * l->nsub_group_sizes + gi,
					};
	}
	g->ncells = n;
	return 0;
}

void mb_grid_release(struct mb_grid *g)
{
	free(g->cells);
	memset(g, 0, sizeof(*g));
}
