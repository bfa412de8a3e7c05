/*
 * mb_variant: the table of the step's variants, which everything reads: the
 * step's schedule (mb_step), the plan's peak (mb_plan_peak_step_bytes),
 * predict, --variant and its help, the results' reader and writer, report,
 * compare and plot. A variant is a row: its name, whether the Muon momentum
 * is pinned, how many batches may be in flight on the writeback side (0: the
 * writeback is synchronous on the compute queue), and whether the next
 * batch's gather is prefetched on a copy queue of its own. Adding a variant
 * is one row below, plus its schedule in mb_step and mb_predict if it needs
 * a new one. The math is the same in every variant: their final states are
 * bitwise equal.
 */
#ifndef MB_VARIANT_H
#define MB_VARIANT_H

#include <stdbool.h>
#include <stddef.h>

#include "mb_words.h"

/* X(ENUM, name, pins, writeback batches in flight, prefetch, help), SEP between rows */
#define MB_VARIANTS(X, SEP)                                                                \
	X(MASTER, "master", false, 0, false, "pageable momentum, synchronous writeback")   \
	SEP X(PIN, "pin", true, 0, false, "pinned momentum, synchronous writeback") SEP X( \
		OVERLAP, "overlap", false, 1, false,                                       \
		"pageable momentum, the writeback on the copy queue") SEP                  \
	X(BOTH, "both", true, 1, false, "pin and overlap: the reference change") SEP       \
	X(PIPELINE, "pipeline", true, 1, true,                                             \
	  "both, and the next batch's gather on a second copy queue") MB_TEST_VARIANT_ROW_(X, SEP)

/*
 * A row that only tests build (-DMB_TEST_VARIANT, tests/variant_row.sh): a
 * combination no other row has, on the schedules there are, to show that a
 * row is all a variant needs to run, report and be compared.
 */
#ifdef MB_TEST_VARIANT
#define MB_TEST_VARIANT_ROW_(X, SEP) \
	SEP X(TWIN, "twin", false, 1, true, "test only: pipeline with pageable momentum")
#else
#define MB_TEST_VARIANT_ROW_(X, SEP)
#endif

#define MB_VARIANT_ENUM_(e, ...) MB_##e,
enum mb_variant { MB_VARIANTS(MB_VARIANT_ENUM_, ) MB_NVARIANTS };

/* "master|pin|overlap|both|pipeline", for a results column's words and the help */
#define MB_VARIANT_WORDS MB_WORDS(MB_VARIANTS)

/* What every other variant is compared with, and the reference change's. */
#define MB_VARIANT_BASE	     MB_MASTER
#define MB_VARIANT_REFERENCE MB_BOTH

struct mb_variant_info {
	const char *name;
	bool pins;		     /* the Muon momentum is pinned (with pin_memory) */
	unsigned writeback_inflight; /* batches written back on the copy queue while one computes */
	bool prefetch;		     /* the next batch's H2D while this one computes */
	const char *help;
};

extern const struct mb_variant_info mb_variants[MB_NVARIANTS];

/* The variant named by the LEN bytes at NAME; -1 when none is. */
int mb_variant_find(const char *name, size_t len);

/* Its name; "?" out of range. */
const char *mb_variant_name(enum mb_variant v);

static inline bool mb_variant_pins(enum mb_variant v)
{
	return mb_variants[v].pins;
}

static inline bool mb_variant_overlaps(enum mb_variant v)
{
	return mb_variants[v].writeback_inflight > 0;
}

static inline bool mb_variant_prefetches(enum mb_variant v)
{
	return mb_variants[v].prefetch;
}

/* Batches of the apply alive at once: computing, writing back, arriving. */
static inline unsigned mb_variant_alive(enum mb_variant v)
{
	return 1 + mb_variants[v].writeback_inflight + mb_variants[v].prefetch;
}

#endif
