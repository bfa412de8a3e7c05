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
#include "mb_ns.h"

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
	if (e->race)
		mb_race_name(e->race, *out, tag);
	if (e->live_bytes > e->peak_bytes)
		e->peak_bytes = e->live_bytes;
	return 0;
}

int mb_engine_free(struct mb_engine *e, mb_devbuf buf)
{
	const struct mb_race_op op = { "handed back to the pool", NULL, NULL };
	size_t i;
	int err = 0;

	if (!buf)
		return 0;
	if (e->race)
		err = mb_race_release(e->race, buf, &op);
	for (i = 0; i < e->nbufs; i++)
		if (e->bufs[i].buf == buf) {
			log_op(e, "free", NULL, -1, e->bufs[i].bytes, 0, 0);
			e->live_bytes -= e->bufs[i].bytes;
			e->bufs[i] = e->bufs[--e->nbufs];
			break;
		}
	e->ops->free(e, buf);
	return err;
}

uint64_t mb_engine_peak_bytes(const struct mb_engine *e)
{
	return e->peak_bytes;
}

/* ---- the race checker's view of each operation ---- */

int mb_engine_race_start(struct mb_engine *e)
{
	unsigned b;
	int err;

	if (e->race)
		return 0;
	if ((err = mb_race_new(&e->race)))
		return err;
	for (b = 0; b < MB_HOST_NBUFFERS; b++) {
		char name[48];

		snprintf(name, sizeof(name), "host %s", host_names[b]);
		mb_race_name(e->race, mb_race_host_key(b), name);
	}
	return 0;
}

void mb_engine_name(struct mb_engine *e, mb_devbuf buf, const char *tag)
{
	if (e->race && buf)
		mb_race_name(e->race, buf, tag);
}

/* A timed phase's name; NULL for an untimed command. */
static const char *race_phase(enum mb_phase p)
{
	return p < MB_NPHASES ? mb_phases[p].name : NULL;
}

/* A copy: after its AFTER, on its queue, reads one side and writes the other. */
static int race_copy(struct mb_engine *e, const struct mb_copy *c)
{
	struct mb_race_op op = { "copy", race_phase(c->phase), c->what };
	const void *host = mb_race_host_key(c->host);
	char name[64];
	int err;

	snprintf(name, sizeof(name), "copy %s %s", c->to_device ? "h2d" : "d2h",
		 host_names[c->host]);
	op.op = name;
	if ((err = mb_race_wait(e->race, c->queue, c->after)) ||
	    (err = mb_race_begin(e->race, c->queue, &op)))
		return err;
	if (c->to_device)
		return (err = mb_race_access(e->race, host, c->host_off, c->bytes, false))
			       ? err
			       : mb_race_access(e->race, c->dev, c->dev_off, c->bytes, true);
	return (err = mb_race_access(e->race, c->dev, c->dev_off, c->bytes, false))
		       ? err
		       : mb_race_access(e->race, host, c->host_off, c->bytes, true);
}

/*
 * What each kind of work reads and writes, in bytes (the offsets and
 * counts of struct mb_work, as MB_WORKS says them); a span read and written
 * is read first.
 */
static int race_work(struct mb_engine *e, const struct mb_work *w)
{
	struct mb_race *r = e->race;
	char name[32];
	struct mb_race_op op = { name, race_phase(w->phase), w->what };
	uint64_t n = w->n, mom = w->bf16 ? 2 : 4, nn = 4 * w->rows * w->cols;
	int err;

	snprintf(name, sizeof(name), "work %s", work_names[w->kind]);
	if ((err = mb_race_wait(r, w->queue, w->after)) || (err = mb_race_begin(r, w->queue, &op)))
		return err;
	switch (w->kind) {
	case MB_WORK_GRADS:
		return mb_race_access(r, w->out, 4 * w->out_off, 4 * n, true);
	case MB_WORK_CAST:
		return (err = mb_race_access(r, w->in, 4 * w->in_off, 4 * n, false))
			       ? err
			       : mb_race_access(r, w->out, 2 * w->out_off, 2 * n, true);
	case MB_WORK_WIDEN:
		return (err = mb_race_access(r, w->in, 2 * w->in_off, 2 * n, false))
			       ? err
			       : mb_race_access(r, w->out, 4 * w->out_off, 4 * n, true);
	case MB_WORK_SUMSQ:
		return (err = mb_race_access(r, w->in, 2 * w->in_off, 2 * n, false))
			       ? err
			       : mb_race_access(r, w->out, 4 * w->out_off, 4 * MB_NS_PARTIALS,
						true);
	case MB_WORK_ZERO:
		return mb_race_access(r, w->out, w->out_off, n, true);
	case MB_WORK_MOMENTUM:
		if ((err = mb_race_access(r, w->in, 4 * w->in_off, 4 * n, false)) ||
		    (err = mb_race_access(r, w->out, mom * w->out_off, mom * n, false)) ||
		    (err = mb_race_access(r, w->in, 4 * w->in_off, 4 * n, true)))
			return err;
		return mb_race_access(r, w->out, mom * w->out_off, mom * n, true);
	case MB_WORK_NS:
		return (err = mb_race_access(r, w->in, 4 * w->in_off, nn, false))
			       ? err
			       : mb_race_access(r, w->out, 4 * w->out_off, nn, true);
	case MB_WORK_COLLECTIVE: /* not replayed: GPU to GPU, on no buffer of ours */
	case MB_NWORKS:
		break;
	}
	return 0;
}

/* The host's accesses A (N) as operation WHAT. */
static int race_host(struct mb_engine *e, const char *what, const struct mb_host_access *a,
		     size_t n)
{
	const struct mb_race_op op = { what, NULL, NULL };
	size_t i;
	int err;

	if ((err = mb_race_begin(e->race, MB_RACE_HOST, &op)))
		return err;
	for (i = 0; i < n; i++)
		if ((err = mb_race_access(e->race, mb_race_host_key(a[i].buf), a[i].off, a[i].bytes,
					  a[i].write)))
			return err;
	return 0;
}

int mb_engine_touch(struct mb_engine *e, const char *what, const struct mb_host_access *a, size_t n)
{
	log_op(e, "touch", what, -1, 0, 0, 0);
	return e->race ? race_host(e, what, a, n) : 0;
}

int mb_engine_copy(struct mb_engine *e, const struct mb_copy *c, mb_event *done)
{
	size_t last = 0;
	mb_event id = 0;
	char detail[48];
	int err;

	if (done)
		*done = 0;
	snprintf(detail, sizeof(detail), "%s %s %s", c->to_device ? "h2d" : "d2h",
		 host_names[c->host], phase_name(c->phase));
	if (e->race && (err = race_copy(e, c)))
		return err;
	if (!(err = e->ops->copy(e, c, native(e, c->after), &last)))
		err = event_new(e, last, &id);
	if (!err && e->race)
		err = mb_race_event(e->race, id);
	log_op(e, "copy", detail, (int)c->queue, c->bytes, c->after, id);
	if (done)
		*done = id;
	return err;
}

int mb_engine_read(struct mb_engine *e, enum mb_queue q, mb_devbuf dev, uint64_t dev_off,
		   uint64_t bytes, void *dst)
{
	const struct mb_race_op op = { "blocking read", NULL, NULL };
	int err;

	log_op(e, "read", NULL, (int)q, bytes, 0, 0);
	if (e->race && ((err = mb_race_begin(e->race, q, &op)) ||
			(err = mb_race_access(e->race, dev, dev_off, bytes, false))))
		return err;
	if ((err = e->ops->read(e, q, dev, dev_off, bytes, dst)))
		return err;
	if (e->race)
		mb_race_finish(e->race, q);
	return 0;
}

int mb_engine_work(struct mb_engine *e, const struct mb_work *w, mb_event *done)
{
	size_t last = 0;
	mb_event id = 0;
	char detail[48];
	int err;

	if (done)
		*done = 0;
	if (e->race && (err = race_work(e, w)))
		return err;
	if (!(err = e->ops->work(e, w, native(e, w->after), &last)))
		err = event_new(e, last, &id);
	if (!err && e->race)
		err = mb_race_event(e->race, id);
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

	const struct mb_race_op op = { "forward/backward", NULL, NULL };

	log_op(e, "fwd_bwd", NULL, MB_QUEUE_COMPUTE, 0, 0, 0);
	/* its GEMMs on buffers of its own, with the host waiting for the forward's
	 * and then the backward's end */
	if (e->race) {
		if ((err = mb_race_begin(e->race, MB_QUEUE_COMPUTE, &op)))
			return err;
		mb_race_finish(e->race, MB_QUEUE_COMPUTE);
	}
	e->hook = hook;
	err = e->ops->fwd_bwd(e, hook || e->logging ? &logged : NULL, forward_s, backward_s);
	e->hook = NULL;
	if (!err && e->race)
		mb_race_finish(e->race, MB_QUEUE_COMPUTE);
	return err;
}

int mb_engine_wait(struct mb_engine *e, mb_event ev, const char *what)
{
	if (!ev)
		return 0;
	log_op(e, "wait", NULL, -1, 0, ev, 0);
	if (e->race)
		mb_race_wait(e->race, MB_RACE_HOST, ev);
	return e->ops->wait(e, native(e, ev), what);
}

int mb_engine_after(struct mb_engine *e, enum mb_queue q, mb_event ev)
{
	int err;

	if (!ev)
		return 0;
	log_op(e, "after", NULL, (int)q, 0, ev, 0);
	if (e->race && (err = mb_race_wait(e->race, q, ev)))
		return err;
	return e->ops->after(e, q, native(e, ev));
}

int mb_engine_marker(struct mb_engine *e, enum mb_queue q, mb_event *done)
{
	size_t last = 0;
	int err;

	*done = 0;
	if (e->race &&
	    (err = mb_race_begin(e->race, q, &(struct mb_race_op){ "marker", NULL, NULL })))
		return err;
	if (!(err = e->ops->marker(e, q, &last)))
		err = event_new(e, last, done);
	if (!err && e->race)
		err = mb_race_event(e->race, *done);
	log_op(e, "marker", NULL, (int)q, 0, 0, *done);
	return err;
}

int mb_engine_flush(struct mb_engine *e, enum mb_queue q)
{
	log_op(e, "flush", NULL, (int)q, 0, 0, 0);
	if (e->race)
		mb_race_flush(e->race, q);
	return e->ops->flush(e, q);
}

int mb_engine_finish(struct mb_engine *e, enum mb_queue q)
{
	log_op(e, "finish", NULL, (int)q, 0, 0, 0);
	if (e->race)
		mb_race_finish(e->race, q);
	return e->ops->finish(e, q);
}

int mb_engine_pin(struct mb_engine *e, enum mb_host_buffer b)
{
	/* the buffer moves to pinned memory: all of it written */
	const struct mb_host_access all = { b, 0, MB_RACE_ALL, true };
	int err;

	log_op(e, "pin", host_names[b], -1, 0, 0, 0);
	if (e->race && (err = race_host(e, "pin", &all, 1)))
		return err;
	return e->ops->pin(e, b);
}

int mb_engine_host(struct mb_engine *e, const struct mb_host_work *h)
{
	int err;

	log_op(e, "host", NULL, -1, (uint64_t)(h->bytes + h->streamed), 0, 0);
	if (e->race && (err = race_host(e, "host optimizer", h->access, h->naccess)))
		return err;
	e->ops->host(e, h);
	return 0;
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
	unsigned q;

	e->ops->abort(e);
	for (q = 0; e->race && q < MB_NQUEUES; q++)
		mb_race_finish(e->race, q);
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
		enum mb_phase phase;
		struct interval iv;

		if (mb_engine_span_times(e, i, &phase, &iv.a, &iv.b)) {
			if (!why[0])
				snprintf(why, len, "%s", mb_errmsg());
			*sum[phase] = NAN;
			if (mb_phases[phase].apply)
				overlap_known = false;
			continue;
		}
		*sum[phase] += iv.b - iv.a;
		if (phase == MB_PHASE_D2H)
			d2h[nd++] = iv;
		else if (mb_phases[phase].apply)
			busy[nb++] = iv;
	}
	p->d2h_hidden_s = overlap_known ? covered(busy, nb, d2h, nd) : NAN;
	free(busy);
	free(d2h);
	return 0;
}

const char *mb_engine_kind(const struct mb_engine *e)
{
	return e->ops->name;
}

size_t mb_engine_nspans(const struct mb_engine *e)
{
	return e->nspans;
}

int mb_engine_span_times(struct mb_engine *e, size_t i, enum mb_phase *phase, double *start,
			 double *end)
{
	const struct mb_engine_span *sp = &e->spans[i];
	int err;

	*phase = sp->phase;
	if ((err = e->ops->interval(e, sp->first, sp->last, mb_phases[sp->phase].span, start, end)))
		return err;
	if (*end < *start)
		*end = *start;
	return 0;
}

int mb_engine_end_step(struct mb_engine *e, struct mb_phase_times *p, char *why, size_t len)
{
	int err = p ? resolve(e, p, why, len) : 0;

	e->ops->end_step(e);
	e->nevents = e->nspans = 0;
	if (e->race)
		mb_race_end_step(e->race);
	return err;
}

void mb_engine_release(struct mb_engine *e)
{
	free(e->events);
	free(e->spans);
	free(e->log);
	free(e->bufs);
	mb_race_free(e->race);
	e->race = NULL;
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
