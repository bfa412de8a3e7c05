/*
 * mb_fit: a cell's host, pinned and device bytes from its plan, held against
 * the host's and the device's figures; the reason of a cell that does not
 * fit, and the changes that would make it fit, each checked (see mb_fit.h).
 */
#include "mb_fit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mb_config.h"
#include "mb_err.h"
#include "mb_fwdbwd.h"
#include "mb_num.h"

enum shortfall {
	SHORT_HOST = 1,	  /* the host buffers are more than the host has */
	SHORT_PINNED = 2, /* a pinned buffer is more than one allocation */
	SHORT_PEAK = 4,	  /* the device's peak is more than its memory */
	SHORT_ALLOC = 8,  /* a device buffer is more than one allocation */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Make BYTES named TAG the largest so far if it is. */
static void largest(uint64_t *top, const char **top_name, uint64_t bytes, const char *tag)
{
	if (bytes > *top) {
		*top = bytes;
		*top_name = tag;
	}
}

/*
 * The largest pinned allocation of the cell: pinned buffers are cut into
 * chunks of at most one allocation between parameters, so it is the largest
 * parameter of a pinned buffer (mb_step names the buffers so).
 */
static void pinned(const struct mb_model *m, const struct mb_plan *plan,
		   const struct mb_fit_cell *c, struct mb_fit_need *n)
{
	if (!c->pin_memory)
		return;
	largest(&n->pinned_largest_bytes, &n->pinned_largest,
		mb_plan_host_largest_piece(plan, m, MB_HOST_GRADS), "grads");
	largest(&n->pinned_largest_bytes, &n->pinned_largest,
		mb_plan_host_largest_piece(plan, m, MB_HOST_STAGING), "bf16 staging");
	if (c->pins_momentum)
		largest(&n->pinned_largest_bytes, &n->pinned_largest,
			mb_plan_host_largest_piece(plan, m, MB_HOST_MOMENTUM), "Muon momentum");
}

/* The apply's largest buffer: a batch, or a sub-group (its update buffers are smaller). */
static void apply_buffer(const struct mb_plan *plan, struct mb_fit_need *n)
{
	uint64_t gathered;

	if (!plan->ngroups)
		return;
	gathered = plan->groups[plan->largest_group].gathered_numel;
	largest(&n->device_largest_bytes, &n->device_largest,
		mb_plan_batched(&plan->set) ? mb_plan_batch_bytes(plan, gathered)
					    : mb_plan_subgroup_bytes(plan, gathered),
		mb_plan_batched(&plan->set) ? "apply.batch" : "apply.subgroup");
}

/*
 * The device's phases: what stays allocated (the resident params and the
 * Newton-Schulz workspace) plus each phase's own buffers.
 */
static void device(const struct mb_model *m, const struct mb_plan *plan,
		   const struct mb_fit_cell *c, struct mb_fit_need *n)
{
	uint64_t base = plan->resident_bytes + plan->ds_buffer_bytes + plan->ns_workspace_bytes +
			c->clblast_bytes,
		 fb_largest,
		 piece = plan->piece_during_elems > plan->piece_after_elems
				 ? plan->piece_during_elems
				 : plan->piece_after_elems,
		 after = plan->piece_after_elems
				 ? plan->bucket_bf16_bytes + plan->norm_bytes +
					   mb_plan_piece_bytes(plan, plan->piece_after_elems)
				 : 0;
	const char *fb_tag;

	n->device_peak_bytes = sat_add(mb_plan_peak_step_bytes(plan, c->alive), c->clblast_bytes);
	n->device_peak_phase = "step";
	/* the backward stand-in's buckets reduced after the forward/backward's GEMMs */
	largest(&n->device_peak_bytes, &n->device_peak_phase, sat_add(base, after), "backward");
	largest(&n->device_largest_bytes, &n->device_largest, plan->resident_bytes, "params.bf16");
	largest(&n->device_largest_bytes, &n->device_largest, plan->ns_workspace_bytes,
		"ns.workspace");
	largest(&n->device_largest_bytes, &n->device_largest, plan->bucket_bf16_bytes,
		"bwd.bucket_bf16");
	largest(&n->device_largest_bytes, &n->device_largest, 4 * piece, "bwd.grad_fp32");
	largest(&n->device_largest_bytes, &n->device_largest, c->clblast_bytes, "clblast.temp");
	apply_buffer(plan, n);
	if (!c->tokens)
		return;
	/* its buffers, with those reduced during them (the plan's backward) */
	largest(&n->device_peak_bytes, &n->device_peak_phase,
		sat_add(plan->peak_backward_bytes, sat_add(c->clblast_bytes, c->clblast_fwd_bytes)),
		"forward/backward");
	largest(&n->device_largest_bytes, &n->device_largest, c->clblast_fwd_bytes,
		"clblast.fwd.temp");
	(void)mb_fwdbwd_bytes(m, c->tokens, &fb_largest, &fb_tag, NULL);
	largest(&n->device_largest_bytes, &n->device_largest, fb_largest, fb_tag);
}

int mb_fit_need(const struct mb_model *m, const struct mb_fit_cell *c, bool host_memory,
		struct mb_fit_need *need)
{
	struct mb_plan_settings set = c->plan;
	struct mb_plan plan;
	int b, err;

	memset(need, 0, sizeof(*need));
	set.world_size = 1; /* as mb_state_init: run replays one rank holding it all */
	set.rank = 0;
	set.tokens = c->tokens;
	if ((err = mb_plan_build(&plan, m, &set)))
		return err;
	for (b = 0; b < MB_HOST_NBUFFERS; b++)
		need->host_bytes = sat_add(need->host_bytes, plan.host_bytes[b]);
	pinned(m, &plan, c, need);
	device(m, &plan, c, need);
	if (c->pinned_device_copy && c->pin_memory)
		need->pinned_device_bytes = mb_plan_pinned_bytes(&plan, c->pins_momentum);
	if (host_memory) {
		need->device_in_host_bytes = need->device_peak_bytes;
		need->host_bytes = sat_add(need->host_bytes, need->device_peak_bytes);
	}
	mb_plan_release(&plan);
	return 0;
}

/* The device's memory: its global memory, or the --device-mem-limit where less. */
static uint64_t device_memory(const struct mb_fit_device *d)
{
	return d->limit_bytes && d->limit_bytes < d->global_mem_bytes ? d->limit_bytes
								      : d->global_mem_bytes;
}

/* The host bytes of every rank on the host: this rank's N times the ranks. */
static uint64_t node_host_bytes(const struct mb_fit_need *n, const struct mb_fit_host *h)
{
	unsigned ranks = h->ranks > 1 ? h->ranks : 1;

	return n->host_bytes > UINT64_MAX / ranks ? UINT64_MAX : n->host_bytes * ranks;
}

/* What N is short of on host H and device D; a NULL one is not checked. */
static unsigned shortfalls(const struct mb_fit_need *n, const struct mb_fit_host *h,
			   const struct mb_fit_device *d)
{
	unsigned s = 0;

	if (h && node_host_bytes(n, h) > h->available_bytes)
		s |= SHORT_HOST;
	if (!d)
		return s;
	return s | (n->pinned_largest_bytes > d->max_alloc_bytes ? SHORT_PINNED : 0) |
	       (sat_add(n->device_peak_bytes, n->pinned_device_bytes) > device_memory(d)
			? SHORT_PEAK
			: 0) |
	       (n->device_largest_bytes > d->device_alloc_limit ? SHORT_ALLOC : 0);
}

/* Cell C for model M with CLBlast's temporaries as device D gives them. */
static struct mb_fit_cell with_clblast(const struct mb_model *m, const struct mb_fit_cell *c,
				       const struct mb_fit_device *d)
{
	struct mb_fit_cell w = *c;

	if (d->clblast) {
		w.clblast_known = !d->clblast(m, &w, d->clblast_ctx);
		if (!w.clblast_known)
			w.clblast_bytes = w.clblast_fwd_bytes = 0;
	}
	return w;
}

/*
 * Cell C of M as device D gives its CLBlast temporaries, into *W; what it
 * needs, into *N; what that is short of on H and D (either NULL: not
 * checked), into *S. Returns 0 or the plan's error.
 */
static int assess(const struct mb_model *m, const struct mb_fit_cell *c,
		  const struct mb_fit_host *h, const struct mb_fit_device *d, struct mb_fit_cell *w,
		  struct mb_fit_need *n, unsigned *s)
{
	int err;

	*w = d ? with_clblast(m, c, d) : *c;
	if ((err = mb_fit_need(m, w, d && d->host_memory, n)))
		return err;
	*s = shortfalls(n, h, d);
	return 0;
}

/* Whether cell C of M fits; a plan that cannot be made does not. */
static bool fits(const struct mb_model *m, const struct mb_fit_cell *c, const struct mb_fit_host *h,
		 const struct mb_fit_device *d)
{
	struct mb_fit_cell w;
	struct mb_fit_need n;
	unsigned s;

	return !assess(m, c, h, d, &w, &n, &s) && !s;
}

/* ---- the reason ---- */

struct text {
	char *buf;
	size_t len, used;
};

static void __attribute__((format(printf, 2, 3))) add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->used >= t->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
	va_end(ap);
	t->used = n < 0 ? t->len : t->used + (size_t)n;
}

/* A and B for people, in exact bytes where their rounded figures read the same. */
static void two_sizes(char *a, char *b, size_t len, uint64_t x, uint64_t y)
{
	mb_fmt_bytes_iec(a, len, x);
	mb_fmt_bytes_iec(b, len, y);
	if (!strcmp(a, b)) {
		snprintf(a, len, "%llu bytes", (unsigned long long)x);
		snprintf(b, len, "%llu bytes", (unsigned long long)y);
	}
}

static void say_shortfalls(struct text *t, unsigned s, const struct mb_fit_need *n,
			   const struct mb_fit_cell *cell, const struct mb_fit_host *h,
			   const struct mb_fit_device *d)
{
	char a[32], b[32], c[32];
	const char *sep = "";

	if (s & SHORT_HOST) {
		two_sizes(a, b, sizeof(a), node_host_bytes(n, h), h->available_bytes);
		if (h->ranks > 1)
			add(t, "the host buffers of the %u ranks on this host need %s (%s each)",
			    h->ranks, a, mb_fmt_bytes_iec(c, sizeof(c), n->host_bytes));
		else
			add(t, "the host buffers need %s", a);
		if (n->device_in_host_bytes)
			add(t, " (the device's %s included: a CPU device's memory is the host's)",
			    mb_fmt_bytes_iec(c, sizeof(c), n->device_in_host_bytes));
		add(t, " and the host has %s (%s)", b, h->where);
		sep = "; ";
	}
	if (s & SHORT_PINNED) {
		two_sizes(a, b, sizeof(a), n->pinned_largest_bytes, d->max_alloc_bytes);
		add(t,
		    "%spinned host buffer '%s' has a parameter of %s, which is never cut, and '%s' "
		    "allocates at most %s at once",
		    sep, n->pinned_largest, a, d->name, b);
		sep = "; ";
	}
	if (s & SHORT_PEAK) {
		two_sizes(a, b, sizeof(a), sat_add(n->device_peak_bytes, n->pinned_device_bytes),
			  device_memory(d));
		add(t, "%sthe device peak (%s phase, CLBlast's temporaries %s) is %s", sep,
		    n->device_peak_phase,
		    cell->clblast_known || cell->clblast_bytes || cell->clblast_fwd_bytes
			    ? "included"
			    : "aside",
		    a);
		if (n->pinned_device_bytes)
			add(t,
			    " with the driver's copy of the pinned host memory (%s: NVIDIA's "
			    "OpenCL keeps one of every mapped CL_MEM_ALLOC_HOST_PTR buffer)",
			    mb_fmt_bytes_iec(c, sizeof(c), n->pinned_device_bytes));
		add(t, " and ");
		if (d->limit_bytes && device_memory(d) == d->limit_bytes)
			add(t, "the --device-mem-limit is %s", b);
		else
			add(t, "'%s' has %s of global memory", d->name, b);
		sep = "; ";
	}
	if (s & SHORT_ALLOC) {
		two_sizes(a, b, sizeof(a), n->device_largest_bytes, d->device_alloc_limit);
		add(t, "%sdevice buffer '%s' (%s) is larger than '%s' allocates at once (%s)", sep,
		    n->device_largest, a, d->name, b);
	}
}

/* ---- what would fit ---- */

/* Model M cut to its first LAYERS decoder layers, as --layers cuts it, into *out. */
static int cut(const struct mb_model *m, unsigned layers, struct mb_model *out)
{
	const struct mb_param *p;
	size_t i;
	int err = 0;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", m->name);
	snprintf(out->source, sizeof(out->source), "%s", m->source);
	for (i = 0; i < m->nparams && !err; i++) {
		p = &m->params[i];
		if (p->layer < 0 || (unsigned)p->layer < layers)
			err = mb_model_add(out, p->name, p->ndim, p->rows, p->cols, p->layer);
	}
	out->layers = layers;
	if (err)
		mb_model_release(out);
	return err;
}

/* The most layers of M, fewer than it has, with which C fits; 0 if none. */
static unsigned most_layers(const struct mb_model *m, const struct mb_fit_cell *c,
			    const struct mb_fit_host *h, const struct mb_fit_device *d)
{
	struct mb_model less;
	unsigned n;
	bool ok;

	for (n = m->layers; n-- > 1;) {
		if (cut(m, n, &less))
			return 0;
		ok = fits(&less, c, h, d);
		mb_model_release(&less);
		if (ok)
			return n;
	}
	return 0;
}

/* "256Mi", "1Gi" or bytes: as --gather-budget reads it back. */
static void size_arg(char *buf, size_t len, uint64_t bytes)
{
	if (bytes && !(bytes % (1ull << 30)))
		snprintf(buf, len, "%lluGi", (unsigned long long)(bytes >> 30));
	else if (bytes && !(bytes % (1ull << 20)))
		snprintf(buf, len, "%lluMi", (unsigned long long)(bytes >> 20));
	else if (bytes && !(bytes % (1ull << 10)))
		snprintf(buf, len, "%lluKi", (unsigned long long)(bytes >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

/*
 * The largest halving of the gather budget (batched: stage 1/2, or 3
 * batched) or of the sub-group size (stage 3) with which C fits, as an option into BUF; false if
 * none.
 */
static bool smaller_apply(const struct mb_model *m, const struct mb_fit_cell *c,
			  const struct mb_fit_host *h, const struct mb_fit_device *d, char *buf,
			  size_t len)
{
	struct mb_fit_cell less = *c;
	bool batched = mb_plan_batched(&c->plan);
	uint64_t *knob = batched ? &less.plan.gather_budget_bytes : &less.plan.sub_group_size;
	char size[32];

	for (*knob /= 2; *knob; *knob /= 2) {
		if (!fits(m, &less, h, d))
			continue;
		if (!batched) {
			snprintf(buf, len, "--sub-group-size %llu", (unsigned long long)*knob);
		} else {
			size_arg(size, sizeof(size), *knob);
			snprintf(buf, len, "--gather-budget %s", size);
		}
		return true;
	}
	return false;
}

/*
 * The largest halving of --seq (the forward/backward's tokens over its micro
 * batch) with which C fits, into *SEQ; else 0, and *OFF whether --fwd-bwd off
 * would fit. Nothing for a cell without the forward/backward.
 */
static void shorter_pass(const struct mb_model *m, const struct mb_fit_cell *c,
			 const struct mb_fit_host *h, const struct mb_fit_device *d, uint64_t *seq,
			 bool *off)
{
	struct mb_fit_cell less = *c;
	uint64_t micro_batch = c->micro_batch ? c->micro_batch : 1;

	*seq = 0;
	*off = false;
	if (!c->tokens)
		return;
	for (*seq = c->tokens / micro_batch / 2; *seq; *seq /= 2) {
		less.tokens = *seq * micro_batch;
		if (fits(m, &less, h, d))
			return;
	}
	less.tokens = 0;
	*off = fits(m, &less, h, d);
}

/* The largest built-in model smaller than M with which C fits, into NAME; false if none. */
static bool smaller_model(const struct mb_model *m, const struct mb_fit_cell *c,
			  const struct mb_fit_host *h, const struct mb_fit_device *d, char *name,
			  size_t len)
{
	char names[512], *p, *next;
	struct mb_model other;
	uint64_t best = 0;

	mb_config_builtin_names(names, sizeof(names));
	for (p = names; p && *p; p = next) {
		next = strstr(p, ", ");
		if (next) {
			*next = '\0';
			next += 2;
		}
		if (mb_config_load_builtin(&other, p, 0))
			continue;
		if (other.numel_total < m->numel_total && other.numel_total > best &&
		    fits(&other, c, h, d)) {
			best = other.numel_total;
			snprintf(name, len, "%s", p);
		}
		mb_model_release(&other);
	}
	return best > 0;
}

/* Each change that would make C fit, into T: "; would fit: --layers 3, ...". */
static void say_suggestions(struct text *t, unsigned s, const struct mb_model *m,
			    const struct mb_fit_cell *c, const struct mb_fit_host *h,
			    const struct mb_fit_device *d)
{
	struct mb_fit_cell unpinned = *c;
	unsigned layers = most_layers(m, c, h, d), unpinned_layers = 0;
	char apply[64], model[512];
	const char *sep = "; would fit: ";
	uint64_t seq = 0;
	bool off = false;

	unpinned.pin_memory = false;
	if (layers) {
		add(t, "%s--layers %u", sep, layers);
		sep = ", or ";
	}
	if ((s & SHORT_PEAK) && c->pinned_device_copy && c->nv_pinning) {
		struct mb_fit_cell nv = *c;

		nv.pinned_device_copy = false;
		if (fits(m, &nv, h, d)) {
			add(t, "%s--pinned-alloc nv (pinned without the device copy)", sep);
			sep = ", or ";
		}
	}
	if ((s & SHORT_PEAK) && !(s & SHORT_PINNED) && c->pinned_device_copy && c->pin_memory &&
	    fits(m, &unpinned, h, d)) {
		add(t, "%s--pin-memory off", sep);
		sep = ", or ";
	}
	if ((s & SHORT_PINNED) && fits(m, &unpinned, h, d)) {
		add(t, "%s--pin-memory off", sep);
		sep = ", or ";
	} else if ((s & SHORT_PINNED) && (unpinned_layers = most_layers(m, &unpinned, h, d)) &&
		   unpinned_layers > layers) {
		add(t, "%s--pin-memory off --layers %u", sep, unpinned_layers);
		sep = ", or ";
	}
	if ((s & (SHORT_PEAK | SHORT_ALLOC)) && smaller_apply(m, c, h, d, apply, sizeof(apply))) {
		add(t, "%s%s", sep, apply);
		sep = ", or ";
	}
	if ((s & (SHORT_PEAK | SHORT_ALLOC)) && !mb_plan_batched(&c->plan)) {
		struct mb_fit_cell batched = *c;

		batched.plan.zero3_apply = MB_Z3_BATCHED;
		if (fits(m, &batched, h, d)) {
			add(t, "%s--zero3-apply batched", sep);
			sep = ", or ";
		}
	}
	if (s & (SHORT_PEAK | SHORT_ALLOC))
		shorter_pass(m, c, h, d, &seq, &off);
	if (seq || off) {
		if (seq)
			add(t, "%s--seq %llu", sep, (unsigned long long)seq);
		else
			add(t, "%s--fwd-bwd off", sep);
		sep = ", or ";
	}
	if (smaller_model(m, c, h, d, model, sizeof(model))) {
		add(t, "%s--model %s", sep, model);
		sep = ", or ";
	}
	if (!strcmp(sep, "; would fit: "))
		add(t,
		    "; no fewer --layers, %s--gather-budget or --sub-group-size, %snor a smaller "
		    "built-in --model fits either",
		    s & SHORT_PINNED ? "--pin-memory off, " : "",
		    c->tokens && (s & (SHORT_PEAK | SHORT_ALLOC)) ? "shorter --seq, --fwd-bwd off, "
								  : "");
}

/*
 * Whether cell C fits (1) or not (0, REASON says its shortfalls, and where
 * VERDICT, "does not fit: " before them and what would fit after).
 */
static int fit_text(const struct mb_model *m, const struct mb_fit_cell *c,
		    const struct mb_fit_host *h, const struct mb_fit_device *d, char *reason,
		    size_t len, bool verdict)
{
	struct text t = { reason, len, 0 };
	struct mb_fit_cell w;
	struct mb_fit_need n;
	unsigned s;
	int err;

	if (len)
		reason[0] = '\0';
	if ((err = assess(m, c, h, d, &w, &n, &s)))
		return err;
	if (!s)
		return 1;
	if (verdict)
		add(&t, "does not fit: ");
	say_shortfalls(&t, s, &n, &w, h, d);
	if (verdict)
		say_suggestions(&t, s, m, c, h, d);
	return 0;
}

int mb_fit_shortfalls(const struct mb_model *m, const struct mb_fit_cell *c,
		      const struct mb_fit_host *h, const struct mb_fit_device *d, char *reason,
		      size_t len)
{
	return fit_text(m, c, h, d, reason, len, false);
}

int mb_fit_check(const struct mb_model *m, const struct mb_fit_cell *c, const struct mb_fit_host *h,
		 const struct mb_fit_device *d, char *reason, size_t len)
{
	return fit_text(m, c, h, d, reason, len, true);
}
