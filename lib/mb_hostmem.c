/*
 * mb_hostmem: pinned (mapped CL_MEM_ALLOC_HOST_PTR) and pageable host buffers.
 */
#include "mb_hostmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_num.h"

#define PAGE 4096

/* memset in parallel, so that first touch spreads over the bound threads. */
static void zero(void *p, uint64_t bytes)
{
	const uint64_t chunk = 1u << 20;
	int64_t i, n = (int64_t)((bytes + chunk - 1) / chunk);

#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i * chunk;

		memset((char *)p + off, 0, bytes - off < chunk ? bytes - off : chunk);
	}
}

static int alloc_pinned(struct mb_hostbuf *b)
{
	const struct mb_cl *cl = b->cl;
	char size[32], most[32];
	cl_int st;

	mb_fmt_bytes_iec(size, sizeof(size), b->bytes);
	if (b->bytes > cl->info.max_alloc_bytes)
		return mb_fail("pinned host buffer '%s' (%s) is larger than '%s' allocates at "
			       "once (%s); use --pin-memory off",
			       b->what, size, cl->info.name,
			       mb_fmt_bytes_iec(most, sizeof(most), cl->info.max_alloc_bytes));
	b->mem = clCreateBuffer(cl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, b->bytes,
				NULL, &st);
	if (mb_cl_check(cl, st, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", "pinned '%s', %s", b->what,
			size))
		return -MB_EFAIL;
	b->ptr = clEnqueueMapBuffer(cl->compute, b->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
				    b->bytes, 0, NULL, NULL, &st);
	if (mb_cl_check(cl, st, "clEnqueueMapBuffer", "pinned '%s', %s", b->what, size)) {
		clReleaseMemObject(b->mem);
		b->mem = NULL;
		b->ptr = NULL;
		return -MB_EFAIL;
	}
	return 0;
}

int mb_hostbuf_alloc(struct mb_hostbuf *b, const struct mb_cl *cl, uint64_t bytes, bool pinned,
		     const char *what)
{
	char size[32];
	int err;

	memset(b, 0, sizeof(*b));
	b->cl = cl;
	b->bytes = bytes;
	b->pinned = pinned;
	snprintf(b->what, sizeof(b->what), "%s", what);
	if (!bytes)
		return 0;
	if (pinned) {
		if ((err = alloc_pinned(b)))
			return err;
	} else {
		b->ptr = aligned_alloc(PAGE, (bytes + PAGE - 1) / PAGE * PAGE);
		if (!b->ptr)
			return mb_fail("out of host memory for '%s' (%s)", what,
				       mb_fmt_bytes_iec(size, sizeof(size), bytes));
	}
	zero(b->ptr, bytes);
	return 0;
}

int mb_hostbuf_move(struct mb_hostbuf *b, bool pinned)
{
	struct mb_hostbuf fresh;
	int err;

	if ((err = mb_hostbuf_alloc(&fresh, b->cl, b->bytes, pinned, b->what)))
		return err;
	if (b->bytes)
		memcpy(fresh.ptr, b->ptr, b->bytes);
	mb_hostbuf_release(b);
	*b = fresh;
	return 0;
}

void mb_hostbuf_release(struct mb_hostbuf *b)
{
	if (b->mem) {
		if (b->ptr) {
			clEnqueueUnmapMemObject(b->cl->compute, b->mem, b->ptr, 0, NULL, NULL);
			clFinish(b->cl->compute);
		}
		clReleaseMemObject(b->mem);
	} else {
		free(b->ptr);
	}
	b->ptr = NULL;
	b->mem = NULL;
	b->bytes = 0;
}
