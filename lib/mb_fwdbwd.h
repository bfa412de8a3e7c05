/*
 * mb_fwdbwd: the synthetic forward and backward pass as the schedule, the
 * plan, the fit check and the model engine know it, with no device: how its
 * GEMMs are cut into token chunks, the device bytes it holds, its FLOPs, and
 * the hook the backward calls as it goes. Running it on a device is
 * mb_fwdbwd_cl's (lib/cl/), which defines these functions beside the pass
 * they describe.
 */
#ifndef MB_FWDBWD_H
#define MB_FWDBWD_H

#include <stddef.h>
#include <stdint.h>

#include "mb_model.h"

#define MB_FWDBWD_GEMM_ELEMENTS (1ull << 31) /* what a GEMM's operands must stay below */

/*
 * How many of TOKENS (>= 1) tokens one GEMM of a linear layer ROWS x COLS
 * may take at once: each of its three GEMMs reads or writes the tokens x
 * COLS input, the weight and the tokens x ROWS output, and CLBlast indexes
 * them, and its padded copies of them, with int. TOKENS itself when those
 * (each dimension rounded up to a multiple of 256, for the padding) add up
 * to less than MB_FWDBWD_GEMM_ELEMENTS; else the largest multiple of 256
 * tokens that does, the GEMMs then running in chunks of it (the last one
 * shorter); 0 when not even 256 tokens do, the weight being too large.
 */
uint64_t mb_fwdbwd_chunk_tokens(uint64_t tokens, uint64_t rows, uint64_t cols);

/*
 * What the backward calls as it goes (mb_plan_bucket_stage's stages): once
 * it has enqueued the head's GEMMs, STAGE m->layers, then once it has
 * enqueued layer L's, STAGE L, down to 0; then it waits for the compute
 * queue. A nonzero return stops the pass with that error.
 */
struct mb_fwdbwd_hook {
	int (*stage_done)(void *arg, unsigned stage);
	void *arg;
};

/*
 * The device bytes the pass holds at once for TOKENS tokens (every buffer is
 * live at the end of the backward), CLBlast's temporary aside: what the
 * ledger's own peak adds in the forward and backward phases. *LARGEST is
 * its largest buffer and *LARGEST_TAG that buffer's ledger tag; *FORWARD
 * (if not NULL) what the forward alone holds. Sizes that do not fit in 64
 * bits are UINT64_MAX. Needs no device.
 */
uint64_t mb_fwdbwd_bytes(const struct mb_model *m, uint64_t tokens, uint64_t *largest,
			 const char **largest_tag, uint64_t *forward);

/*
 * The FLOPs of the pass for TOKENS tokens, 2 m n k a GEMM, as mb_fwdbwd_run
 * issues them: into *forward the forward's (Y = X Wᵀ of every layer's
 * matrices and the head), into *backward the backward's (dX and dW of each,
 * and each layer's forward again, from its checkpoint); the GEMM calls of
 * each into *nforward and *nbackward (a GEMM cut into token chunks counts
 * once). Needs no device.
 */
void mb_fwdbwd_flops(const struct mb_model *m, uint64_t tokens, double *forward, double *backward,
		     size_t *nforward, size_t *nbackward);

/*
 * The backward's FLOPs of one stage (as struct mb_fwdbwd_hook numbers them:
 * m->layers the head, L layer L, its forward again included) into *flops,
 * its GEMM calls into *ngemms. They add up to mb_fwdbwd_flops' backward.
 */
void mb_fwdbwd_stage_flops(const struct mb_model *m, uint64_t tokens, unsigned stage, double *flops,
			   size_t *ngemms);

#endif
