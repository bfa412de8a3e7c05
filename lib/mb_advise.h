/*
 * mb_advise: the offload settings worth changing, from a baseline (a
 * DeepSpeed config's, as the options read it) and a device profile. It
 * composes what exists and adds no model of its own: each point of the
 * sweep is a plan (mb_plan), a prediction on the model engine (mb_predict)
 * and the fit check's figures (mb_fit_need), held against the memory the
 * caller says there is.
 *
 * What is swept is what a DeepSpeed user can change and the step reads:
 * offload_optimizer.pin_memory, the writeback variant (the DeepSpeed change
 * each needs: mb_advise_needs), the Muon gather budget where the stage reads
 * it, ZeRO-3's sub_group_size and its apply (DeepSpeed's by sub-group, or
 * batched). Under a world of several ranks on one host every point is the
 * rank's share on the profile a rank sees beside the others
 * (mb_profile_for_ranks), as predict --world-size predicts it.
 *
 * The ranking: the fastest predicted iteration first; predictions within
 * MB_ADVISE_TIE of each other are taken as equal, and then the point that
 * needs the least device memory (overall peak, then the step's), the least
 * pinned host memory and the fewest changes wins; a point that offers
 * nothing a better one does not (the same code and pinning, times within a
 * tie, no less memory) is left out. Nothing here prints.
 */
#ifndef MB_ADVISE_H
#define MB_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_fit.h"
#include "mb_model.h"
#include "mb_profile.h"
#include "mb_sched.h"

/* Predicted iterations closer than this fraction are a tie (the cheaper in memory wins). */
#define MB_ADVISE_TIE 0.005

/* The values swept where the caller gives none: the baseline's joins them. */
#define MB_ADVISE_GATHER_BUDGETS                                         \
	{                                                                \
		256ull << 20, 512ull << 20, 1024ull << 20, 2048ull << 20 \
	}
#define MB_ADVISE_SUB_GROUP_SIZES                                       \
	{                                                               \
		100000000ull, 250000000ull, 500000000ull, 1000000000ull \
	}

#define MB_ADVISE_LIST_MAX 16

/* What a sweep varies around the baseline; a list of one value fixes it. */
struct mb_advise_space {
	enum mb_variant variants[MB_NVARIANTS];
	size_t nvariants;
	bool pin_memory[2]; /* the values of pin_memory swept */
	size_t npin;
	uint64_t gather_budgets[MB_ADVISE_LIST_MAX];
	size_t ngather_budgets;
	uint64_t sub_group_sizes[MB_ADVISE_LIST_MAX];
	size_t nsub_group_sizes;
	enum mb_zero3_apply applies[MB_NZ3_APPLIES];
	size_t napplies;
};

/* Why a point is not advised: none, it cannot be planned, or it does not fit. */
enum mb_advise_drop { MB_ADVISE_KEPT, MB_ADVISE_NO_PLAN, MB_ADVISE_NO_FIT };

struct mb_advise_point {
	struct mb_step_settings set; /* its world the caller's (the rank's share is planned) */
	struct mb_step_times t;	     /* predicted */
	uint64_t peak_device_bytes;  /* the highest phase's, the plan's (CLBlast's aside) */
	uint64_t peak_step_bytes;
	uint64_t pinned_host_bytes; /* this rank's */
	unsigned changes;	    /* settings that differ from the baseline's */
	enum mb_advise_drop drop;
	char reason[512]; /* why dropped: the plan's error, or each shortfall with its figures */
};

/*
 * The memory a point is held against; a NULL part is not checked. HOST's
 * ranks are the world's ranks on the host; DEVICE's clblast is asked as
 * mb_fit_check asks it.
 */
struct mb_advise_memory {
	const struct mb_fit_host *host;
	const struct mb_fit_device *device;
	uint64_t micro_batch;	 /* of the forward/backward's tokens (mb_fit_cell's) */
	bool pinned_device_copy; /* the driver keeps pinned host memory on the device too */
};

struct mb_advise {
	struct mb_advise_point base;	/* the baseline, predicted and checked as the others */
	struct mb_advise_point *points; /* the kept ones ranked, best first, then the dropped */
	size_t npoints, nkept;
	/* points left out: the same plan as one before (a budget past the model), or a ranked
	 * point's equal (the same code and pinning, times within a tie, no less memory) */
	size_t nsame;
	struct mb_profile profile; /* what the points were predicted on (the rank's) */
};

/*
 * Sweep SPACE around BASE (the baseline's step settings, its world the
 * ranks on one host) for model M (whole: the rank's share is cut here) on
 * profile P (what one rank measured), each point held against MEM, into *A
 * (release with mb_advise_release, also on failure). Returns 0, -MB_EINPUT
 * when the baseline itself cannot be planned (the plan's message), or
 * -MB_EFAIL out of host memory.
 */
int mb_advise_sweep(struct mb_advise *a, const struct mb_model *m,
		    const struct mb_step_settings *base, const struct mb_advise_space *space,
		    const struct mb_profile *p, const struct mb_advise_memory *mem);

void mb_advise_release(struct mb_advise *a);

/*
 * Which DeepSpeed code the point's settings need, for people: "DeepSpeed
 * master", "the pin change", "the overlap change", "the reference change
 * (pin and overlap)", or what is beyond the reference (a prefetching
 * variant, a batched ZeRO-3 apply). A static string.
 */
const char *mb_advise_needs(const struct mb_step_settings *s);

/* Whether the point's settings need code that no DeepSpeed change has written yet. */
bool mb_advise_beyond(const struct mb_step_settings *s);

/*
 * Whether the points' measured iterations (MEASURED[i] for point I of N, in
 * the order predicted: PREDICTED ascending) keep the predicted order: every
 * pair whose predictions are not a tie (MB_ADVISE_TIE) is measured in the
 * same order.
 */
bool mb_advise_order_agrees(const double *predicted, const double *measured, size_t n);

#endif
