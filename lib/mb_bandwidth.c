/*
 * mb_bandwidth: host-device copy bandwidth, pageable against pinned.
 */
#include "mb_bandwidth.h"

#include <math.h>
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

/* The host's fastest memcpy of BYTES, on one thread or on all of them, in GB/s. */
static double memcpy_gbs(struct mb_bw_buffers *b, uint64_t bytes)
{
	const uint64_t chunk = 1u << 20;
	double best = 0, t;
	int rep, parallel;

	for (parallel = 0; parallel <= 1; parallel++) {
		for (rep = 0; rep < MEMCPY_REPS; rep++) {
			char *dst = b->dst.ptr;
			const char *src = b->src.ptr;
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

static double event_s(cl_event e, cl_profiling_info what)
{
	cl_ulong ns = 0;

	clGetEventProfilingInfo(e, what, sizeof(ns), &ns, NULL);
	return 1e-9 * (double)ns;
}

/* One copy (two for "both"), finished; its device and host seconds. */
static int copy_once(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, double *dev_s,
		     double *host_s)
{
	const struct mb_cl *cl = b->cl;
	cl_event ev[2] = { NULL, NULL };
	double t = mb_now_s(), start = INFINITY, end = -INFINITY;
	const char *call = "clEnqueueWriteBuffer";
	cl_int st = CL_SUCCESS;
	int i, err;

	if (dir != MB_BW_D2H)
		st = clEnqueueWriteBuffer(cl->compute, b->to, CL_FALSE, 0, bytes, b->src.ptr, 0,
					  NULL, &ev[0]);
	if (st == CL_SUCCESS && dir != MB_BW_H2D && (call = "clEnqueueReadBuffer"))
		st = clEnqueueReadBuffer(cl->copy, b->from, CL_FALSE, 0, bytes, b->dst.ptr, 0, NULL,
					 &ev[1]);
	if (st == CL_SUCCESS && (call = "clFinish"))
		st = clFinish(cl->compute);
	if (st == CL_SUCCESS)
		st = clFinish(cl->copy);
	*host_s = mb_now_s() - t;
	for (i = 0; i < 2; i++) {
		if (!ev[i])
			continue;
		if (event_s(ev[i], CL_PROFILING_COMMAND_START) < start)
			start = event_s(ev[i], CL_PROFILING_COMMAND_START);
		if (event_s(ev[i], CL_PROFILING_COMMAND_END) > end)
			end = event_s(ev[i], CL_PROFILING_COMMAND_END);
		clReleaseEvent(ev[i]);
	}
	*dev_s = end - start;
	err = mb_cl_check(cl, st, call, "%s copy of %llu bytes", mb_bw_dir_names[dir],
			  (unsigned long long)bytes);
	return err;
}

int mb_bw_measure(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, unsigned reps,
		  struct mb_bw_result *r)
{
	double *dev = calloc(reps, sizeof(*dev)), *host = calloc(reps, sizeof(*host)), d, h;
	double moved = (double)bytes * (dir == MB_BW_BOTH ? 2 : 1);
	unsigned i;
	int err;

	memset(r, 0, sizeof(*r));
	r->bytes = bytes;
	r->dir = dir;
	r->pinned = b->src.pinned;
	r->reps = reps;
	if (!dev || !host) {
		free(dev);
		free(host);
		return mb_fail("out of host memory");
	}
	if (bytes > b->max_bytes)
		err = mb_fail("a copy of %llu bytes is larger than its buffers",
			      (unsigned long long)bytes);
	else
		err = copy_once(b, bytes, dir, &d, &h); /* the warm-up */
	for (i = 0; i < reps && !err; i++) {
		err = copy_once(b, bytes, dir, &d, &h);
		/* a copy the timer cannot see counts as 1 ns: flagged zero-copy, still finite */
		dev[i] = moved / (d > 1e-9 ? d : 1e-9) / 1e9;
		host[i] = moved / (h > 1e-9 ? h : 1e-9) / 1e9;
	}
	if (!err) {
		if (b->memcpy_bytes != bytes) {
			b->memcpy_gbs = memcpy_gbs(b, bytes);
			b->memcpy_bytes = bytes;
		}
		r->device_gbs = mb_spread_of(dev, reps);
		r->host_gbs = mb_spread_of(host, reps);
		r->memcpy_gbs = b->memcpy_gbs;
		/* per direction: "both" moves twice the bytes in the same time */
		r->zero_copy = mb_bw_zero_copy(r->device_gbs.median / (dir == MB_BW_BOTH ? 2 : 1),
					       r->memcpy_gbs);
	}
	free(dev);
	free(host);
	return err;
}
