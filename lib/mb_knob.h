/*
 * mb_knob: the step's knobs that are a choice of words, in one table. A row
 *
 *   X(ID, field, option, words, auto, default, since, help)
 *
 * is all such a knob needs to be everywhere: a setting of the step
 * (struct mb_step_settings' knob[MB_KNOB_ID], the place of its word in
 * WORDS), an option (cmd/options.c, with its help), a column FIELD of the
 * results written with the word (a column since results format SINCE) and
 * a knob that compare matches cells on. AUTO is NO_AUTO, or
 * AUTO(w1, w2, w3): the option also takes "auto", each stage's word (as
 * DeepSpeed's default differs by stage); the results hold the word the
 * stage took, and compare and report read a stage's own word as "auto".
 *
 * The list a row is in says where it stands among the other options and
 * columns: MB_KNOBS_STEP, a knob of the step: an option of the commands
 * that run or model a step, after --pinned-device-copy, its column after
 * the pinned memory's; MB_KNOBS_PLAN, a knob of the plan: an option of
 * every command that builds a plan (plan too), first among the plan's
 * options, its column after the step's knobs; MB_KNOBS_AT, knobs older than
 * the table, whose option, column and compare knob each of those tables
 * places by the row's name (MB_KNOB_ROW_<ID>) where it stood before the
 * table. A new knob is a row in MB_KNOBS_STEP or MB_KNOBS_PLAN. What it
 * changes is then the schedule's (mb_sched.c) or, for a knob of the plan,
 * the plan's (its mb_plan_settings field, which cmd/setup.c fills from the
 * word): two files in all, this one and that one, and the results format's
 * version when a real knob adds its column.
 *
 * The knobs older than this table that are not rows (pinned-alloc,
 * pinned-device-copy, ns-precision) keep their own plumbing. The table
 * also holds a test-only row (-DMB_TEST_KNOB, tests/variant_row.sh) to
 * show that a row is all it takes.
 */
#ifndef MB_KNOB_H
#define MB_KNOB_H

#include <stdbool.h>
#include <stddef.h>

#include "mb_ns.h" /* ns-method's words: MB_NS_METHODS */
#include "mb_words.h"

#ifdef MB_TEST_KNOB
#define MB_TEST_KNOB_ROW_(X)                                                                  \
	X(PROBE_WAIT, probe_wait, "probe-wait", "off|on", NO_AUTO, "off", 13,                 \
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

/* momentum-dtype's words: the Muon momentum's storage, fp32, or bf16 (fp32 math) */
#define MB_MOMENTUM_DTYPES(X, SEP) X(FP32, "fp32") SEP X(BF16, "bf16")
#define MB_MOM_ENUM_(e, ...)	   MB_MOM_##e,
enum mb_momentum_dtype { MB_MOMENTUM_DTYPES(MB_MOM_ENUM_, ) MB_NMOM_DTYPES };
#undef MB_MOM_ENUM_

/*
 * params-back's words: how the bf16 params go back to the device, from the
 * pinned bf16 staging the host optimizer writes (ZeRO-1/2), or, as ZeRO-3's
 * copy_ from the fp32 params does, a host cast into pageable memory and a
 * blocking H2D.
 */
#define MB_PARAMS_BACKS(X, SEP) X(PINNED, "pinned") SEP X(PAGEABLE, "pageable")
#define MB_BACK_ENUM_(e, ...)	MB_BACK_##e,
enum mb_params_back { MB_PARAMS_BACKS(MB_BACK_ENUM_, ) MB_NBACKS };
#undef MB_BACK_ENUM_

/* the rows, each by its name */
#define MB_KNOB_ROW_WRITEBACK_DEP(X)                                                           \
	X(WRITEBACK_DEP, writeback_dep, "writeback-dep", MB_WORDS(MB_WRITEBACK_DEPS), NO_AUTO, \
	  "host", 0,                                                                           \
	  "overlapped writeback waits for the compute on the host, or through an event "       \
	  "wait list")
#define MB_KNOB_ROW_PARAM_ORDER(X)                                                                 \
	X(PARAM_ORDER, param_order, "param-order", MB_WORDS(MB_PARAM_ORDERS), NO_AUTO, "shape", 0, \
                                                                                                   \
	  "order of the Muon parameters that the batches and sub-groups are made of: by "          \
	  "shape, largest first, as DeepSpeed's Muon builds its param group "                      \
	  "(original_muon.py), or the model's")
#define MB_KNOB_ROW_MOMENTUM_DTYPE(X)                                                          \
	X(MOMENTUM_DTYPE, momentum_dtype, "momentum-dtype", MB_WORDS(MB_MOMENTUM_DTYPES),      \
	  AUTO("fp32", "fp32", "bf16"), "auto", 0,                                             \
	  "the Muon momentum's storage (math in fp32); auto: fp32 for ZeRO-1/2, bf16 for "     \
	  "ZeRO-3, which keeps it in the communication dtype under bf16 training (stage3.py, " \
	  "_create_momentum_buffer)")
#define MB_KNOB_ROW_PARAMS_BACK(X)                                                            \
	X(PARAMS_BACK, params_back, "params-back", MB_WORDS(MB_PARAMS_BACKS),                 \
	  AUTO("pinned", "pinned", "pageable"), "auto", 0,                                    \
	  "how the bf16 params go back to the device: from the pinned staging the host "      \
	  "optimizer writes (stage_1_and_2.py), or a host cast into pageable memory and a "   \
	  "blocking H2D, as ZeRO-3's copy_ from the fp32 params (stage3.py); auto: pageable " \
	  "for ZeRO-3, pinned for ZeRO-1/2")
#define MB_KNOB_ROW_ZERO3_APPLY(X)                                                             \
	X(ZERO3_APPLY, zero3_apply, "zero3-apply", MB_WORDS(MB_ZERO3_APPLIES), NO_AUTO,        \
	  "subgroup", 0,                                                                       \
	  "stage 3's Muon apply: a whole sub-group gathered at once, then each matrix's "      \
	  "update written back, as DeepSpeed's _apply_muon_updates_cpu_offload (stage3.py); "  \
	  "or batched: in batches under --gather-budget within each sub-group, as ZeRO-1/2's " \
	  "apply")

#define MB_KNOB_ROW_NS_METHOD(X)                                                                \
	X(NS_METHOD, ns_method, "ns-method", MB_WORDS(MB_NS_METHODS), NO_AUTO, "gram", 0,       \
	  "Newton-Schulz: DeepSpeed's default, on the Gram matrix with a restart at iteration " \
	  "2 (zeropower_via_gram_newtonschulz, original_muon.py; the standard iteration on "    \
	  "square matrices), or the standard quintic (zeropower_via_newtonschulz5); ns times "  \
	  "both unless it is given")

/* pin-memory's and fwd-bwd's words: on is 0 (the words' order in their help) */
#define MB_KNOB_ROW_PIN_MEMORY(X)                                           \
	X(PIN_MEMORY, pin_memory, "pin-memory", "on|off", NO_AUTO, "on", 0, \
	  "offload_optimizer.pin_memory: pin the buffers that cross the bus")
#define MB_KNOB_ROW_FWD_BWD(X)                                                           \
	X(FWD_BWD, fwd_bwd, "fwd-bwd", "on|off", NO_AUTO, "on", 0,                       \
	  "run a synthetic forward and backward (GEMMs on the model's shapes, gradient " \
	  "checkpointing) before each step's gradients")

/* the rows by where they stand (see above); MB_STEP_KNOBS, every row */
#define MB_KNOBS_STEP(X) MB_KNOB_ROW_WRITEBACK_DEP(X) MB_TEST_KNOB_ROW_(X)
#define MB_KNOBS_PLAN(X) MB_KNOB_ROW_PARAM_ORDER(X)
/* clang-format off */
#define MB_KNOBS_AT(X) \
	MB_KNOB_ROW_MOMENTUM_DTYPE(X) MB_KNOB_ROW_PARAMS_BACK(X) MB_KNOB_ROW_ZERO3_APPLY(X) \
	MB_KNOB_ROW_NS_METHOD(X) MB_KNOB_ROW_PIN_MEMORY(X) MB_KNOB_ROW_FWD_BWD(X)
/* clang-format on */
#define MB_STEP_KNOBS(X) MB_KNOBS_STEP(X) MB_KNOBS_PLAN(X) MB_KNOBS_AT(X)

#define MB_KNOB_ENUM_(id, ...) MB_KNOB_##id,
enum mb_knob { MB_STEP_KNOBS(MB_KNOB_ENUM_) MB_NKNOBS };
#undef MB_KNOB_ENUM_

/* Room for every knob, and one more: C has no empty arrays. */
#define MB_KNOBS_ROOM (MB_NKNOBS + 1)

/* A row's AUTO: the words "|auto" the option adds, and each stage's word (NULL: none). */
#define MB_KNOB_AUTO_WORD(a)	    MB_KNOB_AUTO_WORD_##a
#define MB_KNOB_AUTO_WORD_NO_AUTO   ""
#define MB_KNOB_AUTO_WORD_AUTO(...) "|auto"
#define MB_KNOB_STAGE_WORDS(a)	    MB_KNOB_STAGE_WORDS_##a
#define MB_KNOB_STAGE_WORDS_NO_AUTO \
	{                           \
		NULL, NULL, NULL    \
	}
#define MB_KNOB_STAGE_WORDS_AUTO(s1, s2, s3) \
	{                                    \
		s1, s2, s3                   \
	}

struct mb_knob_info {
	const char *field, *option, *words, *dflt, *help; /* field NULL: past the last row */
	const char *stage_word[3]; /* AUTO's word for stages 1, 2 and 3; NULL: no auto */
	int since;
};

/* The table's rows, ended by one whose field is NULL. */
extern const struct mb_knob_info mb_knobs[MB_KNOBS_ROOM];

/* The place of WORD among knob K's words ("off|on": "on" is 1); -1 if it is none of them. */
int mb_knob_word(size_t k, const char *word);

/* Knob K's word at place I ("?" past its words), into BUF. */
const char *mb_knob_name(size_t k, unsigned i, char *buf, size_t len);

/*
 * WORD of knob K as the place of a word for STAGE: "auto" (a knob with
 * AUTO) as the stage's word; -1 if it is none of its words.
 */
int mb_knob_word_at(size_t k, const char *word, unsigned stage);

/* Whether WORD is the word knob K takes for STAGE under "auto" (false for a knob without). */
bool mb_knob_is_auto(size_t k, const char *word, unsigned stage);

/* "fp32 for ZeRO-1/2, bf16 for ZeRO-3 (auto)": what knob K's auto means, into BUF. */
const char *mb_knob_auto_text(size_t k, char *buf, size_t len);

#endif
