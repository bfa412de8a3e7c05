/*
 * mb_fwdbwd: a synthetic forward and backward pass, so that a step's
 * iteration time and device memory resemble a real one's.
 *
 * For T = seq x micro-batch tokens, every 2-D matrix W (rows x cols) of each
 * decoder layer, and the output head (lm_head, or the tied embedding), runs
 * the GEMMs a linear layer runs: forward Y = X Wᵀ; backward dX = dY W and
 * dW = dYᵀ X. With gradient checkpointing, as the reference trains, the
 * forward keeps one T x hidden fp32 checkpoint per layer and the backward
 * recomputes each layer's forward before its own. Activations, weights
 * (fp32, zeros: GEMM time does not depend on the values) and CLBlast's
 * temporaries all go through the ledger, in its "forward" and "backward"
 * phases; everything is freed when the backward ends.
 */
#ifndef MB_FWDBWD_H
#define MB_FWDBWD_H

#include <stdint.h>

#include "mb_ledger.h"
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
 * Run forward then backward for TOKENS tokens; host-clock seconds of each
 * (the backward's with what HOOK, when not NULL, enqueues and waits for).
 * A layer that mb_fwdbwd_chunk_tokens cannot cut is -MB_EFAIL before
 * anything is allocated (and by mb_fwdbwd_reserve).
 */
int mb_fwdbwd_run(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		  struct mb_ledger *ledger, const struct mb_fwdbwd_hook *hook, double *forward_s,
		  double *backward_s);

/*
 * Reserve every device buffer the pass will allocate for TOKENS tokens, in
 * the ledger's pool (mb_ledger_reserve), as alive in EPOCH only: sized from
 * the model, CLBlast's temporary from the device.
 */
int mb_fwdbwd_reserve(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		      struct mb_ledger *ledger, unsigned epoch);

/*
 * The bytes of CLBlast's temporary buffer of the pass for TOKENS tokens on
 * CL's device ("clblast.fwd.temp"), into *BYTES; nothing is allocated. A
 * layer that cannot be cut small enough is refused, as by mb_fwdbwd_run.
 */
int mb_fwdbwd_temp_bytes(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
			 uint64_t *bytes);

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
