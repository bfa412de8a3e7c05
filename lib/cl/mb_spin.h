/*
 * mb_spin: a device kernel that keeps a queue busy for a given time
 * (kernels/spin.cl), calibrated once on the device: how long one of its
 * iterations takes, from its own profiling events. It stands in for work
 * whose time is known but whose kernel is not ours to run (calibrated
 * Newton-Schulz: the framework's rate).
 */
#ifndef MB_SPIN_H
#define MB_SPIN_H

#include "mb_cl.h"

struct mb_spin {
	const struct mb_cl *cl;
	cl_kernel kernel;
	cl_mem sink; /* where the kernel writes its one float: the caller's, not owned */
	cl_ulong sink_off;
	double iter_s;	   /* seconds of one iteration, measured */
	double overhead_s; /* of a launch of no iterations, measured */
};

/*
 * Create the kernel, writing its float to SINK at element SINK_OFF (a
 * scratch float of the caller's, which it must keep while SP lives), and
 * measure: the launch alone, then runs of doubling length until one lasts
 * 20 ms, whose time less the launch's gives a seconds per iteration (the
 * fastest of three). A driver that does not time events is -MB_EFAIL
 * saying so.
 */
int mb_spin_init(struct mb_spin *sp, const struct mb_cl *cl, cl_mem sink, uint64_t sink_off);

/*
 * Enqueue on Q a spin of SECONDS (0: the launch alone); its event into *EV
 * unless EV is NULL.
 */
int mb_spin_enqueue(struct mb_spin *sp, cl_command_queue q, double seconds, cl_event *ev);

/* Release the kernel; of a zeroed SP, nothing. */
void mb_spin_release(struct mb_spin *sp);

#endif
