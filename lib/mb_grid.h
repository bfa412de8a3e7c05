/*
 * mb_grid: the cells of an invocation, the product of its lists built once
 * and in one order (as llama-bench's get_cmd_params_instances): each stage,
 * then each gather budget, then each sub-group size, then each variant. A
 * list that a stage's plan does not read (the gather budget under ZeRO-3's
 * sub-group apply, the sub-group size below ZeRO-3) gives that stage's
 * cells one value, its first: a second would change nothing. run, plan and
 * predict take their cells from here.
 */
#ifndef MB_GRID_H
#define MB_GRID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_plan.h"
#include "mb_variant.h"

/* The lists the cells are the product of; none of them empty. */
struct mb_grid_lists {
	const unsigned *stages; /* 1 to 3 */
	size_t nstages;
	const enum mb_variant *variants;
	size_t nvariants;
	const uint64_t *gather_budgets;
	size_t ngather_budgets;
	const uint64_t *sub_group_sizes;
	size_t nsub_group_sizes;
	enum mb_zero3_apply zero3_apply; /* whether ZeRO-3 reads the gather budget */
};

struct mb_grid_cell {
	unsigned stage;
	enum mb_variant variant;
	uint64_t gather_budget_bytes, sub_group_size;
	/* the point of the sweep of the two lists it is at: its gather budget's index in
	 * the list times the sub-group sizes, plus its sub-group size's index */
	size_t point;
};

struct mb_grid {
	struct mb_grid_cell *cells; /* in the order above */
	size_t ncells;
	size_t npoints; /* of the sweep: the gather budgets times the sub-group sizes */
};

/* Whether stage STAGE's plan reads the gather budget, with ZeRO-3's apply ZERO3_APPLY. */
bool mb_grid_reads_gather_budget(unsigned stage, enum mb_zero3_apply zero3_apply);

/* Whether stage STAGE's plan reads the sub-group size (ZeRO-3's alone). */
bool mb_grid_reads_sub_group_size(unsigned stage);

/*
 * The cells of the lists L into *G (release with mb_grid_release; L's
 * arrays may go once this returns). -MB_EFAIL out of host memory.
 */
int mb_grid_init(struct mb_grid *g, const struct mb_grid_lists *l);

void mb_grid_release(struct mb_grid *g);

#endif
