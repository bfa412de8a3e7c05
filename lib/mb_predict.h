/*
 * mb_predict: the step's schedule as a small discrete-event model, run from
 * a device profile (mb_profile) with no device, for any model, like
 * mb_plan.
 *
 * It replays what mb_step enqueues and waits for, from the same plan and
 * the same step settings: a compute queue and a copy queue (in order, each
 * command starting once the one before it on its queue is done, the ones
 * it waits on are done and the host has enqueued it) and the host thread
 * (which enqueues, waits for events and does the host optimizer's work).
 *
 *   forward    the synthetic forward/backward's GEMMs at fwd_bwd_gflops,
 *              the backward's stage by stage (the head, then each layer);
 *   backward   per gradient bucket the fp32 fill (fill_gbs), the rounding to
 *              bf16 (ZeRO-3: D2H to the host's bf16 grads and back), the
 *              widening (cast_gbs), the norm's kernel (norm_gbs)
 *              and the bucket's fp32 D2H: ZeRO-1/2's on the compute queue
 *              after the GEMMs; ZeRO-3's, after the fill and the rounding,
 *              on the copy queue as soon as the stage that completes the
 *              bucket (mb_plan_bucket_stage) is enqueued, the next bucket's
 *              fill waiting for its fp32 D2H;
 *   apply      per batch (ZeRO-1/2, ZeRO-3 batched) or sub-group (ZeRO-3): the grads and
 *              momentum H2D, the momentum kernel (reads grads and momentum,
 *              writes both), ZeRO-3's bf16 cast of the grads (cast_gbs), Newton-Schulz
 *              per matrix (mb_ns_flops at the method's GFLOP/s at that
 *              many FLOPs, interpolated on the profile's ladder, which
 *              times it with its norm: not charged apart), the
 *              writeback of each update and of the momentum; synchronously
 *              on the compute queue, or overlapped on the copy queue after
 *              the next unit is queued, behind a host wait (or an event
 *              wait list) on the unit's compute, at most one unit computing
 *              and one in flight, drained at each sub-group's end;
 *   host opt   mb_hostopt_bytes at host_opt_gbs, plus the unscale-and-clip
 *              pass (8 bytes an element) and, for params back pageable, the
 *              cast (6 bytes an element) at memcpy_gbs;
 *   params     the bf16 params H2D, and the host waits.
 *
 * A copy's rate is its direction's, pinned or pageable as the host buffer
 * is in the run (pin_memory, the variant's momentum, params_back); an H2D
 * and a D2H at once share both_pinned_gbs (both_pageable_gbs if either is
 * pageable) when that is less than the sum of their rates. With
 * pageable_holds_host, the host that enqueues a pageable copy waits for it
 * to finish. Each device command takes command_overhead_us more.
 */
#ifndef MB_PREDICT_H
#define MB_PREDICT_H

#include "mb_model.h"
#include "mb_plan.h"
#include "mb_profile.h"
#include "mb_step.h"

/*
 * Predict one step of model M (a step after the first: ZeRO-3's first makes
 * its momentum on the device instead of copying it, and the run measures
 * from the second) under plan PLAN (built from SET->plan) and
 * step settings SET, on the device PROF describes, into *t: iter_s and
 * apply_s as the host clock would read them, and every phase of t->phase as
 * the run times it (device spans summed by kind, d2h_hidden_s the D2H time
 * the compute queue was busy too). grad_norm and grad_scale are NaN. Returns
 * 0, or -MB_EFAIL (out of host memory).
 */
int mb_predict_step(const struct mb_model *m, const struct mb_plan *plan,
		    const struct mb_step_settings *set, const struct mb_profile *prof,
		    struct mb_step_times *t);

#endif
