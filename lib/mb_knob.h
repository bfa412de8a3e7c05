/*
 * mb_knob: the step's knobs that are a choice of words, in one table. A row
 *
 *   X(ID, field, option, words, default, since, kind, help)
 *
 * is all such a knob needs to be everywhere: a setting of the step
 * (struct mb_step_settings' knob[MB_KNOB_ID], the place of its word in
 * WORDS), an option (cmd/options.c, with its help), a column FIELD of the
 * results written with the word (a column since results format SINCE) and
 * a knob that compare matches cells on. KIND is STEP, a knob of the step:
 * an option of the commands that run or model a step, its option among
 * theirs and its column among the pinned memory's; or PLAN, a knob of the
 * plan: an option of every command that builds a plan (plan too), first
 * among the plan's options, its column after the step's knobs; or PLAN2,
 * the same but its option and column after --params-back's (zero3-apply's
 * place: the kinds keep each knob where it stood before the table). A new
 * knob takes STEP or PLAN. What the knob changes is then the schedule's
 * (mb_sched.c) or, for a knob of the plan, the plan's (its mb_plan_settings
 * field, which cmd/setup.c fills from the word): two files in all, this one
 * and that one, and the results format's version when a real knob adds its
 * column.
 *
 * writeback-dep, param-order and zero3-apply are rows (their words lists
 * here, for the schedule's and the plan's enums); the knobs older than this
 * table that are not yet rows keep their own plumbing. The table also holds
 * a test-only row (-DMB_TEST_KNOB, tests/variant_row.sh) to show that a row
 * is all it takes.
 */
#ifndef MB_KNOB_H
#define MB_KNOB_H

#include <stddef.h>

#include "mb_words.h"

#ifdef MB_TEST_KNOB
#define MB_TEST_KNOB_ROW_(X)                                                                  \
	X(PROBE_WAIT, probe_wait, "probe-wait", "off|on", "off", 13, STEP,                    \
	  "test only: on, the host waits for each unit's Newton-Schulz before it writes the " \
	  "unit back, overlapped or not")
#else
#define MB_TEST_KNOB_ROW_(X)
#endif

/* writeback-dep's words (a list, mb_words.h): how the overlapped writeback waits */
#define MB_WRITEBACK_DEPS(X, SEP)      X(HOST, "host") SEP X(EVENT, "event")
#define MB_WRITEBACK_DEP_ENUM_(e, ...) MB_WRITEBACK_##e,
enum mb_writeback_dep { MB_WRITEBACK_DEPS(MB_WRITEBACK_DEP_ENUM_, ) };
#undef MB_WRITEBACK_DEP_ENUM_

/* param-order's words: the order of the Muon parameters the batches and sub-groups take */
#define MB_PARAM_ORDERS(X, SEP) X(SHAPE, "shape") SEP X(MODEL, "model")
#define MB_ORDER_ENUM_(e, ...)	MB_ORDER_##e,
enum mb_param_order { MB_PARAM_ORDERS(MB_ORDER_ENUM_, ) MB_NORDERS };
#undef MB_ORDER_ENUM_

/* zero3-apply's words: stage 3's Muon apply, a whole sub-group at once or in batches */
#define MB_ZERO3_APPLIES(X, SEP) X(SUBGROUP, "subgroup") SEP X(BATCHED, "batched")
#define MB_Z3_ENUM_(e, ...)	 MB_Z3_##e,
enum mb_zero3_apply { MB_ZERO3_APPLIES(MB_Z3_ENUM_, ) MB_NZ3_APPLIES };
#undef MB_Z3_ENUM_

#define MB_STEP_KNOBS(X)                                                                         \
	X(WRITEBACK_DEP, writeback_dep, "writeback-dep", MB_WORDS(MB_WRITEBACK_DEPS), "host", 0, \
	  STEP,                                                                                  \
	  "overlapped writeback waits for the compute on the host, or through an event "         \
	  "wait list")                                                                           \
	X(PARAM_ORDER, param_order, "param-order", MB_WORDS(MB_PARAM_ORDERS), "shape", 0, PLAN,  \
	  "order of the Muon parameters that the batches and sub-groups are made of: by "        \
	  "shape, largest first, as DeepSpeed's Muon builds its param group "                    \
	  "(original_muon.py), or the model's")                                                  \
	X(ZERO3_APPLY, zero3_apply, "zero3-apply", MB_WORDS(MB_ZERO3_APPLIES), "subgroup", 0,    \
	  PLAN2,                                                                                 \
	  "stage 3's Muon apply: a whole sub-group gathered at once, then each matrix's "        \
	  "update written back, as DeepSpeed's _apply_muon_updates_cpu_offload (stage3.py); "    \
	  "or batched: in batches under --gather-budget within each sub-group, as ZeRO-1/2's "   \
	  "apply")                                                                               \
	MB_TEST_KNOB_ROW_(X)

#define MB_KNOB_ENUM_(id, ...) MB_KNOB_##id,
enum mb_knob { MB_STEP_KNOBS(MB_KNOB_ENUM_) MB_NKNOBS };
#undef MB_KNOB_ENUM_

/* Room for every knob, and one more: C has no empty arrays. */
#define MB_KNOBS_ROOM (MB_NKNOBS + 1)

struct mb_knob_info {
	const char *field, *option, *words, *dflt, *help; /* field NULL: past the last row */
	int since;
};

/* The table's rows, ended by one whose field is NULL. */
extern const struct mb_knob_info mb_knobs[MB_KNOBS_ROOM];

/* The place of WORD among knob K's words ("off|on": "on" is 1); -1 if it is none of them. */
int mb_knob_word(size_t k, const char *word);

#endif
