/*
 * clshim: an LD_PRELOAD library for the tests that makes the OpenCL driver
 * fail as NVIDIA's did on an H200, on any device (PoCL here). Each mode is
 * an environment variable; with none set, every call passes through.
 *
 * - MB_SHIM_FILL_END=N: a clEnqueueFillBuffer whose range ends past byte N
 *   fails with -9999 (NVIDIA's illegal address; its driver fails so on a
 *   fill past 2^31 bytes, N stands in for 2^31 at a tiny model's scale).
 * - MB_SHIM_FAULT=K: the K-th wait (clWaitForEvents or clFinish, counted
 *   together from 1) fails with -9999.
 * - MB_SHIM_HANG=K: the K-th wait never returns.
 * - MB_SHIM_NO_REOPEN=1: once a fault was planted, the device cannot be
 *   opened again (clCreateContext fails with CL_DEVICE_NOT_AVAILABLE).
 * - MB_SHIM_NV=1: the platform offers NVIDIA's clCreateBufferNV
 *   (cl_nv_create_buffer), made of clCreateBuffer(CL_MEM_ALLOC_HOST_PTR); each
 *   call appends "nv FLAGS" to MB_SHIM_LOG.
 *
 * - MB_SHIM_FLIP_READ=K: the K-th blocking clEnqueueReadBuffer (counted from
 *   1) flips the first byte it read: a wrong result and no error, as a race
 *   leaves it. The exit's line in MB_SHIM_LOG gives "reads N" too.
 * - MB_SHIM_RENAME_FAIL=SUFFIX: a rename(2) to a path that ends in SUFFIX
 *   fails with ENOSPC (a disk that filled: the file cannot be written whole).
 *
 * - MB_SHIM_COPY_DELAY_US=N: each non-blocking copy to or from host memory
 *   waits N microseconds more before it starts (a user event set by a thread
 *   of its own), the host not held: copies slow beside compute, as a GPU's
 *   are, so that an ordering bug that PoCL's slow kernels hide can show. The
 *   exit's line in MB_SHIM_LOG gives "delayed N".
 *
 * A fault kills the context, as a real one does: until the next
 * clCreateContext, every enqueue and wait fails with
 * CL_INVALID_COMMAND_QUEUE and a buffer cannot be made. MB_SHIM_LOG=FILE
 * appends a line there for each fault planted, and "waits N" at the exit:
 * how many waits the process made (a test's way to choose K).
 */
#define _GNU_SOURCE		 /* RTLD_NEXT */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NV_ILLEGAL_ADDRESS (-9999)

static int dead, faulted;
static unsigned long waits, reads, delayed;

/* The driver's own FN, looked up once. */
#define REAL(fn)                     \
	static __typeof__(fn) *real; \
	if (!real)                   \
	real = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn)

static unsigned long env_count(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 10) : 0;
}

static void planted(const char *what)
{
	const char *log = getenv("MB_SHIM_LOG");
	FILE *f;

	dead = faulted = 1;
	if (log && *log && (f = fopen(log, "a"))) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

__attribute__((destructor)) static void count_waits(void)
{
	const char *log = getenv("MB_SHIM_LOG");
	FILE *f;

	if (log && *log && (f = fopen(log, "a"))) {
		fprintf(f, "waits %lu\nreads %lu\ndelayed %lu\n", waits, reads, delayed);
		fclose(f);
	}
}

/* A wait: the K-th fails or hangs as asked; a dead context fails. */
static cl_int wait_fault(void)
{
	waits++;
	if (dead)
		return CL_INVALID_COMMAND_QUEUE;
	if (waits == env_count("MB_SHIM_HANG")) {
		planted("hang");
		for (;;)
			pause();
	}
	if (waits == env_count("MB_SHIM_FAULT")) {
		planted("fault");
		return NV_ILLEGAL_ADDRESS;
	}
	return CL_SUCCESS;
}

cl_context clCreateContext(const cl_context_properties *props, cl_uint n, const cl_device_id *devs,
			   void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
			   void *user, cl_int *err)
{
	const char *no = getenv("MB_SHIM_NO_REOPEN");

	REAL(clCreateContext);
	if (faulted && no && !strcmp(no, "1")) {
		if (err)
			*err = CL_DEVICE_NOT_AVAILABLE;
		return NULL;
	}
	dead = 0;
	return real(props, n, devs, notify, user, err);
}

/* clCreateBufferNV as NVIDIA's driver offers it, on any device: host memory, pinned. */
static cl_mem create_buffer_nv(cl_context ctx, cl_mem_flags flags, cl_bitfield nv_flags,
			       size_t size, void *host, cl_int *err)
{
	const char *log = getenv("MB_SHIM_LOG");
	FILE *f;

	if (log && *log && (f = fopen(log, "a"))) {
		fprintf(f, "nv %llu\n", (unsigned long long)nv_flags);
		fclose(f);
	}
	return clCreateBuffer(ctx, flags | CL_MEM_ALLOC_HOST_PTR, size, host, err);
}

void *clGetExtensionFunctionAddressForPlatform(cl_platform_id platform, const char *name)
{
	const char *nv = getenv("MB_SHIM_NV");

	REAL(clGetExtensionFunctionAddressForPlatform);
	if (nv && !strcmp(nv, "1") && !strcmp(name, "clCreateBufferNV"))
		return (void *)create_buffer_nv;
	return real(platform, name);
}

/*
 * The waits: the driver's own first, even when this one fails, so that no
 * command of a context the shim calls dead is still running when its
 * buffers are freed (a real device that faults runs none; PoCL would go on
 * copying into host memory muonbench has freed).
 */
cl_int clWaitForEvents(cl_uint n, const cl_event *evs)
{
	cl_int st = wait_fault(), done;

	REAL(clWaitForEvents);
	done = real(n, evs);
	return st != CL_SUCCESS ? st : done;
}

cl_int clFinish(cl_command_queue q)
{
	cl_int st = wait_fault(), done;

	REAL(clFinish);
	done = real(q);
	return st != CL_SUCCESS ? st : done;
}

cl_int clFlush(cl_command_queue q)
{
	REAL(clFlush);
	return dead ? CL_INVALID_COMMAND_QUEUE : real(q);
}

cl_int clEnqueueFillBuffer(cl_command_queue q, cl_mem buf, const void *pattern, size_t psize,
			   size_t off, size_t size, cl_uint nw, const cl_event *wl, cl_event *ev)
{
	unsigned long end = env_count("MB_SHIM_FILL_END");

	REAL(clEnqueueFillBuffer);
	if (dead)
		return CL_INVALID_COMMAND_QUEUE;
	if (end && off + size > end) {
		planted("fill");
		return NV_ILLEGAL_ADDRESS;
	}
	return real(q, buf, pattern, psize, off, size, nw, wl, ev);
}

cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *off,
			      const size_t *global, const size_t *local, cl_uint nw,
			      const cl_event *wl, cl_event *ev)
{
	REAL(clEnqueueNDRangeKernel);
	return dead ? CL_INVALID_COMMAND_QUEUE : real(q, k, dims, off, global, local, nw, wl, ev);
}

/* A copy's gate, opened by its own thread after the delay. */
static void *open_gate(void *arg)
{
	usleep((useconds_t)env_count("MB_SHIM_COPY_DELAY_US"));
	clSetUserEventStatus(arg, CL_COMPLETE);
	clReleaseEvent(arg);
	return NULL;
}

/*
 * With MB_SHIM_COPY_DELAY_US, the wait list of a non-blocking copy on Q
 * (NW events of WL) with a gate that opens after the delay, into *GATED
 * (room for NW + 1); *NGATED its length. Without (or for a blocking copy,
 * or where a gate cannot be made) the list as it was.
 */
static const cl_event *gated(cl_command_queue q, cl_bool block, cl_uint nw, const cl_event *wl,
			     cl_event *gate, cl_event *list, cl_uint *ngated)
{
	cl_context ctx;
	cl_int st;

	*ngated = nw;
	*gate = NULL;
	if (block || !env_count("MB_SHIM_COPY_DELAY_US") || nw > 15 ||
	    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL) != CL_SUCCESS ||
	    !(*gate = clCreateUserEvent(ctx, &st)) || st != CL_SUCCESS)
		return wl;
	if (nw)
		memcpy(list, wl, nw * sizeof(*wl));
	list[nw] = *gate;
	*ngated = nw + 1;
	return list;
}

/* After the copy was enqueued with the gate: a thread opens it after the delay. */
static void start_gate(cl_event gate)
{
	pthread_t t;

	if (!gate)
		return;
	if (pthread_create(&t, NULL, open_gate, gate)) {
		clSetUserEventStatus(gate, CL_COMPLETE); /* no thread: no delay */
		clReleaseEvent(gate);
		return;
	}
	pthread_detach(t);
	__atomic_add_fetch(&delayed, 1, __ATOMIC_RELAXED);
}

cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem buf, cl_bool block, size_t off, size_t size,
			   void *ptr, cl_uint nw, const cl_event *wl, cl_event *ev)
{
	cl_event gate, list[16];
	cl_uint n;
	cl_int st;

	REAL(clEnqueueReadBuffer);
	if (dead)
		return CL_INVALID_COMMAND_QUEUE;
	wl = gated(q, block, nw, wl, &gate, list, &n);
	st = real(q, buf, block, off, size, ptr, n, wl, ev);
	start_gate(gate);
	if (st == CL_SUCCESS && block && size && ++reads == env_count("MB_SHIM_FLIP_READ"))
		*(unsigned char *)ptr ^= 0x80;
	return st;
}

cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem buf, cl_bool block, size_t off, size_t size,
			    const void *ptr, cl_uint nw, const cl_event *wl, cl_event *ev)
{
	cl_event gate, list[16];
	cl_uint n;
	cl_int st;

	REAL(clEnqueueWriteBuffer);
	if (dead)
		return CL_INVALID_COMMAND_QUEUE;
	wl = gated(q, block, nw, wl, &gate, list, &n);
	st = real(q, buf, block, off, size, ptr, n, wl, ev);
	start_gate(gate);
	return st;
}

cl_int clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t soff, size_t doff,
			   size_t size, cl_uint nw, const cl_event *wl, cl_event *ev)
{
	REAL(clEnqueueCopyBuffer);
	return dead ? CL_INVALID_COMMAND_QUEUE : real(q, src, dst, soff, doff, size, nw, wl, ev);
}

void *clEnqueueMapBuffer(cl_command_queue q, cl_mem buf, cl_bool block, cl_map_flags flags,
			 size_t off, size_t size, cl_uint nw, const cl_event *wl, cl_event *ev,
			 cl_int *err)
{
	REAL(clEnqueueMapBuffer);
	if (dead) {
		if (err)
			*err = CL_INVALID_COMMAND_QUEUE;
		return NULL;
	}
	return real(q, buf, block, flags, off, size, nw, wl, ev, err);
}

cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nw, const cl_event *wl, cl_event *ev)
{
	REAL(clEnqueueMarkerWithWaitList);
	return dead ? CL_INVALID_COMMAND_QUEUE : real(q, nw, wl, ev);
}

cl_int clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nw, const cl_event *wl,
				    cl_event *ev)
{
	REAL(clEnqueueBarrierWithWaitList);
	return dead ? CL_INVALID_COMMAND_QUEUE : real(q, nw, wl, ev);
}

cl_mem clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
	REAL(clCreateBuffer);
	if (dead) {
		if (err)
			*err = CL_OUT_OF_RESOURCES;
		return NULL;
	}
	return real(ctx, flags, size, host, err);
}

int rename(const char *from, const char *to)
{
	const char *suffix = getenv("MB_SHIM_RENAME_FAIL");
	size_t n = suffix ? strlen(suffix) : 0, len = strlen(to);
	REAL(rename);

	if (n && len >= n && !strcmp(to + len - n, suffix)) {
		errno = ENOSPC;
		return -1;
	}
	return real(from, to);
}
