/*
 * Host buffers in pinned chunks: the checksum does not depend on how a
 * buffer is cut, the plan cuts between parameters and as late as the limit
 * lets it, and a chunked buffer on the default device (PoCL in CI) keeps
 * its bytes through a move to pageable memory and back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_config.h"
#include "mb_err.h"
#include "mb_hostmem.h"
#include "mb_plan.h"

#include "device.h"

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* 40 MiB + 13 bytes (three of the checksum's 16 MiB pieces) cut anywhere. */
static void checksum_ignores_the_cuts(void **state)
{
	const uint64_t bytes = (40u << 20) + 13;
	unsigned char *data = malloc(bytes);
	struct mb_span spans[64];
	uint64_t x = 88172645463325252ull, want, at, i;
	size_t n, trial;

	(void)state;
	assert_non_null(data);
	for (i = 0; i < bytes; i++)
		data[i] = (unsigned char)next(&x);
	want = mb_checksum(data, bytes, 7);
	for (trial = 0; trial < 6; trial++) {
		for (n = 0, at = 0; n < 63 && at < bytes; n++) {
			/* cuts at multiples of 4 (fp32 parameters), odd ones, and empty spans */
			uint64_t len = trial == 0   ? 4 * (next(&x) % (2u << 20))
				       : n % 7 == 3 ? 0
						    : next(&x) % (3u << 20);

			len = len < bytes - at ? len : bytes - at;
			spans[n] = (struct mb_span){ data + at, len };
			at += len;
		}
		spans[n++] = (struct mb_span){ data + at, bytes - at };
		assert_true(mb_checksum_spans(spans, n, 7) == want);
	}
	/* and a change of one byte changes it */
	data[bytes / 2] ^= 1;
	assert_true(mb_checksum_spans(spans, n, 7) != want);
	free(data);
}

static struct mb_model micro;

static int setup(void **state)
{
	if (mb_config_load_file(&micro, "tests/data/good/micro.json", 0)) {
		fprintf(stderr, "setup: %s\n", mb_errmsg());
		return -1;
	}
	return open_device(state);
}

static int teardown(void **state)
{
	mb_model_release(&micro);
	return close_device(state);
}

/* Bytes of parameter I in buffer B (as the plan lays it out), 0 if not in it. */
static uint64_t piece(const struct mb_plan *p, enum mb_host_buffer b, size_t i)
{
	const struct mb_param *q = &micro.params[i];
	uint64_t n = p->local[i];

	switch (b) {
	case MB_HOST_MOMENTUM:
		return q->muon ? 4 * n : 0;
	case MB_HOST_STAGING:
		return 2 * n;
	default:
		return 4 * n;
	}
}

/*
 * Every chunk ends between parameters, holds at most LIMIT bytes unless it
 * is one parameter, and could not have taken the next one: the greedy cut.
 */
static void plan_cuts_between_parameters(void **state)
{
	enum mb_host_buffer bufs[] = { MB_HOST_GRADS, MB_HOST_MOMENTUM, MB_HOST_STAGING };
	uint64_t limits[] = { 0, 1, 4096, 20000, 1u << 20 };
	struct mb_plan_settings s = { .stage = 2,
				      .gather_budget_bytes = 1u << 30,
				      .world_size = 1 };
	uint64_t *cuts = calloc(micro.nparams + 1, sizeof(*cuts));
	struct mb_plan p;
	size_t bi, li, n, c, i;

	(void)state;
	assert_int_equal(mb_plan_build(&p, &micro, &s), 0);
	for (bi = 0; bi < 3; bi++)
		for (li = 0; li < 5; li++) {
			enum mb_host_buffer b = bufs[bi];
			uint64_t at = 0, start = 0, limit = limits[li];

			n = mb_plan_host_cuts(&p, &micro, b, limit, cuts);
			assert_int_equal(n, mb_plan_host_cuts(&p, &micro, b, limit, NULL));
			assert_int_equal(cuts[n - 1], p.host_bytes[b]);
			/* the momentum is laid out in the apply order, the rest in model order */
			size_t end = b == MB_HOST_MOMENTUM ? p.norder : micro.nparams, j;

			for (j = 0, c = 0; j < end; j++) {
				uint64_t k;

				i = b == MB_HOST_MOMENTUM ? p.order[j] : j;
				k = piece(&p, b, i);

				if (!k)
					continue;
				if (at > start && at == cuts[c]) { /* a cut before parameter i */
					assert_true(!limit || at - start + k > limit);
					c++;
					start = at;
				}
				/* no cut inside a parameter, none in a chunk that had room */
				assert_true(cuts[c] >= at + k);
				at += k;
				assert_true(!limit || at - start <= limit || at - start == k);
			}
			assert_int_equal(c, n - 1);
			if (!limit)
				assert_int_equal(n, 1);
		}
	assert_int_equal(p.host_chunks[MB_HOST_GRADS], 1); /* pin_chunk_bytes 0: no limit */
	mb_plan_release(&p);
	free(cuts);
}

/* A pinned buffer in three chunks, written, moved to pageable memory and back. */
static void chunked_buffer_keeps_its_bytes(void **state)
{
	const uint64_t cuts[] = { 4096, 4096 + 4100, 4096 + 4100 + 12 };
	struct mb_hostbuf b, whole;
	struct mb_cl small = cl;
	uint64_t i, run, bytes = cuts[2];
	unsigned char *p;

	(void)state;
	assert_int_equal(mb_hostbuf_alloc_cut(&b, &cl, bytes, true, "test", cuts, 3), 0);
	assert_int_equal(b.nchunks, 3);
	assert_int_equal(mb_hostbuf_alloc(&whole, &cl, bytes, false, "whole"), 0);
	for (i = 0; i < bytes; i++) {
		p = mb_hostbuf_at(&b, i, &run);
		assert_int_equal(run, (i < 4096 ? 4096 : i < 8196 ? 8196 : bytes) - i);
		*p = ((unsigned char *)whole.ptr)[i] = (unsigned char)(i * 7 + 3);
	}
	assert_true(mb_hostbuf_checksum(&b, 0) == mb_hostbuf_checksum(&whole, 0));
	assert_int_equal(mb_hostbuf_move(&b, false), 0);
	assert_false(b.pinned);
	assert_int_equal(b.nchunks, 1); /* pageable: one piece */
	assert_memory_equal(b.ptr, whole.ptr, bytes);
	assert_int_equal(mb_hostbuf_move(&b, true), 0);
	assert_int_equal(b.nchunks, 3); /* pinned again, in the same chunks */
	assert_true(mb_hostbuf_checksum(&b, 0) == mb_hostbuf_checksum(&whole, 0));
	mb_hostbuf_release(&b);
	mb_hostbuf_release(&whole);

	/* a chunk over the device's largest allocation is refused, naming it */
	small.info.max_alloc_bytes = 4099; /* the second chunk is 4100 bytes */
	assert_int_equal(mb_hostbuf_alloc_cut(&b, &small, bytes, true, "grads", cuts, 3),
			 -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "'grads'"));
	assert_non_null(strstr(mb_errmsg(), "--pin-memory off"));
	assert_null(b.chunks); /* nothing left behind */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checksum_ignores_the_cuts),
		cmocka_unit_test(plan_cuts_between_parameters),
		cmocka_unit_test(chunked_buffer_keeps_its_bytes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
