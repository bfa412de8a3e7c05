/*
 * mb_engine: the layer between the schedule and an engine (see
 * mb_engine.h): event ids, the spans of the step's timeline and their sums
 * by phase, and the log of operations.
 */
#include "mb_engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

#define WORK_NAME_(e, name, ...) name,
static const char *const work_names[MB_NWORKS] = { MB_WORKS(WORK_NAME_) };
#undef WORK_NAME_

static const char *const host_names[MB_HOST_NBUFFERS] = { "master", "grads",   "momentum",
							  "adamw",  "staging", "grads_bf16" };

const char *mb_work_name(enum mb_work_kind k)
{
	return k < MB_NWORKS ? work_names[k] : "?";
}

/* Grow *V (of *ALLOC elements of SIZE bytes) to hold N + 1. */
static int grow(void **v, size_t *alloc, size_t n, size_t size, const char *what)
{
	void *p;
	size_t a;

	if (n < *alloc)
		return 0;
	a = *alloc ? 2 * *alloc : 256;
	if (!(p = realloc(*v, a * size)))
		return mb_fail("out of host memory for %zu %s", a, what);
	*v = p;
	*alloc = a;
	return 0;
}

/*
 * An id for the native command NATIVE into *ID: one for each operation that
 * can make an event, even where this engine made none (NATIVE 0, nothing to
 * wait for), so that two engines' ids agree.
 */
static int event_new(struct mb_engine *e, size_t native, mb_event *id)
{
	int err;

	*id = 0;
	if ((err = grow((void **)&e->events, &e->events_alloc, e->nevents, sizeof(*e->events),
			"events")))
		return err;
	e->events[e->nevents++] = native;
	*id = e->nevents;
	return 0;
}

static size_t native(const struct mb_engine *e, mb_event ev)
{
	return ev && ev <= e->nevents ? e->events[ev - 1] : 0;
}

static void log_op(struct mb_engine *e, const char *op, const char *detail, int queue,
		   uint64_t amount, mb_event waits, mb_event made)
{
	struct mb_engine_op *o;

	if (!e->logging ||
	    grow((void **)&e->log, &e->log_alloc, e->nlog, sizeof(*e->log), "logged operations"))
		return;
	o = &e->log[e->nlog++];
	memset(o, 0, sizeof(*o));
	snprintf(o->op, sizeof(o->op), "%s", op);
	snprintf(o->detail, sizeof(o->detail), "%s", detail ? detail : "");
	o->queue = queue;
	o->amount = amount;
	o->waits = waits;
	o->made = made;
}

void mb_engine_log_start(struct mb_engine *e)
{
	e->logging = true;
}

int mb_engine_log_take(struct mb_engine *e, struct mb_engine_op **log, size_t *n)
{
	*log = e->log;
	*n = e->nlog;
	e->log = NULL;
	e->nlog = e->log_alloc = 0;
	return 0;
}

static const char *phase_name(enum mb_phase p)
{
	return p < MB_NPHASES ? mb_phases[p].name : "-";
}

int mb_engine_alloc(struct mb_engine *e, uint64_t bytes, const char *tag, mb_devbuf *out)
{
	int err;

	*out = NULL;
	log_op(e, "alloc", tag, -1, bytes, 0, 0);
	if ((err = grow((void **)&e->bufs, &e->bufs_alloc, e->nbufs, sizeof(*e->bufs),
			"device buffers")) ||
	    (err = e->ops->alloc(e, bytes, tag, out)))
		return err;
	e->bufs[e->nbufs++] = (struct mb_engine_buf){ *out, bytes };
	e->live_bytes += bytes;
	if (e->live_bytes > e->peak_bytes)
		e->peak_bytes = e->live_bytes;
	return 0;
}

void mb_engine_free(struct mb_engine *e, mb_devbuf buf)
{
	size_t i;

	if (!buf)
		return;
	for (i = 0; i < e->nbufs; i++)
		if (e->bufs[i].buf == buf) {
			log_op(e, "free", NULL, -1, e->bufs[i].bytes, 0, 0);
			e->live_bytes -= e->bufs[i].bytes;
			e->bufs[i] = e->bufs[--e->nbufs];
			break;
		}
	e->ops->free(e, buf);
}

uint64_t mb_engine_peak_bytes(const struct mb_engine *e)
{
	return e->peak_bytes;
}

int mb_engine_copy(struct mb_engine *e, const struct mb_copy *c, mb_event *done)
{
	size_t last = 0;
	mb_event id = 0;
	char detail[48];
	int err;

	if (done)
		*done = 0;
	if (!(err = e->ops->copy(e, c, native(e, c->after), &last)))
		err = event_new(e, last, &id);
	snprintf(detail, sizeof(detail), "%s %s %s", c->to_device ? "h2d" : "d2h",
		 host_names[c->host], phase_name(c->phase));
	log_op(e, "copy", detail, (int)c->queue, c->bytes, c->after, id);
	if (done)
		*done = id;
	return err;
}

int mb_engine_read(struct mb_engine *e, enum mb_queue q, mb_devbuf dev, uint64_t dev_off,
		   uint64_t bytes, void *dst)
{
	log_op(e, "read", NULL, (int)q, bytes, 0, 0);
	return e->ops->read(e, q, dev, dev_off, bytes, dst);
}

int mb_engine_work(struct mb_engine *e, const struct mb_work *w, mb_event *done)
{
	size_t last = 0;
	mb_event id = 0;
	char detail[48];
	int err;

	if (done)
		*done = 0;
	if (!(err = e->ops->work(e, w, native(e, w->after), &last)))
		err = event_new(e, last, &id);
	snprintf(detail, sizeof(detail), "%s %s", work_names[w->kind], phase_name(w->phase));
	log_op(e, "work", detail, (int)w->queue, w->kind == MB_WORK_NS ? w->rows * w->cols : w->n,
	       w->after, id);
	if (done)
		*done = id;
	return err;
}

/* The schedule's hook, logged: each stage of the backward as the engine reaches it. */
static int logged_stage(void *arg, unsigned stage)
{
	struct mb_engine *e = arg;

	log_op(e, "stage", NULL, -1, stage, 0, 0);
	return e->hook ? e->hook->stage_done(e->hook->arg, stage) : 0;
}

int mb_engine_fwd_bwd(struct mb_engine *e, const struct mb_fwdbwd_hook *hook, double *forward_s,
		      double *backward_s)
{
	struct mb_fwdbwd_hook logged = { logged_stage, e };
	int err;

	log_op(e, "fwd_bwd", NULL, MB_QUEUE_COMPUTE, 0, 0, 0);
	e->hook = hook;
	err = e->ops->fwd_bwd(e, hook || e->logging ? &logged : NULL, forward_s, backward_s);
	e->hook = NULL;
	return err;
}

int mb_engine_wait(struct mb_engine *e, mb_event ev, const char *what)
{
	if (!ev)
		return 0;
	log_op(e, "wait", NULL, -1, 0, ev, 0);
	return e->ops->wait(e, native(e, ev), what);
}

int mb_engine_after(struct mb_engine *e, enum mb_queue q, mb_event ev)
{
	if (!ev)
		return 0;
	log_op(e, "after", NULL, (int)q, 0, ev, 0);
	return e->ops->after(e, q, native(e, ev));
}

int mb_engine_marker(struct mb_engine *e, enum mb_queue q, mb_event *done)
{
	size_t last = 0;
	int err;

	*done = 0;
	if (!(err = e->ops->marker(e, q, &last)))
		err = event_new(e, last, done);
	log_op(e, "marker", NULL, (int)q, 0, 0, *done);
	return err;
}

int mb_engine_flush(struct mb_engine *e, enum mb_queue q)
{
	log_op(e, "flush", NULL, (int)q, 0, 0, 0);
	return e->ops->flush(e, q);
}

int mb_engine_finish(struct mb_engine *e, enum mb_queue q)
{
	log_op(e, "finish", NULL, (int)q, 0, 0, 0);
	return e->ops->finish(e, q);
}

int mb_engine_pin(struct mb_engine *e, enum mb_host_buffer b)
{
	log_op(e, "pin", host_names[b], -1, 0, 0, 0);
	return e->ops->pin(e, b);
}

void mb_engine_host(struct mb_engine *e, const struct mb_host_work *h)
{
	log_op(e, "host", NULL, -1, (uint64_t)(h->bytes + h->streamed), 0, 0);
	e->ops->host(e, h);
}

double mb_engine_now(struct mb_engine *e)
{
	return e->ops->now(e);
}

void mb_engine_phase(struct mb_engine *e, const char *name)
{
	log_op(e, "phase", name, -1, 0, 0, 0);
	e->peak_bytes = e->live_bytes;
	e->ops->phase(e, name);
}

void mb_engine_abort(struct mb_engine *e)
{
	e->ops->abort(e);
}

int mb_engine_span(struct mb_engine *e, size_t first, size_t last, enum mb_phase phase)
{
	int err;

	if (!first || phase >= MB_NPHASES)
		return 0;
	if ((err = grow((void **)&e->spans, &e->spans_alloc, e->nspans, sizeof(*e->spans),
			"profiling spans")))
		return err;
	e->spans[e->nspans++] = (struct mb_engine_span){ first, last ? last : first, phase };
	return 0;
}

struct interval {
	double a, b;
};

static int cmp_interval(const void *x, const void *y)
{
	const struct interval *p = x, *q = y;

	return (p->a > q->a) - (p->a < q->a);
}

/* The time of the D2H intervals D (ND) that the busy intervals BUSY (NB) cover. */
static double covered(struct interval *busy, size_t nb, const struct interval *d, size_t nd)
{
	size_t i, j, m = 0;
	double sum = 0;

	/* merge the busy intervals, then intersect each D2H with them */
	qsort(busy, nb, sizeof(*busy), cmp_interval);
	for (i = 0; i < nb; i++) {
		if (m && busy[i].a <= busy[m - 1].b) {
			if (busy[i].b > busy[m - 1].b)
				busy[m - 1].b = busy[i].b;
		} else {
			busy[m++] = busy[i];
		}
	}
	for (i = 0; i < nd; i++)
		for (j = 0; j < m; j++) {
			double a = d[i].a > busy[j].a ? d[i].a : busy[j].a;
			double b = d[i].b < busy[j].b ? d[i].b : busy[j].b;

			if (b > a)
				sum += b - a;
		}
	return sum;
}

/*
 * The spans summed by phase: an apply phase's span other than the
 * writeback's is compute the writeback may hide behind.
 */
static int resolve(struct mb_engine *e, struct mb_phase_times *p, char *why, size_t len)
{
#define SUM_(e, f, ...) &p->f,
	double *sum[MB_NPHASES] = { MB_PHASES(SUM_) };
#undef SUM_
	struct interval *busy, *d2h;
	size_t i, nb = 0, nd = 0;
	bool overlap_known = true;

	busy = malloc((e->nspans + 1) * sizeof(*busy));
	d2h = malloc((e->nspans + 1) * sizeof(*d2h));
	if (!busy || !d2h) {
		free(busy);
		free(d2h);
		return mb_fail("out of host memory resolving %zu profiling spans", e->nspans);
	}
	for (i = 0; i < e->nspans; i++) {
		const struct mb_engine_span *sp = &e->spans[i];
		struct interval iv;

		if (e->ops->interval(e, sp->first, sp->last, mb_phases[sp->phase].span, &iv.a,
				     &iv.b)) {
			if (!why[0])
				snprintf(why, len, "%s", mb_errmsg());
			*sum[sp->phase] = NAN;
			if (mb_phases[sp->phase].apply)
				overlap_known = false;
			continue;
		}
		if (iv.b < iv.a)
			iv.b = iv.a;
		*sum[sp->phase] += iv.b - iv.a;
		if (sp->phase == MB_PHASE_D2H)
			d2h[nd++] = iv;
		else if (mb_phases[sp->phase].apply)
			busy[nb++] = iv;
	}
	p->d2h_hidden_s = overlap_known ? covered(busy, nb, d2h, nd) : NAN;
	free(busy);
	free(d2h);
	return 0;
}

int mb_engine_end_step(struct mb_engine *e, struct mb_phase_times *p, char *why, size_t len)
{
	int err = p ? resolve(e, p, why, len) : 0;

	e->ops->end_step(e);
	e->nevents = e->nspans = 0;
	return err;
}

void mb_engine_release(struct mb_engine *e)
{
	free(e->events);
	free(e->spans);
	free(e->log);
	free(e->bufs);
	e->bufs = NULL;
	e->nbufs = e->bufs_alloc = 0;
	e->events = NULL;
	e->spans = NULL;
	e->log = NULL;
	e->nevents = e->nspans = e->nlog = 0;
	e->events_alloc = e->spans_alloc = e->log_alloc = 0;
}

void mb_engine_destroy(struct mb_engine *e)
{
	if (e)
		e->ops->destroy(e);
}
