/*
 * mb_spin: a calibrated busy kernel (see mb_spin.h).
 */
#include "mb_spin.h"

#include <math.h>
#include <string.h>

#include "mb_err.h"

/* A calibration run lasts at least this long, so that the clock's grain is small beside it. */
#define CALIBRATE_S 0.02

static int launch(struct mb_spin *sp, cl_command_queue q, cl_ulong iterations, cl_event *ev)
{
	const float a = 0.999999f, b = 1e-3f;
	const size_t one = 1;
	cl_int st;

	st = clSetKernelArg(sp->kernel, 0, sizeof(sp->sink), &sp->sink);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(sp->kernel, 1, sizeof(sp->sink_off), &sp->sink_off);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(sp->kernel, 2, sizeof(iterations), &iterations);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(sp->kernel, 3, sizeof(a), &a);
	if (st == CL_SUCCESS)
		st = clSetKernelArg(sp->kernel, 4, sizeof(b), &b);
	if (mb_cl_check(sp->cl, st, "clSetKernelArg", "spin, %llu iterations",
			(unsigned long long)iterations))
		return -MB_EFAIL;
	st = clEnqueueNDRangeKernel(q, sp->kernel, 1, NULL, &one, &one, 0, NULL, ev);
	return mb_cl_check(sp->cl, st, "clEnqueueNDRangeKernel", "spin, %llu iterations",
			   (unsigned long long)iterations);
}

/* The device time of a spin of ITERATIONS, the fastest of three, into *SECONDS. */
static int time_of(struct mb_spin *sp, cl_ulong iterations, double *seconds)
{
	double start, end;
	cl_event ev;
	int k, err;

	*seconds = INFINITY;
	for (k = 0; k < 3; k++) {
		if ((err = launch(sp, sp->cl->compute, iterations, &ev)))
			return err;
		err = mb_cl_check(sp->cl, clWaitForEvents(1, &ev), "clWaitForEvents",
				  "spin, %llu iterations", (unsigned long long)iterations);
		if (!err)
			err = mb_cl_event_span(sp->cl, ev, "a calibration spin", &start, &end);
		clReleaseEvent(ev);
		if (err)
			return err;
		if (end - start < *seconds)
			*seconds = end - start;
	}
	return 0;
}

int mb_spin_init(struct mb_spin *sp, const struct mb_cl *cl, cl_mem sink, uint64_t sink_off)
{
	cl_ulong n = 1 << 10;
	double t = 0;
	int err;

	memset(sp, 0, sizeof(*sp));
	sp->cl = cl;
	sp->sink = sink;
	sp->sink_off = sink_off;
	if ((err = mb_cl_kernel(cl, "spin", &sp->kernel)) ||
	    (err = time_of(sp, 0, &sp->overhead_s)))
		goto out_release;
	while (n < ((cl_ulong)1 << 40) && !err) {
		if ((err = time_of(sp, n, &t)) || t >= CALIBRATE_S)
			break;
		n *= 2;
	}
	if (err)
		goto out_release;
	sp->iter_s = (t > sp->overhead_s ? t - sp->overhead_s : t) / (double)n;
	/* a timer too coarse to see it, or a loop the compiler left out, times nothing */
	if (t < CALIBRATE_S || !(sp->iter_s > 0) || !isfinite(sp->iter_s)) {
		err = mb_fail("the spin kernel on '%s' cannot be timed: %.3g s for %llu "
			      "iterations (calibrated Newton-Schulz needs it)",
			      cl->info.name, t, (unsigned long long)n);
		goto out_release;
	}
	return 0;

out_release:
	mb_spin_release(sp);
	return err;
}

int mb_spin_enqueue(struct mb_spin *sp, cl_command_queue q, double seconds, cl_event *ev)
{
	double n = seconds > sp->overhead_s ? (seconds - sp->overhead_s) / sp->iter_s : 0;

	return launch(sp, q, n < 9e18 ? (cl_ulong)llround(n) : (cl_ulong)9e18, ev);
}

void mb_spin_release(struct mb_spin *sp)
{
	if (sp->kernel)
		clReleaseKernel(sp->kernel);
	memset(sp, 0, sizeof(*sp));
}
