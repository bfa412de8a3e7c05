/*
 * mb_fwdbwd: the token chunks that keep each GEMM of the forward/backward
 * within CLBlast's int indexing (no device needed), and a layer too large
 * for any refused before anything is allocated (on the default device).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mb_err.h"
#include "mb_fwdbwd_cl.h"
#include "mb_ledger.h"
#include "mb_model.h"

#include "device.h"

static uint64_t pad(uint64_t n)
{
	return (n + 255) / 256 * 256;
}

/* The padded elements of a linear layer's three operands over T tokens. */
static unsigned __int128 operands(uint64_t t, uint64_t rows, uint64_t cols)
{
	unsigned __int128 r = pad(rows), c = pad(cols), tt = pad(t);

	return tt * c + r * c + tt * r;
}

/* What any answer must satisfy: the largest chunk that fits, never more tokens. */
static void check_chunk(uint64_t tokens, uint64_t rows, uint64_t cols)
{
	uint64_t chunk = mb_fwdbwd_chunk_tokens(tokens, rows, cols);

	if (chunk == tokens) {
		if (!(operands(tokens, rows, cols) < MB_FWDBWD_GEMM_ELEMENTS))
			fail_msg("%llu tokens of %llux%llu: whole, yet too large",
				 (unsigned long long)tokens, (unsigned long long)rows,
				 (unsigned long long)cols);
		return;
	}
	if (!chunk) {
		assert_true(operands(256, rows, cols) >= MB_FWDBWD_GEMM_ELEMENTS);
		return;
	}
	if (chunk > tokens || chunk % 256 ||
	    !(operands(chunk, rows, cols) < MB_FWDBWD_GEMM_ELEMENTS) ||
	    operands(chunk + 256, rows, cols) < MB_FWDBWD_GEMM_ELEMENTS)
		fail_msg("%llu tokens of %llux%llu: chunk %llu is not the largest that fits",
			 (unsigned long long)tokens, (unsigned long long)rows,
			 (unsigned long long)cols, (unsigned long long)chunk);
}

static void output_head_is_cut_by_tokens(void **state)
{
	(void)state;
	/* Qwen3-4B's head (151936 x 2560): 2048 tokens whole, 16384 tokens in two chunks */
	assert_int_equal(mb_fwdbwd_chunk_tokens(2048, 151936, 2560), 2048);
	assert_int_equal(mb_fwdbwd_chunk_tokens(16384, 151936, 2560), 11264);
	/* 16384 x 151936 alone is 2.49 G elements: past 2^31 */
	assert_true((uint64_t)16384 * 151936 > MB_FWDBWD_GEMM_ELEMENTS);
	check_chunk(16384, 151936, 2560);
	/* Llama-3.1-8B's (128256 x 4096) at 8 x 8192 tokens */
	assert_int_equal(mb_fwdbwd_chunk_tokens(65536, 128256, 4096), 12032);
	check_chunk(65536, 128256, 4096);
}

static void small_passes_are_whole(void **state)
{
	(void)state;
	assert_int_equal(mb_fwdbwd_chunk_tokens(1, 64, 64), 1);
	assert_int_equal(mb_fwdbwd_chunk_tokens(128, 512, 128), 128);
	assert_int_equal(mb_fwdbwd_chunk_tokens(8192, 9728, 2560), 8192);
}

static void a_weight_too_large_is_refused(void **state)
{
	(void)state;
	/* the weight alone: 2^31 elements */
	assert_int_equal(mb_fwdbwd_chunk_tokens(16, 1u << 16, 1u << 15), 0);
	/* it fits, but not with 256 tokens' rows beside it */
	assert_int_equal(mb_fwdbwd_chunk_tokens(16, 1u << 20, 2000), 0);
	check_chunk(16, 1u << 20, 2000);
	/* dimensions up to 2^24 do not overflow the arithmetic */
	assert_int_equal(mb_fwdbwd_chunk_tokens(1, 1u << 24, 1u << 24), 0);
	assert_int_equal(mb_fwdbwd_chunk_tokens(UINT64_MAX / 2, 64, 64), 4194048);
}

static void every_answer_is_the_largest_that_fits(void **state)
{
	static const uint64_t dims[] = { 1, 100, 256, 257, 4096, 151936, 1u << 20 };
	static const uint64_t tokens[] = { 1, 255, 256, 2048, 16384, 131072, 1u << 24 };
	size_t i, j, k;

	(void)state;
	for (i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		for (j = 0; j < sizeof(dims) / sizeof(dims[0]); j++)
			for (k = 0; k < sizeof(tokens) / sizeof(tokens[0]); k++)
				check_chunk(tokens[k], dims[i], dims[j]);
}

static void a_weight_too_large_is_refused_first(void **state)
{
	struct mb_model m = { .layers = 1 };
	struct mb_ledger ledger;
	double fwd = -1, bwd = -1;

	(void)state;
	assert_int_equal(mb_model_add(&m, "layers.0.mlp.up_proj.weight", 2, 64, 32, 0), 0);
	assert_int_equal(mb_model_add(&m, "lm_head.weight", 2, 1u << 20, 4096, -1), 0);
	mb_ledger_init(&ledger, &cl, 0);
	assert_int_equal(mb_fwdbwd_run(&m, 16, &cl, &ledger, NULL, &fwd, &bwd), -MB_EFAIL);
	assert_non_null(strstr(mb_errmsg(), "the forward/backward cannot run 'lm_head.weight' "
					    "(1048576x4096): CLBlast indexes a GEMM's operands "
					    "with int"));
	assert_non_null(strstr(mb_errmsg(), "--fwd-bwd off"));
	assert_int_equal(ledger.peak_bytes, 0);
	assert_int_equal(ledger.nlive, 0);
	assert_true(fwd == 0 && bwd == 0);
	mb_ledger_release(&ledger);
	mb_model_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(output_head_is_cut_by_tokens),
		cmocka_unit_test(small_passes_are_whole),
		cmocka_unit_test(a_weight_too_large_is_refused),
		cmocka_unit_test(every_answer_is_the_largest_that_fits),
		cmocka_unit_test(a_weight_too_large_is_refused_first),
	};

	return cmocka_run_group_tests_name("fwdbwd", tests, open_device, close_device);
}
