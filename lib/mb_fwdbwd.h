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
 * Run forward then backward for TOKENS tokens; host-clock seconds of each.
 * A layer that mb_fwdbwd_chunk_tokens cannot cut is -MB_EFAIL before
 * anything is allocated (and by mb_fwdbwd_reserve).
 */
int mb_fwdbwd_run(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		  struct mb_ledger *ledger, double *forward_s, double *backward_s);

/*
 * Reserve every device buffer the pass will allocate for TOKENS tokens, in
 * the ledger's pool (mb_ledger_reserve), as alive in EPOCH only: sized from
 * the model, CLBlast's temporary from the device.
 */
int mb_fwdbwd_reserve(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		      struct mb_ledger *ledger, unsigned epoch);

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

#endif
