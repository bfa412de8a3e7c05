/*
 * mb_sched: the step's schedule, written once against the engine interface
 * (mb_engine): what is enqueued on which queue, in what order, after what,
 * and where the host waits. Run on the OpenCL engine it is the step
 * (mb_step); run on the model engine it is the prediction (mb_predict).
 *
 *   forward    optional: the synthetic forward/backward's GEMMs;
 *   backward   the gradient buckets, made on the device and copied to the
 *              host fp32 grads, the last bucket first, ZeRO-3's during the
 *              GEMMs on the copy queue;
 *   apply      Muon: ZeRO-1/2 (and ZeRO-3 batched) in batches under the
 *              gather budget, ZeRO-3 per sub-group then per matrix; grads and
 *              momentum to the device, momentum and Nesterov, Newton-Schulz,
 *              the update and momentum back, synchronously on the compute
 *              queue or overlapped on the copy queue (and the next batch
 *              prefetched on the prefetch queue);
 *   host opt   the host's pass (Muon's update, AdamW, the bf16 staging);
 *   params     the bf16 staging to the resident device params.
 */
#ifndef MB_SCHED_H
#define MB_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_engine.h"
#include "mb_model.h"
#include "mb_plan.h"
#include "mb_hostopt.h"
#include "mb_knob.h"
#include "mb_variant.h"

/*
 * Ordering bugs a test plants in the schedule (tests/test_race.c), one at a
 * time, to show that the race checker names each; never set outside tests.
 */
enum mb_plant {
	MB_PLANT_NONE,
	MB_PLANT_WRITEBACK_NO_AFTER, /* the event writeback's copies wait for nothing */
	MB_PLANT_BUCKET_NO_AFTER,    /* ZeRO-3: a bucket refilled before the last copied out */
	MB_PLANT_EARLY_EVENT, /* a unit's buffer freed after its compute, not its writeback */
	MB_PLANT_GATHER_WRONG_QUEUE, /* a batch gathered on the copy queue, computed on compute */
	MB_PLANT_FREE_BEFORE_WAIT,   /* a unit's buffer back in the pool before its writeback */
	MB_PLANT_WAIT_AFTER_COPIES,  /* the writeback's host wait after its copies are enqueued */
	MB_PLANT_PARAMS_EARLY,	     /* the params back enqueued before the host optimizer */
	MB_PLANT_NO_ARRIVAL,	     /* pipeline: a prefetched batch computed without its gather */
	MB_PLANT_SUMS_EARLY,	     /* the norm's sums read before the reduce's queue finished */
	MB_PLANT_NO_FLUSH,	     /* the event writeback waits on compute never flushed */
	MB_NPLANTS
};

struct mb_timeline;

struct mb_step_settings {
	struct mb_plan_settings plan; /* stage, gather budget, sub-group size */
	enum mb_variant variant;
	bool pin_memory; /* offload_optimizer.pin_memory */
	uint64_t seed;
	struct mb_optim optim;
	double grad_clip;    /* DeepSpeed's gradient_clipping; 0: no clipping (the pass stays) */
	bool fwd_bwd;	     /* the synthetic forward/backward (mb_fwdbwd) */
	bool race_check;     /* every operation's accesses checked for races (mb_race) */
	enum mb_plant plant; /* tests only: an ordering bug planted; MB_PLANT_NONE */
	uint64_t tokens;     /* its seq x micro-batch */
	unsigned knob[MB_KNOBS_ROOM]; /* each knob of mb_knob's table: its word's place */
	unsigned ranks; /* the ranks whose collectives the step joins (the world); 0, 1: none */
	struct mb_timeline *timeline; /* where each step's spans go (mb_timeline); NULL: nowhere */
};

struct mb_step_times {
	double iter_s, apply_s; /* host clock, device synchronized */
	struct mb_phase_times phase;
	char timing_error[256]; /* why a phase is NaN; "" when every one was timed */
	double grad_norm;	/* of the step's gradients, as DeepSpeed clips by it */
	double grad_scale;	/* what the unscale-and-clip pass multiplied the grads by */
};

/* One rank's step as the schedule needs it: nothing here is owned. */
struct mb_sched {
	const struct mb_model *model;
	const struct mb_step_settings *set;
	const struct mb_plan *plan;
	const uint64_t *offset;	      /* of each parameter in the flat grads and params */
	const uint64_t *state_offset; /* in the momentum (apply order) or the AdamW moments */
	uint64_t steps_done;	      /* ZeRO-3's first step makes its momentum on the device */
	mb_devbuf params;	      /* the resident bf16 params */
	mb_devbuf ds_buffer;	      /* ZeRO-3's resident reduce bucket; NULL otherwise */
	struct mb_engine *engine;
	void (*host_pass)(void *arg, float scale); /* the host optimizer (mb_engine_host) */
	void *host_arg;
};

/*
 * The offsets of model M's parameters under PLAN: into *OFFSET (one
 * allocation, freed by the caller), 2 (nparams + 1) of them: the flat
 * offsets, then from *OFFSET + nparams + 1 the state offsets.
 */
int mb_sched_offsets(const struct mb_model *m, const struct mb_plan *plan, uint64_t **offset);

/* Pure: whether a step under SET holds host buffer B pinned. */
bool mb_sched_pinned(const struct mb_step_settings *set, enum mb_host_buffer b);

/*
 * One step of S on its engine; its times into *t (host clock: the
 * engine's). On failure, the engine has been stopped (mb_engine_abort)
 * and the error names the batch or sub-group.
 */
int mb_sched_step(struct mb_sched *s, struct mb_step_times *t);

#endif
