/*
 * mb_engine_model: the model engine (mb_engine): each operation of the
 * schedule timed on a small discrete-event model of the device that a
 * profile (mb_profile) describes, with no device: predict is the schedule
 * run on it (mb_predict).
 *
 * A compute queue, a copy queue and a prefetch queue, each in order (a
 * command starts once the one before it on its queue is done, the ones it
 * waits on are done and the host has enqueued it), and the host thread,
 * which is the schedule: it enqueues, waits, and does the host's work
 * (mb_hostopt_bytes at host_opt_gbs and the streamed passes at
 * host_stream_gbs, or memcpy_gbs where the profile has none, and
 * host_pass_us more a pass). It enqueues each Newton-Schulz in its
 * method's ns_*_enqueue_us at its FLOPs (ns_enqueue_us where the profile
 * has no such ladder), while the device's other kernels run at
 * 1 - enqueue_contention_frac for ns_enqueue_us of it at most (a CPU
 * device's cores shared with the host).
 *
 *   work       the forward's FLOPs at forward_gflops, the backward's stage by
 *              stage at backward_gflops (each at fwd_bwd_gflops where the
 *              profile has none); gradient fills at fill_gbs (4 bytes an element);
 *              casts and widenings at cast_gbs (6); the norm's sums at
 *              norm_gbs (2); the momentum kernel at momentum_gbs (reads
 *              grads and momentum, writes both; the bf16 one at
 *              momentum_bf16_gbs where the profile has it; each at its
 *              size where it has the small figures); Newton-Schulz at
 *              mb_ns_flops FLOPs at the method's rate for that many FLOPs,
 *              interpolated on the profile's ladder;
 *   copies     at their direction's rate, pinned or pageable as the step
 *              holds the host buffer (mb_sched_pinned); an H2D and a D2H at
 *              once share both_pinned_gbs (both_pageable_gbs if either is
 *              pageable) when that is less than the sum of their rates;
 *              with pageable_holds_host, the host that enqueues a pageable
 *              copy waits for it to finish.
 *
 * Each device command takes command_overhead_us more. Device buffers cost
 * nothing here: mb_plan and the ledger count them.
 */
#ifndef MB_ENGINE_MODEL_H
#define MB_ENGINE_MODEL_H

#include "mb_engine.h"
#include "mb_model.h"
#include "mb_plan.h"
#include "mb_profile.h"
#include "mb_sched.h"

/*
 * A new model engine into *OUT (mb_engine_destroy frees it) for model M
 * under PLAN and the step settings SET, on the device PROF describes.
 * Nothing here is owned.
 */
int mb_engine_model_new(const struct mb_profile *prof, const struct mb_model *m,
			const struct mb_plan *plan, const struct mb_step_settings *set,
			struct mb_engine **out);

#endif
