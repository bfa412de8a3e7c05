/*
 * mb_run: a fresh state, the steps, the means of the measured ones.
 */
#include "mb_run.h"
#include "mb_phase.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_clock.h"
#include "mb_err.h"

#define MEMCPY_BYTES_MAX (256u << 20)

/*
 * A plain memcpy's rate, read plus write, over up to 256 MiB of SRC (best of
 * three): the scale the host optimizer's rate is read against.
 */
static double memcpy_gbs(const void *src, uint64_t bytes)
{
	double best = 0, t;
	void *dst;
	int i;

	bytes = bytes < MEMCPY_BYTES_MAX ? bytes : MEMCPY_BYTES_MAX;
	dst = bytes ? malloc(bytes) : NULL;
	if (!dst)
		return NAN;
	memcpy(dst, src, bytes); /* fault the pages in first */
	for (i = 0; i < 3; i++) {
		t = mb_now_s();
		memcpy(dst, src, bytes);
		__asm__ volatile("" : : "r"(dst) : "memory"); /* the copy must happen */
		t = mb_now_s() - t;
		if (t > 0 && 2.0 * (double)bytes / t / 1e9 > best)
			best = 2.0 * (double)bytes / t / 1e9;
	}
	free(dst);
	return best;
}

static void add_phase(struct mb_phase_times *sum, const struct mb_phase_times *p, double w)
{
#define ADD_(e, f, ...) sum->f += w * p->f;
	MB_PHASES(ADD_)
#undef ADD_
	sum->d2h_hidden_s += w * p->d2h_hidden_s;
}

/* Divide the sums of the measured steps by their number (NaN for none). */
static void means(struct mb_run_result *r, unsigned measured)
{
	double w = measured ? 1.0 / measured : NAN;
	struct mb_phase_times sum = r->phase;

	r->iter_mean_s *= w;
	r->apply_mean_s *= w;
	memset(&r->phase, 0, sizeof(r->phase));
	add_phase(&r->phase, &sum, w);
}

static int steps(struct mb_state *st, const struct mb_run_settings *s, volatile sig_atomic_t *stop,
		 struct mb_run_result *r, unsigned *measured)
{
	unsigned i;
	struct mb_step_times t;
	int err = 0;

	for (i = 1; i <= s->steps && !err; i++) {
		if (stop && *stop) {
			r->interrupted = true;
			break;
		}
		if ((err = mb_step(st, &t))) {
			mb_err_prefix("step %u", i);
			break;
		}
		r->iter_s[i - 1] = t.iter_s;
		r->apply_s[i - 1] = t.apply_s;
		r->steps_done = i;
		if (s->on_step)
			s->on_step(s->on_step_ctx, i);
		if (i >= s->measure_first && i <= s->measure_last) {
			r->iter_mean_s += t.iter_s;
			r->apply_mean_s += t.apply_s;
			add_phase(&r->phase, &t.phase, 1.0);
			if (t.timing_error[0] && !r->timing_error[0])
				snprintf(r->timing_error, sizeof(r->timing_error), "%s",
					 t.timing_error);
			++*measured;
		}
		if (i == s->resume_at)
			err = mb_state_reload(st);
	}
	return err;
}

/* BYTES over SECONDS in GB/s; NaN when nothing was timed. */
static double gbs(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes / seconds / 1e9 : NAN;
}

void mb_run_result_unrun(struct mb_run_result *r)
{
	memset(r, 0, sizeof(*r));
	r->host_opt_gbs = r->memcpy_gbs = NAN;
	r->h2d_gbs = r->d2h_gbs = r->params_h2d_gbs = NAN;
	means(r, 0);
}

int mb_run_once(const struct mb_model *m, const struct mb_run_settings *s, const struct mb_cl *cl,
		volatile sig_atomic_t *stop, struct mb_run_result *r)
{
	struct mb_ledger ledger;
	struct mb_state st;
	unsigned measured = 0;
	int err;

	memset(r, 0, sizeof(*r));
	r->host_opt_gbs = r->memcpy_gbs = NAN;
	r->h2d_gbs = r->d2h_gbs = r->params_h2d_gbs = NAN;
	if (s->steps > MB_CSV_STEPS_MAX || !s->measure_first ||
	    s->measure_first > s->measure_last || s->measure_last > s->steps)
		return mb_bad_input("--measure %u-%u does not fit in %u steps", s->measure_first,
				    s->measure_last, s->steps);
	mb_ledger_init(&ledger, cl, s->device_mem_limit);
	err = mb_state_init(&st, m, &s->step, cl, &ledger);
	if (err) {
		mb_run_result_unrun(r);
	} else {
		r->plan_peak_step_bytes =
			mb_plan_peak_step_bytes(&st.plan, mb_variant_alive(s->step.variant));
		r->clblast_temp_bytes = st.ns.temp_bytes;
		err = steps(&st, s, stop, r, &measured);
		means(r, measured);
		if (!err)
			err = mb_state_checksum(&st, &r->checksum);
		r->pinned_host_bytes = mb_state_pinned_bytes(&st);
		r->momentum_pinned = st.momentum.pinned;
		snprintf(r->ns_kernel, sizeof(r->ns_kernel), "%s", mb_ns_kernel_name(&st.ns));
		r->host_opt_gbs =
			mb_hostopt_bytes(m->numel_muon, m->numel_adamw) / r->phase.host_opt_s / 1e9;
		r->memcpy_gbs = memcpy_gbs(st.master.ptr, st.master.bytes);
		r->h2d_gbs = gbs(st.plan.apply_h2d_bytes, r->phase.h2d_s);
		r->d2h_gbs = gbs(st.plan.apply_d2h_bytes, r->phase.d2h_s);
		r->params_h2d_gbs = gbs(st.plan.params_h2d_bytes, r->phase.params_h2d_s);
		mb_state_release(&st);
	}
	r->peak_bytes = ledger.peak_bytes;
	r->peak_forward_bytes = mb_ledger_phase_peak(&ledger, "forward");
	r->peak_backward_bytes = mb_ledger_phase_peak(&ledger, "backward");
	r->peak_step_bytes = mb_ledger_phase_peak(&ledger, "step");
	r->own_peak_bytes = ledger.own_peak_bytes;
	r->own_peak_forward_bytes = mb_ledger_phase_own_peak(&ledger, "forward");
	r->own_peak_backward_bytes = mb_ledger_phase_own_peak(&ledger, "backward");
	r->own_peak_step_bytes = mb_ledger_phase_own_peak(&ledger, "step");
	mb_ledger_release(&ledger);
	return err;
}
