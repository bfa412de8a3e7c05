/*
 * mb_fit: whether a cell (a model, a stage, a variant and the knobs) fits
 * this host and this device, worked out before anything is allocated; and,
 * when it does not, why and what would.
 *
 * What a cell needs comes from its plan, for the one rank that run replays:
 *   host    every host buffer of the plan; on a CPU device, whose memory is
 *           the host's, the device's peak as well;
 *   pinned  each pinned buffer (the grads and the bf16 staging with
 *           pin_memory on, the Muon momentum too in pin and both) is one
 *           allocation of the device;
 *   device  the highest of the phases' peaks: the synthetic forward/backward
 *           with its buffers, the backward stand-in with its gradient
 *           bucket, and the step as the plan predicts it, each with
 *           CLBlast's temporaries where the caller gives them (they depend
 *           on the device); and each buffer one allocation of the device;
 *           where the driver keeps a device copy of pinned host memory
 *           (NVIDIA's OpenCL, CL_MEM_ALLOC_HOST_PTR), every pinned byte too.
 * These are held against what the host has available (mb_host_mem_available;
 * the host buffers of every rank on the host at once, mb_fit_host's ranks),
 * the device's global memory (or --device-mem-limit where that is less) and
 * its maximum allocation, as the caller read them once: the same figures that
 * the run's own checks use, so that a message quotes what was checked.
 *
 * A reason names each shortfall with its figures, then what would fit, each
 * suggestion checked the same way: the largest --layers, --pin-memory off, a
 * smaller --gather-budget or --sub-group-size, a shorter --seq (or
 * --fwd-bwd off), the largest built-in --model smaller than this one.
 */
#ifndef MB_FIT_H
#define MB_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_model.h"
#include "mb_plan.h"

/* What the host has for a run. */
struct mb_fit_host {
	uint64_t available_bytes;
	char where[128]; /* where the figure comes from: "MemAvailable" */
	/*
	 * The ranks on this host that run the cell at once (run under MPI: its
	 * local ranks), each its own share as large as this one's: the node's
	 * sum, RANKS times this rank's host bytes, is held against the host.
	 * 0 or 1: this rank alone.
	 */
	unsigned ranks;
};

struct mb_fit_cell;

/* What the device has, as read once when it was opened. */
struct mb_fit_device {
	char name[128];
	uint64_t global_mem_bytes, max_alloc_bytes;
	uint64_t device_alloc_limit; /* a device buffer's: max_alloc_bytes, or more (Intel's flag)
				      */
	uint64_t limit_bytes;	     /* --device-mem-limit; 0: none */
	bool host_memory;	     /* a CPU device: its buffers are host memory too */
	/*
	 * CLBlast's temporaries on this device for model M under cell C, into
	 * C's clblast_bytes and clblast_fwd_bytes; asked for the cell and for
	 * each model and cell a suggestion checks (a smaller model's GEMMs need
	 * less). NULL: the cell's figures as given. Nonzero: they are left out.
	 */
	int (*clblast)(const struct mb_model *m, struct mb_fit_cell *c, void *ctx);
	void *clblast_ctx;
};

/* A cell, as run allocates it. */
struct mb_fit_cell {
	struct mb_plan_settings plan; /* its world is one rank, as run's */
	bool pin_memory;	      /* the grads and the staging pinned */
	bool pins_momentum;	      /* the variant pins the momentum (pin, both) */
	unsigned alive;		      /* the variant's batches alive at once (mb_variant_alive) */
	uint64_t tokens;	      /* of the synthetic forward/backward; 0: off */
	uint64_t micro_batch;	      /* tokens is --seq times this (0: taken as 1) */
	/* CLBlast's temporary buffers on the device (mb_fit_device's clblast; 0
	   where not known): Newton-Schulz's, held in every phase, and the
	   forward/backward's, in that phase */
	uint64_t clblast_bytes, clblast_fwd_bytes;
	bool clblast_known; /* the two are the device's (set by mb_fit_check's asking) */
	/* the driver keeps a copy of pinned host memory on the device (mb_pinned_copy's verdict) */
	bool pinned_device_copy;
	bool nv_pinning; /* the platform pins without that copy (--pinned-alloc nv) */
};

/* What a cell needs. The names are static strings. */
struct mb_fit_need {
	uint64_t host_bytes;	       /* the device's peak included where it is host memory */
	uint64_t device_in_host_bytes; /* that part of host_bytes */
	uint64_t pinned_largest_bytes; /* 0: nothing pinned */
	const char *pinned_largest;    /* "grads", as the run names its buffers */
	uint64_t device_peak_bytes;
	const char *device_peak_phase; /* "step", "backward" or "forward/backward" */
	uint64_t device_largest_bytes;
	const char *device_largest; /* the ledger's tag: "params.bf16" */
	/* the driver's copy of the pinned host memory, apart from the peak (the framework's
	 * figure), on the device all the time: 0 where it keeps none */
	uint64_t pinned_device_bytes;
};

/*
 * What cell C of model M needs, into *need, with HOST_MEMORY as
 * mb_fit_device's. Returns 0, or the plan's error (-MB_EINPUT for bad
 * settings, -MB_EFAIL out of host memory).
 */
int mb_fit_need(const struct mb_model *m, const struct mb_fit_cell *c, bool host_memory,
		struct mb_fit_need *need);

/*
 * Whether cell C of model M fits host H and device D: 1 if it does; 0 if
 * not, with the reason (each shortfall with its figures, then what would
 * fit) in REASON (LEN bytes); or the plan's error, negative.
 */
int mb_fit_check(const struct mb_model *m, const struct mb_fit_cell *c, const struct mb_fit_host *h,
		 const struct mb_fit_device *d, char *reason, size_t len);

/*
 * Whether cell C of model M fits host H and device D, either of which may
 * be NULL (not checked): 1 if it does; 0 if not, with each shortfall and its
 * figures in REASON (LEN bytes), worded as mb_fit_check's reason but with
 * neither its "does not fit: " nor what would fit (mb_advise's points: the
 * sweep is its own suggestion); or the plan's error, negative.
 */
int mb_fit_shortfalls(const struct mb_model *m, const struct mb_fit_cell *c,
		      const struct mb_fit_host *h, const struct mb_fit_device *d, char *reason,
		      size_t len);

#endif
