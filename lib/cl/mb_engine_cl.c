/*
 * mb_engine_cl: the schedule's operations on an OpenCL device (see
 * mb_engine_cl.h). A command's native handle is 1 + its place in the
 * step's events, each held until the step ends.
 */
#include "mb_engine_cl.h"

#include <stdlib.h>
#include <string.h>

#include "mb_clock.h"
#include "mb_err.h"
#include "mb_fwdbwd_cl.h"
#include "mb_rng_cl.h"

struct cl_engine {
	struct mb_engine base; /* first: the engine is this struct */
	const struct mb_cl *cl;
	struct mb_ledger *ledger;
	struct mb_ns *ns;
	struct mb_hostbuf *host[MB_HOST_NBUFFERS];
	const struct mb_model *model;
	uint64_t tokens;
	cl_event *ev; /* the step's events, each with one reference */
	size_t nev, alloc;
};

static struct cl_engine *of(struct mb_engine *e)
{
	return (struct cl_engine *)e;
}

static cl_command_queue queue(const struct cl_engine *c, enum mb_queue q)
{
	return q == MB_QUEUE_COPY	? c->cl->copy
	       : q == MB_QUEUE_PREFETCH ? c->cl->prefetch
					: c->cl->compute;
}

static const char *queue_name(enum mb_queue q)
{
	return q == MB_QUEUE_COPY ? "copy" : q == MB_QUEUE_PREFETCH ? "prefetch" : "compute";
}

static cl_event event(const struct cl_engine *c, size_t native)
{
	return native && native <= c->nev ? c->ev[native - 1] : NULL;
}

/* Keep EV (its reference taken over) as a native handle into *NATIVE; NULL: 0. */
static int keep(struct cl_engine *c, cl_event ev, size_t *native)
{
	*native = 0;
	if (!ev)
		return 0;
	if (c->nev == c->alloc) {
		size_t alloc = c->alloc ? 2 * c->alloc : 256;
		cl_event *v = realloc(c->ev, alloc * sizeof(*v));

		if (!v) {
			clReleaseEvent(ev);
			return mb_fail("out of host memory for %zu profiling events", alloc);
		}
		c->ev = v;
		c->alloc = alloc;
	}
	c->ev[c->nev++] = ev;
	*native = c->nev;
	return 0;
}

static int cl_alloc(struct mb_engine *e, uint64_t bytes, const char *tag, mb_devbuf *out)
{
	cl_mem mem = NULL;
	int err = mb_ledger_alloc(of(e)->ledger, bytes, tag, &mem);

	*out = (mb_devbuf)mem;
	return err;
}

static void cl_free(struct mb_engine *e, mb_devbuf buf)
{
	mb_ledger_free(of(e)->ledger, (cl_mem)buf);
}

/* One command per chunk of the host buffer that the range crosses, each timed. */
static int cl_copy(struct mb_engine *e, const struct mb_copy *cp, size_t after, size_t *done)
{
	struct cl_engine *c = of(e);
	const struct mb_hostbuf *hb = c->host[cp->host];
	cl_command_queue q = queue(c, cp->queue);
	cl_event wait = event(c, after), ev;
	uint64_t at, run;
	int err;

	for (at = 0; at < cp->bytes; at += run) {
		void *host = mb_hostbuf_at(hb, cp->host_off + at, &run);
		cl_int st;

		run = run < cp->bytes - at ? run : cp->bytes - at;
		ev = NULL;
		if (cp->to_device)
			st = clEnqueueWriteBuffer(q, (cl_mem)cp->dev, CL_FALSE, cp->dev_off + at,
						  run, host, wait ? 1 : 0, wait ? &wait : NULL,
						  &ev);
		else
			st = clEnqueueReadBuffer(q, (cl_mem)cp->dev, CL_FALSE, cp->dev_off + at,
						 run, host, wait ? 1 : 0, wait ? &wait : NULL, &ev);
		if ((err = mb_cl_check(c->cl, st,
				       cp->to_device ? "clEnqueueWriteBuffer"
						     : "clEnqueueReadBuffer",
				       "%s, %llu bytes", cp->what, (unsigned long long)run)) ||
		    (err = keep(c, ev, done)) || (err = mb_engine_span(e, *done, 0, cp->phase)))
			return err;
	}
	return 0;
}

static int cl_read(struct mb_engine *e, enum mb_queue q, mb_devbuf dev, uint64_t dev_off,
		   uint64_t bytes, void *dst)
{
	struct cl_engine *c = of(e);

	return mb_cl_check(c->cl,
			   clEnqueueReadBuffer(queue(c, q), (cl_mem)dev, CL_TRUE, dev_off, bytes,
					       dst, 0, NULL, NULL),
			   "clEnqueueReadBuffer", "%llu bytes to the host",
			   (unsigned long long)bytes);
}

/* Enqueue W; its first and last commands' events into *FIRST and *LAST (NULL: none). */
static int enqueue_work(struct cl_engine *c, const struct mb_work *w, cl_event *first,
			cl_event *last)
{
	cl_mem in = (cl_mem)w->in, out = (cl_mem)w->out;

	switch (w->kind) {
	case MB_WORK_GRADS:
		return mb_rng_fill(c->cl, out, w->out_off, w->n, w->seed, w->stream, w->first,
				   w->scale);
	case MB_WORK_CAST:
		return mb_ns_cast_bf16(c->ns, in, w->in_off, out, w->out_off, w->n, last);
	case MB_WORK_WIDEN:
		return mb_ns_widen_bf16(c->ns, queue(c, w->queue), in, w->in_off, out, w->out_off,
					w->n);
	case MB_WORK_SUMSQ:
		return mb_ns_sumsq_bf16(c->ns, queue(c, w->queue), in, w->in_off, w->n, out,
					w->out_off, last);
	case MB_WORK_ZERO:
		return mb_cl_zero(c->cl, queue(c, w->queue), out, w->out_off, w->n, "zeros");
	case MB_WORK_MOMENTUM:
		return w->bf16 ? mb_ns_momentum_bf16(c->ns, in, w->in_off, out, w->out_off, w->n,
						     w->beta, first, last)
			       : mb_ns_momentum(c->ns, in, w->in_off, out, w->out_off, w->n,
						w->beta, first, last);
	case MB_WORK_NS:
		return mb_ns_orthogonalize(c->ns, in, w->in_off, w->rows, w->cols, out, w->out_off,
					   first, last);
	case MB_WORK_COLLECTIVE: /* between GPUs, not through the host: not replayed */
		return 0;
	case MB_NWORKS:
		break;
	}
	return mb_fail("unknown kind of device work %d", (int)w->kind);
}

static int cl_work(struct mb_engine *e, const struct mb_work *w, size_t after, size_t *done)
{
	struct cl_engine *c = of(e);
	cl_event wait = event(c, after), first = NULL, last = NULL;
	size_t nfirst = 0;
	int err;

	if (wait &&
	    (err = mb_cl_check(c->cl,
			       clEnqueueBarrierWithWaitList(queue(c, w->queue), 1, &wait, NULL),
			       "clEnqueueBarrierWithWaitList", "%s", mb_work_name(w->kind))))
		return err;
	err = enqueue_work(c, w, &first, &last);
	if (!last && first) { /* one handle is all a kind with one kernel gives */
		last = first;
		first = NULL;
	}
	if (!err && first)
		err = keep(c, first, &nfirst);
	else if (first)
		clReleaseEvent(first);
	if (!err)
		err = keep(c, last, done);
	else if (last)
		clReleaseEvent(last);
	return err ? err : mb_engine_span(e, nfirst ? nfirst : *done, *done, w->phase);
}

static int cl_fwd_bwd(struct mb_engine *e, const struct mb_fwdbwd_hook *hook, double *forward_s,
		      double *backward_s)
{
	struct cl_engine *c = of(e);

	return mb_fwdbwd_run(c->model, c->tokens, c->cl, c->ledger, hook, forward_s, backward_s);
}

static int cl_wait(struct mb_engine *e, size_t ev, const char *what)
{
	struct cl_engine *c = of(e);
	cl_event x = event(c, ev);

	return x ? mb_cl_check(c->cl, clWaitForEvents(1, &x), "clWaitForEvents", "%s", what) : 0;
}

static int cl_after(struct mb_engine *e, enum mb_queue q, size_t ev)
{
	struct cl_engine *c = of(e);
	cl_event x = event(c, ev);

	return x ? mb_cl_check(c->cl, clEnqueueBarrierWithWaitList(queue(c, q), 1, &x, NULL),
			       "clEnqueueBarrierWithWaitList", "the %s queue", queue_name(q))
		 : 0;
}

static int cl_marker(struct mb_engine *e, enum mb_queue q, size_t *done)
{
	struct cl_engine *c = of(e);
	cl_event ev = NULL;
	int err;

	if ((err = mb_cl_check(c->cl, clEnqueueMarkerWithWaitList(queue(c, q), 0, NULL, &ev),
			       "clEnqueueMarkerWithWaitList", "the %s queue", queue_name(q))))
		return err;
	return keep(c, ev, done);
}

static int cl_flush(struct mb_engine *e, enum mb_queue q)
{
	struct cl_engine *c = of(e);

	return mb_cl_check(c->cl, clFlush(queue(c, q)), "clFlush", "%s queue", queue_name(q));
}

static int cl_finish(struct mb_engine *e, enum mb_queue q)
{
	struct cl_engine *c = of(e);

	return mb_cl_check(c->cl, clFinish(queue(c, q)), "clFinish", "%s queue", queue_name(q));
}

static int cl_pin(struct mb_engine *e, enum mb_host_buffer b)
{
	struct mb_hostbuf *hb = of(e)->host[b];

	return hb && !hb->pinned ? mb_hostbuf_move(hb, true) : 0;
}

static void cl_host(struct mb_engine *e, const struct mb_host_work *h)
{
	(void)e;
	if (h->run)
		h->run(h->arg, h->scale);
}

static double cl_now(struct mb_engine *e)
{
	(void)e;
	return mb_now_s();
}

static void cl_phase(struct mb_engine *e, const char *name)
{
	mb_ledger_phase(of(e)->ledger, name);
}

static int cl_interval(struct mb_engine *e, size_t first, size_t last, const char *what,
		       double *start, double *end)
{
	struct cl_engine *c = of(e);
	double unused;

	if (mb_cl_event_span(c->cl, event(c, first), what, start, &unused))
		return -MB_EFAIL;
	return mb_cl_event_span(c->cl, event(c, last), what, &unused, end);
}

static void cl_abort(struct mb_engine *e)
{
	struct cl_engine *c = of(e);

	clFinish(c->cl->compute);
	clFinish(c->cl->copy);
	clFinish(c->cl->prefetch);
}

static void cl_end_step(struct mb_engine *e)
{
	struct cl_engine *c = of(e);
	size_t i;

	for (i = 0; i < c->nev; i++)
		clReleaseEvent(c->ev[i]);
	c->nev = 0;
}

static void cl_destroy(struct mb_engine *e)
{
	struct cl_engine *c = of(e);

	cl_end_step(e);
	free(c->ev);
	mb_engine_release(e);
	free(c);
}

static const struct mb_engine_ops cl_ops = {
	.name = "opencl",
	.alloc = cl_alloc,
	.free = cl_free,
	.copy = cl_copy,
	.read = cl_read,
	.work = cl_work,
	.fwd_bwd = cl_fwd_bwd,
	.wait = cl_wait,
	.after = cl_after,
	.marker = cl_marker,
	.flush = cl_flush,
	.finish = cl_finish,
	.pin = cl_pin,
	.host = cl_host,
	.now = cl_now,
	.phase = cl_phase,
	.interval = cl_interval,
	.abort = cl_abort,
	.end_step = cl_end_step,
	.destroy = cl_destroy,
};

int mb_engine_cl_new(const struct mb_cl *cl, struct mb_ledger *ledger, struct mb_ns *ns,
		     struct mb_hostbuf *const host[MB_HOST_NBUFFERS], const struct mb_model *m,
		     uint64_t tokens, struct mb_engine **out)
{
	struct cl_engine *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return mb_fail("out of host memory for the OpenCL engine");
	c->base.ops = &cl_ops;
	c->cl = cl;
	c->ledger = ledger;
	c->ns = ns;
	memcpy(c->host, host, sizeof(c->host));
	c->model = m;
	c->tokens = tokens;
	*out = &c->base;
	return 0;
}
