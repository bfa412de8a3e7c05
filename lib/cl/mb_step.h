/*
 * mb_step: one rank under CPU optimizer offload on real host and device
 * buffers: its state (the host buffers, pinned as the settings say, the
 * resident bf16 params, the Newton-Schulz workspace, the pool of every
 * device buffer a step allocates), its step (the schedule, mb_sched, run on
 * the OpenCL engine), checkpoint and checksum.
 *
 * The variant (a row of mb_variant's table) decides three things only:
 * whether the Muon momentum is pinned, whether the writeback overlaps, and
 * whether the next batch's gather is prefetched on the prefetch queue
 * (pipeline, batched applies only). The math is the same in all of them, so
 * their final states are bitwise equal.
 */
#ifndef MB_STEP_H
#define MB_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_hostmem.h"
#include "mb_hostopt.h"
#include "mb_ledger.h"
#include "mb_model.h"
#include "mb_ns_cl.h"
#include "mb_phase.h"
#include "mb_plan.h"
#include "mb_sched.h"
#include "mb_variant.h"

struct mb_state {
	const struct mb_model *model;
	struct mb_step_settings set;
	struct mb_plan plan;
	const struct mb_cl *cl;
	struct mb_ledger *ledger;
	struct mb_ns ns;
	uint64_t *offset;	/* of each parameter in the flat grads and params */
	uint64_t *state_offset; /* in the momentum (Muon, in the apply order) or the AdamW moments
				 */
	struct mb_span *spans;	/* room for the checksum's */
	struct mb_hostbuf master, grads, momentum, adam_m, adam_v, staging;
	struct mb_hostbuf grads_bf16; /* ZeRO-3: the backward's bf16 grads (plan's
					 MB_HOST_GRADS_BF16) */
	cl_mem params;		      /* resident bf16 */
	cl_mem ds_buffer; /* DeepSpeed's resident offload buffer (plan.ds_buffer), held */
	uint64_t steps_done;
	struct mb_engine *engine; /* the OpenCL engine on cl */
	struct mb_sched sched;	  /* the step's schedule on it */
};

/*
 * The bytes of CLBlast's temporary buffer that the state of model M keeps on
 * CL's device for Newton-Schulz as SET says ("clblast.temp", every phase):
 * none where its GEMMs are not CLBlast's (16-bit, or calibrated); into
 * *BYTES; nothing is allocated.
 */
int mb_step_clblast_bytes(const struct mb_model *m, const struct mb_plan_settings *set,
			  const struct mb_cl *cl, uint64_t *bytes);

/*
 * Set up a fresh rank for model M: host buffers (pinned as the settings
 * say), initial parameters from the seed, the resident bf16 params and the
 * Newton-Schulz workspace on the device, through LEDGER.
 */
int mb_state_init(struct mb_state *s, const struct mb_model *m, const struct mb_step_settings *set,
		  const struct mb_cl *cl, struct mb_ledger *ledger);

/* One step; its times into *t. */
int mb_step(struct mb_state *s, struct mb_step_times *t);

/*
 * Save the optimizer state (master params, momentum, AdamW moments) to a
 * file and load it into freshly allocated pageable buffers, as loading a
 * checkpoint does. The pin variants re-pin the momentum at its next use.
 */
int mb_state_reload(struct mb_state *s);

/*
 * The checksum of the state a later step reads, into *SUM: the momentum (in
 * model order, whatever its layout), the master params, and the resident
 * bf16 params read back from the device.
 */
int mb_state_checksum(struct mb_state *s, uint64_t *sum);

/* Pinned host bytes now. */
uint64_t mb_state_pinned_bytes(const struct mb_state *s);

void mb_state_release(struct mb_state *s);

#endif
