/*
 * mb_profile_measure: a device profile (mb_profile) measured on the device
 * at hand, in under a minute on a CPU device, with the benchmark's own
 * instruments: the copies of mb_bandwidth, Newton-Schulz and its GEMMs of
 * mb_nsbench, the elementwise kernels by their events, the host optimizer's
 * own loops (mb_hostopt) by the host clock.
 *
 *   holds host  before the rounds, when a pageable copy's enqueue call
 *               takes over half its time: the driver stages it on the
 *               host's thread, before its event starts;
 *   copies      in the rounds, COPY_BYTES each way, pinned and pageable,
 *               and both ways at once, and 1 MiB ones around them, every
 *               other one's source written shortly before it
 *               (mb_bw_measure_spread): by the device's events, but a
 *               pageable copy that holds the host by the host clock (what
 *               a caller waits, staging included), and any copy where the
 *               driver gives no event times;
 *   rounds      Newton-Schulz by each method on each of the NS shapes, a
 *               ladder point each (by the method's FLOPs), its GEMMs alone
 *               on the last shape (standard: the forward/backward's rate),
 *               the momentum kernel, the bf16 cast and the norm's partial
 *               sums (mb_ns_sumsq_bf16, the kernel the step runs on the
 *               device) by their events, the backward's gradient fill and
 *               the host optimizer by the host clock: one untimed run of
 *               each, then 4 x REPS interleaved rounds, each figure timed
 *               once a round (a shape past 512x1536's 7e9 FLOPs in
 *               ROUNDS x 7e9 / FLOPs of them, at least one, spread evenly,
 *               so that it takes about as long; a small shape's sample is
 *               a batch of its matrices back to back, up to 256x768's
 *               8.7e8 FLOPs and at most 16, as a step runs one behind
 *               another), each charged at its total work over its total
 *               time: the mean of its times, which a mean step reflects on
 *               a machine whose speed moves, where a median of runs in a
 *               row is the speed of that moment;
 *   time bound  the rounds are held to about ROUNDS_BUDGET_S, whatever
 *               the shapes: a figure whose samples would take more than
 *               its share is timed in fewer rounds (one at least), the
 *               slowest first, as its warm-up and then its own samples
 *               say (profile --shape 1x100000 took 122 s);
 *   overhead    the host clock of a 4 KiB pinned H2D.
 */
#ifndef MB_PROFILE_MEASURE_H
#define MB_PROFILE_MEASURE_H

#include <stdint.h>

#include "mb_cl.h"
#include "mb_ns_cl.h"
#include "mb_profile.h"

/* What the measuring took, and which figures the time bound cut. */
struct mb_profile_measure_report {
	double total_s, rounds_s; /* all of it; the rounds, warm-up included */
	unsigned rounds;
	size_t ncut;   /* figures timed in fewer rounds than they would have been */
	char cut[256]; /* "1x100000 gram 3 of 20, ..." */
};

struct mb_profile_measure_settings {
	uint64_t copy_bytes; /* of each copy */
	/* the shapes Newton-Schulz is timed on, 1 to MB_PROFILE_LADDER_MAX */
	const uint64_t *ns_rows, *ns_cols;
	size_t ns_nshapes;
	uint64_t elementwise_elems; /* of the momentum kernel and the host optimizer */
	unsigned reps;		    /* of each copy; the rounds are 4 x REPS */
	uint64_t seed;
	enum mb_precision ns_precision[MB_NS_NMETHODS]; /* of Newton-Schulz's GEMMs, by method */
	double rounds_budget_s;				/* the rounds' bound, about; 0: none */
	struct mb_profile_measure_report *report;	/* filled when not NULL */
};

/*
 * Measure the device CL (and this host) into *p, named by the device, and
 * what it took into *s->report. A failed command is -MB_EFAIL; a driver that
 * gives no event time makes the host clock stand in, said in p->device.
 */
int mb_profile_measure(const struct mb_cl *cl, const struct mb_profile_measure_settings *s,
		       struct mb_profile *p);

#endif
