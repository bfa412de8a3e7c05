/*
 * mb_bandwidth: host-device copy bandwidth, pageable against pinned; "both"
 * from two host threads, one a direction (see mb_bandwidth.h for why).
 */
#include "mb_bandwidth.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_clock.h"
#include "mb_err.h"
#include "mb_hostmem.h"
#include "mb_num.h"

const char *const mb_bw_dir_names[MB_BW_NDIRS] = { "H2D", "D2H", "both" };

#define MEMCPY_REPS 3

struct mb_bw_buffers {
	const struct mb_cl *cl;
	uint64_t max_bytes;
	struct mb_hostbuf src, dst; /* H2D reads src, D2H writes dst */
	cl_mem to, from;	    /* device: H2D writes to, D2H reads from */
	uint64_t memcpy_bytes;	    /* the size memcpy_gbs is for */
	double memcpy_gbs;
};

bool mb_bw_zero_copy(double gbs, double memcpy_gbs)
{
	return gbs > MB_BW_ZERO_COPY_FACTOR * memcpy_gbs;
}

/* Bytes none of which is zero, the same on every run, written by the bound threads. */
static void fill(void *p, uint64_t bytes, uint64_t seed)
{
	uint64_t *w = p, tail = bytes % 8;
	int64_t i;

#pragma omp parallel for schedule(static)
	for (i = 0; i < (int64_t)(bytes / 8); i++)
		w[i] = ((uint64_t)i * 0x9e3779b97f4a7c15u + seed) | 0x0101010101010101u;
	memset((char *)p + bytes - tail, 0x5a, tail);
}

static int device_buffer(const struct mb_cl *cl, uint64_t bytes, const char *what, cl_mem *out)
{
	char size[32];
	cl_int st;

	*out = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, bytes, NULL, &st);
	mb_fmt_bytes_iec(size, sizeof(size), bytes);
	return mb_cl_check(cl, st, "clCreateBuffer", "bandwidth '%s', %s", what, size);
}

int mb_bw_buffers_new(const struct mb_cl *cl, uint64_t max_bytes, bool pinned,
		      struct mb_bw_buffers **out)
{
	struct mb_bw_buffers *b = calloc(1, sizeof(*b));
	int err;

	*out = NULL;
	if (!b)
		return mb_fail("out of host memory");
	b->cl = cl;
	b->max_bytes = max_bytes;
	if ((err = mb_hostbuf_alloc(&b->src, cl, max_bytes, pinned, "copy source")) ||
	    (err = mb_hostbuf_alloc(&b->dst, cl, max_bytes, pinned, "copy target")) ||
	    (err = device_buffer(cl, max_bytes, "H2D target", &b->to)) ||
	    (err = device_buffer(cl, max_bytes, "D2H source", &b->from))) {
		mb_bw_buffers_free(b);
		return err;
	}
	fill(b->src.ptr, max_bytes, 1);
	fill(b->dst.ptr, max_bytes, 2);
	/* the device side too, so that no copy reads memory never written */
	err = mb_cl_check(cl,
			  clEnqueueWriteBuffer(cl->compute, b->from, CL_TRUE, 0, max_bytes,
					       b->dst.ptr, 0, NULL, NULL),
			  "clEnqueueWriteBuffer", "filling the D2H source");
	if (err) {
		mb_bw_buffers_free(b);
		return err;
	}
	*out = b;
	return 0;
}

void mb_bw_buffers_free(struct mb_bw_buffers *b)
{
	if (!b)
		return;
	if (b->to)
		clReleaseMemObject(b->to);
	if (b->from)
		clReleaseMemObject(b->from);
	mb_hostbuf_release(&b->src);
	mb_hostbuf_release(&b->dst);
	free(b);
}

/*
 * The host's fastest memcpy of BYTES, on one thread or on all of them, in
 * GB/s: from the D2H target into the H2D source, so that each copy's
 * target keeps what the copy moved (mb_bw_target_at).
 */
static double memcpy_gbs(struct mb_bw_buffers *b, uint64_t bytes)
{
	const uint64_t chunk = 1u << 20;
	double best = 0, t;
	int rep, parallel;

	for (parallel = 0; parallel <= 1; parallel++) {
		for (rep = 0; rep < MEMCPY_REPS; rep++) {
			char *dst = b->src.ptr;
			const char *src = b->dst.ptr;
			int64_t i, n = (int64_t)((bytes + chunk - 1) / chunk);

			t = mb_now_s();
			if (!parallel) {
				memcpy(dst, src, bytes);
			} else {
#pragma omp parallel for schedule(static)
				for (i = 0; i < n; i++) {
					uint64_t off = (uint64_t)i * chunk;

					memcpy(dst + off, src + off,
					       bytes - off < chunk ? bytes - off : chunk);
				}
			}
			__asm__ volatile("" : : "r"(dst) : "memory"); /* the copy must happen */
			t = mb_now_s() - t;
			if (t > 0 && (double)bytes / t / 1e9 > best)
				best = (double)bytes / t / 1e9;
		}
	}
	return best;
}

/* One direction's copies, on its own queue, from one host thread. */
struct side {
	struct mb_bw_buffers *b;
	enum mb_bw_dir dir; /* MB_BW_H2D or MB_BW_D2H */
	uint64_t bytes;
	unsigned n;		     /* copies: the warm-up, then the timed ones */
	bool spread;		     /* copy i at offset i x bytes, around the buffers */
	pthread_barrier_t *together; /* "both": each copy starts with the other side's */
	double *host0, *host1;	     /* [n]: host clock before the enqueue, after the finish */
	double *ev0, *ev1;	     /* [n]: the event's START and END; NaN when not had */
	int err;		     /* a failed copy: -MB_EFAIL, with msg */
	char msg[512];
	char why[512]; /* the first event time the driver refused; "" if none */
};

/*
 * Every other spread copy's source is written this many bytes of copies
 * before the copy; the others' were last touched a lap of the buffers
 * before. So a step copies: about half of what it copies it has just
 * produced (a Newton-Schulz's update, the bf16 params the host optimizer
 * wrote), half long before (the momentum, before the Newton-Schulz that
 * followed it; the grads, before the rest of the backward). 4 MiB of
 * copies move 8 MiB: a source no longer in the core's own cache, in the
 * last-level one, as other work came between in the step. (The first
 * copies' sources are written before the warm-up, fewer bytes ahead.)
 */
#define PRODUCED_AHEAD_BYTES (4ull << 20)

/* Whether copy I's source is produced ahead of it: every other copy, the odd ones. */
static bool produced(unsigned i)
{
	return i % 2;
}

/* Where copy I of S goes: the next place around the buffers if spread, else their start. */
static uint64_t place(const struct side *s, unsigned i)
{
	return s->spread && s->bytes ? i % (s->b->max_bytes / s->bytes) * s->bytes : 0;
}

/* How many copies ahead of its copy a spread copy's source is written (fewer than the places). */
static unsigned ahead(const struct side *s)
{
	uint64_t places = s->bytes ? s->b->max_bytes / s->bytes : 1,
		 n = s->bytes ? (PRODUCED_AHEAD_BYTES + s->bytes - 1) / s->bytes : 0;

	return (unsigned)(n < places - 1 ? n : places - 1);
}

/*
 * Write copy I's source, its value (I % 255 + 1, never zero) in every byte:
 * by the host for an H2D (a gradient, a parameter the host optimizer
 * wrote), by the device for a D2H (a kernel's update or momentum). A
 * failure is S's error, as a copy's is. The device's fill is OpenCL's own
 * (mb_cl.h warns of it past 2^31 bytes, and these are copies of at most a
 * few MiB): mb_cl_fill writes whole 4-byte words, where a copy may be of
 * any size, and is not for two threads on one CL, where "both" has them.
 */
static void produce(struct side *s, unsigned i)
{
	const struct mb_cl *cl = s->b->cl;
	cl_uchar value = (cl_uchar)(i % 255 + 1);
	uint64_t off = place(s, i);
	const char *call = "clEnqueueFillBuffer";
	cl_int st;

	if (s->err || !s->bytes)
		return;
	if (s->dir == MB_BW_H2D) {
		memset((char *)s->b->src.ptr + off, value, s->bytes);
		return;
	}
	st = clEnqueueFillBuffer(cl->copy, s->b->from, &value, 1, off, s->bytes, 0, NULL, NULL);
	if (st == CL_SUCCESS && (call = "clFinish"))
		st = clFinish(cl->copy);
	if ((s->err = mb_cl_check(cl, st, call, "writing a D2H copy's source, %llu bytes at %llu",
				  (unsigned long long)s->bytes, (unsigned long long)off)))
		snprintf(s->msg, sizeof(s->msg), "%s", mb_errmsg());
}

/*
 * S's copies, one at a time, each finished before the next. After a failed
 * copy the side copies no more but still meets the other at the barrier, so
 * that neither waits for ever.
 */
static void run_side(struct side *s)
{
	const struct mb_cl *cl = s->b->cl;
	bool h2d = s->dir == MB_BW_H2D;
	cl_command_queue q = h2d ? cl->compute : cl->copy;
	unsigned lead = s->spread ? ahead(s) : 0, i;
	char what[128];

	snprintf(what, sizeof(what), "%s copy of %llu bytes, %s%s", mb_bw_dir_names[s->dir],
		 (unsigned long long)s->bytes, s->b->src.pinned ? "pinned" : "pageable",
		 s->together ? ", both directions at once" : "");
	for (i = 0; s->spread && i < lead && i < s->n; i++)
		if (produced(i))
			produce(s, i);
	for (i = 0; i < s->n; i++) {
		const char *call = h2d ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
		uint64_t off = place(s, i);
		cl_event ev = NULL;
		cl_int st;

		s->host0[i] = s->host1[i] = s->ev0[i] = s->ev1[i] = NAN;
		/* "both": neither side writes while the other's copy is timed */
		if (s->together && s->spread)
			pthread_barrier_wait(s->together);
		if (s->spread && i + lead < s->n && produced(i + lead))
			produce(s, i + lead);
		if (s->together)
			pthread_barrier_wait(s->together);
		if (s->err)
			continue;
		s->host0[i] = mb_now_s();
		st = h2d ? clEnqueueWriteBuffer(q, s->b->to, CL_FALSE, off, s->bytes,
						(char *)s->b->src.ptr + off, 0, NULL, &ev)
			 : clEnqueueReadBuffer(q, s->b->from, CL_FALSE, off, s->bytes,
					       (char *)s->b->dst.ptr + off, 0, NULL, &ev);
		if (st == CL_SUCCESS && (call = "clFinish"))
			st = clFinish(q);
		s->host1[i] = mb_now_s();
		if (st != CL_SUCCESS) {
			s->err = mb_cl_check(cl, st, call, "%s", what);
			snprintf(s->msg, sizeof(s->msg), "%s", mb_errmsg());
		} else if (mb_cl_event_span(cl, ev, what, &s->ev0[i], &s->ev1[i]) && !s->why[0]) {
			snprintf(s->why, sizeof(s->why), "%s", mb_errmsg());
		}
		if (ev)
			clReleaseEvent(ev);
	}
}

static void *side_thread(void *arg)
{
	run_side(arg);
	return NULL;
}

/* H2D on this thread and D2H on a new one, each copy of one started with the other's. */
static int run_both(struct side *h2d, struct side *d2h)
{
	pthread_barrier_t together;
	pthread_t t;
	int st;

	if ((st = pthread_barrier_init(&together, NULL, 2)))
		return mb_fail("cannot make the barrier of the two copy threads: %s", strerror(st));
	h2d->together = d2h->together = &together;
	if ((st = pthread_create(&t, NULL, side_thread, d2h))) {
		pthread_barrier_destroy(&together);
		return mb_fail("cannot start the D2H copy thread: %s", strerror(st));
	}
	run_side(h2d);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&together);
	return 0;
}

/* Copy I's seconds over the sides used: from the first start to the last end. */
static double span(const struct side *s, size_t nsides, bool events, unsigned i)
{
	double start = INFINITY, end = -INFINITY;
	size_t k;

	for (k = 0; k < nsides; k++) {
		start = fmin(start, events ? s[k].ev0[i] : s[k].host0[i]);
		end = fmax(end, events ? s[k].ev1[i] : s[k].host1[i]);
	}
	return end - start;
}

/* BYTES over S seconds in GB/s; a copy the clock cannot see counts as 1 ns (finite, flagged). */
static double gbs(double bytes, double s)
{
	return bytes / (s > 1e-9 || isnan(s) ? s : 1e-9) / 1e9;
}

/*
 * *r's figures from the sides' timed copies (the warm-up, copy 0, left out);
 * DEV and HOST have room for a rate a timed copy.
 */
static void summarize(struct mb_bw_buffers *b, const struct side *s, size_t nsides, double *dev,
		      double *host, struct mb_bw_result *r)
{
	/* spread copies are judged beside a memcpy of the whole buffers they go around */
	uint64_t memcpy_bytes = s[0].spread ? b->max_bytes : r->bytes;
	double moved = (double)r->bytes * (double)nsides, judged, dev_s = 0, host_s = 0;
	size_t k;
	unsigned i;

	_Static_assert(sizeof(s->why) == sizeof(r->device_error), "one size for the reason");
	for (k = 0; k < nsides && !r->device_error[0]; k++)
		memcpy(r->device_error, s[k].why, sizeof(r->device_error));
	for (i = 0; i < r->reps; i++) {
		dev_s += span(s, nsides, true, i + 1);
		host_s += span(s, nsides, false, i + 1);
		dev[i] = gbs(moved, span(s, nsides, true, i + 1));
		host[i] = gbs(moved, span(s, nsides, false, i + 1));
	}
	r->device_overall_gbs = r->device_error[0] ? NAN : gbs(moved * r->reps, dev_s);
	r->host_overall_gbs = gbs(moved * r->reps, host_s);
	if (b->memcpy_bytes != memcpy_bytes) {
		b->memcpy_gbs = memcpy_gbs(b, memcpy_bytes);
		b->memcpy_bytes = memcpy_bytes;
	}
	r->device_gbs = mb_spread_of(dev, r->device_error[0] ? 0 : r->reps);
	r->host_gbs = mb_spread_of(host, r->reps);
	r->memcpy_gbs = b->memcpy_gbs;
	/* judged per direction ("both" moves twice the bytes in the same time), by
	 * the events where there are any */
	judged = isnan(r->device_gbs.median) ? r->host_gbs.median : r->device_gbs.median;
	r->zero_copy = mb_bw_zero_copy(judged / (double)nsides, r->memcpy_gbs);
}

static int measure(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, unsigned reps,
		   bool spread, struct mb_bw_result *r)
{
	const unsigned n = reps + 1; /* the warm-up first */
	const size_t nsides = dir == MB_BW_BOTH ? 2 : 1;
	double *t = calloc(10 * (size_t)n, sizeof(*t)); /* 4 a side and copy, then 2 rates */
	struct side s[2];
	size_t k;
	int err = 0;

	memset(r, 0, sizeof(*r));
	r->bytes = bytes;
	r->dir = dir;
	r->pinned = b->src.pinned;
	r->reps = reps;
	r->threads = (unsigned)nsides;
	if (!t)
		return mb_fail("out of host memory");
	if (bytes > b->max_bytes) {
		free(t);
		return mb_fail("a copy of %llu bytes is larger than its buffers",
			       (unsigned long long)bytes);
	}
	memset(s, 0, sizeof(s));
	for (k = 0; k < nsides; k++) {
		s[k].b = b;
		s[k].dir = dir == MB_BW_BOTH ? (k ? MB_BW_D2H : MB_BW_H2D) : dir;
		s[k].bytes = bytes;
		s[k].n = n;
		s[k].spread = spread;
		s[k].host0 = t + (4 * k + 0) * n;
		s[k].host1 = t + (4 * k + 1) * n;
		s[k].ev0 = t + (4 * k + 2) * n;
		s[k].ev1 = t + (4 * k + 3) * n;
	}
	if (nsides == 2)
		err = run_both(&s[0], &s[1]);
	else
		run_side(&s[0]);
	for (k = 0; k < nsides && !err; k++)
		if (s[k].err)
			err = mb_fail("%s", s[k].msg);
	if (!err)
		summarize(b, s, nsides, t + 8 * (size_t)n, t + 9 * (size_t)n, r);
	free(t);
	return err;
}

int mb_bw_measure(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, unsigned reps,
		  struct mb_bw_result *r)
{
	return measure(b, bytes, dir, reps, false, r);
}

int mb_bw_measure_spread(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, unsigned reps,
			 struct mb_bw_result *r)
{
	return measure(b, bytes, dir, reps, true, r);
}

int mb_bw_target_at(const struct mb_bw_buffers *b, enum mb_bw_dir dir, uint64_t off,
		    unsigned char *out)
{
	if (dir != MB_BW_H2D && dir != MB_BW_D2H)
		return mb_fail("a copy's target is an H2D's or a D2H's, not direction %d",
			       (int)dir);
	if (off >= b->max_bytes)
		return mb_fail("no %s target byte at %llu of %llu", mb_bw_dir_names[dir],
			       (unsigned long long)off, (unsigned long long)b->max_bytes);
	if (dir == MB_BW_D2H) {
		*out = ((const unsigned char *)b->dst.ptr)[off];
		return 0;
	}
	return mb_cl_check(
		b->cl,
		clEnqueueReadBuffer(b->cl->compute, b->to, CL_TRUE, off, 1, out, 0, NULL, NULL),
		"clEnqueueReadBuffer", "the H2D target's byte at %llu", (unsigned long long)off);
}
