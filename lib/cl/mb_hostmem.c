/*
 * mb_hostmem: pinned (mapped CL_MEM_ALLOC_HOST_PTR chunks) and pageable host
 * buffers.
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

static int alloc_pinned(struct mb_hostbuf *b, struct mb_hostchunk *c)
{
	const struct mb_cl *cl = b->cl;
	char size[32], most[32];
	const char *call;
	cl_int st;

	mb_fmt_bytes_iec(size, sizeof(size), c->bytes);
	if (c->bytes > cl->info.max_alloc_bytes)
		return mb_fail("pinned host buffer '%s' needs a chunk of %s (at byte %llu: one "
			       "parameter, which is never cut) but '%s' allocates at most %s at "
			       "once; use --pin-memory off",
			       b->what, size, (unsigned long long)c->off, cl->info.name,
			       mb_fmt_bytes_iec(most, sizeof(most), cl->info.max_alloc_bytes));
	c->mem = mb_cl_create_pinned(cl, c->bytes, &st, &call);
	if (mb_cl_check(cl, st, call, "pinned '%s', %s", b->what, size))
		return -MB_EFAIL;
	c->ptr = clEnqueueMapBuffer(cl->compute, c->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
				    c->bytes, 0, NULL, NULL, &st);
	if (mb_cl_check(cl, st, "clEnqueueMapBuffer", "pinned '%s', %s", b->what, size)) {
		clReleaseMemObject(c->mem);
		c->mem = NULL;
		c->ptr = NULL;
		return -MB_EFAIL;
	}
	return 0;
}

/* The chunks of B: pinned, one per cut (one for none); pageable, one. */
static int lay_out(struct mb_hostbuf *b)
{
	size_t i, n = b->pinned && b->ncuts ? b->ncuts : 1;
	uint64_t at = 0;

	b->chunks = calloc(n, sizeof(*b->chunks));
	b->spans = calloc(n, sizeof(*b->spans));
	if (!b->chunks || !b->spans)
		return mb_fail("out of host memory for the %zu chunks of '%s'", n, b->what);
	b->nchunks = n;
	for (i = 0; i < n; i++) {
		uint64_t end = b->pinned && b->ncuts ? b->cuts[i] : b->bytes;

		if (end < at || end > b->bytes || (i == n - 1 && end != b->bytes))
			return mb_fail("bad chunk cuts for '%s': chunk %zu ends at %llu of %llu",
				       b->what, i, (unsigned long long)end,
				       (unsigned long long)b->bytes);
		b->chunks[i].off = at;
		b->chunks[i].bytes = end - at;
		at = end;
	}
	return 0;
}

int mb_hostbuf_alloc(struct mb_hostbuf *b, const struct mb_cl *cl, uint64_t bytes, bool pinned,
		     const char *what)
{
	return mb_hostbuf_alloc_cut(b, cl, bytes, pinned, what, NULL, 0);
}

int mb_hostbuf_alloc_cut(struct mb_hostbuf *b, const struct mb_cl *cl, uint64_t bytes, bool pinned,
			 const char *what, const uint64_t *cuts, size_t ncuts)
{
	char size[32];
	size_t i;
	int err;

	memset(b, 0, sizeof(*b));
	b->cl = cl;
	b->bytes = bytes;
	b->pinned = pinned;
	snprintf(b->what, sizeof(b->what), "%s", what);
	if (ncuts) {
		b->cuts = malloc(ncuts * sizeof(*cuts));
		if (!b->cuts)
			return mb_fail("out of host memory for the chunks of '%s'", what);
		memcpy(b->cuts, cuts, ncuts * sizeof(*cuts));
		b->ncuts = ncuts;
	}
	if ((err = lay_out(b)))
		goto fail;
	for (i = 0; i < b->nchunks; i++) {
		struct mb_hostchunk *c = &b->chunks[i];

		if (!c->bytes)
			continue;
		if (pinned) {
			if ((err = alloc_pinned(b, c)))
				goto fail;
		} else {
			c->ptr = aligned_alloc(PAGE, (c->bytes + PAGE - 1) / PAGE * PAGE);
			if (!c->ptr) {
				err = mb_fail("out of host memory for '%s' (%s)", what,
					      mb_fmt_bytes_iec(size, sizeof(size), bytes));
				goto fail;
			}
		}
		zero(c->ptr, c->bytes);
		b->spans[i] = (struct mb_span){ c->ptr, c->bytes };
	}
	b->ptr = b->chunks[0].ptr;
	return 0;

fail:
	mb_hostbuf_release(b);
	return err;
}

int mb_hostbuf_move(struct mb_hostbuf *b, bool pinned)
{
	struct mb_hostbuf fresh;
	uint64_t off, run;
	int err;

	if ((err = mb_hostbuf_alloc_cut(&fresh, b->cl, b->bytes, pinned, b->what, b->cuts,
					b->ncuts)))
		return err;
	for (off = 0; off < b->bytes; off += run) {
		void *src = mb_hostbuf_at(b, off, &run), *dst;
		uint64_t room;

		dst = mb_hostbuf_at(&fresh, off, &room);
		run = run < room ? run : room;
		memcpy(dst, src, run);
	}
	mb_hostbuf_release(b);
	*b = fresh;
	return 0;
}

void *mb_hostbuf_at(const struct mb_hostbuf *b, uint64_t off, uint64_t *run)
{
	size_t lo = 0, hi = b->nchunks, mid;
	const struct mb_hostchunk *c;

	/* the last chunk that starts at or before OFF and is not empty */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (b->chunks[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	while (lo + 1 < b->nchunks && off >= b->chunks[lo].off + b->chunks[lo].bytes)
		lo++;
	c = &b->chunks[lo];
	if (run)
		*run = c->off + c->bytes - off;
	return (char *)c->ptr + (off - c->off);
}

uint64_t mb_hostbuf_checksum(const struct mb_hostbuf *b, uint64_t h)
{
	return mb_checksum_spans(b->spans, b->nchunks, h);
}

void mb_hostbuf_release(struct mb_hostbuf *b)
{
	size_t i;

	for (i = 0; i < b->nchunks; i++) {
		struct mb_hostchunk *c = &b->chunks[i];

		if (c->mem) {
			if (c->ptr) {
				clEnqueueUnmapMemObject(b->cl->compute, c->mem, c->ptr, 0, NULL,
							NULL);
				clFinish(b->cl->compute);
			}
			clReleaseMemObject(c->mem);
		} else {
			free(c->ptr);
		}
	}
	free(b->chunks);
	free(b->spans);
	free(b->cuts);
	b->chunks = NULL;
	b->spans = NULL;
	b->cuts = NULL;
	b->nchunks = b->ncuts = 0;
	b->ptr = NULL;
	b->bytes = 0;
}
